"""Simulation under SimGrid's SMPI (`--mpi smpi`): the launch, the installer, simulated
points kept apart from measurements, and (with SimGrid installed) every algorithm's
correctness and the determinism of simulated times."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest

from colltune.drivers import bench as bench_mod
from colltune.results import db
from colltune.results import reader, store
from colltune.mpi import launch
from colltune.mpi import placement
from colltune.mpi import simgrid
from colltune.base.errors import ColltuneError
from colltune.analysis.fit import load_measurements
from colltune.mpi.platforms import resolve
from colltune.rules import ruleset as rules


@dataclass(frozen=True)
class FakeMPI:
    """An MPI as mpi.MPI describes one, without an installation behind it."""

    kind: str
    bindir: Path = Path("/nonexistent/bin")
    version: str = "4.1"
    banner: str = "SimGrid 4.1 (SMPI)"

    @property
    def launcher(self) -> Path:
        return self.bindir / ("smpirun" if self.kind == "smpi" else "mpirun")

    @property
    def simulated(self) -> bool:
        return self.kind == "smpi"

    def env(self) -> dict[str, str]:
        return {}


def _record(algo="binomial", np=4, size=8, median=1.5, **kw):
    r = {"collective": "bcast", "algorithm": algo, "spec": algo, "params": "", "np": np,
         "size": size, "dtype": "char", "op": "sum", "root": 0, "iterations": 3, "warmup": 1,
         "timing": "osu", "rep_min_us": median, "mean_us": median, "median_us": median,
         "p90_us": median, "p99_us": median, "rep_max_us": median, "stddev_us": 0.0,
         "valid_reps": 1, "invalid": 0, "command": "x"}
    r.update(kw)
    return r


# ------------------------------------------------------------------ launching


def test_a_simulated_launch_is_smpirun_with_platform_hostfile_and_determinism(tmp_path,
                                                                              monkeypatch):
    monkeypatch.setenv("COLLTUNE_CACHE", str(tmp_path))
    plat = resolve("tapems-16x12")
    with launch.simulate(plat):
        ln = launch.prepare(FakeMPI("smpi"), 30, ["prog", "--x"],
                            placement=placement.Placement(mapping="node", order="seq"))
    argv = ln.argv
    assert argv[0].endswith("smpirun") and argv[1:3] == ["-np", "30"]
    xml = Path(argv[argv.index("-platform") + 1])
    hosts = Path(argv[argv.index("-hostfile") + 1]).read_text().split()
    assert xml.read_text() == plat.xml()
    assert hosts == plat.rank_hosts(30, "node", "seq") and len(hosts) == 30
    assert "--cfg=smpi/simulate-computation:no" in argv
    assert argv[-2:] == ["prog", "--x"]
    assert ln.nodes == 16 and ln.ppn == 2  # node mapping: spread over the 16 nodes
    assert any("simulated on platform 'tapems-16x12'" in n for n in ln.notes)
    # core mapping: consecutive ranks fill a node of 12 cores
    with launch.simulate(plat):
        ln = launch.prepare(FakeMPI("smpi"), 30, ["prog"])
    assert (ln.nodes, ln.ppn) == (3, 12)
    # without a platform: the default preset
    ln = launch.prepare(FakeMPI("smpi"), 2, ["prog"])
    assert any(f"'{launch.DEFAULT_PLATFORM}'" in n for n in ln.notes)


def test_simulated_process_counts_need_no_cores():
    assert placement.check_process_counts([1024, 4096], simulated=True) == []
    with pytest.raises(placement.LaunchError, match="--force"):
        placement.check_process_counts([placement.MAX_SIMULATED + 1], simulated=True)
    with pytest.raises(placement.LaunchError, match="oversubscribe"):
        placement.check_process_counts([placement.cores() * 4])


def test_simulated_bench_specs_use_few_iterations_and_refuse_what_cannot_be_simulated():
    spec = bench_mod.BenchSpec("bcast", ["binomial"], 64, [8])
    sim = bench_mod.for_simulation(spec)
    assert (sim.iterations, sim.warmup, sim.timing, sim.shared_buffers, sim.warmup_once,
            sim.prepare) == (bench_mod.SIM_ITERATIONS, bench_mod.SIM_WARMUP, "osu", True, True,
                             True)
    assert not spec.warmup_once and not spec.prepare  # measurements warm up every point
    assert bench_mod.for_simulation(bench_mod.BenchSpec("bcast", ["x"], 2, [8],
                                                        warmup_once=False)).warmup_once is False
    assert bench_mod.for_simulation(bench_mod.BenchSpec("bcast", ["x"], 2, [8], iterations=7,
                                                        validate=True)).shared_buffers is False
    for bad in (dict(timing="window"), dict(time_budget=1.0), dict(sleep_us=5.0)):
        with pytest.raises(bench_mod.BenchError, match="simulation"):
            bench_mod.for_simulation(bench_mod.BenchSpec("bcast", ["x"], 2, [8], **bad))


# ------------------------------------------------------------------ installer


def test_a_half_done_install_is_removed_and_done_again(tmp_path, monkeypatch):
    monkeypatch.setenv("COLLTUNE_CACHE", str(tmp_path))
    prefix = simgrid.prefix()
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "smpicc").write_text("#!/bin/sh\n")
    assert simgrid.installed_version() is None  # no stamp: not complete
    monkeypatch.setattr(simgrid, "check_prerequisites", lambda: None)

    def no_network(dest):
        raise simgrid.SimGridError("offline")

    monkeypatch.setattr(simgrid, "_download_sdist", no_network)
    with pytest.raises(simgrid.SimGridError, match="offline"):
        simgrid.install()
    assert not prefix.exists()  # the half-done install went first
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "smpicc").write_text("#!/bin/sh\n")
    (prefix / simgrid.STAMP).write_text(simgrid.stamp_text())
    assert simgrid.installed_version() == simgrid.VERSION
    assert simgrid.install() == prefix / "bin"  # complete: nothing done


def test_an_install_without_the_current_patch_is_done_again(tmp_path, monkeypatch):
    monkeypatch.setenv("COLLTUNE_CACHE", str(tmp_path))
    prefix = simgrid.prefix()
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "smpicc").write_text("#!/bin/sh\n")
    (prefix / simgrid.STAMP).write_text(simgrid.VERSION + "\n")  # before the patch
    assert simgrid.installed_version() is None
    (prefix / simgrid.STAMP).write_text(simgrid.stamp_text(patch="cpu-timer-0"))
    assert simgrid.installed_version() is None
    monkeypatch.setattr(simgrid, "check_prerequisites", lambda: None)

    def no_network(dest):
        raise simgrid.SimGridError("offline")

    monkeypatch.setattr(simgrid, "_download_sdist", no_network)
    said = []
    with pytest.raises(simgrid.SimGridError, match="offline"):
        simgrid.install(say=said.append)
    assert not prefix.exists()
    assert "without colltune's patch " + simgrid.PATCH in said[0]


def test_the_source_patch_applies_whole_or_not_at_all(tmp_path):
    """colltune's patch to SimGrid's source (simgrid.patch_source): on a tree with each
    text once, every edit is made; where one is missing, no file is touched."""
    texts: dict[str, str] = {}
    for rel, old, _ in simgrid._EDITS:
        texts[rel] = texts.get(rel, "// head\n") + old + "\n// between\n"
    for rel, text in texts.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    simgrid.patch_source(tmp_path)
    bench = (tmp_path / "src/smpi/internals/smpi_bench.cpp").read_text()
    assert bench.count("if (colltune_cpu_timer())") == 3
    assert "static bool colltune_cpu_timer()" in bench
    other = tmp_path / "other"
    (other / "src/smpi/internals").mkdir(parents=True)
    broken = texts["src/smpi/internals/smpi_bench.cpp"].replace("add_benched_time", "x")
    (other / "src/smpi/internals/smpi_bench.cpp").write_text(broken)
    with pytest.raises(simgrid.SimGridError, match="add_benched_time.*occurs 0 times"):
        simgrid.patch_source(other)
    assert (other / "src/smpi/internals/smpi_bench.cpp").read_text() == broken


def test_missing_boost_is_named(monkeypatch):
    monkeypatch.setattr(simgrid, "boost_headers", lambda: False)
    with pytest.raises(ColltuneError, match="libboost-dev"):
        simgrid.check_prerequisites()


# --------------------------------------------- simulated points kept apart


def _db_with_both(tmp_path) -> Path:
    path = tmp_path / "r.db"
    store.store_bench([_record(median=10.0, np=1)], mpi=FakeMPI("openmpi", banner="Open MPI v5"),
                      path=path)
    store.store_bench([_record(median=2.0, np=1024, simulated=True, platform="tapems-16x12")],
                      mpi=FakeMPI("smpi"), path=path, platform=resolve("tapems-16x12"))
    return path


def test_simulated_points_are_never_mixed_into_measurements(tmp_path):
    path = _db_with_both(tmp_path)
    conn = db.open_reader(path)
    try:
        measured = reader.measurements_frame(conn)
        both = reader.measurements_frame(conn, include_simulated=True)
        only = reader.measurements_frame(conn, only_simulated=True)
        run = conn.execute("SELECT simulated, platform, platform_description, simulator "
                           "FROM runs WHERE simulated = 1").fetchone()
    finally:
        conn.close()
    assert list(measured["median_us"]) == [10.0]
    assert sorted(both["median_us"]) == [2.0, 10.0]
    assert list(only["median_us"]) == [2.0] and list(only["platform"]) == ["tapems-16x12"]
    assert run[0] == 1 and run[1] == "tapems-16x12" and run[3].startswith("SimGrid 4.1")
    assert json.loads(run[2])["nodes"]["value"] == 16
    # 1024 simulated processes on this machine are not "oversubscribed"
    from colltune.analysis.evidence import oversubscribed

    assert not oversubscribed(both).any()
    # fit/model/plot/report read through load_measurements
    assert list(load_measurements(path)["median_us"]) == [10.0]
    assert sorted(load_measurements(path, include_simulated=True)["median_us"]) == [2.0, 10.0]
    assert list(load_measurements(path, only_simulated=True)["np"]) == [1024]


def test_results_and_export_leave_simulated_points_out_unless_asked(tmp_path):
    from click.testing import CliRunner

    from colltune.cli.results import export, results

    path = _db_with_both(tmp_path)
    r = CliRunner().invoke(results, ["--db", str(path), "--study", "(bench)", "--format",
                                     "csv"])
    assert r.exit_code == 0, r.output
    assert "1024" not in r.output and "10.0" in r.output
    r = CliRunner().invoke(results, ["--db", str(path), "--study", "(bench)", "--format",
                                     "csv", "--include-simulated"])
    assert "1024" in r.output and "tapems-16x12" in r.output
    out = tmp_path / "e.csv"
    r = CliRunner().invoke(export, ["--db", str(path), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert len(out.read_text().strip().splitlines()) == 2  # header + the measured point


def test_tune_makes_no_rules_from_simulated_points_unless_asked(tmp_path):
    from colltune.tuning import tune

    path = tmp_path / "t.db"
    conn = db.open_db(path)
    sid = store.upsert_study(conn, "sim", {"name": "sim"})
    run = store.store_run(conn, study_id=sid, mpi=FakeMPI("smpi"), round=1,
                          platform=resolve("flat"))
    store.store_unit(conn, study_id=sid, run_id=run, round=1, key="k", collective="bcast", np=64,
                     nodes=4, ppn=16, mapping="core", rank_order="seq", repetition=1,
                     algorithms=["binomial"], library_spec=None, command="smpirun", env={},
                     notes=[], started_at=db.now(), seconds=1.0,
                     records=[_record(np=64, simulated=True)])
    with pytest.raises(tune.TuneError, match="--include-simulated"):
        tune.read_frame(conn, "sim")
    frame, rnd = tune.read_frame(conn, "sim", include_simulated=True)
    assert len(frame) == 1 and rnd == 1
    conn.close()


def test_a_version_3_database_gets_the_simulation_columns(tmp_path, monkeypatch):
    path = tmp_path / "v3.db"
    monkeypatch.setattr(db, "MIGRATIONS", db.MIGRATIONS[:3])
    monkeypatch.setattr(db, "SCHEMA_VERSION", 3)
    conn = db.open_db(path)  # a database as colltune with schema 3 wrote it
    conn.execute("INSERT INTO runs (kind, status, started_at) VALUES ('bench', 'done', 'x')")
    conn.execute("INSERT INTO measurements (run_id, collective, algorithm, np, size, "
                 "median_us) VALUES (1, 'bcast', 'binomial', 2, 8, 1.0)")
    conn.commit()
    conn.close()
    monkeypatch.undo()
    conn = db.open_db(path)
    assert db.schema_version(conn) == db.SCHEMA_VERSION
    assert [tuple(r) for r in conn.execute("SELECT simulated FROM measurements")] == [(0,)]
    assert [tuple(r) for r in conn.execute("SELECT simulated, platform FROM runs")] == [(0, None)]
    conn.close()
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] >= 4


# ------------------------------------------------- with SimGrid installed


def test_every_algorithm_is_correct_under_smpi(smpi_build):
    from colltune.drivers import verify

    report = verify.run(smpi_build, [3, 4], ["bcast", "reduce", "gather", "allgather",
                                              "allreduce"], None, quick=True, timeout=600,
                        families=["main"])
    assert all(r.error is None and r.summary is not None for r in report.runs), \
        "\n".join(report.failure_lines())
    # SMPI 4.1's datatype engine drops data of MPI_Type_contiguous over a resized vector
    # when more than one such element is sent (checked with a plain MPI_Send/MPI_Recv;
    # Open MPI and MPICH deliver it): allgather_reduce sent its vectors so, with the
    # verifier's `vec` type, and failed here at np 4; it sends elements of the caller's
    # type now. Every case must pass.
    assert not [f for r in report.runs for f in r.failures], "\n".join(report.failure_lines())
    algos = {(a["collective"], a["algorithm"]) for r in report.runs for a in r.algos}
    assert ("bcast", "binomial") in algos and ("allreduce", "ring") in algos
    assert report.cases > 100


def test_alltoall_alltoallv_scatter_barrier_are_correct_under_smpi(smpi_build):
    """Issue 30's collectives under SMPI, the in-place and `vec` cases of Alltoallv
    included: SimGrid 4.1's own in-place MPI_Alltoallv copies (displacement + count) x
    the type's size, not its extent, of the receive buffer (wrong data, and reads past
    its copy, for a type with holes), so under SMPI the verifier takes that reference
    from the same exchange not in place; every case must pass."""
    from colltune.drivers import verify

    report = verify.run(smpi_build, [3, 4], ["alltoall", "alltoallv", "scatter", "barrier"],
                        None, quick=True, timeout=600, families=["main"])
    assert all(r.error is None and r.summary is not None for r in report.runs), \
        "\n".join(report.failure_lines())
    assert not [f for r in report.runs for f in r.failures], "\n".join(report.failure_lines())
    algos = {(a["collective"], a["algorithm"]) for r in report.runs for a in r.algos}
    assert {("alltoallv", "linear"), ("alltoallv", "pairwise"), ("scatter", "binomial"),
            ("barrier", "tree")} <= algos
    assert report.cases > 1000


def test_the_remap_family_runs_under_smpi(smpi_build):
    """The remap family changes COLLTUNE_NODES per layout; under SMPI the ranks share one
    environment, and a rank reading another's layout made the launch deadlock at np 4."""
    from colltune.drivers import verify

    report = verify.run(smpi_build, [3, 4], ["bcast", "reduce", "allgather", "allreduce"],
                        None, quick=True, timeout=600, families=["remap"])
    assert all(r.error is None and r.summary is not None for r in report.runs), \
        "\n".join(report.failure_lines())
    assert not [f for r in report.runs for f in r.failures], "\n".join(report.failure_lines())
    assert report.cases > 10000


