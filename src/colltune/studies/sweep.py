"""Sweeps: run a study launch by launch into the results database.

A study expands into launch units: (collective, processes, mapping, rank order,
repetition, algorithm group). colltune's algorithms and `native` share one
launch (the driver interleaves them); so do Open MPI's own algorithms
(`ompi:NAME`: each on a communicator made under its MPI_T control variables,
libalgos.lib_cvars), while each of MPICH's (`mpich:NAME`) has a launch of its own,
because it is forced through process-wide environment variables. The units run in a shuffled order
(seeded; the seed is stored with the run) so that drift of the machine is spread
over all algorithms rather than biasing one.

Each unit's records are stored in one transaction, keyed by the study and the
unit's identity (everything that defines the launch). Running the same study
again skips the stored units: a sweep killed in the middle resumes with the unit
it was running. A failed or timed-out launch is stored in `failures` with its
error output and the sweep goes on. Ctrl-C (or SIGTERM, as from scancel) kills
the running launch, keeps what is stored and marks the run 'interrupted'.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import json
import os
import random
import shlex
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from colltune.base import paths
from colltune.drivers import bench as bench_mod
from colltune.results import db as db_mod
from colltune.results import reader
from colltune.mpi import launch
from colltune.mpi.backend import backend_for
from colltune.mpi.placement import LaunchError, Placement, capacity, cores, parse_hostfile
from colltune.base.specs import format_params, is_lib_spec
from colltune.studies.recorder import Recorder
from colltune.studies.study import Study, StudyError, fmt_ints, layouts
from colltune.studies.study import HEAT, STREAM, parse_heat_spec, resolve_algorithms
from colltune.drivers.loadgen import PROBE_SIZE
from colltune.mpi.platforms import resolve
from colltune.drivers import loadgen as workload
from colltune.mpi import libalgos
from colltune.drivers import heat as heat_mod

err = Console(stderr=True)


# ------------------------------------------------------------------------ plan


@dataclass(frozen=True)
class Unit:
    collective: str
    np: int
    mapping: str
    order: str
    repetition: int  # 1-based
    algos: tuple[str, ...]  # what the driver runs (--algo)
    library_spec: str | None  # the MPI library's algorithm this launch forces
    key: str  # identity within the study (the resume key)
    load: str | None = None  # load level (study.load), None: no load dimension
    nodes: int | None = None  # the layout (study.nodes), None: the launcher's spread

    @property
    def label(self) -> str:
        what = self.library_spec or (",".join(self.algos) if len(self.algos) <= 3
                                     else f"{len(self.algos)} algorithms")
        return (f"{self.collective} np={self.np} {self.mapping}/{self.order} "
                f"rep {self.repetition}" + (f" load {self.load}" if self.load else "")
                + (f" nodes {self.nodes}" if self.nodes else "")
                + f" [{what}]")


@dataclass
class Plan:
    study: Study
    build: object  # build.Build
    algorithms: dict[str, list[str]]
    processes: list[int]
    units: list[Unit]  # in run order
    seed: int
    shuffled: bool
    notes: list[str] = field(default_factory=list)
    lib_envs: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    platform: object = None  # platform.Platform of a simulated study (--mpi smpi)
    # launcher settings of the allocation, in every launch's environment (the agent and
    # network of `colltune cluster`: Placement.env)
    launch_env: tuple[tuple[str, str], ...] = ()

    def placement(self, unit: Unit) -> Placement:
        s = self.study
        return Placement(launcher=s.launcher, mapping=unit.mapping, order=unit.order,
                         hostfile=s.hostfile, nodes=unit.nodes, bind=s.bind,
                         env=self.launch_env)

    def env(self, unit: Unit) -> dict[str, str]:
        env = dict(self.study.env)
        if unit.library_spec:
            env.update(self.lib_envs[(unit.collective, unit.library_spec)])
        return env


_OPTIONAL_SPEC = {  # study field -> (BenchSpec field, value meaning "not used")
    "timing": ("timing", "osu"), "sleep_us": ("sleep_us", 0.0),
    "time_budget": ("time_budget", None), "validate": ("validate", False), "raw": ("raw", False),
}


def bench_spec(study: Study, unit: Unit) -> bench_mod.BenchSpec:
    fields = {f.name for f in dataclasses.fields(bench_mod.BenchSpec)}
    kw = dict(collective=unit.collective, algos=list(unit.algos), np=unit.np, sizes=study.sizes_of(unit.collective),
              iterations=study.iterations, warmup=study.warmup, reps=study.reps_per_launch,
              root=study.root, dtype=study.dtype, op=study.op)
    if "rotate" in fields:  # launches of one repetition: each starts with another candidate
        kw["rotate"] = max(unit.repetition - 1, 0)
    for name, (spec_field, unused) in _OPTIONAL_SPEC.items():
        value = getattr(study, name)
        if spec_field in fields:
            kw[spec_field] = value
        elif value != unused:
            raise StudyError(f"study.{name}: this colltune's benchmark driver does not support it")
    return bench_mod.BenchSpec(**kw)


def _unit_key(study: Study, build, coll, np, mapping, order, rep, algos, lib,
              hosts=None, load=None, platform=None, nodes=None) -> str:
    ident = {
        "collective": coll, "np": np, "mapping": mapping, "order": order, "repetition": rep,
        "algos": list(algos), "library": lib, "sizes": study.sizes_of(coll),
        "iterations": study.iterations, "warmup": study.warmup, "timing": study.timing,
        "reps_per_launch": study.reps_per_launch, "sleep_us": study.sleep_us,
        "time_budget": study.time_budget, "raw": study.raw, "validate": study.validate,
        "root": study.root, "dtype": study.dtype, "op": study.op, "env": study.env,
        "mpi": f"{build.mpi.kind}-{build.mpi.version}", "launcher": study.launcher,
        "nodes": nodes, "bind": study.bind,
    }
    if platform is not None:  # simulated: the platform, not this host, defines the point
        ident["platform"] = platform.name
        ident["platform_xml"] = hashlib.sha1(platform.xml().encode()).hexdigest()[:16]
        if getattr(platform, "compute", None):  # charged copies/reductions change the times
            ident["platform_compute"] = {k: list(v) for k, v in sorted(platform.compute.items())}
    elif study.launcher == "local":
        ident["host"] = socket.gethostname()
    elif hosts is not None:  # hostfile: the hosts it lists
        ident["hosts"] = hosts
    if load is not None:  # only then: the keys of studies without load stay as they were
        ident["load"] = load
        ident["load_level"] = study.load_levels.get(load)
        ident["probe_iterations"] = study.probe_iterations
        if study.probe_size != workload_probe_size():  # keys of the default stay as they were
            ident["probe_size"] = study.probe_size
    digest = hashlib.sha1(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:12]
    group = lib or "ours"
    where = f"/load-{load}" if load is not None else ""
    return f"{coll}/np{np}/{mapping}-{order}/rep{rep}{where}/{group}#{digest}"


def workload_probe_size() -> int:

    return PROBE_SIZE


def _capacity(study: Study) -> tuple[int, str | None]:
    """Slots the study's launcher has (for max_processes), and a note if guessed."""
    try:
        return capacity(Placement(launcher=study.launcher, hostfile=study.hostfile))[0], None
    except LaunchError:
        if study.launcher != "slurm":
            raise
        nodes = max(layouts(study), key=lambda n: n or 0) or study.sbatch.get("nodes") or 1
        per = study.sbatch.get("ntasks_per_node") or cores()
        return nodes * per, (f"not inside a Slurm allocation: assumed {nodes} node(s) x {per} "
                             "slots for planning")


