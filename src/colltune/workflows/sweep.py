"""`sweep`: a study (file or preset) run launch by launch into the results database
(studies.sweep does the launches and the storing; this is the job around it: the
study and its overrides, the build, the plan, the checks before anything launches,
the one lock of the study, the comparison with what is stored)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from colltune.base.errors import ColltuneError
from colltune.base.files import write_atomic
from colltune.mpi import cluster as cluster_mod
from colltune.mpi import launch
from colltune.mpi.backend import backend_for
from colltune.mpi.build import build_for
from colltune.mpi.placement import LaunchError, check_process_counts, slurm_allocation
from colltune.results import db as db_mod
from colltune.results import reader
from colltune.studies.study import (HEAT, Study, StudyError, combine, fmt_ints, load,
                                    preset_names, read_preset, resolve_algorithms)
from colltune.studies.sweep import (Outcome, Plan, definition_changes, execute, make_plan,
                                    sbatch_script, sweep_lock)
from . import Progress, WorkflowError, progress_or_quiet


def load_study(study_file: str | None, preset: str | None, mpi_spec: str | None = None) -> Study:
    """The study of a file or a preset; a file's mistakes all listed (StudyError), its
    algorithm names checked against the build too when the MPI is at hand."""
    if bool(study_file) == bool(preset):
        raise WorkflowError("give a study file or --preset NAME (presets: "
                            + ", ".join(preset_names()) + ")")
    try:
        return read_preset(preset) if preset else load(study_file)
    except StudyError as exc:
        raise _with_algorithm_errors(exc, mpi_spec) from None


def _with_algorithm_errors(exc: StudyError, mpi_spec: str | None) -> StudyError:
    s = exc.study
    if s is None or not s.algorithms:
        return exc
    s = dataclasses.replace(s, collectives=[c for c in s.collectives
                                            if c != HEAT and c in s.algorithms])
    try:
        resolve_algorithms(s, build_for(mpi_spec or s.mpi, auto_install=False))
    except StudyError as more:
        return combine(exc, more)
    except (ColltuneError, OSError):  # no build to check against: the mistakes so far
        pass
    return exc


def placed(study: Study, *, name: str | None = None, nps=None, launcher: str | None = None,
           hostfile: str | None = None, on_cluster: bool = False
           ) -> tuple[Study, dict[str, str] | None]:
    """The study with the command's overrides (--name, --np, --launcher, --hostfile,
    --cluster), and the launch environment of `colltune cluster up` (--cluster)."""
    if name:
        study = dataclasses.replace(study, name=name)
    if nps:
        study = dataclasses.replace(study, processes=list(nps), max_processes=None)
    launch_env = None
    if on_cluster:
        if launcher or hostfile:
            raise WorkflowError("--cluster is a hostfile launch of its own: leave out "
                                "--launcher/--hostfile")
        cp = cluster_mod.placement()
        launch_env = cp.env
        study = dataclasses.replace(study, launcher="hostfile", bind=False,
                                    hostfile=cp.hostfile)
    if hostfile:
        launcher = launcher or "hostfile"
        if launcher != "hostfile":
            raise WorkflowError("--hostfile goes with --launcher hostfile")
        study = dataclasses.replace(study, launcher="hostfile",
                                    hostfile=str(Path(hostfile).resolve()))
    elif launcher:
        if launcher == "hostfile" and not study.hostfile:
            raise WorkflowError("--launcher hostfile needs --hostfile PATH (or `hostfile` in "
                                "the study)")
        study = dataclasses.replace(study, launcher=launcher,
                                    hostfile=study.hostfile if launcher == "hostfile" else None)
    return study, launch_env


def write_sbatch(study: Study, path: str | Path, *, study_arg: str, db_path: Path,
                 mpi: str | None) -> None:
    """A Slurm batch script that runs this sweep with srun."""
    text = sbatch_script(study, study_arg=study_arg, db_path=db_path, mpi=mpi,
                         workdir=Path.cwd())
    write_atomic(Path(path), text, executable=True)


def plan(study: Study, *, mpi_spec: str | None = None, platform_spec: str | None = None,
         jobs: int = 1, seed: int | None = None, shuffle: bool | None = None,
         launch_env: dict[str, str] | None = None) -> tuple[Study, Plan]:
    """The build and the plan of launches (the study with --mpi and --platform)."""
    b = build_for(mpi_spec or study.mpi)
    if mpi_spec:
        study = dataclasses.replace(study, mpi=mpi_spec)
    if platform_spec:
        if not backend_for(b).simulated:
            raise WorkflowError("--platform is for simulation: add --mpi smpi")
        study = dataclasses.replace(study, platform=platform_spec)
    if jobs > 1 and not backend_for(b).parallel_launches:
        raise WorkflowError(f"--jobs {jobs}: launches side by side are for simulated studies "
                            "(--mpi smpi); measured ones would disturb each other's timings")
    try:
        p = make_plan(study, b, seed=seed, shuffle=shuffle)
    except (StudyError, LaunchError) as exc:
        if getattr(exc, "errors", None):
            raise
        raise WorkflowError(str(exc)) from None
    if launch_env is not None:
        p.launch_env = launch_env
    return study, p


@dataclass
class DryRun:
    """What a sweep would launch: each unit with its command and whether it is stored."""

    plan: Plan
    stored: set[str]
    rows: list[tuple]  # (unit, nodes text, command text)
    notes: list[str]


def dry_run(p: Plan, db_path: str | Path, *, oversubscribe: bool = False,
            force: bool = False, progress: Progress | None = None) -> DryRun:
    """The launches of a plan, which are stored, and what a real run would refuse or
    mark (said without refusing)."""
    progress = progress_or_quiet(progress)
    for np_, placement in sorted({(u.np, p.placement(u)) for u in p.units},
                                 key=lambda x: x[0]):
        try:
            p.notes += check_process_counts([np_], oversubscribe=oversubscribe, force=force,
                                            placement=placement,
                                            simulated=backend_for(p.build).simulated)
        except LaunchError as exc:
            p.notes.append(f"a run refuses this: {exc}")
    stored: set[str] = set()
    path = Path(db_path)
    if path.exists():
        try:
            conn = db_mod.open_reader(path, schema=True)
            sid = reader.study_id(conn, p.study.name)
            if sid is not None:
                stored = reader.stored_unit_keys(conn, sid, reader.latest_round(conn, sid))
            conn.close()
        except db_mod.DamagedError:
            raise
        except db_mod.DBError as exc:
            progress.note(str(exc))
    rows = []
    with launch.simulate(p.platform) if p.platform is not None else contextlib.nullcontext():
        for u in p.units:
            try:
                ln = launch.prepare(p.build.mpi, u.np, ["colltune-bench", "..."],
                                    extra_env=p.env(u) or None, placement=p.placement(u))
                rows.append((u, f"{ln.nodes}x{ln.ppn}", ln.shell_command))
            except LaunchError as exc:
                rows.append((u, "?", f"({exc})"))
    return DryRun(p, stored, rows, p.notes)


def sweep(study: Study, db_path: str | Path, *, mpi_spec: str | None = None,
          platform_spec: str | None = None, seed: int | None = None,
          shuffle: bool | None = None, new_round: bool = False, retry_failed: bool = True,
          merge_changed: bool = False, oversubscribe: bool = False, force: bool = False,
          wait: bool = True, jobs: int = 1, launch_env: dict[str, str] | None = None,
          argv: list[str] | None = None, progress: Progress | None = None) -> Outcome:
    """Run a study into the database: every launch not stored yet, each stored as it
    ends (studies.sweep.execute); one sweep of a study into a database at a time
    (`wait`: for the one running, else a StudyError). The Outcome says what ran, what
    failed or differed from the library's result, and whether it was interrupted."""
    progress = progress_or_quiet(progress)
    study, p = plan(study, mpi_spec=mpi_spec, platform_spec=platform_spec, jobs=jobs,
                    seed=seed, shuffle=shuffle, launch_env=launch_env)
    dbp = Path(db_path)
    db_mod.check_writable(dbp)  # before anything is launched
    if study.launcher == "slurm":
        slurm_allocation()
    for np_, placement in sorted({(u.np, p.placement(u)) for u in p.units},
                                 key=lambda x: x[0]):
        check_process_counts([np_], oversubscribe=oversubscribe, force=force,
                             placement=placement, simulated=backend_for(p.build).simulated)
    with sweep_lock(dbp, study.name, wait=wait, console=progress.console):
        return _into_db(study, p, dbp, new_round=new_round, merge_changed=merge_changed,
                        retry_failed=retry_failed, jobs=jobs, argv=argv, progress=progress)