def test_simulated_times_are_deterministic(smpi_build):
    spec = bench_mod.BenchSpec("bcast", ["binomial", "pipeline", "native"], 8, [8, 65536],
                               reps=1)
    with launch.simulate("flat"):
        a, _ = bench_mod.run(smpi_build, spec, timeout=300)
        b, _ = bench_mod.run(smpi_build, spec, timeout=300)
    key = [(r["spec"], r["size"], r["median_us"], r["rank_max_us"]) for r in a]
    assert key == [(r["spec"], r["size"], r["median_us"], r["rank_max_us"]) for r in b]
    assert all(r["simulated"] and r["platform"] == "flat" for r in a)
    assert all(r["median_us"] > 0 for r in a)
    # 64 KiB costs more than 8 B on the simulated network
    t = {(r["spec"], r["size"]): r["median_us"] for r in a}
    assert t[(a[0]["spec"], 65536)] > t[(a[0]["spec"], 8)]


def test_the_patched_cpu_timer_changes_no_simulated_time(smpi_build):
    """colltune's patch reads the CPU clock only where the reading is used;
    `smpi/display-timing:yes` reads it as unpatched SimGrid does. The same
    simulated times either way (a ring Allreduce: many calls, each one benched)."""
    assert simgrid.installed_version() == simgrid.VERSION  # installed with the patch
    spec = bench_mod.BenchSpec("allreduce", ["ring", "recursive_doubling"], 12, [8, 65536],
                               reps=1)
    runs = []
    for cfg in ((), ("smpi/display-timing:yes",)):
        with launch.simulate("tapems-16x12", cfg):
            recs, _ = bench_mod.run(smpi_build, spec, timeout=300)
        runs.append([(r["spec"], r["size"], r["median_us"], r["rank_max_us"]) for r in recs])
    assert len(runs[0]) == 4 and all(t[2] > 0 for t in runs[0])
    assert runs[0] == runs[1]


