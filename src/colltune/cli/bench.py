"""`colltune bench`: latency of algorithms, interleaved in one launch per process count."""

from __future__ import annotations

import json
import os
import sys

import click

from colltune.drivers import bench as bench_mod
from colltune.results import db as db_mod
from colltune.results import store
from colltune.mpi import launch
from colltune.mpi import placement
from colltune.mpi import libalgos
from colltune.drivers import registry
from colltune.base.collectives import COLLECTIVES
from colltune.base.files import check_writable, save_fallback
from colltune.base.specs import is_lib_spec, split_specs
from colltune.base.units import fmt_size
from colltune.output.terminal import (VERDICT_LEGEND, BenchProgress, emit_records,  # noqa: F401
                                      osu_table)
from ._common import (MPI_HELP, PLATFORM_HELP, build_or_fail, check_nps, command,
                      db_path_or_default, err, fail, np_option, oversubscribe_options,
                      resolve_platform, size_option)
from colltune.mpi import libraries as mpi_mod


def _run_bench(b, specs: list[bench_mod.BenchSpec], kept: list[dict]) -> None:
    """Run every process count; finished points go into `kept` as they come, so that
    an interruption keeps them."""
    host = os.uname().nodename
    seen_np: set[int] = set()
    per_np = [len(s.sizes) * len(s.algos) for s in specs]
    with BenchProgress(sum(per_np)) as prog:
        base = 0
        for spec, n in zip(specs, per_np, strict=True):
            label = f"{spec.collective} np={spec.np}"
            prog.set(base, label, force=True)
            live: list[dict] = []

            def on_record(rec, live=live, base=base, label=label):
                rec["host"] = host
                live.append(rec)
                kept.append(rec)
                prog.set(base + len(live), label)

            def on_launch(i, count, _launch, base=base, n=n, label=label):
                prog.set(base + n * i / count, label)

            def on_merged(recs, live=live):  # alternating launches: the points so far
                for r in recs:
                    r["host"] = host
                del kept[len(kept) - len(live):]
                live[:] = recs
                kept.extend(recs)

            try:
                recs, notes = bench_mod.run_bench(b, spec, on_record=on_record,
                                                  progress=on_launch, on_merged=on_merged)
            except ValueError as exc:
                fail(str(exc))
            for r in recs:
                r["host"] = host
            if notes and spec.np not in seen_np:
                seen_np.add(spec.np)
                prog.note("note: " + "; ".join(notes))
            del kept[len(kept) - len(live):]  # streamed copies, replaced by the final ones
            kept.extend(recs)
            base += n
            prog.set(base, label, force=True)


def _warn_large(coll: str, sizes: list[int], nps: list[int], validate: bool,
                algos: int, reps: int, iterations: int | None) -> None:
    """Say before launching when a size needs much memory (or more than there is)."""
    big = max(sizes)
    if big < LARGE_SIZE:
        return
    np_max = max(nps)
    per = bench_mod.buffer_bytes(coll, big, np_max, validate)
    try:
        phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        phys = 0
    calls = algos * reps * (iterations if iterations is not None else 100)
    text = (f"size {fmt_size(big)}: {fmt_size(per)} of buffers per process, "
            f"{fmt_size(per * np_max)} for {np_max} processes; about {calls} calls of it "
            "per process count (--time-budget bounds the time)")
    if phys and per * np_max > phys:
        text += f"; this machine has {fmt_size(phys)} of memory in all"
    err.print(f"[yellow]warning:[/] {text}", highlight=False)


LARGE_SIZE = 256 << 20  # buffers from this size on get a warning before the launch


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


def _note_defaults(timing: str, np_list: list[int]) -> None:
    """One line: bench and sweep measure differently by default (docs/benchmarking.md,
    'bench and sweep measure differently')."""
    used = "/".join(dict.fromkeys(bench_mod.resolve_timing(timing, n) for n in np_list))
    err.print(f"note: bench times with {used} (--timing {timing}) under the MPI library's "
              "default placement; sweep studies time with osu and bind each process to a "
              "core (study keys timing, bind): their points are not comparable",
              highlight=False, soft_wrap=True)


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
    b = build_or_fail(mpi_spec)
    plat = resolve_platform(platform_spec, b.mpi)
    if reps is None:
        reps = bench_mod.SIM_REPS if b.mpi.simulated else 3
    specs_list = split_specs(algos)
    try:
        specs_list = bench_mod.expand_algos(b, coll, specs_list)  # all / ours / ompi:all ...
        for s in specs_list:
            if is_lib_spec(s):
                libalgos.lib_env(b.mpi, coll, s)  # validates: library, name, parameters
    except ValueError as exc:
        fail(str(exc))
    registry.check_specs(b, coll, [s for s in specs_list if not is_lib_spec(s)])
    specs = [bench_mod.BenchSpec(coll, specs_list, np, size_list, iterations, warmup, reps,
                                 root, dtype, op, timing=timing, sleep_us=sleep_us,
                                 time_budget=time_budget, validate=validate, raw=raw,
                                 align=align)
             for np in np_list]
    if plat is not None:
        try:
            specs = [bench_mod.for_simulation(s) for s in specs]
        except bench_mod.BenchError as exc:
            fail(str(exc))
        err.print(f"simulating on platform '{plat.name}' with {b.mpi.banner}: simulated "
                  "times, not measurements", highlight=False)
    if plat is None and not b.mpi.simulated:
        _note_defaults(timing, np_list)
    _warn_large(coll, size_list, np_list, validate, len(specs_list), reps, iterations)
    records: list[dict] = []
    interrupted = None
    try:
        if plat is not None:
            with launch.simulate(plat):
                _run_bench(b, specs, records)
        else:
            _run_bench(b, specs, records)
    except KeyboardInterrupt as exc:
        interrupted = exc
        err.print(f"[yellow]interrupted[/]: keeping the {len(records)} points measured so far",
                  highlight=False)
    if records:
        try:
            if plat is None:
                emit_records(records, fmt, output, b.mpi.banner, cores=placement.cores())
            else:  # no cores to share in a simulation
                emit_records(records, fmt, output, f"SIMULATED with {b.mpi.banner} on platform "
                             f"'{plat.name}', not measurements")
        except OSError as exc:
            _save_elsewhere(records, f"cannot write {output}: {exc}")
            sys.exit(2)
        if db_path is not None:
            try:
                run_id = store.store_bench(records, mpi=b.mpi, path=db_path, argv=sys.argv,
                                           notes=["interrupted"] if interrupted else None,
                                           platform=plat,
                                           status="interrupted" if interrupted else "done")
            except (db_mod.DBError, db_mod.SQLError, OSError) as exc:
                _save_elsewhere(records, f"cannot store in {db_path}: {exc}")
                sys.exit(2)
            err.print(f"stored as run {run_id} in {db_path}", highlight=False)
    if interrupted is not None:
        sys.exit(130)
    failures = bench_mod.validation_failures(records)
    if failures:
        for r in failures:
            err.print(f"[bold red]validation failed:[/] {r['collective']}/{r['spec']} "
                      f"np={r['np']} size={r['size']}", highlight=False)
        sys.exit(1)
