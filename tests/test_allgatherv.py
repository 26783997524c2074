"""Allgatherv (issue 30): the algorithms of native/lib/allgatherv.c verified against the
MPI library's own, the library's algorithms as candidates, the benchmark's sizes, and
MPI_Allgatherv of an unmodified program under the interposition library."""

from __future__ import annotations

import json
import re

import pytest

from colltune.base.collectives import per_process
from colltune.drivers import bench as bench_mod
from colltune.drivers import registry, verify
from colltune.mpi import launch
from colltune.mpi import libalgos as L
from colltune.mpi.libraries import MPI
from colltune.rules import interpose
from conftest import colltune, plaincolls_under_rules

FAKE_OMPI = MPI("openmpi", None, None, None, "5.0.11", "Open MPI v5.0.11")  # type: ignore[arg-type]
FAKE_MPICH = MPI("mpich", None, None, None, "5.0.2", "MPICH 5.0.2")  # type: ignore[arg-type]
ALGOS = {"linear", "gatherv_bcast", "ring", "bruck", "recursive_doubling", "hier",
         "neighbor_exchange", "two_proc", "sparbit"}
FAMILIES = ["main", "mixed", "garbage", "self", "inter"]


# ---------------------------------------------------------------------------- verify


def _check(build, np, quick):
    report = verify.run(build, [np], ["allgatherv"], None, quick=quick, timeout=900,
                        families=FAMILIES)
    assert report.ok, "\n".join(report.failure_lines())
    run = report.runs[0]
    by = {a["algorithm"]: a for a in run.algos}
    assert set(by) == ALGOS, by.keys()
    assert all(a["cases"] > 50 for a in run.algos), run.algos
    # the declared fallbacks, reported where the constraint does not hold
    assert (by["two_proc"]["fallback"] is None) == (np == 2), by["two_proc"]
    assert (by["neighbor_exchange"]["fallback"] is None) == (np % 2 == 0), \
        by["neighbor_exchange"]
    assert "-> ring" in (by["neighbor_exchange"]["fallback"] or "-> ring")


@pytest.mark.parametrize("np", [1, 2, 3, 4, 5, 8])
def test_verify_allgatherv_openmpi(ompi_build, np):
    _check(ompi_build, np, quick=np > 5)


@pytest.mark.mpich
@pytest.mark.parametrize("np", [1, 2, 3, 5])
def test_verify_allgatherv_mpich(mpich_build, np):
    _check(mpich_build, np, quick=True)


def test_verify_allgatherv_catches_a_broken_algorithm(ompi_build):
    for family in ("main", "mixed"):
        report = verify.run(ompi_build, [3], ["allgatherv"], ["_broken"], quick=True,
                            timeout=300, families=[family])
        assert not report.ok, family
        lines = report.failure_lines()
        assert any("FAIL allgatherv/_broken np=3" in ln for ln in lines), lines
        assert family == "main" or any("[mixed]" in ln for ln in lines), lines


# ------------------------------------------------------------ registry and library


def test_registry_rows_and_library_candidates():
    res = colltune("algorithms", "--json")
    assert res.returncode == 0, res.stderr
    rows = {a["name"]: a for a in json.loads(res.stdout) if a["collective"] == "allgatherv"}
    assert set(rows) == ALGOS | {"native"}, rows.keys()  # _broken stays hidden
    assert all(rows[n]["cost"] for n in ALGOS)
    assert rows["neighbor_exchange"]["fallback"] == "ring"
    assert rows["two_proc"]["constraints"] == ["two_processes"]
    assert [p["name"] for p in rows["gatherv_bcast"]["params"]] == ["bcast"]  # no remap
    assert rows["gatherv_bcast"]["ompi_name"] == "default"
    assert per_process("allgatherv")
    # Open MPI's numbers (checked against ompi_info by test_libalgos) and MPICH's names
    env = L.lib_env(FAKE_OMPI, "allgatherv", "ompi:gatherv_bcast")
    assert env["OMPI_MCA_coll_tuned_allgatherv_algorithm"] == "1"
    assert L.lib_env(FAKE_OMPI, "allgatherv", "ompi:neighbor") == \
        L.lib_env(FAKE_OMPI, "allgatherv", "ompi:neighbor_exchange")
    assert L.lib_env(FAKE_OMPI, "allgatherv", "ompi:sparbit")[
        "OMPI_MCA_coll_tuned_allgatherv_algorithm"] == "6"
    assert L.skip_reason(FAKE_OMPI, "allgatherv", "ompi:two_proc", 3)
    assert L.lib_env(FAKE_MPICH, "allgatherv", "mpich:bruck")[
        "MPIR_CVAR_ALLGATHERV_INTRA_ALGORITHM"] == "brucks"
    with pytest.raises(ValueError, match="unknown parameter 'segsize'"):
        L.resolve(FAKE_OMPI, "allgatherv", "ompi:ring:segsize=1")