def test_the_solver_precision_changes_no_simulated_time(smpi_build):
    """Simulated launches pass precision/work-amount:1e-3 (marconi100's 512 ranks abort
    in SimGrid's solver at its default 1e-5; docs/simulation.md): where the default
    runs, the same simulated times (the later --cfg, SimGrid's default, wins)."""
    spec = bench_mod.BenchSpec("allreduce", ["ring", "hier_ml"], 64, [8, 65536], reps=1)
    runs = []
    for cfg in ((), ("precision/work-amount:1e-5",)):
        with launch.simulate("marconi100", cfg), launch.session() as s:
            recs, _ = bench_mod.run(smpi_build, spec, timeout=300)
        argv = s.launches[0].argv
        assert "--cfg=precision/work-amount:1e-3" in argv
        assert ("--cfg=precision/work-amount:1e-5" in argv) == bool(cfg)
        runs.append([(r["spec"], r["size"], r["median_us"], r["rank_max_us"]) for r in recs])
    assert len(runs[0]) == 4 and all(t[2] > 0 for t in runs[0])
    assert runs[0] == runs[1]


def test_the_preloaded_allocator_changes_no_simulated_time(smpi_build, monkeypatch):
    """smpirun runs with mimalloc (or tcmalloc) preloaded where one is installed, and
    without it under COLLTUNE_SIM_MALLOC=off: the same simulated times either way."""
    lib = simgrid.allocator()
    if lib is None:
        pytest.skip("no mimalloc or tcmalloc here (Debian: libmimalloc2.0)")
    spec = bench_mod.BenchSpec("allreduce", ["ring", "rabenseifner"], 12, [8, 65536], reps=1)
    runs = []
    for choice in ("auto", "off"):
        monkeypatch.setenv("COLLTUNE_SIM_MALLOC", choice)
        with launch.simulate("tapems-16x12"), launch.session() as s:
            recs, _ = bench_mod.run(smpi_build, spec, timeout=300)
        preloads = [ln.env.get("LD_PRELOAD", "") for ln in s.launches]
        assert preloads and all((lib in p) == (choice == "auto") for p in preloads)
        runs.append([(r["spec"], r["size"], r["median_us"], r["rank_max_us"]) for r in recs])
    assert len(runs[0]) == 4 and all(t[2] > 0 for t in runs[0])
    assert runs[0] == runs[1]


