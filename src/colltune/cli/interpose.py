"""`colltune run` and `colltune profile`: an unmodified MPI program under the
interposition library (libcolltune-pmpi.so), and what its profile says. The work is in
colltune.interpose (and launch.run_command)."""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import asdict

import click
from rich.markup import escape
from rich.table import Table

from colltune.drivers import registry
from colltune.rules import interpose
from colltune.mpi.launch import run_command, user_command
from ._common import MPI_HELP, build_or_fail, command, err, fail, out

LAUNCHERS = ("mpirun", "mpiexec", "mpiexec.hydra", "prterun", "orterun")


@command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--rules", type=click.Path(dir_okay=False),
              help="colltune's own rules file (target colltune), e.g. from colltune tune; "
                   "checked first: a file the library would drop stops here (exit 2).")
@click.option("--force", "forces", multiple=True, metavar="COLL=SPEC",
              help="Force one algorithm for a collective (repeatable): bcast=binomial; "
                   "checked against the algorithm table first.")
@click.option("--verbose", is_flag=True, help="Rank 0 prints each distinct decision once.")
@click.option("--profile", type=click.Path(dir_okay=False),
              help="Write calls and times per collective at MPI_Finalize (colltune profile); "
                   "its folder must exist.")
@click.option("--load-index", type=float,
              help="A rules file with load classes: use this load index (µs per probe "
                   "iteration) instead of measuring it at MPI_Init (docs/workload.md).")
@click.option("--load-probe", type=int,
              help="A rules file with load classes: iterations of the probe at MPI_Init and "
                   "MPI_Pcontrol(17) (default 50; 0: never, the quietest class).")
@click.option("--mpi", "mpi_spec", help=MPI_HELP + " (the one the program is built with).")
@click.option("--print-env", is_flag=True,
              help="Print the environment as export lines instead of running anything.")
@click.argument("cmd", nargs=-1, type=click.UNPROCESSED)
def run(rules, forces, verbose, profile, load_index, load_probe, mpi_spec, print_env,
        cmd) -> None:
    """Run an unmodified MPI program with colltune's algorithms inside it.

    Sets LD_PRELOAD to libcolltune-pmpi.so of the --mpi build and the COLLTUNE_*
    variables, then runs CMD (after --). When CMD starts with mpirun/mpiexec, the
    variables are also passed to every rank with the launcher's own options (Open MPI
    -x NAME, MPICH -genvlist), so they reach ranks on other nodes too.
    See docs/interposition.md.
    """
    force = {}
    for f in forces:
        coll, eq, spec = f.partition("=")
        if not eq:
            fail(f"--force {f}: expected COLL=SPEC, e.g. bcast=binomial")
        force[coll] = spec
    opts = dict(rules=rules, force=force, verbose=verbose, profile=profile,
                load_index=load_index, load_probe=load_probe)
    interpose.settings(**opts)  # what needs no build: the file, the names, the profile
    build = build_or_fail(mpi_spec)
    # then every rule and forced spec against the algorithm table, as the library will
    # check them: a mistake stops here (exit 2) instead of a warning at run time
    env = interpose.settings(**opts, algorithms=registry.algorithms(build, hidden=True))
    env.update(interpose.preload(build))
    if print_env:
        out.print("export " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()),
                  highlight=False, soft_wrap=True)
        return
    if not cmd:
        fail("nothing to run: give the command after --, e.g. colltune run --rules FILE -- "
             "mpirun -np 4 ./app")
    argv, notes = user_command(build.mpi, list(cmd))
    for n in notes:
        err.print(f"note: {n}" if not n.startswith("hint:") else n, highlight=False)
    if os.path.basename(argv[0]) in LAUNCHERS:
        argv[1:1] = interpose.launcher_options(build.mpi.kind, sorted(env))
    raise SystemExit(run_command(argv, env))


@command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="The entries as JSON.")
def profile(file, as_json) -> None:
    """Print the profile the interposition library wrote at MPI_Finalize
    (COLLTUNE_PROFILE): calls and times per collective, communicator size, size
    bucket and algorithm."""
    p = interpose.read_profile(file)
    if as_json:
        click.echo(json.dumps({"np_world": p.np_world, "dropped": p.dropped,
                               "entries": [asdict(e) for e in p.entries]}, indent=2))
        return
    t = Table(title=f"{file}: {p.np_world} processes", title_justify="left")
    for h in ("collective", "np", "size (B)", "algorithm", "asked", "from", "calls",
              "mean (us)", "total (s)"):
        t.add_column(h, justify="right" if h in ("np", "calls", "mean (us)", "total (s)")
                     else "left")
    for e in p.entries:
        size = f"{e.size_min}..{e.size_max}" if e.size_max != e.size_min else str(e.size_min)
        t.add_row(e.collective, str(e.np), size, escape(e.algorithm), escape(e.spec),
                  escape(e.source), str(e.calls), f"{e.mean_s * 1e6:.2f}", f"{e.total_s:.6f}")
    out.print(t)
    if p.dropped:
        out.print(f"note: {p.dropped} calls were not recorded (more than 4096 distinct keys "
                  "on a rank)", highlight=False)
