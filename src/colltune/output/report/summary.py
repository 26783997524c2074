"""The summary section: per collective, what to use where, by how much, with the
evidence level (evidence.py); oversubscribed points marked and left out."""

from __future__ import annotations

from colltune.analysis import evidence
from colltune.analysis.points import best_table, rounds_text
from colltune.base.lazy import LazyModule
from colltune.base.units import fmt_size
from colltune.output.report.page import _fmt, esc, html_table

pd = LazyModule("pandas")


def _shown(r: dict, baseline: str = "native", interval: bool = False) -> str:
    """The choice's ratio to the baseline as quick's terminal and the figures show it:
    the ratio of the medians, the paired estimate labelled where it differs
    (evidence.paired_note), [with the comparison's interval]."""
    mr = r.get("median_ratio")
    mr = r["ratio"] if mr is None else mr
    note = evidence.paired_note(mr, r["ratio"], bool(r.get("paired")))
    ci = evidence.fmt_ci(r.get("ci_low"), r.get("ci_high")) if interval else ""
    return evidence.ratio_text(mr, baseline, "; ".join(x for x in (note, ci) if x))


def _ratio_text(r: dict, baseline: str = "native") -> str:
    """The choice's ratio to the baseline (_shown) with its interval."""
    if r.get("level") == "oversubscribed":
        return "no conclusion"
    if r.get("best") == baseline or r.get("ratio") is None:
        return "—"
    return _shown(r, baseline, interval=True)


def collective_summary(d: pd.DataFrame, coll: str, baseline: str = "native",
                       include_oversubscribed: bool = False) -> tuple[str, str, pd.DataFrame]:
    """(one sentence, HTML table, the table's frame): what to use where, by how much,
    with the evidence level; oversubscribed points marked and left out."""
    tab = best_table(d, baseline, include_oversubscribed)
    if tab.empty:
        return "no valid measurement", "", tab
    recs = tab.astype(object).where(tab.notna(), None).to_dict("records")
    honest = [r for r in recs if r["level"] != "oversubscribed"]
    winners = [r for r in honest if r["best"] not in (None, baseline)
               and r.get("ratio") is not None and r.get("level") == "significant"]
    parts = []
    for name in dict.fromkeys(r["best"] for r in winners):
        where = [r for r in winners if r["best"] == name]
        pts = "; ".join(f"np {int(r['np'])}, size {fmt_size(int(r['size']))}: "
                        + _shown(r, baseline) for r in where[:6])
        if len(where) > 6:
            pts += f"; and {len(where) - 6} more point(s)"
        parts.append(f"<b>{esc(name)}</b> ({esc(pts)})")
    levels = pd.Series([r["level"] for r in honest if r["best"] == baseline]).value_counts()
    kept = sum(1 for r in honest if r["best"] == baseline)
    why = ", ".join(f"{n} {lvl}" for lvl, n in levels.items() if lvl)
    if parts:
        sentence = ("use " + ", ".join(parts) + ": faster than " + esc(baseline)
                    + " beyond the noise"
                    + (f"; {esc(baseline)} at the other {kept} point(s) ({esc(why)})"
                       if kept else ""))
    elif honest and baseline in set(d["algorithm"]):
        sentence = (f"use <b>{esc(baseline)}</b> at every measured point: no algorithm is "
                    f"faster beyond the noise ({esc(why)})")
    elif honest:
        sentence = "no baseline measured: the table names the fastest and its evidence"
    else:
        sentence = "every point is oversubscribed: no conclusion"
    nover = len(recs) - len(honest)
    if nover:
        sentence += (f"; {nover} oversubscribed point(s) "
                     f"{esc(evidence.OVER_MARK)} left out")
    rows = []
    for r in recs:
        over = r.get("oversubscribed")
        mark = f" {evidence.OVER_MARK}" if over else ""
        rows.append([f"{int(r['np'])}{mark}", fmt_size(int(r["size"]))]
                    + ([r["mapping"]] if "mapping" in tab.columns else [])
                    + [r["best"] or "—", _ratio_text(r, baseline), r["level"] or "",
                       r["evidence"] or "", r["fastest"] or "",
                       _fmt(r["fastest_us"], "x_us"), _fmt(r.get(f"{baseline}_us"), "x_us")])
    cols = (["processes", "size"] + (["mapping"] if "mapping" in tab.columns else [])
            + ["use", "by how much", "evidence", "detail", "fastest measured",
               "its µs", f"{baseline} µs"])
    n = len(cols)
    table = ('<div class="scroll">' + html_table(cols, rows, {0, n - 2, n - 1}, "best")
             + "</div>")
    if len(rows) > 30:  # the points where something else than the default is used first
        keep = [row for row, r in zip(rows, recs) if r["best"] not in (None, baseline)]
        short = ('<div class="scroll">' + html_table(cols, keep, {0, n - 2, n - 1}, "best")
                 + "</div>" if keep else
                 f'<p class="note">{esc(baseline)} at every point (reasons in the table '
                 "below)</p>")
        table = (short + f"<details><summary>all {len(rows)} points</summary>{table}"
                 "</details>")
    return sentence, table, tab


