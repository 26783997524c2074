"""The results database: migrations, transactional writes, queries, results/export."""

from __future__ import annotations

import csv
import sqlite3

import pytest
from click.testing import CliRunner

from colltune.results import db
from colltune.results import reader, store
from colltune.cli.results import export, results


def _record(algo="binomial", np=2, size=8, median=1.5, **kw):
    r = {"collective": "bcast", "algorithm": algo, "params": "segsize=0", "spec": algo,
         "np": np, "size": size, "dtype": "char", "op": "sum", "root": 0, "iterations": 10,
         "warmup": 1, "timing": "osu", "rep_min_us": median - 0.5, "mean_us": median,
         "median_us": median, "p90_us": median + 0.1, "p99_us": median + 0.2,
         "rep_max_us": median + 0.3, "stddev_us": 0.1, "valid_reps": 1, "invalid": 0,
         "rank_min_us": 0.1, "rank_max_us": 2.0, "window_us": None, "sleep_us": 0.0,
         "time_budget_s": None, "valid": None, "fallback": None, "mpi": "Open MPI v5",
         "command": "mpirun -np 2 colltune-bench"}
    r.update(kw)
    return r


def test_migration_from_an_empty_database(tmp_path):
    path = tmp_path / "r.db"
    path.touch()  # an empty file is an empty SQLite database
    conn = db.open_db(path)
    assert db.schema_version(conn) == db.SCHEMA_VERSION >= 1
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"studies", "runs", "units", "measurements", "failures"} <= tables
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    # opening again applies nothing and keeps the version
    conn = db.open_db(path)
    assert db.migrate(conn) == db.SCHEMA_VERSION
    conn.close()


def test_migrations_apply_in_order(tmp_path, monkeypatch):
    path = tmp_path / "r.db"
    db.open_db(path).close()
    extra = ["ALTER TABLE runs ADD COLUMN test_column TEXT"]
    monkeypatch.setattr(db, "MIGRATIONS", db.MIGRATIONS + [extra])
    monkeypatch.setattr(db, "SCHEMA_VERSION", len(db.MIGRATIONS))
    conn = db.open_db(path)
    assert db.schema_version(conn) == len(db.MIGRATIONS)
    cols = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    assert "test_column" in cols
    conn.close()


def test_version_1_database_is_migrated_and_old_records_are_readable(tmp_path):
    """v2 renames min_us/max_us (over repetitions) to rep_min_us/rep_max_us and adds
    align; a v1 database keeps its points, and old-style records are stored renamed."""
    path = tmp_path / "v1.db"
    c = sqlite3.connect(path)
    for stmt in db.MIGRATIONS[0]:
        c.execute(stmt)
    c.execute("PRAGMA user_version = 1")
    c.execute("INSERT INTO runs (id, kind, status, started_at) VALUES (1, 'bench', 'done', 'x')")
    c.execute("INSERT INTO measurements (run_id, collective, algorithm, spec, np, size, "
              "min_us, median_us, max_us) VALUES (1, 'bcast', 'native', 'native', 2, 8, "
              "1.0, 2.0, 3.0)")
    c.commit()
    c.close()
    conn = db.open_db(path)
    assert db.schema_version(conn) == db.SCHEMA_VERSION >= 2
    old = reader.measurements_frame(conn)
    assert (old["rep_min_us"][0], old["median_us"][0], old["rep_max_us"][0]) == (1.0, 2.0, 3.0)
    assert old["align"].isna().all()  # measured before buffers were aligned
    legacy = _record("binomial", median=5.0)
    legacy["min_us"] = legacy.pop("rep_min_us")
    legacy["max_us"] = legacy.pop("rep_max_us")
    store.store_measurements(conn, 1, [legacy, _record("chain", median=7.0, align=4096)])
    pts = reader.measurements_frame(conn, algorithm=["binomial", "chain"])
    assert list(pts["rep_min_us"]) == [4.5, 6.5] and list(pts["rep_max_us"]) == [5.3, 7.3]
    assert list(pts["align"].fillna(0)) == [0, 4096]
    conn.close()


