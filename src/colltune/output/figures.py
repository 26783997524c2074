"""Figures of a study (matplotlib, Agg): `colltune plot`.

Every figure function takes a measurements DataFrame (see fit.py) for one
collective and returns a matplotlib Figure; `save_figure` writes PNG, PDF or SVG
atomically, `figure_bytes` gives the encoded image for the HTML report.

Kinds:

- `vs-processes`: latency against process count per algorithm at one size;
- `vs-size`: latency against size per algorithm at one process count;
- `mapping`: one panel per algorithm, one line per mapping (latency against processes);
- `speedup`: each algorithm's ratio to `native` (time / native's time, below 1: faster;
  evidence.ratio_to_baseline) against size;
- `best-map`: the fastest algorithm at every (processes, size), a categorical map;
- `surface`: processes × log2 size × log2 latency of one algorithm, with the plane of
  the seed's log model fitted to it.

Lines are the median over repetitions of each point's `median_us`. Bands show the
spread of the repetitions (min–max, or the 25–75 % quantiles); with one repetition
per point they show the run's own `rep_min_us`..`rep_max_us`. Colours: one per algorithm
name, the same in every figure, assigned in the registry's order (`Palette`).
"""

from __future__ import annotations

import hashlib
import math
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING

from colltune.base.collectives import per_process
from colltune.base.errors import ColltuneError
from colltune.base.files import write_atomic
from colltune.analysis.evidence import fmt_ratio, ratio_to_baseline
from colltune.base.specs import algorithm_of
from colltune.analysis.fit import FitError
from colltune.analysis.points import best_table, honest_np, point_stats, prepare
from colltune.base.lazy import LazyModule
from colltune.base.units import fmt_size
from colltune.mpi import libraries as mpi_mod
from colltune.drivers import registry
from colltune.mpi.build import Build, build_dir
from colltune.analysis.fit import fit_formula, model_frame, resolve_formula
from colltune.output.series import MAX_SERIES, select_series, series_styles


def _agg() -> None:
    import matplotlib

    matplotlib.use("Agg")  # no display, ever


if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

numpy = LazyModule("numpy")
pd = LazyModule("pandas")
ticker = LazyModule("matplotlib.ticker", _agg)
_mfigure = LazyModule("matplotlib.figure", _agg)
_mlines = LazyModule("matplotlib.lines", _agg)
_mpatches = LazyModule("matplotlib.patches", _agg)

KINDS = ("vs-processes", "vs-size", "mapping", "speedup", "best-map", "surface")
FORMATS = ("png", "pdf", "svg")
BANDS = ("minmax", "quantile", "none")

# The registry's order of algorithm names (bcast, reduce, gather, allgather,
# allreduce), used when the registry cannot be asked (no MPI build). Only the order
# of colours depends on it; the registry itself comes first when available.
FALLBACK_ORDER = (
    "native", "linear", "linear_nb", "chain", "pipeline", "binary", "split_binary",
    "binomial", "knomial", "scatter_allgather", "scatter_ring_allgather", "in_order_binary",
    "rabenseifner", "gather_bcast", "ring", "recursive_doubling", "recursive_halving", "bruck",
    "neighbor_exchange", "two_proc", "sparbit", "reduce_bcast", "basic_linear",
    "segmented_ring", "allgather_reduce",
)
# distinct colours, native always black: Okabe-Ito first (colour-blind safe), then more
_COLOURS = (
    "#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#F0E442",
    "#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#7f7f7f", "#17becf", "#bcbd22",
    "#7570b3", "#e7298a", "#66a61e", "#a6761d", "#393b79", "#637939", "#843c39", "#7b4173",
    "#3182bd", "#e6550d", "#636363", "#9c9ede", "#cedb9c", "#e7ba52", "#ad494a",
)
NATIVE_COLOUR = "#000000"
_STYLES = ("-", "--", ":", "-.")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


class PlotError(ColltuneError, RuntimeError):
    """The selection cannot make the figure asked for; the message says why."""


# ---------------------------------------------------------------------------- palette

def algorithm_order(mpi_spec: str | None = None, use_registry: bool = True) -> list[str]:
    """Algorithm names in registry order (all collectives), falling back to a built-in
    copy of that order when no MPI build is at hand."""
    names: list[str] = []
    if use_registry:
        try:  # an existing build only: choosing colours never compiles anything

            mpi = mpi_mod.find(mpi_spec, auto_install=False)
            bdir = build_dir(mpi)
            if (bdir / "colltune-verify").exists():
                for a in registry.algorithms(Build(mpi, bdir)):
                    if a.name not in names:
                        names.append(a.name)
        except Exception:  # no MPI, no build: the built-in order will do
            names = []
    for n in FALLBACK_ORDER:
        if n not in names:
            names.append(n)
    return names


