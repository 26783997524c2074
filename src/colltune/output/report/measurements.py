"""Per collective, the figures of the measurements (figures.py): latency vs processes
and vs size, mapping A vs B, time / native's time, the map of the algorithm to use and
the 3D surface with its fitted plane."""

from __future__ import annotations

from colltune.analysis import evidence
from colltune.analysis.points import best_table, honest_np, prepare
from colltune.base.lazy import LazyModule
from colltune.base.units import fmt_size
from colltune.output import figures as plotmod
from colltune.output.report.page import ReportParts, _add_figure, esc

pd = LazyModule("pandas")


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
    many = False  # line plots draw at most series.MAX_SERIES lines: half the width
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
        snp = honest_np(d)
        _add_figure(parts, out, "speedup", coll,
                    f"{coll}: time / native's time of each algorithm (below 1: faster) at "
                    f"{snp} processes{mapnote}",
                    lambda: plotmod.fig_speedup(d, palette, snp, default_map), dpi, many)
    for m in (maps if 1 < len(maps) <= 3 else [default_map]):
        one = _one_choice(d, m)
        if one:  # a map of one colour repeats the summary: one sentence instead
            out.append(f'<p class="note decision">{one}</p>')
            continue
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


def _one_choice(d: pd.DataFrame, mapping=None, baseline: str = "native") -> str:
    """The sentence that replaces the map of the algorithm to use when it would show one
    choice at every point (no oversubscribed point either); '' when the choice varies."""
    if mapping is not None and "mapping" in d.columns:
        d = d[d["mapping"].astype(str) == str(mapping)]
    tab = best_table(prepare(d).drop(columns=["mapping"], errors="ignore"), baseline)
    chosen = set(tab["best"].where(tab["best"].notna(), "(oversubscribed)"))
    if len(tab) == 0 or len(chosen) != 1:
        return ""
    where = (f" ({len(tab)} point(s), processes {', '.join(map(str, sorted(set(tab['np']))))}"
             + (f", mapping {mapping}" if mapping is not None else "") + ")")
    return (f"Algorithm to use: <b>{esc(chosen.pop())}</b> at every measured point"
            f"{esc(where)}; one choice everywhere, so no map is drawn (the summary's table "
            "gives the evidence per point).")
