"""`colltune verify`: every algorithm against the MPI library's own collective, over
process counts, roots, counts, datatypes, operations and the case families
(drivers/verify.py runs colltune-verify)."""

from __future__ import annotations

from collections.abc import Callable

from colltune.base.errors import ColltuneError, did_you_mean
from colltune.drivers import registry
from colltune.drivers import verify as verify_mod
from colltune.drivers.verify import DEFAULT_NPS, FAMILIES, Report, RunOutcome
from colltune.mpi.build import Build

from .basic import Progress, check_collectives, quiet

__all__ = ["DEFAULT_NPS", "FAMILIES", "Report", "RunOutcome", "check_families", "verify"]


def check_families(families: list[str]) -> None:
    """Every name a case family, else ColltuneError naming the valid ones."""
    for f in families:
        if f not in FAMILIES:
            raise ColltuneError(f"--family: unknown family '{f}'{did_you_mean(f, FAMILIES)}; "
                                f"valid: {', '.join(FAMILIES)}")


def check_algorithms(build: Build, collectives: list[str], algos: list[str]) -> None:
    """Every name an algorithm of one of `collectives` in the build's table (test-only
    ones included), else ColltuneError naming the valid ones."""
    known = {a.name for a in registry.algorithms(build, hidden=True)
             if a.collective in collectives}
    for a in algos:
        if a not in known:
            valid = sorted(known - {"_broken"})
            raise ColltuneError(f"--algo: unknown algorithm '{a}' for {', '.join(collectives)}"
                                f"{did_you_mean(a, valid)}; valid: {', '.join(valid)}")


def verify(build: Build, nps: list[int], collectives: list[str],
           algos: list[str] | None = None, quick: bool = False,
           families: list[str] | None = None, timeout: float = 1200,
           progress: Progress = quiet,
           on_run: Callable[[RunOutcome], None] | None = None) -> Report:
    """One launch of colltune-verify per process count; the report of every case.
    on_run(outcome) after each launch."""
    check_families(families or [])
    check_collectives(collectives)
    if algos:
        check_algorithms(build, collectives, algos)
    progress(f"verifying on {build.mpi.banner}: np {', '.join(map(str, nps))}")
    return verify_mod.run(build, nps, collectives, algos, quick=quick, timeout=timeout,
                          progress=on_run, families=families)
