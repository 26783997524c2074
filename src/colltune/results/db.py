"""The results database: one SQLite file, versioned schema, transactional writes.

Default path: $COLLTUNE_DB, else `colltune.db` in the working directory.

Tables (docs/database.md has every column):
  studies       one row per study name: its latest definition
  runs          one row per `colltune sweep` / `colltune bench --db` invocation:
                host, CPU, MPI, colltune version and git revision, launcher,
                environment, seed, start/end, status
  units         one row per launch of a sweep whose records were stored
                (the resume key: a stored unit is not run again)
  measurements  one row per (algorithm, size) point of a launch: all statistics
  failures      one row per failed or timed-out launch, with its error output
  tunings       one row per `colltune tune`: the rules and their quality, with the
                study, round and target they came from
  app_runs      one row per run of an application compared with and without rules
                (`colltune run --compare`; the comparison is a run of kind 'app-compare')

Every write of a launch (its unit row and all its measurements) is one
transaction: a crash leaves the launch either stored whole or not at all.
The schema version is PRAGMA user_version; MIGRATIONS[i] takes a database from
version i to i+1, and `open_db` applies what is missing.

Every open of an existing file first checks that it is healthy (SQLite's
`PRAGMA quick_check`, about 20 ms for 8 MB and 150 ms for 60 MB, once per open, not
per query): a damaged database is refused (DBError, one line saying what to do)
before anything reads it or writes into it.

This module owns the file: its path, the connections (`open_db` writes and
migrates, `open_reader` only reads), the schema and its migrations, transactions
and the errors. The rows are written by results/store.py and read by
results/reader.py; results/provenance.py says where a run ran.
"""

from __future__ import annotations

import os
import sqlite3
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from colltune.base.collectives import NOT_COLLECTIVES
from colltune.base.errors import ColltuneError
from colltune.base.files import can_create_in

DEFAULT_NAME = "colltune.db"
DB_HELP = (f"Results database (SQLite file). Default: $COLLTUNE_DB, else ./{DEFAULT_NAME} "
           "in the working directory.")


class DBError(ColltuneError, RuntimeError):
    """The database cannot be opened, is too new, or is not a colltune database."""


class DamagedError(DBError):
    """The database file is damaged (SQLite's quick_check, or SQLITE_CORRUPT/NOTADB)."""


# SQLite's own errors, for the callers that catch them (they import no sqlite3):
# SQLError any of them, IntegrityError a unit stored twice (store.store_unit).
SQLError = sqlite3.Error
IntegrityError = sqlite3.IntegrityError


# ------------------------------------------------------------------ migrations

