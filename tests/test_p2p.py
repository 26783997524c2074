"""Point-to-point programs: colltune-pingpong (ping-pong, ring) and colltune-probe."""

import csv
import json
import math
import os

import pytest
from click.testing import CliRunner

from colltune.drivers import p2p, run
from colltune.cli import p2p as p2p_cmd

PINGPONG_FIELDS = {"kind", "np", "size", "min_us", "median_us", "mean_us", "max_us",
                   "stddev_us", "bandwidth_MBps", "iterations", "reps", "persistent", "mpi"}
PROBE_FIELDS = {"kind", "np", "size", "iterations", "min_us", "median_us", "p90_us", "max_us",
                "load_index", "seed"}


def _check_pingpong(r, kind, np):
    assert PINGPONG_FIELDS <= set(r), PINGPONG_FIELDS - set(r)
    assert r["kind"] == kind and r["np"] == np
    assert 0 < r["min_us"] <= r["median_us"] <= r["max_us"]
    assert r["min_us"] <= r["mean_us"] <= r["max_us"] and r["stddev_us"] >= 0
    assert r["bandwidth_MBps"] > 0
    # bandwidth is size / median one-way time, in 10^6 B/s
    assert r["bandwidth_MBps"] == pytest.approx(r["size"] / r["median_us"], rel=0.01)


def test_pingpong_latency_grows_with_size(ompi_build):
    spec = p2p.PingpongSpec(np=2, sizes=(8, 1 << 20), iterations=40, warmup=4, reps=3)
    recs, _ = p2p.run_pingpong(ompi_build, spec, timeout=300)
    assert [r["size"] for r in recs] == [8, 1 << 20]
    for r in recs:
        _check_pingpong(r, "pingpong", 2)
        # the default is osu_latency's: MPI_Send/MPI_Recv on page-aligned buffers
        assert r["persistent"] is False and r["reps"] == 3 and r["iterations"] == 40
        assert r["participants"] == 2 and r["align"] == os.sysconf("SC_PAGESIZE")
        assert "Open MPI" in r["mpi"]
    small, big = recs
    assert big["min_us"] > small["min_us"]
    assert big["median_us"] > small["median_us"]


def test_pingpong_nonpersistent_and_idle_ranks(ompi_build):
    """MPI_Send/MPI_Recv variant; at np 3 rank 2 idles (only 0 and 1 take part)."""
    spec = p2p.PingpongSpec(np=3, sizes=(0, 4096), iterations=30, reps=2, persistent=False)
    recs, _ = p2p.run_pingpong(ompi_build, spec, timeout=300)
    assert [r["size"] for r in recs] == [0, 4096]
    assert all(r["persistent"] is False and r["participants"] == 2 for r in recs)
    assert recs[0]["bandwidth_MBps"] == 0  # nothing moved
    _check_pingpong(recs[1], "pingpong", 3)


def test_ring_np3(ompi_build):
    spec = p2p.PingpongSpec(np=3, sizes=(8, 65536), mode="ring", iterations=30, reps=2,
                            persistent=True, align=1)
    recs, _ = p2p.run_pingpong(ompi_build, spec, timeout=300)
    assert len(recs) == 2
    for r in recs:
        _check_pingpong(r, "ring", 3)
        assert r["participants"] == 3 and r["persistent"] is True and r["align"] == 1


@pytest.mark.parametrize("persistent", [False, True])
def test_exchange_np3_two_messages_at_once(ompi_build, persistent):
    """--mode exchange: ranks 0 and 1 send to each other at once (a third rank idles);
    the program checks what arrived (it stops on a wrong byte); one exchange of 1 MiB
    moves two messages, so it takes longer than one of 8 bytes."""
    spec = p2p.PingpongSpec(np=3, sizes=(8, 1 << 20), mode="exchange", iterations=20,
                            warmup=2, reps=3, persistent=persistent)
    recs, _ = p2p.run_pingpong(ompi_build, spec, timeout=300)
    assert [r["size"] for r in recs] == [8, 1 << 20]
    for r in recs:
        _check_pingpong(r, "exchange", 3)
        assert r["participants"] == 2 and r["persistent"] is persistent
    assert recs[1]["min_us"] > recs[0]["min_us"]
    table = p2p.pingpong_table(recs, "t")
    cells = list(table.columns[-1].cells)
    assert cells == (["persistent"] * 2 if persistent else ["MPI_Sendrecv"] * 2)


