"""`colltune bench`: latency of algorithms, interleaved in one launch per process count."""

from __future__ import annotations

import csv
import io
import json
import os
import sys
import time
from pathlib import Path

import click
from rich.table import Table

from colltune.analysis.evidence import RATIO_LEGEND, ratio_label, ratio_to_baseline
from colltune.drivers import bench as bench_mod
from colltune.results import db as db_mod
from colltune.results import store
from colltune.mpi import launch
from colltune.mpi import placement
from colltune.mpi import libalgos
from colltune.drivers import registry
from colltune.base.collectives import COLLECTIVES
from colltune.base.files import check_writable, save_fallback, write_atomic
from colltune.base.specs import is_lib_spec, split_specs
from colltune.base.units import fmt_size
from ._common import (MPI_HELP, PLATFORM_HELP, build_or_fail, check_nps, command,
                      db_path_or_default, err, fail, np_option, out, oversubscribe_options,
                      resolve_platform, size_option)
from colltune.mpi import libraries as mpi_mod


def _bench_cell(r: dict | None, base: dict | None, is_base: bool) -> str:
    if not r:
        return ""
    if r.get("median_us") is None:
        return "no valid sample"
    cell = f"{r['median_us']:.2f}"
    if not is_base and r.get("ratio") is not None:
        # the ratio of the medians (the paired estimate labelled where it differs):
        # quick's and the report's number (evidence.ratio_label)
        mr = ratio_to_baseline(r["median_us"], base["median_us"]) if (
            base and base.get("median_us")) else None
        cell += " " + ratio_label(mr, r["ratio"], bool(r.get("paired")))
        cell += VERDICT_MARKS.get(r.get("verdict"), "")
    if r.get("fallback"):
        cell += " *"
    return cell


def spec_labels(records: list[dict]) -> dict[str, str]:
    """Each record's spec -> the label tables show: the algorithm and its effective
    parameters (libalgos.param_label), `chain (segsize 8 KiB, fanout 4)` beside
    `ompi:chain (unsegmented, fanout 4)`."""
    labels: dict[str, str] = {}
    for r in records:
        if r["spec"] not in labels:
            labels[r["spec"]] = libalgos.param_label(r["collective"], r["spec"], r.get("params"))
    return labels


def _bench_table(records: list[dict], title: str) -> Table:
    """One row per algorithm and a column per size when that fits, else the transpose;
    beside each latency its ratio to native (with_ratios)."""
    records = with_ratios(records)
    algos = list(dict.fromkeys(r["spec"] for r in records))
    label = spec_labels(records)
    sizes = sorted({r["size"] for r in records})
    by = {(r["spec"], r["size"]): r for r in records}
    native = "native" if "native" in algos else None
    t = Table(title=title, title_justify="left")
    if len(sizes) <= 6 or len(sizes) < len(algos):
        t.add_column("algorithm", overflow="fold")
        for s in sizes:
            t.add_column(fmt_size(s), justify="right", no_wrap=True)
        for a in algos:
            t.add_row(label[a], *(_bench_cell(by.get((a, s)), by.get((native, s)), a == native)
                           for s in sizes))
    else:
        t.add_column("size", justify="right")
        for a in algos:
            t.add_column(label[a], justify="right", overflow="fold")
        for s in sizes:
            t.add_row(fmt_size(s), *(_bench_cell(by.get((a, s)), by.get((native, s)),
                                                 a == native) for a in algos))
    return t


def _us(v) -> str:
    return "" if v is None else f"{v:.2f}"


def osu_table(records: list[dict], title: str) -> Table:
    """OSU's table (osu_bcast -f ...): size, Avg/Min/Max Latency(us), Iterations, with
    OSU's meanings (mean, smallest and largest over processes of each process's mean
    call time over all its timed calls), then the spread over repetitions, which OSU
    does not have, under a name of its own. One block of rows per algorithm."""
    algos = list(dict.fromkeys(r["spec"] for r in records))
    label = spec_labels(records)
    t = Table(title=title, title_justify="left")
    if len(algos) > 1:
        t.add_column("algorithm", overflow="fold")
    for col in ("# Size", "Avg Latency(us)", "Min Latency(us)", "Max Latency(us)",
                "Iterations", "reps: median (min–max) µs"):
        t.add_column(col, justify="right", no_wrap=col != "reps: median (min–max) µs")
    for a in algos:
        for r in sorted((r for r in records if r["spec"] == a), key=lambda r: r["size"]):
            calls = (r.get("iterations") or 0) * (r.get("valid_reps") or 0)
            reps = (f"{_us(r.get('median_us'))} ({_us(r.get('rep_min_us'))}–"
                    f"{_us(r.get('rep_max_us'))})" if r.get("median_us") is not None else "")
            row = [str(r["size"]), _us(r.get("mean_us")), _us(r.get("rank_min_us")),
                   _us(r.get("rank_max_us")), str(calls), reps + (" *" if r.get("fallback")
                                                                    else "")]
            t.add_row(*([label[a]] if len(algos) > 1 else []), *row)
    return t


OSU_NOTE = ("Avg/Min/Max Latency as in the OSU benchmarks: mean, smallest and largest over "
            "processes of each process's mean time per call over all its timed calls "
            "(rank_min_us, rank_max_us in csv/json); Iterations = timed calls per process; "
            "the last column is over repetitions (median_us, rep_min_us, rep_max_us).")


CSV_FIELDS = ["collective", "algorithm", "params", "spec", "np", "size", "dtype", "op", "root",
              "iterations", "warmup", "timing", "rep_min_us", "mean_us", "median_us", "p90_us",
              "p99_us", "rep_max_us", "stddev_us", "valid_reps", "invalid", "rank_min_us",
              "rank_max_us", "window_us", "sleep_us", "align", "time_budget_s", "valid",
              "fallback", "library", "launches", "mpi", "host", "simulated", "platform",
              "command", "ratio"]


