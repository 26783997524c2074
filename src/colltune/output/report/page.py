"""The page's HTML pieces: escaping, number formatting, tables, CSS, the inline script
and the embedded figures (base64 PNG data URIs)."""

from __future__ import annotations

import base64
import html
import math
from dataclasses import dataclass, field

from colltune.analysis.fit import FitError
from colltune.base.lazy import LazyModule
from colltune.base.units import fmt_size
from colltune.output import figures as plotmod
from colltune.output.series import omitted_text

pd = LazyModule("pandas")


@dataclass
class FigureEntry:
    id: str
    kind: str
    collective: str
    caption: str
    png: bytes
    wide: bool = False


@dataclass
class ReportParts:
    figures: list[FigureEntry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def esc(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return html.escape(str(v))


# columns of whole numbers that pandas reads as floats where some rows are NULL
INTEGER_COLUMNS = {"seed", "run_id", "id", "round", "cores", "cpus", "np", "nodes", "ppn",
                   "iterations", "repetition", "warmup", "align", "valid_reps", "launches"}


def _fmt(v, col: str = "") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    if col == "size" and isinstance(v, (int, float)):
        return fmt_size(int(v))
    if isinstance(v, float):
        if v.is_integer() and (col in INTEGER_COLUMNS or col.endswith(("_id", "units_done",
                                                                        "units_failed"))):
            return str(int(v))  # a seed, an id, a count: read as float beside NULLs
        if col.endswith("_us") or col in ("µs",):
            return f"{v:.3g}" if abs(v) < 10 else f"{v:,.1f}"
        if abs(v) != 0 and (abs(v) < 1e-3 or abs(v) >= 1e5):
            return f"{v:.4e}"
        return f"{v:.4g}"
    return str(v)


def html_table(columns: list[str] | None, rows: list[list], numeric: set[int] | None = None,
               cls: str = "") -> str:
    """A table; columns None: no header row (key-value tables)."""
    numeric = numeric or set()
    head = "".join(f"<th>{esc(c)}</th>" for c in columns) if columns else ""
    body = []
    for r in rows:
        cells = []
        for i, v in enumerate(r):
            raw = v if isinstance(v, str) and v.startswith("<") else esc(v)
            cells.append(f'<td class="num">{raw}</td>' if i in numeric else f"<td>{raw}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    thead = f"<thead><tr>{head}</tr></thead>" if head else ""
    return (f'<table class="{cls}">{thead}<tbody>' + "".join(body) + "</tbody></table>")


def frame_table(df: pd.DataFrame, cls: str = "", rename: dict | None = None) -> str:
    rename = rename or {}
    cols = list(df.columns)
    rows = [[_fmt(v, c) for v, c in zip(rec, cols)] for rec in
            df.astype(object).where(df.notna(), None).itertuples(index=False, name=None)]
    numeric = {i for i, c in enumerate(cols) if pd.api.types.is_numeric_dtype(df[c])
               or c in ("median_abs_rel_error", "median_rel_error", "within_2x")}
    return html_table([rename.get(c, c) for c in cols], rows, numeric, cls)


CSS = """
:root { --fg: #1a1a1a; --muted: #666; --line: #d0d0d0; --head: #f2f2f2; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: var(--fg); max-width: 1180px; margin: 0 auto; padding: 1.2rem 1.5rem 3rem; }
h1 { font-size: 1.7rem; margin: 0.2rem 0 0.4rem; }
h2 { font-size: 1.35rem; border-bottom: 2px solid var(--line); padding-bottom: 0.2rem;
     margin-top: 2.2rem; }
h3 { font-size: 1.1rem; margin-top: 1.6rem; }
p.meta, .note { color: var(--muted); font-size: 0.9rem; }
nav ol { columns: 2; font-size: 0.92rem; }
table { border-collapse: collapse; margin: 0.6rem 0 1rem; font-size: 0.84rem; }
th, td { border: 1px solid var(--line); padding: 0.2rem 0.45rem; vertical-align: top; }
th { background: var(--head); text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td code, .cmd { font: 0.78rem/1.3 ui-monospace, "DejaVu Sans Mono", monospace;
                word-break: break-all; }
figure { margin: 1rem 0 1.6rem; break-inside: avoid; page-break-inside: avoid; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.88rem; color: var(--muted); }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(520px, 1fr));
        gap: 0 1.2rem; }
.scroll { overflow-x: auto; }
table.sel td { overflow-wrap: anywhere; }
table.kv td:first-child { font-weight: 600; background: var(--head); }
p.verdict, li.verdict { font-size: 1rem; margin: 0.3rem 0 0.4rem; }
.over { color: #8a4b00; }
h4 { font-size: 0.95rem; margin: 0.8rem 0 0.2rem; color: var(--muted); }
figure.wide { grid-column: 1 / -1; }
.coef td:first-child { font-family: ui-monospace, monospace; }
ul.meaning { margin-top: 0; font-size: 0.9rem; }
ul.prov { font-size: 0.88rem; }
pre.cmd { white-space: pre-wrap; background: #f7f7f7; padding: 0.5rem; max-height: 30rem;
          overflow: auto; }
.print-only { display: none; }
@page { size: A4; margin: 14mm 12mm; }
@media print {
  body { font-size: 10pt; max-width: none; padding: 0; }
  nav { display: none; }
  h2, h3, h4 { break-after: avoid; page-break-after: avoid; }
  .grid { grid-template-columns: 1fr 1fr; }
  .screen-only, pre.cmd, details { display: none; }
  .print-only { display: block; }
  tr, figure { break-inside: avoid; page-break-inside: avoid; }
  /* the summary's tables: smaller, without the fastest-measured columns (on screen) */
  table.best { font-size: 7.5pt; }
  table, .note { font-size: 8pt; }
  table.best td:nth-last-child(-n+3), table.best th:nth-last-child(-n+3) { display: none; }
  .scroll { overflow: visible; }
  pre.cmd { max-height: none; overflow: visible; }
  a { color: inherit; text-decoration: none; }
}
"""


SCRIPT = """
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  document.body.setAttribute('data-figures-rendered', ok + '/' + imgs.length);
});
"""


def _figure_html(f: FigureEntry) -> str:
    b64 = base64.b64encode(f.png).decode("ascii")
    wide = ' class="wide"' if f.wide else ""
    return (f'<figure id="{f.id}"{wide} data-kind="{esc(f.kind)}" '
            f'data-collective="{esc(f.collective)}">'
            f'<img src="data:image/png;base64,{b64}" alt="{esc(f.caption)}">'
            f"<figcaption>Figure {f.id.split('-')[-1]}: {esc(f.caption)}</figcaption></figure>")


def _add_figure(parts: ReportParts, out: list[str], kind: str, coll: str, caption: str,
                make, dpi: int, wide: bool = False) -> None:
    try:
        fig = make()
    except (plotmod.PlotError, FitError) as exc:
        out.append(f'<p class="note">{esc(kind)} not drawn: {esc(exc)}</p>')
        return
    n = len(parts.figures) + 1
    left_out = omitted_text(getattr(fig, "colltune_omitted", []))
    entry = FigureEntry(f"fig-{n}", kind, coll, caption + (f". {left_out}" if left_out else ""),
                        plotmod.figure_bytes(fig, "png", dpi),
                        wide or kind == "mapping")
    parts.figures.append(entry)
    out.append(_figure_html(entry))