def test_newer_or_foreign_database_is_refused(tmp_path):
    path = tmp_path / "new.db"
    c = sqlite3.connect(path)
    c.execute(f"PRAGMA user_version = {db.SCHEMA_VERSION + 1}")
    c.close()
    with pytest.raises(db.DBError, match="newer than this colltune"):
        db.open_db(path)
    other = tmp_path / "other.db"
    c = sqlite3.connect(other)
    c.execute("CREATE TABLE t (x)")
    c.commit()
    c.close()
    with pytest.raises(db.DBError, match="not a colltune database"):
        db.open_db(other)
    junk = tmp_path / "junk.db"
    junk.write_text("this is not sqlite" * 100)
    with pytest.raises(db.DBError):
        db.open_db(junk)
    with pytest.raises(db.DBError, match="no results database"):
        db.open_db(tmp_path / "missing.db", create=False)


def test_default_path_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("COLLTUNE_DB", raising=False)
    assert str(db.default_path()) == "colltune.db"
    monkeypatch.setenv("COLLTUNE_DB", str(tmp_path / "x.db"))
    assert db.default_path() == tmp_path / "x.db"


def test_a_unit_is_stored_whole_or_not_at_all(tmp_path):
    conn = db.open_db(tmp_path / "r.db")
    sid = store.upsert_study(conn, "s", {"name": "s"})
    rid = store.store_run(conn, study_id=sid, round=1)
    common = dict(study_id=sid, run_id=rid, round=1, collective="bcast", np=2, nodes=1, ppn=2,
                  mapping="core", rank_order="seq", repetition=1, algorithms=["binomial"],
                  library_spec=None, command="mpirun", env={}, notes=[], started_at=db.now(),
                  seconds=1.0)
    bad = [_record(), {"collective": "bcast"}]  # the second record lacks np/size
    with pytest.raises(ValueError):
        store.store_unit(conn, key="k1", records=bad, **common)
    assert conn.execute("SELECT COUNT(*) FROM units").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM measurements").fetchone()[0] == 0
    uid = store.store_unit(conn, key="k1", records=[_record(), _record(size=4096)], **common)
    assert conn.execute("SELECT COUNT(*) FROM measurements WHERE unit_id = ?",
                        (uid,)).fetchone()[0] == 2
    with pytest.raises(sqlite3.IntegrityError):  # the same unit twice: refused, nothing added
        store.store_unit(conn, key="k1", records=[_record()], **common)
    assert conn.execute("SELECT COUNT(*) FROM measurements").fetchone()[0] == 2
    assert reader.stored_unit_keys(conn, sid, 1) == {"k1"}
    row = conn.execute("SELECT params, mapping, rank_order, nodes, ppn, repetition, round, extra "
                       "FROM measurements LIMIT 1").fetchone()
    assert row["params"] == '{"segsize": 0}'
    assert (row["mapping"], row["rank_order"], row["nodes"], row["ppn"], row["repetition"],
            row["round"]) == ("core", "seq", 1, 2, 1, 1)
    assert row["extra"] is None  # command/mpi are kept with the unit and the run
    conn.close()


def test_run_provenance_and_stale_runs(tmp_path):
    conn = db.open_db(tmp_path / "r.db")
    sid = store.upsert_study(conn, "s")
    rid = store.store_run(conn, study_id=sid, env={"OMPI_MCA_btl": "self", "HOME": "/root",
                                                   "GITHUB_TOKEN": "x", "MPIR_CVAR_X": "1"})
    r = conn.execute("SELECT * FROM runs WHERE id = ?", (rid,)).fetchone()
    assert r["status"] == "running" and r["host"] and r["cores"] >= 1 and r["cpu_model"]
    assert r["colltune_version"]
    import json
    env = json.loads(r["environment"])
    assert env == {"MPIR_CVAR_X": "1", "OMPI_MCA_btl": "self"}
    conn.execute("UPDATE runs SET pid = 999999999 WHERE id = ?", (rid,))
    assert store.mark_stale_runs(conn, sid) == [rid]
    assert conn.execute("SELECT status FROM runs WHERE id = ?", (rid,)).fetchone()[0] == "aborted"
    conn.close()


