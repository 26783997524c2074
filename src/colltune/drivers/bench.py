"""Launch colltune-bench and collect its records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from colltune.drivers import run as runner
from colltune.mpi import launch
from colltune.mpi.build import Build
from colltune.base.errors import ColltuneError


class BenchError(ColltuneError, RuntimeError):
    pass


@dataclass(frozen=True)
class SimLoad:
    """A load generator inside a simulated launch (docs/workload.md): `np` extra ranks
    at the end of MPI_COMM_WORLD, one a node on other nodes of the platform, exchange
    traffic (`pattern`, `size` x `window` in flight, pairings from `seed`) until the
    measured ranks are done; `np` 0: none. The probe (`probe_iterations` of a barrier
    and `probe_size` bytes between random pairs) runs on the measured ranks first."""

    np: int = 0
    pattern: str = "pairs"
    size: int = 1 << 20
    window: int = 4
    seed: int = 1
    probe_iterations: int = 300
    probe_size: int = 4096

    def args(self) -> list[str]:
        out = ["--probe-iterations", str(self.probe_iterations), "--probe-size",
               str(self.probe_size)]
        if self.np:
            out += ["--load-ranks", str(self.np), "--load-pattern", self.pattern, "--load-size",
                    str(self.size), "--load-window", str(self.window), "--load-seed",
                    str(self.seed)]
        return out


@dataclass
class BenchSpec:
    collective: str
    algos: list[str]
    np: int
    sizes: list[int]
    iterations: int | None = None
    warmup: int | None = None
    reps: int = 3
    root: int = 0
    dtype: str = "char"
    op: str = "sum"
    timing: str = "osu"               # "osu", "window" or "auto" (see resolve_timing)
    sleep_us: float = 0               # sleep between calls, outside the timed region
    time_budget: float | None = None  # seconds per (size, algorithm); replaces iterations
    validate: bool = False            # compare one call per point with the MPI library's
    raw: bool = False                 # records carry "samples_us"
    align: int | None = None          # buffer alignment in bytes; None: the page size
                                      # (the driver's default, as OSU); 0 or 1: plain malloc
    shared_buffers: bool | None = None  # SMPI only: SMPI_SHARED_MALLOC buffers (timing
                                        # only); None: on for simulated runs without validate
    load: SimLoad | None = None       # SMPI only: generator ranks and the probe in the launch
    warmup_once: bool | None = None   # warm-up calls before each algorithm's first point
                                      # only; None: under simulation (where only a first
                                      # call differs), not in measurements
    prepare: bool | None = None       # before each algorithm's first point, what its first
                                      # call makes (ct_comm_prepare) instead of a warm-up
                                      # call; None: under simulation only


# Under simulation (SimGrid SMPI, computation not simulated) the time of a call is
# deterministic: every call of a point gives the same number, to the nanosecond, and
# only an algorithm's very first call differs (its private communicators are made
# then: pipeline Bcast 8 B at 64 processes, 14.465 us for the launch's first call,
# 14.068 for every later one). So no warm-up call: the communicators are made before
# each algorithm's first point (colltune-bench --prepare), and one timed call per
# point (docs/simulation.md, "Speed").
SIM_ITERATIONS = 1
SIM_WARMUP = 0
SIM_REPS = 1


def for_simulation(spec: BenchSpec) -> BenchSpec:
    """The spec as a simulated launch runs it: OSU timing (the window method busy-waits
    on the clock, which a simulation does not advance), one timed call and no warm-up
    call unless given (each algorithm's communicators are prepared before its first
    point; a warm-up asked for runs before that point only), shared message buffers
    unless validating. BenchError for what a simulation cannot do."""
    import dataclasses

    if spec.timing == "window":
        raise BenchError("--timing window is not available under simulation (--mpi smpi): "
                         "it waits on the clock; simulated runs time as osu")
    if spec.time_budget is not None:
        raise BenchError("a time budget is not available under simulation (--mpi smpi): "
                         "simulated times do not depend on wall time; give iterations")
    if spec.sleep_us:
        raise BenchError("sleep between calls is not available under simulation (--mpi smpi)")
    shared = spec.shared_buffers
    if shared is None:
        shared = not spec.validate
    if shared and spec.validate:
        raise BenchError("shared buffers hold no meaningful data: not with validate")
    return dataclasses.replace(
        spec, timing="osu", shared_buffers=shared,
        warmup_once=spec.warmup_once if spec.warmup_once is not None else True,
        prepare=spec.prepare if spec.prepare is not None else True,
        iterations=spec.iterations if spec.iterations is not None else SIM_ITERATIONS,
        warmup=spec.warmup if spec.warmup is not None else SIM_WARMUP)


def split_specs(text: str) -> list[str]:
    """'chain:segsize=8192,fanout=4,binomial' -> ['chain:segsize=8192,fanout=4', 'binomial']:
    a token with '=' but no ':' continues the previous spec."""
    specs: list[str] = []
    for tok in (t.strip() for t in text.split(",")):
        if not tok:
            continue
        if "=" in tok and ":" not in tok and specs:
            specs[-1] += "," + tok
        else:
            specs.append(tok)
    return specs


def resolve_timing(timing: str, np: int) -> str:
    """'auto': `window` when every process has a core of its own here (it busy-waits
    for its start windows, and measured the more reproducible of the two:
    benchmarks/timing_spread.py, docs/benchmarking.md), else `osu`."""
    if timing != "auto":
        return timing
    return "window" if np <= launch.cores() else "osu"


def validation_failures(records: list[dict]) -> list[dict]:
    """Records of points whose result differed from the MPI library's (--validate)."""
    return [r for r in records if r.get("valid") is False]


