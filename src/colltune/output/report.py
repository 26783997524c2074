"""One self-contained HTML report per study: `colltune report`.

The file holds everything: figures as base64 PNG data URIs, tables, CSS for
screen and print; it loads nothing from anywhere (no http(s) link, no external
script, font or style). Sections, the answer first:

1. summary per collective: what to use where, by how much, with the evidence level
   (evidence.py: native unless another algorithm is faster beyond the noise; no
   conclusion from oversubscribed points, which are marked);
2. per collective, the figures of plot.py (latency vs processes at the smallest and
   largest size when there are several process counts, vs size at the smallest and
   largest process count, mapping A vs B, speedup over native, the map of the
   algorithm to use, the 3D surface with its fitted plane);
3. the heat application, for heat studies;
4. the rules `colltune tune` makes of the study for every target it has candidates of
   (tune.py), their quality in-sample and cross-validated, and a decision map per
   collective (plot.fig_decision_map);
5. the regression models: the two seed models per algorithm (terms without variation
   dropped) and full coefficient tables for the surface's algorithm;
6. the cost model: α, β, γ (and LogGP where measurable), the median prediction error
   per collective and algorithm, and the model's choice against the fastest measured;
7. provenance of every run (machine, CPU, MPI, versions, command lines, times) and of
   the report itself (colltune version, git revision of its source tree).

The page carries one inline script: after loading it counts the images the browser
decoded and writes the count into `<body data-figures-rendered="k/n">`, which the
headless-Chromium test reads.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import json
import math
import os
import sqlite3
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from colltune import __version__
from colltune.drivers import gamma as gamma_driver
from colltune.drivers import p2p
from colltune.output import figures as plotmod
from colltune.results.db import DBError, open_reader
from colltune.analysis.fit import FitError, LazyModule, SEED_MODELS, fit_formula, load_measurements, model_frame, resolve_formula
from colltune.studies.study import STREAM
from colltune.base.units import fmt_size

pd = LazyModule("pandas")
evidence = LazyModule("colltune.analysis.evidence")  # numpy/pandas: imported on first use


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


# ---------------------------------------------------------------------------- data

RUN_COLUMNS = ("run_id", "id", "study", "kind", "round", "status", "host", "cpu_model", "cores",
               "cpus", "os", "mpi_kind", "mpi_version", "mpi_banner", "mpi", "colltune_version",
               "git_revision", "git_rev", "launcher", "seed", "shuffled", "units_done",
               "units_failed", "started_at", "finished_at", "started", "finished",
               "command_line", "launcher_command", "command", "environment", "notes")


@dataclass
class Provenance:
    runs: pd.DataFrame                                        # one row per run
    launches: dict = field(default_factory=dict)              # run id -> launch commands
    definitions: dict = field(default_factory=dict)           # study -> definition (JSON)


def _read(con: sqlite3.Connection, table: str) -> pd.DataFrame:
    return pd.read_sql_query(f'SELECT * FROM "{table}"', con)


def load_runs(db_path, study: str | None, df: pd.DataFrame) -> Provenance:
    """The runs behind the measurements (the `runs` table, with their launch commands
    from `units` and the study definitions from `studies`), or what the measurements
    themselves record about their provenance."""
    runs = pd.DataFrame()
    units = studies = None
    try:
        con = open_reader(db_path)
        try:
            tables = {r[0] for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
            if "runs" in tables:
                runs = _read(con, "runs")
            if "units" in tables:
                units = _read(con, "units")
            if "studies" in tables:
                studies = _read(con, "studies")
        finally:
            con.close()
    except (sqlite3.Error, pd.errors.DatabaseError, DBError):
        runs = pd.DataFrame()
    prov = Provenance(pd.DataFrame())
    if runs.empty:
        cols = [c for c in ("run_id", "host", "cpu_model", "mpi", "command", "timing", "dtype")
                if c in df.columns]
        if cols:
            prov.runs = df[cols].drop_duplicates().reset_index(drop=True)
        return prov
    key = "run_id" if "run_id" in runs.columns else ("id" if "id" in runs.columns else None)
    if key and "run_id" in df.columns:
        runs = runs[runs[key].isin(df["run_id"].dropna().unique())]
    if key and key != "run_id":
        runs = runs.rename(columns={key: "run_id"})
    if studies is not None and "study_id" in runs.columns:
        skey = "id" if "id" in studies.columns else None
        sname = "name" if "name" in studies.columns else None
        if skey and sname:
            names = dict(zip(studies[skey], studies[sname]))
            runs.insert(1, "study", runs["study_id"].map(names).fillna("(bench)"))
            if "definition" in studies.columns:
                for sid in runs["study_id"].dropna().unique():
                    row = studies[studies[skey] == sid]
                    if len(row) and row["definition"].notna().any():
                        prov.definitions[names.get(sid, sid)] = row["definition"].iloc[0]
    keep = [c for c in RUN_COLUMNS if c in runs.columns]
    keep += [c for c in runs.columns if c not in keep and c not in (
        "study_id", "definition", "pid", "mpi_path", "units_planned", "units_skipped")]
    prov.runs = runs[keep].dropna(axis=1, how="all").reset_index(drop=True)
    if units is not None and {"run_id", "command"} <= set(units.columns):
        for rid, g in units[units["run_id"].isin(prov.runs["run_id"])].groupby("run_id"):
            prov.launches[rid] = list(dict.fromkeys(g["command"].dropna().astype(str)))
    return prov


def source_revision() -> str:
    """git revision of the colltune source tree, '+dirty' with local changes."""
    from colltune.results.db import git_revision

    return git_revision() or "unknown (not a git checkout)"


# ---------------------------------------------------------------------------- html bits

def esc(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return html.escape(str(v))


def _fmt(v, col: str = "") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    if col == "size" and isinstance(v, (int, float)):
        return fmt_size(int(v))
    if isinstance(v, float):
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
table.kv td:first-child { font-weight: 600; background: var(--head); }
p.verdict { font-size: 1rem; margin: 0.3rem 0 0.4rem; }
.over { color: #8a4b00; }
h4 { font-size: 0.95rem; margin: 0.8rem 0 0.2rem; color: var(--muted); }
figure.wide { grid-column: 1 / -1; }
.coef td:first-child { font-family: ui-monospace, monospace; }
ul.meaning { margin-top: 0; font-size: 0.9rem; }
ul.prov { font-size: 0.88rem; }
pre.cmd { white-space: pre-wrap; background: #f7f7f7; padding: 0.5rem; max-height: 30rem;
          overflow: auto; }
@page { size: A4; margin: 14mm 12mm; }
@media print {
  body { font-size: 10pt; max-width: none; padding: 0; }
  nav { display: none; }
  h2 { break-before: page; page-break-before: always; }
  h2.first { break-before: auto; page-break-before: auto; }
  .grid { display: block; }
  table, tr, figure { break-inside: avoid; page-break-inside: avoid; }
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


# ---------------------------------------------------------------------------- sections

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
    entry = FigureEntry(f"fig-{n}", kind, coll, caption, plotmod.figure_bytes(fig, "png", dpi),
                        wide or kind == "mapping")
    parts.figures.append(entry)
    out.append(_figure_html(entry))


def _seed_model_rows(df: pd.DataFrame, groups: list[str]) -> tuple[list[list], list[list]]:
    """Rows of the linear and of the log seed model, one per group."""
    lin_rows, log_rows = [], []
    lin_f, _ = resolve_formula(model="seed-linear")
    log_f, _ = resolve_formula(model="seed-log")
    for key, g in df.groupby(groups, sort=True):
        key = list(key) if isinstance(key, tuple) else [key]
        frame = model_frame(g)
        for f, rows in ((lin_f, lin_rows), (log_f, log_rows)):
            try:
                r = fit_formula(frame, f)
            except FitError as exc:
                rows.append(key + [f"not fitted: {exc}"] + [""] * (5 if f == lin_f else 7))
                continue
            c = {x.term: x for x in r.coefs}
            b0 = c.get("processes")
            b1 = c.get("size") or c.get("log2_size")

            def cell(b):
                return f"{b.coef:.4g} ± {b.std_err:.2g}" if b else "dropped (no variation)"

            row = key + [cell(b0), cell(b1)]
            if f == log_f:
                row += [f"×{2 ** b0.coef:.4f}" if b0 else "—",
                        f"×{2 ** b1.coef:.3f}" if b1 else "—"]
            row += [f"{r.r2:.3f}", f"{r.r2_centered:.3f}", f"{r.aic:.1f}"]
            if f == log_f:
                row += [f"{r.aic_latency_scale:.1f}" if r.aic_latency_scale is not None else ""]
            row += [r.n]
            rows.append(row)
    return lin_rows, log_rows


def _full_model_html(df: pd.DataFrame, title: str) -> str:
    out = [f"<h4>{esc(title)}</h4>"]
    frame = model_frame(df)
    for name in SEED_MODELS:
        f, label = resolve_formula(model=name)
        try:
            r = fit_formula(frame, f, label)
        except FitError as exc:
            out.append(f'<p class="note">{esc(name)}: not fitted: {esc(exc)}</p>')
            continue
        r2 = "R²" if r.intercept else "R² (uncentered)"
        out.append(f"<p><b>{esc(label)}</b><br><code>{esc(r.formula)}</code> — "
                   f"{r2} {r.r2:.4f}, adj. {r.r2_adj:.4f}, AIC {r.aic:.1f}"
                   + (f" (latency scale {r.aic_latency_scale:.1f})"
                      if r.aic_latency_scale is not None else "")
                   + f", BIC {r.bic:.1f}, n = {r.n}, dependent variable {esc(r.response)}</p>")
        rows = [[c.term, f"{c.coef:.4g}", f"{c.std_err:.4g}", f"{c.t:.3f}",
                 "<0.001" if c.p < 0.001 else f"{c.p:.3f}", f"{c.ci_low:.4g}",
                 f"{c.ci_high:.4g}"] for c in r.coefs]
        out.append(html_table(["", "coef", "std err", "t", "P>|t|", "[0.025", "0.975]"], rows,
                              {1, 2, 3, 4, 5, 6}, "coef"))
        out.append('<ul class="meaning">' + "".join(
            f"<li><code>{esc(c.term)}</code>: {esc(c.meaning)}</li>" for c in r.coefs)
            + "".join(f'<li class="note">{esc(n)}</li>' for n in r.notes) + "</ul>")
    return "".join(out)


def _point_info(d: pd.DataFrame, coll: str) -> dict:
    """What one collective's measurements hold (every way the database can be filled:
    mapping, params, repetition may be missing or empty)."""
    algos = sorted(d["algorithm"].dropna().unique())
    nps = sorted(int(x) for x in pd.to_numeric(d["np"], errors="coerce").dropna().unique())
    sizes = sorted(int(x) for x in pd.to_numeric(d["size"], errors="coerce").dropna().unique())
    maps = sorted(map(str, d["mapping"].dropna().unique())) if "mapping" in d.columns else []
    keys = [c for c in ("algorithm", "params", "np", "size", "mapping") if c in d.columns]
    reps = d.groupby(keys, dropna=False).size() if len(d) else pd.Series(dtype=int)
    return {"algos": algos, "nps": nps, "sizes": sizes, "maps": maps,
            "reps": (int(reps.min()), int(reps.max())) if len(reps) else (0, 0)}


def collective_section(df: pd.DataFrame, coll: str, palette: plotmod.Palette,
                       parts: ReportParts, dpi: int = 100,
                       surface_algo: str | None = None) -> str:
    """The figures of one collective."""
    d = df[df["collective"] == coll]
    d = d[pd.to_numeric(d["median_us"], errors="coerce").notna()]
    out = [f'<h2 id="coll-{esc(coll)}">{esc(coll)}: figures</h2>']
    if d.empty:
        out.append('<p class="note">no valid measurement (every point lacks a latency)</p>')
        return "".join(out)
    info = _point_info(d, coll)
    algos = sorted(info["algos"], key=lambda a: (palette.rank(a), a))
    nps, sizes, maps = info["nps"], info["sizes"], info["maps"]
    lo, hi = info["reps"]
    over = evidence.oversubscribed(d)
    over_nps = sorted({int(n) for n in d.loc[over, "np"]})
    out.append(
        f"<p>{len(d)} measurements; algorithms: {esc(', '.join(algos))}; processes: "
        f"{esc(', '.join(map(str, nps)))}; sizes: {esc(', '.join(fmt_size(s) for s in sizes))}"
        + (f"; mappings: {esc(', '.join(maps))}" if maps else "")
        + f"; repetitions per point: {lo}" + (f"..{hi}" if hi != lo else "") + "</p>")
    if over_nps:
        out.append(f'<p class="note over">{esc(evidence.OVER_MARK)} processes '
                   f"{esc(', '.join(map(str, over_nps)))}: oversubscribed (more processes than "
                   "cores; time-sliced by the OS). Hollow markers in the figures; no "
                   "conclusion is drawn from them.</p>")
    default_map = d["mapping"].mode().iloc[0] if maps else None
    mapnote = f", mapping {default_map}" if len(maps) > 1 else ""
    many = len(algos) > 6  # line plots with many series get the whole width
    out.append('<div class="grid">')
    pos_sizes = [s for s in sizes if s > 0]
    if len(nps) > 1:  # a single process count has no "vs processes"
        for s in dict.fromkeys([sizes[0], sizes[-1]]):
            _add_figure(parts, out, "vs-processes", coll,
                        f"{coll}: latency vs processes at size {fmt_size(s)}{mapnote}",
                        lambda s=s: plotmod.fig_vs_processes(d, palette, s, default_map), dpi,
                        many)
    if len(pos_sizes) > 1:
        for p in dict.fromkeys([nps[0], nps[-1]]):
            _add_figure(parts, out, "vs-size", coll,
                        f"{coll}: latency vs size at {p} processes{mapnote}"
                        + (" (oversubscribed)" if p in over_nps else ""),
                        lambda p=p: plotmod.fig_vs_size(d, palette, p, default_map), dpi,
                        many)
    if len(maps) > 1 and len(nps) > 1:
        _add_figure(parts, out, "mapping", coll,
                    f"{coll}: mapping {' vs '.join(maps)} per algorithm at size "
                    f"{fmt_size(sizes[-1])}",
                    lambda: plotmod.fig_mapping(d, palette, sizes[-1]), dpi)
    if "native" in algos and len(algos) > 1 and pos_sizes:
        snp = plotmod.honest_np(d)
        _add_figure(parts, out, "speedup", coll,
                    f"{coll}: speedup of each algorithm over native at {snp} processes"
                    f"{mapnote}", lambda: plotmod.fig_speedup(d, palette, snp, default_map),
                    dpi, many)
    for m in (maps if 1 < len(maps) <= 3 else [default_map]):
        _add_figure(parts, out, "best-map", coll,
                    f"{coll}: algorithm to use over (processes, size), with its evidence"
                    + (f", mapping {m}" if m is not None and maps else ""),
                    lambda m=m: plotmod.fig_best_map(d, palette, m), dpi)
    if len(nps) > 1 and len(pos_sizes) > 1:
        salgo = _surface_algo(d, surface_algo)
        _add_figure(parts, out, "surface", coll,
                    f"{coll}/{salgo}: processes × log2 size × log2 latency with the fitted "
                    f"plane of the log model{mapnote}",
                    lambda: plotmod.fig_surface(d, palette, salgo, default_map), dpi)
    out.append("</div>")
    return "".join(out)


def _surface_algo(d: pd.DataFrame, surface_algo: str | None) -> str:
    counts = d.groupby("algorithm").size()
    return surface_algo if surface_algo in counts.index else (
        "native" if "native" in counts.index else counts.idxmax())


def models_section(df: pd.DataFrame, coll: str, palette: plotmod.Palette,
                   surface_algo: str | None = None) -> str:
    """The regression models of one collective (seed 000's two forms, full tables)."""
    d = df[df["collective"] == coll]
    d = d[pd.to_numeric(d["median_us"], errors="coerce").notna()]
    out = [f'<h3 id="models-{esc(coll)}">{esc(coll)}: regression models (seed 000)</h3>']
    if d.empty:
        out.append('<p class="note">no valid measurement</p>')
        return "".join(out)
    info = _point_info(d, coll)
    maps = info["maps"]
    default_map = d["mapping"].mode().iloc[0] if maps else None
    mapnote = f", mapping {default_map}" if len(maps) > 1 else ""
    out.append('<p class="note">Per algorithm' + (" and mapping" if len(maps) > 1 else "")
               + ": linear <code>latency ~ 0 + processes + size</code> and log "
               "<code>log2_latency ~ 0 + processes + log2_size</code>, OLS over every "
               "repetition. ×/process = 2^β0 and ×/doubling = 2^β1 of the log model. R² is "
               "uncentered (no intercept). The AICs of the two models are not comparable "
               "(different responses); the log model's AIC on the latency scale is. A term "
               "that does not vary in the data (one process count, one size) is dropped, "
               "not fitted.</p>")
    if len(info["nps"]) == 1:
        out.append(f'<p class="note">One process count ({info["nps"][0]}): the processes '
                   "term is dropped from every model.</p>")
    groups = ["algorithm"] + (["mapping"] if len(maps) > 1 else [])
    lin_rows, log_rows = _seed_model_rows(d, groups)
    for rows in (lin_rows, log_rows):
        rows.sort(key=lambda r: (palette.rank(r[0]), r[0]))
    cols = groups + ["β0 processes (µs per process)", "β1 size (µs per byte)", "R² (uncentered)",
                     "R² (centered)", "AIC", "n"]
    out.append("<p><b>Latency = β0·Processes + β1·Size</b></p>")
    out.append('<div class="scroll">' + html_table(cols, lin_rows,
                                                   set(range(len(groups), len(cols)))) + "</div>")
    cols = groups + ["β0 processes", "β1 log2 size", "×/process", "×/doubling",
                     "R² (uncentered)", "R² (centered)", "AIC", "AIC (latency scale)", "n"]
    out.append("<p><b>log2 Latency = β0·Processes + β1·log2 Size</b></p>")
    out.append('<div class="scroll">' + html_table(cols, log_rows,
                                                   set(range(len(groups), len(cols)))) + "</div>")
    salgo = _surface_algo(d, surface_algo)
    sd = d[d["algorithm"] == salgo]
    if default_map is not None and len(maps) > 1:
        sd = sd[sd["mapping"].astype(str) == str(default_map)]
    out.append(_full_model_html(sd, f"Full tables: {coll}/{salgo}{mapnote}"))
    return "".join(out)


def _speedup_text(r: dict, baseline: str = "native") -> str:
    if r.get("level") == "oversubscribed":
        return "no conclusion"
    if r.get("best") == baseline or r.get("speedup") is None:
        return "—"
    lo, hi = r.get("ci_low"), r.get("ci_high")
    ci = (f" (95% CI {lo:.2f}–{hi:.2f})" if lo is not None and hi is not None
          and math.isfinite(lo) and math.isfinite(hi) else "")
    return f"×{r['speedup']:.2f} faster{ci}"


def collective_summary(d: pd.DataFrame, coll: str, baseline: str = "native",
                       include_oversubscribed: bool = False) -> tuple[str, str, pd.DataFrame]:
    """(one sentence, HTML table, the table's frame): what to use where, by how much,
    with the evidence level; oversubscribed points marked and left out."""
    tab = plotmod.best_table(d, baseline, include_oversubscribed)
    if tab.empty:
        return "no valid measurement", "", tab
    recs = tab.astype(object).where(tab.notna(), None).to_dict("records")
    honest = [r for r in recs if r["level"] != "oversubscribed"]
    winners = [r for r in honest if r["best"] not in (None, baseline)
               and r.get("speedup") is not None and r.get("level") == "significant"]
    parts = []
    for name in dict.fromkeys(r["best"] for r in winners):
        where = [r for r in winners if r["best"] == name]
        pts = "; ".join(f"np {int(r['np'])}, size {fmt_size(int(r['size']))}: "
                        f"×{r['speedup']:.2f}" for r in where[:6])
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
                    + [r["best"] or "—", _speedup_text(r, baseline), r["level"] or "",
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
                    include_oversubscribed: bool = False) -> str:
    out = ['<h2 id="summary" class="first">Summary: what to use where</h2>',
           '<p class="note">Per point (processes, size): <code>native</code>, the MPI '
           "library's own collective, unless another algorithm is faster beyond the noise of "
           "the repetitions (separate launches): the 95% confidence interval of its speedup "
           "over native lies above 1 and the speedup is at least "
           f"×{1 + evidence.MIN_EFFECT:.2f}. Algorithms measured in the same launches "
           "(interleaved) are compared paired: the speedup is the geometric mean of the "
           "per-launch ratios, with the t interval of their logarithms (at least "
           f"{evidence.MIN_PAIRS} launches). Otherwise unpaired: the ratio of medians with a "
           "bootstrap interval, and a two-sided Mann–Whitney U test below "
           f"{evidence.ALPHA:g} (at least {evidence.MIN_REPS} repetitions a side). "
           "Evidence: <i>significant</i> (the tests passed), <i>within noise</i> (a tie: "
           "native is kept), <i>insufficient</i> (too few repetitions to tell)."
" <i>fastest measured</i> is the largest estimate, with no claim attached.</p>"]
    any_over = False
    for c in colls:
        d = df[df["collective"] == c]
        d = d[pd.to_numeric(d["median_us"], errors="coerce").notna()]
        if d.empty:
            out.append(f"<h3>{esc(c)}</h3><p class=\"note\">no valid measurement</p>")
            continue
        sentence, table, tab = collective_summary(d, c,
                                                  include_oversubscribed=include_oversubscribed)
        any_over |= bool(len(tab)) and bool(tab["oversubscribed"].any())
        out.append(f'<h3 id="summary-{esc(c)}">{esc(c)}</h3><p class="verdict">{sentence}</p>')
        out.append(f"<h4>Best algorithm per (processes, size): {esc(c)}</h4>{table}")
    if any_over:
        out.append(f'<p class="note over">{esc(evidence.OVER_LEGEND)}</p>')
    return "".join(out)


def tune_section(df: pd.DataFrame, parts: ReportParts, palette: plotmod.Palette,
                 dpi: int = 100, include_oversubscribed: bool = False) -> str:
    """`colltune tune`'s rules for every target the study has candidates of (its latest
    round), their quality in-sample and cross-validated, and a decision map per
    collective. Empty when the data allow no rules (several studies mixed, or no
    target with a candidate besides native)."""
    from colltune.tuning import tune as tune_mod
    from colltune.rules.ruleset import TARGETS

    if "study" not in df.columns or df["study"].nunique() != 1 or \
            str(df["study"].iloc[0]) == "(bench)":
        return ""
    d = df
    if "round" in d.columns and d["round"].notna().any():
        d = d[d["round"] == d["round"].max()]
    results = []
    for target in TARGETS:
        try:
            results.append(tune_mod.tune(d, target,
                                         include_oversubscribed=include_oversubscribed))
        except tune_mod.TuneError:
            continue
    if not results:
        return ""
    out = ['<h2 id="tune">Rules: colltune tune</h2>',
           '<p class="note">What <code>colltune tune --study '
           f'{esc(df["study"].iloc[0])} --target TARGET -o FILE</code> writes for this study, '
           "and how good it is (docs/tuning.md). Per point the choice is native unless a "
           "candidate is faster beyond the noise of the repetitions (as in the summary); "
           "between measured sizes the rules switch at the geometric midpoint, a process "
           "count's rules hold up to the next measured count. <i>Regret</i>: the rules' "
           "choice's median latency over the fastest measured median at the point (1 = the "
           "fastest); <i>gain</i>: native's median over the choice's (above 1: better than "
           "the library's default). Geometric mean and worst point, in-sample and "
           "cross-validated: the rules built without one size (or one process count), "
           "evaluated on it.</p>"]
    rename = {"regret_gmean": "regret (geo. mean)", "regret_worst": "regret (worst)",
              "regret_worst_at": "worst at", "gain_gmean": "gain (geo. mean)",
              "gain_worst": "gain (worst)", "gain_worst_at": "worst gain at"}
    for t in results:
        target = t.rules.target
        out.append(f'<h3 id="tune-{esc(target)}">target {esc(target)}: '
                   f"{esc(tune_mod.LIBRARY_LABEL[target])} and native</h3>")
        for n in t.notes:
            out.append(f'<p class="note">{esc(n)}</p>')
        summ = t.summary.drop(columns=["unmeasured"] if not t.summary["unmeasured"].any()
                              else [])
        if not t.has_native:
            summ = summ.drop(columns=["gain_gmean", "gain_worst", "gain_worst_at"])
        out.append(f'<div class="scroll">{frame_table(summ, rename=rename)}</div>')
        rows = [[r.collective, f"{r.np_min}–" + ("" if r.np_max is None else str(r.np_max)),
                 f"{fmt_size(r.size_min)}–" + ("" if r.size_max is None else
                                               fmt_size(r.size_max)), r.spec]
                + ([r.mapping or ""] if t.rules.rules and "mapping" in t.keys else [])
                for r in t.rules.rules]
        cols = ["collective", "processes", "sizes", "algorithm"] + (
            ["mapping"] if "mapping" in t.keys else [])
        out.append(f"<details><summary>the {len(rows)} rules</summary>"
                   f"{html_table(cols, rows)}</details>")
        pts = t.points["in-sample"]
        grid = []
        for c in [c for c in ("bcast", "reduce", "gather", "allgather", "allreduce")
                  if c in set(pts["collective"])]:
            _add_figure(parts, grid, "decision-map", c,
                        f"{c}: what the rules for {target} choose, with the gain over native",
                        lambda c=c: plotmod.fig_decision_map(pts[pts["collective"] == c],
                                                             palette, target), dpi)
        out.append('<div class="grid">' + "".join(grid) + "</div>")
    return "".join(out)


def load_section(df: pd.DataFrame, parts: ReportParts, palette: plotmod.Palette,
                 dpi: int = 100, platform: str | None = None) -> str:
    """A study with load levels (docs/workload.md): the probe per level, the correlation
    of the probe with every algorithm's latency (the seed's Fig. 2), the best algorithm
    per load level with evidence and how often it changes. Empty without probe values.
    `platform`: simulated points of that platform (a subsection of the simulated
    section, the generator inside the simulation)."""
    from colltune.drivers import loadgen as workload

    if "probe_us" not in df.columns or not df["probe_us"].notna().any() or \
            "load_level" not in df.columns:
        return ""
    d = df[df["probe_us"].notna()]
    if "round" in d.columns and d["round"].notna().any():
        d = d[d["round"] == d["round"].max()]
    d = d.assign(label=plotmod._labels(d)) if "label" not in d.columns else d
    if platform is None:
        out = ['<h2 id="load">Load: the probe and the best algorithm per load level</h2>',
               '<p class="note">Every launch ran under one load level (background traffic from '
               "colltune-load beside it) and the probe (a barrier and 4 KB exchanged between "
               "random pairs, µs per iteration) ran just before it; its value is stored with "
               "every point. As in seed 004: the correlation of the probe with each "
               "algorithm's latency over the launches, and the best algorithm per level "
               "(native unless faster beyond the noise of the repetitions, evidence.py). "
               "<code>colltune load analyse</code> prints the same.</p>"]
        kind = "load"
    else:
        out = [f'<h3 id="load-simulated">Simulated load on {esc(platform)}: the probe and the '
               "best algorithm per load level &mdash; not measurements</h3>",
               '<p class="note">Every simulated launch ran under one load level: generator '
               "ranks inside the same simulation, on other nodes of the platform, exchanging "
               "large messages between random pairs (a seed of their own per launch, so the "
               "load differs between launches), and the probe (a barrier and the study's "
               "probe_size exchanged between random pairs of the measured ranks, simulated µs "
               "per iteration) ran "
               "first in the launch. The simulation is deterministic: the launches of one "
               "level differ by the generator's pairings, not by noise. "
               "<code>colltune load analyse --include-simulated</code> prints the same.</p>"]
        kind = "sim-load"
    probe = d.groupby(["load_level"])["probe_us"].agg(["median", "min", "max", "count"])
    probe = probe.loc[workload.level_order(d)].reset_index()
    out.append(frame_table(probe.rename(columns={"median": "probe median (µs)",
                                                 "min": "min", "max": "max",
                                                 "count": "points"})))
    corr = workload.correlations(d, label="label")
    h = "h3" if platform is None else "h4"
    out.append(f'<{h} id="{kind}-correlation">Correlation of the probe with the latency</{h}>')
    out.append(f'<div class="scroll">{frame_table(corr)}</div>')
    best = workload.best_per_level(d)
    ch = workload.changes(best)
    out.append(f'<{h} id="{kind}-best">Best algorithm per load level</{h}>')
    out.append(f'<p>The best algorithm changes with the load at {int(ch["changes"].sum())} of '
               f'{len(ch)} points (the fastest median at {int(ch["fastest_changes"].sum())}).'
               "</p>")
    cols = ["collective", "np", "size", "load_level", "probe_us", "best", "fastest", "evidence"]
    out.append(f'<div class="scroll">{frame_table(best[cols])}</div>')
    grid = []
    for (coll, np_), g in d.groupby(["collective", "np"], sort=True):
        _add_figure(parts, grid, f"{kind}-correlation", coll,
                    f"{coll} np={np_}: probe vs latency per algorithm and size (seed 004 Fig. 2)",
                    lambda g=g: plotmod.fig_load_correlation(g, palette, corr), dpi, wide=True)
        b = best[(best["collective"] == coll) & (best["np"] == np_)]
        _add_figure(parts, grid, f"{kind}-best", coll,
                    f"{coll} np={np_}: best algorithm per load level and size",
                    lambda b=b: plotmod.fig_load_best(b, palette), dpi)
    out.append('<div class="grid">' + "".join(grid) + "</div>")
    return "".join(out)


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
        ["report generated", _dt.datetime.now().astimezone().isoformat(timespec="seconds")],
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
            items.append(f"<li>launches ({len(launches)}): <ul>" + "".join(
                f'<li><code class="cmd">{esc(c)}</code></li>' for c in shown)
                + ("<li>…</li>" if len(launches) > len(shown) else "") + "</ul></li>")
        if items:
            details.append(f"<li>run {esc(rid)}<ul>{''.join(items)}</ul></li>")
    if details:
        out.append('<h3>Command lines and environment</h3><ul class="prov">'
                   + "".join(details) + "</ul>")
    for name, definition in prov.definitions.items():
        try:
            text = json.dumps(json.loads(definition), indent=1, sort_keys=True)
        except (TypeError, json.JSONDecodeError):
            text = str(definition)
        out.append(f"<h3>Definition of study {esc(name)}</h3><pre class=\"cmd\">"
                   f"{esc(text)}</pre>")
    return "".join(out)


def cost_section(model: dict | None, note: str | None) -> str:
    out = ['<h2 id="cost-model">Cost model</h2>']
    if model is None:
        out.append(f'<p class="note">{esc(note or "not computed")}</p>')
        return "".join(out)
    p = model["params"]
    h = p.hockney
    g = p.gamma_info
    rows = [["α (latency)", f"{p.alpha * 1e6:.4g} µs",
             f"{h.source}; {h.method}; R² {h.r2:.4f}; {h.n} sizes "
             f"{fmt_size(h.sizes[0])}..{fmt_size(h.sizes[-1])}" if h else "given"],
            ["β (per byte)", f"{p.beta * 1e9:.4g} ns/B"
             + (f" ({1e-6 / p.beta:,.0f} MB/s)" if p.beta > 0 else ""), "same fit" if h else
             "given"],
            ["γ (reduction per byte)", f"{p.gamma * 1e9:.4g} ns/B",
             "given" if g is None else g.source + (f", {g.dtype} {g.op}" if g.dtype else "")]]
    if h:
        rows += [["LogGP L + 2o", f"{h.alpha * 1e6:.4g} µs", "= α; L and o not separable "
                  "without an overhead benchmark"],
                 ["LogGP G", f"{h.beta * 1e9:.4g} ns/B", "= β"],
                 ["LogGP L, o, g", "not measured", "need overhead and message-rate benchmarks"]]
    out.append(html_table(["parameter", "value", "source"], rows, cls="kv"))
    for n in (h.notes if h else []) + (g.notes if g else []) + model.get("notes", []):
        out.append(f'<p class="note">{esc(n)}</p>')
    out.append("<h3>Prediction error per collective</h3>"
               '<p class="note">relative error = (predicted − measured) / measured, per point '
               "(median over repetitions); formulas from the registry with each point's "
               "parameters.</p>")
    names = {"median_abs_rel_error": "median |error|", "median_rel_error": "median error",
             "within_2x": "share within ×2"}
    out.append(frame_table(_percent(model["by_collective"]), "err", names))
    out.append("<h3>Prediction error per algorithm</h3>")
    out.append(frame_table(_percent(model["by_algorithm"]), "err", names))
    sel = model["selection"]
    out.append("<h3>The model's choice against the fastest measured</h3>"
               '<p class="note">fastest measured: the lowest median, without a test of the '
               "noise (the summary at the top says which differences are real).</p>")
    if sel.empty:
        out.append('<p class="note">nothing to compare</p>')
    else:
        ag = sel.dropna(subset=["agree"]).groupby("collective").agg(
            points=("agree", "size"), model_right=("agree", "sum"),
            median_slowdown=("slowdown", "median"), worst_slowdown=("slowdown", "max"))
        out.append(frame_table(ag.reset_index(), "sel", {
            "model_right": "model picks the fastest modelled",
            "median_slowdown": "median slowdown of the pick",
            "worst_slowdown": "worst slowdown"}))
        keep = [c for c in ("collective", "mapping", "np", "size", "measured_best",
                            "measured_best_us", "best_modelled", "best_modelled_us",
                            "model_pick", "ties", "model_pick_measured_us", "slowdown",
                            "agree")
                if c in sel.columns]
        sel = sel.assign(agree=sel["agree"].map({True: "yes", False: "no"}))
        out.append('<div class="scroll">' + frame_table(sel[keep], "sel", {
            "np": "processes", "measured_best": "fastest measured (median)",
            "model_pick": "model pick", "measured_best_us": "its µs",
            "best_modelled": "fastest modelled", "best_modelled_us": "its µs",
            "ties": "predicted equal",
            "model_pick_measured_us": "pick µs (measured)",
            "slowdown": "pick slower ×"}) + "</div>")
    return "".join(out)


def _percent(df: pd.DataFrame) -> pd.DataFrame:
    d = df.copy()
    for c in ("median_abs_rel_error", "within_2x"):
        if c in d.columns:
            d[c] = d[c].map(lambda v: f"{v:.0%}")
    if "median_rel_error" in d.columns:
        d["median_rel_error"] = d["median_rel_error"].map(lambda v: f"{v:+.0%}")
    return d


# ---------------------------------------------------------------------------- assembly

def build_report(df: pd.DataFrame, *, runs: Provenance | pd.DataFrame | None = None,
                 db_path=".",
                 study: str | None = None, palette: plotmod.Palette | None = None,
                 model: dict | None = None, model_note: str | None = None, dpi: int = 100,
                 surface_algo: str | None = None,
                 include_oversubscribed: bool = False,
                 simulated: pd.DataFrame | None = None) -> tuple[str, ReportParts]:
    """The HTML text of the report and what it holds (figures, notes). `simulated`:
    simulated points (SimGrid), shown in a section of their own, never mixed in."""
    palette = palette or plotmod.Palette()
    parts = ReportParts()
    if runs is None:
        runs = Provenance(pd.DataFrame())
    elif isinstance(runs, pd.DataFrame):
        runs = Provenance(runs)
    colls = [c for c in ("bcast", "reduce", "gather", "allgather", "allreduce")
             if c in set(df["collective"])]
    # point-to-point records (ping-pong) feed the cost model, not a collective section
    colls += sorted(set(df["collective"].dropna()) - set(colls) - {"heat", "pingpong", "p2p"})
    # the answer first: the summary, then figures, then models, provenance last
    body = [summary_section(df, colls, include_oversubscribed)] if colls else []
    for c in colls:
        body.append(collective_section(df, c, palette, parts, dpi, surface_algo))
    has_heat = "heat" in set(df["collective"])
    if has_heat:
        body.append(heat_section(df[df["collective"] == "heat"], parts, dpi))
    tuned = tune_section(df[df["collective"].isin(colls)], parts, palette, dpi,
                         include_oversubscribed) if colls else ""
    body.append(tuned)
    loaded = load_section(df[df["collective"].isin(colls)], parts, palette, dpi) if colls else ""
    body.append(loaded)
    if colls:
        body.append('<h2 id="models">Regression models</h2>')
        body += [models_section(df, c, palette, surface_algo) for c in colls]
    sim_html = simulated_section(simulated, parts, palette, dpi) if simulated is not None else ""
    sim_html += remap_section(simulated, parts, palette, dpi) if sim_html else ""
    body.append(sim_html)
    if len(df):
        body.append(cost_section(model, model_note))
        body.append(provenance_section(runs, df, db_path, study))
    title = f"colltune report: {study}" if study else "colltune report"
    nav = ("<nav><ol>" + ('<li><a href="#summary">Summary</a></li>' if colls else "")
           + "".join(f'<li><a href="#coll-{esc(c)}">{esc(c)}: figures</a></li>' for c in colls)
           + ('<li><a href="#coll-heat">Heat diffusion</a></li>' if has_heat else "")
           + ('<li><a href="#tune">Rules (colltune tune)</a></li>' if tuned else "")
           + ('<li><a href="#load">Load</a></li>' if loaded else "")
           + ('<li><a href="#models">Regression models</a></li>' if colls else "")
           + ('<li><a href="#simulated">Simulated points (not measurements)</a></li>'
              if sim_html else "")
           + ('<li><a href="#cost-model">Cost model</a></li>'
              '<li><a href="#provenance">Provenance</a></li>' if len(df) else "")
           + '</ol></nav>')
    if has_heat:
        colls = colls + ["heat"]
    figlist = "".join(f'<li><a href="#{f.id}">{esc(f.caption)}</a></li>' for f in parts.figures)
    n_sim = 0 if simulated is None else len(simulated)
    head = (f"<h1>{esc(title)}</h1><p class=\"meta\">{len(df)} measurements, "
            + (f"{n_sim} simulated points (apart), " if n_sim else "")
            + f"{len(colls)} collective(s), {len(parts.figures)} figures; generated by colltune "
            f"{esc(__version__)}</p>")
    doc = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
           f"<title>{esc(title)}</title><style>{CSS}</style></head>"
           f"<body data-figures=\"{len(parts.figures)}\">{head}{nav}"
           + "".join(body)
           + f'<h2 id="figures">List of figures</h2><ol class="figlist">{figlist}</ol>'
           + f"<script>{SCRIPT}</script></body></html>\n")
    return doc, parts


