"""The provenance section: the report itself, every run (machine, CPU, MPI, versions,
command lines, environment, launches) and the study definitions."""

from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path

from colltune import __version__
from colltune.base.lazy import LazyModule
from colltune.output.report.data import Provenance
from colltune.output.report.page import _fmt, esc, html_table
from colltune.results.provenance import git_revision

pd = LazyModule("pandas")


def source_revision() -> str:
    """git revision of the colltune source tree, '+dirty' with local changes."""
    return git_revision() or "unknown (not a git checkout)"


def build_time() -> str:
    """The report's one varying line: now, or $SOURCE_DATE_EPOCH (UTC) when set, as
    reproducible builds set it."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch.isdigit():
        return _dt.datetime.fromtimestamp(int(epoch), _dt.timezone.utc).isoformat()
    return _dt.datetime.now().astimezone().isoformat(timespec="seconds")


def _env_text(v) -> str:
    """The stored environment (JSON object) as NAME=value lines."""
    try:
        obj = json.loads(v) if isinstance(v, str) else v
    except json.JSONDecodeError:
        return str(v)
    if isinstance(obj, dict):
        return " ".join(f"{k}={x}" for k, x in obj.items()) or "(none)"
    return str(v)


def provenance_section(prov: Provenance, df: pd.DataFrame, db_path, study) -> str:
    out = ['<h2 id="provenance">Provenance</h2>']
    host = os.uname().nodename
    out.append(html_table(None, [
        ["report generated", build_time()],
        ["by", f"colltune {__version__}, source revision {source_revision()}, on {host}"],
        ["database", str(Path(db_path).resolve())],
        ["study", study or "(all measurements)"],
        ["measurements", f"{len(df)} rows"],
    ], cls="kv"))
    runs = prov.runs
    if runs.empty:
        out.append('<p class="note">The database records no runs.</p>')
        return "".join(out)
    out.append(f"<h3>Runs ({len(runs)})</h3>")
    long_cols = {"command_line", "launcher_command", "command", "environment", "notes"}
    cols = [c for c in runs.columns if c not in long_cols]
    recs = list(runs[cols].astype(object).where(runs[cols].notna(), None)
                .itertuples(index=False, name=None))
    if len(recs) <= 6:  # one column per run: fits the page and prints
        rows = [[c] + [_fmt(r[i], c) for r in recs] for i, c in enumerate(cols)]
        heads = [""] + [f"run {r[cols.index('run_id')]}" if "run_id" in cols else f"run {k + 1}"
                        for k, r in enumerate(recs)]
        out.append('<div class="scroll">' + html_table(heads, rows, cls="kv runs") + "</div>")
    else:
        rows = [[_fmt(v, c) for c, v in zip(cols, rec)] for rec in recs]
        out.append('<div class="scroll">' + html_table(cols, rows, cls="runs") + "</div>")
    details = []
    for rec in runs.astype(object).where(runs.notna(), None).to_dict("records"):
        rid = rec.get("run_id")
        items = []
        for c, label in (("command_line", "command"), ("launcher_command", "launcher"),
                         ("command", "command"), ("environment", "environment"),
                         ("notes", "notes")):
            v = rec.get(c)
            if v in (None, "", "[]", "{}"):
                continue
            text = _env_text(v) if c == "environment" else str(v)
            items.append(f'<li>{esc(label)}: <code class="cmd">{esc(text)}</code></li>')
        launches = prov.launches.get(rid, [])
        if launches:
            shown = launches[:40]
            # folded: on screen one click away; in print left out (pages of commands)
            items.append(f"<li><details><summary>launches ({len(launches)})</summary><ul>"
                         + "".join(f'<li><code class="cmd">{esc(c)}</code></li>'
                                   for c in shown)
                         + ("<li>…</li>" if len(launches) > len(shown) else "")
                         + "</ul></details></li>")
        if items:
            details.append(f"<li>run {esc(rid)}<ul>{''.join(items)}</ul></li>")
    if details:
        out.append('<p class="print-only note">The command lines and the environment of '
                   "each run are in the HTML file (left out of print).</p>"
                   '<section class="screen-only"><h3>Command lines and environment</h3>'
                   '<ul class="prov">' + "".join(details) + "</ul></section>")
    for name, definition in prov.definitions.items():
        try:
            text = json.dumps(json.loads(definition), indent=1, sort_keys=True)
        except (TypeError, json.JSONDecodeError):
            text = str(definition)
        out.append(f"<h3>Definition of study {esc(name)}</h3><pre class=\"cmd\">"
                   f"{esc(text)}</pre>")
    return "".join(out)