class Palette:
    """One colour per algorithm name, by position in `order` (the registry's); names
    not in it (library algorithms such as `ompi:binomial`) get a colour derived from
    the name's hash, so that every figure agrees whatever else it shows."""

    def __init__(self, order=FALLBACK_ORDER):
        self.order = list(dict.fromkeys(order))
        self.always: set[str] = set()  # labels every line figure draws (the recommended)
        self._map = {}
        i = 0
        for name in self.order:
            if name == "native":
                self._map[name] = NATIVE_COLOUR
                continue
            self._map[name] = _COLOURS[i] if i < len(_COLOURS) else self._hashed(name)
            i += 1

    @staticmethod
    def _hashed(name: str) -> str:
        import colorsys

        h = int(hashlib.sha1(name.encode()).hexdigest()[:8], 16)
        r, g, b = colorsys.hsv_to_rgb((h % 360) / 360, 0.65, 0.55 + (h >> 9) % 30 / 100)
        return "#%02x%02x%02x" % (int(r * 255), int(g * 255), int(b * 255))

    def __call__(self, name: str) -> str:
        base = str(name) if str(name) in self._map else _base(name)
        if base not in self._map:
            self._map[base] = self._hashed(base)
        return self._map[base]

    def rank(self, name: str) -> int:
        base = str(name) if str(name) in self._map else _base(name)
        return self.order.index(base) if base in self.order else len(self.order)


def _base(label: str) -> str:
    """The algorithm of a series label: 'chain:fanout=2' -> 'chain',
    'chain (segsize 8 KiB, fanout 4)' -> 'chain'; library specs keep their prefix:
    'ompi:binomial (unsegmented)' -> 'ompi:binomial'."""
    return algorithm_of(str(label).split(" (", 1)[0])


# ---------------------------------------------------------------------------- data

def _band_text(df: pd.DataFrame, by: list[str], band: str) -> str:
    if band == "none":
        return ""
    reps = df.groupby(by).size()
    if reps.max() > 1:
        what = "min–max" if band == "minmax" else "25–75 %"
        return f"line: median of {int(reps.median())} repetitions; band: {what} over them"
    if {"rep_min_us", "rep_max_us"} <= set(df.columns):
        return "band: min–max over the run's repetitions"
    return ""


def one_collective(df: pd.DataFrame) -> str:
    colls = sorted(df["collective"].dropna().unique())
    if len(colls) != 1:
        raise PlotError(f"the selection holds {len(colls)} collectives "
                        f"({', '.join(colls) or 'none'}): choose one with --coll")
    return colls[0]


def pick(df: pd.DataFrame, col: str, value=None, what: str | None = None,
         prefer: str = "first") -> tuple[pd.DataFrame, object]:
    """Rows with one value of `col`: the given value, else a default (first / max / min)."""
    if col not in df.columns or df[col].isna().all():
        return df, None
    vals = sorted(df[col].dropna().unique())
    if value is None:
        value = {"first": vals[0], "max": max(vals), "min": min(vals)}[prefer]
        if col == "mapping":
            value = df[col].mode().iloc[0]
    sel = df[df[col].astype(str) == str(value)] if col == "mapping" else df[df[col] == value]
    if sel.empty:
        shown = ", ".join(fmt_size(int(v)) if col == "size" else str(v) for v in vals)
        raise PlotError(f"no measurements at {what or col} {value}; available: {shown}")
    return sel, value


def _mapping_note(df: pd.DataFrame, mapping) -> str:
    if mapping is None or "mapping" not in df.columns:
        return ""
    return f", mapping {mapping}"


# ---------------------------------------------------------------------------- axes

def _spans_decades(values, factor: float = 30.0) -> bool:
    v = numpy.asarray([x for x in values if x is not None and numpy.isfinite(x) and x > 0])
    return len(v) > 1 and v.max() / v.min() >= factor


def size_axis(ax, sizes, axis: str = "x") -> None:
    """Log2 axis with ticks as 1, 2, ..., 1K, 1M."""
    sizes = [s for s in sizes if s > 0]
    set_scale = ax.set_xscale if axis == "x" else ax.set_yscale
    target = ax.xaxis if axis == "x" else ax.yaxis
    if not sizes:
        return
    set_scale("log", base=2)
    ticks = sorted({int(s) for s in sizes})  # the measured sizes, thinned when many
    step = max(1, math.ceil(len(ticks) / 12))
    ticks = ticks[::step] + ([ticks[-1]] if (len(ticks) - 1) % step else [])
    target.set_major_locator(ticker.FixedLocator(ticks))
    target.set_major_formatter(ticker.FuncFormatter(lambda v, _: fmt_size(int(round(v)))))
    target.set_minor_locator(ticker.NullLocator())


def latency_axis(ax, values, axis: str = "y", label: str = "latency (µs)") -> None:
    set_scale = ax.set_yscale if axis == "y" else ax.set_xscale
    target = ax.yaxis if axis == "y" else ax.xaxis
    if _spans_decades(values):
        set_scale("log")
        _log_labels(target, values)
    (ax.set_ylabel if axis == "y" else ax.set_xlabel)(label)


