"""Gatherv and Scatterv (issue 53): the algorithms of native/lib/gatherv.c verified against
the MPI library's own, the library's algorithms as candidates, the benchmark's sizes,
MPI_Gatherv and MPI_Scatterv of an unmodified program under the interposition library,
and empty type signatures (a count of 0 against a count of a zero-size datatype) in every
collective."""

from __future__ import annotations

import json
import re

import pytest

from colltune.base.collectives import COLLECTIVES, SIZE_BLIND, per_process
from colltune.drivers import bench as bench_mod
from colltune.drivers import registry, verify
from colltune.mpi import launch
from colltune.mpi import libalgos as L
from colltune.mpi.libraries import MPI
from colltune.rules import files as rules_files
from colltune.rules import interpose
from colltune.rules.ruleset import RulesError, from_text
from conftest import colltune, plaincolls_under_rules

FAKE_MPICH = MPI("mpich", None, None, None, "5.0.2", "MPICH 5.0.2")  # type: ignore[arg-type]
ALGOS = {"linear", "linear_nb", "binomial"}
VCOLLS = ["gatherv", "scatterv"]
FAMILIES = ["main", "mixed", "garbage", "self", "inter", "empty"]


# ---------------------------------------------------------------------------- verify


def _check(build, np, quick):
    report = verify.run(build, [np], VCOLLS, None, quick=quick, timeout=900,
                        families=FAMILIES)
    assert report.ok, "\n".join(report.failure_lines())
    run = report.runs[0]
    got = {(a["collective"], a["algorithm"]) for a in run.algos}
    assert got == {(c, a) for c in VCOLLS for a in ALGOS}, got
    assert all(a["cases"] > 80 for a in run.algos), run.algos
    assert all(a["fallback"] is None for a in run.algos), run.algos  # none declared


@pytest.mark.parametrize("np", [1, 2, 3, 4, 5, 8])
def test_verify_gatherv_scatterv_openmpi(ompi_build, np):
    _check(ompi_build, np, quick=np > 5)


@pytest.mark.mpich
@pytest.mark.parametrize("np", [1, 2, 3, 5])
def test_verify_gatherv_scatterv_mpich(mpich_build, np):
    _check(mpich_build, np, quick=True)


@pytest.mark.parametrize("np", [1, 2, 3, 4, 5])
def test_empty_signatures_every_collective_and_algorithm(ompi_build, np):
    """The family "empty": every collective and algorithm with empty signatures written as
    0 MPI_INT, 3 x contiguous(0, MPI_INT) and 2 x an empty struct of extent 8, mixed over
    ranks (wholly empty), and for the v collectives blocks empty by a zero-size datatype
    on one side and by a count of 0 on the other next to blocks carrying data. Before
    issue 53, alltoallv/linear hung here (it skipped on counts, not bytes)."""
    report = verify.run(ompi_build, [np], list(COLLECTIVES), None, quick=True, timeout=600,
                        families=["empty"])
    assert report.ok, "\n".join(report.failure_lines())
    run = report.runs[0]
    colls = {a["collective"] for a in run.algos}
    assert colls == set(COLLECTIVES), colls
    linear = [a for a in run.algos if (a["collective"], a["algorithm"]) ==
              ("alltoallv", "linear")]
    assert linear and linear[0]["cases"] == 5, linear  # 3 wholly, 2 partly empty


def test_verify_gatherv_catches_a_broken_algorithm(ompi_build):
    """The cases can fail: the corrupting test Gatherv is caught in the main and mixed
    families, and an unknown family is named with the valid ones."""
    for family in ("main", "mixed"):
        report = verify.run(ompi_build, [3], ["gatherv"], ["_broken"], quick=True,
                            timeout=300, families=[family])
        assert not report.ok, family
        lines = report.failure_lines()
        assert any("FAIL gatherv/_broken np=3" in ln for ln in lines), lines
        assert family == "main" or any("[mixed]" in ln for ln in lines), lines
    bad = verify.run(ompi_build, [1], ["gatherv"], ["linear"], quick=True, timeout=120,
                     families=["emptyy"])
    assert not bad.ok
    assert "valid: main, mixed, garbage, self, inter, remap, empty" in bad.runs[0].error


# ------------------------------------------------------------ registry and library