def make_plan(study: Study, build, *, seed: int | None = None,
              shuffle: bool | None = None) -> Plan:
    """Check the study against the build and expand it into launch units."""
    algorithms = resolve_algorithms(study, build)
    backend = backend_for(build)
    for coll in study.collectives:  # unsupported options fail here, not at the first launch
        if coll != HEAT:
            spec = bench_spec(study, Unit(coll, 1, "core", "seq", 1, ("native",), None, ""))
            if backend.simulated:
                try:
                    bench_mod.for_simulation(spec)
                except bench_mod.BenchError as exc:
                    raise StudyError(f"study '{study.name}' under simulation: {exc}") from None
    notes: list[str] = []
    platform = None
    repetitions = study.repetitions
    if backend.simulated:
        if backend.local_only and study.launcher != "local":
            raise StudyError(f"study.launcher '{study.launcher}': a simulation (--mpi smpi) runs "
                             "here on its simulated platform; use launcher 'local'")
        if study.load:
            try:
                for n in study.load:
                    workload.sim_level(workload.LoadLevel(**study.load_levels[n]))
            except workload.LoadError as exc:
                raise StudyError(f"study.load under simulation: {exc}") from None
        platform = resolve(study.platform or launch.DEFAULT_PLATFORM)
        slots = platform.nodes * platform.cores_per_node
        note = None
        if repetitions > 1 and study.load:
            notes.append(f"simulated (platform '{platform.name}') with load: {repetitions} "
                         "repetitions kept, each launch's generator draws other pairings "
                         "(the times differ by the load, not by noise)")
        elif repetitions > 1 and backend.exact:
            notes.append(f"simulated (platform '{platform.name}'): times are deterministic, "
                         f"1 repetition instead of {repetitions}")
            repetitions = 1
        if HEAT in study.collectives and not backend.applications:
            notes.append("the heat application is not simulated: its launches are left out")
    else:
        slots, note = _capacity(study)
    if note:
        notes.append(note)
    processes, note = study.scaled_processes(slots)
    if note:
        notes.append(note)
    lib = None
    lib_envs: dict[tuple[str, str], dict[str, str]] = {}
    if any(is_lib_spec(a) for v in algorithms.values() for a in v):
        lib = libalgos
        if "extra_env" not in inspect.signature(bench_mod.run).parameters:
            raise StudyError("study.algorithms: ompi:/mpich: algorithms need bench.run(extra_env=)")
    bad_root = [p for p in processes if study.root >= p]
    if bad_root:
        notes.append(f"root {study.root} is not a rank at np={fmt_ints(bad_root)}: those launches "
                     "will fail (and be recorded as failed)")
    if len(layouts(study)) > 1 and study.launcher == "local" and platform is None:
        raise StudyError(f"study.nodes: layouts {layouts(study)} need nodes: launcher "
                         "'hostfile' or 'slurm', or mpi = 'smpi' (a simulated platform); "
                         "this machine is one node")
    hosts = None
    if study.launcher == "hostfile":
        hosts = [list(h) for h in parse_hostfile(study.hostfile).hosts]
    units: list[Unit] = []
    skipped: set[str] = set()
    for rep in range(1, repetitions + 1):
        for coll in study.collectives:
            if coll == HEAT and not backend.applications:
                continue
            ours = tuple(a for a in algorithms[coll] if not is_lib_spec(a))
            libs = [a for a in algorithms[coll] if is_lib_spec(a)]
            if libs and not backend.library_algorithms:
                skipped.add("the MPI libraries' own algorithms (ompi:, mpich:) are not "
                            "simulated: left out")
                libs = []
            for np in processes:
                for mapping in study.mapping:
                    for order in study.order:
                        groups: list[tuple[tuple[str, ...], str | None]] = []
                        beside: tuple[str, ...] = ()  # library algorithms in ours' launch
                        for spec in libs:
                            why = lib.skip_reason(build.mpi, coll, spec, np)
                            if why:
                                skipped.add(why)
                                continue
                            if ours and lib.lib_cvars(build.mpi, coll, spec) is not None:
                                beside += (spec,)
                                continue
                            lib_envs[(coll, spec)] = lib.lib_env(build.mpi, coll, spec)
                            groups.append((("native",), spec))
                        if coll == HEAT:  # one launch per configuration of the application
                            groups[:0] = [((h,), None) for h in ours]
                        elif ours:
                            groups.insert(0, (ours + beside, None))
                        for algos, spec, level, nodes in (
                                (a, sp, lv, nd) for a, sp in groups
                                for lv in (study.load or [None]) for nd in layouts(study)):
                            if nodes is not None and nodes > np:
                                skipped.add(f"layouts with more nodes than processes (nodes "
                                            f"{nodes} at np={np}) left out")
                                continue
                            key = _unit_key(study, build, coll, np, mapping, order, rep,
                                            algos, spec, hosts, level, platform, nodes)
                            units.append(Unit(coll, np, mapping, order, rep, algos, spec,
                                              key, level, nodes))
    notes += sorted(skipped)
    if study.load and study.launcher == "local" and platform is None:
        busy = [n for n in study.load if study.load_levels[n].get("np")]
        if busy:
            gen = max(study.load_levels[n]["np"] for n in busy)
            notes.append(f"load levels {', '.join(busy)}: the generator's {gen} processes run on "
                         f"this machine's {cores()} cores beside the measured ones; they "
                         "take CPU time as much as they load shared memory (docs/workload.md)")
    if study.launcher == "local" and platform is None:
        if "rr" in study.order:
            notes.append("order 'rr' is the same as 'seq' on one node (launcher 'local')")
        if "node" in study.mapping:
            notes.append("mapping 'node' is the same as 'core' on one node (launcher 'local')")
    if seed is None:
        seed = study.seed if study.seed is not None else random.SystemRandom().randrange(2**31)
    shuffled = study.shuffle if shuffle is None else shuffle
    if shuffled:
        random.Random(seed).shuffle(units)
    return Plan(study, build, algorithms, processes, units, seed, shuffled, notes, lib_envs,
                platform)


