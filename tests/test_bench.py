"""The benchmark driver and its output formats."""

import csv
import json
from pathlib import Path

import pytest

from conftest import colltune

FIELDS = {"collective", "algorithm", "params", "np", "size", "rep_min_us", "mean_us", "median_us",
          "p90_us", "p99_us", "rep_max_us", "stddev_us", "valid_reps", "mpi", "timing"}


def test_bench_json_records(tmp_path):
    res = colltune("bench", "--coll", "bcast", "--algo", "native,binomial,chain:fanout=2",
                   "--timing", "osu",
                   "--np", "2", "--sizes", "8,4K", "--iterations", "20", "--reps", "2",
                   "--format", "json")
    assert res.returncode == 0, res.stderr
    recs = json.loads(res.stdout)
    assert len(recs) == 6  # 3 algorithms x 2 sizes
    for r in recs:
        assert FIELDS <= set(r), FIELDS - set(r)
        assert r["np"] == 2 and r["valid_reps"] == 2 and r["timing"] == "osu"
        assert 0 < r["rep_min_us"] <= r["median_us"] <= r["rep_max_us"]
        assert "Open MPI" in r["mpi"]
    chain = [r for r in recs if r["algorithm"] == "chain"]
    assert chain and all("fanout=2" in r["params"] for r in chain)
    assert {r["spec"] for r in recs} == {"native", "binomial", "chain:fanout=2"}


def test_bench_list_with_inner_parameters():
    """`inter=ALG:key=value` continues the spec before it in a list (here and in the C
    driver), and its parameters reach the records."""
    res = colltune("bench", "--coll", "allreduce", "--algo",
                   "reduce_bcast:reduce=linear,bcast=knomial:radix=3+segsize=1K,ring",
                   "--np", "2", "--sizes", "8", "--iterations", "5", "--reps", "1",
                   "--format", "json")
    assert res.returncode == 0, res.stderr
    recs = {r["algorithm"]: r for r in json.loads(res.stdout)}
    assert set(recs) == {"reduce_bcast", "ring"}
    assert "bcast=knomial:radix=3+segsize=1024" in recs["reduce_bcast"]["params"]
    assert "reduce=linear" in recs["reduce_bcast"]["params"]


def test_bench_csv_written_atomically(tmp_path):
    out = tmp_path / "sub" / "r.csv"
    out.parent.mkdir()  # an output's folder must exist
    res = colltune("bench", "--coll", "reduce", "--algo", "linear,binomial", "--np", "3",
                   "--oversubscribe", "--sizes", "64", "--iterations", "10", "--reps", "1", "--format", "csv",
                   "-o", str(out))
    assert res.returncode == 0, res.stderr
    rows = list(csv.DictReader(out.open()))
    assert [r["algorithm"] for r in rows] == ["linear", "binomial"]
    assert all(float(r["median_us"]) > 0 for r in rows)
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temp left


def test_bench_reports_fallback():
    """A commutative-only algorithm under a non-commutative setting is reported."""
    res = colltune("bench", "--coll", "allgather", "--algo", "neighbor_exchange", "--np", "3",
                   "--oversubscribe", "--sizes", "8", "--iterations", "5", "--reps", "1", "--format", "json")
    assert res.returncode == 0, res.stderr
    rec = json.loads(res.stdout)[0]
    assert rec["fallback"] and "ring" in rec["fallback"] and "odd" in rec["fallback"]


def test_bench_table_default():
    res = colltune("bench", "--coll", "bcast", "--algo", "native,linear", "--np", "2",
                   "--sizes", "8", "--iterations", "10", "--reps", "1")
    assert res.returncode == 0, res.stderr
    assert "bcast, 2 processes" in res.stdout and "linear" in res.stdout


# ---- driver options (through bench.run, as cli.py passes them) -------------------------

def _bench(ompi_build, coll, algos, np, sizes, **kw):
    from colltune.drivers import bench as bench_mod

    spec = bench_mod.BenchSpec(coll, algos, np, sizes, **kw)
    recs, _ = bench_mod.run(ompi_build, spec, timeout=300)
    assert len(recs) == len(algos) * len(sizes)
    return recs


def test_bench_window_timing(ompi_build):
    recs = _bench(ompi_build, "bcast", ["native", "binomial"], 2, [8, 1024], iterations=20,
                  reps=2, timing="window")
    for r in recs:
        assert (FIELDS | {"invalid", "window_us", "valid", "sleep_us"}) <= set(r)
        assert r["timing"] == "window"
        assert r["valid_reps"] > 0 and r["invalid"] >= 0
        assert r["valid_reps"] + r["invalid"] == 20 * 2  # every sample accounted for
        assert r["window_us"] > 0 and r["valid"] is None
        assert 0 < r["rep_min_us"] <= r["median_us"] <= r["rep_max_us"]


