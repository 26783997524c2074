"""Launch colltune-bench and collect its records.

`run_bench` also measures the MPI library's own algorithms (`ompi:NAME`, `mpich:NAME`,
forced through the environment libalgos gives): each runs in a launch of its own,
colltune's algorithms and `native` share one, and the launches alternate (A B C A B C
...) one repetition at a time before their records are merged. See
docs/library-algorithms.md.
"""

from __future__ import annotations

import dataclasses
import os
import math
import statistics
from dataclasses import dataclass
from typing import Callable

from colltune.drivers import registry
from colltune.drivers import run as runner
from colltune.mpi import launch, libalgos, placement
from colltune.mpi.backend import SIMULATED_REPS, backend_for
from colltune.mpi.build import Build
from colltune.mpi.libraries import MPI
from colltune.base.collectives import per_process
from colltune.base.specs import expand_grid, is_lib_spec
from colltune.base.errors import ColltuneError

# lines of colltune-bench that are not measurements: the probe, the load generator,
# and where the processes were (nodes and processes per node, as MPI sees them)
EXTRA_KINDS = ("probe", "load", "placement")


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
    rotate: int = 0                   # every repetition runs the candidates from this one on
    prepare: bool | None = None       # before each algorithm's first point, what its first
                                      # call makes (ct_comm_prepare) instead of a warm-up
                                      # call; None: under simulation only

    def __post_init__(self) -> None:
        if self.collective == "barrier":  # no data: one point, size 0 (as osu_barrier)
            self.sizes = [0]


# Under simulation (SimGrid SMPI, computation not simulated) the time of a call is
# deterministic: every call of a point gives the same number, to the nanosecond, and
# only an algorithm's very first call differs (its private communicators are made
# then: pipeline Bcast 8 B at 64 processes, 14.465 us for the launch's first call,
# 14.068 for every later one). So no warm-up call: the communicators are made before
# each algorithm's first point (colltune-bench --prepare), and one timed call per
# point (docs/simulation.md, "Speed").
SIM_ITERATIONS = 1
SIM_WARMUP = 0
SIM_REPS = SIMULATED_REPS  # mpi.backend: a simulated backend's default_reps


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


def resolve_timing(timing: str, np: int) -> str:
    """'auto': `window` when every process has a core of its own here (it busy-waits
    for its start windows, and measured the more reproducible of the two:
    benchmarks/timing_spread.py, docs/benchmarking.md), else `osu`."""
    if timing != "auto":
        return timing
    return "window" if np <= placement.cores() else "osu"


def validation_failures(records: list[dict]) -> list[dict]:
    """Records of points whose result differed from the MPI library's (--validate)."""
    return [r for r in records if r.get("valid") is False]


def buffer_bytes(collective: str, size: int, np: int, validate: bool = False) -> int:
    """Bytes colltune-bench allocates per process for one size (as bench.c does): the
    send buffer (np x size for alltoall(v), scatter(v) and reduce_scatter(_block)), the
    receive buffer (np x size at every process for (all)gather(v) and alltoall(v)), and
    with --validate the MPI library's result."""
    sends_p = ("alltoall", "alltoallv", "scatter", "reduce_scatter_block", "reduce_scatter",
               "scatterv")
    gathered = per_process(collective) and collective in ("gather", "allgather", "alltoall",
                                                          "alltoallv", "allgatherv", "gatherv")
    send = size * (np if collective in sends_p else 1)
    recv = 0 if collective == "bcast" else size * (np if gathered else 1)
    ref = 0 if not validate else (size if collective == "bcast" else recv)
    return send + recv + ref