def _into_db(study: Study, p: Plan, dbp: Path, *, new_round: bool, merge_changed: bool,
             retry_failed: bool, jobs: int, argv, progress: Progress) -> Outcome:
    """The sweep proper, holding its lock: the definition compared, the launches run."""
    b = p.build
    conn = db_mod.open_db(dbp)
    try:
        changes, rnd = definition_changes(conn, study)
    except BaseException:
        conn.close()
        raise
    if changes and not new_round and not merge_changed:
        conn.close()
        raise WorkflowError(
            f"study '{study.name}' is stored in {dbp} with another definition ("
            + "; ".join(changes) + f"): adding to its round {rnd} would mix the two. "
            "Measure it as a new round (--new-round), store it under another name "
            "(--name NEW), or add to the round anyway (--merge-changed)")
    if changes:
        progress.say(f"note: study '{study.name}' changed since its round {rnd} ("
                     + "; ".join(changes) + ")" + (f": measuring round {rnd + 1}" if new_round
                                                   else ": adding to that round as asked"))
    where = (f"{b.mpi.banner}, SIMULATED on platform '{p.platform.name}'"
             if p.platform is not None else b.mpi.banner)
    progress.say(f"sweep '{study.name}' on {where}: {len(p.units)} launches "
                 f"({', '.join(study.collectives)}; np {fmt_ints(p.processes)}; "
                 f"{len(study.sizes)} sizes; {study.repetitions} repetitions; seed {p.seed}) "
                 f"into {dbp}" + (f"; {jobs} launches at a time" if jobs > 1 else ""))
    if jobs > (os.cpu_count() or 1):
        progress.say(f"note: --jobs {jobs} on {os.cpu_count()} cores: the simulations share "
                     "cores (their times do not change; each takes longer)")
    try:
        with launch.interrupt_on_term():
            oc = execute(p, conn, argv=argv or sys.argv, new_round=new_round,
                         retry_failed=retry_failed, jobs=jobs, console=progress.console)
    finally:
        conn.close()
    others = f" ({oc.others} by another sweep meanwhile)" if oc.others else ""
    msg = (f"run {oc.run_id}: {oc.done} launches stored ({oc.points} points), {oc.failed} "
           f"failed, {oc.skipped} already stored{others}; {oc.seconds:.1f} s")
    if oc.status == "interrupted":
        progress.say(f"[yellow]interrupted[/]: {msg}. Run the same command again to resume.")
        return oc
    progress.say(f"[green]sweep done[/]: {msg}")
    if oc.invalid:
        progress.say(f"[bold red]{oc.invalid} point(s) differed from the MPI library's "
                     "result[/]")
    return oc


def exit_status(oc: Outcome) -> int:
    """A sweep's exit status: 130 interrupted, 1 when a launch failed or a point
    differed from the library's result, else 0."""
    if oc.status == "interrupted":
        return 130
    return 1 if oc.failed or oc.invalid else 0
