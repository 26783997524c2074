"""Sweeps end to end into a temporary database: resume after a kill, failed launches,
placement translation (checked in Open MPI's own mapper), and a real Slurm."""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from colltune.mpi import launch
from colltune.mpi import placement
from colltune.mpi.placement import Placement

TINY = """
[study]
name = "example"
collectives = ["bcast"]
algorithms = ["binomial", "linear", "native"]
sizes = [8, 4096]
processes = [2, 3]
repetitions = 2
iterations = 20
warmup = 2
"""


def run_sweep(*args, timeout=300, cwd=None) -> subprocess.CompletedProcess:
    # np 3 on a 2-core machine: measured oversubscribed, as the policy asks to say
    return subprocess.run([sys.executable, "-m", "colltune", "sweep", *map(str, args),
                           "--oversubscribe"],
                          capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env=dict(os.environ, COLUMNS="200"))


def q(path, sql, *args):
    c = sqlite3.connect(path)
    try:
        return c.execute(sql, args).fetchall()
    finally:
        c.close()


def test_tiny_study_end_to_end(tmp_path):
    f = tmp_path / "tiny.toml"
    f.write_text(TINY)
    dbp = tmp_path / "results.db"
    res = run_sweep(f, "--db", dbp, "--seed", "7")
    assert res.returncode == 0, res.stderr
    assert "sweep done" in res.stderr
    # 2 process counts x 2 repetitions = 4 launches, 3 algorithms x 2 sizes each
    assert q(dbp, "SELECT COUNT(*) FROM units") == [(4,)]
    assert q(dbp, "SELECT COUNT(*) FROM measurements") == [(24,)]
    run = q(dbp, "SELECT status, seed, shuffled, units_planned, units_done, units_failed, "
                 "mpi_kind, launcher, host, cores, git_revision FROM runs")[0]
    assert run[:8] == ("done", 7, 1, 4, 4, 0, "openmpi", "local")
    assert run[8] == socket.gethostname() and run[9] >= 1
    rows = q(dbp, "SELECT DISTINCT algorithm, np, iterations, warmup, mapping, rank_order, nodes, "
                  "ppn FROM measurements ORDER BY 1, 2")
    assert [r[:2] for r in rows] == [("binomial", 2), ("binomial", 3), ("linear", 2),
                                     ("linear", 3), ("native", 2), ("native", 3)]
    assert all(r[2:] == (20, 2, "core", "seq", 1, r[1]) for r in rows)
    assert sorted(r[0] for r in q(dbp, "SELECT DISTINCT repetition FROM measurements")) == [1, 2]
    cmds = [r[0] for r in q(dbp, "SELECT command FROM units")]
    assert all("--map-by core" in c and "colltune-bench" in c and "--iterations 20" in c
               for c in cmds)
    # the same study again: everything is stored, nothing runs
    res = run_sweep(f, "--db", dbp)
    assert res.returncode == 0, res.stderr
    assert "4 of 4 launches already stored" in res.stderr
    assert q(dbp, "SELECT COUNT(*) FROM units") == [(4,)]
    assert q(dbp, "SELECT units_done, units_skipped FROM runs WHERE id = 2") == [(0, 4)]
    # a new round measures everything again, stored apart
    res = run_sweep(f, "--db", dbp, "--new-round", "--no-shuffle")
    assert res.returncode == 0, res.stderr
    assert q(dbp, "SELECT round, COUNT(*) FROM units GROUP BY round") == [(1, 4), (2, 4)]