def buffer_bytes(collective: str, size: int, np: int, validate: bool = False) -> int:
    """Bytes colltune-bench allocates per process for one size (as bench.c does): the
    send buffer, the receive buffer (np x size at every process for (all)gather), and
    with --validate the MPI library's result."""
    gathered = collective in ("gather", "allgather")
    recv = 0 if collective == "bcast" else size * (np if gathered else 1)
    ref = 0 if not validate else (size if collective == "bcast" else recv)
    return size + recv + ref


def run(build: Build, spec: BenchSpec, timeout: float = 3600,
        extra_env: dict[str, str] | None = None,
        on_record: Callable[[dict], None] | None = None) -> tuple[list[dict], list[str]]:
    """Run one launch; returns its records and the launcher's notes.

    `extra_env` is added to the launch's environment (libalgos uses it to force one
    of the MPI library's own algorithms). `on_record` is called with each record as
    the driver prints it (one per size and algorithm, after all repetitions).

    With `validate`, a point whose result differs from the MPI library's own
    collective does not raise: its record has "valid": false (see
    `validation_failures`), and the caller decides how to exit.
    """
    if build.mpi.simulated:
        spec = for_simulation(spec)
    elif spec.shared_buffers:
        raise BenchError("shared buffers (SMPI_SHARED_MALLOC) exist only under simulation "
                         "(--mpi smpi)")
    elif spec.load is not None:
        raise BenchError("load-generator ranks inside the measured launch are for simulation "
                         "(--mpi smpi); locally the generator runs beside it (colltune load)")
    prog = ["--coll", spec.collective,
            "--algo", ",".join(spec.algos), "--sizes", ",".join(map(str, spec.sizes)),
            "--reps", str(spec.reps), "--root", str(spec.root), "--dtype", spec.dtype,
            "--op", spec.op]
    if spec.iterations is not None:
        prog += ["--iterations", str(spec.iterations)]
    if spec.warmup is not None:
        prog += ["--warmup", str(spec.warmup)]
    if spec.warmup_once:
        prog += ["--warmup-once"]
    if spec.prepare:
        prog += ["--prepare"]
    timing = resolve_timing(spec.timing, spec.np)
    if timing != "osu":
        prog += ["--timing", timing]
    if spec.sleep_us:
        prog += ["--sleep", f"{spec.sleep_us:g}"]
    if spec.time_budget is not None:
        prog += ["--time-budget", f"{spec.time_budget:g}"]
    if spec.validate:
        prog += ["--validate"]
    if spec.raw:
        prog += ["--raw"]
    if spec.align is not None:
        prog += ["--align", str(spec.align)]
    if spec.shared_buffers:
        prog += ["--shared-buffers"]
    load_np = 0
    if spec.load is not None:
        prog += spec.load.args()
        load_np = spec.load.np
    ln = runner.prepare(build, "colltune-bench", spec.np + load_np, prog, error=BenchError,
                        extra_env=extra_env,
                        prepare_options={"load_np": load_np} if load_np else None)
    sim = launch.current_simulation() if build.mpi.simulated else None
    extras: dict[str, dict] = {}  # the probe's and the generator's lines (spec.load)

    def _mark(rec: dict) -> None:
        """Simulated records say so, and where (the database keeps them apart)."""
        if sim is not None:
            rec["simulated"] = True
            rec["platform"] = sim.platform.name
            rec["simulator"] = build.mpi.banner
            rec["shared_buffers"] = bool(spec.shared_buffers)
            rec["nodes"], rec["ppn"] = ln.nodes, ln.ppn
            if load_np:  # nodes and ppn of the measured ranks, not the generator's
                rec["nodes"] = max(1, ln.nodes - load_np)
        probe = extras.get("probe")
        if probe is not None:
            rec["probe_us"] = probe.get("iter_wall_us")
            rec["probe_median_us"] = probe.get("median_us")
            rec["probe_iterations"] = probe.get("iterations")

    def record(rec: dict) -> None:
        if rec.get("kind") in ("probe", "load"):
            extras[rec["kind"]] = rec
            return
        rec["command"] = ln.command_line
        _mark(rec)
        on_record(rec)

    res = runner.run_launch(ln, name="benchmark", error=BenchError, timeout=timeout,
                            on_record=record if on_record is not None else None, check=False)
    if res.timed_out:
        raise BenchError(f"benchmark timed out after {timeout:.0f} s: {res.command}")
    records = []
    for rec in res.records:
        if rec.get("kind") in ("probe", "load"):
            extras[rec["kind"]] = rec
    for rec in res.records:
        if rec.get("kind") in ("probe", "load"):
            continue
        rec["command"] = res.command
        _mark(rec)
        records.append(rec)
    if res.returncode != 0:
        # colltune-bench exits 1 after a complete run in which --validate found
        # differences; every record is there and says which point failed
        complete = len(records) == len(spec.sizes) * len(spec.algos)
        if spec.validate and res.returncode == 1 and complete and validation_failures(records):
            return records, res.notes
        raise BenchError(res.failure_message("benchmark"))
    notes = list(res.notes)
    if spec.load is not None:
        if "probe" not in extras:
            raise BenchError("the benchmark printed no probe result (--probe-iterations): "
                             + res.command)
        gen = extras.get("load")
        if spec.load.np and gen is None:
            raise BenchError("the load-generator ranks printed no statistics: " + res.command)
        if gen is not None:
            for r in records:
                r["load_generator"] = gen
            notes.append(f"load generator inside the simulation: {gen['np']} ranks, "
                         f"{gen['pattern']} {gen['size']} B x {gen['window']}, seed "
                         f"{gen['seed']}: {gen['rounds']} rounds, {gen['bytes'] / 1e9:.2f} GB "
                         f"in {gen['elapsed_s'] * 1e3:.3f} ms simulated "
                         f"({gen['rate_MBps'] / 1e3:.1f} GB/s)")
    return records, notes
