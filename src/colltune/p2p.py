"""Point-to-point measurements: ping-pong / ring latency and bandwidth, the network probe.

Launches `colltune-pingpong` and `colltune-probe` (native/tools/pingpong.c, probe.c)
and formats their JSON records. The click commands `pingpong` and `probe` are
registered on the `colltune` group in cli.py. See docs/point-to-point.md.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path

import click
from rich.table import Table

from . import launch
from .build import Build
from .files import write_atomic
from .units import fmt_size, parse_size, parse_sizes

MPI_HELP = "MPI library: openmpi (default), mpich, or a path to a prefix/bin dir/mpicc"
MODES = ("pingpong", "ring")

PINGPONG_FIELDS = ["kind", "np", "participants", "size", "min_us", "median_us", "mean_us",
                   "max_us", "stddev_us", "bandwidth_MBps", "iterations", "warmup", "reps",
                   "persistent", "align", "mpi", "host", "command"]
PROBE_FIELDS = ["kind", "np", "size", "iterations", "warmup", "samples", "min_us", "median_us",
                "mean_us", "p90_us", "max_us", "iter_slowest_median_us", "load_index",
                "load_basis", "baseline_us", "seed", "mpi", "host", "command"]


class P2PError(RuntimeError):
    """A point-to-point measurement could not run or its output made no sense."""


@dataclass
class PingpongSpec:
    np: int = 2
    sizes: tuple[int, ...] = (8, 4096, 65536, 1048576)
    mode: str = "pingpong"
    iterations: int | None = None
    warmup: int | None = None
    reps: int = 5
    persistent: bool = False          # MPI_Send/MPI_Recv, as osu_latency; True: persistent
    align: int | None = None          # buffer alignment; None: the page size (as OSU)


@dataclass
class ProbeSpec:
    np: int = 4
    size: int = 4096
    iterations: int = 1000
    warmup: int | None = None
    seed: int | None = None
    baseline_us: float | None = None


def _check_np(what: str, np: int) -> None:
    if np < 2:
        why = {"pingpong": "rank 0 sends to rank 1 and waits for the reply",
               "ring": "the token goes from each rank to the next and back to rank 0",
               "probe": "processes are paired up to exchange messages"}[what]
        raise P2PError(f"{what} needs at least 2 processes ({why}); --np {np} given")


def _program(build: Build, name: str) -> str:
    path = build.program(name)
    if not path.exists():
        raise P2PError(f"{path} is missing: this build predates it; run `colltune build --force`")
    return str(path)


def _launch(build: Build, np: int, prog: list[str], timeout: float) -> tuple[list[dict], list[str]]:
    res = launch.run(launch.prepare(build.mpi, np, prog), timeout=timeout)
    name = Path(prog[0]).name
    if res.timed_out:
        raise P2PError(f"{name} timed out after {timeout:.0f} s: {res.command}")
    if res.returncode != 0:
        raise P2PError(launch.failure_message(name, res))
    records = []
    host = os.uname().nodename
    for line in res.stdout.splitlines():
        if line.startswith("{"):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise P2PError(f"{name} printed a malformed record: {line!r} ({exc})") from exc
            rec["host"] = host
            rec["command"] = res.command
            records.append(rec)
    if not records:
        raise P2PError(f"{name} printed no records: {res.command}\n{res.stderr.strip()[-2000:]}")
    return records, res.notes


def run_pingpong(build: Build, spec: PingpongSpec, timeout: float = 600) -> tuple[list[dict], list[str]]:
    """One launch of colltune-pingpong; its records (one per size) and the launcher's notes."""
    if spec.mode not in MODES:
        raise P2PError(f"mode '{spec.mode}': valid: {', '.join(MODES)}")
    _check_np(spec.mode, spec.np)
    if not spec.sizes:
        raise P2PError("no sizes given")
    prog = [_program(build, "colltune-pingpong"), "--mode", spec.mode,
            "--sizes", ",".join(map(str, spec.sizes)), "--reps", str(spec.reps),
            "--persistent", "1" if spec.persistent else "0"]
    if spec.iterations is not None:
        prog += ["--iterations", str(spec.iterations)]
    if spec.warmup is not None:
        prog += ["--warmup", str(spec.warmup)]
    if spec.align is not None:
        prog += ["--align", str(spec.align)]
    return _launch(build, spec.np, prog, timeout)