# ------------------------------------------------------------------------ benchmark


def test_bench_allgatherv_sizes_per_process_and_validation(ompi_build):
    """Size = bytes per process (equal counts, as osu_allgatherv); --validate compares
    every algorithm and the library's own with MPI_Allgatherv; the corrupting test
    Allgatherv is caught."""
    algos = ["native", *sorted(ALGOS)]
    spec = bench_mod.BenchSpec("allgatherv", algos, 3, [0, 8, 8000], iterations=3,
                               warmup=1, reps=1, dtype="int", validate=True)
    recs, _ = bench_mod.run(ompi_build, spec, timeout=300)
    assert len(recs) == len(algos) * 3
    assert all(r["valid"] is True for r in recs), [(r["spec"], r["size"]) for r in recs]
    ne = [r for r in recs if r["algorithm"] == "neighbor_exchange" and r["size"] == 8000]
    assert ne and "ring" in (ne[0].get("fallback") or ""), ne
    spec = bench_mod.BenchSpec("allgatherv", ["ring", "_broken"], 3, [64], iterations=2,
                               reps=1, validate=True)
    recs, _ = bench_mod.run(ompi_build, spec, timeout=300)
    assert bench_mod.validation_failures(recs) == [recs[1]]
    # send one block, receive p blocks, and the library's result
    assert bench_mod.buffer_bytes("allgatherv", 1000, 4, validate=True) == 1000 + 2 * 4000


def test_bench_allgatherv_against_the_library(ompi_build):
    res = colltune("bench", "--coll", "allgatherv", "--algo", "bruck,ompi:bruck,ompi:ring",
                   "--np", "2", "--sizes", "8,1K", "--reps", "2", "--validate", "--format",
                   "json")
    assert res.returncode == 0, res.stderr[-2000:]
    recs = json.loads(res.stdout)
    assert {r["spec"] for r in recs} >= {"bruck", "ompi:bruck", "ompi:ring"}
    assert all(r["valid"] is True for r in recs), recs


# --------------------------------------------------------------------- interposition


def _forced_by_colltune_run(build, mpi_flag, np):
    """An unmodified program (plaincolls: MPI_Allgatherv with uneven counts including
    zeros, in place every other count, on the world, a sub-communicator and an
    intercommunicator) under `colltune run --force allgatherv=ALG` for every algorithm:
    right results, and the verbose line says ours ran (or its declared fallback)."""
    ln = launch.prepare(build.mpi, np, [str(build.program("colltune-plaincolls"))])
    names = registry.names(build, "allgatherv")
    assert ALGOS <= set(names), names
    var = interpose.force_variable("allgatherv")
    assert var == "COLLTUNE_ALLGATHERV"
    for algo in names:
        res = colltune("run", "--mpi", mpi_flag, "--force", f"allgatherv={algo}", "--verbose",
                       "--", *ln.argv)
        assert res.returncode == 0, f"{algo}: " + res.stdout + res.stderr[-3000:]
        assert re.search(r"plaincolls: \d+ checks passed", res.stdout), res.stdout
        lines = [x for x in res.stderr.splitlines() if x.startswith("colltune-pmpi: ")]
        mine = [x for x in lines if x.startswith(f"colltune-pmpi: allgatherv np={np} ")
                and f"({var}" in x]
        assert mine, f"allgatherv/{algo}: no decision printed\n" + "\n".join(lines)
        for x in mine:
            ran = x.split(": ", 2)[2].split(" ", 1)[0]
            assert ran == algo or f"allgatherv/{algo} -> ring" in x, x
        if algo != "native" and not (algo == "two_proc" and np != 2) \
                and not (algo == "neighbor_exchange" and np % 2):
            assert any(x.split(": ", 2)[2].startswith(algo + " ") for x in mine), mine
        # the intercommunicator's Allgatherv went to the library's own
        assert any(x.startswith("colltune-pmpi: allgatherv ") and "intercommunicator" in x
                   for x in lines), "\n".join(lines)