def test_the_allocator_setting_is_checked(monkeypatch, tmp_path):
    env = {"LD_PRELOAD": "/x/other.so"}
    monkeypatch.setenv("COLLTUNE_SIM_MALLOC", "off")
    assert simgrid.allocator() is None and simgrid.preload_env(env) is None
    assert env == {"LD_PRELOAD": "/x/other.so"}
    lib = tmp_path / "libfast.so"
    lib.write_bytes(b"")
    monkeypatch.setenv("COLLTUNE_SIM_MALLOC", str(lib))
    assert simgrid.preload_env(env) == str(lib)
    assert env["LD_PRELOAD"] == f"{lib}:/x/other.so"  # in front of what was preloaded
    monkeypatch.setenv("COLLTUNE_SIM_MALLOC", str(tmp_path / "missing.so"))
    with pytest.raises(ColltuneError, match="no such file"):
        simgrid.allocator()
    monkeypatch.setenv("COLLTUNE_SIM_MALLOC", "libnosuchallocator.so.9")
    with pytest.raises(ColltuneError, match="does not know"):
        simgrid.allocator()
    # a prepared simulated launch carries it and says so
    monkeypatch.setenv("COLLTUNE_SIM_MALLOC", str(lib))
    ln = launch.prepare(FakeMPI("smpi"), 4, ["prog"])
    assert ln.env["LD_PRELOAD"].startswith(str(lib))
    assert any("memory allocator" in n for n in ln.notes)


