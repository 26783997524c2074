"""`colltune sweep`: run a study into the results database (workflows.sweep)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click
from rich.table import Table

from colltune.base.files import check_writable
from colltune.base.units import fmt_size
from colltune.mpi.placement import LAUNCHERS
from colltune.studies.study import fmt_ints, preset_names, read_preset
from colltune.workflows import sweep as sweep_flow
from ._common import (PLATFORM_HELP, command, db_option, db_path_or_default, err, np_option, out,
                      oversubscribe_options, progress)


def render_dry_run(dr: "sweep_flow.DryRun") -> None:
    """The table of `sweep --dry-run`: each launch, stored or to run, and its command."""
    plan, stored = dr.plan, dr.stored
    s = plan.study
    t = Table(title=f"study '{s.name}': {len(plan.units)} launches "
                    f"({len(plan.units) - len(stored & {u.key for u in plan.units})} to run, "
                    f"seed {plan.seed}{', shuffled' if plan.shuffled else ''})",
              title_justify="left")
    loaded = bool(s.load)
    for col in ("#", "state", "collective", "np", "nodes", "mapping", "order", "rep",
                *(("load",) if loaded else ()), "algorithms", "command"):
        t.add_column(col, overflow="fold")
    for i, (u, nodes, cmd) in enumerate(dr.rows, 1):
        t.add_row(str(i), "stored" if u.key in stored else "to run", u.collective, str(u.np),
                  nodes, u.mapping, u.order, str(u.repetition),
                  *((u.load or "",) if loaded else ()),
                  u.library_spec or ",".join(u.algos), cmd)
    out.print(t)
    out.print(f"sizes: {', '.join(fmt_size(x) for x in s.sizes)}; processes: "
              f"{fmt_ints(plan.processes)}; mpi: {plan.build.mpi.banner}", highlight=False)
    for n in dr.notes:
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
    study = sweep_flow.load_study(study_file, preset, mpi_spec)
    study, launch_env = sweep_flow.placed(study, name=name, nps=nps, launcher=launcher,
                                          hostfile=hostfile, on_cluster=on_cluster)
    dbp = Path(db_path_or_default(db_path))
    if sbatch_file:
        study_arg = (f"--preset {preset}" if preset
                     else shlex.quote(str(Path(study_file).resolve())))
        sweep_flow.write_sbatch(study, sbatch_file, study_arg=study_arg, db_path=dbp.resolve(),
                                mpi=mpi_spec)
        err.print(f"wrote {sbatch_file}: submit with `sbatch {sbatch_file}` (results into "
                  f"{dbp.resolve()})", highlight=False)
        return
    if dry_run:
        study, plan = sweep_flow.plan(study, mpi_spec=mpi_spec, platform_spec=platform_spec,
                                      jobs=jobs, seed=seed, shuffle=shuffle,
                                      launch_env=launch_env)
        render_dry_run(sweep_flow.dry_run(plan, dbp, oversubscribe=oversubscribe, force=force,
                                          progress=progress()))
        return
    oc = sweep_flow.sweep(study, dbp, mpi_spec=mpi_spec, platform_spec=platform_spec, seed=seed,
                          shuffle=shuffle, new_round=new_round, retry_failed=retry_failed,
                          merge_changed=merge_changed, oversubscribe=oversubscribe,
                          force=force, wait=wait, jobs=jobs, launch_env=launch_env,
                          progress=progress())
    status = sweep_flow.exit_status(oc)
    if status:
        sys.exit(status)
