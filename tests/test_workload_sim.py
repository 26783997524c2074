"""Load inside a simulation (issue 18, docs/workload.md): generator ranks in the same
SMPI launch as the measured ones (colltune-bench --load-ranks), placed on other nodes of
the platform, the probe in the launch, simulated load studies stored with load_level,
probe_us and the simulated flag. Few ranks: the SimGrid parts take seconds."""

from __future__ import annotations

import sqlite3
import textwrap

import pytest

from colltune.results import db as db_mod
from colltune.mpi import launch
from colltune.studies import study as study_mod
from colltune.studies import sweep
from colltune.drivers import loadgen as workload
from colltune.drivers.bench import BenchSpec, SimLoad
from colltune.mpi.platforms import PlatformError, resolve
from colltune.mpi.platforms import loads as platform_loads

# 16 nodes of 2 cores behind one switch whose backbone (10 GB/s) every pair of nodes
# shares: traffic between any two other nodes competes with the measured ranks' own
SWITCHED = textwrap.dedent("""\
    name = "test-switched"
    about = "test: 16 nodes of 2 cores, one switch with a shared 10 GB/s backbone"
    nodes = 16
    sockets = 1
    cores_per_socket = 2
    topology = "flat"

    [intra]
    latency_us = 0.5
    bandwidth_GBps = 10.0

    [network]
    latency_us = 1.0
    bandwidth_GBps = 10.0
    switch_bandwidth_GBps = 10.0
    """)