def _wait_for(pred, timeout=120.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return True
        time.sleep(0.05)
    return False


def _units(dbp) -> int:
    try:
        return q(dbp, "SELECT COUNT(*) FROM units")[0][0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_resume_after_a_killed_sweep(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(TINY.replace("repetitions = 2", "repetitions = 3").replace(
        "iterations = 20", "iterations = 400"))
    dbp = tmp_path / "r.db"
    cmd = [sys.executable, "-m", "colltune", "sweep", str(f), "--db", str(dbp), "--seed", "3",
           "--oversubscribe"]
    # Ctrl-C after the first stored launch: the run is marked interrupted
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert _wait_for(lambda: _units(dbp) >= 1)
    p.send_signal(signal.SIGINT)
    _, errout = p.communicate(timeout=60)
    assert p.returncode == 130, errout
    assert "interrupted" in errout
    assert q(dbp, "SELECT status FROM runs WHERE id = 1") == [("interrupted",)]
    n1 = _units(dbp)
    assert 1 <= n1 < 6
    # SIGKILL in the middle of a later launch: nothing of that launch is stored
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert _wait_for(lambda: _units(dbp) >= n1 + 1)
    time.sleep(0.3)  # well inside the next launch (each takes about a second)
    p.kill()
    p.communicate(timeout=60)
    n2 = _units(dbp)
    assert n2 < 6, "the sweep finished before it could be killed"
    assert q(dbp, "SELECT status FROM runs WHERE id = 2") == [("running",)]
    # every stored launch is whole: 3 algorithms x 2 sizes
    assert q(dbp, "SELECT COUNT(*) FROM units u WHERE (SELECT COUNT(*) FROM measurements m "
                  "WHERE m.unit_id = u.id) != 6") == [(0,)]
    before = {k for (k,) in q(dbp, "SELECT key FROM units")}
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert f"{n2} of 6 launches already stored" in res.stderr
    assert "ended without finishing: marked 'aborted'" in res.stderr
    assert q(dbp, "SELECT status FROM runs WHERE id = 2") == [("aborted",)]
    assert q(dbp, "SELECT units_skipped, units_done, status FROM runs WHERE id = 3") == [
        (n2, 6 - n2, "done")]
    rows = q(dbp, "SELECT run_id, key FROM units")
    assert len(rows) == 6 and len({k for _, k in rows}) == 6
    # finished launches were not run again; the killed one (and the rest) ran in run 3
    assert {k for r, k in rows if r in (1, 2)} == before
    assert len([k for r, k in rows if r == 3]) == 6 - n2
    assert q(dbp, "SELECT COUNT(*) FROM measurements") == [(36,)]


def test_a_failed_launch_is_recorded_and_the_sweep_goes_on(tmp_path):
    f = tmp_path / "s.toml"
    # root 2 is not a rank of 2 processes: the driver rejects the np=2 launches
    f.write_text(TINY.replace("warmup = 2", "warmup = 2\nroot = 2"))
    dbp = tmp_path / "r.db"
    res = run_sweep(f, "--db", dbp, "--no-shuffle")
    assert res.returncode == 1, res.stderr
    assert "launch failed" in res.stderr and "2 failed" in res.stderr
    assert "root 2 is not a rank at np=2" in res.stderr
    fails = q(dbp, "SELECT np, repetition, returncode, timed_out, error, stderr, command "
                   "FROM failures ORDER BY repetition")
    assert [(r[0], r[1]) for r in fails] == [(2, 1), (2, 2)]
    for r in fails:
        assert r[2] not in (0, None) and r[3] == 0
        assert "--root 2: must be a rank of the 2 processes" in r[4]
        assert "--root 2" in r[5] and "mpirun" in r[6]
    assert q(dbp, "SELECT np, COUNT(*) FROM units GROUP BY np") == [(3, 2)]
    assert q(dbp, "SELECT status, units_done, units_failed FROM runs") == [("done", 2, 2)]
    # resuming runs only the failed launches again (and --skip-failed not even those)
    res = run_sweep(f, "--db", dbp, "--skip-failed")
    assert res.returncode == 0 and "4 of 4 launches already stored" in res.stderr


def test_a_timed_out_launch_is_recorded(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(TINY.replace("processes = [2, 3]", "processes = [2]").replace(
        "repetitions = 2", "repetitions = 1\ntimeout = 0.001"))
    dbp = tmp_path / "r.db"
    res = run_sweep(f, "--db", dbp)
    assert res.returncode == 1
    assert q(dbp, "SELECT timed_out, error LIKE '%timed out%' FROM failures") == [(1, 1)]
    assert q(dbp, "SELECT COUNT(*) FROM units") == [(0,)]


def test_open_mpis_algorithms_run_in_natives_launches(tmp_path, ompi_build):
    """Open MPI's own algorithms share the launch of native and colltune's (each on a
    communicator of its own, libalgos.lib_cvars), so that they are compared paired."""
    pytest.importorskip("colltune.mpi.libalgos")
    f = tmp_path / "s.toml"
    f.write_text(TINY.replace('"native"]', '"native", "ompi:binomial"]').replace(
        "processes = [2, 3]", "processes = [2]").replace("repetitions = 2", "repetitions = 1"))
    dbp = tmp_path / "r.db"
    res = run_sweep(f, "--db", dbp)
    assert res.returncode == 0, res.stderr
    units = q(dbp, "SELECT algorithms, library_spec, command FROM units ORDER BY id")
    assert [(u[0], u[1]) for u in units] == [("binomial,linear,native,ompi:binomial", None)]
    assert "--lib ompi:binomial --cvars" in units[0][2]
    assert "coll_tuned_bcast_algorithm=6" in units[0][2]
    rows = q(dbp, "SELECT algorithm, unit_id, load1_before FROM measurements")
    assert {r[0] for r in rows} == {"binomial", "linear", "native", "ompi:binomial"}
    assert len({r[1] for r in rows}) == 1 and all(r[2] is not None for r in rows)


def test_a_cpu_hog_during_natives_launches_concludes_nothing(tmp_path, ompi_build):
    """A CPU hog on every core, started by the test, during native's launches (every
    launch: Open MPI's algorithms run in them): Open MPI's own choice at that point
    (binary tree, unsegmented, at np 2 and 64 KiB), forced on a communicator of its
    own, is the same algorithm as native: paired with native in the same launches it
    is "within noise" or "unstable", never significant."""
    from colltune.analysis import evidence
    from colltune.mpi import placement
    from colltune.results import db as db_mod, reader

    f = tmp_path / "s.toml"
    f.write_text(TINY.replace('["binomial", "linear", "native"]', '["native", "ompi:binary"]')
                 .replace("processes = [2, 3]", "processes = [2]")
                 .replace("sizes = [8, 4096]", "sizes = [65536]")
                 .replace("repetitions = 2", "repetitions = 5"))
    dbp = tmp_path / "r.db"
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL)
            for _ in range(placement.cores())]
    try:
        res = run_sweep(f, "--db", dbp, timeout=600)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert res.returncode == 0, res.stderr
    conn = db_mod.open_reader(dbp, schema=True)
    df = reader.measurements_frame(conn)
    conn.close()
    assert df["load1_after"].notna().all()
    ver = evidence.versus_baseline(df, ["collective", "np", "size"], label="spec").iloc[0]
    assert ver["outcome"] in ("tie", "unstable"), ver["text"]
    assert "paired" in ver["text"] or "unstable" in ver["text"]


def test_dry_run_and_sbatch_script(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(TINY + '\n[sbatch]\ntime = "00:30:00"\npartition = "debug"\n')
    dbp = tmp_path / "r.db"
    res = run_sweep(f, "--db", dbp, "--dry-run", "--seed", "1")
    assert res.returncode == 0, res.stderr
    assert "4 launches (4 to run, seed 1, shuffled)" in res.stdout
    assert "--map-by core" in res.stdout
    assert not dbp.exists()
    script = tmp_path / "job.sh"
    res = run_sweep(f, "--db", dbp, "--emit-sbatch", script)
    assert res.returncode == 0, res.stderr
    text = script.read_text()
    assert text.startswith("#!/bin/bash\n")
    for line in ("#SBATCH --job-name=colltune-example", "#SBATCH --nodes=1",
                 "#SBATCH --ntasks=3", "#SBATCH --time=00:30:00", "#SBATCH --partition=debug",
                 "#SBATCH --signal=B:INT@120"):
        assert line in text
    assert f"-m colltune sweep {f} --launcher slurm --db {dbp}" in text
    assert os.access(script, os.X_OK)


def test_process_counts_below_one_are_refused_before_anything_runs(tmp_path):
    """--np 0 (or a range reaching below 1) is one `error:` line, exit 2, in every
    command that launches, --dry-run included: nothing launched, no database made,
    and a stored study keeps its rows (no failed launches stored for good)."""
    from conftest import colltune

    f = tmp_path / "s.toml"
    f.write_text(TINY)
    dbp = tmp_path / "r.db"
    res = run_sweep(f, "--db", dbp, "--dry-run", "--np", "2,3")
    assert res.returncode == 0 and "a run refuses this" not in res.stdout, res.stderr
    res = subprocess.run([sys.executable, "-m", "colltune", "sweep", str(f), "--db", str(dbp),
                          "--dry-run", "--np", "2,99"], capture_output=True, text=True,
                         env=dict(os.environ, COLUMNS="200"))
    assert res.returncode == 0 and "note: a run refuses this: 99 processes" in res.stdout
    cases = [["sweep", str(f), "--np", "0", "--dry-run"], ["sweep", str(f), "--np", "0"],
             ["sweep", str(f), "--np", "-1:2"], ["quick", "--np", "0"],
             ["bench", "--coll", "bcast", "--np", "0", "--sizes", "8"],
             ["bench", "--coll", "bcast", "--algo", "native,ompi:linear", "--np", "2,-2:0",
              "--sizes", "8"],
             ["verify", "--np", "0"], ["load", "effect", "--np", "0"],
             ["tune", "--measure", "--target", "colltune", "--coll", "bcast", "--np", "0",
              "--sizes", "8", "--budget", "5", "-o", str(tmp_path / "r.conf")]]
    for args in cases:
        if args[0] in ("sweep", "quick", "bench", "tune"):
            args = [*args, "--db", str(dbp)]
        res = colltune(*args, timeout=120)
        lines = res.stderr.strip().splitlines()
        assert res.returncode == 2 and len(lines) == 1, (args, res.stderr)
        assert lines[0].startswith("error: --np ") and (
            "a process count must be at least 1" in lines[0]
            or "is not a range of whole numbers" in lines[0]), (args, lines)
        assert not dbp.exists(), args
    # into a stored study: refused the same way, before its definition is compared
    res = run_sweep(f, "--db", dbp, "--np", "2", "--seed", "1")
    assert res.returncode == 0, res.stderr
    before = q(dbp, "SELECT (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM failures)")
    res = run_sweep(f, "--db", dbp, "--np", "0")
    assert res.returncode == 2 and res.stderr.strip().startswith(
        "error: --np '0': a process count must be at least 1"), res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert q(dbp, "SELECT (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM failures)") == before


def test_one_sweep_of_a_study_into_a_database_at_a_time(tmp_path):
    """A second sweep of the same study into the same database waits for the first
    (saying so) and then resumes: nothing is measured by both, nothing at once;
    with --no-wait it stops with one line."""
    f = tmp_path / "one.toml"
    f.write_text('[study]\nname = "one"\ncollectives = ["bcast"]\nalgorithms = ["native"]\n'
                 'sizes = [8]\nprocesses = [1]\nrepetitions = 8\niterations = 10\n')
    dbp = tmp_path / "r.db"
    cmd = [sys.executable, "-m", "colltune", "sweep", str(f), "--db", str(dbp)]
    env = dict(os.environ, COLUMNS="200")
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env)
    second = None
    try:
        assert _wait_for(lambda: _units(dbp) >= 1), first.communicate()
        refused = subprocess.run([*cmd, "--no-wait"], capture_output=True, text=True, env=env,
                                 timeout=120)
        assert refused.returncode == 2, refused.stderr
        assert first.poll() is None, "the first sweep ended too soon for the test"
        assert refused.stderr.startswith(f"error: a sweep of study 'one' into {dbp.resolve()} "
                                         f"is running (pid {first.pid}, started at ")
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        second = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=env)
        err1 = first.communicate(timeout=300)[1]
        err2 = second.communicate(timeout=300)[1]
    finally:
        for p in (first, second):
            if p is not None and p.poll() is None:
                p.kill()
    assert first.returncode == 0 and second.returncode == 0, (err1, err2)
    assert "run 1: 8 launches stored (8 points), 0 failed, 0 already stored" in err1
    assert err2.startswith(f"waiting for the sweep of study 'one' into {dbp.resolve()} "
                           f"(pid {first.pid}, started at "), err2
    assert "run 2: 0 launches stored (0 points), 0 failed, 8 already stored" in err2, err2
    runs = q(dbp, "SELECT id, started_at, finished_at, units_done, units_skipped FROM runs "
                  "ORDER BY id")
    assert [r[3:] for r in runs] == [(8, 0), (0, 8)]
    assert runs[1][1] >= runs[0][2], runs  # the second began after the first had ended
    assert q(dbp, "SELECT run_id, COUNT(*) FROM units GROUP BY run_id") == [(1, 8)]


def test_sweeps_of_different_studies_started_together_on_a_new_database(tmp_path):
    """Three sweeps of different studies started at once on a file that does not exist
    yet all store (the schema is created once, the others wait for it)."""
    dbp = tmp_path / "both.db"
    env = dict(os.environ, COLUMNS="200")
    procs = []
    for name in ("s1", "s2", "s3"):
        f = tmp_path / f"{name}.toml"
        f.write_text(f'[study]\nname = "{name}"\ncollectives = ["bcast"]\n'
                     'algorithms = ["native"]\nsizes = [8]\nprocesses = [1]\n'
                     'repetitions = 2\niterations = 10\n')
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "colltune", "sweep", str(f), "--db", str(dbp)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
    try:
        errs = [p.communicate(timeout=300)[1] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in procs] == [0, 0, 0], errs
    assert q(dbp, "SELECT s.name, COUNT(*) FROM units u JOIN studies s ON s.id = u.study_id "
                  "GROUP BY s.name ORDER BY s.name") == [("s1", 2), ("s2", 2), ("s3", 2)]


def test_launches_another_sweep_stored_meanwhile_count_as_stored(tmp_path, monkeypatch,
                                                                   ompi_build):
    """Where two sweeps of a study still meet (no common lock: another host's cache),
    a launch the other one stored while this one measured it is counted as already
    stored, by the other sweep, not lost from the summary."""
    from colltune.drivers import bench as bench_mod
    from colltune.results import db as db_mod
    from colltune.results import store
    from colltune.drivers import registry
    from colltune.studies import study as study_mod
    from colltune.studies import sweep as sweep_mod

    study = study_mod.loads('[study]\nname = "meet"\ncollectives = ["bcast"]\n'
                            'algorithms = ["native"]\nsizes = [8]\nprocesses = [1]\n'
                            'repetitions = 3\niterations = 5\n')
    plan = sweep_mod.make_plan(study, ompi_build, seed=1)
    dbp = tmp_path / "r.db"
    conn = db_mod.open_db(dbp)
    rec = {"collective": "bcast", "algorithm": "native", "spec": "native", "np": 1, "size": 8,
           "median_us": 1.0}
    calls = []

    def fake_run(build, spec, timeout=None, **kw):
        if not calls:  # the other sweep stores this very launch first
            other = db_mod.open_db(dbp)
            sid = store.upsert_study(other, "meet", study.definition())
            rid = store.store_run(other, study_id=sid, round=1)
            store.store_unit(other, study_id=sid, run_id=rid, round=1, key=plan.units[0].key,
                             collective="bcast", np=1, nodes=1, ppn=1, mapping="core",
                             rank_order="seq", repetition=1, algorithms=["native"],
                             library_spec=None, command="mpirun", env={}, notes=[],
                             started_at=db_mod.now(), seconds=1.0, records=[rec])
            other.close()
        calls.append(spec)
        return [dict(rec)], []

    monkeypatch.setattr(bench_mod, "run", fake_run)
    oc = sweep_mod.execute(plan, conn, progress=False)
    conn.close()
    assert len(calls) == 3 and oc.status == "done"
    assert (oc.done, oc.skipped, oc.others, oc.failed) == (2, 1, 1, 0)
    assert q(dbp, "SELECT COUNT(*) FROM units") == [(3,)]


# ----------------------------------------------------------- placement translation


def _mpi(kind):
    from colltune.mpi.libraries import MPI

    launcher = Path("/x/bin/mpirun" if kind == "openmpi" else "/x/bin/mpiexec")
    return MPI(kind, Path("/x/bin"), Path("/x/bin/mpicc"), launcher, "5", kind)


@pytest.fixture
def hostfile(tmp_path):
    p = tmp_path / "hosts"
    p.write_text("# two nodes\nnodeA0 slots=4\nnodeA1:4\n")
    return str(p)


def test_hostfile_parsing(tmp_path):
    p = tmp_path / "h"
    p.write_text("a slots=2 max_slots=4\nb:3\na\n\nc  # comment\n")
    alloc = placement.parse_hostfile(p, default_slots=8)
    assert alloc.hosts == (("a", 10), ("b", 3), ("c", 8))
    assert "no slot count" in alloc.notes[0]
    p.write_text("a slots=2 flavour=3\n")
    with pytest.raises(placement.LaunchError, match="line 1: unknown field"):
        placement.parse_hostfile(p)


@pytest.mark.parametrize("mapping, order, want", [
    ("core", "seq", ["--host", "nodeA0:4,nodeA1:2", "--map-by", "core", "--rank-by", "slot",
                     "--bind-to", "core"]),
    ("socket", "rr", ["--host", "nodeA0:4,nodeA1:2", "--map-by", "package", "--rank-by", "node",
                      "--bind-to", "core"]),
    ("node", "seq", ["--host", "nodeA0:3,nodeA1:3", "--map-by", "node", "--rank-by", "slot",
                     "--bind-to", "core"]),
])
def test_open_mpi_options(hostfile, mapping, order, want):
    ln = launch.prepare(_mpi("openmpi"), 6, ["prog"], placement=Placement(
        "hostfile", mapping, order, hostfile=hostfile))
    argv = [a for a in ln.argv if a != "--allow-run-as-root"]
    assert argv == ["/x/bin/mpirun", "-np", "6", *want, "prog"]
    assert ln.nodes == 2 and ln.ppn == (3 if mapping == "node" else 4)


def test_a_plain_launch_oversubscribes_past_a_default_hostfiles_slots(hostfile, monkeypatch):
    """Under `cluster env` a plain mpirun fills Open MPI's default hostfile in order;
    --oversubscribe (added past this machine's cores) would put every process on its
    first host: it is added past the hostfile's slots instead."""
    monkeypatch.setattr(launch, "cores", lambda: 2)
    monkeypatch.setenv("PRTE_MCA_prte_default_hostfile", hostfile)  # 8 slots
    for np, over in ((3, False), (8, False), (9, True)):
        ln = launch.prepare(_mpi("openmpi"), np, ["prog"])
        assert ("--oversubscribe" in ln.argv) == over, (np, ln.argv)
    assert any("9 processes on 8 slots of" in n for n in ln.notes), ln.notes
    monkeypatch.delenv("PRTE_MCA_prte_default_hostfile")
    assert "--oversubscribe" in launch.prepare(_mpi("openmpi"), 3, ["prog"]).argv


@pytest.mark.parametrize("mapping, order, want", [
    ("core", "seq", ["-hosts", "nodeA0:4,nodeA1:2", "-bind-to", "core", "-map-by", "core"]),
    ("socket", "rr", ["-hosts", "nodeA0:4,nodeA1:2", "-rankmap", "0,1,0,1,0,0", "-bind-to",
                      "core", "-map-by", "socket"]),
    ("node", "rr", ["-hosts", "nodeA0:3,nodeA1:3", "-rankmap", "0,1,0,1,0,1", "-bind-to",
                    "core", "-map-by", "core"]),
])
def test_mpich_options(hostfile, mapping, order, want):
    ln = launch.prepare(_mpi("mpich"), 6, ["prog"], placement=Placement(
        "hostfile", mapping, order, hostfile=hostfile))
    assert ln.argv == ["/x/bin/mpiexec", "-n", "6", *want, "prog"]


def test_srun_options(monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "n[1-2]")
    monkeypatch.setenv("SLURM_JOB_NUM_NODES", "2")
    monkeypatch.setenv("SLURM_JOB_CPUS_PER_NODE", "4(x2)")
    monkeypatch.setattr(shutil, "which", lambda name: None)  # no scontrol, bare srun
    ln = launch.prepare(_mpi("openmpi"), 6, ["prog"], placement=Placement("slurm", "socket", "rr"))
    assert ln.argv == ["srun", "-n", "6", "-N", "2", "--mpi=pmix", "--distribution=cyclic:cyclic",
                       "--cpu-bind=cores", "--kill-on-bad-exit=1", "prog"]
    ln = launch.prepare(_mpi("mpich"), 3, ["prog"], placement=Placement("slurm", "core", "seq"))
    assert ln.argv == ["srun", "-n", "3", "-N", "1", "--mpi=pmi2", "--distribution=block:block",
                       "--cpu-bind=cores", "--kill-on-bad-exit=1", "prog"]
    ln = launch.prepare(_mpi("mpich"), 12, ["prog"], placement=Placement("slurm", "node", "seq"))
    assert "--overcommit" in ln.argv and "--cpu-bind=none" in ln.argv
    assert "--ntasks-per-node=6" in ln.argv and any("--overcommit" in n for n in ln.notes)
    monkeypatch.delenv("SLURM_JOB_ID")
    with pytest.raises(placement.LaunchError, match="inside a Slurm allocation"):
        launch.prepare(_mpi("openmpi"), 2, ["prog"], placement=Placement("slurm", "core"))


def test_local_placement_and_default_unchanged():
    mpi = _mpi("openmpi")
    over = placement.cores() + 1
    ln = launch.prepare(mpi, over, ["prog"], placement=Placement("local", "core"))
    assert "--oversubscribe" in ln.argv and ln.argv[ln.argv.index("--bind-to") + 1] == "none"
    assert any("not bound" in n for n in ln.notes) and any("--oversubscribe" in n for n in ln.notes)
    plain = launch.prepare(mpi, 2, ["prog"])
    assert "--map-by" not in plain.argv and plain.nodes == 1 and plain.ppn == 2
    with launch.session(Placement("local", "socket")) as s:
        ln = launch.prepare(mpi, 2, ["prog"])
    assert ln.argv[ln.argv.index("--map-by") + 1] == "package" and s.launches == [ln]
    assert "--map-by" not in launch.prepare(mpi, 2, ["prog"]).argv


# Open MPI's own mapper (prterun --do-not-launch with its node simulator and a
# synthetic topology of 2 packages x 4 cores per node) places the ranks of the
# translated command lines: check that they land where the mapping/order say.
TOPOLOGY_SYNTHETIC = "package:2 core:4 pu:1"


def _ompi_map(ln: launch.Launch, topo: Path) -> dict[str, list[tuple[int, int]]]:
    sim = ["--prtemca", "ras", "simulator", "--prtemca", "ras_simulator_num_nodes", "2",
           "--prtemca", "ras_simulator_slots", "4", "--prtemca", "hwloc_use_topo_file", str(topo),
           "--display", "map", "--do-not-launch"]
    argv = ln.argv[:1] + sim + ln.argv[1:]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=ln.env)
    nodes: dict[str, list[tuple[int, int]]] = {}
    node = None
    rank = None
    for line in (res.stdout + res.stderr).splitlines():
        m = re.search(r"Data for node: (\S+)", line)
        if m:
            node = m.group(1)
            nodes[node] = []
        m = re.search(r"App rank: (\d+)", line)
        if m:
            rank = int(m.group(1))
        m = re.search(r"Binding: package\[(\d+)\]", line)
        if m and node is not None and rank is not None:
            nodes[node].append((rank, int(m.group(1))))
            rank = None
    assert nodes, res.stdout + res.stderr
    return nodes