# ------------------------------------------------------------------- running


@dataclass
class Outcome:
    run_id: int
    status: str  # done, interrupted
    planned: int
    skipped: int  # stored before this run, or by another sweep while it ran (others)
    done: int = 0
    failed: int = 0
    points: int = 0
    invalid: int = 0
    seconds: float = 0.0
    round: int = 1
    others: int = 0  # launches another sweep stored while this one measured them
    last: str = ""  # what the last launch gave, for the log
    last_s: float = 0.0


def _relabel(rec: dict, plan: Plan, unit: Unit, env: dict[str, str]) -> dict:

    algo, values = libalgos.resolve(plan.build.mpi, unit.collective, unit.library_spec)
    rec = dict(rec)
    rec["algorithm"] = algo.spec
    rec["params"] = format_params(values)
    rec["spec"] = unit.library_spec
    rec["library"] = algo.library
    rec["library_algorithm"] = algo.lib_name
    rec["library_env"] = env
    return rec


def _fmt_eta(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


# What defines the points of a study: when one of these changes under the same
# name, the points of a round would mix two studies.
DEFINING_KEYS = ("collectives", "algorithms", "sizes", "processes", "repetitions", "mapping",
                 "order", "iterations", "warmup", "timing", "reps_per_launch", "sleep_us",
                 "time_budget", "root", "dtype", "op", "heat", "max_processes", "env", "load",
                 "load_levels", "probe_iterations", "probe_size")


def definition_changes(conn, study: Study) -> tuple[list[str], int]:
    """How the study stored under this name differs from `study` in what defines its
    points, and its latest round holding points ([] when nothing is stored or
    nothing defining changed)."""
    sid = reader.study_id(conn, study.name)
    if sid is None:
        return [], 0
    rnd = reader.latest_round(conn, sid)
    if not reader.stored_unit_keys(conn, sid, rnd):
        return [], rnd
    definition = reader.study_definition(conn, sid)
    try:
        old = json.loads(definition) if definition else None
    except ValueError:
        old = None
    if not isinstance(old, dict):
        return [], rnd
    new = json.loads(json.dumps(study.definition()))
    changes = []
    for k in DEFINING_KEYS:
        if k not in old or old.get(k) == new.get(k):
            continue
        a, b = old.get(k), new.get(k)
        if k == "algorithms" and isinstance(a, dict) and isinstance(b, dict):
            for coll in sorted(set(a) | set(b)):
                was, now = a.get(coll) or [], b.get(coll) or []
                added = [x for x in now if x not in was]
                removed = [x for x in was if x not in now]
                if added or removed:
                    changes.append(f"{coll} algorithms" + (f" added {', '.join(added)}" if added
                                                           else "")
                                   + (";" if added and removed else "")
                                   + (f" removed {', '.join(removed)}" if removed else ""))
        else:
            changes.append(f"{k} {a} -> {b}")
    return changes, rnd


def _holder_text(other: dict) -> str:
    pid, host, started = other.get("pid"), other.get("host"), other.get("started")
    if not pid:
        return "another process"
    where = f" on {host}" if host and host != socket.gethostname() else ""
    return f"pid {pid}{where}" + (f", started at {started}" if started else "")


@contextlib.contextmanager
def sweep_lock(db_path: str | Path, study: str, *, wait: bool = True,
               console: Console | None = None):
    """One sweep of a study into a database at a time: two at once would share the
    cores (the points measuring each other) and measure the same launches twice.
    A lock per (database, study) in colltune's cache (paths.held_lock: it goes when
    the process ends, however it ends). Taken: with `wait` say so and wait for it,
    else raise StudyError (exit 2) naming who holds it."""
    db = Path(db_path).expanduser().resolve()
    key = hashlib.sha256(f"{db}\0{study}".encode()).hexdigest()[:20]
    me = {"pid": os.getpid(), "host": socket.gethostname(), "started": db_mod.now(),
          "study": study, "db": str(db)}

    def busy(other: dict) -> None:
        who = _holder_text(other)
        if not wait:
            raise StudyError(f"a sweep of study '{study}' into {db} is running ({who}): let it "
                             "finish, or leave out --no-wait to resume the study after it")
        (console or err).print(f"waiting for the sweep of study '{study}' into {db} ({who}) "
                               "to finish; Ctrl-C to stop", highlight=False, markup=False,
                               soft_wrap=True)

    with paths.held_lock(f"sweep-{key}", me, wait=wait, busy=busy):
        yield


def execute(plan: Plan, conn, *, argv: list[str] | None = None, new_round: bool = False,
            retry_failed: bool = True, console: Console | None = None,
            progress: bool | None = None, jobs: int = 1) -> Outcome:
    """Run the plan's units that are not stored yet; store each as it finishes.

    `jobs` > 1 (simulated studies only): that many launches at once, in threads; each
    is stored (in this thread) as it finishes. A simulated time does not depend on
    what else the machine runs, so launches side by side give the points they give
    alone; measured ones would disturb each other's timings (ValueError).

    Returns when all ran or on Ctrl-C/SIGTERM (status 'interrupted'; the launches
    that were running are killed and not stored).
    """
    if jobs < 1:
        raise ValueError(f"jobs {jobs}: at least 1")
    if jobs > 1 and not backend_for(plan.build).parallel_launches:
        raise ValueError("launches side by side are for simulated studies (--mpi smpi): "
                         "measured ones would disturb each other's timings")
    console = console or err
    study, build = plan.study, plan.build
    rec = Recorder(conn, study.name, study.definition(), study.description, study.source)
    stale = rec.mark_stale()
    if stale:
        console.print(f"earlier run(s) {', '.join(map(str, stale))} of '{study.name}' ended "
                      "without finishing: marked 'aborted'", highlight=False)
    rnd = rec.latest_round() + (1 if new_round else 0)
    skip = rec.stored_keys(rnd)
    if not retry_failed:
        skip |= rec.stored_keys(rnd, failed=True)
    pending = [u for u in plan.units if u.key not in skip]
    run_id = rec.start(
        kind="sweep", mpi=build.mpi, launcher=study.launcher,
        command_line=argv or sys.argv, definition=study.definition(), seed=plan.seed,
        shuffled=plan.shuffled, round=rnd, units_planned=len(plan.units),
        units_skipped=len(plan.units) - len(pending), env={**os.environ, **study.env},
        notes=plan.notes, platform=plan.platform)
    oc = Outcome(run_id, "running", len(plan.units), len(plan.units) - len(pending), round=rnd)
    for n in plan.notes:
        console.print(f"note: {n}", highlight=False, markup=False)
    if oc.skipped:
        console.print(f"resuming '{study.name}' (round {rnd}): {oc.skipped} of {oc.planned} "
                      "launches already stored", highlight=False)
    t_start = time.monotonic()
    first_command = None
    use_bar = console.is_terminal if progress is None else progress
    bar = task = None
    if use_bar and pending:
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)

        bar = Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                       MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("eta"),
                       TimeRemainingColumn(), console=console, transient=False,
                       speed_estimate_period=3600)
        bar.start()
        task = bar.add_task(study.name, total=len(pending))
    log = bar.console.print if bar else console.print

    def describe(unit: Unit | None) -> None:
        if bar:
            what = (escape(unit.label) if unit is not None
                    else f"{study.name}, {jobs} launches at a time")
            bar.update(task, description=what + (f" [red]{oc.failed} failed[/]"
                                                  if oc.failed else ""))

    try:
        describe(pending[0] if pending and jobs <= 1 else None)
        # closed on the way out: launches still running side by side are stopped
        with contextlib.closing(_run_units(plan, pending, rnd, jobs)) as finished:
            for i, (unit, got) in enumerate(finished):
                _store_unit(plan, rec, unit, got, oc, log)
                if first_command is None and got.command:
                    first_command = got.command
                    rec.command(first_command)
                if i + 1 < len(pending):
                    describe(pending[i + 1] if jobs <= 1 else None)
                if bar:
                    bar.advance(task)
                else:
                    done = i + 1
                    el = time.monotonic() - t_start
                    eta = el / done * (len(pending) - done)
                    log(f"[{done}/{len(pending)}] {unit.label}: {oc.last} ({oc.last_s:.1f} s; "
                        f"eta {_fmt_eta(eta)})", highlight=False, markup=False)
        oc.status = "done"
    except KeyboardInterrupt:
        oc.status = "interrupted"
    finally:
        if bar:
            bar.stop()
        oc.seconds = time.monotonic() - t_start
        try:
            rec.finish(oc.status if oc.status != "running" else "failed")
        except KeyboardInterrupt:  # a second Ctrl-C while closing: try once more
            rec.finish("interrupted")
    return oc