def run_probe(build: Build, spec: ProbeSpec, timeout: float = 600) -> tuple[dict, list[str]]:
    """One launch of colltune-probe; its single record and the launcher's notes."""
    _check_np("probe", spec.np)
    prog = [_program(build, "colltune-probe"), "--size", str(spec.size),
            "--iterations", str(spec.iterations)]
    if spec.warmup is not None:
        prog += ["--warmup", str(spec.warmup)]
    if spec.seed is not None:
        prog += ["--seed", str(spec.seed)]
    if spec.baseline_us is not None:
        prog += ["--baseline-us", repr(float(spec.baseline_us))]
    records, notes = _launch(build, spec.np, prog, timeout)
    return records[0], notes


# ---------------------------------------------------------------------------- output

def pingpong_table(records: list[dict], title: str) -> Table:
    t = Table(title=title, title_justify="left")
    t.add_column("size", justify="right")
    for col in ("min µs", "median µs", "mean µs", "max µs", "stddev µs", "MB/s"):
        t.add_column(col, justify="right")
    for r in records:
        t.add_row(fmt_size(r["size"]), f"{r['min_us']:.2f}", f"{r['median_us']:.2f}",
                  f"{r['mean_us']:.2f}", f"{r['max_us']:.2f}", f"{r['stddev_us']:.2f}",
                  f"{r['bandwidth_MBps']:.1f}")
    return t


def probe_table(rec: dict, title: str) -> Table:
    t = Table(title=title, title_justify="left")
    cols = ("np", "size", "iterations", "min µs", "median µs", "p90 µs", "max µs",
            "load index", "seed")
    for col in cols:
        t.add_column(col, justify="right")
    li = rec.get("load_index")
    basis = "baseline" if rec.get("load_basis") == "baseline" else "min"
    t.add_row(str(rec["np"]), fmt_size(rec["size"]), str(rec["iterations"]),
              f"{rec['min_us']:.2f}", f"{rec['median_us']:.2f}", f"{rec['p90_us']:.2f}",
              f"{rec['max_us']:.2f}", "n/a" if li is None else f"{li:.2f} (/{basis})",
              str(rec["seed"]))
    return t