def test_bench_validate_passes(ompi_build):
    """--validate compares each point with the MPI library's collective (np 3: odd)."""
    for coll, algo, dtype, root in (("bcast", "binomial", "char", 1),
                                    ("reduce", "rabenseifner", "float", 2),
                                    ("allreduce", "ring", "int", 0),
                                    ("gather", "binomial", "double", 1)):
        recs = _bench(ompi_build, coll, ["native", algo], 3, [0, 8, 8000], iterations=3,
                      warmup=1, reps=1, dtype=dtype, root=root, validate=True)
        assert all(r["valid"] is True for r in recs), [(r["spec"], r["size"]) for r in recs]


def test_bench_validate_catches_a_wrong_result(ompi_build):
    """A deliberately wrong Bcast fails validation; the run still returns every record."""
    from colltune.drivers import bench as bench_mod

    recs = _bench(ompi_build, "bcast", ["binomial", "_broken"], 3, [64], iterations=2, reps=1,
                  validate=True)
    assert bench_mod.validation_failures(recs) == [recs[1]]
    assert recs[0]["valid"] is True and recs[1]["valid"] is False


def test_bench_raw_samples(ompi_build):
    osu = _bench(ompi_build, "reduce", ["binomial"], 2, [64], iterations=10, reps=3, raw=True)
    win = _bench(ompi_build, "reduce", ["binomial"], 2, [64], iterations=10, reps=1, raw=True,
                 timing="window")
    r = osu[0]
    assert len(r["samples_us"]) == 3 == r["valid_reps"]  # one per repetition
    assert r["rep_min_us"] == min(r["samples_us"]) and r["rep_max_us"] == max(r["samples_us"])
    w = win[0]
    assert len(w["samples_us"]) == w["valid_reps"] > 0  # the valid samples
    assert abs(w["rep_max_us"] - max(w["samples_us"])) < 1e-9
    plain = _bench(ompi_build, "reduce", ["binomial"], 2, [64], iterations=5, reps=1)
    assert "samples_us" not in plain[0]


def test_bench_time_budget_and_sleep(ompi_build):
    recs = _bench(ompi_build, "bcast", ["native"], 2, [8], reps=2, time_budget=0.05,
                  sleep_us=20)
    r = recs[0]
    assert r["time_budget_s"] == 0.05 and r["sleep_us"] == 20
    # about 0.05 s / 2 repetitions at > 20 us per call: far fewer than the default 1000
    assert 1 <= r["iterations"] < 1000 and r["valid_reps"] == 2


def test_bench_interleaves_algorithms_within_each_size_and_repetition(ompi_build):
    """Within a size, the timed loops run A B C A B C ..., never A A B B C C."""
    from colltune.mpi import launch

    prog = [str(ompi_build.program("colltune-bench")), "--coll", "bcast",
            "--algo", "native,binomial,chain", "--sizes", "8,1024", "--reps", "3",
            "--iterations", "5", "--trace"]
    res = launch.run(launch.prepare(ompi_build.mpi, 2, prog), timeout=300)
    assert res.returncode == 0, res.stderr
    order = [tuple(kv.split("=", 1)[1] for kv in line.split()[1:])
             for line in res.stderr.splitlines() if line.startswith("trace ")]
    algos = ["native", "binomial:segsize=0", "chain:segsize=auto,fanout=4"]
    expected = [(str(s), str(r), a) for s in (8, 1024) for r in range(3) for a in algos]
    assert order == expected


def test_auto_timing_is_window_only_with_a_core_per_process(monkeypatch):
    from colltune.drivers import bench
    from colltune.mpi import placement

    monkeypatch.setattr(placement, "cores", lambda: 4)
    assert bench.resolve_timing("auto", 4) == "window"
    assert bench.resolve_timing("auto", 5) == "osu"  # window busy-waits: needs its own core
    assert bench.resolve_timing("osu", 2) == "osu" and bench.resolve_timing("window", 8) == "window"


# ---- buffer alignment (--align) and the library's own call (native) -------------------

def _buffers(ompi_build, *extra):
    """colltune-bench's buffer addresses (--trace) and its records."""
    from colltune.mpi import launch

    prog = [str(ompi_build.program("colltune-bench")), "--coll", "allgather", "--algo",
            "native", "--sizes", "8,65536", "--reps", "1", "--iterations", "3", "--trace",
            *extra]
    res = launch.run(launch.prepare(ompi_build.mpi, 2, prog), timeout=300)
    line = [ln for ln in res.stderr.splitlines() if ln.startswith("buffers ")]
    fields = dict(kv.split("=", 1) for kv in line[0].split()[1:]) if line else {}
    recs = [json.loads(ln) for ln in res.stdout.splitlines() if ln.startswith("{")]
    return res, fields, [r for r in recs if r.get("kind") != "placement"]


