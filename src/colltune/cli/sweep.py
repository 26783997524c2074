"""`colltune sweep`: run a study into the results database."""

from __future__ import annotations

import dataclasses
import os
import shlex
import sys
from pathlib import Path

import click
from rich.table import Table

from colltune.results import db as db_mod
from colltune.results import reader
from colltune.mpi import cluster as cluster_mod
from colltune.mpi import launch
from colltune.mpi.placement import LAUNCHERS, LaunchError, check_process_counts, slurm_allocation
from colltune.base.files import check_writable, write_atomic
from colltune.base.errors import ColltuneError
from colltune.mpi.build import build_for
from colltune.studies.study import (HEAT, Study, StudyError, fmt_ints, load, read_preset,
                                    combine, preset_names, resolve_algorithms)
from colltune.studies.sweep import (Plan, definition_changes, execute, make_plan, sbatch_script,
                                    sweep_lock)
from colltune.base.units import fmt_size
from ._common import (PLATFORM_HELP, build_or_fail, command, db_option, db_path_or_default,
                      err, fail, np_option, out, oversubscribe_options)


def _load(study_file: str | None, preset: str | None, mpi_spec: str | None = None) -> Study:
    if bool(study_file) == bool(preset):
        fail("give a study file or --preset NAME (presets: " + ", ".join(preset_names()) + ")")
    try:
        return read_preset(preset) if preset else load(study_file)
    except StudyError as exc:
        fail(_with_algorithm_errors(exc, mpi_spec).errors)


def _with_algorithm_errors(exc: StudyError, mpi_spec: str | None) -> StudyError:
    """A study file with mistakes: its algorithm names are checked against the build
    too (when the MPI is at hand), so that one run lists every mistake of the file."""
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


def _dry_run(plan: Plan, conn_path: Path) -> None:
    stored: set[str] = set()
    rnd = 1
    if conn_path.exists():
        try:
            conn = db_mod.open_reader(conn_path, schema=True)
            sid = reader.study_id(conn, plan.study.name)
            if sid is not None:
                rnd = reader.latest_round(conn, sid)
                stored = reader.stored_unit_keys(conn, sid, rnd)
            conn.close()
        except db_mod.DamagedError as exc:
            fail(str(exc))
        except db_mod.DBError as exc:
            err.print(f"note: {exc}", highlight=False)
    s = plan.study
    t = Table(title=f"study '{s.name}': {len(plan.units)} launches "
                    f"({len(plan.units) - len(stored & {u.key for u in plan.units})} to run, "
                    f"seed {plan.seed}{', shuffled' if plan.shuffled else ''})",
              title_justify="left")
    loaded = bool(s.load)
    for col in ("#", "state", "collective", "np", "nodes", "mapping", "order", "rep",
                *(("load",) if loaded else ()), "algorithms", "command"):
        t.add_column(col, overflow="fold")
    for i, u in enumerate(plan.units, 1):
        try:
            ln = launch.prepare(plan.build.mpi, u.np, ["colltune-bench", "..."],
                                extra_env=plan.env(u) or None, placement=plan.placement(u))
            cmd, nodes = ln.shell_command, f"{ln.nodes}x{ln.ppn}"
        except LaunchError as exc:
            cmd, nodes = f"({exc})", "?"
        t.add_row(str(i), "stored" if u.key in stored else "to run", u.collective, str(u.np),
                  nodes, u.mapping, u.order, str(u.repetition),
                  *((u.load or "",) if loaded else ()),
                  u.library_spec or ",".join(u.algos), cmd)
    out.print(t)
    out.print(f"sizes: {', '.join(fmt_size(x) for x in s.sizes)}; processes: "
              f"{fmt_ints(plan.processes)}; mpi: {plan.build.mpi.banner}", highlight=False)
    for n in plan.notes:
        out.print(f"note: {n}", highlight=False, markup=False)


@command()
@click.argument("study_file", required=False, type=click.Path(dir_okay=False))
@click.option("--preset", help="Run a built-in study: " + ", ".join(preset_names()) + ".")
@db_option()
@click.option("--mpi", "mpi_spec", help="MPI library (overrides the study's `mpi`): openmpi, "
              "mpich, smpi (SimGrid simulation), or a path to a prefix/bin dir/mpicc.")
@click.option("--platform", "platform_spec", help=PLATFORM_HELP + " Overrides the study's "
              "`platform`.")
@click.option("--launcher", type=click.Choice(LAUNCHERS),
              help="Override the study's launcher.")
@click.option("--hostfile", type=click.Path(dir_okay=False),
              help="Hostfile (implies --launcher hostfile).")
