"""`colltune run` and `colltune profile`: an unmodified MPI program under the
interposition library (libcolltune-pmpi.so: rules/interpose.py sets it up, mpi/launch.py
runs the program), and the profile it writes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from colltune.base.errors import ColltuneError
from colltune.drivers import registry
from colltune.mpi import libraries as mpi_libraries
from colltune.mpi.build import Build
from colltune.mpi.launch import is_launcher, run_command, user_command
from colltune.rules import interpose
from colltune.rules.interpose import read_profile

__all__ = ["parse_forces", "environment", "Program", "program", "run", "read_profile"]


def parse_forces(forces: list[str]) -> dict[str, str]:
    """--force COLL=SPEC (repeatable) -> {coll: spec}."""
    force = {}
    for f in forces:
        coll, eq, spec = f.partition("=")
        if not eq:
            raise ColltuneError(f"--force {f}: expected COLL=SPEC, e.g. bcast=binomial")
        force[coll] = spec
    return force


def environment(build: Build | Callable[[], Build], rules: str | None = None,
                force: dict[str, str] | None = None, verbose: bool = False,
                profile: str | None = None, load_index: float | None = None,
                load_probe: int | None = None) -> tuple[Build, dict[str, str]]:
    """The build and the environment that runs a program under the interposition
    library (LD_PRELOAD and the COLLTUNE_* variables). What needs no build (the rules
    file, the names, the profile's folder) is checked before `build` is called; then
    every rule and forced spec against the algorithm table, as the library will check
    them: a mistake is a ColltuneError here instead of a warning at run time."""
    opts = dict(rules=rules, force=force or {}, verbose=verbose, profile=profile,
                load_index=load_index, load_probe=load_probe)
    interpose.settings(**opts)
    b = build() if callable(build) else build
    env = interpose.settings(**opts, algorithms=registry.algorithms(b, hidden=True))
    env.update(interpose.preload(b))
    return b, env


@dataclass
class Program:
    """The command to run and its environment; notes for the user, and a warning when
    the program is of another MPI library than the build's (it runs untouched)."""

    argv: list[str]
    env: dict[str, str]
    notes: list[str] = field(default_factory=list)
    warning: str | None = None


def program(build: Build, env: dict[str, str], cmd: list[str]) -> Program:
    """The user's command under the interposition library: a bare mpirun/mpiexec is the
    build's library's (with root and slot options, mpi/launch.py), and the variables
    reach every rank through the launcher's own options (Open MPI -x NAME, MPICH
    -genvlist)."""
    if not cmd:
        raise ColltuneError("nothing to run: give the command after --, e.g. colltune run "
                            "--rules FILE -- mpirun -np 4 ./app")
    env = dict(env)
    argv, notes = user_command(build.mpi, list(cmd))
    launched = is_launcher(argv[0])  # mpirun, /x/mpiexec, mpirun.openmpi ...
    other = mpi_libraries.mismatch(build.mpi, argv[1:] if launched else argv)
    if other:
        env.pop("LD_PRELOAD")
    elif launched:
        argv[1:1] = interpose.launcher_options(build.mpi.kind, sorted(env))
    return Program(argv, env, notes, other or None)


def run(prog: Program) -> int:
    """Run the program to its end; its exit status."""
    return run_command(prog.argv, prog.env)
