"""The interposition library under MPI_THREAD_MULTIPLE (issue 30): threads that run
collectives at the same time, each on a communicator of its own, get colltune's
algorithms, right results, and records (verbose lines, profile) of their own calls.

colltune-threads (native/tests/threads.c) is plain MPI: T threads each run rounds of
the nine collectives on their own communicator and check every result; even threads
reduce with MPI_SUM, odd ones with a non-commutative op, so a forced Allreduce that
needs a commutative op falls back in odd threads only. A shared last-dispatch record
(the library before issue 30) shows up as a fallback reported for the wrong calls.

mpi4py initialises MPI_THREAD_MULTIPLE by default: its own collective tests (from its
source distribution, downloaded once into the colltune cache) run with every
collective forced to one of our algorithms.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

from colltune.base.collectives import COLLECTIVES
from colltune.base.paths import cache_dir, cache_lock
from colltune.mpi import launch
from colltune.rules import interpose

ALL_VARS = ["COLLTUNE_RULES", "COLLTUNE_VERBOSE", "COLLTUNE_PROFILE",
            *(interpose.force_variable(c) for c in COLLECTIVES)]
# one algorithm of ours per collective (allreduce/ring needs a commutative op: the
# odd threads' affine op falls back to recursive_doubling)
FORCED = {"bcast": "binomial", "reduce": "binomial", "gather": "binomial",
          "allgather": "ring", "allreduce": "ring", "alltoall": "pairwise",
          "alltoallv": "pairwise", "scatter": "binomial", "barrier": "double_ring"}
# mpi4py's tests also call these (colltune-threads does not)
MPI4PY_FORCED = {**FORCED, "reduce_scatter_block": "butterfly", "reduce_scatter": "butterfly",
                 "allgatherv": "ring", "gatherv": "binomial", "scatterv": "binomial"}
THREADS, ROUNDS = 4, 40


def _env(build, extra=None):
    e = {v: "" for v in ALL_VARS}
    e.update(interpose.preload(build, {}))
    e.update({interpose.force_variable(c): a for c, a in FORCED.items()})
    e.update(extra or {})
    return e


def _run(build, np, program, env, timeout=240):
    ln = launch.prepare(build.mpi, np, program, env)
    res = launch.run(ln, timeout=timeout)
    assert not res.timed_out, f"hang: {ln.command_line}\n{res.stderr[-3000:]}"
    return res


def _decisions(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("colltune-pmpi: ")
            and "warning:" not in ln]


def _check_ours_ran(lines: list[str], np: int, colls=tuple(FORCED), forced=FORCED) -> None:
    """Every forced collective of `colls` printed a decision at np, and each says the
    forced algorithm ran, or its declared fallback with the reason."""
    for coll in colls:
        algo = forced[coll]
        var = interpose.force_variable(coll)
        mine = [ln for ln in lines if ln.startswith(f"colltune-pmpi: {coll} np={np} ")]
        assert mine, f"{coll}: no decision at np={np}\n" + "\n".join(lines)
        for ln in mine:
            assert f"({var}" in ln, ln
            ran = ln.split(": ", 2)[2].split(" ", 1)[0]
            assert ran == algo or f"{coll}/{algo} ->" in ln, ln


def _threads(build, np, extra=None):
    res = _run(build, np, [str(build.program("colltune-threads")), "--threads",
                           str(THREADS), "--iters", str(ROUNDS), "--renew", "8"],
               _env(build, {"COLLTUNE_VERBOSE": "1", **(extra or {})}))
    assert res.returncode == 0, res.stdout + res.stderr[-4000:]
    assert re.search(rf"threads: \d+ checks passed \({THREADS} threads x {ROUNDS} rounds",
                     res.stdout), res.stdout
    assert "MPI_THREAD_MULTIPLE" not in res.stderr, res.stderr
    lines = _decisions(res.stderr)
    _check_ours_ran(lines, np)
    # each thread's record is its own: the even threads' 16-byte MPI_SUM Allreduce ran
    # ring, the odd threads' 80-byte affine one fell back, never the other way round
    ar = [ln for ln in lines if ln.startswith(f"colltune-pmpi: allreduce np={np} ")]
    assert f"colltune-pmpi: allreduce np={np} size 16..31 B: ring (COLLTUNE_ALLREDUCE)" in ar, ar
    assert (f"colltune-pmpi: allreduce np={np} size 64..127 B: recursive_doubling "
            "(COLLTUNE_ALLREDUCE; allreduce/ring -> recursive_doubling: the op is not "
            "commutative)") in ar, ar
    wrong = [ln for ln in lines if "->" in ln and not ln.startswith(
        f"colltune-pmpi: allreduce np={np} size 64..127 B:")]
    assert not wrong, "a fallback reported for calls that had none:\n" + "\n".join(wrong)
    return res


@pytest.mark.parametrize("np", [2, 3])
def test_threads_on_their_own_communicators_openmpi(ompi_build, np):
    _threads(ompi_build, np)


@pytest.mark.mpich
def test_threads_on_their_own_communicators_mpich(mpich_build):
    _threads(mpich_build, 3)


def test_the_profile_counts_every_threads_calls(ompi_build, tmp_path):
    """The profile table is shared by the threads (under a lock): not one call lost."""
    prof = tmp_path / "threads.profile.json"
    _threads(ompi_build, 2, {"COLLTUNE_PROFILE": str(prof)})
    p = interpose.read_profile(prof)
    calls = {(e.collective, e.size_min, e.algorithm): e.calls for e in p.entries
             if e.np == 2}
    even, odd = (THREADS + 1) // 2, THREADS // 2
    assert calls[("allreduce", 16, "ring")] == even * ROUNDS, calls
    assert calls[("allreduce", 64, "recursive_doubling")] == odd * ROUNDS, calls
    for coll in ("bcast", "reduce", "gather", "scatter", "allgather", "alltoall",
                 "alltoallv", "barrier"):
        n = sum(c for (name, _, algo), c in calls.items() if name == coll)
        assert n == THREADS * ROUNDS, (coll, calls)
        assert {algo for (name, _, algo) in calls if name == coll} == {FORCED[coll]}, calls


# ---------------------------------------------------------------- mpi4py's own tests

MPI4PY_TESTS = ["test_cco_buf", "test_cco_obj", "test_cco_vec"]


def _mpi4py_tests() -> Path:
    """mpi4py's test folder, from the source distribution of the installed version,
    downloaded once into the colltune cache (skips when it cannot be had)."""
    if importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpi4py is not installed (pip install -e '.[test]' installs it)")
    import mpi4py

    version = mpi4py.__version__
    dest = cache_dir() / "mpi4py-tests" / version
    if (dest / "test" / "main.py").exists():
        return dest / "test"
    with cache_lock("mpi4py-tests", f"downloading mpi4py {version}'s tests"):
        if (dest / "test" / "main.py").exists():
            return dest / "test"
        with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
            res = subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                 "--no-binary", "mpi4py", f"mpi4py=={version}", "-d", tmp],
                capture_output=True, text=True, timeout=600)
            tars = sorted(Path(tmp).glob("mpi4py-*.tar.gz"))
            if res.returncode != 0 or not tars:
                pytest.skip(f"mpi4py {version}'s source distribution could not be "
                            f"downloaded: {(res.stderr or res.stdout).strip()[-300:]}")
            with tarfile.open(tars[0]) as tf:
                members = [m for m in tf.getmembers() if m.name.startswith(
                    f"mpi4py-{version}/test/")]
                safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
                tf.extractall(tmp, members=members, **safe)
            dest.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(dest / "test", ignore_errors=True)
            os.replace(Path(tmp) / f"mpi4py-{version}" / "test", dest / "test")
    return dest / "test"


def test_mpi4py_collective_tests_run_our_algorithms(ompi_build, tmp_path):
    """mpi4py's collective tests at its default thread level (MPI_THREAD_MULTIPLE) pass
    with every collective forced to one of our algorithms, and ours ran (the profile
    names them, and rank 0's verbose lines): no refusal."""
    tests = _mpi4py_tests()
    prof = tmp_path / "mpi4py.profile.json"
    probe = ("from mpi4py import MPI; import mpi4py; "
             "print('level', mpi4py.rc.thread_level, "
             "MPI.Query_thread() == MPI.THREAD_MULTIPLE)")
    env = _env(ompi_build, {"COLLTUNE_VERBOSE": "1", "COLLTUNE_PROFILE": str(prof),
                            "PYTHONDONTWRITEBYTECODE": "1",
                            **{interpose.force_variable(c): a for c, a in MPI4PY_FORCED.items()}})
    res = _run(ompi_build, 2, [sys.executable, "-c", probe], env, timeout=120)
    assert res.returncode == 0 and res.stdout.count("level multiple True") == 2, \
        res.stdout + res.stderr[-2000:]
    res = _run(ompi_build, 2, [sys.executable, str(tests / "main.py"), *MPI4PY_TESTS],
               env, timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    assert len(re.findall(r"^Ran \d+ tests", res.stderr, re.M)) == 2, res.stderr[-3000:]
    assert res.stderr.count("\nOK") == 2, res.stderr[-3000:]
    assert "MPI_THREAD_MULTIPLE" not in res.stderr
    used = [c for c in MPI4PY_FORCED if c != "barrier"]  # these tests call no MPI_Barrier
    _check_ours_ran(_decisions(res.stderr), 2, used, MPI4PY_FORCED)
    p = interpose.read_profile(prof)
    ours = {e.collective for e in p.entries if e.np == 2 and e.algorithm == MPI4PY_FORCED.get(
        e.collective) and e.source == interpose.force_variable(e.collective)}
    assert set(used) <= ours, ours
