"""`colltune load`: background traffic (run, effect, levels) and the analysis of a study
with load levels (analyse); docs/workload.md."""

from __future__ import annotations

import json

import click

from colltune.base.units import fmt_size
from colltune.workflows import load as wf
from ._common import (MPI_HELP, Command, build_or_fail, check_nps, command, db_option, err,
                      np_option, out, size_option)


class Group(Command, click.Group):
    """A group whose errors take the one error path, as every command's."""


@click.group(name="load", cls=Group)
def load() -> None:
    """Background load: the traffic generator, what it does to a measurement, and the
    analysis of studies with load levels (docs/workload.md)."""


@command(name="run")
@click.option("--level", help="A built-in level (light, medium, heavy) instead of the options.")
@click.option("--pattern", default="pairs", show_default=True,
              type=click.Choice(["pairs", "alltoall", "hot"]),
              help="pairs: random pairs each round; alltoall: bursts to every other process; "
                   "hot: everyone sends to rank 0.")
@np_option("np_", many=False, default="2", show_default=True,
           one="one generator runs; start one per count",
           help="Generator processes (at least 2).")
@size_option("size", many=False, default="64K", show_default=True,
             one="the generator sends one message size", help="Bytes per message.")
@click.option("--window", default=4, show_default=True, type=click.IntRange(1, 1024),
              help="Messages per partner and round, all in flight at once (intensity).")
@click.option("--duty", default=1.0, show_default=True, type=float,
              help="Fraction of each period spent sending (0 < duty <= 1).")
@click.option("--period-ms", default=50.0, show_default=True, type=float,
              help="Length of a duty-cycle period in milliseconds.")
@click.option("--duration", default=10.0, show_default=True, type=click.FloatRange(min=0),
              help="Seconds to run; 0: until Ctrl-C or SIGTERM.")
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
def run_cmd(level, pattern, np_, size, window, duty, period_ms, duration, mpi_spec) -> None:
    """Run the load generator in the foreground (it is what a study's load levels start
    in the background); prints what it sent."""
    lv = wf.level(level, pattern=pattern, np=np_, window=window, duty=duty,
                  period_ms=period_ms, size=size)
    check_nps([lv.np], oversubscribe=True, timing=False)
    b = build_or_fail(mpi_spec)
    stats = wf.run(b, lv, duration,
                   progress=lambda m: err.print(m, highlight=False, markup=False))
    out.print(f"sent {stats['bytes'] / 1e6:.1f} MB in {stats['messages']} messages over "
              f"{stats['elapsed_s']:.2f} s ({stats['rate_MBps']:.1f} MB/s), busy "
              f"{stats['busy_fraction']:.0%} of the time", highlight=False)


@command()
@click.option("--levels", default="none,light,medium,heavy", show_default=True,
              help="Built-in levels, the first is the reference of the ratios.")
@np_option("np_", many=False, default="2", show_default=True,
           one="the table compares the levels at one count; run it once per count",
           help="Processes of the measured Bcast (the ping-pong uses 2).")
@size_option("sizes", default="8,64K,1M", show_default=True, help="Message sizes.")
@click.option("--algo", default="native", show_default=True, help="The Bcast algorithm measured.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="text table or JSON records.")
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
def effect(levels, np_, sizes, algo, fmt, mpi_spec) -> None:
    """What the generator does to a measurement on this machine: the probe, a ping-pong
    and a Bcast under each level, with the generator's own send rate."""
    names = [x.strip() for x in levels.split(",") if x.strip()]
    wf.check_levels(names)
    size_list = sizes  # parsed by --size
    check_nps([np_])
    b = build_or_fail(mpi_spec)
    df = wf.effect(b, names, np_, size_list, algo)
    if fmt == "json":
        click.echo(df.to_json(orient="records", indent=2))
        return
    out.print(f"{'level':<8} {'measurement':<22} {'size':>6} {'latency µs':>11} {'ratio':>6} "
              f"{'probe µs':>9} {'gen MB/s':>9} {'gen busy':>8}", highlight=False)
    for r in df.itertuples():
        gen = (f"{r.gen_MBps:9.0f} {r.gen_busy:8.0%}" if r.gen_MBps == r.gen_MBps
               and r.gen_MBps is not None else f"{'-':>9} {'-':>8}")
        out.print(f"{r.level:<8} {r.what:<22} {fmt_size(r.size):>6} {r.latency_us:11.2f} "
                  f"{r.ratio:6.2f} {r.probe_us:9.2f} {gen}", highlight=False)


@command()
def levels() -> None:
    """The built-in load levels."""
    for lv in wf.LEVELS.values():
        out.print(f"{lv.name:<8} {lv.describe()}", highlight=False)


@command()
@click.option("--study", required=True, help="A study with load levels (study.load).")
@click.option("--round", "round_", type=int, help="Its round (default: the latest).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="text, or JSON (correlations, best per level, changes).")
@click.option("--include-simulated", is_flag=True,
              help="Analyse simulated points (SimGrid, --mpi smpi): a simulated load study "
                   "(docs/workload.md); by default they are left out.")
@db_option()
def analyse(study, round_, fmt, include_simulated, db_path) -> None:
    """The seed's analysis of a study with load levels: correlation of the probe with
    every algorithm's latency (Pearson, Spearman), the best algorithm per load level
    with evidence, and how often it changes with the load."""
    frame, rnd = wf.analyse(db_path, study, round_, include_simulated)
    if fmt == "json":
        click.echo(json.dumps(wf.analysis_json(frame, study, rnd), indent=2))
        return
    out.print(f"study '{study}' round {rnd}", highlight=False)
    out.print(wf.summary_text(frame), highlight=False, markup=False)


for _c in (run_cmd, effect, levels, analyse):
    load.add_command(_c)