_V1 = [
    """CREATE TABLE studies (
        id          INTEGER PRIMARY KEY,
        name        TEXT NOT NULL UNIQUE,
        description TEXT,
        source      TEXT,
        definition  TEXT,
        created_at  TEXT NOT NULL,
        updated_at  TEXT NOT NULL
    )""",
    """CREATE TABLE runs (
        id               INTEGER PRIMARY KEY,
        study_id         INTEGER REFERENCES studies(id),
        kind             TEXT NOT NULL,
        round            INTEGER,
        status           TEXT NOT NULL,
        host             TEXT,
        cpu_model        TEXT,
        cores            INTEGER,
        cpus             INTEGER,
        os               TEXT,
        mpi_kind         TEXT,
        mpi_version      TEXT,
        mpi_banner       TEXT,
        mpi_path         TEXT,
        colltune_version TEXT,
        git_revision     TEXT,
        launcher         TEXT,
        launcher_command TEXT,
        command_line     TEXT,
        environment      TEXT,
        definition       TEXT,
        seed             INTEGER,
        shuffled         INTEGER,
        units_planned    INTEGER,
        units_skipped    INTEGER,
        units_done       INTEGER NOT NULL DEFAULT 0,
        units_failed     INTEGER NOT NULL DEFAULT 0,
        pid              INTEGER,
        started_at       TEXT NOT NULL,
        finished_at      TEXT,
        notes            TEXT
    )""",
    """CREATE TABLE units (
        id           INTEGER PRIMARY KEY,
        study_id     INTEGER NOT NULL REFERENCES studies(id),
        run_id       INTEGER NOT NULL REFERENCES runs(id),
        round        INTEGER NOT NULL,
        key          TEXT NOT NULL,
        collective   TEXT NOT NULL,
        np           INTEGER NOT NULL,
        nodes        INTEGER,
        ppn          INTEGER,
        mapping      TEXT,
        rank_order   TEXT,
        repetition   INTEGER,
        algorithms   TEXT,
        library_spec TEXT,
        command      TEXT,
        env          TEXT,
        notes        TEXT,
        started_at   TEXT,
        finished_at  TEXT,
        seconds      REAL,
        UNIQUE (study_id, round, key)
    )""",
    """CREATE TABLE measurements (
        id            INTEGER PRIMARY KEY,
        run_id        INTEGER NOT NULL REFERENCES runs(id),
        unit_id       INTEGER REFERENCES units(id),
        collective    TEXT NOT NULL,
        algorithm     TEXT NOT NULL,
        spec          TEXT,
        params        TEXT,
        np            INTEGER NOT NULL,
        nodes         INTEGER,
        ppn           INTEGER,
        mapping       TEXT,
        rank_order    TEXT,
        size          INTEGER NOT NULL,
        root          INTEGER,
        dtype         TEXT,
        op            TEXT,
        timing        TEXT,
        iterations    INTEGER,
        warmup        INTEGER,
        min_us        REAL,
        mean_us       REAL,
        median_us     REAL,
        p90_us        REAL,
        p99_us        REAL,
        max_us        REAL,
        stddev_us     REAL,
        valid_reps    INTEGER,
        invalid       INTEGER,
        rank_min_us   REAL,
        rank_max_us   REAL,
        window_us     REAL,
        sleep_us      REAL,
        time_budget_s REAL,
        valid         INTEGER,
        fallback      TEXT,
        repetition    INTEGER,
        round         INTEGER,
        samples       TEXT,
        extra         TEXT
    )""",
    """CREATE TABLE failures (
        id           INTEGER PRIMARY KEY,
        run_id       INTEGER NOT NULL REFERENCES runs(id),
        study_id     INTEGER REFERENCES studies(id),
        round        INTEGER,
        key          TEXT,
        collective   TEXT,
        np           INTEGER,
        nodes        INTEGER,
        ppn          INTEGER,
        mapping      TEXT,
        rank_order   TEXT,
        repetition   INTEGER,
        algorithms   TEXT,
        library_spec TEXT,
        command      TEXT,
        returncode   INTEGER,
        timed_out    INTEGER NOT NULL DEFAULT 0,
        error        TEXT,
        stderr       TEXT,
        stdout       TEXT,
        started_at   TEXT,
        seconds      REAL
    )""",
    "CREATE INDEX runs_study ON runs(study_id)",
    "CREATE INDEX units_study ON units(study_id, round)",
    "CREATE INDEX measurements_run ON measurements(run_id)",
    "CREATE INDEX measurements_point ON measurements(collective, algorithm, np, size)",
    "CREATE INDEX failures_study ON failures(study_id)",
]

# v2: the statistics over repetitions are named as such (rep_min_us, rep_max_us), so
# that nobody reads them as OSU's Min/Max Latency (over processes: rank_min_us,
# rank_max_us); the message buffers' alignment of each point (colltune-bench --align;
# NULL for points measured before buffers were aligned: plain malloc).
_V2 = [
    "ALTER TABLE measurements RENAME COLUMN min_us TO rep_min_us",
    "ALTER TABLE measurements RENAME COLUMN max_us TO rep_max_us",
    "ALTER TABLE measurements ADD COLUMN align INTEGER",
]

# v3: what `colltune tune` made of a study: the rules (colltune's rules file, text) and
# their quality (regret, gain over native, in-sample and cross-validated; JSON), with
# the study, round and target they came from.
_V3 = [
    """CREATE TABLE tunings (
        id                     INTEGER PRIMARY KEY,
        study_id               INTEGER REFERENCES studies(id),
        study                  TEXT NOT NULL,
        round                  INTEGER,
        target                 TEXT NOT NULL,
        collectives            TEXT,
        include_oversubscribed INTEGER NOT NULL DEFAULT 0,
        created_at             TEXT NOT NULL,
        colltune_version       TEXT,
        git_revision           TEXT,
        command_line           TEXT,
        rules                  TEXT NOT NULL,
        summary                TEXT NOT NULL,
        points                 TEXT,
        notes                  TEXT
    )""",
    "CREATE INDEX tunings_study ON tunings(study_id, round, target)",
]

# v4: the load dimension of a study (docs/workload.md): the load level a point was
# measured under and the probe's median exchange time (µs) taken right before its launch
# (the load index of load-aware rules); NULL for points of studies without study.load.
_V4 = [
    "ALTER TABLE measurements ADD COLUMN load_level TEXT",
    "ALTER TABLE measurements ADD COLUMN probe_us REAL",
]

