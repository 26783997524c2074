"""Simulated points (SimGrid), apart from measurements: latency per platform and
collective, simulated load, and rank remapping."""

from __future__ import annotations

from typing import TYPE_CHECKING

from colltune.base.collectives import COLLECTIVES
from colltune.analysis.remap import remap_effect
from colltune.base.specs import remap_of
from colltune.base.lazy import LazyModule
from colltune.base.units import fmt_size
from colltune.mpi.platforms import PlatformError, resolve
from colltune.output import figures as plotmod
from colltune.output.report.page import ReportParts, _add_figure, esc, html_table
from colltune.output.report.load import load_section

pd = LazyModule("pandas")

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure


SIM_NOTE = ("Times simulated by SimGrid's SMPI: colltune's own algorithm code ran on a "
            "simulated platform (computation not charged, no memory-bandwidth contention, "
            "message buffers shared between ranks; docs/simulation.md). They are kept apart "
            "from measurements: no summary, model or rule above uses them. Their `native` is "
            "SimGrid's own implementation of each collective (SMPI's default selector), not "
            "an MPI library's.")


def platform_text(platform: str, g: pd.DataFrame) -> str:
    """What a platform was, and how far the simulation stretched it: a flat platform
    grows by nodes of the same kind when a point asks for more processes than it has
    cores (mpi.launch); the points' `nodes` say how many they ran on."""
    try:
        plat = resolve(str(platform))
    except (PlatformError, OSError, ValueError):
        return f"platform {platform} (its description is stored with the run)"
    text = (f"platform {plat.name}: {plat.nodes} node(s) of {plat.cores_per_node} cores, "
            f"{plat.topology}")
    used = pd.to_numeric(g.get("nodes"), errors="coerce").max() if "nodes" in g else None
    if used is not None and used == used and int(used) > plat.nodes:
        big = sorted(int(n) for n in g.loc[pd.to_numeric(g["nodes"], errors="coerce")
                                           > plat.nodes, "np"].unique())
        text += (f"; stretched to {int(used)} nodes of the same kind for np "
                 f"{big[0]}..{big[-1]} (more processes than its {plat.cores} cores)")
    return text


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
                   "&mdash; not measurements</h3>"
                   f'<p class="note">{esc(platform_text(platform, g))}; native: SimGrid\'s '
                   "own collective.</p>")
        for coll in [c for c in COLLECTIVES
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
            _add_figure(parts, out, "simulated", coll,
                        f"{coll}: simulated latency against processes per algorithm, platform "
                        f"{platform} ({sim_name}; not measurements)",
                        lambda gc=gc, coll=coll, platform=platform: fig_simulated(
                            gc, palette, coll, platform, label), dpi, wide=True)
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
        _add_figure(parts, out, "simulated", "remap",
                    f"rank remapping: simulated bandwidth per placement, {int(n)} processes, "
                    f"platform {platform} (not measurements)",
                    lambda g=g, n=n, platform=platform: fig_remap_bandwidth(
                        g, n, platform), dpi, wide=True)
    return "".join(out)


def fig_simulated(gc: pd.DataFrame, palette: plotmod.Palette, coll: str, platform,
                  label: str = "algorithm") -> Figure:
    """Simulated latency against processes, one panel per size (the first four), one
    line per `label` (algorithm or spec): the report's simulated section."""
    sizes = sorted(gc["size"].unique())
    cols = min(len(sizes), 4)
    fig, axes = plotmod.panels(cols, 3.6, 3.4)
    for ax, size in zip(axes[0], sizes[:cols]):
        gs = gc[gc["size"] == size]
        for algo, h in gs.groupby(label):
            h = h.groupby("np")["median_us"].median()
            ax.plot(h.index, h.values, marker="o", ms=3, lw=1, label=str(algo),
                    color=palette(str(algo)))
        plotmod.loglog_axes(ax, f"{coll} {fmt_size(int(size))}", "processes")
    axes[0][0].set_ylabel("simulated latency (µs)")
    axes[0][-1].legend(fontsize=6)
    fig.suptitle(f"SIMULATED on {platform} (not measurements)", fontsize=9)
    fig.tight_layout()
    return fig


def fig_remap_bandwidth(g: pd.DataFrame, n: int, platform) -> Figure:
    """Simulated bandwidth per placement (seq, rr and the two remapped ones) against the
    size, one panel per (collective, algorithm) (the first five); `g`: rows of
    remap.remap_effect at one process count."""
    algos = list(g.groupby(["collective", "algorithm"], sort=True).groups)
    cols = min(len(algos), 5)
    fig, axes = plotmod.panels(cols, 3.2, 3.2)
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
        plotmod.loglog_axes(ax, f"{coll} {algo}", "bytes per process")
    axes[0][0].set_ylabel("simulated bandwidth (MB/s)")
    axes[0][-1].legend(fontsize=6)
    fig.suptitle(f"SIMULATED remapping, {int(n)} processes on {platform} "
                 "(not measurements)", fontsize=9)
    fig.tight_layout()
    return fig