# ----------------------------------------------------------------------- simulated

SIM_NOTE = ("Times simulated by SimGrid's SMPI: colltune's own algorithm code ran on a "
            "simulated platform (computation not charged, no memory-bandwidth contention, "
            "message buffers shared between ranks; docs/simulation.md). They are kept apart "
            "from measurements: no summary, model or rule above uses them.")


def _loglog(ax, title: str, xlabel: str) -> None:
    """Log-log axes of the simulated figures: base-2 x, a small title, a light grid."""
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel)
    ax.grid(alpha=0.3)


def simulated_section(sim: pd.DataFrame, parts: ReportParts, palette: plotmod.Palette,
                      dpi: int = 100) -> str:
    """Simulated points, apart: per simulator and platform, per collective and size, the
    simulated latency of each algorithm against the process count (table and figure)."""
    if sim is None or sim.empty:
        return ""
    d = sim.copy()
    d["median_us"] = pd.to_numeric(d["median_us"], errors="coerce")
    d = d[d["median_us"].notna()]
    for col in ("platform", "simulator"):
        if col not in d.columns:
            d[col] = None
        d[col] = d[col].astype(object).where(d[col].notna(), "unknown")
    label = "spec" if "spec" in d.columns else "algorithm"
    d[label] = d[label].astype(object).where(d[label].notna(), d["algorithm"])
    out = ['<h2 id="simulated">Simulated points</h2>', f'<p class="note">{esc(SIM_NOTE)}</p>']
    for (simulator, platform), g in d.groupby(["simulator", "platform"], sort=True):
        sim_name = str(simulator).replace(" (SMPI)", "")
        out.append(f"<h3>Simulated ({esc(sim_name)}, platform {esc(platform)}) "
                   "&mdash; not measurements</h3>")
        for coll in [c for c in ("bcast", "reduce", "gather", "allgather", "allreduce")
                     if c in set(g["collective"])]:
            gc = g[g["collective"] == coll]
            for size in sorted(gc["size"].unique()):
                gs = gc[gc["size"] == size]
                piv = gs.pivot_table(index=label, columns="np", values="median_us",
                                     aggfunc="median")
                best = piv.idxmin(axis=0)
                rows = []
                for algo in piv.index:
                    cells = [str(algo)]
                    for n in piv.columns:
                        v = piv.loc[algo, n]
                        text = "" if pd.isna(v) else f"{v:.2f}"
                        cells.append(f"<b>{esc(text)}</b>" if text and best[n] == algo
                                     else text)
                    rows.append(cells)
                out.append(f"<h4>{esc(coll)}, {esc(fmt_size(int(size)))}: simulated latency "
                           "(µs; bold: fastest at that process count)</h4>")
                out.append(html_table(["algorithm"] + [f"np {n}" for n in piv.columns], rows,
                                      set(range(1, len(piv.columns) + 1))))

            def make(gc=gc, coll=coll, platform=platform):
                import matplotlib.pyplot as plt

                sizes = sorted(gc["size"].unique())
                cols = min(len(sizes), 4)
                fig, axes = plt.subplots(1, cols, figsize=(3.6 * cols, 3.4), squeeze=False)
                for ax, size in zip(axes[0], sizes[:cols]):
                    gs = gc[gc["size"] == size]
                    for algo, h in gs.groupby(label):
                        h = h.groupby("np")["median_us"].median()
                        ax.plot(h.index, h.values, marker="o", ms=3, lw=1, label=str(algo),
                                color=palette(str(algo)))
                    _loglog(ax, f"{coll} {fmt_size(int(size))}", "processes")
                axes[0][0].set_ylabel("simulated latency (µs)")
                axes[0][-1].legend(fontsize=6)
                fig.suptitle(f"SIMULATED on {platform} (not measurements)", fontsize=9)
                fig.tight_layout()
                return fig

            _add_figure(parts, out, "simulated", coll,
                        f"{coll}: simulated latency against processes per algorithm, platform "
                        f"{platform} ({sim_name}; not measurements)", make, dpi, wide=True)
        if "probe_us" in g.columns and g["probe_us"].notna().any():
            out.append(load_section(g, parts, palette, dpi, platform=str(platform)))
    return "".join(out)