# v5: simulated points (SimGrid SMPI, `--mpi smpi`): the run says on which platform
# (its name and description, JSON) and with which simulator; every point carries the
# flag, so that no reader mixes simulated points into measurements unless asked
# (`--include-simulated`).
_V5 = [
    "ALTER TABLE runs ADD COLUMN simulated INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE runs ADD COLUMN platform TEXT",
    "ALTER TABLE runs ADD COLUMN platform_description TEXT",
    "ALTER TABLE runs ADD COLUMN simulator TEXT",
    "ALTER TABLE measurements ADD COLUMN simulated INTEGER NOT NULL DEFAULT 0",
]

# v6: an application's own runs (`colltune run --compare`, `colltune autotune`): the
# comparison is a run (kind 'app-compare': host, MPI, environment, command line as every
# run) with its outcome (summary, JSON); each run of the program one row of app_runs:
# which side (the library's defaults or a rules file, with the file's SHA-256), its place
# in the alternating order, wall time, the program's own figure (--metric), exit status.
_V6 = [
    "ALTER TABLE runs ADD COLUMN summary TEXT",
    """CREATE TABLE app_runs (
        id           INTEGER PRIMARY KEY,
        run_id       INTEGER NOT NULL REFERENCES runs(id),
        position     INTEGER NOT NULL,
        pair         INTEGER NOT NULL,
        arm          TEXT NOT NULL,
        rules_file   TEXT,
        rules_sha256 TEXT,
        command      TEXT NOT NULL,
        started_at   TEXT NOT NULL,
        wall_s       REAL,
        metric       REAL,
        returncode   INTEGER,
        UNIQUE (run_id, position)
    )""",
    "CREATE INDEX app_runs_run ON app_runs(run_id)",
]

# v7: the load seen during each launch: the 1-minute load average of the machine that
# ran it (os.getloadavg) read right before and right after the launch; NULL for points
# measured before (and for simulated ones: the host's load changes no simulated time).
# evidence.py calls an unpaired comparison whose sides saw different load unstable.
_V7 = [
    "ALTER TABLE measurements ADD COLUMN load1_before REAL",
    "ALTER TABLE measurements ADD COLUMN load1_after REAL",
]



def kind_sql(column: str = "collective") -> str:
    """SQL for the kind of a measurement from its collective name (what
    base.collectives.measurement_kind says): the migration to v8 fills the column with
    it, and readers of files without the column compute it so."""
    whens = " ".join(f"WHEN '{name}' THEN '{kind}'" for name, kind in NOT_COLLECTIVES.items())
    return f"CASE {column} {whens} ELSE 'collective' END"


# v8: what a point measures (base.collectives.MEASUREMENT_KINDS: collective, pingpong,
# p2p, heat, app), so that readers select the collectives' points, the ping-pong or the
# heat study's by kind instead of by collective name; older points get the kind their
# collective name says.
_V8 = [
    "ALTER TABLE measurements ADD COLUMN kind TEXT NOT NULL DEFAULT 'collective'",
    f"UPDATE measurements SET kind = {kind_sql()} "
    f"WHERE collective IN ({', '.join(repr(n) for n in NOT_COLLECTIVES)})",
    "CREATE INDEX measurements_kind ON measurements(kind)",
]

MIGRATIONS: list[list[str]] = [_V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8]
SCHEMA_VERSION = len(MIGRATIONS)


SQLITE_MAGIC = b"SQLite format 3\x00"

# files found healthy in this process: path -> what the file (and its WAL) looked like
# then; an unchanged file is not checked again (check_writable, then open_db)
_HEALTHY: dict[str, tuple] = {}


def _fingerprint(p: Path) -> tuple | None:
    try:
        st = p.stat()
    except OSError:
        return None
    try:
        wal = Path(f"{p}-wal").stat()
        # an empty WAL (made by opening, gone at closing) holds nothing of the database
        wal_fp = (wal.st_ino, wal.st_size, wal.st_mtime_ns) if wal.st_size else None
    except OSError:
        wal_fp = None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, wal_fp)


RECOVER_DOC = "a sqlite3 without .recover: docs/database.md, 'A damaged database'"