def test_load_hosts_are_other_nodes_spread_over_the_machine():
    m100 = resolve("marconi100")
    job = m100.rank_hosts(64, "node", "seq", nodes=16)
    assert len(set(job)) == 16
    gen = m100.load_hosts(job, 100)
    assert len(gen) == len(set(gen)) == 100 and not set(gen) & set(job)
    idx = sorted(int(h.split("-")[1]) for h in gen)
    islands = {i // 252 for i in idx}  # 4 islands of 14 x 18 nodes
    assert islands == {0, 1, 2, 3}
    flat = platform_loads(SWITCHED)
    assert flat.load_hosts(["node-0", "node-1"], 3) == ["node-2", "node-3", "node-4"]
    with pytest.raises(PlatformError, match="14 more"):
        flat.load_hosts(["node-0", "node-1"], 15)


def test_simulated_levels_send_continuously_and_draw_seeds_per_launch():
    lv = workload.LoadLevel("x", "pairs", 4, 1 << 20, 2, 0.5)
    with pytest.raises(workload.LoadError, match="duty 0.5"):
        workload.sim_level(lv)
    heavy = workload.LoadLevel("h", "alltoall", 8, 65536, 2, 1.0)
    a = workload.sim_load(heavy, "key-a", 1, 50)
    assert (a.np, a.pattern, a.size, a.window, a.probe_iterations) == (8, "alltoall", 65536,
                                                                      2, 50)
    assert a.seed != workload.sim_load(heavy, "key-a", 2).seed  # another round
    assert a.seed != workload.sim_load(heavy, "key-b", 1).seed  # another launch
    assert a.seed == workload.sim_load(heavy, "key-a", 1).seed
    quiet = workload.sim_load(workload.LEVELS["none"], "k", 1, 30)
    assert quiet.np == 0 and "--load-ranks" not in quiet.args()
    assert quiet.args()[:2] == ["--probe-iterations", "30"]


def test_local_bench_refuses_generator_ranks():
    from colltune.drivers import bench

    class _Mpi:
        simulated = False

    class _Build:
        mpi = _Mpi()

    with pytest.raises(bench.BenchError, match="for simulation"):
        bench.run(_Build(), BenchSpec("bcast", ["native"], 2, [8], load=SimLoad(np=2)))


def _study(tmp_path, levels: str, extra: str = "") -> study_mod.Study:
    plat = tmp_path / "switched.toml"
    plat.write_text(SWITCHED)
    text = textwrap.dedent(f"""\
        [study]
        name = "simload"
        collectives = ["bcast"]
        algorithms = ["native", "binomial"]
        sizes = [8, "1M"]
        processes = [4]
        mapping = ["node"]
        mpi = "smpi"
        platform = "{plat}"
        load = ["none", "heavy"]
        probe_iterations = 20
        repetitions = 1
        {extra}
        """) + levels
    return study_mod.loads(text, source=str(tmp_path / "simload.toml"), base_dir=tmp_path)


HEAVY = textwrap.dedent("""\
    [study.load_levels.heavy]
    pattern = "pairs"
    np = 8
    size = "1M"
    window = 4
    duty = 1.0
    """)


def test_a_duty_cycle_is_refused_under_simulation(tmp_path, smpi_build):
    st = _study(tmp_path, HEAVY.replace("duty = 1.0", "duty = 0.5"))
    with pytest.raises(study_mod.StudyError, match="sends continuously"):
        sweep.make_plan(st, smpi_build)


def test_generator_ranks_slow_a_simulated_bcast(tmp_path, smpi_build):
    from colltune.drivers import bench

    plat = tmp_path / "switched.toml"
    plat.write_text(SWITCHED)
    out = {}
    with launch.simulate(str(plat), workload.SIM_CFG):
        for name, load in (("none", SimLoad(np=0, probe_iterations=20)),
                           ("heavy", SimLoad(np=8, size=1 << 20, window=4, seed=7,
                                             probe_iterations=20))):
            recs, notes = bench.run(smpi_build, BenchSpec("bcast", ["binomial"], 4, [8, 1 << 20],
                                                          load=load))
            out[name] = ({r["size"]: r["median_us"] for r in recs}, recs, notes)
    quiet, heavy = out["none"], out["heavy"]
    # the 1 MiB Bcast shares the switch's backbone with 8 generator ranks: strictly slower
    assert heavy[0][1 << 20] > 1.5 * quiet[0][1 << 20]
    assert heavy[1][0]["probe_us"] > quiet[1][0]["probe_us"] > 0
    # core mapping: the 4 measured ranks fill 2 nodes of 2 cores; the generator is elsewhere
    assert all(r["simulated"] and r["nodes"] == 2 for r in heavy[1])
    gen = heavy[1][0]["load_generator"]
    assert gen["np"] == 8 and gen["measured_np"] == 4 and gen["rounds"] >= 1
    assert gen["bytes"] >= 8 * 4 * (1 << 20)
    assert any("load generator inside the simulation: 8 ranks" in n for n in heavy[2])
    assert "load_generator" not in quiet[1][0]


def test_a_simulated_load_study_is_stored_with_levels_and_probe(tmp_path, smpi_build):
    st = _study(tmp_path, HEAVY)
    plan = sweep.make_plan(st, smpi_build)
    assert plan.platform is not None and len(plan.units) == 2
    conn = db_mod.open_db(tmp_path / "r.db")
    oc = sweep.execute(plan, conn, progress=False)
    assert oc.done == 2 and oc.failed == 0
    conn.close()
    c = sqlite3.connect(tmp_path / "r.db")
    rows = c.execute("SELECT algorithm, size, load_level, probe_us, median_us, simulated "
                     "FROM measurements").fetchall()
    assert len(rows) == 8 and all(r[5] == 1 and r[3] is not None for r in rows)
    lat = {(r[0], r[1], r[2]): r[4] for r in rows}
    probe = {r[2]: r[3] for r in rows}
    assert probe["heavy"] > probe["none"]
    assert lat[("binomial", 1 << 20, "heavy")] > lat[("binomial", 1 << 20, "none")]
    notes = " ".join(r[0] for r in c.execute("SELECT notes FROM units"))
    assert "load generator inside the simulation" in notes


def test_probe_size_is_a_study_key_and_part_of_the_launch_key(tmp_path):
    st = _study(tmp_path, HEAVY, 'probe_size = "64K"')
    assert st.probe_size == 65536
    assert _study(tmp_path, HEAVY).probe_size == workload.PROBE_SIZE
    with pytest.raises(study_mod.StudyError, match="probe_size"):
        _study(tmp_path, HEAVY, 'probe_size = "lots"')
    unit = sweep.Unit("bcast", 4, "node", "seq", 1, ("native",), None, "", "heavy")

    class _Mpi:
        kind, version = "smpi", "4.1"

    class _Build:
        mpi = _Mpi()

    keys = {sweep._unit_key(s, _Build(), "bcast", 4, "node", "seq", 1, unit.algos, None,
                            load="heavy")
            for s in (st, _study(tmp_path, HEAVY))}
    assert len(keys) == 2