REMAP_NOTE = ("Rank remapping (docs/remapping.md), simulated: per algorithm, the ranks "
              "placed in sequential (seq) or round-robin (rr) order across the nodes, plain "
              "or remapped (seq>rr: placed seq, run with remap=rr; rr>seq the other way). "
              "Bandwidth: size per process / simulated time (MB/s). Speedup: the "
              "unfavourable placement plain / the same remapped to the favourable order. "
              "Overhead: that remapped time / the favourable placement plain, minus 1. "
              "Identity: the favourable placement run with a remap to its own order (the "
              "layer with nothing to do).")


def _pct(v) -> str:
    return "" if v is None or pd.isna(v) else f"{100 * v:+.1f}%"


def _x(v) -> str:
    return "" if v is None or pd.isna(v) else f"{v:.2f}\u00d7"


def remap_section(sim: pd.DataFrame | None, parts: ReportParts, palette: plotmod.Palette,
                  dpi: int = 100) -> str:
    """Simulated points of remapped algorithms (`remap=` specs): per platform and process
    count, the speedup of remapping and its overhead at every size (remap.remap_effect),
    a bandwidth table per algorithm and a figure. Empty without remapped points."""
    from colltune.analysis.remap import remap_effect, remap_of

    if sim is None or sim.empty or "rank_order" not in sim.columns:
        return ""
    spec = sim["spec"] if "spec" in sim.columns else sim["algorithm"]
    params = sim["params"] if "params" in sim.columns else [None] * len(sim)
    if all(remap_of(s, p) == "none" for s, p in zip(spec, params)):
        return ""
    eff = remap_effect(sim)
    if "platform" not in eff.columns:
        eff["platform"] = ""
    eff = eff[eff["us_seq"].notna() & eff["us_rr"].notna()]
    if eff.empty:
        return ""
    out = ['<h3 id="simulated-remap">Rank remapping (simulated) &mdash; not measurements</h3>',
           f'<p class="note">{esc(REMAP_NOTE)}</p>']
    for (platform, n), g in eff.groupby(["platform", "np"], sort=True):
        out.append(f"<h4>Speedup of remapping and its overhead: {int(n)} processes, platform "
                   f"{esc(platform or 'unknown')}</h4>")
        sizes = sorted(g["size"].unique())
        rows = []
        for (coll, algo), h in g.groupby(["collective", "algorithm"], sort=True):
            h = h.set_index("size")
            best = h["best"].iloc[-1]
            cells = [coll, algo, best]
            for size in sizes:
                r = h.loc[size] if size in h.index else None
                cells.append("" if r is None else
                             f"{_x(r['speedup'])} / {_pct(r['overhead'])}".strip(" /"))
            rows.append(cells)
        out.append(html_table(["collective", "algorithm", "favourable (largest size)"]
                              + [fmt_size(int(s)) for s in sizes], rows,
                              set(range(3, 3 + len(sizes)))))
        out.append('<p class="note">Each cell: speedup of remapping the unfavourable '
                   "placement / overhead of the remapped run over the favourable placement.</p>")
        for (coll, algo), h in g.groupby(["collective", "algorithm"], sort=True):
            rows = []
            for _, r in h.sort_values("size").iterrows():
                rows.append([fmt_size(int(r["size"]))]
                            + [("" if pd.isna(r[f"bw_{p}"]) else f"{r[f'bw_{p}']:.1f}")
                               for p in ("seq", "rr", "seq>rr", "rr>seq")]
                            + [r["best"] or "", _x(r["speedup"]), _pct(r["overhead"]),
                               _pct(r["identity_overhead"])])
            out.append(f"<h5>{esc(coll)} {esc(algo)}, {int(n)} processes: bandwidth (MB/s) "
                       "per placement</h5>")
            out.append(html_table(["size", "seq", "rr", "seq>rr", "rr>seq", "favourable",
                                   "speedup", "overhead", "identity"], rows,
                                  {1, 2, 3, 4, 6, 7, 8}))

        def make(g=g, n=n, platform=platform):
            import matplotlib.pyplot as plt

            algos = list(g.groupby(["collective", "algorithm"], sort=True).groups)
            cols = min(len(algos), 5)
            fig, axes = plt.subplots(1, cols, figsize=(3.2 * cols, 3.2), squeeze=False)
            for ax, (coll, algo) in zip(axes[0], algos[:cols]):
                h = g[(g["collective"] == coll) & (g["algorithm"] == algo)].sort_values("size")
                # the remapped lines lie on the order they turn into: dashed, other marks
                for p, style, mark, color in (("seq", "-", "o", "tab:blue"),
                                              ("rr", "-", "s", "tab:orange"),
                                              ("seq>rr", "--", "x", "tab:red"),
                                              ("rr>seq", "--", "+", "tab:cyan")):
                    if h[f"bw_{p}"].notna().any():
                        ax.plot(h["size"], h[f"bw_{p}"], style, marker=mark, ms=5, lw=1,
                                label=p, color=color)
                _loglog(ax, f"{coll} {algo}", "bytes per process")
            axes[0][0].set_ylabel("simulated bandwidth (MB/s)")
            axes[0][-1].legend(fontsize=6)
            fig.suptitle(f"SIMULATED remapping, {int(n)} processes on {platform} "
                         "(not measurements)", fontsize=9)
            fig.tight_layout()
            return fig

        _add_figure(parts, out, "simulated", "remap",
                    f"rank remapping: simulated bandwidth per placement, {int(n)} processes, "
                    f"platform {platform} (not measurements)", make, dpi, wide=True)
    return "".join(out)