@dataclass
class Launched:
    """What one launch gave (`_launch_unit`), before it is stored."""

    records: list[dict]
    notes: list[str]
    error: str | None
    started: str
    seconds: float
    command: str | None
    nodes: int | None
    ppn: int | None
    result: object | None  # launch.Result of the last launch, if any


def _launch_unit(plan: Plan, unit: Unit, rnd: int) -> Launched:
    """Run one unit's launch (in any thread: it touches no database)."""
    study = plan.study
    env = plan.env(unit)
    spec = bench_spec(study, unit) if unit.collective != HEAT else None
    started = db_mod.now()
    t0 = time.monotonic()
    err_text = None
    records: list[dict] = []
    notes: list[str] = []
    load_info: dict | None = None
    sim_cfg: tuple[str, ...] = ()
    if plan.platform is not None and unit.load is not None:

        # the generator and the probe run inside the measured launch (docs/workload.md)
        spec = dataclasses.replace(spec, load=workload.sim_load(
            workload.LoadLevel(**study.load_levels[unit.load]), unit.key, rnd,
            study.probe_iterations, study.probe_size))
        sim_cfg = workload.SIM_CFG
    sim = (launch.simulate(plan.platform, sim_cfg) if plan.platform is not None
           else contextlib.nullcontext())
    with sim, launch.session(plan.placement(unit)) as sess:
        try:
            if unit.load is not None and plan.platform is not None:
                load_info = {"level": workload.LoadLevel(**study.load_levels[unit.load]),
                             "background": None, "probe": None}
            elif unit.load is not None:  # the generator (if any) and the probe first
                load_info = _start_load(plan, unit)
            if unit.collective == HEAT:
                records, notes = _run_heat(plan, unit, env)
            else:
                kwargs = {"extra_env": env} if env else {}
                records, notes = bench_mod.run(plan.build, spec, timeout=study.timeout, **kwargs)
            if load_info is not None:
                _finish_load(load_info, records, notes)
        except (bench_mod.BenchError, LaunchError, OSError, ValueError,
                RuntimeError) as exc:
            err_text = str(exc) or type(exc).__name__
    ln = sess.launches[-1] if sess.launches else None
    if err_text is None and unit.library_spec:
        records = [_relabel(r, plan, unit, env) for r in records]
    nodes, ppn = (ln.nodes, ln.ppn) if ln else (None, None)
    seen = next(((r["nodes_seen"], r["ppn_seen"]) for r in records
                 if r.get("nodes_seen") and r.get("ppn_seen")), None)
    if seen is not None and ln is not None and seen != (nodes, ppn):
        # what the launch really got is stored (the launcher placed otherwise than asked)
        notes = list(notes) + [f"placement asked: {nodes} node(s), at most {ppn} a node; MPI "
                               f"saw {seen[0]} node(s), at most {seen[1]} a node: stored as "
                               "seen"]
        nodes, ppn = seen
    return Launched(records, notes, err_text, started, time.monotonic() - t0,
                    ln.shell_command if ln else None, nodes, ppn,
                    sess.results[-1] if sess.results else None)