def _log_labels(target, values) -> None:
    """Plain numbers on a log axis (0.5, 20, 1000), minor ticks labelled only when the
    axis spans less than two decades."""
    v = numpy.asarray([x for x in values if x is not None and numpy.isfinite(x) and x > 0])
    target.set_major_formatter(ticker.FuncFormatter(lambda x, _: _plain(x)))
    span = v.max() / v.min() if len(v) else 1.0
    # minor ticks labelled at 2 and 5 (and 3 within a decade or two): 0.2, 0.5, 2, 5, 20 ...
    digits = {2, 3, 5} if span < 100 else {2, 5} if span < 1e4 else {5} if span < 1e6 \
        else set()

    def minor(x, _):
        if x <= 0:
            return ""
        lead = round(x / 10 ** math.floor(math.log10(x) + 1e-9))
        return _plain(x) if lead in digits else ""

    target.set_minor_formatter(ticker.FuncFormatter(minor) if digits
                               else ticker.NullFormatter())


def _plain(x: float) -> str:
    """0.1, 0.25, 2, 1000: no powers of ten on a latency axis."""
    return f"{x:.6g}" if x >= 1e-4 else f"{x:.1e}"


def np_axis(ax, nps, axis: str = "x") -> None:
    nps = sorted({int(n) for n in nps})
    target = ax.xaxis if axis == "x" else ax.yaxis
    pow2 = all(n & (n - 1) == 0 for n in nps)
    if len(nps) > 2 and pow2 and nps[-1] / nps[0] >= 16:
        (ax.set_xscale if axis == "x" else ax.set_yscale)("log", base=2)
        target.set_major_locator(ticker.FixedLocator(nps))
        target.set_minor_locator(ticker.NullLocator())
    elif len(nps) <= 16:
        target.set_major_locator(ticker.FixedLocator(nps))
    else:
        target.set_major_locator(ticker.MaxNLocator(integer=True, nbins=12))
    target.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{int(round(v))}"))
    (ax.set_xlabel if axis == "x" else ax.set_ylabel)("processes")


def _new_figure(w: float = 8.0, h: float = 5.0) -> Figure:
    fig = _mfigure.Figure(figsize=(w, h), dpi=100, layout="constrained")
    return fig


def _width(nseries: int) -> float:
    """One width for every line figure: at most MAX_SERIES legend entries on the right."""
    return 7.6


BAND_SERIES = 4  # bands (spread over repetitions) only on figures of this many lines


def _band_for(band: str, nseries: int) -> str:
    return band if nseries <= BAND_SERIES else "none"


def _chosen(stats: pd.DataFrame, x: str, palette: Palette, max_series: int | None,
            baseline: str = "native") -> tuple[pd.DataFrame, list[str], list[str]]:
    """The rows of the series a figure draws (series.select_series), their labels in
    palette order (the baseline first) and the labels left out."""
    keep, omitted = select_series(stats, x, baseline, max_series, must=palette.always)
    keep = sorted(keep, key=lambda lab: (lab != baseline, palette.rank(lab), lab))
    return stats[stats["label"].astype(str).isin(keep)], keep, omitted


def _lines(ax, stats: pd.DataFrame, x: str, palette: Palette, band: str,
           labels: list[str] | None = None, baseline: str = "native") -> bool:
    """One line (and band) per series, the baseline on top; oversubscribed points drawn
    as hollow, larger markers. Returns whether there were any."""
    labels = labels or sorted(stats["label"].unique(), key=lambda x: (palette.rank(x), x))
    styles = series_styles(list(labels), baseline)
    alpha = 0.12 if len(styles) <= 3 else 0.07
    any_over = False
    for lab, st in styles.items():
        s = stats[stats["label"] == lab].sort_values(x)
        ax.plot(s[x], s["center"], label=lab, **st)
        if band != "none" and s["lo"].notna().any():
            ax.fill_between(s[x], s["lo"], s["hi"], color=st["color"], alpha=alpha,
                            linewidth=0, zorder=st["zorder"] - 1)
        over = s[s["over"].astype(bool)] if "over" in s.columns else s.iloc[0:0]
        if len(over):
            any_over = True
            ax.plot(over[x], over["center"], linestyle="none", marker=st["marker"],
                    markersize=9, markerfacecolor="white", markeredgecolor=st["color"],
                    markeredgewidth=1.6, zorder=st["zorder"] + 1)
    return any_over


OVER_LABEL = "hollow marker: oversubscribed (cores shared; no conclusion)"


def _legend(ax, n: int, over: bool = False, omitted: list[str] | None = None) -> None:
    """On the right, outside the axes (never over a line); with a
    hollow marker entry when some points are oversubscribed. `omitted`: the series left
    out, kept on the figure (`fig.colltune_omitted`) for the report to name."""
    handles, labels = ax.get_legend_handles_labels()
    if over:
        handles.append(_mlines.Line2D([], [], linestyle="none", marker="o", markersize=8,
                                      markerfacecolor="white", markeredgecolor="0.3"))
        labels.append(OVER_LABEL)
    ax.figure.legend(handles, labels, fontsize="small", loc="outside right upper")
    ax.title.set_fontsize("medium")
    ax.figure.colltune_omitted = list(omitted or [])


# ---------------------------------------------------------------------------- figures

