"""The verify matrix: every algorithm against the MPI library's own collective.

Open MPI at every process count of the matrix (oversubscribed), MPICH up to 8.
A test per process count, so a failure names np; verify itself names the case.
"""

import pytest

from colltune.drivers import verify
from conftest import colltune

COLLS = ["bcast", "reduce", "gather", "allgather", "allreduce"]
OMPI_NPS = [1, 2, 3, 4, 5, 7, 8, 13, pytest.param(16, marks=pytest.mark.slow)]
MPICH_NPS = [1, 2, 3, 5, 7]  # powers of two 4, 8: Open MPI covers them (CI time)


def _check(build, np):
    # the main matrix; the other families have tests of their own below
    report = verify.run(build, [np], COLLS, None, timeout=1500, families=["main"])
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


# ---- issue 14: full MPI semantics (case families beyond the main matrix) -----
FAMILIES = ["mixed", "garbage", "self", "inter"]
FAMILY_NPS = [1, 2, 3, 4, 5, 7, 8]  # np 6 runs in test_remap.py (CI time)


def _check_families(build, np, quick):
    report = verify.run(build, [np], COLLS, None, quick=quick, timeout=900,
                        families=FAMILIES)
    assert report.ok, "\n".join(report.failure_lines())
    run = report.runs[0]
    # every algorithm took part (the families run for every registered algorithm)
    algos = {(a["collective"], a["algorithm"]) for a in run.algos}
    assert ("bcast", "scatter_allgather") in algos and ("allreduce", "rabenseifner") in algos
    assert all(a["cases"] > 0 for a in run.algos), run.algos
    assert run.summary["cases"] > 1000


@pytest.mark.parametrize("np", FAMILY_NPS)
def test_verify_families_openmpi(ompi_build, np):
    """Mixed datatypes of one signature, garbage in ignored arguments, MPI_COMM_SELF
    and intercommunicators, for every algorithm and parameter variant. On the code
    before issue 14 the mixed family returned MPI_ERR_TRUNCATE and hung, garbage
    failed with 'gather: negative count' and hung, inter hung."""
    _check_families(ompi_build, np, quick=np > 4)


@pytest.mark.mpich
@pytest.mark.parametrize("np", [n for n in FAMILY_NPS if n not in (4, 8)])  # CI time
def test_verify_families_mpich(mpich_build, np):
    _check_families(mpich_build, np, quick=True)


def test_verify_families_catch_a_broken_algorithm(ompi_build):
    """The new families report failures with their family name."""
    report = verify.run(ompi_build, [3], ["bcast"], ["_broken"], quick=True, timeout=300,
                        families=["mixed", "self"])
    assert not report.ok
    lines = report.failure_lines()
    assert any("FAIL bcast/_broken np=3 [mixed]" in l and "type=mixed" in l for l in lines), lines
    # on MPI_COMM_SELF there is no last rank other than the root: nothing to corrupt
    assert not any("MPI_COMM_SELF" in l for l in lines), lines


def test_verify_unknown_family_is_named(ompi_build):
    res = verify.run(ompi_build, [1], ["bcast"], ["linear"], quick=True, timeout=120,
                     families=["mixedd"])
    assert not res.ok
    assert "unknown case family 'mixedd'; valid: main, mixed, garbage, self, inter" \
        in res.runs[0].error


# ---- issue 30: Alltoall and Alltoallv -----------------------------------------------
A2A = ["alltoall", "alltoallv"]


def _check_alltoall(build, np, quick):
    report = verify.run(build, [np], A2A, None, quick=quick, timeout=900,
                        families=["main", *FAMILIES])
    assert report.ok, "\n".join(report.failure_lines())
    run = report.runs[0]
    algos = {(a["collective"], a["algorithm"]) for a in run.algos}
    assert {("alltoall", n) for n in ("linear", "pairwise", "bruck", "linear_sync",
                                      "two_proc")} <= algos, algos
    assert {("alltoallv", "linear"), ("alltoallv", "pairwise")} <= algos, algos
    assert all(a["cases"] > 50 for a in run.algos), run.algos
    two = next(a for a in run.algos if a["algorithm"] == "two_proc")
    assert (two["fallback"] is None) == (np == 2), two  # declared fallback elsewhere


