"""`colltune rules verify`: the MPI library run under its own rules file, and which
algorithm really ran next to the one the file names (rules/files.py runs it and reads
what ran)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from colltune.base.errors import ColltuneError
from colltune.mpi import libraries as mpi_mod
from colltune.mpi.build import Build
from colltune.rules import files as rf

__all__ = ["library_of", "verify"]


def library_of(file: str, mpi_spec: str | None, iterations: int) -> str:
    """The kind of MPI library (openmpi, mpich) whose rules file `file` is, checked
    against --mpi and --iterations before anything is built; ColltuneError otherwise."""
    text = rf.read_text(file)
    kind = rf.detect(text, file)
    if kind == "colltune":
        raise ColltuneError(f"{file} is colltune's own rules file, which the MPI libraries do "
                            f"not read; {rf.colltune_file_hint(file, text)}")
    if iterations < 1:
        raise ColltuneError("--iterations must be at least 1")
    if mpi_spec in mpi_mod.KINDS and mpi_spec != kind:
        raise ColltuneError(f"{file} is an {rf.FORMAT_NAMES[kind]}; --mpi {mpi_spec} cannot "
                            f"run it (--mpi {kind})")
    return kind


def verify(file: str, build: Build, nps: list[int], sizes: list[int] | None = None,
           collectives: list[str] | None = None, iterations: int = 2,
           on_run: Callable[[int, list, list[str]], None] | None = None
           ) -> list[tuple[int, list, list[str]]]:
    """One run of the library under `file` per process count: (np, rows, notes) each,
    a row (rules.files.RanRow) per collective and size with the algorithm the file
    names and the one that ran (ok False: another ran). on_run(np, rows, notes) after
    each run."""
    runs = []
    for np in nps:
        _, rows, notes = rf.which_ran(Path(file), build, np=np, sizes=sizes,
                                      collectives=collectives, iterations=iterations)
        if on_run:
            on_run(np, rows, notes)
        runs.append((np, rows, notes))
    return runs