def _store_unit(plan: Plan, rec: Recorder, unit: Unit, got: Launched, oc: Outcome,
                log) -> None:
    """Store one launch's records, or its failure, and count it in `oc`."""
    study = plan.study
    env = plan.env(unit)
    res, seconds = got.result, got.seconds
    common = dict(collective=unit.collective, np=unit.np, nodes=got.nodes, ppn=got.ppn,
                  mapping=unit.mapping, rank_order=unit.order, repetition=unit.repetition,
                  library_spec=unit.library_spec)
    if got.error is None:
        records = got.records
        try:
            rec.unit(key=unit.key, algorithms=list(unit.algos), command=got.command, env=env,
                     notes=got.notes, started_at=got.started, seconds=seconds,
                     records=records, **common)
        except db_mod.IntegrityError:  # a sweep that held no lock of this one (sweep_lock)
            oc.skipped += 1
            oc.others += 1
            oc.last, oc.last_s = "already stored by another sweep", seconds
            return
        oc.done += 1
        oc.points += len(records)
        bad = bench_mod.validation_failures(records) if study.validate else []
        oc.invalid += len(bad)
        oc.last = f"{len(records)} points" + (f", {len(bad)} INVALID" if bad else "")
        oc.last_s = seconds
    else:
        err_text = got.error
        rec.failure(key=unit.key, algorithms=list(unit.algos), command=got.command,
                    returncode=res.returncode if res else None,
                    timed_out=bool(res and res.timed_out), error=err_text,
                    stderr=res.stderr if res else "", stdout=res.stdout if res else "",
                    started_at=got.started, seconds=seconds, **common)
        oc.failed += 1
        first = err_text.strip().splitlines()[0] if err_text.strip() else "failed"
        oc.last, oc.last_s = f"FAILED: {first[:200]}", seconds
        log(f"[red]launch failed[/] {escape(unit.label)}: {escape(first[:300])}", highlight=False)


