"""A study from an application's profile (issue 54): the cells that carry the asked
share of the program's collective time, in order of time, at the sizes it really used,
through the one study parser; the profile records the sizes (pmpi_profile.c)."""

from __future__ import annotations

import json

import pytest

from colltune.drivers import registry
from colltune.mpi import launch
from colltune.rules import interpose
from colltune.studies import study as study_mod
from colltune.studies import sweep as sweep_mod
from colltune.tuning import from_profile

from conftest import colltune


def _entry(coll, np, lo, hi, total, calls, sizes=None, algo="native"):
    e = {"collective": coll, "np": np, "size_min": lo, "size_max": hi, "algorithm": algo,
         "spec": algo, "source": "no rule", "calls": calls, "ranks": np, "total_s": total,
         "mean_s": total / calls, "max_rank_total_s": total}
    if sizes is not None:
        e["sizes"] = sizes
        e["sizes_capped"] = False
    return e


PROFILE = {"format": "colltune-profile 1", "np_world": 4, "dropped": 0, "entries": [
    # allreduce 1 MiB bucket: 50 % (two algorithms ran there: merged into one cell)
    _entry("allreduce", 4, 1 << 20, (2 << 20) - 1, 3.0, 100, [1 << 20, 1500000]),
    _entry("allreduce", 4, 1 << 20, (2 << 20) - 1, 2.0, 50, [1 << 20], algo="ring"),
    # bcast 4 KiB: 30 %
    _entry("bcast", 4, 4096, 8191, 3.0, 1000, [4096, 6000]),
    # reduce at np 1: 8 % (listed, not measured)
    _entry("reduce", 1, 8, 15, 0.8, 10, [8]),
    # allreduce 8 B at np 2: 7 % (a sub-communicator)
    _entry("allreduce", 2, 8, 15, 0.7, 700, [8, 12]),
    # gather: 5 % (beyond 90 %... reached after the allreduce 8 B cell: 95 %)
    _entry("gather", 4, 64, 127, 0.5, 10, [100]),
]}


@pytest.fixture()
def profile_file(tmp_path):
    p = tmp_path / "app.profile.json"
    p.write_text(json.dumps(PROFILE))
    return p


def test_the_plan_covers_the_share_in_order_of_time(profile_file):
    prof = interpose.read_profile(profile_file)
    pl = from_profile.plan(prof, profile_file, 0.90)
    keys = [(c.collective, c.np, c.size_min) for c in pl.cells]
    assert keys == [("allreduce", 4, 1 << 20), ("bcast", 4, 4096), ("reduce", 1, 8),
                    ("allreduce", 2, 8)]
    assert pl.covered == pytest.approx(0.95)  # 50 + 30 + 8 + 7: the first reaching 90 %
    assert [(c.collective, c.size_min) for c in pl.left] == [("gather", 64)]
    assert pl.listed[0].collective == "reduce" and "one process" in pl.listed[0].why_not
    # only the sizes the program used, per collective
    assert pl.sizes() == {"bcast": [4096, 6000], "allreduce": [8, 12, 1 << 20, 1500000]}
    assert pl.processes() == [2, 4]
    # a smaller share stops earlier
    pl50 = from_profile.plan(prof, profile_file, 0.5)
    assert [(c.collective, c.size_min) for c in pl50.cells] == [("allreduce", 1 << 20)]
    # a collective colltune cannot change is listed, not measured
    pl2 = from_profile.plan(prof, profile_file, 0.9, changeable={"allreduce", "reduce"})
    bc = [c for c in pl2.cells if c.collective == "bcast"][0]
    assert not bc.measured and "no algorithms" in bc.why_not
    assert "bcast" not in pl2.collectives()
    with pytest.raises(from_profile.ProfileStudyError, match="share"):
        from_profile.plan(prof, profile_file, 1.5)


def test_calls_colltune_does_not_run_are_listed_not_measured(tmp_path):
    """The profile's other collectives (`observed`: MPI_Iallreduce, ...) and the calls the
    library took (an intercommunicator) carry time, count in the share, and are listed,
    never measured."""
    obs = {"call": "MPI_Iallreduce", "collective": "allreduce", "kind": "nonblocking",
           "large_count": False, "np": 4, "calls": 50, "starts": 50, "completions": 50,
           "ranks": 4, "bytes": 800.0, "total_s": 4.0, "wait_s": 3.9, "span_s": 4.1,
           "max_rank_total_s": 4.2}
    inter = _entry("bcast", 4, 0, 0, 2.0, 10, [0])
    inter["source"] = "intercommunicator: the library's own"
    doc = dict(PROFILE, entries=PROFILE["entries"] + [inter], observed=[obs], wall_s=30.0)
    p = tmp_path / "app.json"
    p.write_text(json.dumps(doc))
    pl = from_profile.plan(interpose.read_profile(p), p, 0.9)
    labels = [(c.label, c.measured) for c in pl.cells]
    assert labels[:3] == [("allreduce", True), ("MPI_Iallreduce", False), ("bcast", True)]
    assert ("MPI_Bcast (intercommunicator)", False) in labels
    assert pl.total_s == pytest.approx(16.0)  # 10 of the entries + 4 observed + 2 passed
    # what is measured: only what colltune runs, at its own sizes
    assert pl.sizes()["bcast"] == [4096, 6000]
    text = from_profile.study_text(pl)
    assert "MPI_Iallreduce" in text and "NOT MEASURED: not a call colltune runs" in text
    assert study_mod.loads(text).collectives == ["bcast", "allreduce"]