def heat_scaling(df: pd.DataFrame) -> pd.DataFrame:
    """Per (grid, decomp, variant, np): median wall time over repetitions, GFLOP/s,
    speedup S(p) = T(1)/T(p) and efficiency E(p) = S(p)/p (T(1): the same grid,
    decomposition and variant on one process; NaN without it)."""
    d = df[df["algorithm"] != STREAM].copy()
    def _params(v) -> dict:  # "k=v,k=v" as recorded, or the database's JSON object
        if isinstance(v, dict):
            return v
        text = str(v)
        if text.startswith("{"):
            return json.loads(text)
        return dict(p.split("=", 1) for p in text.split(",") if "=" in p)

    kv = [_params(v) for v in d["params"]]
    d["grid"] = [x.get("grid") for x in kv]
    d["decomp"] = [x.get("decomp") for x in kv]
    d["cells"] = d["size"] // 8
    d["time_s"] = d["median_us"] / 1e6
    # FLOPs: 8 per cell per iteration (docs/heat.md)
    d["gflops"] = 8 * d["cells"] * d["iterations"] / d["time_s"] / 1e9
    g = (d.groupby(["grid", "decomp", "algorithm", "np"], sort=True)
          .agg(time_s=("time_s", "median"), gflops=("gflops", "median"),
               runs=("time_s", "size"))
          .reset_index().rename(columns={"algorithm": "variant"}))
    t1 = g[g["np"] == 1].set_index(["grid", "decomp", "variant"])["time_s"]
    g["speedup"] = [t1.get((r.grid, r.decomp, r.variant), float("nan")) / r.time_s
                    for r in g.itertuples()]
    g["efficiency"] = g["speedup"] / g["np"]
    bw = stream_bandwidth(df)
    if not bw.empty:
        from colltune.drivers.heat import bandwidth_bound_gflops

        g["stream_GBps"] = g["np"].map(bw)
        g["bound_gflops"] = g["stream_GBps"].map(  # NaN where no triad at that np
            lambda v: bandwidth_bound_gflops(v) if pd.notna(v) else float("nan"))
        g["of_bound"] = g["gflops"] / g["bound_gflops"]
    return g