def fig_vs_processes(df: pd.DataFrame, palette: Palette, size: int | None = None,
                     mapping=None, band: str = "minmax",
                     max_series: int | None = MAX_SERIES) -> Figure:
    coll = one_collective(df)
    d = prepare(df)
    d, mapping = pick(d, "mapping", mapping)
    d, size = pick(d, "size", size, "size", prefer="max")
    if d["np"].nunique() < 2:
        raise PlotError(f"the selection has one process count ({int(d['np'].iloc[0])}): a "
                        "figure against processes needs two or more; --kind vs-size shows it")
    stats, keep, omitted = _chosen(point_stats(d, ["label", "np"], band), "np", palette,
                                   max_series)
    fig = _new_figure(_width(len(keep)), 4.3)
    ax = fig.add_subplot()
    band = _band_for(band, len(keep))
    over = _lines(ax, stats, "np", palette, band, keep)
    np_axis(ax, stats["np"])
    latency_axis(ax, pd.concat([stats["center"], stats["lo"], stats["hi"]]))
    ax.set_title(f"{coll}: latency vs processes, size {fmt_size(int(size))}"
                 f"{_mapping_note(d, mapping)}")
    _caption(fig, _band_text(d, ["label", "np"], band))
    ax.grid(True, which="major", alpha=0.3)
    _legend(ax, len(keep), over, omitted)
    return fig


def fig_vs_size(df: pd.DataFrame, palette: Palette, np_: int | None = None, mapping=None,
                band: str = "minmax", max_series: int | None = MAX_SERIES) -> Figure:
    coll = one_collective(df)
    d = prepare(df)
    d, mapping = pick(d, "mapping", mapping)
    d, np_ = pick(d, "np", np_, "processes", prefer="max")
    d = d[d["size"] > 0]
    if d.empty:
        raise PlotError("no sizes above 0 bytes to draw on a log axis")
    stats, keep, omitted = _chosen(point_stats(d, ["label", "size"], band), "size", palette,
                                   max_series)
    fig = _new_figure(_width(len(keep)), 4.3)
    ax = fig.add_subplot()
    band = _band_for(band, len(keep))
    over = _lines(ax, stats, "size", palette, band, keep)
    size_axis(ax, stats["size"])
    ax.set_xlabel("size (bytes" + (" per process)" if per_process(coll) else ")"))
    latency_axis(ax, pd.concat([stats["center"], stats["lo"], stats["hi"]]))
    ax.set_title(f"{coll}: latency vs size, {int(np_)} processes{_mapping_note(d, mapping)}"
                 + (" (oversubscribed)" if over else ""))
    _caption(fig, _band_text(d, ["label", "size"], band))
    ax.grid(True, which="major", alpha=0.3)
    _legend(ax, len(keep), over, omitted)
    return fig


