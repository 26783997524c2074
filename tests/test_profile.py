"""The profile of everything a program calls (native/pmpi/pmpi_observe.c): the collectives
colltune does not run (v/w variants, scans, neighbourhood, nonblocking with their waits,
persistent and large-count forms where the library has them), the wall time, and what
`colltune profile` says colltune can choose.

colltune-observecolls (native/tests/observecolls.c) calls each a known number of times
and checks every result; the profile must count exactly those calls, their bytes, and
follow every request to its completion, a point-to-point request beside them not counted.
"""

from __future__ import annotations

import json
import shutil

import pytest

from colltune.base.collectives import intercepted, mpi_name
from colltune.mpi import launch
from colltune.mpi import libraries as mpi_mod
from colltune.mpi.build import build
from colltune.rules import interpose
from conftest import colltune

ROUNDS = 5


def _observe(b, np, tmp_path, profile=True):
    prof = tmp_path / f"obs-{b.mpi.kind}-{np}.json"
    env = interpose.preload(b, {})
    env["COLLTUNE_PROFILE"] = str(prof) if profile else ""
    ln = launch.prepare(b.mpi, np, [str(b.program("colltune-observecolls")), str(ROUNDS)], env)
    res = launch.run(ln, timeout=120)
    assert not res.timed_out, res.stderr[-3000:]
    assert res.returncode == 0, res.stdout + res.stderr[-3000:]
    assert "every result right" in res.stdout, res.stdout
    return prof


def _check(p, np, persistent: bool, large: bool):
    by = {o.call: o for o in p.observed}
    # (calls, bytes per call of the process with the larger side: roots rotate, so the mean)
    per_call = {"MPI_Scan": 16, "MPI_Exscan": 16, "MPI_Ibcast": 80, "MPI_Iallreduce": 16,
                "MPI_Iallgather": 4 * np, "MPI_Ialltoall": 4 * np, "MPI_Alltoallw": 8 * np,
                "MPI_Neighbor_alltoall": 8, "MPI_Neighbor_allgather": 8, "MPI_Ibarrier": 0}
    for call, b in per_call.items():
        o = by[call]
        n = 2 * ROUNDS if call == "MPI_Iallgather" else ROUNDS
        assert (o.calls, o.starts, o.np, o.ranks) == (n, n, np, np), o
        assert o.bytes == n * b, o
        if o.kind == "nonblocking":
            # every request followed to its completion; the point-to-point pair beside the
            # two Iallgather in one Waitall is not counted
            assert o.completions == n and o.total_s >= o.wait_s > 0, o
            assert o.span_s >= o.wait_s * 0.999, o
        else:
            assert o.kind == "blocking" and o.completions == 0 and o.wait_s == 0
    # Gatherv/Scatterv are intercepted (colltune has algorithms for them): profiled as
    # colltune's entries below, never as observed calls
    assert "MPI_Gatherv" not in by and "MPI_Scatterv" not in by
    if persistent:
        o = by["MPI_Allreduce_init"]
        assert (o.kind, o.calls, o.starts, o.completions, o.bytes) == (
            "persistent", 1, ROUNDS, ROUNDS, 4 * ROUNDS), o
    else:
        assert not any(c.endswith("_init") for c in by)
    if large:
        o = by["MPI_Bcast_c"]
        assert (o.large_count, o.calls, o.bytes) == (True, ROUNDS, 12 * ROUNDS), o
    else:
        assert not any(c.endswith("_c") for c in by)
    # colltune's own entries: the Gatherv and Scatterv of every round, and the program's
    # one MPI_Allreduce at the end
    calls: dict[str, int] = {}
    for e in p.entries:
        calls[e.collective] = calls.get(e.collective, 0) + e.calls
    assert calls == {"allreduce": 1, "gatherv": ROUNDS, "scatterv": ROUNDS}, calls
    assert p.wall_s >= p.collective_s() > 0 and p.wall_max_s >= p.wall_s
    assert p.untracked_requests == 0 and p.observed_dropped == 0


@pytest.mark.parametrize("np", [1, 3])
def test_every_other_collective_is_profiled_openmpi(ompi_build, np, tmp_path):
    """Open MPI 5: persistent collectives, no large-count forms."""
    p = interpose.read_profile(_observe(ompi_build, np, tmp_path))
    _check(p, np, persistent=True, large=False)


def test_every_other_collective_is_profiled_mpich(mpich_build, tmp_path):
    """MPICH: persistent and large-count forms (MPI_Bcast_c)."""
    p = interpose.read_profile(_observe(mpich_build, 3, tmp_path))
    _check(p, 3, persistent=True, large=True)