def test_exchange_records_for_the_calibration(ompi_build):
    recs = p2p.measure_exchange(ompi_build, sizes=(65536,), reps=2)
    assert len(recs) == 1 and recs[0]["kind"] == "exchange" and recs[0]["size"] == 65536


def test_pingpong_needs_two_processes(ompi_build):
    with pytest.raises(p2p.P2PError, match="at least 2 processes"):
        p2p.run_pingpong(ompi_build, p2p.PingpongSpec(np=1, sizes=(8,)))
    with pytest.raises(p2p.P2PError, match="at least 2 processes"):
        p2p.run_probe(ompi_build, p2p.ProbeSpec(np=1))


def _check_probe(r, np, iterations):
    assert PROBE_FIELDS <= set(r), PROBE_FIELDS - set(r)
    assert r["kind"] == "probe" and r["np"] == np and r["iterations"] == iterations
    assert r["size"] == 4096
    assert 0 < r["min_us"] <= r["median_us"] <= r["p90_us"] <= r["max_us"]
    # every process but one (odd count) exchanges in every iteration
    assert r["samples"] == (np - np % 2) * iterations
    assert isinstance(r["load_index"], float) and math.isfinite(r["load_index"])


def test_probe_odd_process_count(ompi_build):
    rec, _ = p2p.run_probe(ompi_build, p2p.ProbeSpec(np=3, iterations=100, seed=12345),
                           timeout=300)
    _check_probe(rec, 3, 100)
    assert rec["seed"] == 12345
    # relative to the run's own minimum the index is at least 1 (median >= min)
    assert rec["load_basis"] == "min" and rec["baseline_us"] is None
    assert rec["load_index"] >= 1.0
    assert rec["load_index"] == pytest.approx(rec["median_us"] / rec["min_us"], rel=1e-2)


def test_probe_np4_with_baseline(ompi_build):
    rec, _ = p2p.run_probe(ompi_build, p2p.ProbeSpec(np=4, iterations=100, baseline_us=2.5),
                           timeout=300)
    _check_probe(rec, 4, 100)
    assert rec["load_basis"] == "baseline" and rec["baseline_us"] == 2.5
    assert rec["load_index"] > 0
    assert rec["load_index"] == pytest.approx(rec["median_us"] / 2.5, rel=1e-3)
    assert isinstance(rec["seed"], int) and rec["seed"] >= 0  # chosen and reported


# ---------------------------------------------------------------------------- CLI

def test_cli_pingpong_json_and_table(ompi_build):
    runner = CliRunner()
    res = runner.invoke(p2p_cmd.pingpong, ["--sizes", "8,4K", "--iterations", "20", "--reps", "2",
                                       "--format", "json"])
    assert res.exit_code == 0, res.output
    recs = json.loads(res.stdout)
    assert [r["size"] for r in recs] == [8, 4096]
    assert all(r["kind"] == "pingpong" and r["np"] == 2 for r in recs)
    assert all(r["persistent"] is False for r in recs)  # osu_latency's transfers by default

    res = runner.invoke(p2p_cmd.pingpong, ["--sizes", "1K", "--iterations", "10", "--reps", "1",
                                           "--mode", "ring", "--np", "3", "--persistent",
                                           "--oversubscribe"])
    assert res.exit_code == 0, res.output
    assert "ring, 3 processes" in res.stdout and "1K" in res.stdout
    assert "persistent requests" in res.stdout  # the mode that ran, in title and table
    res = runner.invoke(p2p_cmd.pingpong, ["--sizes", "8", "--iterations", "10", "--reps", "1"])
    assert res.exit_code == 0, res.output
    assert "MPI_Send/MPI_Recv, as osu_latency" in res.stdout
    res = runner.invoke(p2p_cmd.pingpong, ["--sizes", "64K", "--iterations", "10", "--reps", "1",
                                           "--mode", "exchange"])
    assert res.exit_code == 0, res.output
    assert "send to each other at once" in res.stdout and "median exchange time" in res.stdout


