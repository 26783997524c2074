"""Process and file hygiene of the commands: no MPI process outlives colltune, outputs
are checked before anything is launched, readers never write, $COLLTUNE_DB is honoured,
process counts follow the policy, a changed study is not merged silently."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from colltune.results import db
from colltune.results import store
from colltune.mpi import launch
from colltune.mpi import placement
from conftest import colltune

EXE = str(Path(sys.executable).parent / "colltune")


# ------------------------------------------------------------------ processes

def _marked(mark: str) -> list[tuple[int, str]]:
    """Live processes whose environment carries the mark: colltune, the launcher and
    the ranks of one run, whatever session or process group they are in."""
    found = []
    needle = f"COLLTUNE_TEST_MARK={mark}".encode()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                env = f.read()
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
            with open(f"/proc/{d}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if needle in env and stat[stat.rindex(")") + 2] != "Z":
            found.append((int(d), comm))
    return found


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_bench_leaves_no_mpi_process_and_keeps_the_points(tmp_path, sig,
                                                                      ompi_build):
    mark = uuid.uuid4().hex
    out = tmp_path / "r.json"
    # 8 and 16 B take a moment, 16 MiB with these iterations takes long: the signal
    # comes while the ranks are in the large size
    p = subprocess.Popen([EXE, "bench", "--coll", "bcast", "--algo", "native,linear",
                          "--np", "2", "--sizes", "8,16,16M", "--iterations", "2000",
                          "--timing", "osu", "--format", "json", "-o", str(out)],
                         env=dict(os.environ, COLLTUNE_TEST_MARK=mark),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 120:
            ranks = [pid for pid, comm in _marked(mark) if comm == "colltune-bench"]
            if len(ranks) >= 2:
                break
            assert p.poll() is None, p.communicate()
            time.sleep(0.2)
        assert len(ranks) >= 2, _marked(mark)
        time.sleep(6)  # the small sizes are measured by now
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, err
    deadline = time.monotonic() + 10
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _marked(mark) == [], "left running after colltune stopped"
    assert "interrupted" in err
    kept = json.loads(out.read_text())  # the points measured before the signal
    assert kept and {r["size"] for r in kept} <= {8, 16} and all(r["median_us"] for r in kept)


def test_a_timed_out_launch_leaves_no_rank(ompi_build):
    """Open MPI's prterun puts every rank in a process group of its own: the launch's
    session is what gets stopped."""
    mark = uuid.uuid4().hex
    ln = launch.prepare(ompi_build.mpi, 2, [str(ompi_build.program("colltune-bench")),
                                            "--coll", "bcast", "--algo", "native",
                                            "--sizes", "8", "--iterations", "100000000"],
                        extra_env={"COLLTUNE_TEST_MARK": mark})
    res = launch.run(ln, timeout=3)
    assert res.timed_out
    time.sleep(0.5)
    assert _marked(mark) == []


# ------------------------------------------------------------------ process counts

def test_absurd_process_counts_are_refused_before_anything_runs():
    n = placement.cores() * placement.MAX_PER_CORE + 1
    for args in (["bench", "--coll", "bcast", "--np", "100000", "--oversubscribe"],
                 ["verify", "--np", str(n)], ["pingpong", "--np", str(n), "--oversubscribe"],
                 ["heat", "--np", str(n), "--oversubscribe"]):
        t0 = time.monotonic()
        res = colltune(*args, timeout=60)
        assert res.returncode == 2, res.stderr
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "--force" in lines[0]
        assert time.monotonic() - t0 < 30


def test_measuring_more_processes_than_cores_needs_the_flag():
    n = placement.cores() + 1
    res = colltune("bench", "--coll", "bcast", "--np", str(n), "--sizes", "8", timeout=60)
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "--oversubscribe" in res.stderr
    with pytest.raises(placement.LaunchError):
        placement.check_process_counts([n])
    notes = placement.check_process_counts([n], oversubscribe=True)
    assert notes and "oversubscribed" in notes[0]
    assert placement.check_process_counts([n], timing=False)  # verify may share cores
    hosts = placement.Allocation((("a", 64), ("b", 64)), "test")
    assert hosts.slots == 128


# ------------------------------------------------------------------ outputs

def test_unwritable_outputs_fail_before_any_launch(tmp_path):
    not_db = tmp_path / "notes.db"
    not_db.write_text("these are my notes\n")
    for args, what in (
            (["--db", str(not_db)], "not a results database"),
            (["--db", "/proc/colltune-test/r.db"], "cannot create the results database"),
            (["--format", "csv", "-o", "/proc/colltune-test.csv"],
             "-o /proc/colltune-test.csv: directory /proc is not writable"),
            (["--format", "json", "-o", str(tmp_path)], "is a directory")):
        t0 = time.monotonic()
        res = colltune("bench", "--coll", "bcast", "--np", "2", "--sizes", "8", *args,
                       timeout=120)
        assert res.returncode == 2, res.stderr
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and what in lines[0], lines
        assert "points" not in res.stderr  # nothing was launched
        assert time.monotonic() - t0 < 60
    assert not_db.read_text() == "these are my notes\n"
    res = colltune("sweep", "--preset", "quick", "--db", str(not_db), timeout=120)
    assert res.returncode == 2 and "not a results database" in res.stderr
    res = colltune("pingpong", "--format", "csv", "-o", "/proc/x/pp.csv", timeout=60)
    assert res.returncode == 2 and res.stderr.startswith(
        "error: -o /proc/x/pp.csv: directory /proc/x does not exist")


def test_a_failed_write_keeps_the_records_elsewhere(tmp_path, monkeypatch):
    from colltune.base import files

    monkeypatch.setenv("COLLTUNE_CACHE", str(tmp_path / "cache"))
    where = files.save_fallback("bench-records.json", "[1, 2]\n")
    assert where.parent == tmp_path / "cache" / "unsaved" and where.read_text() == "[1, 2]\n"


# ------------------------------------------------------------------ readers

def _small_db(path: Path) -> None:
    """A results database with one bench run of 2 algorithms x 3 sizes x np 2, 4."""
    from colltune.mpi.libraries import MPI

    mpi = MPI("openmpi", Path("/x/bin"), Path("/x/bin/mpicc"), Path("/x/bin/mpirun"), "5.0",
              "Open MPI v5.0")
    recs = []
    for np_ in (2, 4):
        for algo, f in (("native", 1.0), ("linear", 1.5)):
            for size in (8, 1024, 65536):
                t = f * (2 + np_ + size / 1000)
                recs.append({"collective": "bcast", "algorithm": algo, "params": "",
                             "spec": algo, "np": np_, "size": size, "dtype": "char",
                             "op": "sum", "root": 0, "iterations": 10, "warmup": 1,
                             "timing": "osu", "min_us": t * 0.9, "mean_us": t, "median_us": t,
                             "p90_us": t * 1.1, "p99_us": t * 1.2, "max_us": t * 1.3,
                             "stddev_us": 0.1, "valid_reps": 3, "invalid": 0,
                             "fallback": None, "mpi": "Open MPI v5.0", "host": "h",
                             "command": "mpirun -np 2 colltune-bench"})
    store.store_bench(recs, mpi=mpi, path=path, argv=["colltune", "bench"])
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = DELETE")  # a copy as one file
    conn.close()


READERS = [["results"], ["results", "--coll", "bcast", "--np", "2:4", "--size", "8:64K"],
           ["export", "-o", "{out}/x.csv"], ["fit"],
           ["plot", "--kind", "vs-size", "-o", "{out}/p.png"],
           ["report", "--no-measure", "--algorithms-json", "{algos}", "-o", "{out}/r.html"]]


def _algos_json(path: Path) -> Path:
    path.write_text(json.dumps([
        {"name": n, "collective": "bcast", "params": [], "constraints": [], "fallback": None,
         "cost": "(p-1)*(a+n*b)", "summary": n, "ompi_name": None, "hidden": False}
        for n in ("native", "linear")]))
    return path


def test_readers_never_write_next_to_the_database(tmp_path):
    """Readers open read-only: the file stays byte for byte, no -wal/-shm appear, and
    the connection refuses writes."""
    dbp = tmp_path / "ro" / "r.db"
    dbp.parent.mkdir()
    _small_db(dbp)
    before = dbp.read_bytes()
    algos = _algos_json(tmp_path / "algos.json")
    for args in READERS:
        args = [a.format(out=tmp_path, algos=algos) for a in args]
        res = colltune(*args, "--db", str(dbp), timeout=300)
        assert res.returncode == 0, (args, res.stderr)
        assert sorted(p.name for p in dbp.parent.iterdir()) == ["r.db"], args
    assert dbp.read_bytes() == before
    conn = db.open_reader(dbp, schema=True)
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("DELETE FROM measurements")
    conn.close()


def _ro_bind_works() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("mount"):
        return False
    res = subprocess.run(["unshare", "-m", "sh", "-c",
                          "mount --bind -o ro /tmp /mnt 2>/dev/null && ! touch /mnt/.x 2>/dev/null"],
                         capture_output=True, timeout=30)
    return res.returncode == 0


@pytest.mark.skipif(not _ro_bind_works(), reason="needs root and unshare -m for a read-only "
                    "bind mount (chmod does not stop root)")
def test_readers_work_on_a_read_only_file_system(tmp_path):
    """A copy of a database on a read-only mount (a private mount namespace: nothing
    outside the test sees it), in WAL mode as sweeps leave it."""
    src = tmp_path / "src"
    mnt = tmp_path / "mnt"
    src.mkdir()
    mnt.mkdir()
    _small_db(src / "r.db")
    conn = sqlite3.connect(src / "r.db")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.close()
    algos = _algos_json(tmp_path / "algos.json")
    outdir = tmp_path / "out"
    outdir.mkdir()
    script = [f"mount --bind -o ro {src} {mnt} || exit 99"]
    for args in READERS:
        args = [a.format(out=outdir, algos=algos) for a in args]
        script.append(" ".join([EXE, *args, "--db", str(mnt / "r.db")])
                      + " >/dev/null || exit $?")
    res = subprocess.run(["unshare", "-m", "sh", "-c", "\n".join(script)], capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert (outdir / "x.csv").stat().st_size and (outdir / "r.html").stat().st_size


# ------------------------------------------------------------------ $COLLTUNE_DB

def test_every_command_with_a_database_defaults_to_colltune_db(tmp_path, monkeypatch):
    """Parsing every command with --db left out gives $COLLTUNE_DB."""
    import click

    from colltune.cli import main

    target = str(tmp_path / "env.db")
    monkeypatch.setenv("COLLTUNE_DB", target)
    seen = []
    for name, cmd in main.commands.items():
        opts = [p for p in cmd.params if "--db" in p.opts]
        if not opts:
            continue
        required = {"bench": ["--coll", "bcast"], "plot": ["--kind", "vs-size", "-o", "x.png"],
                    "report": ["-o", "x.html"], "export": ["-o", "x.csv"]}.get(name, [])
        ctx = cmd.make_context(name, list(required), parent=click.Context(main))
        value = ctx.params["db_path"]
        if name == "bench":  # --db is off unless given; --db alone means the default
            assert value is None
            ctx = cmd.make_context(name, [*required, "--db"], parent=click.Context(main))
            from colltune.cli._common import db_path_or_default

            value = db_path_or_default(ctx.params["db_path"])
        assert value == target, name
        seen.append(name)
    assert set(seen) >= {"bench", "sweep", "quick", "results", "export", "fit", "model", "plot",
                         "report"}


def test_bench_db_alone_and_results_use_colltune_db(tmp_path):
    target = tmp_path / "env.db"
    env = dict(os.environ, COLLTUNE_DB=str(target), COLUMNS="200")
    res = subprocess.run([EXE, "bench", "--coll", "bcast", "--np", "2", "--sizes", "8",
                          "--iterations", "10", "--reps", "1", "--db"], env=env,
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert f"in {target}" in res.stderr and not (tmp_path / "colltune.db").exists()
    res = subprocess.run([EXE, "results", "--study", "(bench)", "--format", "csv"], env=env,
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert res.returncode == 0 and "bcast" in res.stdout


# ------------------------------------------------------------------ errors

def test_one_error_line_with_a_suggestion(ompi_build):
    res = colltune("bench", "--coll", "bcast", "--algo", "chain:segsze=8192", "--np", "2",
                   "--sizes", "8", timeout=120)
    assert res.returncode == 2
    assert res.stderr.count("error:") == 1 and res.stderr.count("\n") == 1
    assert "did you mean 'segsize'?" in res.stderr
    res = colltune("bench", "--coll", "bcast", "--algo", "binomal", "--np", "2", timeout=120)
    assert res.returncode == 2 and "did you mean 'binomial'?" in res.stderr
    assert "valid: native" in res.stderr


def test_a_study_with_a_changed_algorithm_list_is_not_merged_silently(tmp_path):
    study = tmp_path / "s.toml"
    text = """