def load_average() -> float | None:
    """The machine's 1-minute load average (None where the OS has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):
        return None


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
    backend = backend_for(build)
    if backend.simulated:
        spec = for_simulation(spec)
    elif spec.shared_buffers and not backend.shared_buffers:
        raise BenchError("shared buffers (SMPI_SHARED_MALLOC) exist only under simulation "
                         "(--mpi smpi)")
    elif spec.load is not None and not backend.load_in_launch:
        raise BenchError("load-generator ranks inside the measured launch are for simulation "
                         "(--mpi smpi); locally the generator runs beside it (colltune load)")
    # the library's algorithms that run beside native on communicators of their own
    shared = {a: libalgos.lib_cvars(build.mpi, spec.collective, a) for a in spec.algos
              if is_lib_spec(a)}
    missing = [a for a, cv in shared.items() if cv is None]
    if missing:
        raise BenchError(f"{', '.join(missing)}: {build.mpi.name}'s own algorithms need "
                         "launches of their own (run_bench plans them)")
    ours = [a for a in spec.algos if a not in shared]
    prog = ["--coll", spec.collective] + (["--algo", ",".join(ours)] if ours else [])
    for a, cv in shared.items():
        prog += ["--lib", a, "--cvars", " ".join(f"{k}={v}" for k, v in cv.items())]
    if shared:
        extra_env = {**(extra_env or {}), **libalgos.SHARED_LAUNCH_ENV}
    prog += ["--sizes", ",".join(map(str, spec.sizes)),
            "--reps", str(spec.reps), "--root", str(spec.root), "--dtype", spec.dtype,
            "--op", spec.op]
    if spec.rotate:
        prog += ["--rotate", str(spec.rotate)]
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
    sim = launch.current_simulation() if backend.simulated else None
    extras: dict[str, dict] = {}  # the probe's, the generator's and the placement lines

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
        seen = extras.get("placement")
        if seen is not None and sim is None:  # where MPI says the processes were
            rec["nodes_seen"], rec["ppn_seen"] = seen.get("nodes"), seen.get("ppn")
        probe = extras.get("probe")
        if probe is not None:
            rec["probe_us"] = probe.get("iter_wall_us")
            rec["probe_median_us"] = probe.get("median_us")
            rec["probe_iterations"] = probe.get("iterations")

    def _shared(rec: dict) -> dict:
        """A library algorithm run beside native: named as the library's."""
        if rec.get("spec") not in shared:
            return rec
        rec = _relabel(rec, build.mpi, spec.collective, rec["spec"], libalgos.SHARED_LAUNCH_ENV)
        rec["library_cvars"] = shared[rec["spec"]]
        return rec

    def record(rec: dict) -> None:
        if rec.get("kind") in EXTRA_KINDS:
            extras[rec["kind"]] = rec
            return
        rec["command"] = ln.command_line
        _mark(rec)
        on_record(_shared(rec))

    load_before = None if sim is not None else load_average()
    res = runner.run_launch(ln, name="benchmark", error=BenchError, timeout=timeout,
                            on_record=record if on_record is not None else None, check=False)
    load_after = None if sim is not None else load_average()
    if res.timed_out:
        raise BenchError(f"benchmark timed out after {timeout:.0f} s: {res.command}")
    records = []
    for rec in res.records:
        if rec.get("kind") in EXTRA_KINDS:
            extras[rec["kind"]] = rec
    for rec in res.records:
        if rec.get("kind") in EXTRA_KINDS:
            continue
        rec["command"] = res.command
        _mark(rec)
        if sim is None:  # the load seen during the launch (evidence.py: unstable)
            rec["load1_before"], rec["load1_after"] = load_before, load_after
        records.append(_shared(rec))
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


# ------------------------------------------------------------------ candidates


def expand_algos(build: Build, collective: str, specs: list[str]) -> list[str]:
    """Expand `all` (ours, native and the library's), `ours`, `ompi:all`, `mpich:all`,
    and parameter grids (`chain:segsize=4K..64K,fanout=2|4`: specs.expand_grid).

    Other specs pass through; duplicates are dropped, order is kept.
    """
    out: list[str] = []
    for s in specs:
        if s == "all":
            out += registry.names(build, collective) + libalgos.all_names(build.mpi, collective)
        elif s == "ours":
            out += [n for n in registry.names(build, collective) if n != "native"]
        elif is_lib_spec(s) and s.split(":", 1)[1] == "all":
            out += libalgos.library_all(build.mpi, collective, s)
        else:
            out += expand_grid(s)
    return list(dict.fromkeys(out))