@pytest.mark.parametrize("np", [2, 3])
def test_allgatherv_every_algorithm_under_colltune_run_openmpi(ompi_build, np):
    _forced_by_colltune_run(ompi_build, "openmpi", np)


@pytest.mark.mpich
def test_allgatherv_every_algorithm_under_colltune_run_mpich(mpich_build):
    _forced_by_colltune_run(mpich_build, "mpich", 3)


def test_allgatherv_a_wrong_algorithm_is_caught(ompi_build):
    """The program's Allgatherv checks can fail: the corrupting test algorithm is caught."""
    e = {v: "" for v in (interpose.force_variable(c) for c in ("bcast", "allgather"))}
    e.update(interpose.preload(ompi_build, {}))
    e["COLLTUNE_ALLGATHERV"] = "_broken"
    ln = launch.prepare(ompi_build.mpi, 3, [str(ompi_build.program("colltune-plaincolls"))], e)
    res = launch.run(ln, timeout=120)
    assert not res.timed_out
    assert res.returncode != 0
    assert "FAIL rank 2" in res.stderr and "allgatherv count=" in res.stderr


def test_allgatherv_rules_verbose_and_profile(ompi_build, tmp_path):
    """A rules file with Allgatherv lines (colltune's size: bytes per process on average):
    the first matching line per size range runs, a declared fallback is reported
    (neighbor_exchange at 3 processes runs ring), and the profile counts the calls."""
    path = tmp_path / "agv.rules"
    path.write_text("# colltune-rules 1\n# target: colltune\n"
                    "allgatherv 2 - 0 100 bruck -\n"
                    "allgatherv 2 - 101 - neighbor_exchange -\n")
    text, p = plaincolls_under_rules(ompi_build, path, ("allgatherv",))
    f = str(path)
    assert f"allgatherv np=3 size 0..100 B: bruck ({f}:3)" in text, text
    assert f"allgatherv np=2 size 101.. B: neighbor_exchange ({f}:4)" in text, text
    assert (f"allgatherv np=3 size 101.. B: ring ({f}:4; allgatherv/neighbor_exchange -> "
            "ring: the process count is odd)") in text, text
    assert "allgatherv np=2 size -: native (intercommunicator" in text, text
    mine = [x for x in p.entries if x.collective == "allgatherv"]
    assert any(x.np == 3 and x.algorithm == "ring" and x.source == f"{f}:4" for x in mine), mine
    assert any(x.np == 2 and x.algorithm == "bruck" for x in mine), mine
    assert any(x.np == 1 and x.algorithm == "native" and x.source == "no rule" for x in mine)


def test_allgatherv_under_smpi(smpi_build):
    """`colltune build --mpi smpi` compiles allgatherv.c (smpicc) and every algorithm is
    right under SimGrid's SMPI at 3 and 4 processes."""
    report = verify.run(smpi_build, [3, 4], ["allgatherv"], None, quick=True, timeout=600,
                        families=["main", "garbage", "self"])
    assert report.ok, "\n".join(report.failure_lines())
    assert {a["algorithm"] for r in report.runs for a in r.algos} == ALGOS
    assert report.cases > 1000
