"""The benchmark driver and its output formats."""

import csv
import json

from conftest import colltune

FIELDS = {"collective", "algorithm", "params", "np", "size", "min_us", "mean_us", "median_us",
          "p90_us", "p99_us", "max_us", "stddev_us", "valid_reps", "mpi", "timing"}


def test_bench_json_records(tmp_path):
    res = colltune("bench", "--coll", "bcast", "--algo", "native,binomial,chain:fanout=2",
                   "--np", "2", "--sizes", "8,4K", "--iterations", "20", "--reps", "2",
                   "--format", "json")
    assert res.returncode == 0, res.stderr
    recs = json.loads(res.stdout)
    assert len(recs) == 6  # 3 algorithms x 2 sizes
    for r in recs:
        assert FIELDS <= set(r), FIELDS - set(r)
        assert r["np"] == 2 and r["valid_reps"] == 2 and r["timing"] == "osu"
        assert 0 < r["min_us"] <= r["median_us"] <= r["max_us"]
        assert "Open MPI" in r["mpi"]
    chain = [r for r in recs if r["algorithm"] == "chain"]
    assert chain and all("fanout=2" in r["params"] for r in chain)
    assert {r["spec"] for r in recs} == {"native", "binomial", "chain:fanout=2"}


def test_bench_csv_written_atomically(tmp_path):
    out = tmp_path / "sub" / "r.csv"
    res = colltune("bench", "--coll", "reduce", "--algo", "linear,binomial", "--np", "3",
                   "--sizes", "64", "--iterations", "10", "--reps", "1", "--format", "csv",
                   "-o", str(out))
    assert res.returncode == 0, res.stderr
    rows = list(csv.DictReader(out.open()))
    assert [r["algorithm"] for r in rows] == ["linear", "binomial"]
    assert all(float(r["median_us"]) > 0 for r in rows)
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temp left


def test_bench_reports_fallback():
    """A commutative-only algorithm under a non-commutative setting is reported."""
    res = colltune("bench", "--coll", "allgather", "--algo", "neighbor_exchange", "--np", "3",
                   "--sizes", "8", "--iterations", "5", "--reps", "1", "--format", "json")
    assert res.returncode == 0, res.stderr
    rec = json.loads(res.stdout)[0]
    assert rec["fallback"] and "ring" in rec["fallback"] and "odd" in rec["fallback"]


def test_bench_table_default():
    res = colltune("bench", "--coll", "bcast", "--algo", "native,linear", "--np", "2",
                   "--sizes", "8", "--iterations", "10", "--reps", "1")
    assert res.returncode == 0, res.stderr
    assert "bcast, 2 processes" in res.stdout and "linear" in res.stdout