def fig_mapping(df: pd.DataFrame, palette: Palette, size: int | None = None,
                band: str = "minmax", mappings: list | None = None) -> Figure:
    """Small multiples: one panel per algorithm, latency vs processes at one size, one
    line per mapping (line style and marker tell mappings apart)."""
    coll = one_collective(df)
    d = prepare(df)
    if "mapping" not in d.columns or d["mapping"].nunique() < 2:
        raise PlotError("the selection has fewer than two mappings to compare")
    if mappings:
        d = d[d["mapping"].astype(str).isin([str(m) for m in mappings])]
    d, size = pick(d, "size", size, "size", prefer="max")
    maps = sorted(d["mapping"].astype(str).unique())
    labels = sorted(d["label"].unique(), key=lambda x: (palette.rank(x), x))
    ncol = min(4, len(labels))
    nrow = math.ceil(len(labels) / ncol)
    fig = _mfigure.Figure(figsize=(3.2 * ncol + 0.6, 2.6 * nrow + 0.9), dpi=100, layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False, sharex=True)
    stats = point_stats(d.assign(mapping=d["mapping"].astype(str)),
                        ["label", "mapping", "np"], band)
    decades = _spans_decades(stats["center"])
    for i, lab in enumerate(labels):
        ax = axes[i // ncol][i % ncol]
        colour = palette(lab)
        for j, m in enumerate(maps):
            s = stats[(stats["label"] == lab) & (stats["mapping"] == m)].sort_values("np")
            if s.empty:
                continue
            ax.plot(s["np"], s["center"], color=colour, linestyle=_STYLES[j % 4],
                    marker=_MARKERS[j % len(_MARKERS)], markersize=3.5, label=m)
            if band != "none" and s["lo"].notna().any():
                ax.fill_between(s["np"], s["lo"], s["hi"], color=colour, alpha=0.15,
                                linewidth=0)
        ax.set_title(lab, fontsize="medium", color=colour)
        if decades:
            ax.set_yscale("log")
            _log_labels(ax.yaxis, stats["center"])
        ax.grid(True, alpha=0.3)
        np_axis(ax, stats["np"])
        if i % ncol == 0:
            ax.set_ylabel("latency (µs)")
        else:
            ax.set_ylabel("")
        if i // ncol != nrow - 1 and (i + ncol) < len(labels):
            ax.set_xlabel("")
    for k in range(len(labels), nrow * ncol):
        axes[k // ncol][k % ncol].set_visible(False)
    handles = [_mlines.Line2D([], [], color="0.3", linestyle=_STYLES[j % 4],
                      marker=_MARKERS[j % len(_MARKERS)], label=m) for j, m in enumerate(maps)]
    fig.legend(handles=handles, title="mapping", loc="outside lower center",
               ncols=len(maps), fontsize="small")
    fig.suptitle(f"{coll}: mapping {' vs '.join(maps)}, latency vs processes, size "
                 f"{fmt_size(int(size))}")
    return fig


def fig_speedup(df: pd.DataFrame, palette: Palette, np_: int | None = None, mapping=None,
                baseline: str = "native", band: str = "minmax",
                max_series: int | None = MAX_SERIES) -> Figure:
    coll = one_collective(df)
    d = prepare(df)
    d, mapping = pick(d, "mapping", mapping)
    if np_ is None:
        np_ = honest_np(d)
    d, np_ = pick(d, "np", np_, "processes", prefer="max")
    d = d[d["size"] > 0]
    stats, keep, omitted = _chosen(point_stats(d, ["label", "size"], band), "size", palette,
                                   max_series, baseline)
    over_np = bool(stats["over"].any())
    base = stats[stats["label"] == baseline].set_index("size")["center"]
    if base.empty:
        raise PlotError(f"no '{baseline}' measurements to compare with at {int(np_)} processes")
    others = stats[stats["label"] != baseline].copy()
    others["base"] = others["size"].map(base)
    others = others.dropna(subset=["base"])
    if others.empty:
        raise PlotError(f"no algorithm measured next to '{baseline}'")
    # the one ratio (evidence.ratio_to_baseline): time / the baseline's time
    others["center"], others["lo"], others["hi"] = (
        [ratio_to_baseline(t, b) for t, b in zip(others[c], others["base"])]
        for c in ("center", "lo", "hi"))
    fig = _new_figure(_width(len(keep)), 4.3)
    ax = fig.add_subplot()
    band = _band_for(band, len(keep))
    ax.axhline(1.0, color=NATIVE_COLOUR, linestyle="-", linewidth=2.6, zorder=10,
               label=f"{baseline} (= 1)")
    _lines(ax, others, "size", palette, band, [k for k in keep if k != baseline], baseline)
    size_axis(ax, others["size"])
    ax.set_xlabel("size (bytes" + (" per process)" if per_process(coll) else ")"))
    vals = pd.concat([others["center"], others["lo"], others["hi"]])
    if _spans_decades(vals, 8):
        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:.3g}"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    ax.set_ylabel(f"time / {baseline}'s time (below 1: faster)")
    ax.set_title(f"{coll}: time / {baseline}'s time, {int(np_)} processes"
                 f"{_mapping_note(d, mapping)}"
                 + (" — OVERSUBSCRIBED, no conclusion" if over_np else ""))
    _caption(fig, "below 1: faster than " + baseline + " as measured (the summary says which "
                  "differences exceed the noise)"
             + "; ".join([""] + [_band_text(d, ["label", "size"], band)] * (band != "none")))
    ax.grid(True, alpha=0.3)
    _legend(ax, len(keep), omitted=omitted)
    return fig


def _map_figure(nsizes: int, nnps: int, nlegend: int) -> tuple[Figure, float]:
    """A map's figure and its height: tall enough for its cells, and for the legend
    beside it (in columns past 12 in.), so that the legend never reaches the title."""
    w = max(6.0, min(14.0, 0.45 * nsizes + 3))
    h = max(3.5, min(12.0, 0.3 * nnps + 2.2), min(12.0, 0.24 * nlegend + 1.4))
    return _mfigure.Figure(figsize=(w, h), dpi=100, layout="constrained"), h


def _legend_cols(h: float, n: int) -> int:
    """Columns of a legend of n entries that fit a figure h inches tall."""
    return max(1, -(-n // max(1, int((h - 1.4) / 0.24))))


def fig_best_map(df: pd.DataFrame, palette: Palette, mapping=None,
                 baseline: str = "native") -> Figure:
    """The algorithm to use at every (processes, size), by evidence (best_table):
    cells of another algorithm than the baseline say by how much; a baseline cell
    says why it was kept (tie, too few repetitions); oversubscribed cells are grey and
    hatched, with no conclusion."""
    coll = one_collective(df)
    d = prepare(df)
    d, mapping = pick(d, "mapping", mapping)
    tab = best_table(d.drop(columns=["mapping"], errors="ignore"), baseline)
    if tab.empty:
        raise PlotError("no measurements to rank")
    sizes = sorted(tab["size"].unique())
    nps = sorted(tab["np"].unique())
    img = numpy.ones((len(nps), len(sizes), 3))
    from matplotlib.colors import to_rgb

    present, over_cells = [], []
    for r in tab.itertuples(index=False):
        if r.best is None or (isinstance(r.best, float) and math.isnan(r.best)):
            img[nps.index(r.np), sizes.index(r.size)] = to_rgb("#dddddd")
            over_cells.append((sizes.index(r.size), nps.index(r.np)))
            continue
        img[nps.index(r.np), sizes.index(r.size)] = to_rgb(palette(r.best))
        if r.best not in present:
            present.append(r.best)
    fig, h = _map_figure(len(sizes), len(nps), len(present) + bool(over_cells))
    ax = fig.add_subplot()
    ax.imshow(img, aspect="auto", origin="lower", interpolation="nearest")
    for x, y in over_cells:
        ax.add_patch(_mpatches.Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, hatch="//",
                                         edgecolor="0.55", linewidth=0))
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels([fmt_size(int(s)) for s in sizes], rotation=45 if len(sizes) > 10 else 0,
                       fontsize="small")
    ax.set_yticks(range(len(nps)))
    ax.set_yticklabels([str(int(n)) for n in nps], fontsize="small")
    ax.set_xlabel("size (bytes" + (" per process)" if per_process(coll) else ")"))
    ax.set_ylabel("processes")
    if len(sizes) * len(nps) <= 160:
        for r in tab.itertuples(index=False):
            if r.level == "oversubscribed":
                text, colour = "oversub.", "0.3"
            else:
                if r.best == baseline:
                    text = {"within noise": "tie", "insufficient": "few reps",
                            "unstable: measure again": "unstable"}.get(r.level, "")
                else:
                    # the ratio of the medians: quick's and the summary's number
                    text = fmt_ratio(r.median_ratio)
                lum = sum(c * wgt for c, wgt in zip(to_rgb(palette(r.best)),
                                                    (0.299, 0.587, 0.114)))
                colour = "white" if lum < 0.5 else "black"
            if text:
                ax.text(sizes.index(r.size), nps.index(r.np), text, ha="center",
                        va="center", fontsize=6.5, color=colour)
    present.sort(key=lambda x: (palette.rank(x), x))
    handles = [_mpatches.Patch(color=palette(p), label=p) for p in present]
    if over_cells:
        handles.append(_mpatches.Patch(facecolor="#dddddd", edgecolor="0.55", hatch="//",
                                       label="oversubscribed"))
    fig.legend(handles=handles, fontsize="small", loc="outside right upper", title="use",
               ncols=_legend_cols(h, len(handles)))
    ax.set_title(f"{coll}: algorithm to use{_mapping_note(d, mapping)}")
    _caption(fig, f"{baseline} unless another is faster beyond the noise (×: its time / "
                  f"{baseline}'s time, "
                  f"significant); tie: within noise; few reps: too few repetitions to tell")
    return fig


def fig_decision_map(points: pd.DataFrame, palette: Palette, target: str = "colltune",
                     mapping=None) -> Figure:
    """The rules of `colltune tune` at every measured (processes, size) of one
    collective: colour = the algorithm the rules choose there, text = its time /
    native's (the one ratio: ×0.80 = 20 % faster than the library's default; = where the
    choice is native), or its regret where the study has no native. `points`: tune's
    in-sample evaluation (collective, np, size, chosen, vs_native, regret[, mapping])."""
    if points.empty:
        raise PlotError("no tuned points to draw")
    coll = one_collective(points)
    d = points
    if "mapping" in d.columns:
        d, mapping = pick(d, "mapping", mapping)
    sizes = sorted(d["size"].unique())
    nps = sorted(d["np"].unique())
    img = numpy.ones((len(nps), len(sizes), 3))
    from matplotlib.colors import to_rgb

    present = []
    for r in d.itertuples(index=False):
        if r.chosen is None:
            continue
        img[nps.index(r.np), sizes.index(r.size)] = to_rgb(palette(r.chosen))
        if r.chosen not in present:
            present.append(r.chosen)
    fig, h = _map_figure(len(sizes), len(nps), len(present))
    ax = fig.add_subplot()
    ax.imshow(img, aspect="auto", origin="lower", interpolation="nearest")
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels([fmt_size(int(x)) for x in sizes], rotation=45 if len(sizes) > 10 else 0,
                       fontsize="small")
    ax.set_yticks(range(len(nps)))
    ax.set_yticklabels([str(int(n)) for n in nps], fontsize="small")
    ax.set_xlabel("size (bytes" + (" per process)" if per_process(coll) else ")"))
    ax.set_ylabel("processes")
    has_gain = d["vs_native"].notna().any()
    if len(sizes) * len(nps) <= 160:
        for r in d.itertuples(index=False):
            if r.chosen is None:
                continue
            v = r.vs_native if has_gain else r.regret
            if v is None or not numpy.isfinite(v):
                continue
            text = "=" if has_gain and r.chosen == "native" else fmt_ratio(v)
            lum = sum(c * wgt for c, wgt in zip(to_rgb(palette(r.chosen)),
                                                (0.299, 0.587, 0.114)))
            ax.text(sizes.index(r.size), nps.index(r.np), text, ha="center", va="center",
                    fontsize=7, color="white" if lum < 0.5 else "black")
    present.sort(key=lambda x: (palette.rank(x), x))
    fig.legend(handles=[_mpatches.Patch(color=palette(p), label=p) for p in present],
               fontsize="small", loc="outside right upper", title="rules choose",
               ncols=_legend_cols(h, len(present)))
    ax.set_title(f"{coll}: rules for {target}{_mapping_note(d, mapping)}")
    _caption(fig, "colour: the algorithm the rules choose at each measured point; "
             + ("×: its time / native's (median latency of the choice / of native); "
                "=: native kept" if has_gain else
                "×: its regret (choice / fastest measured; no native in the study)"))
    return fig


def fig_surface(df: pd.DataFrame, palette: Palette, algorithm: str | None = None,
                mapping=None) -> Figure:
    """3D points (processes, log2 size, log2 latency) of one algorithm and the plane of
    log2 latency = β0·processes + β1·log2 size fitted to them (seed 000, Figure 10)."""

    coll = one_collective(df)
    d = prepare(df)
    d, mapping = pick(d, "mapping", mapping)
    if algorithm is None:
        counts = d.groupby("label").size()
        algorithm = "native" if "native" in counts.index else counts.idxmax()
    by_label = d[d["label"] == algorithm]
    by_name = d[d["algorithm"] == algorithm]
    # the plain name also selects a series labelled with its parameters, when it is one
    d = by_label if not by_label.empty or by_name["label"].nunique() != 1 else by_name
    if d.empty:
        raise PlotError(f"no measurements of '{algorithm}'")
    d = d[(d["size"] > 0) & (d["median_us"] > 0)]
    if d["np"].nunique() < 2 or d["size"].nunique() < 2:
        raise PlotError("a surface needs two process counts and two sizes at least")
    f, label = resolve_formula(model="seed-log")
    try:
        r = fit_formula(model_frame(d), f, label)
    except FitError as exc:
        raise PlotError(str(exc)) from exc
    b0 = next(c.coef for c in r.coefs if c.term == "processes")
    b1 = next(c.coef for c in r.coefs if c.term == "log2_size")
    fig = _mfigure.Figure(figsize=(8, 6.2), dpi=100, layout="constrained")
    ax = fig.add_subplot(projection="3d")
    colour = palette(algorithm)
    x = d["np"].to_numpy(float)
    y = numpy.log2(d["size"].to_numpy(float))
    z = numpy.log2(d["median_us"].to_numpy(float))
    ax.scatter(x, y, z, color=colour, s=8, depthshade=True, label="measured")
    gx, gy = numpy.meshgrid(numpy.linspace(x.min(), x.max(), 20),
                            numpy.linspace(y.min(), y.max(), 20))
    ax.plot_surface(gx, gy, b0 * gx + b1 * gy, color=colour, alpha=0.25, linewidth=0)
    ax.set_xlabel("processes")
    ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True, nbins=8))
    ax.set_ylabel("log2 size (bytes)")
    ax.set_zlabel("log2 latency (µs)")
    lo, hi = int(math.floor(y.min())), int(math.ceil(y.max()))
    step = max(1, math.ceil((hi - lo + 1) / 6))
    ax.set_yticks(list(range(lo, hi + 1, step)))
    ax.set_yticklabels([fmt_size(2**k) for k in range(lo, hi + 1, step)], fontsize="small")
    ax.view_init(elev=22, azim=-58)
    ax.set_title(f"{coll}/{algorithm}{_mapping_note(d, mapping)}: log2 latency = "
                 f"{b0:.4f}·processes + {b1:.4f}·log2 size  (R² {r.r2:.3f} uncentered, "
                 f"n {r.n})", fontsize="medium")
    return fig