def library_matched(build: Build, collective: str) -> list[str]:
    """The library's algorithms of `--algo all`, each that has a same-named colltune
    algorithm sharing a parameter (libalgos.MATCHED_KEYS: segsize, fanout, radix) forced
    with colltune's effective values (its defaults): `ompi:chain` ->
    `ompi:chain:segsize=8192,fanout=4`, so that the pair compares the algorithm, not two
    parameter choices. Empty for an MPI without a table."""
    ours = {a.name: {p["name"]: p["default"] for p in a.params}
            for a in registry.algorithms(build) if a.collective == collective}
    out = []
    for spec in libalgos.all_names(build.mpi, collective):
        algo, _ = libalgos.resolve(build.mpi, collective, spec)
        out.append(libalgos.matched_spec(build.mpi, collective, spec, ours.get(algo.name)))
    return out



# ------------------------------------------------------------------ launch plan
# (alternating launches of colltune's algorithms and the MPI library's own: libalgos)


@dataclass(frozen=True)
class PlannedLaunch:
    """One launch: colltune's algorithms (and native) together, or one library spec."""

    algos: tuple[str, ...]  # what the driver runs (--algo)
    library_spec: str | None  # the library spec this launch forces, or None
    rep: int  # repetition this launch belongs to (0-based)


def plan_launches(algos: list[str], reps: int, shared=()) -> list[PlannedLaunch]:
    """Group ours, `native` and the library specs in `shared` (those that run beside
    native on communicators of their own: libalgos.lib_cvars) into one launch, each
    other library spec into its own, and alternate them A B C A B C ... for `reps`
    rounds of one repetition each.

    Without library specs of their own there is one launch doing all `reps`
    repetitions itself (rep = -1), as plain `colltune bench` does.
    """
    if reps < 1:
        raise ValueError(f"reps {reps}: must be at least 1")
    algos = list(dict.fromkeys(algos))
    ours = tuple(a for a in algos if not is_lib_spec(a) or a in shared)
    lib = [a for a in algos if is_lib_spec(a) and a not in shared]
    if not lib:
        return [PlannedLaunch(ours, None, -1)] if ours else []
    round_: list[tuple[tuple[str, ...], str | None]] = []
    if ours:
        round_.append((ours, None))
    round_ += [(("native",), s) for s in lib]
    return [PlannedLaunch(a, s, r) for r in range(reps) for a, s in round_]


# -------------------------------------------------------------------- statistics


def _quantile(sorted_v: list[float], q: float) -> float:
    """Linear interpolation between sorted values (numpy's default method)."""
    if len(sorted_v) == 1:
        return sorted_v[0]
    pos = q * (len(sorted_v) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_v) - 1)
    return sorted_v[lo] + (pos - lo) * (sorted_v[hi] - sorted_v[lo])


STAT_FIELDS = ("rep_min_us", "mean_us", "median_us", "p90_us", "p99_us", "rep_max_us",
               "stddev_us")


def summarize(samples_us: list[float]) -> dict[str, float | int | None]:
    """min/mean/median/p90/p99/max/stddev (sample, divisor n-1) of per-repetition
    latencies, as colltune-bench defines them; all None (valid_reps 0) without samples."""
    if not samples_us:
        return {**{f: None for f in STAT_FIELDS}, "valid_reps": 0}
    v = sorted(float(x) for x in samples_us)
    r3 = lambda x: round(x, 3)  # noqa: E731 - the driver prints 3 decimals
    return {
        "rep_min_us": r3(v[0]), "mean_us": r3(statistics.fmean(v)),
        "median_us": r3(_quantile(v, 0.5)), "p90_us": r3(_quantile(v, 0.9)),
        "p99_us": r3(_quantile(v, 0.99)), "rep_max_us": r3(v[-1]),
        "stddev_us": r3(statistics.stdev(v) if len(v) > 1 else 0.0), "valid_reps": len(v),
    }


def _samples(rec: dict) -> list[float]:
    """Per-repetition samples of one launch's record: the driver's raw samples when it
    gives them, else its median (exact when the launch ran one repetition)."""
    raw = rec.get("samples_us")
    if raw is not None:
        return [float(x) for x in raw]
    if rec.get("median_us") is None:  # no valid sample in this launch
        return []
    return [float(rec["median_us"])]