def stream_bandwidth(df: pd.DataFrame) -> pd.Series:
    """Memory bandwidth (GB/s, all processes together) per process count: the median
    over the heat study's STREAM triad launches (bytes moved / best time)."""
    s = df[df["algorithm"] == STREAM]
    if s.empty:
        return pd.Series(dtype=float)
    gbs = s["size"] / s["median_us"] / 1e3
    return gbs.groupby(s["np"]).median()


def heat_section(df: pd.DataFrame, parts: ReportParts, dpi: int = 100) -> str:
    """The heat application: speedup and efficiency per grid and variant, overlap gain."""
    out = ['<h2 id="coll-heat">Heat diffusion</h2>',
           '<p class="note">Measured wall time of <code>colltune-heat</code> (slowest rank), '
           "median over repetitions; GFLOP/s at 8 FLOPs per cell per iteration; speedup "
           "S(p) = T(1)/T(p), efficiency E(p) = S(p)/p.</p>"]
    g = heat_scaling(df)
    out.append("<h3>Speedup and efficiency</h3>")
    cols = ["grid", "decomp", "variant", "np", "runs", "time_s", "gflops", "speedup",
            "efficiency"]
    if "bound_gflops" in g.columns:
        cols += ["stream_GBps", "bound_gflops", "of_bound"]
        out.append('<p class="note">Bandwidth bound: the stencil moves at least 24 bytes per '
                   "cell and iteration (read the old grid and the conductivity, write the new "
                   "one), so memory that moves B GB/s allows at most B / 24 × 8 GFLOP/s; B is "
                   "the STREAM triad bandwidth measured in this study at the same process "
                   "count (median over its launches). <code>of_bound</code> = GFLOP/s / bound."
                   "</p>")
    else:
        out.append('<p class="note">no memory-bandwidth measurement in this study (study.heat.'
                   "stream = false): no bandwidth bound</p>")
    out.append(frame_table(g[cols], rename={"stream_GBps": "STREAM GB/s",
                                            "bound_gflops": "bound GFLOP/s",
                                            "of_bound": "of bound"}))
    piv = g.pivot_table(index=["grid", "decomp", "np"], columns="variant", values="time_s")
    gains = []
    for v in ("overlap", "persistent"):
        if "blocking" in piv and v in piv:
            gains.append((piv["blocking"] / piv[v]).rename(f"blocking / {v}"))
    if gains:
        out.append("<h3>Overlap gain (time of blocking / time of the variant; &gt; 1: faster)"
                   "</h3>")
        out.append(frame_table(pd.concat(gains, axis=1).reset_index()))

    def make():
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4.5))
        top = int(g["np"].max())
        ax.plot([1, top], [1, top], "k--", lw=1, label="ideal")
        for (grid, decomp, variant), h in g.groupby(["grid", "decomp", "variant"]):
            h = h.dropna(subset=["speedup"]).sort_values("np")
            if len(h):
                ax.plot(h["np"], h["speedup"], marker="o", label=f"{grid} {decomp} {variant}")
        ax.set_xlabel("processes")
        ax.set_ylabel("speedup T(1)/T(p)")
        ax.set_title("heat diffusion: measured speedup")
        ax.legend(fontsize=7, ncol=2)
        ax.grid(alpha=0.3)
        return fig

    if (g["np"] == 1).any():
        _add_figure(parts, out, "heat-speedup", "heat", "Heat diffusion: speedup against "
                    "processes per grid, decomposition and variant (dashed: ideal)", make, dpi,
                    wide=True)
    else:
        out.append('<p class="note">no 1-process runs: speedup needs T(1)</p>')
    return "".join(out)


