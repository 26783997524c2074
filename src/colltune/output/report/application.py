"""The report's "Application" section: the program's own time with the library's
defaults and with the rules made from the study (`colltune run --compare`, the last step
of `colltune autotune`), each comparison with its runs and the evidence verdict."""

from __future__ import annotations

import statistics

from colltune.output.report.page import esc


def _fmt(v) -> str:
    return "" if v is None else f"{v:.4g}"


def application_section(comparisons: list[dict]) -> str:
    """HTML of the comparisons ('' without any)."""
    if not comparisons:
        return ""
    rows = []
    for c in comparisons:
        s = c["summary"] or {}
        v = s.get("verdict") or {}
        sides = {}
        for key in ("A", "B"):
            vals = [r["metric"] if s.get("metric") else r["wall_s"]
                    for r in c["runs"] if r["arm"] == key]
            vals = [x for x in vals if x is not None]
            sides[key] = _fmt(statistics.median(vals)) if vals else ""
        ci = (f"{v['ci_low']:.2f}–{v['ci_high']:.2f}" if v.get("ci_low") is not None
              and v.get("ci_high") is not None else "")
        rows.append(
            f"<tr><td>{c['id']}</td><td>{esc(c['started_at'] or '')}</td>"
            f"<td><code>{esc(c['command_line'] or '')}</code></td>"
            f"<td>{esc(s.get('a', ''))}</td><td>{esc(s.get('b', ''))}</td>"
            f"<td>{esc(s.get('what', ''))}</td><td>{s.get('pairs', '')}</td>"
            f"<td>{sides['A']}</td><td>{sides['B']}</td>"
            f"<td>{_fmt(v.get('ratio'))}</td><td>{ci}</td>"
            f"<td>{esc(v.get('outcome', ''))}</td><td>{esc(c['status'])}</td></tr>")
        rows.append(f'<tr><td></td><td colspan="12" class="note">{esc(s.get("answer", ""))}'
                    "</td></tr>")
    head = "".join(f"<th>{h}</th>" for h in (
        "run", "started", "command", "A", "B", "figure", "pairs", "A median", "B median",
        "B / A", "95% CI", "verdict", "status"))
    return ('<h2 id="application">Application</h2>'
            "<p>The program's own time with the library's defaults (A, nothing preloaded) "
            "and with the rules made from this study (B), run alternately (AB BA ...): "
            "B / A is the geometric mean of the per-pair ratios with the paired 95 % "
            "interval; the verdict is the evidence rule of every comparison in this report "
            "(docs/application-tuning.md).</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
