"""The load section: a study with load levels (docs/workload.md), measured or simulated."""

from __future__ import annotations

from colltune.analysis.points import labels, latest_round
from colltune.base.lazy import LazyModule
from colltune.analysis import load as load_analysis
from colltune.output import figures as plotmod
from colltune.output.report.page import ReportParts, _add_figure, esc, frame_table

pd = LazyModule("pandas")


def load_section(df: pd.DataFrame, parts: ReportParts, palette: plotmod.Palette,
                 dpi: int = 100, platform: str | None = None) -> str:
    """A study with load levels (docs/workload.md): the probe per level, the correlation
    of the probe with every algorithm's latency (the seed's Fig. 2), the best algorithm
    per load level with evidence and how often it changes. Empty without probe values.
    `platform`: simulated points of that platform (a subsection of the simulated
    section, the generator inside the simulation)."""
    if "probe_us" not in df.columns or not df["probe_us"].notna().any() or \
            "load_level" not in df.columns:
        return ""
    d = latest_round(df[df["probe_us"].notna()])  # of every study its latest round
    d = d.assign(label=labels(d)) if "label" not in d.columns else d
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
    probe = probe.loc[load_analysis.level_order(d)].reset_index()
    out.append(frame_table(probe.rename(columns={"median": "probe median (µs)",
                                                 "min": "min", "max": "max",
                                                 "count": "points"})))
    corr = load_analysis.correlations(d, label="label")
    h = "h3" if platform is None else "h4"
    out.append(f'<{h} id="{kind}-correlation">Correlation of the probe with the latency</{h}>')
    out.append(f'<div class="scroll">{frame_table(corr)}</div>')
    best = load_analysis.best_per_level(d)
    ch = load_analysis.changes(best)
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