def test_driver_aligns_buffers_as_asked(ompi_build):
    import os

    page = os.sysconf("SC_PAGESIZE")
    for extra, want in (((), page), (("--align", "64"), 64), (("--align", "65536"), 65536)):
        res, buf, recs = _buffers(ompi_build, *extra)
        assert res.returncode == 0, res.stderr
        assert int(buf["align"]) == want
        for name in ("sbuf", "rbuf"):
            assert int(buf[name], 16) % want == 0, (extra, buf)
        assert [r["align"] for r in recs] == [want, want]
    res, buf, recs = _buffers(ompi_build, "--align", "0")  # plain malloc, recorded as 1
    assert res.returncode == 0 and buf["align"] == "1" and {r["align"] for r in recs} == {1}
    res, _, _ = _buffers(ompi_build, "--align", "48")
    assert res.returncode == 2 and "--align '48': must be 0 or a power of two" in res.stderr


def test_align_option_reaches_the_driver_and_the_records(ompi_build):
    import os

    recs = _bench(ompi_build, "bcast", ["native", "binomial"], 2, [64], iterations=5, reps=1,
                  align=256)
    assert {r["align"] for r in recs} == {256} and all("--align 256" in r["command"]
                                                         for r in recs)
    recs = _bench(ompi_build, "bcast", ["native"], 2, [64], iterations=5, reps=1)
    assert recs[0]["align"] == os.sysconf("SC_PAGESIZE") and "--align" not in recs[0]["command"]


def test_native_is_the_library_call_not_a_dispatch(ompi_build):
    """native calls MPI_Allgather directly: it never carries the dispatch record of the
    algorithm timed before it (neighbor_exchange falls back to ring at 3 processes)."""
    recs = _bench(ompi_build, "allgather", ["neighbor_exchange", "native"], 3, [8, 64],
                  iterations=3, reps=2, validate=True)
    ne = [r for r in recs if r["spec"] == "neighbor_exchange"]
    nat = [r for r in recs if r["spec"] == "native"]
    assert all(r["fallback"] and "ring" in r["fallback"] for r in ne)
    assert all(r["fallback"] is None and r["valid"] is True for r in nat)


def test_osu_rank_extremes_bracket_the_average(ompi_build):
    """rank_min_us/rank_max_us are OSU's Min/Max Latency: per-process means over every
    timed call, so their range holds the mean over processes (mean_us); rep_min_us and
    rep_max_us are over repetitions."""
    recs = _bench(ompi_build, "reduce", ["native", "binomial"], 3, [8, 4096], iterations=50,
                  reps=3, raw=True, timing="osu")
    for r in recs:
        assert r["rank_min_us"] - 0.002 <= r["mean_us"] <= r["rank_max_us"] + 0.002, r
        assert r["rep_min_us"] == min(r["samples_us"]) and r["rep_max_us"] == max(r["samples_us"])
        assert "min_us" not in r and "max_us" not in r


def test_cli_align_reaches_the_records_and_is_checked():
    res = colltune("bench", "--coll", "reduce", "--algo", "native", "--np", "2", "--sizes", "8",
                   "--iterations", "5", "--reps", "1", "--align", "128", "--format", "json")
    assert res.returncode == 0, res.stderr
    rec = json.loads(res.stdout)[0]
    assert rec["align"] == 128 and "--align 128" in rec["command"]
    res = colltune("bench", "--coll", "reduce", "--np", "2", "--sizes", "8", "--align", "48")
    assert res.returncode == 2 and "--align 48: must be 0 or a power of two" in res.stderr


def test_osu_table_uses_osu_names_and_meanings():
    """Min/Max Latency(us) are the rank extremes (rank_*), never the repetitions' (rep_*);
    Avg Latency is mean_us; Iterations counts every timed call of a process."""
    from rich.console import Console

    from colltune.cli.bench import osu_table

    rec = {"collective": "bcast", "spec": "native", "np": 2, "size": 65536, "iterations": 100,
           "valid_reps": 3, "mean_us": 10.5, "median_us": 10.4, "rep_min_us": 9.1,
           "rep_max_us": 12.9, "rank_min_us": 10.2, "rank_max_us": 10.8, "fallback": None}
    con = Console(width=200, record=True)
    con.print(osu_table([rec], "t"))
    text = con.export_text()
    header = next(line for line in text.splitlines() if "Avg Latency(us)" in line)
    row = next(line for line in text.splitlines() if "65536" in line)
    cols = [c.strip() for c in header.strip("┃│ ").split("┃")]
    vals = [c.strip() for c in row.strip("┃│ ").split("│")]
    got = dict(zip(cols, vals))
    assert got["Avg Latency(us)"] == "10.50"
    assert (got["Min Latency(us)"], got["Max Latency(us)"]) == ("10.20", "10.80")
    assert got["Iterations"] == "300" and got["reps: median (min–max) µs"] == "10.40 (9.10–12.90)"


def test_cli_osu_timing_prints_the_osu_table():
    res = colltune("bench", "--coll", "allgather", "--algo", "native", "--np", "2", "--sizes",
                   "8,1K", "--iterations", "10", "--reps", "2", "--timing", "osu")
    assert res.returncode == 0, res.stderr
    for col in ("Avg Latency(us)", "Min Latency(us)", "Max Latency(us)", "Iterations"):
        assert col in res.stdout
    import os

    assert "OSU table" in res.stdout
    assert f"{os.sysconf('SC_PAGESIZE')}-byte aligned buffers" in res.stdout