def _run_units(plan: Plan, units: list[Unit], rnd: int, jobs: int):
    """(unit, Launched) for each unit as it finishes: one after the other in the
    plan's order, or `jobs` launches at once in threads, largest first (simulations
    only). On Ctrl-C/SIGTERM the launches running are stopped (launch.cancel_all)
    before the interrupt goes on."""
    if jobs <= 1:
        for unit in units:
            yield unit, _launch_unit(plan, unit, rnd)
        return
    # the largest first (most processes, then most algorithms), so that the last
    # launches to start are short ones: the order of simulations changes no time
    units = sorted(units, key=lambda u: (u.np, len(u.algos)), reverse=True)
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="colltune-launch")
    try:
        with launch.interrupt_on_term():
            futures = {pool.submit(_launch_unit, plan, u, rnd): u for u in units}
            for fut in as_completed(futures):
                yield futures[fut], fut.result()
    except BaseException:
        launch.cancel_all()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        launch.clear_cancel()


def _start_load(plan: Plan, unit: Unit) -> dict:
    """A launch of a study with load levels: the level's generator started in the
    background (it runs until the launch session ends), then the probe; what they were
    and what the probe measured."""

    level = workload.LoadLevel(**plan.study.load_levels[unit.load])
    bg = None
    if not level.quiet:
        bg = workload.start_generator(plan.build, level, plan.placement(unit))
    rec = workload.probe(plan.build, unit.np, plan.study.probe_iterations, plan.study.probe_size,
                         timeout=plan.study.timeout)
    return {"level": level, "background": bg, "probe": rec}