@click.option("--cluster", "on_cluster", is_flag=True,
              help="Run on the nodes of `colltune cluster up`: its hostfile (as --hostfile) "
                   "and launch agent, processes not bound (each node keeps to its cores).")
@click.option("--dry-run", is_flag=True, help="List the launches (and which are stored) and exit.")
@click.option("--emit-sbatch", "sbatch_file", type=click.Path(dir_okay=False),
              help="Write a Slurm batch script that runs this sweep with srun, and exit.")
@click.option("--shuffle/--no-shuffle", default=None,
              help="Shuffle the launch order (default: the study's `shuffle`, true).")
@click.option("--seed", type=int, help="Seed of the shuffle (default: the study's, else new).")
@click.option("--new-round", is_flag=True,
              help="Measure every launch again as a new round (e.g. another day) instead of "
                   "resuming.")
@click.option("--retry-failed/--skip-failed", default=True, show_default=True,
              help="Run launches that failed before again.")
@click.option("--name", help="Store the study under this name instead of the one in its file "
              "(e.g. after changing its algorithms).")
@click.option("--merge-changed", is_flag=True,
              help="Add to a stored round even though the study's definition changed "
                   "(its points then mix both definitions).")
@np_option("nps", help="Process counts to measure instead of the study's "
              "(e.g. 2,4 or 2:8); not capped by the study's max_processes: counts above the "
              "cores need --oversubscribe, are marked so and draw no conclusion.")
@oversubscribe_options
@click.option("--wait/--no-wait", default=True, show_default=True,
              help="When a sweep of the same study into the same database is running: wait "
                   "for it to finish, then resume (--no-wait: stop with an error).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
              help="Simulated studies (--mpi smpi): run this many launches at once, one "
                   "core each (a simulation is one process; its times do not depend on "
                   "what else runs). Measured launches always run one at a time.")
@click.option("--list-presets", is_flag=True, help="List the built-in studies and exit.")
def sweep(study_file, preset, db_path, mpi_spec, platform_spec, launcher, hostfile, on_cluster,
          dry_run, sbatch_file, shuffle, seed, new_round, retry_failed, name, merge_changed,
          oversubscribe, force, list_presets, nps=None, wait=True, jobs=1) -> None:
    """Run a study (TOML file or --preset) into the results database.

    Launches run in a shuffled order, each stored in one transaction; running the
    same study again resumes where it stopped (finished launches are skipped).
    A failed launch is recorded with its error output and the sweep goes on.
    Ctrl-C stops cleanly. One sweep of a study into a database runs at a time: a
    second one waits for it (--no-wait: stops). See docs/studies.md.
    """
    if list_presets:
        for name in preset_names():
            s = read_preset(name)
            out.print(f"[bold]{name}[/]: {s.description}", highlight=False)
        return
    if sbatch_file:
        check_writable(sbatch_file, "--emit-sbatch")
    study = _load(study_file, preset, mpi_spec)
    if name:
        study = dataclasses.replace(study, name=name)
    if nps:
        study = dataclasses.replace(study, processes=list(nps), max_processes=None)
    cluster_placement = None
    if on_cluster:
        if launcher or hostfile:
            fail("--cluster is a hostfile launch of its own: leave out --launcher/--hostfile")
        cluster_placement = cluster_mod.placement()
        study = dataclasses.replace(study, launcher="hostfile", bind=False,
                                    hostfile=cluster_placement.hostfile)
    if hostfile:
        launcher = launcher or "hostfile"
        if launcher != "hostfile":
            fail("--hostfile goes with --launcher hostfile")
        study = dataclasses.replace(study, launcher="hostfile",
                                    hostfile=str(Path(hostfile).resolve()))
    elif launcher:
        if launcher == "hostfile" and not study.hostfile:
            fail("--launcher hostfile needs --hostfile PATH (or `hostfile` in the study)")
        study = dataclasses.replace(study, launcher=launcher,
                                    hostfile=study.hostfile if launcher == "hostfile" else None)
    dbp = Path(db_path_or_default(db_path))
    if sbatch_file:
        study_arg = (f"--preset {preset}" if preset
                     else shlex.quote(str(Path(study_file).resolve())))
        text = sbatch_script(study, study_arg=study_arg, db_path=dbp.resolve(),
                             mpi=mpi_spec, workdir=Path.cwd())
        write_atomic(Path(sbatch_file), text, executable=True)
        err.print(f"wrote {sbatch_file}: submit with `sbatch {sbatch_file}` (results into "
                  f"{dbp.resolve()})", highlight=False)
        return
    b = build_or_fail(mpi_spec or study.mpi)
    if mpi_spec:
        study = dataclasses.replace(study, mpi=mpi_spec)
    if platform_spec:
        if not b.mpi.simulated:
            fail("--platform is for simulation: add --mpi smpi")
        study = dataclasses.replace(study, platform=platform_spec)
    if jobs > 1 and not b.mpi.simulated:
        fail(f"--jobs {jobs}: launches side by side are for simulated studies (--mpi smpi); "
             "measured ones would disturb each other's timings")
    try:
        plan = make_plan(study, b, seed=seed, shuffle=shuffle)
    except (StudyError, LaunchError) as exc:
        fail(getattr(exc, "errors", None) or str(exc))
    if cluster_placement is not None:
        plan.launch_env = cluster_placement.env
    if dry_run:  # what a real run would refuse or mark, said without refusing
        for np_, placement in sorted({(u.np, plan.placement(u)) for u in plan.units},
                                     key=lambda x: x[0]):
            try:
                plan.notes += check_process_counts(
                    [np_], oversubscribe=oversubscribe, force=force, placement=placement,
                    simulated=b.mpi.simulated)
            except LaunchError as exc:
                plan.notes.append(f"a run refuses this: {exc}")
    if dry_run and plan.platform is not None:
        with launch.simulate(plan.platform):
            _dry_run(plan, dbp)
        return
    if dry_run:
        _dry_run(plan, dbp)
        return
    db_mod.check_writable(dbp)  # before anything is launched
    if study.launcher == "slurm":
        slurm_allocation()
    for np_, placement in sorted({(u.np, plan.placement(u)) for u in plan.units},
                                 key=lambda x: x[0]):
        check_process_counts([np_], oversubscribe=oversubscribe, force=force,
                             placement=placement, simulated=b.mpi.simulated)
    with sweep_lock(dbp, study.name, wait=wait):  # one sweep of the study at a time
        _into_db(study, plan, b, dbp, new_round=new_round, merge_changed=merge_changed,
                 retry_failed=retry_failed, jobs=jobs)