def test_the_scale_presets_cover_64_to_4096_processes(ompi_build):
    from colltune.drivers import registry
    from colltune.studies.study import read_preset

    scale, big = read_preset("scale"), read_preset("scale4096")
    assert scale.processes == [64, 128, 256, 512, 1024] and big.processes == [4096]
    for s in (scale, big):  # one timed call a point, no warm-up call (prepared instead)
        assert (s.iterations, s.warmup, s.mpi, s.platform) == (1, 0, "smpi", "tapems-16x12")
    every = {c: set(registry.names(ompi_build, c)) for c in ("bcast", "allreduce")}
    assert set(scale.algorithms["bcast"]) == {"ours", "native"}
    # the node-aware algorithms have their own preset (hier); shm runs its declared
    # fallback under SMPI
    node_aware = {"hier", "hier_ml", "shm"}
    assert every["allreduce"] - set(scale.algorithms["allreduce"]) == {"allgather_reduce",
                                                                      *node_aware}
    # at 4096 the algorithms whose messages grow as p^2 are left out, and only they
    assert every["bcast"] - set(big.algorithms["bcast"]) == {"scatter_ring_allgather",
                                                              "scatter_direct_allgather",
                                                              *node_aware}
    assert every["allreduce"] - set(big.algorithms["allreduce"]) == {
        "allgather_reduce", "ring", "segmented_ring", *node_aware}


