"""colltune.platform: SimGrid platform files, host lists, presets, calibration."""

from __future__ import annotations

import dataclasses
import json
import xml.etree.ElementTree as ET

import pytest

from colltune.mpi import platforms as P
from colltune.base.errors import ColltuneError


def _cluster(p: P.Platform) -> ET.Element:
    text = p.xml()
    assert text.startswith("<?xml") and '<platform version="4.1">' in text
    root = ET.fromstring(text.split("\n", 2)[2])  # past the declaration and DOCTYPE
    clusters = root.findall("./zone/cluster")
    assert len(clusters) == 1
    return clusters[0]


@pytest.mark.parametrize("name", P.PRESETS)
def test_presets_give_valid_xml_with_their_hosts_and_cores(name):
    p = P.resolve(name)
    if p.intra_shared_bandwidth_GBps is not None:  # hosts, links and routes written out
        root = ET.fromstring(p.xml().split("\n", 2)[2])
        hosts = root.findall("./zone/host")
        assert [h.get("id") for h in hosts] == p.hosts
        assert {int(h.get("core")) for h in hosts} == {p.sockets * p.cores_per_socket}
        assert len(root.findall("./zone/route")) == p.nodes ** 2
    else:
        c = _cluster(p)
        lo, hi = (int(x) for x in c.get("radical").split("-"))
        assert hi - lo + 1 == p.nodes
        assert int(c.get("core")) == p.sockets * p.cores_per_socket
        assert c.get("prefix") == "node-"
        assert c.get("loopback_bw").endswith("Bps") and c.get("loopback_lat").endswith("us")
    d = p.describe()
    json.dumps(d)  # JSON-able
    for key in ("nodes", "sockets", "cores_per_socket", "intra_latency", "intra_bandwidth",
                "net_latency", "net_bandwidth"):
        assert d[key]["source"] and d[key]["source"] != "not stated", (name, key)


def test_figures_reach_the_xml():
    p = P.resolve("tapems-16x12")
    c = _cluster(p)
    assert float(c.get("bw")[:-3]) == pytest.approx(3.2e9)
    # node-to-node latency 1.5 us over two links (up to the switch, down from it)
    assert float(c.get("lat")[:-2]) == pytest.approx(0.75)
    assert c.get("topology") is None  # flat: SimGrid's default
    m = _cluster(P.resolve("marconi100"))
    assert m.get("topology") == "DRAGONFLY" and m.get("topo_parameters") == "4,18;1,1;14,18;18"


def test_seq_and_rr_on_16_nodes_of_12():
    p = P.resolve("tapems-16x12")
    seq = p.rank_hosts(24, "core", "seq")
    rr = p.rank_hosts(24, "core", "rr")
    assert seq == ["node-0"] * 12 + ["node-1"] * 12
    assert rr == ["node-0", "node-1"] * 12
    # node mapping spreads over every node; seq and rr agree with one rank a node... 
    assert p.rank_hosts(16, "node", "seq") == [f"node-{i}" for i in range(16)]
    # ... and give blocks vs round-robin with two a node
    assert p.rank_hosts(32, "node", "seq")[:4] == ["node-0", "node-0", "node-1", "node-1"]
    assert p.rank_hosts(32, "node", "rr")[:4] == ["node-0", "node-1", "node-2", "node-3"]
    assert p.rank_hosts(8, "core", "seq", nodes=4) == ["node-0", "node-0", "node-1", "node-1",
                                                      "node-2", "node-2", "node-3", "node-3"]
    assert p.hostfile(3) == "node-0\nnode-0\nnode-0\n"