def merge_records(records: list[dict], order: list[str] | None = None) -> list[dict]:
    """Merge records of several launches per (collective, spec, np, size).

    Statistics are recomputed over all repetitions; rank extremes (OSU's Min/Max
    Latency) are averaged over launches, weighted by timed calls; the
    first launch's other fields are kept. Output is ordered by np, size, then `order`
    (specs) or first appearance.
    """
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["collective"], r["spec"], r["np"], r["size"]), []).append(r)
    rank = {s: i for i, s in enumerate(order or [])}
    first_seen = {}
    for key in groups:
        first_seen.setdefault(key[1], len(first_seen))
    merged = []
    for key, recs in groups.items():
        out = dict(recs[0])
        samples = [x for r in recs for x in _samples(r)]
        out.update(summarize(samples))
        if any("samples_us" in r for r in recs):
            out["samples_us"] = samples
        # OSU's Min/Max Latency (a process's mean call time, smallest and largest over
        # processes) of the launches together: the launches' figures averaged, weighted
        # by their timed calls (the per-process means themselves are not in the records)
        for f in ("rank_min_us", "rank_max_us"):
            pairs = [(r[f], (r.get("iterations") or 1) * max(r.get("valid_reps") or 1, 1))
                     for r in recs if r.get(f) is not None]
            if pairs:
                out[f] = round(sum(v * w for v, w in pairs) / sum(w for _, w in pairs), 3)
        fb = [r["fallback"] for r in recs if r.get("fallback")]
        out["fallback"] = fb[0] if fb else out.get("fallback")
        if any("invalid" in r for r in recs):  # window timing: discarded samples
            out["invalid"] = sum(r.get("invalid") or 0 for r in recs)
        checked = [r["valid"] for r in recs if r.get("valid") is not None]
        if checked:  # --validate
            out["valid"] = all(checked)
        out["launches"] = len(recs)
        merged.append(out)
    merged.sort(key=lambda r: (r["np"], r["size"],
                               rank.get(r["spec"], len(rank) + first_seen[r["spec"]])))
    return merged


# ---------------------------------------------------------------------- running


def _relabel(rec: dict, mpi: MPI, collective: str, spec: str, env: dict[str, str]) -> dict:
    algo, values = libalgos.resolve(mpi, collective, spec)
    rec = dict(rec)
    rec["algorithm"] = algo.spec  # e.g. "ompi:binomial"
    rec["params"] = ",".join(f"{k}={v}" for k, v in values.items())
    rec["spec"] = spec
    rec["library"] = algo.library
    rec["library_algorithm"] = algo.lib_name
    rec["library_env"] = dict(env)
    return rec


def _one_rep_spec(spec: BenchSpec, algos: tuple[str, ...]) -> BenchSpec:
    changes: dict = {"algos": list(algos), "reps": 1}
    fields = {f.name for f in dataclasses.fields(spec)}
    if "raw" in fields:
        changes["raw"] = True  # per-repetition samples, where the driver offers them
    if "time_budget" in fields and getattr(spec, "time_budget", None):
        changes["time_budget"] = spec.time_budget / spec.reps  # the budget covers all reps
    return dataclasses.replace(spec, **changes)


Runner = Callable[..., tuple[list[dict], list[str]]]

# Candidate run first in every launch of an alternating plan, its records dropped: the
# first point of a fresh process pays for connection set-up and first touches (about
# 4x at 8 B with few warm-up calls), which would otherwise fall on the library's
# algorithm in every library launch. In a library launch it is the forced algorithm
# itself, in the launch of ours the library's default.
WARMUP_CANDIDATE = "native"


def _drop_warmup(records: list[dict]) -> list[dict]:
    """Drop, per size, the first record of the warm-up candidate (it runs first)."""
    seen: set = set()
    out = []
    for r in records:
        key = (r["collective"], r["np"], r["size"])
        if r["spec"] == WARMUP_CANDIDATE and key not in seen:
            seen.add(key)
            continue
        out.append(r)
    return out


