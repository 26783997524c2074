"""One self-contained HTML report per study: `colltune report`.

The file holds everything: figures as base64 PNG data URIs, tables, CSS for
screen and print; it loads nothing from anywhere (no http(s) link, no external
script, font or style). Sections, the answer first:

1. summary per collective: what to use where, by how much, with the evidence level
   (evidence.py: native unless another algorithm is faster beyond the noise; no
   conclusion from oversubscribed points, which are marked);
2. per collective, the figures of plot.py (latency vs processes at the smallest and
   largest size when there are several process counts, vs size at the smallest and
   largest process count, mapping A vs B, time / native's time, the map of the
   algorithm to use, the 3D surface with its fitted plane);
3. the heat application, for heat studies;
4. the rules `colltune tune` makes of the study for every target it has candidates of
   (tune.py), their quality in-sample and cross-validated, and a decision map per
   collective (plot.fig_decision_map); then the application: its time with the
   library's defaults and with the study's rules (application.py);
5. the regression models: the two seed models per algorithm (terms without variation
   dropped) and full coefficient tables for the surface's algorithm;
6. the cost model: α, β, γ (and LogGP where measurable), the median prediction error
   per collective and algorithm, and the model's choice against the fastest measured;
7. provenance of every run (machine, CPU, MPI, versions, command lines, times) and of
   the report itself (colltune version, git revision of its source tree).

The page carries one inline script: after loading it counts the images the browser
decoded and writes the count into `<body data-figures-rendered="k/n">`, which the
headless-Chromium test reads.

One module per concern: html (page, CSS, escaping, tables, embedded figures), data (every
SQL the report runs), summary, measurements, tuning (rules), model (regression and cost
models), load, simulated, heat, provenance; this module assembles the page.
"""

from __future__ import annotations

from colltune import __version__
from colltune.base.collectives import COLLECTIVES
from colltune.analysis.points import timing_groups, timings_text
from colltune.base.lazy import LazyModule
from colltune.output import figures as plotmod
from colltune.output.report.application import application_section
from colltune.output.report.data import Provenance, read_applications, read_runs
from colltune.output.report.heat import heat_section
from colltune.output.report.page import CSS, SCRIPT, FigureEntry, ReportParts, esc
from colltune.output.report.load import load_section
from colltune.output.report.measurements import collective_section
from colltune.output.report.model import compute_model, cost_section, models_section
from colltune.output.report.provenance import provenance_section
from colltune.output.report.simulated import remap_section, simulated_section
from colltune.output.report.summary import summary_section
from colltune.output.report.tuning import tune_section
from colltune.results import reader

pd = LazyModule("pandas")

__all__ = ["FigureEntry", "Provenance", "ReportParts", "build_report", "compute_model",
           "read_runs"]


def build_report(df: pd.DataFrame, *, runs: Provenance | pd.DataFrame | None = None,
                 db_path=".",
                 study: str | None = None, palette: plotmod.Palette | None = None,
                 model: dict | None = None, model_note: str | None = None, dpi: int = 100,
                 surface_algo: str | None = None,
                 include_oversubscribed: bool = False,
                 simulated: pd.DataFrame | None = None,
                 applications: list[dict] | None = None) -> tuple[str, ReportParts]:
    """The HTML text of the report and what it holds (figures, notes). `simulated`:
    simulated points (SimGrid), shown in a section of their own, never mixed in.
    `applications`: the application comparisons of the study's rules
    (results.reader.study_app_comparisons), in a section of their own."""
    palette = palette or plotmod.Palette()
    parts = ReportParts()
    if runs is None:
        runs = Provenance(pd.DataFrame())
    elif isinstance(runs, pd.DataFrame):
        runs = Provenance(runs)
    kinds = reader.measurement_kinds(df)
    measured = set(df.loc[kinds == "collective", "collective"].dropna())
    colls = [c for c in COLLECTIVES if c in measured]
    # point-to-point records (ping-pong) feed the cost model, not a collective section
    colls += sorted(measured - set(colls))
    # the answer first: the summary, then figures, then models, provenance last
    # the algorithms the summary recommends: every figure draws them (palette.always)
    body = [summary_section(df, colls, include_oversubscribed, palette.always)] if colls else []
    for c in colls:
        body.append(collective_section(df, c, palette, parts, dpi, surface_algo))
    has_heat = bool((kinds == "heat").any())
    if has_heat:
        body.append(heat_section(df[kinds == "heat"], parts, dpi))
    tuned = tune_section(df[df["collective"].isin(colls)], parts, palette, dpi,
                         include_oversubscribed) if colls else ""
    body.append(tuned)
    app_html = application_section(applications or [])
    body.append(app_html)
    loaded = load_section(df[df["collective"].isin(colls)], parts, palette, dpi) if colls else ""
    body.append(loaded)
    if colls:  # bulky tables: on screen only, one line in print
        body.append('<h2 id="models">Regression models</h2><p class="print-only note">'
                    "The regression tables are in the HTML file (left out of print).</p>"
                    '<section class="screen-only">')
        body += [models_section(df, c, palette, surface_algo) for c in colls]
        body.append("</section>")
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
           + ('<li><a href="#application">Application</a></li>' if app_html else "")
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
    timings = timing_groups(df)
    if len({t for t, _, _ in timings}) > 1:  # `report --pool-timings`: say what was pooled
        head += ('<p class="note over">Pooled timing methods (<code>--pool-timings</code>): '
                 f"{esc(timings_text(timings))}. Their latencies are different quantities; "
                 "the tables and figures mix them.</p>")
    doc = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
           f"<title>{esc(title)}</title><style>{CSS}</style></head>"
           f"<body data-figures=\"{len(parts.figures)}\">{head}{nav}"
           + "".join(body)
           + '<section class="screen-only"><h2 id="figures">List of figures</h2>'
           + f'<ol class="figlist">{figlist}</ol></section>'
           + f"<script>{SCRIPT}</script></body></html>\n")
    return doc, parts