def test_store_bench_and_queries(tmp_path):
    path = tmp_path / "r.db"
    recs = [_record(a, np=n, size=s, median=m) for a, m in (("binomial", 2.0), ("native", 1.0))
            for n in (2, 4) for s in (8, 4096)]
    rid = store.store_bench(recs, mpi=None, path=path, argv=["colltune", "bench"])
    conn = db.open_db(path, create=False)
    assert conn.execute("SELECT kind, status FROM runs WHERE id = ?", (rid,)).fetchone()[:] == (
        "bench", "done")
    pts = reader.measurements_frame(conn, study="(bench)", algorithm="native", np=[4])
    assert len(pts) == 2 and set(pts["size"]) == {8, 4096}
    assert (pts["study"] == "(bench)").all() and (pts["ppn"] == 4).all()
    summary = reader.summary_frame(reader.measurements_frame(conn))
    assert len(summary) == 8 and (summary["reps"] == 1).all()
    studies = reader.studies_frame(conn)
    assert list(studies["study"]) == ["(bench)"] and studies["points"][0] == 8
    conn.close()


def test_results_and_export_commands(tmp_path):
    path = tmp_path / "r.db"
    conn = db.open_db(path)
    sid = store.upsert_study(conn, "tiny", {"name": "tiny"}, "a test study")
    rid = store.store_run(conn, study_id=sid, round=1)
    for rep in (1, 2):
        store.store_unit(conn, study_id=sid, run_id=rid, round=1, key=f"k{rep}",
                         collective="bcast", np=2, nodes=1, ppn=2, mapping="core",
                         rank_order="seq", repetition=rep, algorithms=["binomial", "native"],
                         library_spec=None, command="mpirun", env={}, notes=[],
                         started_at=db.now(), seconds=1.0,
                         records=[_record(a, median=m + rep) for a, m in (("binomial", 2.0),
                                                                           ("native", 1.0))])
    store.finish_run(conn, rid, "done")
    conn.close()
    runner = CliRunner()
    res = runner.invoke(results, ["--db", str(path)])
    assert res.exit_code == 0, res.output
    assert "tiny" in res.output
    res = runner.invoke(results, ["--db", str(path), "--study", "tiny", "--format", "csv"])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(res.output.splitlines()))
    assert len(rows) == 2 and {r["spec"] for r in rows} == {"binomial", "native"}
    assert {r["reps"] for r in rows} == {"2"}
    assert float(next(r for r in rows if r["spec"] == "native")["median_us"]) == 2.5
    out_csv = tmp_path / "out" / "points.csv"
    out_csv.parent.mkdir()  # an output's folder must exist (a typo makes none)
    res = runner.invoke(export, ["--db", str(path), "--study", "tiny", "-o", str(out_csv)])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(out_csv.open()))
    assert len(rows) == 4
    assert {"study", "host", "collective", "algorithm", "np", "nodes", "ppn", "mapping",
            "rank_order", "size", "median_us", "p99_us", "repetition", "command"} <= set(rows[0])
    assert not list(out_csv.parent.glob(".points.csv.*"))  # no temporary file left
    pq = tmp_path / "points.parquet"
    pytest.importorskip("pyarrow")
    res = runner.invoke(export, ["--db", str(path), "--coll", "bcast", "-o", str(pq)])
    assert res.exit_code == 0, res.output
    import pandas as pd
    assert len(pd.read_parquet(pq)) == 4
    res = runner.invoke(results, ["--db", str(tmp_path / "nothing.db")])
    assert res.exit_code == 2 and "no results database" in res.output


def test_the_reader_reads_whole_tables_ping_pong_points_and_one_round(tmp_path):
    """results.reader: the tables a report needs, the ping-pong points, a study's round;
    the oversubscribed rule is the one analysis.evidence uses."""
    from colltune.analysis import evidence

    path = tmp_path / "r.db"
    pp = [dict(_record("native", size=s), collective="pingpong") for s in (8, 64)]
    store.store_bench([_record("binomial"), *pp], mpi=None, path=path,
                      argv=["colltune", "bench"])
    conn = db.open_db(path)
    sid = store.upsert_study(conn, "s", {"name": "s"})
    rid = store.store_run(conn, study_id=sid, round=1)
    store.store_unit(conn, study_id=sid, run_id=rid, round=1, key="k", collective="bcast",
                     np=2, nodes=1, ppn=2, mapping="core", rank_order="seq", repetition=1,
                     algorithms=["binomial"], library_spec=None, command="mpirun", env={},
                     notes=[], started_at=db.now(), seconds=1.0, records=[_record()])
    assert reader.study_names(conn) == ["s"] and reader.run_count(conn, sid) == 1
    assert reader.study_definition(conn, sid) == '{"name": "s"}'
    assert reader.measured_rounds(conn, sid) == [1] and reader.simulated_count(conn, sid) == 0
    frame = reader.round_frame(conn, sid, 1)
    assert len(frame) == 1 and {"unit_id", "cores", "mpi_kind"} <= set(frame.columns)
    conn.close()
    tables = reader.read_tables(path, ("runs", "units", "studies", "nosuch"))
    assert sorted(tables) == ["runs", "studies", "units"] and len(tables["runs"]) == 2
    assert reader.read_tables(tmp_path / "nothing.db", ("runs",)) == {}
    assert list(reader.pingpong_points(path)["size"]) == [8, 64]
    assert reader.pingpong_points(tmp_path / "nothing.db") is None
    assert evidence.oversubscribed is reader.oversubscribed