@pytest.mark.parametrize("mapping", ["core", "socket", "node"])
@pytest.mark.parametrize("order", ["seq", "rr"])
def test_open_mpi_places_ranks_as_asked(ompi_build, hostfile, tmp_path, mapping, order):
    if not shutil.which("lstopo"):
        pytest.skip("needs hwloc's lstopo to write a synthetic topology (apt-get install hwloc)")
    topo = tmp_path / "topo.xml"
    subprocess.run(["lstopo", "--input", TOPOLOGY_SYNTHETIC, str(topo)], check=True,
                   capture_output=True)
    np = 6
    ln = launch.prepare(ompi_build.mpi, np, ["hostname"],
                        placement=Placement("hostfile", mapping, order, hostfile=hostfile))
    got = _ompi_map(ln, topo)
    alloc = placement.parse_hostfile(hostfile)
    counts = [n for _, n, _ in placement.layout(np, ln.placement, alloc)]
    # the ranks each node should hold: blocks (seq) or round-robin over nodes (rr), as
    # placement.rank_nodes says (which MPICH gets as -rankmap)
    want: dict[int, list[int]] = {0: [], 1: []}
    for r, node in enumerate(placement.rank_nodes(counts, order)):
        want[node].append(r)
    assert sorted(r for r, _ in got["nodeA0"]) == want[0]
    assert sorted(r for r, _ in got["nodeA1"]) == want[1]
    for procs in got.values():
        pk = [p for _, p in sorted(procs, key=lambda x: x[0])]
        if mapping == "socket":  # consecutive ranks of a node alternate packages
            assert all(a != b for a, b in zip(pk, pk[1:])), got
        else:  # by core: a node's first 4 processes share package 0
            assert set(pk) == {0}, got