def test_a_profile_without_sizes_measures_the_bucket_centre(tmp_path):
    doc = dict(PROFILE, entries=[_entry("bcast", 2, 4096, 8191, 1.0, 10)])
    p = tmp_path / "old.json"
    p.write_text(json.dumps(doc))
    pl = from_profile.plan(interpose.read_profile(p), p)
    assert pl.cells[0].sizes == [5792] and not pl.cells[0].observed


def test_the_study_loads_through_the_one_parser_and_plans_only_its_sizes(
        profile_file, ompi_build):
    prof = interpose.read_profile(profile_file)
    pl = from_profile.plan(prof, profile_file, 0.9)
    text = from_profile.study_text(pl, algorithms=registry.algorithms(ompi_build),
                                   library=False)
    s = study_mod.loads(text, source="from-profile")
    assert s.collectives == ["bcast", "allreduce"]
    assert s.sizes_of("bcast") == [4096, 6000]
    assert s.sizes_of("allreduce") == [8, 12, 1 << 20, 1500000]
    assert s.processes == [2, 4]
    assert s.from_profile["file"] == str(profile_file.resolve())
    assert len(s.from_profile["sha256"]) == 64 and s.from_profile["covered"] == 0.95
    assert "from_profile" in s.definition()
    # candidates: ours, native and parameter grids (segment sizes below 1.4 MiB)
    assert s.algorithms["allreduce"][:2] == ["ours", "native"]
    assert any(a.startswith("segmented_ring:segsize=") for a in s.algorithms["allreduce"])
    assert any(a == "chain:segsize=1024|4096" for a in s.algorithms["bcast"])
    algos = study_mod.resolve_algorithms(s, ompi_build)
    assert "segmented_ring:segsize=65536" in algos["allreduce"]
    # each collective's launches run its own sizes
    plan = sweep_mod.make_plan(s, ompi_build, seed=1)
    for u in plan.units:
        spec = sweep_mod.bench_spec(s, u)
        assert spec.sizes == s.sizes_of(u.collective)


def test_sizes_as_a_table_are_checked():
    base = '[study]\nname = "x"\ncollectives = ["bcast", "reduce"]\nalgorithms = ["native"]\n' \
           'processes = [2]\n'
    s = study_mod.loads(base + 'sizes = { bcast = [8, "1K"], reduce = "1:4" }\n')
    assert s.sizes_of("bcast") == [8, 1024] and s.sizes_of("reduce") == [1, 2, 4]
    assert s.sizes == [1, 2, 4, 8, 1024]
    with pytest.raises(study_mod.StudyError) as exc:
        study_mod.loads(base + 'sizes = { bcast = [8], gathr = [1] }\n')
    assert "study.sizes.gathr: not a collective of this study" in str(exc.value)
    assert "study.sizes.reduce: missing" in str(exc.value)
    with pytest.raises(study_mod.StudyError, match="from_profile.fil: unknown key"):
        study_mod.loads(base + 'sizes = [8]\nfrom_profile = { fil = "x" }\n')
    # a plain study's definition (and digest) has no new keys
    plain = study_mod.loads(base + "sizes = [8]\n")
    assert "sizes_by" not in plain.definition() and "from_profile" not in plain.definition()


def test_the_library_records_the_sizes_and_the_command_writes_the_study(ompi_build, tmp_path):
    """A real profile (colltune-osu-latency: Bcast of 3000 B, in the 2048..4095 bucket)
    records the size the program used; `colltune study from-profile` writes a study of
    that size, not of the bucket's bounds."""
    prof = tmp_path / "osu.profile.json"
    ln = launch.prepare(ompi_build.mpi, 2, [str(ompi_build.program("colltune-osu-latency")),
                                            "bcast", "3000", "20"])
    res = colltune("run", "--profile", str(prof), "--", *ln.argv)
    assert res.returncode == 0, res.stderr[-2000:]
    p = interpose.read_profile(prof)
    e = [e for e in p.entries if e.collective == "bcast"][0]
    assert (e.size_min, e.size_max, e.sizes, e.sizes_capped) == (2048, 4095, (3000,), False)
    out = tmp_path / "study.toml"
    res = colltune("study", "from-profile", str(prof), "-o", str(out), "--share", "100%",
                   "--no-library")
    assert res.returncode == 0, res.stderr
    s = study_mod.load(out)
    assert s.sizes_of("bcast") == [3000] and s.processes == [2]
    assert "bcast" in s.collectives and "library" not in s.algorithms["bcast"]
    bad = colltune("study", "from-profile", str(prof), "-o", str(out), "--share", "0")
    assert bad.returncode == 2 and "--share 0" in bad.stderr


def test_the_recorded_sizes_lie_in_their_buckets_and_are_capped(ompi_build, tmp_path):
    """colltune-plaincolls calls every collective at many counts on several communicators:
    each entry's sizes are distinct, ascending, inside its bucket, at most 8, and the
    entries with a single size per bucket say so exactly."""
    prof = tmp_path / "p.json"
    ln = launch.prepare(ompi_build.mpi, 3, [str(ompi_build.program("colltune-plaincolls"))])
    res = colltune("run", "--profile", str(prof), "--", *ln.argv)
    assert res.returncode == 0, res.stderr[-2000:]
    p = interpose.read_profile(prof)
    assert p.entries
    for e in p.entries:
        assert e.sizes, e
        assert list(e.sizes) == sorted(set(e.sizes)) and len(e.sizes) <= 8, e
        assert all(e.size_min <= s <= e.size_max for s in e.sizes), e
        assert not e.sizes_capped or len(e.sizes) == 8, e
    # 70000 ints: one size in its bucket, the one the program used
    big = [e for e in p.entries if e.collective == "bcast" and e.size_min == 262144]
    assert big and all(e.sizes == (280000,) for e in big)