# ---- the OSU-style reference loop and the agreement script ---------------------------

def test_osu_style_loop_follows_osu_defaults(ompi_build):
    """colltune-osu-style: OSU 7.x's iteration counts (1000/100 skip up to 8 KiB, 100/10
    above), page-aligned buffers, Avg between Min and Max over processes."""
    import os

    from colltune.mpi import launch

    for coll in ("bcast", "reduce", "allgather", "allreduce"):
        prog = [str(ompi_build.program("colltune-osu-style")), "--coll", coll, "--sizes",
                "8,8192,8193"]
        res = launch.run(launch.prepare(ompi_build.mpi, 3, prog), timeout=300)
        assert res.returncode == 0, res.stderr
        recs = [json.loads(ln) for ln in res.stdout.splitlines() if ln.startswith("{")]
        assert [(r["size"], r["iterations"], r["skip"]) for r in recs] == [
            (8, 1000, 100), (8192, 1000, 100), (8193, 100, 10)]
        for r in recs:
            assert r["collective"] == coll and r["np"] == 3
            assert r["align"] == os.sysconf("SC_PAGESIZE")
            assert 0 < r["min_us"] and r["min_us"] - 0.002 <= r["avg_us"] <= r["max_us"] + 0.002
    bad = launch.run(launch.prepare(ompi_build.mpi, 2, [str(ompi_build.program(
        "colltune-osu-style")), "--coll", "gather"]), timeout=120)
    assert bad.returncode == 2 and "valid: bcast, reduce, allgather, allreduce" in bad.stderr


def test_osu_agreement_script_pairs_the_two_programs(tmp_path):
    import subprocess
    import sys

    from conftest import ROOT

    out = tmp_path / "agree.json"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "osu_agreement.py"),
                          "--launches", "2", "--sizes", "8,16K", "--coll", "allreduce",
                          "-o", str(out)], capture_output=True, text=True, timeout=600)
    assert res.returncode in (0, 1), res.stderr  # 1: some point outside the goal (noise)
    assert "OSU-style" in res.stdout and "within 5%" in res.stdout
    data = json.loads(out.read_text())
    rows = data["rows"]
    assert [(r["collective"], r["size"]) for r in rows] == [("allreduce", 8),
                                                           ("allreduce", 16384)]
    recs = data["records"]
    assert {r["program"] for r in recs} == {"colltune", "osu-style"} and len(recs) == 8
    for rnd in (0, 1):  # the ratio is of the same round's two launches
        c = next(r for r in recs if r["round"] == rnd and r["program"] == "colltune"
                 and r["size"] == 8)
        o = next(r for r in recs if r["round"] == rnd and r["program"] == "osu-style"
                 and r["size"] == 8)
        assert c["spec"] == "native" and c["timing"] == "osu" and c["valid_reps"] == 1
        assert c["iterations"] == o["iterations"] == 1000
    ratios = sorted(r["mean_us"] / o["avg_us"] for r, o in zip(
        [r for r in recs if r["program"] == "colltune" and r["size"] == 8],
        [r for r in recs if r["program"] == "osu-style" and r["size"] == 8]))
    assert rows[0]["ratio"] == pytest.approx(sum(ratios) / 2)


def _ranks(mark: str) -> set[int]:
    """Live colltune-bench processes whose environment carries the mark."""
    import os

    found = set()
    needle = f"COLLTUNE_TEST_MARK={mark}".encode()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/comm") as f:
                if f.read().strip() != "colltune-bench":
                    continue
            with open(f"/proc/{d}/environ", "rb") as f:
                if needle in f.read():
                    found.add(int(d))
        except OSError:
            continue
    return found