def summary_section(df: pd.DataFrame, colls: list[str],
                    include_oversubscribed: bool = False, chosen: set | None = None) -> str:
    """The summary's HTML; `chosen` (when given) collects the algorithms it recommends
    anywhere, so that the figures always draw them."""
    method = ['<p class="note">Per point (processes, size): <code>native</code>, the MPI '
           "library's own collective, unless another algorithm is faster beyond the noise of "
           "the repetitions (separate launches). Every ratio is "
           f"<i>{esc(evidence.RATIO_NAME)}</i> (below 1: faster; ×0.80 = 20 % faster): "
           "another algorithm is used where the 95% confidence interval of its ratio lies "
           "below 1 and the ratio is at most "
           f"{evidence.fmt_ratio(1 / (1 + evidence.MIN_EFFECT))}. Algorithms measured in "
           "the same launches (interleaved) are compared paired: the test is on the "
           "geometric mean of the per-launch ratios, with the t interval of their logarithms "
           f"(at least {evidence.MIN_PAIRS} launches); the ratio shown is the ratio of the "
           "medians, as in the terminal and the figures, with that paired estimate labelled "
           "<i>paired</i> beside it where it differs. Otherwise unpaired: the ratio of medians with a "
           f"bootstrap interval ({evidence.N_BOOT} resamples, seed {evidence.SEED}: "
           "<code>colltune quick</code> prints the same intervals), and a two-sided "
           "Mann–Whitney U test below "
           f"{evidence.ALPHA:g} (at least {evidence.MIN_REPS} repetitions a side). "
           "The p-values of the candidates tested at a point are corrected together by "
           "Holm's method (the winner among many: without it, one of twenty look-alikes "
           "would pass at 5 % by chance about once in five points). "
           "Evidence: <i>significant</i> (the tests passed), <i>within noise</i> (a tie: "
           "native is kept), <i>insufficient</i> (too few repetitions to tell), "
           f"<i>{esc(evidence.UNSTABLE)}</i> (repetitions in separate launches scatter "
           f"beyond {evidence.UNSTABLE_SPREAD:g}× or saw load averages more than "
           f"{evidence.LOAD_TOL:g} apart)."
" <i>fastest measured</i> is the lowest median latency (its µs beside it), with no "
           "claim attached.</p>"]
    rounds = rounds_text(df)
    if rounds:
        method.append(f'<p class="note">Conclusions from the latest round of each study '
                      f"({esc(rounds)}); the figures show every round.</p>")
    # the answer first (page 1 in print): one sentence per collective, then how it was
    # decided, then the tables with the evidence per point
    answers, tables = [], []
    any_over = False
    for c in colls:
        d = df[df["collective"] == c]
        d = d[pd.to_numeric(d["median_us"], errors="coerce").notna()]
        if d.empty:
            answers.append(f"<li><b>{esc(c)}</b>: no valid measurement</li>")
            continue
        sentence, table, tab = collective_summary(d, c,
                                                  include_oversubscribed=include_oversubscribed)
        any_over |= bool(len(tab)) and bool(tab["oversubscribed"].any())
        if chosen is not None and len(tab):
            chosen.update(str(b) for b in tab["best"].dropna())
        answers.append(f'<li class="verdict"><b>{esc(c)}</b>: {sentence}</li>')
        tables.append(f'<h3 id="summary-{esc(c)}">{esc(c)}</h3>'
                      f"<h4>Best algorithm per (processes, size): {esc(c)}</h4>{table}")
    out = ['<h2 id="summary" class="first">Summary: what to use where</h2>',
           f'<ul class="answer">{"".join(answers)}</ul>'] + method + tables
    if any_over:
        out.append(f'<p class="note over">{esc(evidence.OVER_LEGEND)}</p>')
    return "".join(out)