def test_prepared_communicators_make_warm_up_calls_unneeded(smpi_build):
    """The simulation's defaults (no warm-up call, each algorithm's communicators made
    before its first point, one timed call) give every call the time of a later call,
    and the time a warm-up before every point gives; without --prepare the launch's
    first call of an algorithm is slower (it makes the private duplicate, and for a
    remap the permuted communicator: messages the simulation charges)."""
    algos = ["pipeline", "binomial:remap=rr", "native"]
    plat = resolve("tapems-16x12")
    place = placement.Placement(mapping="node", order="seq", nodes=2)

    def run(**kw):
        spec = bench_mod.BenchSpec("bcast", algos, 6, [8, 65536], reps=2, raw=True, **kw)
        with launch.simulate(plat), launch.session(place):
            recs, _ = bench_mod.run(smpi_build, spec, timeout=300)
        return {(r["spec"], r["size"]): r["samples_us"] for r in recs}

    new = run(iterations=1)
    old = run(iterations=2, warmup=1, warmup_once=False, prepare=False)
    cold = run(iterations=1, warmup=0, prepare=False)
    for key, (first, second) in new.items():
        assert first == pytest.approx(second, rel=1e-3), key
        assert first == pytest.approx(old[key][0], rel=1e-3), key
    for algo in algos[:2]:  # the launch's first call of ours makes communicators
        first, second = cold[(algo, 8)]
        assert first > second * 1.001, (algo, first, second)


def test_the_report_shows_simulated_points_in_a_section_of_their_own(tmp_path):
    from colltune.output.report import build_report

    path = _db_with_both(tmp_path)
    measured = load_measurements(path)
    sim = load_measurements(path, only_simulated=True)
    text, parts = build_report(measured.iloc[0:0], db_path=path, simulated=sim)
    assert "Simulated (SimGrid 4.1, platform tapems-16x12) &mdash; not measurements" in text
    assert "np 1024" in text and any(f.kind == "simulated" for f in parts.figures)
    assert 'id="summary"' not in text  # nothing simulated in the measured sections