def fig_load_correlation(df: pd.DataFrame, palette: Palette, corr: pd.DataFrame | None = None,
                         np_: int | None = None) -> Figure:
    """The seed's Fig. 2: every launch's probe value (µs per probe iteration, x) against
    each algorithm's latency in that launch (y), one panel per size, one colour per
    algorithm, the marker per load level; the legend gives each algorithm's Pearson r.
    `df`: points with probe_us, load_level, size, np, algorithm (or label), median_us."""
    d = df[df["probe_us"].notna()]
    if d.empty:
        raise PlotError("no points with a probe value (a study with study.load)")
    coll = one_collective(d)
    d, np_ = pick(d, "np", np_, "process count")
    lab = d["label"] if "label" in d.columns else d["algorithm"]
    d = d.assign(_label=lab.astype(str))
    sizes = sorted(d["size"].unique())
    levels = list(d.groupby("load_level")["probe_us"].median().sort_values().index)
    markers = dict(zip(levels, "os^Dvx*P"))
    fig = _mfigure.Figure(figsize=(3.6 * len(sizes) + 1.8, 3.6), dpi=100, layout="constrained")
    axes = fig.subplots(1, len(sizes), squeeze=False)[0]
    for ax, size in zip(axes, sizes):
        g = d[d["size"] == size]
        for label, h in g.groupby("_label", sort=True):
            r = None
            if corr is not None:
                m = corr[(corr["size"] == size) & (corr["algorithm"] == label)]
                r = float(m["pearson"].iloc[0]) if len(m) else None
            first = True
            for lv, k in h.groupby("load_level"):
                ax.scatter(k["probe_us"], k["median_us"], s=18, color=palette(label),
                           marker=markers.get(lv, "o"), alpha=0.8,
                           label=(f"{label} (r={r:.2f})" if r == r and r is not None
                                  else label) if first else None)
                first = False
        ax.set_title(f"{coll} np={np_}, {fmt_size(int(size))}", fontsize="small")
        ax.set_xlabel("probe (µs per iteration)", fontsize="small")
        latency_axis(ax, g["median_us"])
        ax.legend(fontsize="x-small", loc="upper left")
    _caption(fig, "markers: load level " + ", ".join(f"{markers[lv]} {lv}" for lv in levels))
    return fig