@pytest.mark.mpich
def test_ctrl_c_during_alternating_launches_keeps_the_finished_ones(tmp_path, mpich_build):
    """bench with MPICH's algorithms (mpich:, launches of their own; Open MPI's share
    native's launch) runs alternating launches; Ctrl-C
    after some of them finished keeps their points: printed, stored in --db (the run
    marked interrupted), exit 130."""
    import os
    import signal
    import sqlite3
    import subprocess
    import sys
    import time
    import uuid
    from pathlib import Path

    mark = uuid.uuid4().hex
    dbp = tmp_path / "r.db"
    # 2 launches a repetition (ours with native; mpich:binomial), 50 repetitions: minutes
    p = subprocess.Popen([str(Path(sys.executable).parent / "colltune"), "bench", "--mpi",
                          "mpich", "--coll", "bcast", "--algo",
                          "native,linear,mpich:binomial", "--np", "2",
                          "--sizes", "8,64", "--iterations", "20", "--reps", "50",
                          "--format", "csv", "--db", str(dbp)],
                         env=dict(os.environ, COLLTUNE_TEST_MARK=mark),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: set[int] = set()
    try:
        t0 = time.monotonic()
        while len(seen) < 7 and time.monotonic() - t0 < 180:  # the 4th launch's ranks
            assert p.poll() is None, p.communicate()
            seen |= _ranks(mark)
            time.sleep(0.02)
        assert len(seen) >= 7, seen
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, err
    kept = int(err.split("interrupted: keeping the ")[1].split(" points")[0])
    assert kept == 6, err  # 3 candidates x 2 sizes, from the 3 launches that finished
    assert "stored as run 1 in" in err
    rows = list(csv.DictReader(out.splitlines()))
    assert {(r["spec"], int(r["size"])) for r in rows} == {
        (s, n) for s in ("native", "linear", "mpich:binomial") for n in (8, 64)}
    # the points of the launches that finished have their figures; a point whose launch
    # was cut short may be printed without one
    assert sum(1 for r in rows if r["median_us"] and float(r["median_us"]) > 0) >= kept
    c = sqlite3.connect(dbp)
    try:
        assert c.execute("SELECT status, notes FROM runs").fetchall() == [
            ("interrupted", '["interrupted"]')]
        stored = c.execute("SELECT spec, size, median_us FROM measurements").fetchall()
    finally:
        c.close()
    assert sorted((s, n) for s, n, _ in stored) == sorted(
        (r["spec"], int(r["size"])) for r in rows)


def test_bench_alltoall_sizes_per_destination_and_validation(ompi_build):
    """Alltoall(v) (issue 30): a size is bytes per process per destination (as
    osu_alltoall); --validate compares every algorithm, the library's own included,
    with MPI_Alltoall(v); the corrupting test Alltoall is caught."""
    from colltune.drivers import bench as bench_mod

    algos = ["native", "linear", "pairwise", "bruck", "linear_sync:max_requests=1",
             "two_proc"]
    recs = _bench(ompi_build, "alltoall", algos, 3, [0, 8, 8000], iterations=3, warmup=1,
                  reps=1, dtype="int", validate=True)
    assert len(recs) == len(algos) * 3
    assert all(r["valid"] is True for r in recs), [(r["spec"], r["size"]) for r in recs]
    assert {r["spec"] for r in recs if r["size"] == 8} >= {"bruck", "two_proc"}
    two = [r for r in recs if r["algorithm"] == "two_proc" and r["size"] == 8000]
    assert two and "pairwise" in (two[0].get("fallback") or ""), two
    recs = _bench(ompi_build, "alltoallv", ["native", "linear", "pairwise"], 3, [8, 8000],
                  iterations=3, warmup=1, reps=1, validate=True)
    assert all(r["valid"] is True for r in recs), [(r["spec"], r["size"]) for r in recs]
    recs = _bench(ompi_build, "alltoall", ["pairwise", "_broken"], 3, [64], iterations=2,
                  reps=1, validate=True)
    assert bench_mod.validation_failures(recs) == [recs[1]]
    assert bench_mod.buffer_bytes("alltoall", 1000, 4, validate=True) == 3 * 4000


def test_bench_scatter_and_barrier(ompi_build):
    """Scatter: size per process, validated against MPI_Scatter at a middle root;
    Barrier: no data, size 0 only."""
    recs = _bench(ompi_build, "scatter", ["native", "linear", "linear_nb", "binomial"], 3,
                  [0, 8, 8000], iterations=3, warmup=1, reps=1, root=1, validate=True)
    assert all(r["valid"] is True for r in recs), [(r["spec"], r["size"]) for r in recs]
    recs = _bench(ompi_build, "barrier", ["native", "bruck", "tree", "two_proc"], 3, [0],
                  iterations=5, warmup=1, reps=1, validate=True)
    assert all(r["valid"] is True and r["median_us"] > 0 for r in recs), recs
    res = colltune("bench", "--coll", "barrier", "--algo", "native,double_ring", "--np", "2",
                   "--format", "json", "--reps", "1", "--iterations", "5")
    assert res.returncode == 0, res.stderr
    assert {r["size"] for r in json.loads(res.stdout)} == {0}


def test_barrier_spec_has_one_size():
    """A sweep or study that names sizes gets the barrier's one point, size 0."""
    from colltune.drivers import bench as bench_mod

    assert bench_mod.BenchSpec("barrier", ["bruck"], 4, [8, 1024]).sizes == [0]
    assert bench_mod.BenchSpec("scatter", ["binomial"], 4, [8, 1024]).sizes == [8, 1024]


def test_bench_reduce_scatter(ompi_build):
    """Reduce_scatter(_block): size = the block each process receives (the send vector is
    processes x size), validated against the MPI library's own call (sum and the
    non-commutative-safe algorithms alike)."""
    for coll, algos in (("reduce_scatter_block", ["native", "basic_linear", "butterfly",
                                                  "recursive_halving", "ring"]),
                        ("reduce_scatter", ["native", "nonoverlapping", "recursive_doubling",
                                            "pairwise"])):
        recs = _bench(ompi_build, coll, algos, 3, [0, 8, 8000], iterations=3, warmup=1,
                      reps=1, validate=True)
        assert all(r["valid"] is True for r in recs), [(r["spec"], r["size"]) for r in recs]
    from colltune.drivers import bench as bench_mod

    assert bench_mod.buffer_bytes("reduce_scatter", 1000, 4) == 4 * 1000 + 1000
    assert bench_mod.buffer_bytes("reduce_scatter_block", 1000, 4, validate=True) == 6000


def _ours_vs_library():
    import importlib.util

    from conftest import ROOT

    spec = importlib.util.spec_from_file_location(
        "ours_vs_library", ROOT / "benchmarks" / "ours_vs_library.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_ours_vs_library_pairs_every_twin_with_equal_parameters(ompi_build):
    """Every registry algorithm with an Open MPI twin has a row (or a reason not to),
    each row names a real Open MPI algorithm, and the parameters both sides have are
    forced to ours."""
    from colltune.analysis import segsize
    from colltune.drivers import registry as reg
    from colltune.mpi import libalgos

    ovl = _ours_vs_library()
    assert ovl.unpaired_twins(ompi_build) == []
    ours = {(a.collective, a.name): a for a in reg.algorithms(ompi_build)}
    for coll, pairs in ovl.PAIRS.items():
        for o, t in pairs:
            a = ours[(coll, o.split(":")[0])]
            lib = libalgos.find("ompi", coll, t)  # raises for an unknown twin
            # the twin is the registry's own, except for the gather + bcast pair
            assert a.ompi_name in (lib.name, lib.lib_name, *lib.aliases), (coll, o, t)
            for size, np_ in ((8, 2), (1 << 20, 2), (65536, 8), (1 << 20, 8)):
                spec = ovl.ompi_spec(ompi_build, coll, o, t, size, np_)
                for p in a.params:
                    if p["name"] in ovl.SHARED_PARAMS and \
                            p["name"] in {q.key for q in lib.params}:
                        want = dict(kv.split("=") for kv in o.partition(":")[2].split(",")
                                    if kv)
                        value = want.get(p["name"], p["default"])
                        if value == "auto":  # segsize=auto: the rule's segment here
                            value = segsize.effective(a, size, np_, want)
                            assert value == segsize.resolve(p["auto_rule"], coll, size, np_,
                                                            int(want.get("fanout", 4)))
                        assert f"{p['name']}={value}" in spec, (spec, size, np_)
    # segsize=auto: one bench run per group of sizes whose Open MPI specs agree
    groups = ovl.size_groups(ompi_build, "bcast", [8, 1024, 65536, 1 << 20], 8)
    assert len(groups) > 1 and sorted(s for g, _ in groups for s in g) == [8, 1024, 65536,
                                                                           1 << 20]
    assert len(ovl.size_groups(ompi_build, "bcast", [8, 1024, 65536, 1 << 20], 2)) == 1
    # a library-side switch of schedule is recognised, and only below its threshold
    assert ovl.library_switch("allreduce", "rabenseifner", 3, 4) == "basic_linear"
    assert ovl.library_switch("allreduce", "rabenseifner", 4, 4) is None
    assert ovl.library_switch("reduce", "rabenseifner", 1, 2) == "linear"
    assert ovl.library_switch("allreduce", "ring", 4, 4) is None
    assert ovl.library_switch("allreduce", "ring", 3, 4) == "recursive_doubling"
    assert ovl.library_switch("allreduce", "segmented_ring", 1, 2, 65536) == "recursive_doubling"
    # below size * segcount Open MPI's segmented ring is the plain ring, as ours in one phase
    assert ovl.library_switch("allreduce", "segmented_ring", 65536, 2, 65536) is None
    assert ovl.library_switch("bcast", "scatter_allgather", 1, 2) == "linear"
    assert ovl.library_switch("bcast", "scatter_ring_allgather", 8, 2) is None
    # split_bintree: a chain of fan-out 1 when a half is shorter than one segment
    split = "chain:fanout=1 (pipeline)"
    assert ovl.library_switch("bcast", "split_binary", 8, 2, 8192) == split
    assert ovl.library_switch("bcast", "split_binary", 1024, 2, 8192) == split
    assert ovl.library_switch("bcast", "split_binary", 16384, 2, 8192) is None
    assert ovl.library_switch("bcast", "split_binary", 16383, 2, 8192) == split
    assert ovl.library_switch("bcast", "split_binary", 1, 2, 0) == split  # a half is empty
    assert ovl.library_switch("bcast", "split_binary", 2, 2, 0) is None
    # with the datatype size: 4096 ints are halves of 8 KiB each
    assert ovl.library_switch("bcast", "split_binary", 4096, 2, 8192, 4) is None
    assert ovl.library_switch("bcast", "split_binary", 4095, 2, 8192, 4) == split
    assert ovl.library_switch("allgather", "recursive_doubling", 8, 3) == "bruck"
    assert ovl.library_switch("allgather", "recursive_doubling", 8, 4) is None
    assert ovl.library_switch("allgatherv", "neighbor_exchange", 8, 5) == "ring"
    assert ovl.library_switch("allgather", "neighbor_exchange", 8, 4) is None
    # our scatter-based Bcasts cut in units of up to 8 bytes: 8 bytes on 2 processes
    # are one block, Open MPI's are two of 4 (a different set of messages)
    assert ovl.ours_switch("bcast", "scatter_allgather", 8, 2) is not None
    assert ovl.ours_switch("bcast", "scatter_ring_allgather", 8, 2) is not None
    assert ovl.ours_switch("bcast", "scatter_allgather", 1024, 2) is None
    assert ovl.ours_switch("bcast", "scatter_allgather", 24, 3) is None
    assert ovl.ours_switch("bcast", "binomial", 8, 2) is None


def test_ours_vs_library_control_row():
    """The A/A row: the ratio of the medians over the two series of launches."""
    ovl = _ours_vs_library()
    ctl = {"A": {8: [1.0, 3.0, 2.0], 0: [1.0]}, "B": {8: [4.0, 4.0]}}
    assert ovl.control_row(ctl, [8, 0]) == ["0.50 (2.00/4.00)", "skipped"]


def test_ours_vs_library_paired_cell():
    """A paired cell: the median of the per-launch ratios, their range, and each side's
    median µs over the launches."""
    ovl = _ours_vs_library()
    assert ovl.paired_cell([1.2, 0.9, 1.0], ([2.0, 3.0, 4.0], [1.0, 5.0, 3.0])) == \
        "1.00 [0.90-1.20] (3.00/3.00)"
    assert ovl.paired_cell([0.5], ([1.0], [2.0])) == "0.50 (1.00/2.00)"


def test_ours_vs_library_paired_runs_both_sides_in_one_launch(ompi_build, monkeypatch):
    """--paired: every launch forces Open MPI's twin through the environment and runs
    ours beside `native` (the library's collective, which then runs the twin), the
    order of the two alternating from launch to launch; each launch gives one ratio
    per size."""
    ovl = _ours_vs_library()
    calls = []

    def fake_run(build, spec, extra_env=None, **kw):
        calls.append((list(spec.algos), dict(extra_env or {}), spec.reps))
        us = {"linear": 2.0, "native": 1.0}
        return [{"spec": a, "size": s, "median_us": us.get(a, 1.5)} for s in spec.sizes
                for a in spec.algos], []

    monkeypatch.setattr(ovl.bench_mod, "run", fake_run)
    groups = ovl.size_groups(ompi_build, "gather", [8, 1024], 2)
    res = ovl.run_paired(ompi_build, "gather", groups, 2, reps=3, inner_reps=2,
                         iterations=None)
    assert len(calls) == 3 * len(ovl.PAIRS["gather"])
    assert [c[0] for c in calls[:2]] == [["linear", "native"], ["binomial", "native"]]
    assert calls[2][0] == ["native", "linear"]  # the next launch swaps the order
    assert all(c[2] == 2 for c in calls)
    assert any(k.endswith("gather_algorithm") for k in calls[0][1])
    assert res["ratios"][("linear", 8)] == [2.0, 2.0, 2.0]
    assert res["spec_at"][("binomial", 1024)] == "ompi:binomial"


def test_ours_vs_library_unequal_names_the_switch():
    """A cell is unequal when Open MPI's algorithm runs another schedule (its spec and
    the switch named) or ours does (our name and why); else None."""
    ovl = _ours_vs_library()
    assert ovl.unequal("bcast", "split_binary", "ompi:split_binary:segsize=8192", 8, 2) \
        == "ompi:split_binary:segsize=8192 runs chain:fanout=1 (pipeline) at 8"
    assert ovl.unequal("bcast", "scatter_allgather", "ompi:scatter_allgather", 8, 2) \
        .startswith("scatter_allgather at 8: ours cuts 8 B")
    assert ovl.unequal("bcast", "binomial", "ompi:binomial:segsize=0", 8, 2) is None


_OVERSLEEP_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <time.h>
/* every nanosleep lasts 2 ms longer than asked, as on a virtual CPU slow to wake */
int nanosleep(const struct timespec *req, struct timespec *rem) {
    static int (*real)(const struct timespec *, struct timespec *);
    if (!real)
        real = (int (*)(const struct timespec *, struct timespec *))dlsym(RTLD_NEXT,
                                                                          "nanosleep");
    struct timespec t = *req;
    t.tv_nsec += 2000000L;
    if (t.tv_nsec >= 1000000000L) { t.tv_sec++; t.tv_nsec -= 1000000000L; }
    return real(&t, rem);
}
"""


def test_window_timing_survives_processes_that_oversleep(ompi_build, tmp_path):
    """A process waiting for a window more than a millisecond away sleeps, then spins.
    Where waking takes longer than its spin margin (a 16-core virtual machine did, by
    more than 0.5 ms), it arrived late, the invalid samples doubled the window up to its
    limit and the run stalled (docs/benchmarking.md "Sleep"). The margin now grows with
    the oversleep seen: with every sleep 2 ms too long (a preloaded nanosleep), most
    samples stay valid (with the fixed 0.5 ms margin: 43 of 60 invalid, the window 73
    times the call; with the growing one 3 or 4 of 120). The window's length is not
    asserted: calls that run long on a busy machine grow it too."""
    import subprocess
    from colltune.mpi import launch

    shim = tmp_path / "oversleep.so"
    (tmp_path / "oversleep.c").write_text(_OVERSLEEP_C)
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(shim),
                    str(tmp_path / "oversleep.c"), "-ldl"], check=True)
    prog = [str(ompi_build.program("colltune-bench")), "--coll", "allreduce", "--algo",
            "native", "--sizes", "8388608", "--reps", "2", "--iterations", "60",
            "--timing", "window"]
    res = launch.run(launch.prepare(ompi_build.mpi, 2, prog, {"LD_PRELOAD": str(shim)}),
                     timeout=300)
    assert res.returncode == 0, res.stderr
    r = [json.loads(line) for line in res.stdout.splitlines()
         if line.startswith("{") and '"placement"' not in line][0]
    assert r["timing"] == "window" and r["valid_reps"] + r["invalid"] == 120
    assert r["window_us"] > 1000, r  # long enough for the processes to sleep
    assert r["invalid"] < 0.3 * 120, r


def test_offline_kit_runs_from_its_folder(tmp_path, ompi_build):
    """benchmarks/offline_kit.py packs Open MPI's wheel files and the native build at one
    absolute prefix; its run.sh, from a fresh copy of that prefix (as on a machine that
    cannot install anything), measures and bundles the results even when the budget
    runs out before the last step."""
    import os
    import subprocess
    import sys
    import tarfile

    repo = Path(__file__).resolve().parent.parent
    prefix, dest, out = tmp_path / "prefix", tmp_path / "kit", tmp_path / "out"
    res = subprocess.run([sys.executable, str(repo / "benchmarks" / "offline_kit.py"),
                          "--dest", str(dest), "--prefix", str(prefix)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert (dest / "ctkit" / "ompi" / "bin" / "mpirun").exists() and (dest / "run.sh").exists()
    import shutil
    shutil.rmtree(prefix)  # run.sh restores it from the kit
    env = dict(os.environ, NP="2", PY=sys.executable, PREFIX=str(prefix), OUT=str(out),
               COLLS="bcast", OVL="0", BUDGET="120")
    res = subprocess.run(["bash", str(dest / "run.sh")], cwd=repo, env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    with tarfile.open(out / "results.tgz") as tf:
        names = {Path(n).name for n in tf.getnames()}
        recs = json.load(tf.extractfile("./bench2-bcast.json"))
    assert {"machine.txt", "platform.toml", "bench2-bcast.json", "results.db"} <= names
    assert {r["algorithm"] for r in recs} >= {"native", "binomial"}
    assert all(str(prefix) in r["command"] for r in recs)  # the kit's Open MPI ran them


def test_offline_kit_with_simgrid_simulates_from_its_folder(tmp_path, ompi_build):
    """offline_kit.py --simgrid also packs colltune's SimGrid (its scripts pointed at the
    kit, its library without debugging information) and the SMPI build: run.sh's
    simulation steps run from the kit's cache."""
    import os
    import shutil
    import subprocess
    import sys
    import tarfile

    from colltune.mpi import simgrid

    if simgrid.installed_version() is None:
        pytest.skip("SimGrid is not installed in the colltune cache")
    repo = Path(__file__).resolve().parent.parent
    prefix, dest, out = tmp_path / "prefix", tmp_path / "kit", tmp_path / "out"
    res = subprocess.run([sys.executable, str(repo / "benchmarks" / "offline_kit.py"),
                          "--dest", str(dest), "--prefix", str(prefix), "--simgrid"],
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    sg = dest / "ctkit" / "cache" / "mpi" / "smpi"
    smpirun = (sg / "bin" / "smpirun").read_text()
    assert str(prefix / "cache" / "mpi" / "smpi") in smpirun
    assert str(simgrid.prefix()) not in smpirun
    lib = next(p for p in (sg / "lib").glob("libsimgrid.so.*") if not p.is_symlink())
    orig = next(p for p in (simgrid.prefix() / "lib").glob("libsimgrid.so.*")
                if not p.is_symlink())
    assert lib.stat().st_size <= orig.stat().st_size
    assert (sg / simgrid.STAMP).read_text() == simgrid.stamp_text()
    shutil.rmtree(prefix)  # run.sh restores it from the kit
    env = dict(os.environ, NP="2", PY=sys.executable, PREFIX=str(prefix), OUT=str(out),
               COLLS="", OVL="0", CALIB="0", SIMSPEED="120", SPEEDNP="4",
               SPEEDJOB="allreduce ring", BUDGET="300")
    res = subprocess.run(["bash", str(dest / "run.sh")], cwd=repo, env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    with tarfile.open(out / "results.tgz") as tf:
        rows = json.load(tf.extractfile("./simspeed-0.json"))
    assert [(r["algorithm"], r["np"], r["error"]) for r in rows] == [("ring", 4, None)]
    assert len(rows[0]["simulated_us"]) == 4 and all(v > 0 for v in
                                                     rows[0]["simulated_us"].values())