def test_the_ping_pong_of_the_cost_model_is_stored_once_with_its_provenance(tmp_path):
    """quick stores its ping-pong (results.store.store_pingpong) so that reports read α, β
    from the database instead of measuring: the points come back from pingpong_points,
    as a run of kind 'pingpong' named as such in the studies table."""
    path = tmp_path / "r.db"
    assert reader.pingpong_points(path) is None
    recs = [{"kind": "pingpong", "np": 2, "size": s, "min_us": m, "median_us": m, "mean_us": m,
             "max_us": m, "iterations": 100, "command": "mpirun -np 2 colltune-pingpong"}
            for s, m in ((8, 0.5), (1024, 0.8), (1 << 20, 90.0))]
    rid = store.store_pingpong(recs, mpi=None, path=path, argv=["colltune", "quick"])
    pts = reader.pingpong_points(path)
    assert sorted(pts["size"]) == [8, 1024, 1 << 20] and set(pts["collective"]) == {"pingpong"}
    assert list(pts.sort_values("size")["median_us"]) == [0.5, 0.8, 90.0]
    conn = db.open_db(path, create=False)
    assert conn.execute("SELECT kind, status FROM runs WHERE id = ?", (rid,)).fetchone()[:] == (
        "pingpong", "done")
    studies = reader.studies_frame(conn)
    conn.close()
    assert "ping-pong" in studies["description"][0] and studies["points"][0] == 3


