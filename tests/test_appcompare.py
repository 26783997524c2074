"""An application's time with and without rules (issue 54, `colltune run --compare`):
runs in a balanced order, the project's evidence rule, every run stored with its
provenance."""

from __future__ import annotations

import json
import math
import sqlite3

import pytest

from colltune.analysis import evidence
from colltune.mpi import launch
from colltune.results import db as db_mod
from colltune.results import reader
from colltune.tuning import appcompare

from conftest import colltune

NATIVE = "# colltune-rules 1\n# target: colltune\nbcast 2 - 0 - native -\n"
# 1 MiB Bcast in 512-byte pieces, one after another: hundreds of times slower
SLOW = "# colltune-rules 1\n# target: colltune\nbcast 2 - 0 - chain segsize=512,fanout=1\n"


def _osu(build, *args):
    return launch.prepare(build.mpi, 2, [str(build.program("colltune-osu-latency")),
                                         *args]).argv


def test_the_order_is_balanced():
    assert appcompare.order(4) == [(0, "A"), (0, "B"), (1, "B"), (1, "A"), (2, "A"), (2, "B"),
                                   (3, "B"), (3, "A")]


def test_the_verdict_is_the_evidence_rule_not_the_ratio():
    """Runs whose mean ratio is 8 % but whose pairs disagree: a tie (no difference beyond
    the noise); a naive ratio would call B faster."""
    a, b = appcompare.Side("A", None, None, {}), appcompare.Side("B", None, None, {})
    cmp = appcompare.Comparison(a, b, ["app"], None)
    A, B = [1.0, 1.5, 0.8, 1.3], [1.2, 1.1, 0.7, 1.0]
    for p, (x, y) in enumerate(zip(A, B)):
        cmp.runs += [appcompare.AppRun(2 * p, p, "A", x, None, 0),
                     appcompare.AppRun(2 * p + 1, p, "B", y, None, 0)]
    v = cmp.decide()
    assert v.ratio < 0.92 and v.outcome == "tie" and v.paired and math.isfinite(v.p)
    assert v == evidence.compare(B, A, pairs=True)
    assert cmp.answer().startswith("no difference beyond the noise")
    # the program's figure from its output: the last match, its first group
    pat = appcompare.compile_metric(r"Avg Latency\(us\)\s*\n\s*\d+\s+([\d.]+)")
    assert appcompare.figure("# Size  Avg Latency(us)\n1024  12.5\n", pat) == 12.5
    assert appcompare.figure("nothing", pat) is None
    with pytest.raises(appcompare.CompareError, match="not a regular expression"):
        appcompare.compile_metric("(")


def test_a_slow_rules_file_is_detected_and_stored(ompi_build, tmp_path):
    slow = tmp_path / "slow.rules"
    slow.write_text(SLOW)
    db = tmp_path / "c.db"
    res = colltune("run", "--compare", str(slow), "--reps", "4", "--db", str(db), "--",
                   *_osu(ompi_build, "bcast", "1048576", "100"))
    assert res.returncode == 0, res.stdout + res.stderr[-2000:]
    assert "slow.rules is slower than library defaults (wall time)" in res.stdout, res.stdout
    assert "n=4 paired" in res.stdout
    conn = db_mod.open_db(db)
    [c] = reader.app_comparisons(conn)
    assert c["status"] == "done" and c["summary"]["verdict"]["outcome"] == "slower"
    # the size of the slow-down follows the machine's load (x2.6 quiet, x1.2 seen with
    # 16 other processes on 2 cores); the verdict and its direction are what is asserted
    assert c["summary"]["verdict"]["ratio"] > 1.0
    runs = c["runs"]
    assert [r["arm"] for r in runs] == ["A", "B", "B", "A", "A", "B", "B", "A"]
    b = [r for r in runs if r["arm"] == "B"]
    assert all(r["rules_file"] == str(slow) and len(r["rules_sha256"]) == 64 for r in b)
    assert all(r["rules_file"] is None and r["returncode"] == 0 for r in runs if r["arm"] == "A")
    assert "colltune-osu-latency" in runs[0]["command"] and "-x" in b[0]["command"]
    assert "PATH" in c["environment"] or c["environment"] is not None
    # the program's own figure instead of the wall time
    res = colltune("run", "--compare", str(slow), "--reps", "4", "--db", str(db),
                   "--metric", r"\n\d+\s+([\d.]+)", "--",
                   *_osu(ompi_build, "bcast", "1048576", "10"))
    assert res.returncode == 0, res.stdout + res.stderr[-2000:]
    assert "is slower than library defaults (the program's figure" in res.stdout
    conn = db_mod.open_db(db)
    latest = reader.app_comparisons(conn)[0]
    assert all(r["metric"] is not None for r in latest["runs"])
    assert latest["summary"]["verdict"]["ratio"] > 2  # µs per call: 512-byte pieces (x5-x20 seen)