def test_registry_rows_and_library_candidates():
    res = colltune("algorithms", "--json")
    assert res.returncode == 0, res.stderr
    table = json.loads(res.stdout)
    for coll in VCOLLS:
        rows = {a["name"]: a for a in table if a["collective"] == coll}
        assert set(rows) == ALGOS | {"native"}, rows.keys()
        assert all(rows[n]["cost"] for n in ALGOS)
        assert all(not rows[n]["constraints"] and rows[n]["fallback"] is None for n in ALGOS)
        assert "log2(p)" in rows["binomial"]["cost"]
        assert per_process(coll)
    assert set(SIZE_BLIND) == {*VCOLLS, "alltoallv"}
    # MPICH's names (Open MPI 5.0's coll/tuned has none for either)
    assert L.lib_env(FAKE_MPICH, "gatherv", "mpich:linear_nb")[
        "MPIR_CVAR_GATHERV_INTRA_ALGORITHM"] == "linear"
    assert L.lib_env(FAKE_MPICH, "scatterv", "mpich:nb")[
        "MPIR_CVAR_SCATTERV_INTRA_ALGORITHM"] == "nb"
    assert L.algorithms("ompi", "gatherv") == ()


def test_export_to_openmpi_refuses_with_the_reason(tmp_path):
    rs = from_text("# colltune-rules 1\ngatherv 2 - 0 - binomial -\n", "g.rules")
    with pytest.raises(RulesError, match="coll/tuned has no gatherv algorithms"):
        rules_files.export(rs, "openmpi", tmp_path / "out.rules", None)
    assert not (tmp_path / "out.rules").exists()


def test_rules_for_gatherv_cover_every_size(tmp_path):
    """Only the root knows the counts and every rank must run the same algorithm: a
    colltune rules line for gatherv or scatterv must cover every size (the C reader
    refuses the same lines: tests/test_pmpi.py, PARITY_BAD)."""
    good = tmp_path / "good.rules"
    good.write_text("# colltune-rules 1\ngatherv 2 - 0 - binomial -\nscatterv 2 8 0 - linear -\n")
    res = colltune("rules", "check", str(good))
    assert res.returncode == 0, res.stderr
    bad = tmp_path / "bad.rules"
    bad.write_text("# colltune-rules 1\ngatherv 2 - 0 - binomial -\nscatterv 2 - 1 - linear -\n")
    res = colltune("rules", "check", str(bad))
    assert res.returncode == 2, res.stdout
    assert f"{bad}:3: scatterv rules cannot depend on the size" in res.stderr, res.stderr


# ------------------------------------------------------------------------ benchmark


def test_bench_sizes_per_process_and_validation(ompi_build):
    """Size = bytes per process (equal counts, as osu_gatherv/osu_scatterv); --validate
    compares every algorithm and the library's own with MPI_Gatherv/MPI_Scatterv."""
    algos = ["native", *sorted(ALGOS)]
    for coll in VCOLLS:
        spec = bench_mod.BenchSpec(coll, algos, 3, [0, 8, 8000], iterations=3, warmup=1,
                                   reps=1, dtype="int", validate=True)
        recs, _ = bench_mod.run(ompi_build, spec, timeout=300)
        assert len(recs) == len(algos) * 3
        assert all(r["valid"] is True for r in recs), [(r["spec"], r["size"]) for r in recs]
    # gatherv: send one block, receive p; scatterv: send p, receive one
    assert bench_mod.buffer_bytes("gatherv", 1000, 4, validate=True) == 1000 + 2 * 4000
    assert bench_mod.buffer_bytes("scatterv", 1000, 4, validate=True) == 4000 + 2 * 1000


# --------------------------------------------------------------------- interposition


def _forced_by_colltune_run(build, mpi_flag, np):
    """An unmodified program (plaincolls: MPI_Gatherv and MPI_Scatterv with uneven counts
    including zeros, blocks out of order with gaps, in place at the root every other
    pass, NULL arguments off the root, on the world, a sub-communicator and an
    intercommunicator) under `colltune run --force gatherv=ALG --force scatterv=ALG`:
    right results, and the verbose lines say ours ran."""
    ln = launch.prepare(build.mpi, np, [str(build.program("colltune-plaincolls"))])
    for coll in VCOLLS:
        assert ALGOS <= set(registry.names(build, coll))
    assert interpose.force_variable("gatherv") == "COLLTUNE_GATHERV"
    for algo in ["native", *sorted(ALGOS)]:
        res = colltune("run", "--mpi", mpi_flag, "--force", f"gatherv={algo}", "--force",
                       f"scatterv={algo}", "--verbose", "--", *ln.argv)
        assert res.returncode == 0, f"{algo}: " + res.stdout + res.stderr[-3000:]
        assert re.search(r"plaincolls: \d+ checks passed", res.stdout), res.stdout
        lines = [x for x in res.stderr.splitlines() if x.startswith("colltune-pmpi: ")]
        for coll in VCOLLS:
            var = interpose.force_variable(coll)
            mine = [x for x in lines if x.startswith(f"colltune-pmpi: {coll} np={np} ")
                    and f"({var}" in x]
            assert mine, f"{coll}/{algo}: no decision printed\n" + "\n".join(lines)
            assert all(x.split(": ", 2)[2].startswith(algo + " ") for x in mine), mine
        assert any(x.startswith("colltune-pmpi: gatherv ") and "intercommunicator" in x
                   for x in lines), "\n".join(lines)