def test_every_other_collective_is_profiled_debian_openmpi(tmp_path):
    """Debian's Open MPI 4.1: neither persistent nor large-count forms (it builds without)."""
    if not shutil.which("mpicc.openmpi"):
        pytest.skip("Debian's Open MPI (openmpi-bin, libopenmpi-dev) is not installed")
    b = build(mpi_mod.find(shutil.which("mpicc.openmpi")))
    p = interpose.read_profile(_observe(b, 2, tmp_path))
    _check(p, 2, persistent=False, large=False)


def test_without_a_profile_the_calls_run_untouched(ompi_build, tmp_path):
    prof = _observe(ompi_build, 2, tmp_path, profile=False)
    assert not prof.exists()


def test_colltune_profile_says_what_colltune_can_choose(ompi_build, tmp_path):
    prof = _observe(ompi_build, 2, tmp_path)
    res = colltune("profile", str(prof))
    assert res.returncode == 0, res.stderr
    text = " ".join(res.stdout.split())
    assert "the MPI library's own collectives" in text
    assert "Allreduce" in text and "colltune can choose the algorithm for" in text
    assert "Iallreduce" in text and "(library's own)" in text and "(colltune can choose)" in text
    assert "% of wall time" in res.stdout and "s wall time" in text
    doc = json.loads(colltune("profile", str(prof), "--json").stdout)
    shares = {r["call"]: r for r in doc["shares"]}
    assert shares["MPI_Allreduce"]["colltune"] and not shares["MPI_Iallreduce"]["colltune"]
    assert sum(r["of_collectives"] for r in doc["shares"]) == pytest.approx(1.0)
    assert doc["wall_s"] > 0 and len(doc["observed"]) == len(
        interpose.read_profile(prof).observed)


def test_what_colltune_can_choose_is_its_blocking_c_entry_points():
    assert intercepted("MPI_Bcast") == "bcast"
    assert intercepted("MPI_Reduce_scatter_block") == "reduce_scatter_block"
    assert mpi_name("allgatherv") == "MPI_Allgatherv"
    for call in ("MPI_Ibcast", "MPI_Bcast_c", "MPI_Bcast_init", "MPI_Scan", "MPI_bcast",
                 "Bcast", "MPI_Neighbor_alltoall"):
        assert intercepted(call) is None, call


def test_a_profile_without_the_other_collectives_still_reads(tmp_path):
    """A profile from a library before pmpi_observe.c: no wall time, nothing observed."""
    old = tmp_path / "old.json"
    old.write_text('{"format": "colltune-profile 1", "np_world": 2, "dropped": 0, "entries": ['
                   '{"collective": "bcast", "np": 2, "size_min": 4, "size_max": 7, '
                   '"algorithm": "binomial", "spec": "binomial", "source": "COLLTUNE_BCAST", '
                   '"calls": 3, "ranks": 2, "total_s": 0.5, "mean_s": 0.1666, '
                   '"max_rank_total_s": 0.6}]}')
    p = interpose.read_profile(old)
    assert p.wall_s is None and p.observed == []
    assert [(s.call, s.of_collectives, s.of_wall, s.colltune) for s in p.shares()] == [
        ("MPI_Bcast", 1.0, None, True)]
    res = colltune("profile", str(old))
    assert res.returncode == 0 and "wall time not recorded" in res.stdout


def test_a_bad_observed_entry_is_refused(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "colltune-profile 1", "entries": [], "observed": '
                   '[{"call": "MPI_Ibcast", "kind": "nonblocking"}]}')
    with pytest.raises(interpose.InterposeError, match="observed entry 0: \"collective\""):
        interpose.read_profile(bad)
    res = colltune("profile", str(bad))
    assert res.returncode != 0 and len(res.stderr.strip().splitlines()) == 1


def test_calls_the_library_takes_are_profiled_as_its_own(ompi_build, tmp_path):
    """An intercepted collective on an intercommunicator goes to the library's own: the
    profile counts it under that reason, and colltune cannot choose it."""
    prof = tmp_path / "plain.json"
    env = interpose.preload(ompi_build, {})
    env.update({"COLLTUNE_PROFILE": str(prof), "COLLTUNE_BCAST": "binomial"})
    ln = launch.prepare(ompi_build.mpi, 3, [str(ompi_build.program("colltune-plaincolls"))], env)
    res = launch.run(ln, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    p = interpose.read_profile(prof)
    inter = [e for e in p.entries if e.source == "intercommunicator: the library's own"]
    assert {e.collective for e in inter} >= {"bcast", "allreduce"}, p.entries
    assert all(e.algorithm == "native" and e.calls > 0 for e in inter)
    rows = {s.call: s for s in p.shares()}
    assert not rows["MPI_Bcast (intercommunicator)"].colltune
    assert rows["MPI_Bcast"].colltune  # the calls on intracommunicators: binomial