def fig_load_best(best: pd.DataFrame, palette: Palette) -> Figure:
    """The best algorithm (with evidence) per size (x) and load level (y, quietest at
    the bottom) of one collective and process count: colour = the algorithm, text =
    its time / native's time (evidence.fmt_ratio)."""
    if best.empty:
        raise PlotError("no best-per-level table")
    coll = one_collective(best)
    sizes = sorted(best["size"].unique())
    levels = list(best.groupby("load_level")["probe_us"].median().sort_values().index)
    from matplotlib.colors import to_rgb

    img = numpy.ones((len(levels), len(sizes), 3))
    fig = _mfigure.Figure(figsize=(max(5.0, 1.4 * len(sizes) + 2.5), 1.0 * len(levels) + 1.8),
                          dpi=100, layout="constrained")
    ax = fig.add_subplot()
    for r in best.itertuples(index=False):
        if r.best is None or r.load_level not in levels:
            continue
        i, j = levels.index(r.load_level), sizes.index(r.size)
        img[i, j] = to_rgb(palette(r.best))
    ax.imshow(img, aspect="auto", origin="lower", interpolation="nearest")
    for r in best.itertuples(index=False):
        if r.best is None or r.load_level not in levels:
            continue
        sp = getattr(r, "median_ratio", getattr(r, "ratio", None))
        txt = r.best + (f"\n{fmt_ratio(sp)}" if sp is not None and sp == sp and sp != 1 else "")
        rgb = to_rgb(palette(r.best))
        dark = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] < 0.5
        ax.text(sizes.index(r.size), levels.index(r.load_level), txt, ha="center",
                va="center", fontsize="x-small", color="white" if dark else "black")
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels([fmt_size(int(x)) for x in sizes], fontsize="small")
    ax.set_yticks(range(len(levels)))
    ax.set_yticklabels(levels, fontsize="small")
    nps = sorted(best["np"].unique())
    ax.set_title(f"{coll}: best algorithm per load level (np {', '.join(map(str, nps))})",
                 fontsize="small")
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel("load level (lowest median probe at the bottom)")
    return fig