def test_spread_allocation_crosses_islands():
    p = P.resolve("marconi100")
    hosts = p.rank_hosts(512, "core", "seq")
    nodes = sorted({int(h.split("-")[1]) for h in hosts})
    assert len(nodes) == 16 and len(hosts) == 512
    islands = {n // 252 for n in nodes}
    assert islands == {0, 1, 2, 3}


def test_too_many_processes_is_an_error_with_the_numbers():
    p = P.resolve("tapems-16x12")
    with pytest.raises(ColltuneError, match=r"193 processes.*16 node\(s\) x 12 cores = 192"):
        p.rank_hosts(193)
    assert len(p.rank_hosts(193, oversubscribe=True)) == 193
    with pytest.raises(ColltuneError, match="mapping 'cores'.*did you mean 'core'"):
        p.rank_hosts(4, "cores")
    with pytest.raises(ColltuneError, match="order 'round'.*valid: seq, rr"):
        p.rank_hosts(4, "core", "round")


def test_resolve_errors_list_the_presets(tmp_path):
    with pytest.raises(ColltuneError, match="did you mean 'tapems-16x12'.*presets: orfeo-thin"):
        P.resolve("tapems")
    bad = tmp_path / "p.toml"
    bad.write_text('name = "x"\nnodes = 4\ntopology = "fat-tree"\ntopo_parameters = "2;2,2;1,2;1,1"\n'
                   "[intra]\nlatency_us = 1\nbandwidth_GBps = 1\n"
                   "[network]\nlatency_us = 1\nbandwidth_GBps = 1\n")
    assert P.resolve(str(bad)).nodes == 4
    bad.write_text(bad.read_text().replace("nodes = 4", "nodes = 5"))
    with pytest.raises(ColltuneError, match="has 4 nodes, the description says nodes = 5"):
        P.resolve(str(bad))
    bad.write_text(bad.read_text().replace('"fat-tree"', '"fattree"'))
    with pytest.raises(ColltuneError, match="did you mean 'fat-tree'"):
        P.resolve(str(bad))
    bad.write_text('name = "x"\nnodez = 3\n')
    with pytest.raises(ColltuneError, match="unknown key 'nodez'.*did you mean 'nodes'"):
        P.resolve(str(bad))


def test_topology_parameters_are_checked():
    assert P.topology_leaves("torus", "4,4,2") == 32
    assert P.topology_leaves("fat-tree", "2;4,4;1,2;1,2") == 16
    assert P.topology_leaves("dragonfly", "3,4;4,3;5,1;2") == 120
    for topo, params in (("torus", "4,x"), ("fat-tree", "2;4;1,2;1,2"), ("dragonfly", "3;4,3;5,1;2"),
                         ("torus", "")):
        with pytest.raises(ColltuneError):
            P.topology_leaves(topo, params)


def test_description_round_trips_through_toml():
    for name in P.PRESETS:
        p = P.resolve(name)
        q = P.loads(p.to_toml())
        assert (q.nodes, q.cores, q.net_latency_us, q.intra_bandwidth_GBps, q.topology,
                q.topo_parameters, q.allocation) == (p.nodes, p.cores, p.net_latency_us,
                                                    p.intra_bandwidth_GBps, p.topology,
                                                    p.topo_parameters, p.allocation)
        assert dict(q.sources) == dict(p.sources)


def _records(alpha=0.5, beta=4.0, bump=None):
    out = []
    for k in range(3, 21):
        m = 2 ** k
        t = alpha + m / (beta * 1e3)
        if bump and m in bump:
            t *= bump[m]
        out.append({"kind": "pingpong", "size": m, "min_us": t, "median_us": t * 1.1,
                    "mpi": "test"})
    return out


def test_hockney_fit_recovers_alpha_and_beta_despite_outliers():
    recs = _records(bump={4096: 5.0, 8192: 8.0})
    a, b, info = P.fit_hockney([r["size"] for r in recs], [r["min_us"] for r in recs])
    assert a == pytest.approx(0.5, rel=0.02) and b == pytest.approx(4.0, rel=0.02)
    assert 8192 in info["downweighted_points"]


def test_calibration_factors_reproduce_the_measured_times():
    recs = _records(bump={1024: 1.5, 65536: 0.8})
    p = P.calibrated(recs, cores=2, when="2026-01-01T00:00:00Z")
    assert p.cores == 2 and p.name == "this-machine"
    lat = dict(p.lat_factors)
    bw = dict(p.bw_factors)

    def factor(fs, payload):  # SimGrid: the entry with the largest bound < payload
        return [f for s, f in sorted(fs.items()) if s < payload][-1]

    for r in recs:
        m = r["size"]
        pay = m + P.SMPI_ENVELOPE_BYTES  # what SMPI sends and looks factors up by
        sim = (p.intra_latency_us * factor(lat, pay)
               + pay / (p.intra_bandwidth_GBps * 1e3 * factor(bw, pay)))
        assert sim == pytest.approx(r["min_us"], rel=1e-4), m
    cfg = P.simgrid_cfg(p)
    assert "--cfg=network/model:raw" in cfg
    assert any(c.startswith("--cfg=network/latency-factor:0:") for c in cfg)
    back = P.loads(p.to_toml())
    assert back.lat_factors == p.lat_factors and back.calibration["date"] == "2026-01-01T00:00:00Z"


def _exchange(records, factor):
    """Exchange records (two messages at once) taking `factor` x the one-way time."""
    return [{"kind": "exchange", "size": r["size"], "min_us": r["min_us"] * factor,
             "median_us": r["median_us"] * factor, "mpi": "test"}
            for r in records if r["size"] in (65536, 262144, 1048576)]


def test_exchange_fits_a_memory_bus_when_two_messages_cost_more_than_one():
    recs = _records()
    p = P.calibrated(recs, cores=2, exchange=_exchange(recs, 2.0))
    # two messages at once in twice the time of one: a bus about as fast as one message
    assert p.intra_shared_bandwidth_GBps == pytest.approx(4.0, rel=0.05)
    assert p.calibration["exchange_over_pingpong"] == [2.0, 2.0, 2.0]
    assert "two concurrent messages took 2.00x" in p.sources["intra_shared_bandwidth_GBps"]
    back = P.loads(p.to_toml())  # the description keeps the bus and the measurements
    assert back.intra_shared_bandwidth_GBps == p.intra_shared_bandwidth_GBps
    assert back.calibration["exchange_sizes"] == [65536, 262144, 1048576]
    assert "<link id=\"node-0_membus\"" in back.xml()
    # exchange records among the ping-pong records count as well
    q = P.calibrated(recs + _exchange(recs, 2.0), cores=2)
    assert q.intra_shared_bandwidth_GBps == p.intra_shared_bandwidth_GBps
    # concurrent messages that cost what one does: no bus, the measurement still kept
    r = P.calibrated(recs, cores=2, exchange=_exchange(recs, 1.0))
    assert r.intra_shared_bandwidth_GBps is None
    assert r.calibration["exchange_over_pingpong"] == [1.0, 1.0, 1.0]
    assert "membus" not in r.xml()
    with pytest.raises(P.PlatformError, match="no size measured both"):
        P.calibrated([x for x in recs if x["size"] < 65536], cores=2,
                     exchange=_exchange(recs, 2.0))


def test_plain_platforms_have_no_factors():
    cfg = P.simgrid_cfg(P.resolve("flat"))
    assert cfg == ["--cfg=network/model:raw", "--cfg=smpi/host-speed:1000000000f"]


# ------------------------------------------------------------------------------ CLI


def _cli(*args):
    from click.testing import CliRunner

    from colltune.cli import main

    return CliRunner().invoke(main, list(args), standalone_mode=False, catch_exceptions=False)


def test_cli_write_gives_the_xml_and_the_host_file(tmp_path):
    x, h, d = tmp_path / "p.xml", tmp_path / "h.txt", tmp_path / "d.toml"
    r = _cli("platform", "write", "tapems-16x12", "-o", str(x), "--hostfile", str(h),
             "--np", "24", "--order", "rr", "--description", str(d))
    assert r.exit_code == 0, r.output
    assert x.read_text() == P.resolve("tapems-16x12").xml()
    assert h.read_text().split() == ["node-0", "node-1"] * 12
    assert P.load(d).cores == 192


def test_cli_show_json_and_list():
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        r = _cli("platform", "show", "flat", "--json")
    assert r.exit_code == 0
    d = json.loads(buf.getvalue() or r.output)
    assert d["net_latency"]["value"] == 2.0 and d["nodes"]["value"] == 4096


def test_cli_calibrate_from_records(tmp_path):
    src = tmp_path / "pp.json"
    src.write_text(json.dumps(_records()))
    out = tmp_path / "cal.toml"
    r = _cli("platform", "calibrate", "--from-json", str(src), "-o", str(out), "--hockney")
    assert r.exit_code == 0, r.output
    p = P.load(out)
    assert p.intra_latency_us == pytest.approx(0.5, rel=1e-3)
    assert p.intra_bandwidth_GBps == pytest.approx(4.0, rel=1e-3)
    assert p.lat_factors == () and p.calibration["statistic"] == "min"
    # exchange records in the file: the memory bus they fit, and what the output says
    src.write_text(json.dumps(_records() + _exchange(_records(), 2.0)))
    r = _cli("platform", "calibrate", "--from-json", str(src), "-o", str(out), "--hockney")
    assert r.exit_code == 0, r.output
    assert P.load(out).intra_shared_bandwidth_GBps == pytest.approx(4.0, rel=0.05)


def test_cli_calibrate_times_copies_from_memory_unless_told(tmp_path, ompi_build):
    """The charged copy and reduction are timed with their data coming from memory by
    default (the sources say so), from the cache with --data-from cache."""
    out = {}
    for how in ("memory", "cache"):
        out[how] = tmp_path / f"{how}.toml"
        r = _cli("platform", "calibrate", "--size", "64K,1M", "--reps", "2", "--no-eager",
                 "--no-exchange", "--data-from", how, "-o", str(out[how]))
        assert r.exit_code == 0, r.output
    mem, cache = P.load(out["memory"]), P.load(out["cache"])
    assert "data from memory (buffers taken in turn from a pool of 256 MiB)" in \
        mem.sources["compute_copy"]
    assert "data in the cache" in cache.sources["compute_reduce"]
    assert dict(mem.compute["copy"]).keys() == dict(cache.compute["copy"]).keys()


def test_calibration_in_the_cache_replaces_the_default(tmp_path, monkeypatch):
    monkeypatch.setenv("COLLTUNE_CACHE", str(tmp_path))
    assert P.resolve("this-machine").calibration == {}
    P.calibration_path().parent.mkdir(parents=True)
    P.calibration_path().write_text(P.calibrated(_records(alpha=0.7), cores=3).to_toml())
    p = P.resolve("this-machine")
    assert p.cores == 3 and p.intra_latency_us == pytest.approx(0.7, rel=1e-3)


# ------------------------------------------------------------- under SimGrid (SMPI)

HOSTS_C = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* Every rank prints its host; rank 0 and the last rank also ping-pong each size
   given on the command line and rank 0 prints the one-way time (simulated clock). */
int main(int argc, char **argv) {
    int rank, np, len;
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Get_processor_name(host, &len);
    long sum = 0, me = rank;
    MPI_Allreduce(&me, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (sum != (long)np * (np - 1) / 2) { fprintf(stderr, "bad sum %ld\n", sum); MPI_Abort(MPI_COMM_WORLD, 1); }
    for (int r = 0; r < np; r++) {
        if (r == rank) printf("rank %d host %s\n", rank, host);
        fflush(stdout);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    int peer = np - 1;
    for (int a = 1; a < argc && np > 1; a++) {
        long m = atol(argv[a]);
        char *buf = calloc((size_t)m + 1, 1);
        const int iters = 10;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = 0;
        for (int i = -1; i < iters; i++) {  /* round -1: untimed (the barrier's skew) */
            if (i == 0) t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(buf, (int)m, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, (int)m, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == peer) {
                MPI_Recv(buf, (int)m, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, (int)m, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
        }
        double t = (MPI_Wtime() - t0) / (2.0 * iters);
        if (rank == 0) printf("size %ld oneway_us %.6f\n", m, t * 1e6);
        free(buf);
    }
    MPI_Finalize();
    return 0;
}
"""


def _smpi_bin():
    from colltune.base.paths import cache_dir

    return cache_dir() / "mpi" / "smpi" / "bin"


needs_simgrid = pytest.mark.skipif(not (_smpi_bin() / "smpicc").exists(),
                                   reason="SimGrid (smpicc) is not installed in the colltune cache")


@pytest.fixture(scope="module")
def smpi_prog(tmp_path_factory):
    import subprocess

    d = tmp_path_factory.mktemp("smpi")
    (d / "hosts.c").write_text(HOSTS_C)
    res = subprocess.run([str(_smpi_bin() / "smpicc"), "-O1", "-o", str(d / "hosts"),
                          str(d / "hosts.c")], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return d / "hosts"


def _smpirun(prog, p: P.Platform, np: int, mapping="core", order="seq", args=(), tmp=None,
             extra_cfg=()):
    import subprocess

    (tmp / "p.xml").write_text(p.xml())
    (tmp / "h.txt").write_text(p.hostfile(np, mapping, order))
    cmd = [str(_smpi_bin() / "smpirun"), "-np", str(np), "-platform", str(tmp / "p.xml"),
           "-hostfile", str(tmp / "h.txt"), *P.simgrid_cfg(p),
           "--cfg=smpi/simulate-computation:no", "--cfg=smpi/wtime:0", *extra_cfg, str(prog), *map(str, args)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}"
    hosts = {}
    times = {}
    for line in res.stdout.splitlines():
        w = line.split()
        if w[:1] == ["rank"]:
            hosts[int(w[1])] = w[3]
        elif w[:1] == ["size"]:
            times[int(w[1])] = float(w[3])
    return [hosts[r] for r in range(np)], times


@needs_simgrid
@pytest.mark.parametrize("name", P.PRESETS)
def test_simgrid_runs_every_preset_with_its_host_file(name, smpi_prog, tmp_path):
    p = P.resolve(name)
    np_ = min(8, p.cores)
    order = "rr" if p.nodes > 1 else "seq"
    hosts, _ = _smpirun(smpi_prog, p, np_, "core" if p.nodes == 1 else "node", order,
                        tmp=tmp_path)
    expected = p.rank_hosts(np_, "core" if p.nodes == 1 else "node", order)
    assert hosts == expected


@needs_simgrid
def test_flat_ping_pong_is_hockney(smpi_prog, tmp_path):
    """Between two nodes of `flat` a one-way message costs alpha + m / beta, and between
    two ranks of one tapems node the intra-node figures (SMPI sends m + 16 bytes)."""
    p = P.resolve("flat")
    sizes = (8, 1024, 65536, 1048576)
    _, t = _smpirun(smpi_prog, p, 2, "core", "seq", sizes, tmp_path)
    for m in sizes:
        assert t[m] == pytest.approx(p.net_latency_us + (m + 16) / (p.net_bandwidth_GBps * 1e3),
                                     rel=1e-4), m
    q = P.resolve("tapems-16x12")
    _, t = _smpirun(smpi_prog, q, 2, "core", "seq", sizes, tmp_path)  # both on node-0
    for m in sizes:
        assert t[m] == pytest.approx(q.intra_latency_us + (m + 16) / (q.intra_bandwidth_GBps * 1e3),
                                     rel=1e-4), m
    _, t = _smpirun(smpi_prog, q, 2, "node", "seq", sizes, tmp_path)  # node-0 and node-1
    for m in sizes:
        assert t[m] == pytest.approx(q.net_latency_us + (m + 16) / (q.net_bandwidth_GBps * 1e3),
                                     rel=1e-4), m


@needs_simgrid
def test_a_fitted_memory_bus_makes_simulated_exchanges_cost_what_was_measured(smpi_build):
    """Calibrated with exchanges that took twice a one-way message, the simulated
    exchange (colltune-pingpong --mode exchange under SMPI) takes about twice as long
    as the simulated one-way message, and about what was measured."""
    from colltune.drivers import p2p
    from colltune.mpi import launch

    recs = _records()
    pair = _exchange(recs, 2.0)
    p = P.calibrated(recs, cores=2, exchange=pair)
    sizes = (65536, 1048576)
    with launch.simulate(p):
        one, _ = p2p.run_pingpong(smpi_build, p2p.PingpongSpec(2, sizes, iterations=2,
                                                                warmup=1, reps=1))
        two, _ = p2p.run_pingpong(smpi_build, p2p.PingpongSpec(2, sizes, mode="exchange",
                                                                iterations=2, warmup=1, reps=1))
    want = {r["size"]: r["min_us"] for r in pair}
    for a, b in zip(one, two):
        assert 1.7 < b["min_us"] / a["min_us"] < 2.3, (a, b)
        assert b["min_us"] == pytest.approx(want[b["size"]], rel=0.15)


@needs_simgrid
def test_calibrated_factors_are_what_simgrid_applies(smpi_prog, tmp_path):
    recs = _records(bump={1024: 1.5, 65536: 0.8})
    p = P.calibrated(recs, cores=2, when="2026-01-01T00:00:00Z")
    sizes = (8, 1024, 65536, 1048576)
    _, t = _smpirun(smpi_prog, p, 2, "core", "seq", sizes, tmp_path)
    want = {r["size"]: r["min_us"] for r in recs}
    for m in sizes:
        assert t[m] == pytest.approx(want[m], rel=1e-4), m


def test_smpirun_files(tmp_path):
    p = P.resolve("cloud-8vm")
    opts = P.smpirun_files(p, 8, tmp_path, "node", "rr")
    assert opts[0] == "-platform" and opts[2] == "-hostfile"
    assert open(opts[1]).read() == p.xml()
    assert open(opts[3]).read().split() == [f"node-{i}" for i in range(8)]
    assert opts[4:] == P.simgrid_cfg(p)


def _topo(topology, params, nodes):
    return P.Platform(name=f"t-{topology}", nodes=nodes, sockets=1, cores_per_socket=2,
                      intra_latency_us=0.5, intra_bandwidth_GBps=5.0, net_latency_us=2.0,
                      net_bandwidth_GBps=10.0, topology=topology, topo_parameters=params)


@needs_simgrid
@pytest.mark.parametrize("topology,params,nodes", [("fat-tree", "2;4,4;1,2;1,2", 16),
                                                   ("torus", "4,4", 16),
                                                   ("dragonfly", "2,1;2,1;2,1;2", 16)])
def test_simgrid_topologies_nearest_pair_costs_the_network_latency(topology, params, nodes,
                                                                   smpi_prog, tmp_path):
    p = _topo(topology, params, nodes)
    hosts, t = _smpirun(smpi_prog, p, 2, "node", "seq", (8, 65536), tmp_path)
    assert hosts == ["node-0", "node-1"]
    for m in (8, 65536):  # node-0 and node-1 are neighbours in each of these
        assert t[m] == pytest.approx(2.0 + (m + 16) / 1e4, rel=1e-4), (topology, m)
    hosts, _ = _smpirun(smpi_prog, p, 2 * nodes, "node", "rr", (), tmp_path)
    assert hosts == p.rank_hosts(2 * nodes, "node", "rr")


def test_more_nodes_of_the_same_kind():
    p = P.resolve("tapems-16x12:nodes=86")
    assert p.nodes == 86 and p.cores == 1032 and p.name == "tapems-16x12:nodes=86"
    assert p.net_latency_us == P.resolve("tapems-16x12").net_latency_us
    assert len(set(p.rank_hosts(1024))) == 86
    assert "instead of 16" in p.describe()["nodes"]["source"]
    with pytest.raises(ColltuneError, match="dragonfly"):
        P.resolve("marconi100:nodes=10")
    with pytest.raises(ColltuneError, match="whole number"):
        P.resolve("flat:nodes=x")


# ------------------------------------------------------- intra-node contention (membus)

def test_membus_figure_round_trips_and_is_refused_where_routes_cannot_be_written():
    p = P.resolve("tapems-16x12-membus")
    assert p.intra_shared_bandwidth_GBps == 10.0
    back = P.loads(p.to_toml())
    assert back.intra_shared_bandwidth_GBps == 10.0
    assert back.xml() == p.xml()
    assert "memory" in back.describe()["intra_shared_bandwidth"]["source"]
    root = ET.fromstring(p.xml().split("\n", 2)[2])
    links = {x.get("id"): x for x in root.findall("./zone/link")}
    assert links["node-3_membus"].get("sharing_policy") is None  # SHARED, SimGrid's default
    assert links["node-3_loopback"].get("sharing_policy") == "FATPIPE"
    route = root.find("./zone/route[@src='node-3'][@dst='node-3']")
    assert [c.get("id") for c in route] == ["node-3_loopback", "node-3_membus"]
    route = root.find("./zone/route[@src='node-3'][@dst='node-5']")
    assert [c.get("id") for c in route] == ["node-3_up", "node-5_down"]
    assert P.resolve("tapems-16x12").describe()["intra_shared_bandwidth"] is None
    with pytest.raises(ColltuneError, match="shared_bandwidth_GBps.*flat"):
        dataclasses.replace(P.resolve("marconi100"), intra_shared_bandwidth_GBps=10.0)
    with pytest.raises(ColltuneError, match="at most 128 nodes"):
        dataclasses.replace(p, nodes=200)
    with pytest.raises(ColltuneError, match="intra_shared_bandwidth_GBps"):
        dataclasses.replace(p, intra_shared_bandwidth_GBps=0)


def test_membus_makes_the_messages_inside_a_node_share_its_bandwidth(smpi_build):
    """One pair alone gets the intra-node bandwidth either way; four ranks of a ring
    Allgather on one node move their blocks at once and share the memory bus."""
    from colltune.drivers import bench as bench_mod
    from colltune.drivers.p2p import PingpongSpec, run_pingpong
    from colltune.mpi import launch

    fat = dataclasses.replace(P.resolve("tapems-16x12"), nodes=1, name="one-node")
    bus = dataclasses.replace(fat, intra_shared_bandwidth_GBps=5.0)

    def times(platform):
        with launch.simulate(platform):
            pp, _ = run_pingpong(smpi_build, PingpongSpec(2, (1048576,), reps=1, iterations=2,
                                                            warmup=0))
            ag, _ = bench_mod.run(smpi_build, bench_mod.BenchSpec(
                "allgather", ["ring"], 4, [1048576], reps=1), timeout=300)
        return pp[0]["min_us"], ag[0]["median_us"]

    (pp_fat, ag_fat), (pp_bus, ag_bus) = times(fat), times(bus)
    assert pp_bus == pytest.approx(pp_fat, rel=1e-3), (pp_fat, pp_bus)
    # 4 concurrent 1 MiB blocks a step: each at 5/4 GB/s on the bus instead of 5 GB/s
    assert 3.0 < ag_bus / ag_fat < 4.5, (ag_fat, ag_bus)