def _into_db(study: Study, plan: Plan, b, dbp: Path, *, new_round: bool, merge_changed: bool,
             retry_failed: bool, jobs: int = 1) -> None:
    """The sweep proper, holding its lock: the definition compared, the launches run."""
    conn = db_mod.open_db(dbp)
    try:
        changes, rnd = definition_changes(conn, study)
    except BaseException:
        conn.close()
        raise
    if changes and not new_round and not merge_changed:
        conn.close()
        fail(f"study '{study.name}' is stored in {dbp} with another definition ("
             + "; ".join(changes) + f"): adding to its round {rnd} would mix the two. "
             "Measure it as a new round (--new-round), store it under another name "
             "(--name NEW), or add to the round anyway (--merge-changed)")
    if changes:
        err.print(f"note: study '{study.name}' changed since its round {rnd} ("
                  + "; ".join(changes) + ")" + (f": measuring round {rnd + 1}" if new_round
                                                else ": adding to that round as asked"),
                  highlight=False)
    where = (f"{b.mpi.banner}, SIMULATED on platform '{plan.platform.name}'"
             if plan.platform is not None else b.mpi.banner)
    err.print(f"sweep '{study.name}' on {where}: {len(plan.units)} launches "
              f"({', '.join(study.collectives)}; np {fmt_ints(plan.processes)}; "
              f"{len(study.sizes)} sizes; {study.repetitions} repetitions; seed {plan.seed}) "
              f"into {dbp}" + (f"; {jobs} launches at a time" if jobs > 1 else ""),
              highlight=False)
    if jobs > (os.cpu_count() or 1):
        err.print(f"note: --jobs {jobs} on {os.cpu_count()} cores: the simulations share "
                  "cores (their times do not change; each takes longer)", highlight=False)
    try:
        with launch.interrupt_on_term():
            oc = execute(plan, conn, argv=sys.argv, new_round=new_round,
                         retry_failed=retry_failed, jobs=jobs)
    finally:
        conn.close()
    others = f" ({oc.others} by another sweep meanwhile)" if oc.others else ""
    msg = (f"run {oc.run_id}: {oc.done} launches stored ({oc.points} points), {oc.failed} "
           f"failed, {oc.skipped} already stored{others}; {oc.seconds:.1f} s")
    if oc.status == "interrupted":
        err.print(f"[yellow]interrupted[/]: {msg}. Run the same command again to resume.",
                  highlight=False)
        sys.exit(130)
    err.print(f"[green]sweep done[/]: {msg}", highlight=False)
    if oc.invalid:
        err.print(f"[bold red]{oc.invalid} point(s) differed from the MPI library's result[/]",
                  highlight=False)
    if oc.failed or oc.invalid:
        sys.exit(1)
