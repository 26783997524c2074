"""Point-to-point measurements: ping-pong / ring latency and bandwidth, the network probe.

Launches `colltune-pingpong` and `colltune-probe` (native/tools/pingpong.c, probe.c)
and formats their JSON records. The commands `pingpong` and `probe` are in
cli/p2p.py. See docs/point-to-point.md.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass

from rich.table import Table

from colltune.drivers import run
from colltune.mpi.backend import backend_for
from colltune.mpi.build import Build
from colltune.base.errors import ColltuneError
from colltune.base.units import fmt_size, parse_sizes

MODES = ("pingpong", "ring", "exchange")

PINGPONG_FIELDS = ["kind", "np", "participants", "size", "min_us", "median_us", "mean_us",
                   "max_us", "stddev_us", "bandwidth_MBps", "iterations", "warmup", "reps",
                   "persistent", "align", "mpi", "host", "command", "nodes_seen", "ppn_seen"]
PROBE_FIELDS = ["kind", "np", "size", "iterations", "warmup", "samples", "min_us", "median_us",
                "mean_us", "p90_us", "max_us", "iter_slowest_median_us", "iter_wall_us", "load_index",
                "load_basis", "baseline_us", "seed", "mpi", "host", "command"]


class P2PError(ColltuneError, RuntimeError):
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
               "exchange": "ranks 0 and 1 send to each other at once",
               "probe": "processes are paired up to exchange messages"}[what]
        raise P2PError(f"{what} needs at least 2 processes ({why}); --np {np} given")


def run_pingpong(build: Build, spec: PingpongSpec, timeout: float = 600) -> tuple[list[dict], list[str]]:
    """One launch of colltune-pingpong; its records (one per size) and the launcher's notes."""
    if spec.mode not in MODES:
        raise P2PError(f"mode '{spec.mode}': valid: {', '.join(MODES)}")
    _check_np(spec.mode, spec.np)
    if not spec.sizes:
        raise P2PError("no sizes given")
    prog = ["--mode", spec.mode,
            "--sizes", ",".join(map(str, spec.sizes)), "--reps", str(spec.reps),
            "--persistent", "1" if spec.persistent else "0"]
    if spec.iterations is not None:
        prog += ["--iterations", str(spec.iterations)]
    if spec.warmup is not None:
        prog += ["--warmup", str(spec.warmup)]
    if spec.align is not None:
        prog += ["--align", str(spec.align)]
    records, notes = run.run_records(build, "colltune-pingpong", spec.np, prog,
                                     error=P2PError, timeout=timeout)
    return with_placement(records, build.mpi.simulated), notes


def with_placement(records: list[dict], simulated: bool = False) -> list[dict]:
    """The measurements of a program's records, each with the nodes and processes per
    node MPI saw (`nodes_seen`, `ppn_seen`) from its placement line (driver_common.c
    ct_print_placement); a simulation's placement is its platform's, not MPI's."""
    seen = next((r for r in records if r.get("kind") == "placement"), None)
    out = [r for r in records if r.get("kind") != "placement"]
    if seen is not None and not simulated:
        for r in out:
            r["nodes_seen"], r["ppn_seen"] = seen.get("nodes"), seen.get("ppn")
    return out


def run_probe(build: Build, spec: ProbeSpec, timeout: float = 600) -> tuple[dict, list[str]]:
    """One launch of colltune-probe; its single record and the launcher's notes."""
    _check_np("probe", spec.np)
    prog = ["--size", str(spec.size),
            "--iterations", str(spec.iterations)]
    if spec.warmup is not None:
        prog += ["--warmup", str(spec.warmup)]
    if spec.seed is not None:
        prog += ["--seed", str(spec.seed)]
    if spec.baseline_us is not None:
        prog += ["--baseline-us", repr(float(spec.baseline_us))]
    records, notes = run.run_records(build, "colltune-probe", spec.np, prog, error=P2PError,
                                     timeout=timeout)
    return records[0], notes


def measure_eager_limit(build: Build, max_size: int = 4 << 20, reps: int = 9,
                        delay_us: int = 1000, timeout: float = 300) -> dict:
    """The library's eager limit between two processes (colltune-pingpong --mode eager):
    the largest message MPI_Send completes before the receiver posts its receive,
    searched up to `max_size`. The record: eager_limit (bytes), rendezvous_from (the
    first size that waited; None when none up to max_size did), tried ([[size, median
    send us], ...])."""
    if max_size < 1:
        raise P2PError(f"eager limit: max_size {max_size}: must be at least 1 byte")
    if not backend_for(build).eager_limit_measurable:
        raise P2PError("eager limit: a simulator's is a setting (SMPI: "
                       "smpi/send-is-detached-thresh), not something to measure")
    prog = ["--mode", "eager", "--sizes", str(max_size), "--reps", str(reps),
            "--delay-us", str(delay_us)]
    records, _ = run.run_records(build, "colltune-pingpong", 2, prog, error=P2PError,
                                 timeout=timeout)
    rec = records[0]
    if rec.get("kind") != "eager" or not isinstance(rec.get("eager_limit"), int):
        raise P2PError(f"colltune-pingpong --mode eager: unexpected record {rec}")
    return rec


# the sizes of the ping-pong the cost model fits α and β on (colltune model, measured now)
MODEL_SIZES = "1,8,64,512,4K,32K,256K,1M,4M"


def measure_pingpong(build: Build, np: int = 2, sizes=None) -> list[dict]:
    """Ping-pong records for the cost model's α and β (`colltune model`, measured now):
    MODEL_SIZES unless given, 5 repetitions."""
    sizes = tuple(sizes or parse_sizes(MODEL_SIZES))
    recs, _ = run_pingpong(build, PingpongSpec(np=np, sizes=sizes, reps=5))
    return recs


# the sizes of the exchange that calibrates concurrent messages (platforms.calibrated):
# bandwidth-bound ones, where two messages at once cost up to twice one
EXCHANGE_SIZES = (65536, 262144, 1048576)


def measure_exchange(build: Build, sizes=EXCHANGE_SIZES, reps: int = 11,
                     timeout: float = 300) -> list[dict]:
    """Records of colltune-pingpong --mode exchange (2 processes sending to each other at
    once), one per size: what two concurrent messages cost on this machine."""
    recs, _ = run_pingpong(build, PingpongSpec(np=2, sizes=tuple(sizes), mode="exchange",
                                               reps=reps), timeout=timeout)
    return recs

# ---------------------------------------------------------------------------- output

def pingpong_table(records: list[dict], title: str) -> Table:
    t = Table(title=title, title_justify="left")
    t.add_column("size", justify="right")
    for col in ("min µs", "median µs", "mean µs", "max µs", "stddev µs", "MB/s"):
        t.add_column(col, justify="right")
    t.add_column("transfers")
    for r in records:
        t.add_row(fmt_size(r["size"]), f"{r['min_us']:.2f}", f"{r['median_us']:.2f}",
                  f"{r['mean_us']:.2f}", f"{r['max_us']:.2f}", f"{r['stddev_us']:.2f}",
                  f"{r['bandwidth_MBps']:.1f}",
                  "persistent" if r.get("persistent") else "MPI_Sendrecv"
                  if r.get("kind") == "exchange" else "MPI_Send/MPI_Recv")
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