def _finish_load(info: dict, records: list[dict], notes: list[str]) -> None:
    """Stop the generator, check it ran all along, put the probe on every record."""

    bg, level, rec = info["background"], info["level"], info["probe"]
    if bg is not None:
        if not bg.running():
            res = bg.bg.stop()
            raise workload.LoadError("the load generator ended before the measurement did: "
                                     + launch.failure_message("colltune-load", res))
        stats = bg.stop()
        sent = (f"; it sent {stats['bytes'] / 1e6:.0f} MB in {stats['elapsed_s']:.1f} s, busy "
                f"{stats['busy_fraction']:.0%}" if stats else "")
        notes.append(f"load {level.name}: {level.describe()}{sent} ({bg.launch.command_line})")
    if rec is None:  # simulated: the probe ran inside the launch (bench.SimLoad)
        for r in records:
            r["load_level"] = level.name
        return
    for r in records:
        r["load_level"] = level.name
        r["probe_us"] = rec.get("iter_wall_us")  # the load index (docs/workload.md)
        r["probe_median_us"] = rec.get("median_us")
        r["probe_iterations"] = rec.get("iterations")


def _run_heat(plan: Plan, unit: Unit, env: dict[str, str]) -> tuple[list[dict], list[str]]:
    """One launch of the heat application, as one measurement record.

    The record reuses the measurement columns: algorithm = the variant, params =
    grid/decomp/iterations, size = bytes of the grid (8 per cell), every latency
    statistic = the run's wall time (slowest rank) in µs, one sample. `heat_*`
    fields carry GFLOP/s and the split of the time (docs/heat.md)."""

    variant, kv = parse_heat_spec(unit.algos[0])
    if variant == STREAM:
        return _run_stream(plan, unit, int(kv["elements"]))
    rows, cols = (int(x) for x in kv["grid"].split("x"))
    hs = heat_mod.HeatSpec(np=unit.np, rows=rows, cols=cols, iterations=int(kv["iterations"]),
                           decomp=kv["decomp"], variant=variant, seed=plan.seed)
    old_env = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the heat launcher takes no extra environment of its own
    try:
        rec, _reports, notes = heat_mod.run_heat(plan.build, hs, timeout=plan.study.timeout)
    finally:
        for k, v in old_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    t_us = rec["time_s"] * 1e6
    out = {
        "collective": HEAT, "algorithm": variant, "spec": unit.algos[0],
        "params": f"grid={rows}x{cols},decomp={kv['decomp']},iterations={kv['iterations']}",
        "np": unit.np, "size": rows * cols * 8, "root": 0, "dtype": "double", "op": "max",
        "timing": "wall", "iterations": rec.get("iterations_done"), "warmup": 0,
        "rep_min_us": t_us, "mean_us": t_us, "median_us": t_us, "p90_us": t_us, "p99_us": t_us,
        "rep_max_us": t_us, "stddev_us": 0.0, "valid_reps": 1, "invalid": 0,
        "rank_min_us": rec.get("time_s_mean", rec["time_s"]) * 1e6, "rank_max_us": t_us,
        "mpi": rec.get("mpi"), "command": rec.get("command"),
        "heat_gflops": rec.get("gflops"), "heat_comp_s": rec.get("comp_s_max"),
        "heat_halo_s": rec.get("halo_s_max"), "heat_coll_s": rec.get("coll_s_max"),
        "heat_pgrid": rec.get("pgrid"),
    }
    return [out], notes