def test_two_identical_rules_files_make_no_difference(ompi_build, tmp_path):
    one, two = tmp_path / "one.rules", tmp_path / "two.rules"
    one.write_text(NATIVE)
    two.write_text(NATIVE)
    build = ompi_build
    a = appcompare.side(build, str(one))
    b = appcompare.side(build, str(two))
    assert a.sha256 == b.sha256 and a.env["COLLTUNE_RULES"] != b.env["COLLTUNE_RULES"]
    cmp = appcompare.run_compare(_osu(build, "bcast", "65536", "200"), a, b, 4, build=build,
                                 db_path=tmp_path / "c.db")
    v = cmp.verdict
    # the evidence ran: four pairs, an interval and a p-value; and it finds no difference
    assert v.paired and v.n == 4 and math.isfinite(v.p) and not math.isnan(v.ci_low)
    assert v.outcome == "tie", cmp.answer()
    assert cmp.answer().startswith("no difference beyond the noise between two.rules and "
                                   "one.rules")


def test_a_failing_run_stops_the_comparison_and_keeps_the_runs(ompi_build, tmp_path):
    rules = tmp_path / "n.rules"
    rules.write_text(NATIVE)
    db = tmp_path / "c.db"
    res = colltune("run", "--compare", str(rules), "--reps", "2", "--db", str(db), "--",
                   *_osu(ompi_build, "nosuch", "8"))
    assert res.returncode == 2 and "run 1 (library defaults) exit status" in res.stderr
    conn = db_mod.open_db(db)
    [c] = reader.app_comparisons(conn)
    assert c["status"] == "failed" and len(c["runs"]) == 1
    res = colltune("run", "--compare", str(rules), "--rules", str(rules), "--", "true")
    assert res.returncode == 2 and "not with --rules" in res.stderr
    # a rules file the library would drop, a bad expression: refused before any run
    bad = tmp_path / "bad.rules"
    bad.write_text("# colltune-rules 1\n# target: colltune\nbcast 2 - 0 - binomal -\n")
    marker = tmp_path / "launched"
    for args, says in ((["--compare", str(bad)], "unknown bcast algorithm 'binomal'"),
                       (["--compare", str(rules), "--metric", "("], "not a regular expression"),
                       (["--compare", str(rules)] * 3, "one rules file")):
        res = colltune("run", *args, "--db", str(db), "--", "touch", str(marker))
        lines = res.stderr.strip().splitlines()
        assert res.returncode == 2 and len(lines) == 1 and says in lines[0], (args, res.stderr)
        assert not marker.exists()


def test_a_version_5_database_gets_the_application_runs(tmp_path):
    p = tmp_path / "old.db"
    conn = sqlite3.connect(p)
    for stmt in [s for m in db_mod.MIGRATIONS[:5] for s in m]:
        conn.execute(stmt)
    conn.execute("PRAGMA user_version = 5")
    conn.execute("INSERT INTO runs (kind, status, started_at) VALUES ('sweep', 'done', 'x')")
    conn.commit()
    conn.close()
    conn = db_mod.open_db(p)
    assert db_mod.schema_version(conn) == db_mod.SCHEMA_VERSION >= 6
    cols = [r[1] for r in conn.execute("PRAGMA table_info(app_runs)")]
    assert {"arm", "rules_sha256", "wall_s", "metric", "pair"} <= set(cols)
    assert reader.app_comparisons(conn) == []
    assert json.loads(json.dumps(reader.app_comparisons(conn))) == []