def _damage(path, at: float = 0.5) -> str:
    """Overwrite 1 KiB in the middle of a database file (a damaged page); its hash."""
    import hashlib

    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.seek(int(size * at) // 4096 * 4096 + 100)
        f.write(b"\xde\xad\xbe\xef" * 256)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_damaged_database_is_refused_by_every_command_and_left_untouched(tmp_path):
    """SQLite's quick_check at every open: readers and writers stop with one line saying
    what to do, exit 2, and the file keeps every byte."""
    import hashlib

    from conftest import colltune

    path = tmp_path / "r.db"
    recs = [_record(a, np=n, size=s, median=m + i) for i in range(150)
            for a, m in (("binomial", 2.0), ("native", 1.0)) for n in (2, 4) for s in (8, 4096)]
    store.store_bench(recs, mpi=None, path=path, argv=["colltune", "bench"])
    assert path.stat().st_size > 100_000 and not (tmp_path / "r.db-wal").exists()
    digest = _damage(path)
    study = tmp_path / "s.toml"
    study.write_text('[study]\nname = "s"\ncollectives = ["bcast"]\nalgorithms = ["native"]\n'
                     'sizes = [8]\nprocesses = [1]\nrepetitions = 1\niterations = 5\n')
    commands = [["results"], ["export", "-o", str(tmp_path / "x.csv")],
                ["sweep", str(study)], ["sweep", str(study), "--dry-run"],
                ["bench", "--coll", "bcast", "--algo", "native", "--np", "1", "--sizes", "8",
                 "--db", str(path)],
                ["quick"], ["report", "-o", str(tmp_path / "r.html")],
                ["tune", "--target", "openmpi", "-o", str(tmp_path / "rules.conf")],
                ["fit"], ["model"], ["plot", "--kind", "vs-size", "-o", str(tmp_path / "p.png")],
                ["load", "analyse", "--study", "s"]]
    for args in commands:
        if "--db" not in args:
            args = [*args, "--db", str(path)]
        res = colltune(*args, timeout=300)
        lines = res.stderr.strip().splitlines()
        assert res.returncode == 2, (args, res.stderr)
        assert len(lines) == 1 and "Traceback" not in res.stderr, (args, res.stderr)
        assert lines[0].startswith(f"error: {path} is damaged (SQLite"), (args, lines)
        assert "restore a copy" in lines[0] and ".recover" in lines[0], lines
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, args
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.db", "s.toml"]  # nothing else


def test_the_health_check_at_opening(tmp_path):
    """open_db / open_reader / check_writable refuse a damaged file (a page, or the
    header: "file is not a database") and check an unchanged file only once."""
    path = tmp_path / "r.db"
    store.store_bench([_record(size=s) for s in range(1, 2000)], mpi=None, path=path,
                      argv=["colltune", "bench"])
    conn = db.open_reader(path)  # healthy: opens
    conn.close()
    db._HEALTHY.clear()
    conn = db.open_db(path, create=False)
    conn.close()
    conn = db.open_reader(path)
    conn.close()
    # checked once: the file as found healthy is the file now (the next open skips it)
    assert db._HEALTHY[str(path.resolve())] == db._fingerprint(path)
    saved = path.read_bytes()
    _damage(path)
    for opener in (lambda: db.open_db(path), lambda: db.open_reader(path),
                   lambda: db.check_writable(path), lambda: reader.read_measurements(path),
                   lambda: reader.read_tables(path, ("runs",)),
                   lambda: reader.pingpong_points(path)):
        with pytest.raises(db.DamagedError, match="is damaged .*quick_check"):
            opener()
    # damage met later, in a query (wrapped as pandas wraps it), is recognised as such
    corrupt = sqlite3.DatabaseError("database disk image is malformed")
    corrupt.sqlite_errorcode = 11
    try:
        raise RuntimeError("Execution failed on sql") from corrupt
    except RuntimeError as exc:
        assert db.damage_of(exc) == "database disk image is malformed"
    assert db.damage_of(sqlite3.OperationalError("no such table: x")) is None
    path.write_bytes(saved[:16] + b"\xff" * 40 + saved[56:])  # the header
    with pytest.raises(db.DamagedError, match="file is not a database"):
        db.open_db(path)
    with pytest.raises(db.DamagedError, match="file is not a database"):
        db.open_reader(path)


def test_version_5_database_gains_the_load_of_each_launch(tmp_path):
    """v6 adds load1_before/load1_after (the 1-minute load average around a launch):
    an older database keeps its points (load unknown: NULL) and new points carry it."""
    path = tmp_path / "v5.db"
    c = sqlite3.connect(path)
    for stmts in db.MIGRATIONS[:5]:
        for stmt in stmts:
            c.execute(stmt)
    c.execute("PRAGMA user_version = 5")
    c.execute("INSERT INTO runs (id, kind, status, started_at) VALUES (1, 'bench', 'done', 'x')")
    c.execute("INSERT INTO measurements (run_id, collective, algorithm, spec, np, size, "
              "median_us) VALUES (1, 'bcast', 'native', 'native', 2, 8, 2.0)")
    c.commit()
    c.close()
    conn = db.open_db(path)
    assert db.schema_version(conn) == db.SCHEMA_VERSION >= 6
    store.store_measurements(conn, 1, [_record("chain", median=7.0, load1_before=1.5,
                                               load1_after=2.25)])
    pts = reader.measurements_frame(conn)
    assert pts["load1_before"].isna().sum() == 1
    assert list(pts.dropna(subset=["load1_after"])["load1_after"]) == [2.25]
    conn.close()


_OPEN_AT = """
import sys, time
from colltune.results import db
start = float(sys.argv[2])
while time.time() < start:
    pass
conn = db.open_db(sys.argv[1])
print(db.schema_version(conn))
conn.close()
"""


@pytest.mark.parametrize("old", [False, True], ids=["new-file", "version-1-file"])
def test_several_processes_create_or_migrate_the_schema_at_once(tmp_path, old):
    """Creating or migrating the schema is one transaction per step that a second
    process waits for: eight processes opening the same new (or version-1) file at the
    same instant all succeed, and the file has the schema once."""
    import subprocess
    import sys
    import time
    path = tmp_path / "both.db"
    if old:  # a version-1 file as colltune wrote it (WAL from its creation)
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA journal_mode = WAL")
        for stmt in db.MIGRATIONS[0]:
            conn.execute(stmt)
        conn.execute("PRAGMA user_version = 1")
        conn.commit()
        conn.close()
    start = time.time() + 2.0
    procs = [subprocess.Popen([sys.executable, "-c", _OPEN_AT, str(path), str(start)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(8)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    assert {out.strip() for out, _ in outs} == {str(db.SCHEMA_VERSION)}
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == db.SCHEMA_VERSION
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        names = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'studies'")]
        assert names == ["studies"]
    finally:
        conn.close()


@pytest.mark.parametrize("version", range(1, 8))
def test_every_older_database_gains_the_kind_of_each_point(tmp_path, version):
    """v8 adds the points' kind (collective, pingpong, p2p, heat, app): a database of
    every older version reads the same after the migration, each point with the kind its
    collective name said, and readers select the ping-pong and the collectives by kind."""
    path = tmp_path / f"v{version}.db"
    c = sqlite3.connect(path)
    for stmts in db.MIGRATIONS[:version]:
        for stmt in stmts:
            c.execute(stmt)
    c.execute(f"PRAGMA user_version = {version}")
    c.execute("INSERT INTO runs (id, kind, status, started_at) VALUES (1, 'bench', 'done', 'x')")
    names = {"bcast": "collective", "allreduce": "collective", "heat": "heat",
             "pingpong": "pingpong", "p2p": "p2p", "oldcoll": "collective"}
    for i, coll in enumerate(names):
        c.execute("INSERT INTO measurements (run_id, collective, algorithm, spec, np, size, "
                  "median_us, extra) VALUES (1, ?, 'native', 'native', 2, ?, ?, ?)",
                  (coll, 8 * (i + 1), 1.5 + i, '{"kind": "pingpong"}' if coll == "pingpong"
                   else None))
    c.commit()
    c.close()
    before = reader.read_measurements(path)
    pp_before = reader.pingpong_points(path)
    assert list(reader.measurement_kinds(before)) == list(names.values())
    conn = db.open_db(path)
    assert db.schema_version(conn) == db.SCHEMA_VERSION
    stored = dict(conn.execute("SELECT collective, kind FROM measurements").fetchall())
    assert stored == names
    frame = reader.measurements_frame(conn)
    assert list(reader.measurements_frame(conn, kind="heat")["collective"]) == ["heat"]
    conn.close()
    after = reader.read_measurements(path)
    before = before.rename(columns={"min_us": "rep_min_us", "max_us": "rep_max_us"})  # v2
    same = [c for c in before.columns if c != "kind"]
    assert set(same) <= set(after.columns)
    assert before[same].equals(after[same])  # the same data as before the migration
    assert list(after["kind"]) == list(names.values()) == list(frame.sort_values("size")["kind"])
    assert after["kind_run"].eq("bench").all()  # the run's kind keeps its own name
    pp_after = reader.pingpong_points(path)
    pp_before = pp_before.rename(columns={"min_us": "rep_min_us", "max_us": "rep_max_us"})
    assert pp_before.equals(pp_after[pp_before.columns]) and "kind" not in pp_after.columns
    assert sorted(pp_after["collective"]) == ["p2p", "pingpong"]


def test_new_points_carry_their_kind_and_a_record_keeps_its_own(tmp_path):
    """store computes the kind from the collective name (or takes it for a whole batch);
    a driver's own record `kind` ('pingpong', 'exchange', 'heat') stays in `extra`."""
    path = tmp_path / "r.db"
    recs = [{"kind": "exchange", "np": 2, "size": 8, "median_us": 1.0, "min_us": 1.0,
             "max_us": 1.0, "mean_us": 1.0}]
    store.store_pingpong(recs, mpi=None, path=path, argv=["colltune", "quick"])
    store.store_bench([_record("binomial"), _record("native", collective="heat")], mpi=None,
                      path=path, argv=["colltune", "bench"])
    conn = db.open_db(path)
    rows = conn.execute("SELECT collective, kind, extra FROM measurements ORDER BY id").fetchall()
    assert [tuple(r)[:2] for r in rows] == [("pingpong", "pingpong"), ("bcast", "collective"),
                                            ("heat", "heat")]
    assert '"kind": "exchange"' in rows[0]["extra"]
    store.store_measurements(conn, 1, [_record("app1", collective="myapp")], kind="app")
    assert conn.execute("SELECT kind FROM measurements WHERE collective = 'myapp'"
                        ).fetchone()[0] == "app"
    with pytest.raises(ValueError, match="unknown measurement kind 'nope'"):
        store.store_measurements(conn, 1, [_record()], kind="nope")
    conn.close()