def _csv_cell(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return v


def _render(records: list[dict], fmt: str, fields: list[str]) -> str:
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in records:
            w.writerow({k: _csv_cell(r.get(k)) for k in fields})
        return buf.getvalue()
    return json.dumps(records, indent=2) + "\n"


def _emit_text(text: str, output: str | None) -> None:
    if output:
        write_atomic(Path(output), text)
    else:
        click.echo(text, nl=False)


def _notes(notes: list[str]) -> None:
    from .cli import err

    if notes:
        err.print("note: " + "; ".join(notes), highlight=False)


# ---------------------------------------------------------------------------- commands

FORMAT_OPT = click.option("--format", "fmt", default="table", show_default=True,
                          type=click.Choice(["table", "csv", "json"]))
OUTPUT_OPT = click.option("-o", "--output",
                          help="Write csv/json here (atomically) instead of stdout.")


@click.command()
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
@click.option("--np", "np", default=2, show_default=True, type=int,
              help="Processes; the ping-pong uses ranks 0 and 1, the ring all of them.")
@click.option("--sizes", default="1..1M", show_default=True,
              help="Bytes: list (8,64K,1M) or power-of-two range (1..1M).")
@click.option("--mode", default="pingpong", show_default=True, type=click.Choice(MODES),
              help="pingpong: 0 <-> 1; ring: a token goes 0 -> 1 -> ... -> N-1 -> 0.")
@click.option("--iterations", type=click.IntRange(min=1),
              help="Timed round trips per repetition (default 1000, 100 above 8K).")
@click.option("--warmup", type=click.IntRange(min=0),
              help="Untimed round trips first (default iterations/10, at least 1).")
@click.option("--reps", default=5, show_default=True, type=click.IntRange(min=1),
              help="Repetitions; min/median/mean/max are over them.")
@click.option("--persistent/--no-persistent", default=True, show_default=True,
              help="Persistent requests (MPI_Send_init/MPI_Recv_init + MPI_Start/MPI_Wait) "
                   "or plain MPI_Send/MPI_Recv.")
@click.option("--timeout", default=600.0, show_default=True, help="Seconds before giving up.")
@FORMAT_OPT
@OUTPUT_OPT
def pingpong(mpi_spec, np, sizes, mode, iterations, warmup, reps, persistent, timeout, fmt,
             output) -> None:
    """Point-to-point latency (one-way = RTT/2) and bandwidth, ping-pong or ring."""
    from .cli import _build, _fail, out

    if fmt == "table" and output:
        _fail("-o/--output writes csv or json: add --format csv or --format json")
    try:
        size_list = parse_sizes(sizes)
        _check_np(mode, np)
    except (ValueError, P2PError) as exc:
        _fail(str(exc))
    b = _build(mpi_spec)
    spec = PingpongSpec(np, tuple(size_list), mode, iterations, warmup, reps, persistent)
    try:
        records, notes = run_pingpong(b, spec, timeout=timeout)
    except P2PError as exc:
        _fail(str(exc))
    _notes(notes)
    if fmt == "table":
        how = "persistent requests" if persistent else "MPI_Send/MPI_Recv"
        what = ("one-way latency = RTT/2" if mode == "pingpong"
                else f"per-hop latency = round time/{np}")
        out.print(pingpong_table(records, f"{mode}, {np} processes, {what}, {how}"))
        out.print(f"{b.mpi.banner}; MB/s = size / median one-way time, 1 MB = 10^6 bytes",
                  highlight=False)
        return
    _emit_text(_render(records, fmt, PINGPONG_FIELDS), output)


@click.command()
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
@click.option("--np", "np", default=4, show_default=True, type=int,
              help="Processes, paired at random each iteration (odd: one sits out).")
@click.option("--size", default="4K", show_default=True, help="Bytes each partner sends.")
@click.option("--iterations", default=1000, show_default=True, type=click.IntRange(min=1),
              help="Timed exchanges, each with a fresh random pairing.")
@click.option("--warmup", type=click.IntRange(min=0), help="Untimed exchanges first (default 10).")
@click.option("--seed", type=click.IntRange(min=0, max=2**64 - 1),
              help="Seed of the pairings (default: chosen at random and reported).")
@click.option("--baseline-us", type=click.FloatRange(min=0, min_open=True),
              help="Median exchange time of a quiet system (µs): load index = median / this. "
                   "Without it: median / this run's minimum.")
@click.option("--timeout", default=600.0, show_default=True, help="Seconds before giving up.")
@FORMAT_OPT
@OUTPUT_OPT
def probe(mpi_spec, np, size, iterations, warmup, seed, baseline_us, timeout, fmt,
          output) -> None:
    """Network probe: random pairwise exchanges, latency distribution and a load index."""
    from .cli import _build, _fail, out

    if fmt == "table" and output:
        _fail("-o/--output writes csv or json: add --format csv or --format json")
    try:
        nbytes = parse_size(size)
        _check_np("probe", np)
    except (ValueError, P2PError) as exc:
        _fail(str(exc))
    b = _build(mpi_spec)
    spec = ProbeSpec(np, nbytes, iterations, warmup, seed, baseline_us)
    try:
        rec, notes = run_probe(b, spec, timeout=timeout)
    except P2PError as exc:
        _fail(str(exc))
    _notes(notes)
    if fmt == "table":
        out.print(probe_table(rec, f"probe, {np} processes, exchange time per rank and "
                                   f"iteration, {b.mpi.banner}"))
        if rec.get("load_basis") == "baseline":
            expl = f"load index = median / baseline {rec['baseline_us']:.2f} µs"
        else:
            expl = "load index = median / min of this run (pass --baseline-us for a fixed reference)"
        out.print(expl, highlight=False)
        return
    _emit_text(_render([rec], fmt, PROBE_FIELDS), output)