def with_ratios(records: list[dict], baseline: str = "native") -> list[dict]:
    """Every record with `ratio`: its time / the baseline's time at the same
    (collective, np, size) (evidence.ratio_to_baseline; None where the baseline was not
    measured, and for the baseline itself). A ratio the record already carries (quick:
    the comparison's estimate over the repetitions) is kept."""
    base = {(r["collective"], r["np"], r["size"]): r.get("median_us") for r in records
            if r.get("spec") == baseline}
    out_ = []
    for r in records:
        ratio = r.get("ratio")
        b = base.get((r["collective"], r["np"], r["size"]))
        if ratio is None and r.get("spec") != baseline and b and r.get("median_us"):
            ratio = ratio_to_baseline(r["median_us"], b)
        out_.append(dict(r, ratio=ratio if ratio is None or ratio == ratio else None))
    return out_


OVER_MARK = "†"
# what a ratio is worth, where the records carry a verdict (evidence.py): quick
VERDICT_MARKS = {"tie": " ≈", "insufficient": " ?", "unstable": " !"}
VERDICT_LEGEND = ("≈ within the noise of the repetitions (a tie, after Holm's correction over "
                  "the point's candidates); ? too few repetitions to tell; ! unstable: the "
                  "repetitions scatter (or saw different load): measure again; unmarked "
                  "ratios differ beyond the noise")


def emit_records(records: list[dict], fmt: str, output: str | None, title: str,
                 cores: int | None = None) -> None:
    """Tables (one per collective and process count), CSV or JSON. `cores`: the
    machine's, for marking tables whose processes share cores (oversubscribed). Each
    record gets its `ratio` to native (with_ratios), printed as in the tables."""
    records = with_ratios(records)
    if fmt == "table":
        groups: dict = {}
        for r in records:
            groups.setdefault((r["collective"], r["np"]), []).append(r)
        any_over = False
        osu_shown = False
        for (c, np), recs in groups.items():
            timing = "/".join(sorted({str(r.get("timing", "osu")) for r in recs}))
            checked = [r.get("valid") for r in recs if r.get("valid") is not None]
            note = (f"; validated: {sum(map(bool, checked))}/{len(checked)} pass"
                    if checked else "")
            over = cores is not None and np > cores
            any_over |= over
            mark = (f" {OVER_MARK} OVERSUBSCRIBED: {np} processes on {cores} cores"
                    if over else "")
            if timing == "osu":  # the table an OSU user compares with
                osu_shown = True
                aligns = {r.get("align") for r in recs}
                buf = ("SMPI shared buffers" if all(r.get("shared_buffers") for r in recs) else
                       "plain malloc" if aligns == {1} else
                       f"{aligns.pop()}-byte aligned buffers" if len(aligns) == 1 and
                       None not in aligns else "buffers: see align")
                out.print(osu_table(recs, f"{c}, {np} processes{mark}, OSU table ({title}; osu "
                                          f"timing; {buf}{note})"))
                if len({r["spec"] for r in recs}) == 1:
                    continue
            out.print(_bench_table(recs, f"{c}, {np} processes{mark}, median latency in µs "
                                         f"({title}; {timing} timing; ×: time / native's "
                                         f"time{note})"))
        if osu_shown:
            out.print(OSU_NOTE, highlight=False)
        if any(r.get("ratio") is not None for r in records):
            out.print(RATIO_LEGEND, highlight=False)
        if any(r.get("verdict") for r in records):
            out.print(VERDICT_LEGEND, highlight=False)
        if any_over:
            out.print(f"{OVER_MARK} oversubscribed: processes share cores (time-sliced by the "
                      "OS); the ratios there say nothing about the algorithms", highlight=False)
        if any(r.get("fallback") for r in records):
            out.print("* a declared fallback ran: "
                      + "; ".join(sorted({r["fallback"] for r in records if r.get("fallback")})),
                      highlight=False)
        text = None
    elif fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in records:
            w.writerow(r)
        text = buf.getvalue()
    else:
        text = json.dumps(records, indent=2) + "\n"
    if text is not None:
        if output:
            write_atomic(Path(output), text)
        else:
            click.echo(text, nl=False)


class BenchProgress:
    """Points measured out of points planned, with the time so far and an estimate of
    the time left: a rich bar on a terminal, else a plain line on stderr at most every
    PLAIN_EVERY seconds (and at each process count's end)."""

    PLAIN_EVERY = 10.0

    def __init__(self, total: int):
        self.total, self.done, self.t0 = total, 0.0, time.monotonic()
        self.label = "benchmark"
        self._last_plain = self.t0
        self._bar = None
        if err.is_terminal:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(),
                                 TextColumn("left"), TimeRemainingColumn(), console=err,
                                 transient=True)
            self._task = self._bar.add_task(self.label, total=total)

    def __enter__(self):
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.stop()

    def note(self, text: str) -> None:
        (self._bar.console if self._bar else err).print(text, highlight=False)

    def set(self, done: float, label: str | None = None, force: bool = False) -> None:
        self.done = min(done, self.total)
        if label:
            self.label = label
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, description=self.label)
            return
        now = time.monotonic()
        if force or now - self._last_plain >= self.PLAIN_EVERY:
            self._last_plain = now
            err.print(f"{self.label}: {self.line()}", highlight=False)

    def line(self) -> str:
        el = time.monotonic() - self.t0
        eta = (f", about {_hms(el / self.done * (self.total - self.done))} left"
               if 0 < self.done < self.total else "")
        return f"{self.done:.0f}/{self.total} points, {_hms(el)} elapsed{eta}"


def _hms(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


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
