"""`colltune run` and `colltune profile`: an unmodified MPI program under the
interposition library (libcolltune-pmpi.so), and what its profile says. The work is in
workflows/interpose.py (over rules/interpose.py and mpi/launch.py)."""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict

import click
from rich.markup import escape
from rich.table import Table

from colltune.workflows import interpose as wf
from ._common import MPI_HELP, build_or_fail, command, err, fail, out
from . import app as app_cli
from .app import compare_options



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
@compare_options
@click.argument("cmd", nargs=-1, type=click.UNPROCESSED)
def run(rules, forces, verbose, profile, load_index, load_probe, mpi_spec, print_env,
        compare, reps, metric, db_path, cmd) -> None:
    """Run an unmodified MPI program with colltune's algorithms inside it.

    Sets LD_PRELOAD to libcolltune-pmpi.so of the --mpi build and the COLLTUNE_*
    variables, then runs CMD (after --). When CMD starts with mpirun/mpiexec, the
    variables are also passed to every rank with the launcher's own options (Open MPI
    -x NAME, MPICH -genvlist), so they reach ranks on other nodes too.
    See docs/interposition.md.
    """
    if compare:
        if rules or forces or profile or print_env:
            fail("--compare: the rules of each side are its files; not with --rules, --force, "
                 "--profile or --print-env")
        app_cli.run_compare(list(compare), reps, metric, mpi_spec, db_path, list(cmd))
        return
    build, env = wf.environment(lambda: build_or_fail(mpi_spec), rules=rules,
                                force=wf.parse_forces(forces), verbose=verbose,
                                profile=profile, load_index=load_index, load_probe=load_probe)
    if print_env:
        out.print("export " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()),
                  highlight=False, soft_wrap=True)
        return
    prog = wf.program(build, env, list(cmd))
    for n in prog.notes:
        err.print(f"note: {n}" if not n.startswith("hint:") else n, highlight=False)
    if prog.warning:
        err.print(f"colltune: warning: {escape(prog.warning)}", highlight=False)
    raise SystemExit(wf.run(prog))


@command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="The entries as JSON.")
def profile(file, as_json) -> None:
    """Print the profile the interposition library wrote at MPI_Finalize
    (COLLTUNE_PROFILE): calls and times per collective, communicator size, size
    bucket and algorithm."""
    p = wf.read_profile(file)
    if as_json:
        click.echo(json.dumps({"np_world": p.np_world, "dropped": p.dropped,
                               "wall_s": p.wall_s, "wall_max_s": p.wall_max_s,
                               "entries": [asdict(e) for e in p.entries],
                               "observed": [asdict(e) for e in p.observed],
                               "shares": [asdict(r) for r in p.shares()]}, indent=2))
        return
    if p.entries:
        t = Table(title=f"{file}: {p.np_world} processes: colltune's collectives",
                  title_justify="left")
        for h in ("collective", "np", "size (B)", "algorithm", "asked", "from", "calls",
                  "mean (us)", "total (s)"):
            t.add_column(h, justify="right" if h in ("np", "calls", "mean (us)", "total (s)")
                         else "left")
        for e in p.entries:
            size = f"{e.size_min}..{e.size_max}" if e.size_max != e.size_min else str(e.size_min)
            t.add_row(e.collective, str(e.np), size, escape(e.algorithm), escape(e.spec),
                      escape(e.source), str(e.calls), f"{e.mean_s * 1e6:.2f}",
                      f"{e.total_s:.6f}")
        out.print(t)
    if p.observed:
        t = Table(title="the MPI library's own collectives (colltune does not run these)",
                  title_justify="left")
        for h in ("call", "np", "calls", "completed", "bytes/call", "total (s)", "waiting (s)",
                  "start to end (s)"):
            t.add_column(h, justify="left" if h == "call" else "right")
        for o in p.observed:
            blocking = o.kind == "blocking"
            per = o.bytes / o.starts if o.starts else 0
            t.add_row(o.call + (f" x{o.starts} started" if o.kind == "persistent" else ""),
                      str(o.np), str(o.calls), "-" if blocking else str(o.completions),
                      f"{per:.0f}", f"{o.total_s:.6f}", "-" if blocking else f"{o.wait_s:.6f}",
                      "-" if blocking else f"{o.span_s:.6f}")
        out.print(t)
    _print_shares(p)
    if p.dropped or p.observed_dropped:
        out.print(f"note: {p.dropped + p.observed_dropped} calls were not recorded (more "
                  "distinct keys on a rank than the tables hold)", highlight=False)
    if p.untracked_requests:
        out.print(f"note: {p.untracked_requests} nonblocking or persistent requests were "
                  "not followed to their completion (more than 1024 outstanding on a rank)",
                  highlight=False)


def _print_shares(p) -> None:
    """Where the collective time went, and what share of it colltune can change."""
    rows = p.shares()
    coll = p.collective_s()
    if not rows:
        out.print("no collective calls recorded", highlight=False)
        return
    t = Table(title="every collective the program called, by time (a rank's, averaged over "
                    "the ranks)", title_justify="left")
    for h in ("call", "kind", "calls", "time (s)", "% of collective time", "% of wall time",
              "algorithm"):
        t.add_column(h, justify="left" if h in ("call", "kind", "algorithm") else "right")
    for r in rows:
        t.add_row(r.call, r.kind, str(r.calls), f"{r.total_s:.6f}",
                  f"{100 * r.of_collectives:.1f}",
                  "-" if r.of_wall is None else f"{100 * r.of_wall:.1f}",
                  "colltune can choose" if r.colltune else "library's own")
    out.print(t)
    can = sum(r.total_s for r in rows if r.colltune)
    wall = (f"{coll:.6f} s in collectives of {p.wall_s:.6f} s wall time "
            f"({100 * coll / p.wall_s:.1f} %)" if p.wall_s else
            f"{coll:.6f} s in collectives (wall time not recorded: a profile from an older "
            "library)")
    share = 100 * can / coll if coll > 0 else 0
    out.print(f"{wall}; colltune can choose the algorithm for {share:.1f} % of the "
              "collective time", highlight=False)
    who = {True: "colltune can choose", False: "library's own"}
    out.print(", ".join(f"{r.call.removeprefix('MPI_')} {100 * r.of_collectives:.0f} % "
                        f"({who[r.colltune]})" for r in rows), highlight=False, soft_wrap=True)
