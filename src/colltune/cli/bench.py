"""`colltune bench`: latency of algorithms, interleaved in one launch per process count."""

from __future__ import annotations

import json
import sys

import click

from colltune.base.collectives import COLLECTIVES
from colltune.base.files import check_writable, save_fallback
from colltune.mpi import libraries as mpi_mod
from colltune.output.terminal import (VERDICT_LEGEND, BenchProgress, emit_records,  # noqa: F401
                                      osu_table)
from colltune.results import db as db_mod
from colltune.workflows import bench as bench_flow
from ._common import (MPI_HELP, PLATFORM_HELP, check_nps, command, db_path_or_default, err,
                      fail, np_option, oversubscribe_options, progress, size_option)


def _save_elsewhere(records: list[dict], why: str) -> None:
    """The records could not go where asked: keep them (JSON) and say where."""
    try:
        where = save_fallback("bench-records.json", json.dumps(records, indent=2) + "\n")
    except OSError as exc:
        err.print(f"[bold red]error:[/] {why}; the records could not be saved anywhere "
                  f"({exc})", highlight=False)
        return
    err.print(f"[bold red]error:[/] {why}; the {len(records)} records are saved in {where}",
              highlight=False)


@command()
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
@click.option("--platform", "platform_spec", help=PLATFORM_HELP)
@click.option("--coll", required=True, type=click.Choice(COLLECTIVES),
              help="Collective to benchmark.")
@click.option("--algo", "algos", default="native", show_default=True,
              help="Algorithms, comma-separated, with parameters: native,binomial,chain:fanout=2; "
                   "the MPI library's own: ompi:NAME[:k=v] (Open MPI coll/tuned), mpich:NAME; "
                   "'all' = ours + native + the library's, 'ours', 'ompi:all', 'mpich:all'.")
@np_option("nps", default="2", show_default=True, help="Process counts: 2,4 or 2:8.")
@size_option("sizes", default="1:1M", show_default=True,
             help="Bytes: list (8,64K,1M) or power-of-two range (1:1M).")
@click.option("--iterations", type=int, help="Timed calls per point (default 1000, 100 > 8K; "
              "simulated: 1, the times are deterministic).")
@click.option("--warmup", type=int, help="Untimed calls first (default iterations/10; "
              "simulated: 0, each algorithm's communicators are made before its first "
              "point; a warm-up asked for runs before that point only).")
@click.option("--reps", type=click.IntRange(min=1),
              help="Repetitions, interleaved (default 3; simulated: 1, the times are "
                   "deterministic).")
@click.option("--root", default=0, show_default=True)
@click.option("--dtype", default="char", show_default=True,
              type=click.Choice(["char", "int", "float", "double"]))
@click.option("--op", default="sum", show_default=True,
              type=click.Choice(["sum", "max", "min", "prod"]))
@click.option("--timing", default="auto", show_default=True,
              type=click.Choice(["auto", "osu", "window"]),
              help="osu: each call timed, barrier between calls; window: synchronised clocks, "
                   "one call per start window, max over ranks (ReproMPI); auto: window when "
                   "every process has its own core, else osu.")
@click.option("--sleep", "sleep_us", default=0.0, show_default=True,
              type=click.FloatRange(min=0), help="Microseconds to sleep between calls (untimed).")
@click.option("--time-budget", "time_budget", type=click.FloatRange(min=0, min_open=True),
              help="Seconds per (size, algorithm), all repetitions; replaces --iterations.")
@click.option("--validate", is_flag=True,
              help="Check each point against the MPI library's collective; exit 1 on a difference.")
@click.option("--raw", is_flag=True, help="Records include samples_us (per repetition/sample).")
@click.option("--align", type=click.IntRange(min=0, max=1 << 30),
              help="Message buffers start at a multiple of this many bytes, a power of two "
                   "(default: the page size, as the OSU benchmarks allocate them); 0 or 1: "
                   "plain malloc.")
@click.option("--format", "fmt", default="table", show_default=True,
              type=click.Choice(["table", "csv", "json"]))
@click.option("-o", "--output", help="Write csv/json here (atomically) instead of stdout.")
@click.option("--db", "db_path", is_flag=False, flag_value="", default=None,
              type=click.Path(dir_okay=False),
              help="Also store the records in this results database (--db alone: "
                   "$COLLTUNE_DB, else ./colltune.db).")
@oversubscribe_options
def bench(mpi_spec, platform_spec, coll, algos, nps, sizes, iterations, warmup, reps, root, dtype, op, timing,
          sleep_us, time_budget, validate, raw, align, fmt, output, db_path, oversubscribe,
          force) -> None:
    """Latency of algorithms, interleaved in one launch per process count.

    Progress goes to stderr. Ctrl-C (or SIGTERM) stops the running launch and keeps
    the points already measured: they are printed, written and stored as asked."""
    size_list = [0] if coll == "barrier" else sizes  # parsed by --size; barrier: no data
    np_list = nps  # parsed by --np
    if iterations is not None and time_budget is not None:
        fail("--iterations and --time-budget exclude each other: give one")
    if align is not None and align & (align - 1):
        fail(f"--align {align}: must be 0 or a power of two (bytes; 0 or 1: plain malloc)")
    if fmt == "table" and output:
        fail("-o writes csv or json: add --format csv or --format json")
    # every output is checked before anything is launched
    if output:
        check_writable(output, "-o")
    if db_path is not None:
        db_path = db_path_or_default(db_path)
        db_mod.check_writable(db_path)

    check_nps(np_list, oversubscribe=oversubscribe, force=force,
              simulated=mpi_mod.names_simulator(mpi_spec))  # before anything is built
    p = bench_flow.plan(coll, algos, np_list, size_list, mpi_spec=mpi_spec,
                        platform_spec=platform_spec, iterations=iterations, warmup=warmup,
                        reps=reps, root=root, dtype=dtype, op=op, timing=timing,
                        sleep_us=sleep_us, time_budget=time_budget, validate=validate,
                        raw=raw, align=align, progress=progress())
    run = bench_flow.measure(p, progress())
    records = run.records
    if records:
        try:
            emit_records(records, fmt, output, p.title, cores=p.cores)
        except OSError as exc:
            _save_elsewhere(records, f"cannot write {output}: {exc}")
            sys.exit(2)
        if db_path is not None:
            try:
                run_id = bench_flow.store_records(p, run, db_path, sys.argv)
            except (db_mod.DBError, db_mod.SQLError, OSError) as exc:
                _save_elsewhere(records, f"cannot store in {db_path}: {exc}")
                sys.exit(2)
            err.print(f"stored as run {run_id} in {db_path}", highlight=False)
    if run.interrupted:
        sys.exit(130)
    failures = bench_flow.validation_failures(records)
    if failures:
        for r in failures:
            err.print(f"[bold red]validation failed:[/] {r['collective']}/{r['spec']} "
                      f"np={r['np']} size={r['size']}", highlight=False)
        sys.exit(1)