def compute_model(df: pd.DataFrame, *, db_path, algos, build=None, pingpong=None,
                  alpha=None, beta=None, gamma=None, gamma_mode="auto", measure=False):
    """(model result or None, note): the cost model when α, β can be had."""
    from colltune.analysis import costmodel as cm

    notes: list[str] = []
    if algos is None:
        return None, "no algorithm registry (no MPI build): the cost model needs the formulas"
    if not measure and pingpong is None and (alpha is None or beta is None):
        if cm.load_pingpong_from_db(db_path) is None:
            return None, ("no ping-pong data: run `colltune report` with --pingpong-json FILE "
                          "(from `colltune pingpong --format json`) or --measure (on the "
                          "machine that ran the study)")
    try:
        now = build if measure else None  # measured now: ping-pong and γ on this machine
        params = cm.resolve_params(
            df, pingpong=pingpong, alpha=alpha, beta=beta, gamma=gamma, gamma_mode=gamma_mode,
            measure_pingpong=partial(p2p.measure_pingpong, now) if now else None,
            measure_gamma=partial(gamma_driver.measure_gamma, now) if now else None,
            db_path=db_path, notes=notes)
    except Exception as exc:  # noqa: BLE001 - the report goes on without the model
        return None, f"cost model not computed: {exc}"
    result = cm.run_model(df, algos, params)
    result["notes"] = notes + result["model_notes"]
    return result, None
