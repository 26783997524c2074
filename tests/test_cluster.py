"""`colltune cluster`: nodes made of network namespaces on one bridge (docs/cluster.md).

Everything here needs root and network namespaces (CI runs as root); elsewhere the tests
are skipped with the reason. Each test leaves no namespace, link or process behind."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from colltune.cli import main
from colltune.mpi import cluster as cl
from colltune.mpi import launch

from conftest import colltune


def _netns_usable() -> str | None:
    if os.geteuid() != 0:
        return "colltune cluster needs root"
    for tool in ("ip", "tc", "unshare", "taskset"):
        if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode:
            return f"{tool} is not installed"
    probe = "ctprobe"
    res = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if res.returncode != 0:
        return f"network namespaces are not available here: {res.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


WHY = _netns_usable()
pytestmark = pytest.mark.skipif(WHY is not None, reason=WHY or "")

NODE_RE = re.compile(rf"{cl.NS_PREFIX}\d+$")


def _ours_left() -> list[str]:
    """Namespaces, links and files of the cluster that still exist."""
    left = [n for n in cl.namespaces() if NODE_RE.match(n)]
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True,
                           text=True).stdout
    left += [m for m in re.findall(r"^\d+: ([^:@]+)", links, re.M)
             if m == cl.BRIDGE or re.fullmatch(rf"{cl.VETH_PREFIX}\d+", m)]
    left += [str(p) for p in cl.ETC_NETNS.glob(f"{cl.NS_PREFIX}*")] if cl.ETC_NETNS.exists() \
        else []
    return left


def _settle(pred, timeout=10.0):
    """Links of a deleted namespace go a moment after it."""
    deadline = time.monotonic() + timeout
    while not pred() and time.monotonic() < deadline:
        time.sleep(0.05)
    return pred()


@pytest.fixture
def nothing_left():
    colltune("cluster", "down")
    yield
    colltune("cluster", "down")
    assert _settle(lambda: not _ours_left()), _ours_left()
    assert not cl.state_path().exists()


@pytest.fixture(scope="module")
def cluster2():
    """A 2-node cluster for the tests that run MPI on it; removed after them."""
    colltune("cluster", "down")
    res = colltune("cluster", "up", "--nodes", "2")
    assert res.returncode == 0, res.stderr
    yield cl.current()
    res = colltune("cluster", "down")
    assert res.returncode == 0, res.stderr
    assert _settle(lambda: not _ours_left()), _ours_left()


def _on_cluster_env(c) -> dict[str, str]:
    return dict(os.environ, **cl.launch_env(c))


# ------------------------------------------------------------------ up, status, down


def test_up_status_down_make_and_remove_everything(nothing_left, tmp_path):
    res = colltune("cluster", "up", "--nodes", "3", "--bandwidth", "200mbit")
    assert res.returncode == 0, res.stderr
    assert "3 node(s) ctn1, ctn2, ctn3" in res.stdout and "200mbit" in res.stdout
    assert {"ctn1", "ctn2", "ctn3"} <= set(cl.namespaces())
    c = cl.current()
    # the nodes: their own host name, address and link, shaped both ways
    out = subprocess.run([str(c.agent), "-x", "10.77.0.2", "hostname; ip -o -4 addr show eth0"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "ctn2" and "10.77.0.2/24" in out.stdout
    for argv in (["tc", "qdisc", "show", "dev", "ctv1"],
                 ["tc", "-n", "ctn1", "qdisc", "show", "dev", "eth0"]):
        q = subprocess.run(argv, capture_output=True, text=True).stdout
        assert "tbf" in q and "200Mbit" in q, q
    # the names resolve inside the nodes only: the machine's /etc/hosts is not touched
    hosts_before = Path("/etc/hosts").read_text()
    out = subprocess.run([str(c.agent), "ctn1", "getent hosts ctn3"], capture_output=True,
                         text=True, timeout=60)
    assert out.stdout.split()[:2] == ["10.77.0.3", "ctn3"], out
    assert "ctn3" not in hosts_before
    assert c.hostfile.read_text().splitlines()[0].startswith("10.77.0.1 slots=1")
    # an unknown host: the agent says so as ssh would fail
    out = subprocess.run([str(c.agent), "ctn9", "true"], capture_output=True, text=True)
    assert out.returncode == 255 and "no node 'ctn9'" in out.stderr
    st = colltune("cluster", "status")
    assert st.returncode == 0 and "cluster up: 3 node(s)" in st.stdout
    assert re.search(r"ctn3\s+10\.77\.0\.3", st.stdout), st.stdout
    # a process left running inside a node is stopped by down
    sleeper = subprocess.Popen([str(c.agent), "ctn2", "sleep 300"])
    assert _settle(lambda: cl.node_pids("ctn2"))
    res = colltune("cluster", "down")
    assert res.returncode == 0 and "process(es) in ctn2" in res.stdout, res.stdout
    assert sleeper.wait(timeout=30) != 0
    assert _settle(lambda: not _ours_left()), _ours_left()
    assert Path("/etc/hosts").read_text() == hosts_before
    assert colltune("cluster", "status").stdout.startswith("no cluster")
    assert "no cluster is up" in colltune("cluster", "env").stderr


def test_without_root_one_line(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    for args in (["up", "--nodes", "2"], ["down"]):
        res = CliRunner().invoke(main, ["cluster", *args])
        lines = [ln for ln in res.output.splitlines() if ln.strip()]
        assert res.exit_code == 2 and len(lines) == 1 and "needs root" in lines[0], res.output


@pytest.mark.parametrize("args, says", [
    (["--bandwidth", "fast"], "--bandwidth 'fast': give bits per second"),
    (["--subnet", "8.8.8.0/24"], "give a private IPv4 subnet"),
    (["--subnet", "10.77.0.0/30"], "too small for 2 nodes"),
])
def test_bad_options_are_one_line_and_make_nothing(nothing_left, args, says):
    res = colltune("cluster", "up", "--nodes", "2", *args)
    assert res.returncode == 2 and says in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not _ours_left()


def _start_up_and_stop_it(sig) -> tuple[int, str]:
    """`cluster up --nodes 16`, stopped by `sig` once its first node exists: its exit
    status and error output."""
    exe = Path(sys.executable).parent / "colltune"
    proc = subprocess.Popen([str(exe), "cluster", "up", "--nodes", "16"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert _settle(lambda: "ctn1" in cl.namespaces() or proc.poll() is not None, 60)
    os.kill(proc.pid, sig)
    _, stderr = proc.communicate(timeout=120)
    return proc.returncode, stderr


def test_a_killed_up_is_cleaned_by_the_next(nothing_left):
    rc, _ = _start_up_and_stop_it(signal.SIGKILL)
    assert rc == -signal.SIGKILL
    left = _ours_left()
    assert left and cl.state_path().exists()  # half made, and the record of it
    assert not cl.read_state().complete
    res = colltune("cluster", "up", "--nodes", "2")
    assert res.returncode == 0, res.stderr
    assert "removed what an earlier cluster left" in res.stderr
    assert set(n for n in cl.namespaces() if NODE_RE.match(n)) == {"ctn1", "ctn2"}
    assert colltune("cluster", "down").returncode == 0
    assert _settle(lambda: not _ours_left()), _ours_left()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_during_up_removes_what_was_made(nothing_left, sig):
    rc, stderr = _start_up_and_stop_it(sig)
    assert rc == 130 and "interrupted" in stderr, stderr
    assert _settle(lambda: not _ours_left()), _ours_left()
    assert not cl.state_path().exists()


def test_namespaces_colltune_did_not_make_are_left_alone(nothing_left):
    subprocess.run(["ip", "netns", "add", "ctn1"], check=True)
    try:
        res = colltune("cluster", "up", "--nodes", "2")
        assert res.returncode == 2 and "colltune has no record of making them" in res.stderr
        assert len(res.stderr.strip().splitlines()) == 1
        assert "ctn1" in cl.namespaces() and "ctn2" not in cl.namespaces()
        assert not cl.state_path().exists()
    finally:
        subprocess.run(["ip", "netns", "del", "ctn1"])


# ------------------------------------------------------------------ MPI on the nodes


def test_open_mpi_starts_its_daemons_on_the_nodes(cluster2, ompi_build):
    env = _on_cluster_env(cluster2)
    res = subprocess.run([str(ompi_build.mpi.launcher), "--allow-run-as-root", "-np", "2",
                          "--map-by", "node", "hostname"], capture_output=True, text=True,
                         env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    assert sorted(res.stdout.split()) == ["ctn1", "ctn2"]


def _link_bytes(c) -> int:
    """Bytes through the switch so far (every node link, both ways)."""
    total = 0
    for link in c.links:
        for way in ("rx_bytes", "tx_bytes"):
            total += int(Path(f"/sys/class/net/{link}/statistics/{way}").read_text())
    return total


def _bench_on_cluster(build, c, nodes: int, np: int = 2):
    """A validated Allreduce on the cluster: its records, its launch, and the bytes that
    went through the switch meanwhile (the ranks talk over the network, not through
    this machine's shared memory)."""
    from colltune.drivers import bench as bench_mod

    spec = bench_mod.BenchSpec("allreduce", ["ring", "native"], np, [8, 65536], reps=1,
                               iterations=20, validate=True)
    before = _link_bytes(c)
    with launch.session(cl.placement(nodes=nodes)) as s:
        recs, _ = bench_mod.run(build, spec, timeout=300)
    return recs, s.launches[-1], _link_bytes(c) - before


# 20 timed 64 KiB Allreduces of 2 algorithms at 2 x 1: each sends at least 32 KiB a rank
# and call across the switch (counted twice: leaving one link, entering the other)
ALLREDUCE_BYTES = 2 * 20 * 2 * 32768


def test_an_mpi_program_runs_across_nodes_with_open_mpi(cluster2, ompi_build):
    recs, ln, through = _bench_on_cluster(ompi_build, cluster2, nodes=2)
    assert through >= ALLREDUCE_BYTES, through
    assert "--host 10.77.0.1:1,10.77.0.2:1" in ln.command_line
    assert "PRTE_MCA_plm_ssh_agent=" in ln.shell_command
    assert (ln.nodes, ln.ppn) == (2, 1)
    assert {(r["nodes_seen"], r["ppn_seen"]) for r in recs} == {(2, 1)}
    assert all(r.get("valid", True) is not False for r in recs), recs
    assert len(recs) == 4


@pytest.mark.mpich
def test_an_mpi_program_runs_across_nodes_with_mpich(cluster2, mpich_build):
    recs, ln, through = _bench_on_cluster(mpich_build, cluster2, nodes=2)
    assert through >= ALLREDUCE_BYTES, through  # not libfabric's shm provider (FI_PROVIDER)
    assert "-hosts 10.77.0.1:1,10.77.0.2:1" in ln.command_line
    assert {(r["nodes_seen"], r["ppn_seen"]) for r in recs} == {(2, 1)}
    assert len(recs) == 4
    env = _on_cluster_env(cluster2)  # hydra's own launch: mpiexec -n 2 over the hostfile
    res = subprocess.run([str(mpich_build.mpi.launcher), "-n", "2", "hostname"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0 and sorted(res.stdout.split()) == ["ctn1", "ctn2"], res


def test_the_interposition_library_sees_processes_per_node(cluster2, ompi_build, tmp_path):
    """A ppn=1-1 rule after a ppn=2- one: on the cluster (2 nodes x 1) the library
    computes ppn 1 and takes line 3; the same launch on this machine alone (1 node x 2)
    takes line 2."""
    rules = tmp_path / "ppn.rules"
    rules.write_text("# colltune-rules 1\nbcast 2 - 0 - linear - ppn=2-\n"
                     "bcast 2 - 0 - binomial - ppn=1-1\n")
    prog = [str(ompi_build.program("colltune-osu-latency")), "bcast", "1024", "3"]
    mpirun = [str(ompi_build.mpi.launcher), "--allow-run-as-root", "-np", "2"]
    exe = Path(sys.executable).parent / "colltune"
    seen = {}
    for where, env in (("cluster", _on_cluster_env(cluster2)), ("local", dict(os.environ))):
        res = subprocess.run([str(exe), "run", "--rules", str(rules), "--verbose", "--", *mpirun,
                              *prog], capture_output=True, text=True, env=env, timeout=300)
        assert res.returncode == 0, res.stderr
        line = next(ln for ln in res.stderr.splitlines() if "colltune-pmpi: bcast" in ln)
        seen[where] = line
    assert "binomial" in seen["cluster"] and "ppn.rules:3" in seen["cluster"], seen
    assert "linear" in seen["local"] and "ppn.rules:2" in seen["local"], seen


def test_a_sweep_with_two_layouts_records_what_it_got(cluster2, ompi_build, tmp_path):
    study = tmp_path / "layouts.toml"
    study.write_text('[study]\nname = "layouts"\ncollectives = ["bcast"]\n'
                     'algorithms = ["binomial", "native"]\nsizes = [8]\nprocesses = [2]\n'
                     'mapping = "node"\nnodes = [1, 2]\nrepetitions = 1\niterations = 20\n')
    db = tmp_path / "c.db"
    res = colltune("sweep", str(study), "--cluster", "--db", str(db), "--oversubscribe")
    assert res.returncode == 0, res.stderr + res.stdout
    with sqlite3.connect(db) as conn:
        units = sorted(conn.execute("select nodes, ppn, command from units").fetchall())
        points = conn.execute("select count(*) from measurements").fetchone()[0]
    assert [(n, p) for n, p, _ in units] == [(1, 2), (2, 1)]
    assert "--host 10.77.0.1:2" in units[0][2] and "--oversubscribe" in units[0][2]
    assert "--host 10.77.0.1:1,10.77.0.2:1" in units[1][2]
    assert all("PRTE_MCA_plm_ssh_agent=" in u[2] for u in units)
    assert points == 4
    # --cluster is a hostfile launch of its own
    res = colltune("sweep", str(study), "--cluster", "--launcher", "local", "--db", str(db))
    assert res.returncode == 2 and "--cluster is a hostfile launch" in res.stderr


@pytest.mark.mpich
def _verify_ppn_file(mpich_build, tmp_path, np: int, env: dict) -> list[str]:
    """`colltune rules verify` of an MPICH file with a ppn=2- and a ppn=1-1 Bcast rule
    at np processes in `env`: the table's Bcast row (collective, size, named, ran, ...)."""
    from colltune.rules import files as rf
    from colltune.rules import ruleset as R

    rs = R.from_text("# colltune-rules 1\n# target: mpich\n"
                     "bcast 1 - 0 - mpich:binomial - ppn=2-\n"
                     "bcast 1 - 0 - mpich:scatter_ring_allgather - ppn=1-1\n")
    path = tmp_path / "ppn.json"
    rf.export(rs, "mpich", path, mpich_build.mpi)
    exe = Path(sys.executable).parent / "colltune"
    res = subprocess.run([str(exe), "rules", "verify", str(path), "--np", str(np),
                          "--size", "64K"], capture_output=True, text=True, env=env,
                         timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    return next([c.strip() for c in ln.split("│")[1:-1]] for ln in res.stdout.splitlines()
                if ln.startswith("│ bcast"))


def test_rules_verify_of_a_ppn_file_on_the_cluster(cluster2, mpich_build, tmp_path):
    """MPICH under a ppn-keyed selection file, 2 nodes x 1 process: the ppn=1-1 rule
    (after a ppn=2- one) is what ran."""
    row = _verify_ppn_file(mpich_build, tmp_path, 2, _on_cluster_env(cluster2))
    coll, size, named, ran, _, agrees = row[:6]
    # at 2 processes MPICH's two scatter-allgather Bcasts send the same traffic: both
    # are listed; binomial (the ppn=2- rule) is not
    assert (named, agrees) == ("scatter_ring_allgather", "consistent"), row
    assert "scatter_ring_allgather" in ran.split(", ") and "binomial" not in ran, row


def test_ad_hoc_records_under_cluster_env_say_the_nodes_they_got(cluster2, ompi_build, tmp_path):
    """`colltune pingpong` and `colltune bench --db` under `cluster env` (a plain mpirun
    over the default hostfile): the records carry the nodes and processes per node MPI
    saw, 2 x 1, and the database stores them, not 1 node x 2."""
    env = _on_cluster_env(cluster2)
    exe = Path(sys.executable).parent / "colltune"
    out = tmp_path / "pp.json"
    res = subprocess.run([str(exe), "pingpong", "--np", "2", "--size", "8", "--reps", "1",
                          "--iterations", "20", "--format", "json", "-o", str(out)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    recs = json.loads(out.read_text())
    assert [(r["kind"], r["nodes_seen"], r["ppn_seen"]) for r in recs] == [("pingpong", 2, 1)]
    db = tmp_path / "b.db"
    for where, e in (("cluster", env), ("local", dict(os.environ))):
        res = subprocess.run([str(exe), "bench", "--coll", "bcast", "--algo", "binomial",
                              "--np", "2", "--size", "8", "--reps", "1", "--iterations", "20",
                              "--db", str(db)], capture_output=True, text=True, env=e,
                             timeout=300)
        assert res.returncode == 0, (where, res.stderr)
    with sqlite3.connect(db) as conn:
        got = conn.execute("select nodes, ppn from measurements order by id").fetchall()
    assert got == [(2, 1), (1, 2)], got


@pytest.mark.mpich
def test_rules_verify_of_a_ppn_file_with_mpich_at_2x2(cluster2, mpich_build, tmp_path):
    """MPICH at 2 nodes x 2 processes (hydra's proxies on both nodes, 4 processes on 2
    cores: oversubscribed, which a correctness check does not mind): the ppn=2- rule is
    what ran, MPICH counting 2 processes a node without MPIR_CVAR_NOLOCAL."""
    hosts = tmp_path / "hosts"  # 2 slots a node: ranks 0,1 on ctn1, 2,3 on ctn2
    hosts.write_text("".join(f"{a}:2\n" for a in cluster2.addresses))
    env = dict(_on_cluster_env(cluster2), HYDRA_HOST_FILE=str(hosts))
    env.pop("MPIR_CVAR_NOLOCAL", None)
    row = _verify_ppn_file(mpich_build, tmp_path, 4, env)
    coll, size, named, ran, _, agrees = row[:6]
    assert (named, agrees) == ("binomial", "consistent"), row
    assert "binomial" in ran.split(", ") and "scatter_ring_allgather" not in ran, row


def test_platform_calibrate_across_nodes_writes_a_cluster(cluster2, ompi_build, tmp_path):
    """`colltune platform calibrate` under `cluster env`: its ping-pong crosses the
    switch, and the platform it writes has the 2 nodes MPI saw, a core each, the fitted
    figures as the network's."""
    from colltune.mpi import platforms as plat

    out = tmp_path / "cluster.toml"
    exe = Path(sys.executable).parent / "colltune"
    res = subprocess.run([str(exe), "platform", "calibrate", "--size", "8,64K", "--reps", "2",
                          "--no-compute", "--no-eager", "--no-exchange", "-o", str(out)],
                         capture_output=True, text=True, env=_on_cluster_env(cluster2),
                         timeout=300)
    assert res.returncode == 0, res.stderr
    p = plat.loads(out.read_text(), str(out))
    assert (p.nodes, p.cores_per_socket) == (2, 1), p
    assert p.net_latency_us == pytest.approx(p.calibration["alpha_us"], rel=1e-5)
    assert "between two nodes" in p.sources["net_latency_us"]


def test_node_aware_algorithms_verify_across_nodes(cluster2, ompi_build, tmp_path):
    """`colltune verify` of hier, hier_ml and shm under `cluster env`, 3 processes on 2
    nodes of 2 slots (ranks 0, 1 on ctn1, 2 on ctn2: uneven nodes): MPI sees 2 nodes
    (a plain mpirun over the default hostfile fills it in order, not oversubscribed),
    every case passes, the node groups of vppn=0 are the namespace nodes (the verifier
    checks them against MPI_Comm_split_type), and shm on the world, which spans both
    nodes, takes its declared fallback and reports it."""
    hosts = tmp_path / "hosts"
    hosts.write_text("".join(f"{a} slots=2\n" for a in cluster2.addresses))
    env = dict(_on_cluster_env(cluster2), PRTE_MCA_prte_default_hostfile=str(hosts))
    exe = Path(sys.executable).parent / "colltune"
    # Bcast: the one collective of all three (about a minute here, 900 cases)
    res = subprocess.run([str(exe), "verify", "--algo", "hier,hier_ml,shm", "--coll", "bcast",
                          "--np", "3", "--quick", "--family", "main", "--json"],
                         capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    (run,) = json.loads(res.stdout)["runs"]
    assert run["placement"] == {"nodes": 2, "ppn": 2}, run
    assert "--oversubscribe" not in run["command"]
    assert "on 2 nodes (up to 2 processes a node)" in res.stderr
    got = {(a["collective"], a["algorithm"]): a for a in run["algos"]}
    assert set(got) == {("bcast", a) for a in ("hier", "hier_ml", "shm")}, got
    assert all(a["cases"] > 0 and a["failed"] == 0 for a in got.values()), got
    assert "do not all share memory" in (got[("bcast", "shm")]["fallback"] or ""), got
