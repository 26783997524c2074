"""`bench`: latency of algorithms, interleaved in one launch per process count, and
the records stored (drivers/bench.py measures; this is the job around it: the
candidates expanded and checked, the specs, simulation, the progress, the storing)."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

from colltune.base.specs import is_lib_spec, split_specs
from colltune.base.units import fmt_size
from colltune.drivers import bench as bench_mod
from colltune.drivers import registry
from colltune.mpi import launch, libalgos, placement
from colltune.mpi.backend import backend_for
from colltune.mpi.build import build_for
from colltune.mpi.platforms import resolve
from colltune.results import store
from . import Progress, WorkflowError, progress_or_quiet


@dataclass
class BenchPlan:
    build: object
    platform: object | None  # the simulated platform, None when measured
    specs: list  # bench_mod.BenchSpec, one per process count
    candidates: list[str]

    @property
    def title(self) -> str:
        """What the points are, for the tables' titles."""
        if self.platform is None:
            return self.build.mpi.banner
        return (f"SIMULATED with {self.build.mpi.banner} on platform '{self.platform.name}', "
                "not measurements")

    @property
    def cores(self) -> int | None:
        """The machine's cores (None simulated: no cores to share in a simulation)."""
        return placement.cores() if self.platform is None else None


def plan(coll: str, algos: str, nps: list[int], sizes: list[int], *,
         mpi_spec: str | None = None, platform_spec: str | None = None,
         iterations: int | None = None, warmup: int | None = None, reps: int | None = None,
         root: int = 0, dtype: str = "char", op: str = "sum", timing: str = "auto",
         sleep_us: float = 0.0, time_budget: float | None = None, validate: bool = False,
         raw: bool = False, align: int | None = None,
         progress: Progress | None = None) -> BenchPlan:
    """The build, the candidates (all / ours / ompi:all ... expanded, each checked) and
    one BenchSpec per process count; simulated on `platform_spec` with --mpi smpi."""
    progress = progress_or_quiet(progress)
    b = build_for(mpi_spec)
    plat = None
    backend = backend_for(b)
    if backend.simulated:
        plat = resolve(platform_spec or launch.DEFAULT_PLATFORM)
    elif platform_spec:
        raise WorkflowError("--platform is for simulation: add --mpi smpi")
    if reps is None:
        reps = backend.default_reps
    try:
        cands = bench_mod.expand_algos(b, coll, split_specs(algos))  # all / ours / ompi:all
        for s in cands:
            if is_lib_spec(s):
                libalgos.lib_env(b.mpi, coll, s)  # validates: library, name, parameters
    except ValueError as exc:
        raise WorkflowError(str(exc)) from None
    registry.check_specs(b, coll, [s for s in cands if not is_lib_spec(s)])
    specs = [bench_mod.BenchSpec(coll, cands, np, sizes, iterations, warmup, reps,
                                 root, dtype, op, timing=timing, sleep_us=sleep_us,
                                 time_budget=time_budget, validate=validate, raw=raw,
                                 align=align)
             for np in nps]
    if plat is not None:
        specs = [bench_mod.for_simulation(s) for s in specs]
        progress.say(f"simulating on platform '{plat.name}' with {b.mpi.banner}: simulated "
                     "times, not measurements")
    if plat is None and not backend.simulated:
        _note_defaults(progress, timing, nps)
    _warn_large(progress, coll, sizes, nps, validate, len(cands), reps, iterations)
    return BenchPlan(b, plat, specs, cands)


@dataclass
class BenchRun:
    records: list[dict]
    interrupted: bool


def measure(p: BenchPlan, progress: Progress | None = None) -> BenchRun:
    """Every process count of the plan; Ctrl-C (or SIGTERM) stops the running launch and
    keeps the points measured so far (BenchRun.interrupted)."""
    progress = progress_or_quiet(progress)
    records: list[dict] = []
    try:
        with launch.simulate(p.platform) if p.platform is not None else contextlib.nullcontext():
            _run(p.build, p.specs, records, progress)
    except KeyboardInterrupt:
        progress.say(f"[yellow]interrupted[/]: keeping the {len(records)} points measured so "
                     "far")
        return BenchRun(records, True)
    return BenchRun(records, False)


def store_records(p: BenchPlan, run: BenchRun, db_path, argv: list[str]) -> int:
    """The records into the results database as a run of their own; its id."""
    return store.store_bench(run.records, mpi=p.build.mpi, path=db_path, argv=argv,
                             notes=["interrupted"] if run.interrupted else None,
                             platform=p.platform,
                             status="interrupted" if run.interrupted else "done")


def bench(coll: str, algos: str, nps: list[int], sizes: list[int], *, db_path=None,
          argv: list[str] | None = None, progress: Progress | None = None,
          **options) -> tuple[BenchPlan, BenchRun, int | None]:
    """plan -> measure -> store_records (when `db_path`): the plan, what was measured and
    the run's id in the database. `options`: those of `plan` (mpi_spec, iterations,
    reps, timing, validate, ...)."""
    p = plan(coll, algos, nps, sizes, progress=progress, **options)
    run = measure(p, progress)
    run_id = None
    if db_path is not None and run.records:
        run_id = store_records(p, run, db_path, argv or ["colltune", "bench"])
    return p, run, run_id


def validation_failures(records: list[dict]) -> list[dict]:
    """The records whose result differed from the MPI library's."""
    return bench_mod.validation_failures(records)


def _run(b, specs: list[bench_mod.BenchSpec], kept: list[dict], progress: Progress) -> None:
    """Run every process count; finished points go into `kept` as they come, so that
    an interruption keeps them."""
    host = os.uname().nodename
    seen_np: set[int] = set()
    per_np = [len(s.sizes) * len(s.algos) for s in specs]
    with progress.bar(sum(per_np)) as prog:
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
                raise WorkflowError(str(exc)) from None
            for r in recs:
                r["host"] = host
            if notes and spec.np not in seen_np:
                seen_np.add(spec.np)
                prog.note("note: " + "; ".join(notes))
            del kept[len(kept) - len(live):]  # streamed copies, replaced by the final ones
            kept.extend(recs)
            base += n
            prog.set(base, label, force=True)


def _warn_large(progress: Progress, coll: str, sizes: list[int], nps: list[int], validate: bool,
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
    progress.say(f"[yellow]warning:[/] {text}")


LARGE_SIZE = 256 << 20  # buffers from this size on get a warning before the launch


def _note_defaults(progress: Progress, timing: str, np_list: list[int]) -> None:
    """One line: bench and sweep measure differently by default (docs/benchmarking.md,
    'bench and sweep measure differently')."""
    used = "/".join(dict.fromkeys(bench_mod.resolve_timing(timing, n) for n in np_list))
    progress.say(f"note: bench times with {used} (--timing {timing}) under the MPI library's "
              "default placement; sweep studies time with osu and bind each process to a "
              "core (study keys timing, bind): their points are not comparable")
