"""The verify matrix: every algorithm against the MPI library's own collective.

Open MPI at every process count of the matrix (oversubscribed), MPICH up to 8.
A test per process count, so a failure names np; verify itself names the case.
"""

import pytest

from colltune import verify
from conftest import colltune

COLLS = ["bcast", "reduce", "gather", "allgather", "allreduce"]
OMPI_NPS = [1, 2, 3, 4, 5, 7, 8, 13, 16]
MPICH_NPS = [1, 2, 3, 4, 5, 7, 8]


def _check(build, np):
    report = verify.run(build, [np], COLLS, None, timeout=1500)
    assert report.ok, "\n".join(report.failure_lines())
    run = report.runs[0]
    algos = {(a["collective"], a["algorithm"]) for a in run.algos}
    # every registered algorithm of each collective was exercised
    assert ("bcast", "scatter_ring_allgather") in algos and ("reduce", "rabenseifner") in algos
    assert run.summary["cases"] > 1000


@pytest.mark.parametrize("np", OMPI_NPS)
def test_verify_openmpi(ompi_build, np):
    _check(ompi_build, np)


@pytest.mark.mpich
@pytest.mark.parametrize("np", MPICH_NPS)
def test_verify_mpich(mpich_build, np):
    _check(mpich_build, np)


def test_verify_catches_a_broken_algorithm():
    """The harness fails when it should: a deliberately corrupting Bcast is caught."""
    res = colltune("verify", "--coll", "bcast", "--algo", "_broken", "--np", "3", "--quick")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "FAIL bcast/_broken np=3" in res.stderr
    assert "root=" in res.stderr and "count=" in res.stderr and "type=" in res.stderr


def test_verify_cli_passes_and_reports(ompi_build):
    res = colltune("verify", "--coll", "bcast,reduce", "--algo", "binomial", "--np", "3")
    assert res.returncode == 0, res.stderr
    assert "verify passed" in res.stderr
