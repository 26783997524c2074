"""The heat application's section: speedup, efficiency, bandwidth bound, overlap gain."""

from __future__ import annotations

from typing import TYPE_CHECKING

from colltune.analysis.heat import heat_scaling
from colltune.base.lazy import LazyModule
from colltune.output import figures as plotmod
from colltune.output.report.page import ReportParts, _add_figure, frame_table

pd = LazyModule("pandas")

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure


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
    if (g["np"] == 1).any():
        _add_figure(parts, out, "heat-speedup", "heat", "Heat diffusion: speedup against "
                    "processes per grid, decomposition and variant (dashed: ideal)",
                    lambda: fig_heat_speedup(g), dpi, wide=True)
    else:
        out.append('<p class="note">no 1-process runs: speedup needs T(1)</p>')
    return "".join(out)


def fig_heat_speedup(g: pd.DataFrame) -> Figure:
    """Measured speedup of the heat application against processes per grid,
    decomposition and variant, with the ideal line (`g`: heat.heat_scaling)."""
    fig, axes = plotmod.panels(1, 7, 4.5)
    ax = axes[0][0]
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