@pytest.mark.parametrize("np", [2, 3, 4])
def test_every_algorithm_under_colltune_run_openmpi(ompi_build, np):
    _forced_by_colltune_run(ompi_build, "openmpi", np)


@pytest.mark.mpich
def test_every_algorithm_under_colltune_run_mpich(mpich_build):
    _forced_by_colltune_run(mpich_build, "mpich", 3)


def test_rules_verbose_and_profile(ompi_build, tmp_path):
    """A rules file with Gatherv and Scatterv lines: decided by the process count alone
    (every rank alike, whatever its own block), and the profile counts the calls."""
    path = tmp_path / "v.rules"
    path.write_text("# colltune-rules 1\n# target: colltune\n"
                    "gatherv 3 - 0 - binomial -\n"
                    "gatherv 2 2 0 - linear_nb -\n"
                    "scatterv 2 - 0 - binomial -\n")
    text, p = plaincolls_under_rules(ompi_build, path, VCOLLS)
    f = str(path)
    assert f"gatherv np=3 size 0.. B: binomial ({f}:3)" in text, text
    assert f"gatherv np=2 size 0.. B: linear_nb ({f}:4)" in text, text
    assert f"scatterv np=3 size 0.. B: binomial ({f}:5)" in text, text
    mine = [x for x in p.entries if x.collective == "gatherv"]
    assert any(x.np == 3 and x.algorithm == "binomial" and x.source == f"{f}:3" for x in mine)
    assert any(x.np == 1 and x.algorithm == "native" for x in mine), mine


def test_an_empty_signature_alltoallv_under_colltune_run(ompi_build):
    """The issue's program: a peer sends 0 MPI_INT and the receiver expects 1 element of
    contiguous(0, MPI_INT); under every Alltoallv algorithm it returns (no hang) with the
    right result (plaincolls checks it)."""
    ln = launch.prepare(ompi_build.mpi, 3, [str(ompi_build.program("colltune-plaincolls"))])
    for algo in registry.names(ompi_build, "alltoallv"):
        res = colltune("run", "--mpi", "openmpi", "--force", f"alltoallv={algo}", "--",
                       *ln.argv, timeout=300)
        assert res.returncode == 0, f"{algo}: " + res.stdout + res.stderr[-3000:]
        assert re.search(r"plaincolls: \d+ checks passed", res.stdout), res.stdout


def test_gatherv_under_smpi(smpi_build):
    """`colltune build --mpi smpi` compiles gatherv.c (smpicc) and every algorithm is
    right under SimGrid's SMPI at 3 and 4 processes."""
    report = verify.run(smpi_build, [3, 4], VCOLLS, None, quick=True, timeout=600,
                        families=["main", "garbage", "self"])
    assert report.ok, "\n".join(report.failure_lines())
    assert {a["algorithm"] for r in report.runs for a in r.algos} == ALGOS


def test_a_wrong_gatherv_is_caught_by_the_program(ompi_build):
    """The program's Gatherv checks can fail: the corrupting test algorithm is caught."""
    e = dict(interpose.preload(ompi_build, {}))
    e["COLLTUNE_GATHERV"] = "_broken"
    ln = launch.prepare(ompi_build.mpi, 3, [str(ompi_build.program("colltune-plaincolls"))], e)
    res = launch.run(ln, timeout=120)
    assert not res.timed_out
    assert res.returncode != 0
    assert "FAIL rank" in res.stderr and "gatherv count=" in res.stderr


def test_empty_signatures_under_smpi(smpi_build):
    """The family "empty" for every collective under SimGrid's SMPI at 3 processes:
    SMPI divides by the type size in a self send/receive of a zero-size datatype
    (SIGFPE), so an empty own block is never copied (ct_copy_sig)."""
    report = verify.run(smpi_build, [3], list(COLLECTIVES), None, quick=True, timeout=600,
                        families=["empty"])
    assert report.ok, "\n".join(report.failure_lines())
    assert {a["collective"] for r in report.runs for a in r.algos} == set(COLLECTIVES)