[study]
name = "changing"
collectives = ["bcast"]
algorithms = ["native", "linear"]
sizes = [8]
processes = [2]
repetitions = 1
iterations = 5
warmup = 1
"""
    study.write_text(text)
    dbp = tmp_path / "r.db"
    run = lambda *a: subprocess.run([EXE, "sweep", str(study), "--db", str(dbp), *a],  # noqa: E731
                                    capture_output=True, text=True, timeout=600)
    res = run()
    assert res.returncode == 0, res.stderr
    study.write_text(text.replace('["native", "linear"]', '["native", "binomial"]'))
    res = run()
    assert res.returncode == 2, res.stderr
    line = res.stderr.strip()
    assert line.count("\n") == 0 and "added binomial" in line and "removed linear" in line
    for flag in ("--new-round", "--name", "--merge-changed"):
        assert flag in line
    res = run("--new-round")
    assert res.returncode == 0, res.stderr
    res = run("--name", "changing2")
    assert res.returncode == 0, res.stderr
    rounds = sqlite3.connect(dbp).execute(
        "SELECT s.name, MAX(r.round) FROM runs r JOIN studies s ON r.study_id = s.id "
        "GROUP BY s.name ORDER BY s.name").fetchall()
    assert rounds == [("changing", 2), ("changing2", 1)]


def test_usage_errors_come_out_the_same_way():
    for args, what in ((["bench", "--coll", "bcst"], "'bcst' is not one of"),
                       (["bench", "--col", "bcast"], "Did you mean"),
                       (["benhc"], "No such command"),
                       (["results", "--np", "2:x"], "--np '2:x'")):
        res = colltune(*args, timeout=60)
        assert res.returncode == 2, res.stderr
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and what in lines[0], lines


def test_installs_and_builds_into_the_cache_wait_for_each_other(tmp_path, capfd, monkeypatch):
    """Two commands on a fresh machine must not install or build into the same cache
    directory together: the second waits for the first's lock, saying so."""
    from colltune.base import paths

    monkeypatch.setenv("COLLTUNE_CACHE", str(tmp_path))
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import time, sys\nfrom colltune.base.paths import cache_lock\n"
         "with cache_lock('mpi-x', 'x'):\n    print('held', flush=True)\n    time.sleep(1.5)\n"],
        stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    assert holder.stdout.readline().strip() == "held"
    t0 = time.monotonic()
    with paths.cache_lock("mpi-x", "installing x"):
        waited = time.monotonic() - t0
    holder.wait(timeout=30)
    assert waited > 0.5
    assert "waiting for another colltune command to finish installing x" in capfd.readouterr().err
    t0 = time.monotonic()
    with paths.cache_lock("mpi-x", "installing x"):  # free now: no wait, no message
        pass
    assert time.monotonic() - t0 < 0.5 and "waiting" not in capfd.readouterr().err
