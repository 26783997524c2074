"""`colltune build`, `info`, `algorithms`: the build against an MPI library, what it is,
its table of algorithms. The pieces every workflow shares (a build from an `--mpi`
value, the progress callback) are here too."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

from colltune.base.collectives import COLLECTIVES
from colltune.base.errors import ColltuneError, did_you_mean
from colltune.drivers import registry
from colltune.mpi import placement
from colltune.mpi.build import Build, build_for

# a workflow's progress: one line for the user (the command line prints it on stderr)
Progress = Callable[[str], None]


def quiet(_message: str) -> None:
    """The progress callback that says nothing (the default from Python)."""


def ensure_build(mpi: Build | str | None) -> Build:
    """A Build as is, else the native part built against the `--mpi` value `mpi`
    (None: the default library); raises ColltuneError."""
    return mpi if isinstance(mpi, Build) else build_for(mpi)


def info(build: Build, version: str) -> list[tuple[str, str]]:
    """The (what, value) rows of `colltune info`: colltune's version, the MPI library,
    its tools, launcher and compiler, the build folder and the cores."""
    cc = subprocess.run([str(build.mpi.mpicc), "--version"], capture_output=True, text=True,
                        env=build.mpi.env()).stdout.splitlines()
    return [("colltune", version),
            ("MPI", f"{build.mpi.name} {build.mpi.version}"),
            ("MPI tools", str(build.mpi.bindir)),
            ("launcher", str(build.mpi.launcher)),
            ("compiler", f"{build.mpi.mpicc} ({cc[0] if cc else 'unknown'})"),
            ("build", str(build.dir)),
            ("cores", str(placement.cores()))]


def check_collectives(names: list[str], option: str = "--coll") -> None:
    """Every name a collective, else ColltuneError naming the valid ones."""
    for c in names:
        if c not in COLLECTIVES:
            raise ColltuneError(f"{option}: unknown collective '{c}'"
                                f"{did_you_mean(c, COLLECTIVES)}; valid: {', '.join(COLLECTIVES)}")


def algorithms(build: Build, collectives: list[str] | None = None) -> tuple[list[str], list]:
    """The collectives asked for (default: all) and their algorithms in the build's
    table (registry.Algorithm), in table order."""
    wanted = list(collectives) if collectives else list(COLLECTIVES)
    check_collectives(wanted)
    return wanted, [a for a in registry.algorithms(build) if a.collective in wanted]