def _swept(dbp, study: str, *args):
    """colltune sweep ARGS into dbp; the study's simulated points."""
    from conftest import colltune

    r = colltune("sweep", *args, "--db", str(dbp), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    conn = db.open_reader(dbp)
    try:
        return reader.measurements_frame(conn, study=study, only_simulated=True)
    finally:
        conn.close()


def test_the_alltoall_sim_preset_runs_on_a_seeds_cluster(smpi_build, tmp_path):
    """`alltoall-sim` at its smallest count: every colltune Alltoall algorithm and SMPI's
    native at every size, stored as simulated on orfeo-thin, 8 processes on 2 nodes;
    larger messages take longer."""
    from colltune.drivers import registry

    df = _swept(tmp_path / "a2a.db", "alltoall-sim", "--preset", "alltoall-sim", "--np", "8")
    assert set(df["platform"]) == {"orfeo-thin"} and set(df["np"]) == {8}
    assert set(df["nodes"]) == {2}
    want = set(registry.names(smpi_build, "alltoall"))
    assert "native" in want and set(df["algorithm"]) == want
    assert sorted(set(df["size"])) == [8, 512, 4096, 65536]
    t = df.groupby(["algorithm", "size"])["median_us"].median()
    for a in want:
        assert t[(a, 65536)] > t[(a, 8)] > 0


def test_a_study_measures_each_count_in_several_layouts_and_tune_makes_ppn_rules(
        smpi_build, tmp_path):
    """study.nodes as a list: every process count in each layout (8 processes on 1 node
    and on 4 nodes of tapems-16x12), recorded with its processes per node; tune then
    decides per ppn and its rules carry ppn ranges (first from 1, last open)."""
    from conftest import colltune

    st = tmp_path / "layouts.toml"
    st.write_text('[study]\nname = "layouts"\ncollectives = ["bcast"]\n'
                  'algorithms = ["binomial", "linear", "native"]\nsizes = [8, 65536]\n'
                  'processes = [8]\nrepetitions = 2\nmpi = "smpi"\n'
                  'platform = "tapems-16x12"\nmapping = ["node"]\nnodes = [1, 4]\n')
    dbp = tmp_path / "l.db"
    df = _swept(dbp, "layouts", str(st))
    assert set(zip(df["nodes"], df["ppn"])) == {(1, 8), (4, 2)}
    out = tmp_path / "t.rules"
    r = colltune("tune", "--db", str(dbp), "--study", "layouts", "--include-simulated",
                 "--target", "colltune", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "processes per node: 2, 8" in r.stdout + r.stderr
    rs = rules.read(out)
    spans = sorted({x.ppn for x in rs.rules if x.ppn is not None})
    assert len(spans) == len({x.ppn for x in rs.rules}), rs.rules  # every rule has a range
    # from 1 to no bound, contiguous (between the layouts the choices switch where their
    # times cross, so the ranges need not end at 7)
    assert spans[0][0] == 1 and spans[-1][1] is None, spans
    assert all(a[1] + 1 == b[0] for a, b in zip(spans, spans[1:])), spans
    # a layout that cannot be made is refused before launching
    st.write_text(st.read_text().replace('mpi = "smpi"\nplatform = "tapems-16x12"\n', ""))
    r = colltune("sweep", str(st), "--db", str(tmp_path / "x.db"))
    assert r.returncode == 2 and "this machine is one node" in r.stderr


def test_a_replay_of_the_device_measurements_simulates_what_was_simulated_there(tmp_path):
    """lab/scripts/sim_vs_measured_algos.py --replay: the device machine's measurements
    and calibrated platforms (lab/data/device-2026-11-28), simulated
    again here, give the simulated times simulated there to the digit (the simulation
    depends on the platform and the code, not on the machine it runs on)."""
    import subprocess
    import sys

    from colltune.mpi import simgrid

    if simgrid.installed_version() is None:
        pytest.skip("SimGrid is not installed in the colltune cache")
    repo = Path(__file__).resolve().parent.parent
    src = repo / "lab" / "data" / "device-2026-11-28" / "b-simacc-1.json"
    out = tmp_path / "replay.json"
    judge = src.with_name("b-simacc-2.json")
    script = repo / "lab" / "scripts" / "sim_vs_measured_algos.py"
    res = subprocess.run([sys.executable, str(script),
                          "--replay", str(src), "--colls", "allreduce,allgather", "-o", str(out),
                          "--judge", str(judge)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    there = json.loads(src.read_text())
    here = json.loads(out.read_text())
    want = {(r["collective"], r["algorithm"], r["size"]): r for r in there["rows"]
            if r["collective"] in ("allreduce", "allgather")}
    got = {(r["collective"], r["algorithm"], r["size"]): r for r in here["rows"]}
    assert set(got) == set(want) and len(got) == (8 + 10) * 4  # algorithms and native
    for k, r in want.items():
        assert got[k]["simulated_us"] == r["simulated_us"], k
        assert got[k]["simulated_uncharged_us"] == r["simulated_uncharged_us"], k
        assert got[k]["measured_us"] == r["measured_us"], k
    assert here["replayed_from"] == str(src) and here["machine"] == there["machine"]
    # the choices made from the simulation, judged by the machine's second run
    other = {(r["collective"], r["algorithm"], r["size"]): r["measured_us"]
             for r in json.loads(judge.read_text())["rows"] if r["algorithm"] != "native"}
    sel = {(r["collective"], r["size"]): r for r in here["selection"]}
    assert len(sel) == 2 * 4 and here["selection_judged_by"] == str(judge)
    for (coll, size), r in sel.items():
        meas = {a: t for (c, a, m), t in other.items() if c == coll and m == size}
        best = min(meas.values())
        assert r["measured_best_us"] == best and meas[r["measured_best"]] == best
        picks = r["charged"]["picks"]
        assert "native" not in picks
        assert r["charged"]["regret_worst"] == max(meas[a] for a in picks) / best
        assert r["charged"]["regret_best"] == min(meas[a] for a in picks) / best >= 1
        sims = {a: got[(coll, a, size)]["simulated_us"] for a in meas}
        assert max(sims[a] for a in picks) <= min(sims.values()) * 1.001
    text = " ".join(res.stdout.split())  # the console wraps long lines
    assert "choosing from the simulation, charged: 8 points" in text
    assert "(what noise alone costs)" in text


def test_choosing_from_the_simulation_counts_ties_and_judges_by_the_other_run():
    """sim_vs_measured_algos.selection: the simulation's first place (ties within
    EXACT_TOL, native left out) against the measured fastest, here and on a second
    run's measurements."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "lab" / "scripts" / "sim_vs_measured_algos.py"
    spec = importlib.util.spec_from_file_location("sim_vs_measured_algos", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def row(algo, meas, sim, unch):
        return {"collective": "bcast", "algorithm": algo, "size": 64, "measured_us": meas,
                "simulated_us": sim, "simulated_uncharged_us": unch}

    rows = [row("native", 1.0, 0.1, 0.1), row("a", 2.0, 5.0, 3.0),
            row("b", 3.0, 5.004, 4.0), row("c", 2.5, 6.0, 2.0)]
    (r,) = mod.selection(rows)
    assert r["measured_best"] == "a"  # native, faster, is not a candidate
    assert r["charged"]["picks"] == ["a", "b"]  # 5.004 within 0.1 % of 5.0
    assert r["charged"]["regret_best"] == 1.0 and r["charged"]["regret_worst"] == 1.5
    assert r["uncharged"]["picks"] == ["c"] and r["uncharged"]["regret_worst"] == 1.25
    assert "measured_pick" not in r
    again = [row("a", 4.0, 0, 0), row("b", 2.0, 0, 0), row("c", 3.0, 0, 0)]
    (j,) = mod.selection(rows, again)
    assert j["measured_best"] == "b" and j["charged"]["regret_worst"] == 2.0
    assert j["measured_pick"] == "a" and j["measured_pick_regret"] == 2.0
    assert mod.selection([row("a", 1.0, 1.0, 1.0)]) == []  # one candidate: nothing to choose


def test_the_message_floor_benchmark_simulates_three_patterns_alike(smpi_build):
    """lab/scripts/sim_message_floor.py: the bare ring in its three call patterns, one
    simulated time for all (the same messages, a step each), a table of figures."""
    import re
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[1] / "lab" / "scripts" / "sim_message_floor.py"
    res = subprocess.run([sys.executable, str(script), "--np", "6", "--size", "2K"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    sims = re.findall(r"run 1 (\w+): [\d.]+ s, simulated ([\d.]+) µs", res.stdout)
    assert [p for p, _ in sims] == ["sendrecv", "send", "isend"], res.stdout
    assert len({t for _, t in sims}) == 1 and float(sims[0][1]) > 0
    assert "60 messages of 2048 B" in res.stdout
    bad = subprocess.run([sys.executable, str(script), "--patterns", "sendrecv,bogus"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "bogus" in bad.stderr