@pytest.mark.parametrize("np", [1, 2, 3, 4, 5, 8])
def test_verify_alltoall_openmpi(ompi_build, np):
    _check_alltoall(ompi_build, np, quick=np > 5)


@pytest.mark.mpich
@pytest.mark.parametrize("np", [1, 2, 3, 5])
def test_verify_alltoall_mpich(mpich_build, np):
    _check_alltoall(mpich_build, np, quick=True)


def test_verify_alltoall_catches_a_broken_algorithm(ompi_build):
    for family in ("main", "mixed"):
        report = verify.run(ompi_build, [3], ["alltoall"], ["_broken"], quick=True,
                            timeout=300, families=[family])
        assert not report.ok, family
        lines = report.failure_lines()
        assert any("FAIL alltoall/_broken np=3" in l for l in lines), lines
        assert family == "main" or any("[mixed]" in l for l in lines), lines


# ---- issue 30: Scatter and Barrier --------------------------------------------------
def _check_scatter_barrier(build, np, quick):
    report = verify.run(build, [np], ["scatter", "barrier"], None, quick=quick, timeout=900,
                        families=["main", *FAMILIES])
    assert report.ok, "\n".join(report.failure_lines())
    run = report.runs[0]
    algos = {(a["collective"], a["algorithm"]) for a in run.algos}
    assert {("scatter", n) for n in ("linear", "linear_nb", "binomial")} <= algos, algos
    assert {("barrier", n) for n in ("linear", "double_ring", "recursive_doubling", "bruck",
                                     "two_proc", "tree")} <= algos, algos
    assert all(a["cases"] >= 16 for a in run.algos), run.algos


@pytest.mark.parametrize("np", [1, 2, 3, 4, 5, 8])
def test_verify_scatter_barrier_openmpi(ompi_build, np):
    _check_scatter_barrier(ompi_build, np, quick=np > 5)


@pytest.mark.mpich
@pytest.mark.parametrize("np", [1, 2, 3, 5])
def test_verify_scatter_barrier_mpich(mpich_build, np):
    _check_scatter_barrier(mpich_build, np, quick=True)


# ---- issue 30: Reduce_scatter_block and Reduce_scatter ----------------------------
RS = ["reduce_scatter_block", "reduce_scatter"]
RS_ALGOS = ("basic_linear", "recursive_halving", "butterfly", "recursive_doubling", "ring",
            "pairwise")


def _check_reduce_scatter(build, np, quick):
    report = verify.run(build, [np], RS, None, quick=quick, timeout=1500,
                        families=["main", *FAMILIES])
    assert report.ok, "\n".join(report.failure_lines())
    run = report.runs[0]
    algos = {(a["collective"], a["algorithm"]): a for a in run.algos}
    assert {("reduce_scatter_block", n) for n in RS_ALGOS} <= set(algos), algos
    assert {("reduce_scatter", n) for n in ("nonoverlapping", *RS_ALGOS[1:])} <= set(algos)
    assert all(a["cases"] > 100 for a in run.algos), run.algos
    # the commutative-only algorithms declare their fallback for the non-commutative op;
    # the order-preserving ones run it themselves
    for coll in RS:
        for name in ("recursive_halving", "ring", "pairwise"):
            assert f"{coll}/{name} -> butterfly" in (algos[(coll, name)]["fallback"] or "")
        for name in ("butterfly", "recursive_doubling"):
            assert algos[(coll, name)]["fallback"] is None


@pytest.mark.parametrize("np", [1, 2, 3, 4, 5, 6, 7, 8])
def test_verify_reduce_scatter_openmpi(ompi_build, np):
    _check_reduce_scatter(ompi_build, np, quick=np > 5)


@pytest.mark.mpich
@pytest.mark.parametrize("np", [1, 2, 3, 5, 6])
def test_verify_reduce_scatter_mpich(mpich_build, np):
    _check_reduce_scatter(mpich_build, np, quick=True)