def test_cli_pingpong_csv_written_atomically(ompi_build, tmp_path):
    out = tmp_path / "sub" / "pp.csv"
    out.parent.mkdir()  # an output's folder must exist
    res = CliRunner().invoke(p2p_cmd.pingpong, ["--sizes", "8..32", "--iterations", "10",
                                            "--reps", "1", "--format", "csv", "-o", str(out)])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(out.open()))
    assert [int(r["size"]) for r in rows] == [8, 16, 32]
    # the default transfers are osu_latency's
    assert all(float(r["median_us"]) > 0 and r["persistent"] == "false" for r in rows)
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temp left


def test_cli_pingpong_takes_a_list_of_process_counts(ompi_build):
    """--np as on every command: a list, one launch per count, the records of each."""
    res = CliRunner().invoke(p2p_cmd.pingpong, ["--np", "2:3", "--size", "8,1K", "--mode",
                                                "ring", "--iterations", "10", "--reps", "1",
                                                "--format", "json", "--oversubscribe"])
    assert res.exit_code == 0, res.output
    recs = json.loads(res.stdout)
    assert [(r["np"], r["size"]) for r in recs] == [(2, 8), (2, 1024), (3, 8), (3, 1024)]
    assert [r["participants"] for r in recs] == [2, 2, 3, 3]


def test_cli_pingpong_np1_is_an_error():
    res = CliRunner().invoke(p2p_cmd.pingpong, ["--np", "1"])
    assert res.exit_code == 2
    assert "at least 2 processes" in res.output


def test_cli_probe_csv_and_json(ompi_build):
    runner = CliRunner()
    res = runner.invoke(p2p_cmd.probe, ["--np", "2", "--iterations", "50", "--seed", "7",
                                    "--format", "csv"])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(res.stdout.splitlines()))
    assert len(rows) == 1 and rows[0]["kind"] == "probe" and rows[0]["seed"] == "7"
    assert float(rows[0]["load_index"]) >= 1.0

    res = runner.invoke(p2p_cmd.probe, ["--np", "2", "--iterations", "50", "--size", "1K",
                                    "--baseline-us", "10", "--format", "json"])
    assert res.exit_code == 0, res.output
    (rec,) = json.loads(res.stdout)
    assert rec["size"] == 1024 and rec["load_basis"] == "baseline"


def test_the_run_loop_parses_records_and_reports_failures(tmp_path):
    """drivers/run.py, the one loop of every native program: JSON lines in, the
    program's own `error:` lines out."""
    text = 'hello\n{"size": 8}\n{"size": 16, "x": [1]}\n{"cut sh\n'
    assert run.parse_records(text) == [{"size": 8}, {"size": 16, "x": [1]}]
    with pytest.raises(p2p.P2PError, match="prog printed a malformed record"):
        run.parse_records(text, name="prog", error=p2p.P2PError)
    script = tmp_path / "prog.sh"
    script.write_text("#!/bin/sh\necho '{\"a\": 1}'\necho 'error: no such algorithm' >&2\n"
                      "exit 3\n")
    script.chmod(0o755)
    with pytest.raises(p2p.P2PError, match="^no such algorithm$"):
        run.run_argv([str(script)], error=p2p.P2PError)
    res = run.run_argv([str(script)], check=False)
    assert (res.returncode, res.records, res.ok) == (3, [{"a": 1}], False)
    assert res.failure_message("prog") == "no such algorithm"


def test_the_dirty_send_benchmark_measures_its_five_cases(ompi_build):
    """lab/scripts/dirty_send.py: every case at every size, a positive time, the table;
    a simulation is refused (it has no caches to measure)."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "lab" / "scripts" / "dirty_send.py"
    res = subprocess.run([sys.executable, str(script), "--size", "4K,64K", "--iterations",
                          "20"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    rows = re.findall(r"│\s+(4K|64K)\s+│\s+([\d.]+)\s+│\s+([\d.]+) x([\d.]+)", res.stdout)
    assert [r[0] for r in rows] == ["4K", "64K"], res.stdout
    for _, clean, sender, ratio in rows:
        assert float(clean) > 0 and float(sender) > 0
        assert math.isclose(float(ratio), float(sender) / float(clean), rel_tol=0.02, abs_tol=0.01)
    bad = subprocess.run([sys.executable, str(script), "--iterations", "3"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "at least 10" in bad.stderr