def _caption(fig: Figure, text: str) -> None:
    """A small note under the figure, wrapped to the figure's width."""
    if text:
        import textwrap

        width = max(40, int(fig.get_figwidth() * 17))
        fig.supxlabel(textwrap.fill(text, width), fontsize="x-small", color="0.35")


def make_figure(kind: str, df: pd.DataFrame, palette: Palette, *, size=None, np_=None,
                mapping=None, algorithm=None, band="minmax", baseline="native") -> Figure:
    if kind == "vs-processes":
        return fig_vs_processes(df, palette, size, mapping, band)
    if kind == "vs-size":
        return fig_vs_size(df, palette, np_, mapping, band)
    if kind == "mapping":
        return fig_mapping(df, palette, size, band)
    if kind == "speedup":
        return fig_speedup(df, palette, np_, mapping, baseline, band)
    if kind == "best-map":
        return fig_best_map(df, palette, mapping, baseline)
    if kind == "surface":
        return fig_surface(df, palette, algorithm, mapping)
    raise PlotError(f"unknown kind '{kind}'; valid: {', '.join(KINDS)}")


# ---------------------------------------------------------------------------- simulated, heat

def loglog_axes(ax, title: str, xlabel: str) -> None:
    """Log-log axes of the report's simulated figures: base-2 x, a small title, a light grid."""
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel)
    ax.grid(alpha=0.3)


def panels(cols: int, w: float, h: float):
    """A figure of `cols` panels side by side (no pyplot: nothing global to close)."""
    fig = _mfigure.Figure(figsize=(w * cols, h))
    return fig, fig.subplots(1, cols, squeeze=False)


# ---------------------------------------------------------------------------- output

def figure_bytes(fig: Figure, fmt: str = "png", dpi: int = 100) -> bytes:
    buf = BytesIO()
    fig.savefig(buf, format=fmt, dpi=dpi, metadata=_metadata(fmt))
    return buf.getvalue()


def _metadata(fmt: str) -> dict | None:
    # reproducible files: no creation date
    if fmt == "svg":
        return {"Date": None}
    if fmt == "pdf":
        return {"CreationDate": None}
    return None


def save_figure(fig: Figure, path: str | Path, dpi: int = 120) -> Path:
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise PlotError(f"output '{path}': the extension picks the format: "
                        f"{', '.join('.' + f for f in FORMATS)}")
    write_atomic(path, figure_bytes(fig, fmt, dpi))
    return path