def _run_stream(plan: Plan, unit: Unit, elements: int) -> tuple[list[dict], list[str]]:
    """The memory bandwidth at this process count (colltune-stream, triad), as one
    measurement record of the heat study: algorithm 'stream', size = bytes one triad
    moves on all processes together (24 per element and process), every latency
    statistic = the best triad time in µs, so size / median_us is the bandwidth; the
    record's `stream_GBps` says it directly (in `extra`)."""

    rec, notes = heat_mod.run_stream(plan.build, heat_mod.StreamSpec(np=unit.np,
                                                                     elements=elements),
                                     timeout=plan.study.timeout)
    t_us = rec["best_s"] * 1e6
    moved = rec.get("bytes_per_element", 24) * rec["elements"] * unit.np
    return [{
        "collective": HEAT, "algorithm": STREAM, "spec": unit.algos[0],
        "params": f"elements={rec['elements']}", "np": unit.np, "size": moved, "root": 0,
        "dtype": "double", "op": "triad", "timing": "wall", "iterations": rec.get("reps"),
        "warmup": 0, "rep_min_us": t_us, "mean_us": rec["avg_s"] * 1e6, "median_us": t_us,
        "p90_us": t_us, "p99_us": t_us, "rep_max_us": rec["max_s"] * 1e6, "stddev_us": 0.0,
        "valid_reps": 1, "invalid": 0, "mpi": rec.get("mpi"), "command": rec.get("command"),
        "stream_GBps": rec.get("triad_GBps"),
    }], notes


# ----------------------------------------------------------------- batch scripts


def sbatch_script(study: Study, *, study_arg: str, db_path: Path, mpi: str | None,
                  workdir: Path, python: str | None = None) -> str:
    """A Slurm batch script that runs the study inside its allocation (launcher slurm)."""
    sb = study.sbatch
    nodes = sb.get("nodes") or max(layouts(study), key=lambda n: n or 0) or 1
    name = f"colltune-{study.name}"
    lines = ["#!/bin/bash", f"#SBATCH --job-name={name}", f"#SBATCH --nodes={nodes}"]
    if sb.get("ntasks_per_node"):
        lines.append(f"#SBATCH --ntasks-per-node={sb['ntasks_per_node']}")
    else:
        lines.append(f"#SBATCH --ntasks={max(study.processes)}")
    for k in ("time", "partition", "account", "qos"):
        if sb.get(k):
            lines.append(f"#SBATCH --{k}={sb[k]}")
    if sb.get("exclusive", True):
        lines.append("#SBATCH --exclusive")
    lines += [f"#SBATCH --output={name}-%j.out",
              "#SBATCH --signal=B:INT@120"]
    lines += [f"#SBATCH {o}" for o in sb.get("options", [])]
    cmd = [python or sys.executable, "-m", "colltune", "sweep", *shlex.split(study_arg),
           "--launcher", "slurm", "--db", str(db_path)]
    if mpi:
        cmd += ["--mpi", mpi]
    lines += [
        "",
        f"# Written by `colltune sweep --emit-sbatch` on {db_mod.now()} for study "
        f"'{study.name}'.",
        "# Submit with `sbatch THIS_FILE`. Every launch is an `srun` inside this allocation;",
        "# results go to the database below, one transaction per launch. Submitting the",
        "# script again (after a time-out, a crash or scancel) runs only what is not stored.",
        "# --signal=B:INT@120 asks the sweep to stop cleanly two minutes before the time limit.",
        "set -euo pipefail",
        f"cd {shlex.quote(str(workdir))}",
        "exec " + shlex.join(cmd),
        "",
    ]
    return "\n".join(lines)