def run_bench(build: Build, spec: BenchSpec, algos: list[str] | None = None, *,
              timeout: float = 3600,
              progress: Callable[[int, int, PlannedLaunch], None] | None = None,
              runner: Runner | None = None, check_table: bool = True,
              warm_up: bool = True,
              on_record: Callable[[dict], None] | None = None,
              on_merged: Callable[[list[dict]], None] | None = None
              ) -> tuple[list[dict], list[str]]:
    """Benchmark colltune's algorithms, `native` and library specs for one BenchSpec.

    `algos` defaults to spec.algos. Without library specs this is one bench.run call.
    With them, launches alternate (see plan_launches), each doing one repetition, and
    the records are merged (merge_records). With `warm_up`, every launch of such a
    plan first runs WARMUP_CANDIDATE, whose records are dropped. Library records carry
    algorithm="ompi:NAME" (or "mpich:NAME"), spec as given, params, library_env.
    Raises ValueError for a bad spec, bench.BenchError when a launch fails.
    `runner` replaces bench.run (tests). `on_record` gets each finished point as it
    comes when the plan is one launch; with alternating launches `on_merged` gets, after
    each launch, the points of the launches finished so far, merged (what an
    interruption keeps: Ctrl-C raises out of here, and the caller has them).
    """
    run_one = runner or run
    algos = list(dict.fromkeys(algos if algos is not None else spec.algos))
    mpi = build.mpi
    notes: list[str] = []
    envs: dict[str, dict[str, str]] = {}
    for a in algos:
        if is_lib_spec(a):
            envs[a] = libalgos.lib_env(mpi, spec.collective, a)  # ValueError before anything runs
    kept = []
    for a in algos:
        why = libalgos.skip_reason(mpi, spec.collective, a, spec.np) if a in envs else None
        if why:
            notes.append(why)
        else:
            kept.append(a)
    if envs and check_table and runner is None:
        problems = libalgos.table_problems(mpi, (spec.collective,))
        if problems:
            raise BenchError(
                f"colltune's {mpi.name} algorithm table does not match this {mpi.name} "
                f"{mpi.version}: " + "; ".join(problems))
    shared = {a for a in kept if a in envs
              and libalgos.lib_cvars(mpi, spec.collective, a) is not None}
    plan = plan_launches(kept, spec.reps, shared)
    if len(plan) == 1 and plan[0].library_spec is None:
        if progress:
            progress(0, 1, plan[0])
        kw = {"on_record": on_record} if on_record is not None and runner is None else {}
        recs, n = run_one(build, dataclasses.replace(spec, algos=list(plan[0].algos)),
                      timeout=timeout, **kw)
        return recs, notes + [x for x in n if x not in notes]
    records: list[dict] = []
    for i, planned in enumerate(plan):
        if progress:
            progress(i, len(plan), planned)
        sub = _one_rep_spec(spec, ((WARMUP_CANDIDATE,) if warm_up else ()) + planned.algos)
        if planned.library_spec is None:
            recs, n = run_one(build, sub, timeout=timeout)
        else:
            env = envs[planned.library_spec]
            recs, n = run_one(build, sub, timeout=timeout, extra_env=env)
        if warm_up:
            recs = _drop_warmup(recs)
        if planned.library_spec is not None:
            recs = [_relabel(r, mpi, spec.collective, planned.library_spec, env) for r in recs]
        notes += [x for x in n if x not in notes]
        records += recs
        if on_merged is not None:
            on_merged(_merged(records, kept, spec))
    return _merged(records, kept, spec), notes


def _merged(records: list[dict], order: list[str], spec: BenchSpec) -> list[dict]:
    """The points of an alternating plan's launches (merge_records), as run_bench gives
    them."""
    merged = merge_records(records, order)
    for r in merged:
        if not getattr(spec, "raw", False):
            r.pop("samples_us", None)  # asked for by us, not by the caller
        if getattr(spec, "time_budget", None) and "time_budget_s" in r:
            r["time_budget_s"] = spec.time_budget
    return merged