def damaged(p: Path, why: str) -> DamagedError:
    """The one message for a damaged database: what is wrong and what to do."""
    why = " ".join(why.split())
    if len(why) > 160:
        why = why[:157] + "..."
    return DamagedError(f"{p} is damaged ({why}): left untouched; restore a copy, or move "
                        "it aside and recover what is left with "
                        f"`sqlite3 {p} .recover | sqlite3 recovered.db` ({RECOVER_DOC})")


def damage_of(exc: BaseException | None) -> str | None:
    """SQLite's own words when `exc` (or what caused it: pandas wraps SQLite's errors)
    says that a database file is damaged (SQLITE_CORRUPT, SQLITE_NOTADB); else None."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, sqlite3.DatabaseError) and (
                (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF) in (11, 26):
            return str(exc)
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def check_health(conn: sqlite3.Connection, p: Path) -> None:
    """Refuse a damaged database (DBError from `damaged`): SQLite's quick_check, which
    reads every page of the file once (not the indexes' agreement with their tables).
    Run before the connection reads or writes anything else; skipped when the file
    and its WAL are unchanged since they were found healthy in this process."""
    key = str(p.resolve())
    fp = _fingerprint(p)
    if fp is not None and _HEALTHY.get(key) == fp:
        return
    try:
        rows = conn.execute("PRAGMA quick_check(3)").fetchall()
    except sqlite3.DatabaseError as exc:
        raise damaged(p, f"SQLite: {exc}") from None
    problems = [line for r in rows for line in str(r[0]).splitlines()
                if line.strip() and line.strip() != "ok" and not line.startswith("***")]
    if problems:
        raise damaged(p, "SQLite's quick_check: " + "; ".join(problems))
    if fp is not None:
        _HEALTHY[key] = fp


def _has_magic(p: Path) -> bool:
    try:
        with open(p, "rb") as f:
            return f.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def default_path() -> Path:
    return Path(os.environ.get("COLLTUNE_DB") or DEFAULT_NAME)


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def schema_version(conn: sqlite3.Connection) -> int:
    return conn.execute("PRAGMA user_version").fetchone()[0]


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema to SCHEMA_VERSION; returns the version found.

    Safe when several processes open a new or old file at once: each step reads the
    version inside its own BEGIN IMMEDIATE transaction, so a second process waits for
    the first one's step and then finds it done (never "table ... already exists").
    """
    found: int | None = None
    while True:
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = schema_version(conn)
            if found is None:
                found = version
            if version > SCHEMA_VERSION:
                raise DBError(f"database schema version {version} is newer than this colltune "
                              f"knows ({SCHEMA_VERSION}): upgrade colltune")
            if version == SCHEMA_VERSION:
                conn.execute("COMMIT")
                return found
            if version == 0:
                names = {r[0] for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT LIKE 'sqlite_%'")}
                if names:
                    raise DBError(f"not a colltune database (it has tables "
                                  f"{', '.join(sorted(names))} and no colltune schema version)")
            for stmt in MIGRATIONS[version]:
                conn.execute(stmt)
            conn.execute(f"PRAGMA user_version = {version + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def _journal_wal(conn: sqlite3.Connection) -> str:
    """PRAGMA journal_mode = WAL, tried again while another process holds the file (a
    change of journal mode fails at once, without SQLite's busy wait, when several
    processes open a new file together)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def open_db(path: str | Path | None = None, create: bool = True) -> sqlite3.Connection:
    """Open (and create or migrate) a results database.

    WAL journal, foreign keys on, autocommit mode: writes go through `transaction`.
    With create=False a missing file is an error (readers).
    """
    p = Path(path) if path is not None else default_path()
    p = p.expanduser()
    if not create and not p.exists():
        raise DBError(f"no results database at {p} (give --db PATH or set COLLTUNE_DB)")
    if create:
        p.parent.mkdir(parents=True, exist_ok=True)
    existing = p.is_file() and p.stat().st_size > 0
    if existing and not _has_magic(p):
        raise DBError(f"{p} is not an SQLite database (it does not begin as one): give another "
                      "--db path; if it was a colltune database, it is damaged: restore a copy")
    try:
        conn = sqlite3.connect(str(p), timeout=60, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA busy_timeout = 60000")
        if existing:  # before anything (journal mode, migrations) writes into it
            try:
                check_health(conn, p)
            except DBError:
                conn.close()
                raise
        mode = _journal_wal(conn)
        if mode.lower() != "wal":  # e.g. a file system without shared memory
            conn.execute("PRAGMA journal_mode = DELETE")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn)
    except sqlite3.DatabaseError as exc:
        if damage_of(exc):
            raise damaged(p, f"SQLite: {exc}") from None
        raise DBError(f"{p}: {exc}") from None
    return conn


def _read_only_fs(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False


def open_reader(path: str | Path, schema: bool = False) -> sqlite3.Connection:
    """A connection that only reads an existing database (any SQLite file: fit and
    report also read bare tables; with `schema`, a colltune database of this
    version, as `results` needs). Never writes, never migrates.

    Where the file and its folder are writable it is opened read-write with writes
    refused (query_only), so that closing the last connection checkpoints the WAL and
    removes the -wal/-shm files, which a read-only connection would leave behind.
    Elsewhere read-only (`mode=ro`), and on a read-only file system, or where SQLite
    cannot make the WAL's shared memory, as an immutable file (`immutable=1`: nothing
    is created next to it). Raises DBError with the reason."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise DBError(f"no results database at {p} (give --db PATH or set COLLTUNE_DB)")
    uri = p.resolve().as_uri()
    ro_fs = _read_only_fs(p)
    writable = not ro_fs and os.access(p, os.W_OK) and os.access(p.parent, os.W_OK)
    modes = (["mode=rw"] if writable else []) + (["mode=ro"] if not ro_fs else [])
    modes.append("mode=ro&immutable=1")
    last: Exception | None = None
    for mode in modes:
        try:
            conn = sqlite3.connect(f"{uri}?{mode}", uri=True, timeout=60)
            conn.execute("PRAGMA query_only = ON")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError as exc:  # e.g. no -shm possible: try the next
            last = exc
            continue
        except sqlite3.DatabaseError as exc:
            if _has_magic(p):
                raise damaged(p, f"SQLite: {exc}") from None
            raise DBError(f"{p} is not an SQLite database: {exc}") from None
        break
    else:
        raise DBError(f"cannot read {p}: {last}")
    try:
        check_health(conn, p)
    except DBError:
        conn.close()
        raise
    if schema:
        found = schema_version(conn)
        if found > SCHEMA_VERSION:
            conn.close()
            raise DBError(f"{p} has schema version {found}, newer than this colltune's "
                          f"{SCHEMA_VERSION}: update colltune")
        if found < SCHEMA_VERSION:
            conn.close()
            raise DBError(f"{p} has schema version {found} (this colltune writes "
                          f"{SCHEMA_VERSION}) or is not a colltune results database; any "
                          "command that writes to it (sweep, bench --db) upgrades it")
        conn.row_factory = sqlite3.Row
    return conn


def check_writable(path: str | Path) -> Path:
    """Before anything is measured: can results be stored in `path`? An existing file
    must be a colltune database (or an empty file) that this process may write; a new
    one needs a folder it may create files in. Creates nothing. Returns the path;
    raises DBError with the reason."""
    p = Path(path).expanduser()
    if p.is_dir():
        raise DBError(f"--db {p} is a directory; give a file name")
    folder = p.parent if str(p.parent) else Path(".")
    if p.exists():
        try:
            with open(p, "r+b"):
                pass
        except OSError as exc:
            raise DBError(f"cannot write the results database {p}: {exc.strerror or exc}")
        why = can_create_in(folder)
        if why:
            raise DBError(f"cannot write the results database {p}: its folder {folder}: "
                          f"{why} (SQLite needs it for its journal)")
        if p.stat().st_size:
            if not _has_magic(p):
                raise DBError(f"{p} is not a results database (not an SQLite file); give "
                              "another --db path")
            conn = open_reader(p)
            try:
                found = schema_version(conn)
                tables = {r[0] for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'")}
            finally:
                conn.close()
            if found > SCHEMA_VERSION:
                raise DBError(f"{p} has schema version {found}, newer than this colltune's "
                              f"{SCHEMA_VERSION}: update colltune")
            if found == 0 and tables:
                raise DBError(f"{p} is an SQLite file but not a colltune results database "
                              f"(tables: {', '.join(sorted(tables))}); give another --db path")
        return p
    probe = folder
    while not probe.exists():  # open_db creates missing folders
        probe = probe.parent
    why = "not a directory" if not probe.is_dir() else can_create_in(probe)
    if why:
        raise DBError(f"cannot create the results database {p}: {probe}: {why}")
    return p


@contextmanager
def transaction(conn: sqlite3.Connection):
    """BEGIN IMMEDIATE ... COMMIT, ROLLBACK on any exception (Ctrl-C included).

    Inside an open transaction it only joins it."""
    if conn.in_transaction:
        yield conn
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