# ------------------------------------------------------------------------ Slurm

SLURM_CONF = """\
ClusterName=colltunetest
SlurmctldHost={host}
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName={host} CPUs={cpus} Sockets=1 CoresPerSocket={cpus} ThreadsPerCore=1 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


@pytest.fixture
def slurm(tmp_path_factory):
    """A one-node Slurm (controller and node daemon) started for this test."""
    for tool in ("slurmctld", "slurmd", "sbatch", "srun", "sinfo"):
        if not shutil.which(tool):
            pytest.skip("Slurm is not installed (Debian: apt-get install slurm-wlm libpmix-dev)")
    if os.geteuid() != 0:
        pytest.skip("the test Slurm runs its daemons as root")
    d = tmp_path_factory.mktemp("slurm")
    (d / "state").mkdir()
    (d / "spool").mkdir()
    host = socket.gethostname()
    conf = d / "slurm.conf"
    conf.write_text(SLURM_CONF.format(host=host, d=d, ctld_port=_free_port(), d_port=_free_port(),
                                      cpus=os.cpu_count()))
    env = dict(os.environ, SLURM_CONF=str(conf))
    started: list[subprocess.Popen] = []
    try:
        # in the foreground (-D), as children of this test, so that they are stopped and
        # reaped at the end
        for daemon in (["slurmctld", "-D", "-f", str(conf), "-c", "-i"],
                       ["slurmd", "-D", "-f", str(conf)]):
            started.append(subprocess.Popen(daemon, env=env, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL))
            time.sleep(0.5)
        ok = _wait_for(lambda: "idle" in subprocess.run(
            ["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True).stdout, 60)
        if not ok:
            log = d / "slurmctld.log"
            pytest.skip("the test Slurm did not come up: "
                        + (log.read_text()[-1000:] if log.exists() else "no log"))
        yield env, d
    finally:
        for p in reversed(started):
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def test_sweep_in_a_real_slurm_allocation(slurm, tmp_path, ompi_build):
    env, d = slurm
    if "pmix" not in subprocess.run(["srun", "--mpi=list"], env=env, capture_output=True,
                                    text=True).stdout + subprocess.run(
            ["srun", "--mpi=list"], env=env, capture_output=True, text=True).stderr:
        pytest.skip("Slurm has no PMIx plugin for Open MPI")
    try:  # Slurm's mpi/pmix plugin dlopens the unversioned name, shipped by libpmix-dev
        ctypes.CDLL("libpmix.so")
    except OSError:
        pytest.skip("Slurm's PMIx plugin cannot load libpmix.so (Debian: apt-get install "
                    "libpmix-dev)")
    f = tmp_path / "s.toml"
    f.write_text(TINY.replace("processes = [2, 3]", "processes = [2]").replace(
        "repetitions = 2", 'repetitions = 1\nmapping = ["core", "socket"]')
        + "[sbatch]\nexclusive = false\n")
    dbp = tmp_path / "r.db"
    script = tmp_path / "job.sh"
    res = run_sweep(f, "--db", dbp, "--emit-sbatch", script, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    sub = subprocess.run(["sbatch", "--wait", str(script)], env=env, capture_output=True,
                         text=True, timeout=300, cwd=tmp_path)
    logs = "".join(p.read_text() for p in tmp_path.glob("colltune-example-*.out"))
    assert sub.returncode == 0, sub.stdout + sub.stderr + logs
    run = q(dbp, "SELECT launcher, status, units_done, environment FROM runs")
    assert run[0][:3] == ("slurm", "done", 2), logs
    assert "SLURM_JOB_ID" in json.loads(run[0][3])
    cmds = sorted(r[0] for r in q(dbp, "SELECT command FROM units"))
    assert all(c.split()[0].endswith("srun") and "--mpi=pmix" in c and "-n 2" in c for c in cmds)
    assert any("--distribution=block:block" in c for c in cmds)
    assert any("--distribution=block:cyclic" in c for c in cmds)
    assert q(dbp, "SELECT COUNT(*) FROM measurements") == [(12,)]


HEAT_STUDY = """
[study]
name = "heattiny"
collectives = ["heat"]
algorithms = ["blocking", "overlap"]
processes = [1, 2]
repetitions = 1
seed = 7
[study.heat]
grids = ["40x30", "37x23"]
decomps = ["rows", "2d"]
iterations = 5
stream_elements = "256K"
"""


def test_heat_study_end_to_end_with_report_section(tmp_path, ompi_build):
    """A study of the heat application: one launch per configuration, stored as
    measurements of collective 'heat', resumable, and a report section with the
    speedup and efficiency table."""
    from click.testing import CliRunner

    from colltune.results import db
    from colltune.results import reader
    from colltune.analysis import heat
    from colltune.drivers import registry
    from colltune.studies import study as study_mod
    from colltune.studies import sweep as sweep_mod
    from colltune.cli.report import report as report_cmd

    st = study_mod.loads(HEAT_STUDY)
    plan = sweep_mod.make_plan(st, ompi_build, seed=7)
    # grids x decomps x variants x np, and a memory-bandwidth launch per np
    assert len(plan.units) == 2 * 2 * 2 * 2 + 2
    dbp = tmp_path / "h.db"
    conn = db.open_db(dbp)
    oc = sweep_mod.execute(plan, conn, progress=False)
    assert oc.status == "done" and oc.done == 18 and oc.failed == 0
    df = reader.measurements_frame(conn, study="heattiny")
    assert len(df) == 18 and set(df["collective"]) == {"heat"}
    assert set(df["algorithm"]) == {"blocking", "overlap", "stream"}
    assert (df["median_us"] > 0).all()
    app = df[df["algorithm"] != "stream"]
    assert set(app["size"]) == {40 * 30 * 8, 37 * 23 * 8}
    stream = df[df["algorithm"] == "stream"]
    assert sorted(stream["np"]) == [1, 2]
    assert set(stream["size"]) == {24 * 256 * 1024 * 1, 24 * 256 * 1024 * 2}  # bytes moved
    again = sweep_mod.execute(sweep_mod.make_plan(st, ompi_build, seed=7), conn, progress=False)
    assert again.skipped == 18 and again.done == 0
    conn.close()
    g = heat.heat_scaling(df)
    assert "stream" not in set(g["variant"])
    one = g[g["np"] == 1]
    assert (one["speedup"] == 1).all() and (one["efficiency"] == 1).all()
    two = g[g["np"] == 2]
    assert (two["efficiency"] - two["speedup"] / 2).abs().max() < 1e-12
    # the bandwidth bound: STREAM GB/s / 24 B per cell x 8 FLOPs, per process count
    bw = heat.stream_bandwidth(df)
    assert set(bw.index) == {1, 2} and (bw > 0).all()
    assert (g["bound_gflops"] - g["np"].map(bw) / 24 * 8).abs().max() < 1e-9
    assert (g["of_bound"] - g["gflops"] / g["bound_gflops"]).abs().max() < 1e-12
    out = tmp_path / "h.html"
    res = CliRunner().invoke(report_cmd, ["--db", str(dbp), "--study", "heattiny",
                                             "-o", str(out), "--no-measure"])
    assert res.exit_code == 0, res.output
    html = out.read_text()
    assert 'id="coll-heat"' in html and "Speedup and efficiency" in html
    assert 'data-kind="heat-speedup"' in html
    assert "bound GFLOP/s" in html and "STREAM GB/s" in html


def test_heat_study_errors_name_the_key():
    from colltune.drivers import registry
    from colltune.studies import study as study_mod

    with pytest.raises(study_mod.StudyError, match=r"study.heat.grids\[0\]"):
        study_mod.loads(HEAT_STUDY.replace('"40x30"', '"40by30"'))
    with pytest.raises(study_mod.StudyError, match="algorithms.heat.*not a heat variant"):
        study_mod.loads(HEAT_STUDY.replace('"overlap"]', '"overlapp"]'))
    with pytest.raises(study_mod.StudyError, match="study.heat.grids: missing"):
        study_mod.loads(HEAT_STUDY.replace('grids = ["40x30", "37x23"]', ''))
    with pytest.raises(study_mod.StudyError, match="study.heat.stream_elements"):
        study_mod.loads(HEAT_STUDY.replace('"256K"', '"lots"'))
    with pytest.raises(study_mod.StudyError, match="study.heat.stream: "):
        study_mod.loads(HEAT_STUDY + "stream = 1\n")
    off = study_mod.loads(HEAT_STUDY + "stream = false\n")
    assert not any(s.startswith("stream") for s in study_mod.heat_specs(off))


def test_failure_message_prefers_error_lines_and_hints_known_launcher_errors():
    res = launch.Result("srun -n 2 x", 1, "", "noise\nerror: bcast/chain: segsize=-1 is "
                        "out of range\nmore noise", False, [])
    assert launch.failure_message("benchmark", res) == \
        "bcast/chain: segsize=-1 is out of range"  # the command line adds its one "error:"
    pmix = launch.Result("srun -n 2 x", 1, "", "srun: error:  mpi/pmix_v4: init: (null) [0]: "
                         "mpi_pmix.c:195: pmi/pmix: can not load PMIx library", False, [])
    msg = launch.failure_message("benchmark", pmix)
    assert msg.startswith("benchmark failed (1): srun: error:")
    assert "hint:" in msg and "libpmix-dev" in msg


def test_a_launch_whose_launcher_failed_to_start_is_tried_again(tmp_path, monkeypatch):
    """The PMIx listener failure seen in CI: tried again, with a note; a program's own
    failure, or one after it wrote output, is not."""
    monkeypatch.setattr(launch, "_RETRY_PAUSE_S", 0.0)
    count = tmp_path / "tries"
    script = tmp_path / "flaky.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"echo x >> {count}\n"
        f"if [ $(wc -l < {count}) -lt 3 ]; then\n"
        "  echo \"The PMIx server's listener thread failed to start. We cannot\" >&2\n"
        "  exit 213\n"
        "fi\n"
        "echo ok\n")
    script.chmod(0o755)
    res = launch.run(launch.Launch([str(script)], dict(os.environ)))
    assert res.returncode == 0 and res.stdout == "ok\n"
    assert count.read_text().count("x") == 3
    assert sum("tried again" in n for n in res.notes) == 2

    count.write_text("")  # fails more often than it is tried: the last failure stands
    script.write_text(script.read_text().replace("-lt 3", "-lt 9"))
    res = launch.run(launch.Launch([str(script)], dict(os.environ)))
    assert res.returncode == 213 and count.read_text().count("x") == 1 + launch.LAUNCH_RETRIES

    count.write_text("")  # output before the failure: the program ran, not tried again
    script.write_text(script.read_text().replace("  exit 213", "  echo partial; exit 213"))
    res = launch.run(launch.Launch([str(script)], dict(os.environ)))
    assert res.returncode == 213 and count.read_text().count("x") == 1
    assert not launch.transient_failure(launch.Result("x", 1, "", "error: bad size", False, []))


def test_cancel_all_stops_launches_running_in_other_threads(tmp_path):
    """What `colltune sweep --jobs N` relies on for Ctrl-C: a launch running in a worker
    thread stops within a moment (its whole session killed), later ones are refused,
    and after clear_cancel launches run again."""
    import threading

    script = tmp_path / "long.sh"
    script.write_text("#!/bin/sh\necho started\nsleep 60\necho never\n")
    script.chmod(0o755)
    got: dict = {}

    def worker():
        try:
            launch.run(launch.Launch([str(script)], dict(os.environ)))
        except KeyboardInterrupt as exc:
            got["exc"] = exc

    th = threading.Thread(target=worker)
    t0 = time.monotonic()
    th.start()
    time.sleep(0.5)
    try:
        launch.cancel_all()
        th.join(timeout=20)
        assert not th.is_alive() and isinstance(got.get("exc"), launch.Cancelled)
        assert time.monotonic() - t0 < 15
        assert subprocess.run(["pgrep", "-f", str(script)], capture_output=True).returncode == 1
        with pytest.raises(launch.Cancelled):
            launch.run(launch.Launch(["true"], dict(os.environ)))
    finally:
        launch.clear_cancel()
    assert launch.run(launch.Launch(["echo", "again"], dict(os.environ))).stdout == "again\n"


def test_simulated_launches_side_by_side_store_what_they_store_one_by_one(tmp_path,
                                                                           smpi_build):
    """--jobs 3: every launch stored once, the simulated times equal to the digit those
    of a sweep one launch at a time; a measured study refuses --jobs."""
    from colltune.results import db as db_mod
    from colltune.results import reader
    from colltune.studies import sweep as sweep_mod
    from colltune.drivers import registry
    from colltune.studies import study as study_mod
    from conftest import colltune

    st = tmp_path / "jobs.toml"
    st.write_text('[study]\nname = "jobs"\ncollectives = ["bcast", "allreduce"]\n'
                  'algorithms = "all"\nsizes = [8, 65536]\n'
                  'processes = [4, 8, 16]\nmpi = "smpi"\nplatform = "tapems-16x12"\n')
    points = {}
    for jobs in (1, 3):
        dbp = tmp_path / f"j{jobs}.db"
        plan = sweep_mod.make_plan(study_mod.load(st), smpi_build, seed=5)
        conn = db_mod.open_db(dbp)
        try:
            oc = sweep_mod.execute(plan, conn, progress=False, jobs=jobs)
        finally:
            conn.close()
        assert oc.status == "done" and oc.done == 6 and oc.failed == 0
        conn = db_mod.open_reader(dbp)
        try:
            df = reader.measurements_frame(conn, study="jobs", only_simulated=True)
            assert conn.execute("SELECT COUNT(*) FROM failures").fetchone()[0] == 0
        finally:
            conn.close()
        points[jobs] = sorted(zip(df["collective"], df["algorithm"], df["np"], df["size"],
                                  df["median_us"]))
    # every algorithm of both collectives (and native) at 2 sizes and 3 counts
    n = sum(len(set(registry.names(smpi_build, c)) | {"native"}) for c in ("bcast", "allreduce"))
    assert len(points[1]) == n * 2 * 3 and points[3] == points[1]
    r = colltune("sweep", str(st), "--db", str(tmp_path / "m.db"), "--mpi", "openmpi",
                 "--jobs", "2")
    assert r.returncode != 0 and "simulated studies" in r.stderr
