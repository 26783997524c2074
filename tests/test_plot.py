"""colltune plot: every kind of figure from synthetic measurements, PNG/PDF/SVG."""

import sqlite3

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from colltune.analysis import evidence as ev
from colltune.analysis import points
from colltune.output import figures as pl
from colltune.output import series
from colltune.cli.plot import plot as plot_cmd


def synthetic(colls=("bcast", "reduce"), algos=("native", "linear", "binomial", "chain"),
              maps=("core", "socket"), nps=(2, 4, 8), sizes=(1, 64, 4096, 65536, 1 << 20),
              reps=3, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for c in colls:
        for i, a in enumerate(algos):
            for m in maps:
                for p in nps:
                    for s in sizes:
                        for r in range(reps):
                            base = ((1 + 0.3 * i) * (0.5 * np.log2(p) + 0.05 * p)
                                    + s * 1e-4 * (p / 2 if a == "linear" else 1)
                                    * (1.2 if m == "socket" else 1))
                            lat = base * np.exp(rng.normal(0, 0.05))
                            rows.append(dict(collective=c, algorithm=a, mapping=m, np=p, size=s,
                                             params="segsize=8192,fanout=4" if a == "chain"
                                             else "", median_us=lat, rep_min_us=lat * 0.95,
                                             rep_max_us=lat * 1.1, repetition=r))
    return pd.DataFrame(rows)


PALETTE = pl.Palette(pl.FALLBACK_ORDER)
MAGIC = {"png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF", "svg": b"<?xml"}


@pytest.mark.parametrize("kind", pl.KINDS)
def test_every_kind_writes_a_png(kind, tmp_path):
    d = synthetic(colls=("bcast",))
    fig = pl.make_figure(kind, d, PALETTE)
    out = pl.save_figure(fig, tmp_path / f"{kind}.png")
    data = out.read_bytes()
    assert data.startswith(MAGIC["png"]) and len(data) > 10_000
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # atomic, no leftovers


@pytest.mark.parametrize("fmt", ["pdf", "svg"])
def test_vector_formats(fmt, tmp_path):
    fig = pl.make_figure("vs-size", synthetic(colls=("reduce",)), PALETTE)
    data = pl.save_figure(fig, tmp_path / f"f.{fmt}").read_bytes()
    assert data.startswith(MAGIC[fmt])
    if fmt == "svg":
        text = data.decode()
        for label in ("4K", "64K", "1M", "latency (µs)", "native", "binomial"):
            assert label in text


def test_wrong_extension_is_refused(tmp_path):
    fig = pl.make_figure("vs-size", synthetic(colls=("bcast",)), PALETTE)
    with pytest.raises(pl.PlotError, match="extension"):
        pl.save_figure(fig, tmp_path / "f.jpg")


def test_axes_use_size_labels_log_scales_and_bands():
    d = synthetic(colls=("bcast",))
    fig = pl.fig_vs_size(d, PALETTE, np_=8)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"  # data span decades
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["1", "64", "4K", "64K", "1M"]  # ticks at the measured sizes
    assert ax.get_ylabel() == "latency (µs)"
    assert len(ax.collections) == 4  # one band per algorithm (3 repetitions each)
    lines = {l.get_label(): l for l in ax.get_lines()}
    assert lines["native"].get_color() == pl.NATIVE_COLOUR
    fig = pl.fig_vs_processes(d, PALETTE, size=64)
    assert "size 64" in fig.axes[0].get_title()
    # one repetition per point: the band comes from the run's rep_min_us..rep_max_us
    one = d[d["repetition"] == 0]
    stats = points.point_stats(points.prepare(one), ["label", "size"], "minmax")
    assert (stats["lo"] < stats["center"]).all() and (stats["hi"] > stats["center"]).all()
    q = points.point_stats(points.prepare(d), ["label", "size", "np", "mapping"], "quantile")
    assert (q["lo"] <= q["center"]).all() and (q["center"] <= q["hi"]).all()


def test_colours_are_fixed_per_algorithm_across_figures():
    """Maps colour by the palette (one colour per name, the same everywhere); line
    figures by the Okabe-Ito colours in the figure's own order (series.series_styles)."""
    d = synthetic(colls=("bcast",))
    f1 = pl.fig_vs_size(d, PALETTE, np_=4)
    c1 = {l.get_label(): l.get_color() for l in f1.axes[0].get_lines()}
    assert c1["native"] == pl.NATIVE_COLOUR
    assert {c for k, c in c1.items() if k != "native"} <= set(series.OKABE_ITO)
    assert PALETTE("chain:segsize=0") == PALETTE("chain")
    # registry order decides; names of one collective never share a colour
    for group in (pl.FALLBACK_ORDER[:11], ["native", "linear", "chain", "pipeline", "binary",
                                            "binomial", "in_order_binary", "rabenseifner"]):
        cols = [PALETTE(n) for n in group]
        assert len(set(cols)) == len(cols)
    assert PALETTE("ompi:binomial") == pl.Palette(["native", "linear"])("ompi:binomial")


def many_algorithms(nalgo=10, sizes=(8, 1024, 65536, 1 << 20)):
    """native, colltune's `a0`..`a{n}` and Open MPI's namesakes `ompi:a0`..: a0 fastest at
    small sizes, a1 at large ones, the rest slower everywhere."""
    rows = []
    for i in range(nalgo):
        for lib in ("", "ompi:"):
            for s in sizes:
                f = 1.5 + 0.1 * i + (0.05 if lib else 0)
                if i == 0 and s <= 1024 and not lib:
                    f = 0.5
                if i == 1 and s > 1024 and not lib:
                    f = 0.6
                for r in range(3):
                    rows.append(dict(collective="bcast", algorithm=f"{lib}a{i}", np=2, size=s,
                                     params="", median_us=f * (1 + s * 1e-3) * (1 + 0.01 * r),
                                     repetition=r))
    for s in sizes:
        for r in range(3):
            rows.append(dict(collective="bcast", algorithm="native", np=2, size=s, params="",
                             median_us=(1 + s * 1e-3) * (1 + 0.01 * r), repetition=r))
    return pd.DataFrame(rows)


@pytest.mark.parametrize("kind", ["vs-size", "speedup"])
def test_line_figures_draw_the_few_series_that_matter_distinctly(kind):
    d = many_algorithms()
    fig = pl.make_figure(kind, d, PALETTE)
    ax = fig.axes[0]
    lines = [l for l in ax.get_lines() if not l.get_label().startswith("_")]
    labels = [l.get_label() for l in lines]
    assert len(lines) <= series.MAX_SERIES
    # the fastest at some size and their library namesakes; native (on top) in the legend
    names = {l.split(" ")[0] for l in labels}
    assert {"native", "a0", "a1", "ompi:a0", "ompi:a1"} <= names, labels
    assert len(fig.colltune_omitted) == 21 - len(lines)
    assert "a9" in fig.colltune_omitted and "a9" in series.omitted_text(fig.colltune_omitted)
    pairs = [(l.get_color(), l.get_marker()) for l in lines]
    assert len(set(pairs)) == len(pairs), pairs
    native = next(l for l in lines if l.get_label().startswith("native"))
    assert native.get_color() == pl.NATIVE_COLOUR
    assert native.get_zorder() > max(l.get_zorder() for l in lines if l is not native)
    # the legend is the figure's, outside the axes: no overlap with the plot area
    assert ax.get_legend() is None and len(fig.legends) == 1
    assert len(fig.legends[0].get_texts()) == len(lines)
    fig.draw_without_rendering()
    leg = fig.legends[0].get_window_extent()
    box = ax.get_window_extent()
    assert leg.x0 >= box.x1 or leg.y1 <= box.y0, (leg, box)
    # every series on request
    everything = pl.fig_vs_size(d, PALETTE, max_series=None)
    assert len(everything.axes[0].get_lines()) == 21 and not everything.colltune_omitted


def test_series_selection_keeps_namesakes_and_the_baseline():
    stats = pd.DataFrame({"label": ["native", "chain", "ompi:chain", "ring", "x", "y", "z",
                                    "w"] * 2,
                          "size": [8] * 8 + [64] * 8,
                          "center": [2, 1, 3, 4, 5, 6, 7, 8, 2, 3, 4, 1.5, 5, 6, 7, 8]})
    keep, omitted = series.select_series(stats, "size", limit=4)
    assert keep[0] == "native" and set(keep) == {"native", "chain", "ring", "ompi:chain"}
    assert set(omitted) == {"x", "y", "z", "w"}
    assert series.namesake("ompi:chain") == series.namesake("chain:segsize=0") == "chain"


def test_best_table_and_map():
    d = synthetic(colls=("bcast",), maps=("core",))
    tab = points.best_table(d)
    assert len(tab) == 3 * 5
    assert {"best", "best_us", "second", "native_us", "ratio"} <= set(tab.columns)
    row = tab[(tab["np"] == 8) & (tab["size"] == 1 << 20)].iloc[0]
    assert row["best"] != "linear"
    fig = pl.fig_best_map(d, PALETTE)
    legend = fig.legends[0]
    assert {t.get_text() for t in legend.get_texts()} <= {"native", "linear", "binomial", "chain"}


def test_surface_has_the_fitted_plane():
    fig = pl.fig_surface(synthetic(colls=("bcast",)), PALETTE, algorithm="binomial")
    ax = fig.axes[0]
    assert ax.name == "3d"
    assert "log2 latency =" in ax.get_title() and "processes" in ax.get_title()


def test_selections_that_cannot_make_a_figure():
    d = synthetic(colls=("bcast",), maps=("core",))
    with pytest.raises(pl.PlotError, match="two mappings"):
        pl.fig_mapping(d, PALETTE)
    with pytest.raises(pl.PlotError, match="collectives"):
        pl.fig_vs_size(synthetic(), PALETTE)
    with pytest.raises(pl.PlotError, match="available: 1, 64, 4K, 64K, 1M"):
        pl.fig_vs_processes(d, PALETTE, size=3)
    with pytest.raises(pl.PlotError, match="native"):
        pl.fig_speedup(d[d["algorithm"] != "native"], PALETTE)
    with pytest.raises(pl.PlotError, match="two process counts"):
        pl.fig_surface(d[d["np"] == 2], PALETTE)
    with pytest.raises(pl.PlotError, match="one process count .2.*vs-size"):
        pl.fig_vs_processes(d[d["np"] == 2], PALETTE)


def test_plot_command_from_a_database(tmp_path):
    db = tmp_path / "r.db"
    con = sqlite3.connect(db)
    synthetic().to_sql("measurements", con, index=False)
    con.close()
    runner = CliRunner()
    for kind, extra in (("vs-processes", ["--size", "64K"]), ("vs-size", ["--np", "4"]),
                        ("mapping", []), ("speedup", []), ("best-map", ["--mapping", "socket"]),
                        ("surface", ["--surface-algo", "chain"])):
        out = tmp_path / f"{kind}.svg"
        res = runner.invoke(plot_cmd, ["--db", str(db), "--coll", "reduce", "--kind", kind,
                                      "-o", str(out), *extra])
        assert res.exit_code == 0, res.output
        assert out.read_bytes().startswith(b"<?xml") and "wrote" in res.output
    res = runner.invoke(plot_cmd, ["--db", str(db), "--kind", "vs-size", "-o",
                                  str(tmp_path / "x.png")])
    assert res.exit_code == 2 and "--coll" in res.output


def test_log_latency_axis_below_a_microsecond_has_readable_labels():
    """0.1 .. 3 µs: labels such as 0.2 and 0.5, not 10^-1 alone."""
    d = synthetic(colls=("bcast",), maps=("core",), sizes=(8, 64, 512, 4096), nps=(2,))
    d["median_us"] = 0.1 * (d["size"] / 8) ** 0.55 * (1 + 0.1 * (d["algorithm"] == "linear"))
    fig = pl.fig_vs_size(d, PALETTE, np_=2)
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    texts = {t.get_text() for t in ax.get_yticklabels(minor=True) + ax.get_yticklabels()}
    assert {"0.2", "0.5"} <= texts, texts
    assert not any("10^" in t or "$" in t for t in texts)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["8", "64", "512", "4K"]


def test_oversubscribed_points_are_hollow_and_left_out_of_conclusions():
    d = synthetic(colls=("bcast",), maps=("core",), nps=(2, 4, 8), reps=5)
    d["ppn"], d["cores"] = d["np"], 4  # np 8 on 4 cores
    fig = pl.fig_vs_processes(d, PALETTE, size=64)
    ax = fig.axes[0]
    hollow = [l for l in ax.get_lines() if l.get_markerfacecolor() == "white"]
    assert len(hollow) == 4 and all(list(l.get_xdata()) == [8] for l in hollow)
    assert any(pl.OVER_LABEL == t.get_text() for t in fig.legends[0].get_texts())
    # the speedup figure compares at the largest honest process count by default
    assert "4 processes" in pl.fig_speedup(d, PALETTE).axes[0].get_title()
    tab = points.best_table(d)
    over = tab[tab["np"] == 8]
    assert over["oversubscribed"].all() and over["best"].isna().all()
    assert (over["level"] == "oversubscribed").all()
    assert tab[tab["np"] < 8]["best"].notna().all()
    fig = pl.fig_best_map(d, PALETTE)
    assert "oversubscribed" in {t.get_text() for t in fig.legends[0].get_texts()}
    assert "oversub." in {t.get_text() for t in fig.axes[0].texts}


def test_best_map_names_a_winner_only_with_evidence():
    d = synthetic(colls=("bcast",), maps=("core",), reps=5)
    tab = points.best_table(d).set_index(["np", "size"])
    # linear is slow at large sizes, binomial/chain slower everywhere: native kept, and
    # the evidence says whether that is a tie or native's own lead
    assert (tab["best"] == "native").all()
    assert set(tab["level"]) <= {"default", "significant", "within noise"}
    d2 = d.copy()
    fast = (d2["algorithm"] == "chain") & (d2["size"] == 1 << 20)
    d2.loc[fast, "median_us"] /= 3
    tab2 = points.best_table(d2).set_index(["np", "size"])
    assert (tab2.xs(1 << 20, level="size")["best"] == "chain").all()
    r = tab2.loc[(8, 1 << 20), "ratio"]
    assert r < 0.5 and tab2.loc[(8, 1 << 20), "evidence"].startswith(
        f"{ev.fmt_ratio(r)} of native (") and "% faster; 95% CI" in tab2.loc[(8, 1 << 20),
                                                                            "evidence"]


def test_median_repetition_keeps_one_real_run_per_point_and_the_spread():
    """quick's OSU table: per point the OSU columns of the repetition whose median is
    the median (never blank, never a mix of runs), and the spread over repetitions."""
    rows = [dict(collective="bcast", np=2, spec="native", size=8, repetition=i, median_us=m,
                 mean_us=m, rank_min_us=m - 0.1, rank_max_us=m + 0.1, iterations=1000)
            for i, m in enumerate([0.5, 0.3, 0.9, 0.4])]
    rows += [dict(collective="bcast", np=2, spec="linear", size=8, repetition=0, median_us=None,
                  mean_us=None, rank_min_us=None, rank_max_us=None, iterations=1000),
             dict(collective="bcast", np=2, spec="linear", size=8, repetition=1, median_us=2.0,
                  mean_us=2.0, rank_min_us=1.5, rank_max_us=2.5, iterations=1000)]
    out = points.median_repetition(pd.DataFrame(rows), ["collective", "np", "spec", "size"])
    nat = out[out["spec"] == "native"].iloc[0]
    # medians 0.3 0.4 0.5 0.9: the lower middle run is 0.4's, with its own rank columns
    assert nat["repetition"] == 3
    assert (nat["rank_min_us"], nat["rank_max_us"]) == pytest.approx((0.3, 0.5))
    assert (nat["median_us"], nat["rep_min_us"], nat["rep_max_us"]) == pytest.approx(
        (0.45, 0.3, 0.9))
    assert nat["repetitions"] == 4
    lin = out[out["spec"] == "linear"].iloc[0]
    assert (lin["repetitions"], lin["mean_us"]) == (1, 2.0)
    assert list(out["spec"]) == ["native", "linear"]
