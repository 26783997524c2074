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

Every write of a launch (its unit row and all its measurements) is one
transaction: a crash leaves the launch either stored whole or not at all.
The schema version is PRAGMA user_version; MIGRATIONS[i] takes a database from
version i to i+1, and `open_db` applies what is missing.
"""

from __future__ import annotations

import json
import os
import platform
import re
import socket
import sqlite3
import subprocess
import sys
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from colltune.base.errors import ColltuneError
from colltune.base.specs import parse_params
from colltune.base.files import can_create_in

DEFAULT_NAME = "colltune.db"
DB_HELP = (f"Results database (SQLite file). Default: $COLLTUNE_DB, else ./{DEFAULT_NAME} "
           "in the working directory.")


class DBError(ColltuneError, RuntimeError):
    """The database cannot be opened, is too new, or is not a colltune database."""


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

MIGRATIONS: list[list[str]] = [_V1, _V2, _V3, _V4, _V5]
SCHEMA_VERSION = len(MIGRATIONS)


def default_path() -> Path:
    return Path(os.environ.get("COLLTUNE_DB") or DEFAULT_NAME)


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def schema_version(conn: sqlite3.Connection) -> int:
    return conn.execute("PRAGMA user_version").fetchone()[0]


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema to SCHEMA_VERSION; returns the version found."""
    found = schema_version(conn)
    if found > SCHEMA_VERSION:
        raise DBError(f"database schema version {found} is newer than this colltune knows "
                      f"({SCHEMA_VERSION}): upgrade colltune")
    if found == 0:
        names = {r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")}
        if names:
            raise DBError(f"not a colltune database (it has tables {', '.join(sorted(names))} "
                          "and no colltune schema version)")
    for version in range(found, SCHEMA_VERSION):
        conn.execute("BEGIN IMMEDIATE")
        try:
            for stmt in MIGRATIONS[version]:
                conn.execute(stmt)
            conn.execute(f"PRAGMA user_version = {version + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return found


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
    try:
        conn = sqlite3.connect(str(p), timeout=60, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA busy_timeout = 60000")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":  # e.g. a file system without shared memory
            conn.execute("PRAGMA journal_mode = DELETE")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn)
    except sqlite3.DatabaseError as exc:
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
            raise DBError(f"{p} is not an SQLite database: {exc}") from None
        break
    else:
        raise DBError(f"cannot read {p}: {last}")
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
            with open(p, "rb") as f:
                magic = f.read(16)
            if magic != b"SQLite format 3\x00":
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


# ------------------------------------------------------------------ provenance

ENV_PREFIXES = ("OMPI_", "PRTE_", "PMIX_", "MPIR_CVAR_", "MPICH_", "HYDRA_", "I_MPI_", "UCX_",
                "FI_", "PSM2_", "HWLOC_", "COLLTUNE_", "SLURM_JOB_", "SLURM_NTASKS",
                "SLURM_NNODES", "SLURM_CPUS", "SLURM_TASKS_PER_NODE", "SLURM_CLUSTER_NAME",
                "OMP_")
ENV_NAMES = ("LD_LIBRARY_PATH", "PATH", "SLURM_NODELIST", "SLURM_PARTITION")
_SECRET = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|_KEY$|^KEY", re.I)


def relevant_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment variables that can change an MPI measurement (no secrets)."""
    env = os.environ if env is None else env
    return {k: v for k, v in sorted(env.items())
            if (k.startswith(ENV_PREFIXES) or k in ENV_NAMES) and not _SECRET.search(k)}


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "cpu model", "Processor"):
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_revision() -> str | None:
    """HEAD of the source tree colltune runs from, '+dirty' with local changes."""
    from colltune.base.paths import repo_root

    root = repo_root()
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=30)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True, timeout=30)
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        return None


def host_info() -> dict[str, Any]:
    from colltune.mpi.launch import cores

    return {"host": socket.gethostname(), "cpu_model": cpu_model(), "cores": cores(),
            "cpus": os.cpu_count(), "os": f"{platform.system()} {platform.release()}"}


# ---------------------------------------------------------------------- writes


def upsert_study(conn: sqlite3.Connection, name: str, definition: dict | None = None,
                 description: str = "", source: str = "") -> int:
    """The id of study `name`, created or updated to this definition."""
    t = now()
    with transaction(conn):
        row = conn.execute("SELECT id FROM studies WHERE name = ?", (name,)).fetchone()
        text = json.dumps(definition, sort_keys=True) if definition is not None else None
        if row:
            conn.execute("UPDATE studies SET description = ?, source = ?, definition = ?, "
                         "updated_at = ? WHERE id = ?", (description, source, text, t, row[0]))
            return row[0]
        cur = conn.execute("INSERT INTO studies (name, description, source, definition, "
                           "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                           (name, description, source, text, t, t))
        return cur.lastrowid


def store_run(conn: sqlite3.Connection, *, kind: str = "sweep", study_id: int | None = None,
              mpi=None, launcher: str | None = None, launcher_command: str | None = None,
              command_line: list[str] | str | None = None, definition: dict | None = None,
              seed: int | None = None, shuffled: bool | None = None, round: int | None = None,
              units_planned: int | None = None, units_skipped: int | None = None,
              env: dict[str, str] | None = None, notes: list[str] | None = None,
              status: str = "running", platform=None) -> int:
    """Start a run (status 'running'); returns its id. Host, CPU, cores, colltune
    version and git revision are filled in here; `mpi` is an mpi.MPI. A simulated
    run (`mpi.simulated`) records its `platform` (colltune.platform.Platform): name,
    description and the simulator's version."""
    from colltune import __version__

    h = host_info()
    if isinstance(command_line, list):
        import shlex
        command_line = shlex.join(command_line)
    with transaction(conn):
        cur = conn.execute(
            """INSERT INTO runs (study_id, kind, round, status, host, cpu_model, cores, cpus, os,
               mpi_kind, mpi_version, mpi_banner, mpi_path, colltune_version, git_revision,
               launcher, launcher_command, command_line, environment, definition, seed,
               shuffled, units_planned, units_skipped, pid, started_at, notes)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
               ?, ?)""",
            (study_id, kind, round, status, h["host"], h["cpu_model"], h["cores"], h["cpus"],
             h["os"], getattr(mpi, "kind", None), getattr(mpi, "version", None),
             getattr(mpi, "banner", None), str(mpi.bindir) if mpi is not None else None,
             __version__, git_revision(), launcher, launcher_command, command_line,
             json.dumps(relevant_env(env)), json.dumps(definition, sort_keys=True)
             if definition is not None else None, seed,
             None if shuffled is None else int(shuffled), units_planned, units_skipped,
             os.getpid(), now(), json.dumps(notes or [])))
        if getattr(mpi, "simulated", False):
            conn.execute(
                "UPDATE runs SET simulated = 1, platform = ?, platform_description = ?, "
                "simulator = ? WHERE id = ?",
                (getattr(platform, "name", None),
                 json.dumps(platform.describe(), sort_keys=True, default=str)
                 if platform is not None else None, mpi.banner, cur.lastrowid))
        return cur.lastrowid


def finish_run(conn: sqlite3.Connection, run_id: int, status: str,
               notes: list[str] | None = None) -> None:
    with transaction(conn):
        conn.execute("UPDATE runs SET status = ?, finished_at = ? WHERE id = ?",
                     (status, now(), run_id))
        if notes is not None:
            conn.execute("UPDATE runs SET notes = ? WHERE id = ?", (json.dumps(notes), run_id))


def mark_stale_runs(conn: sqlite3.Connection, study_id: int | None = None) -> list[int]:
    """Runs of this host still 'running' whose process is gone become 'aborted'."""
    host = socket.gethostname()
    q = "SELECT id, pid FROM runs WHERE status = 'running' AND host = ?"
    args: list = [host]
    if study_id is not None:
        q += " AND study_id = ?"
        args.append(study_id)
    stale = []
    for rid, pid in conn.execute(q, args).fetchall():
        if pid and _alive(pid) and pid != os.getpid():
            continue
        stale.append(rid)
    if stale:
        with transaction(conn):
            conn.executemany("UPDATE runs SET status = 'aborted' WHERE id = ?",
                             [(r,) for r in stale])
    return stale


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie or a recycled pid of another program does not count
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        return b"python" in cmd or b"colltune" in cmd
    except OSError:
        return True


MEASUREMENT_COLUMNS = (
    "collective", "algorithm", "spec", "params", "np", "nodes", "ppn", "mapping", "rank_order",
    "size", "root", "dtype", "op", "timing", "iterations", "warmup", "rep_min_us", "mean_us",
    "median_us", "p90_us", "p99_us", "rep_max_us", "stddev_us", "valid_reps", "invalid",
    "rank_min_us", "rank_max_us", "window_us", "sleep_us", "time_budget_s", "valid", "fallback",
    "repetition", "round", "samples", "extra", "align", "load_level", "probe_us", "simulated")
_RECORD_SKIP = {"command", "mpi", "host", "samples_us", "params", "order"}
# record fields of older colltune versions -> their column now
_LEGACY_FIELDS = {"min_us": "rep_min_us", "max_us": "rep_max_us"}


def _measurement_row(rec: dict, defaults: dict) -> tuple:
    rec = {**{new: rec[old] for old, new in _LEGACY_FIELDS.items()
              if old in rec and new not in rec},
           **{k: v for k, v in rec.items() if k not in _LEGACY_FIELDS}}
    r = {**defaults, **{k: v for k, v in rec.items() if v is not None or k not in defaults}}
    if "order" in rec and "rank_order" not in rec:
        r["rank_order"] = rec["order"]
    row = {}
    for c in MEASUREMENT_COLUMNS:
        row[c] = r.get(c)
    row["params"] = json.dumps(parse_params(rec.get("params"), numbers=True), sort_keys=True)
    samples = rec.get("samples_us")
    row["samples"] = json.dumps(samples) if samples is not None else None
    if isinstance(row["valid"], bool):
        row["valid"] = int(row["valid"])
    row["simulated"] = 1 if row["simulated"] else 0
    extra = {k: v for k, v in rec.items()
             if k not in MEASUREMENT_COLUMNS and k not in _RECORD_SKIP}
    row["extra"] = json.dumps(extra, sort_keys=True, default=str) if extra else None
    for c in ("collective", "algorithm", "np", "size"):
        if row[c] is None:
            raise ValueError(f"record without '{c}': {rec}")
    return tuple(row[c] for c in MEASUREMENT_COLUMNS)


def store_measurements(conn: sqlite3.Connection, run_id: int, records: Iterable[dict], *,
                       unit_id: int | None = None, **defaults) -> int:
    """Store bench records (bench.run's dicts) of one run in one transaction.

    `defaults` fill fields the records lack: nodes, ppn, mapping, rank_order,
    repetition, round. Unknown record fields go to the `extra` JSON column,
    `samples_us` to `samples`. Returns the number stored.
    """
    rows = [_measurement_row(r, defaults) for r in records]
    cols = ", ".join(("run_id", "unit_id") + MEASUREMENT_COLUMNS)
    marks = ", ".join("?" * (len(MEASUREMENT_COLUMNS) + 2))
    with transaction(conn):
        conn.executemany(f"INSERT INTO measurements ({cols}) VALUES ({marks})",
                         [(run_id, unit_id) + row for row in rows])
    return len(rows)


def store_unit(conn: sqlite3.Connection, *, study_id: int, run_id: int, round: int, key: str,
               collective: str, np: int, nodes: int | None, ppn: int | None,
               mapping: str | None, rank_order: str | None, repetition: int | None,
               algorithms: list[str], library_spec: str | None, command: str | None,
               env: dict | None, notes: list[str] | None, started_at: str,
               seconds: float | None, records: list[dict]) -> int:
    """A launch of a sweep and its records, in one transaction; returns the unit id.

    sqlite3.IntegrityError when the unit is already stored (another sweep of the
    same study stored it meanwhile); nothing is written then."""
    with transaction(conn):
        cur = conn.execute(
            """INSERT INTO units (study_id, run_id, round, key, collective, np, nodes, ppn,
               mapping, rank_order, repetition, algorithms, library_spec, command, env, notes,
               started_at, finished_at, seconds)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (study_id, run_id, round, key, collective, np, nodes, ppn, mapping, rank_order,
             repetition, ",".join(algorithms), library_spec, command,
             json.dumps(env or {}, sort_keys=True), json.dumps(notes or []), started_at, now(),
             seconds))
        unit_id = cur.lastrowid
        store_measurements(conn, run_id, records, unit_id=unit_id, nodes=nodes, ppn=ppn,
                           mapping=mapping, rank_order=rank_order, repetition=repetition,
                           round=round)
        conn.execute("UPDATE runs SET units_done = units_done + 1 WHERE id = ?", (run_id,))
    return unit_id


def store_failure(conn: sqlite3.Connection, *, run_id: int, study_id: int | None = None,
                  round: int | None = None, key: str | None = None, collective: str | None = None,
                  np: int | None = None, nodes: int | None = None, ppn: int | None = None,
                  mapping: str | None = None, rank_order: str | None = None,
                  repetition: int | None = None, algorithms: list[str] | None = None,
                  library_spec: str | None = None, command: str | None = None,
                  returncode: int | None = None, timed_out: bool = False, error: str = "",
                  stderr: str = "", stdout: str = "", started_at: str | None = None,
                  seconds: float | None = None) -> int:
    keep = 20000  # characters of output kept (the end, where the error is)
    with transaction(conn):
        cur = conn.execute(
            """INSERT INTO failures (run_id, study_id, round, key, collective, np, nodes, ppn,
               mapping, rank_order, repetition, algorithms, library_spec, command, returncode,
               timed_out, error, stderr, stdout, started_at, seconds)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (run_id, study_id, round, key, collective, np, nodes, ppn, mapping, rank_order,
             repetition, ",".join(algorithms or []), library_spec, command, returncode,
             int(timed_out), error, (stderr or "")[-keep:], (stdout or "")[-keep:],
             started_at or now(), seconds))
        conn.execute("UPDATE runs SET units_failed = units_failed + 1 WHERE id = ?", (run_id,))
        return cur.lastrowid


def store_bench(records: list[dict], *, mpi, path: str | Path | None = None,
                argv: list[str] | None = None, notes: list[str] | None = None,
                platform=None) -> int:
    """What `colltune bench --db PATH` does: one run (kind 'bench') with its records.

    Local launches with the library's default placement: nodes 1, ppn = np.
    Returns the run id.
    """
    conn = open_db(path)
    try:
        command = records[0].get("command") if records else None
        run_id = store_run(conn, kind="bench", mpi=mpi, launcher="local",
                           launcher_command=command, command_line=argv or sys.argv,
                           notes=notes, platform=platform)
        with transaction(conn):
            for r in records:
                store_measurements(conn, run_id, [r], nodes=r.get("nodes", 1),
                                   ppn=r.get("ppn", r.get("np")))
            conn.execute("UPDATE runs SET status = 'done', finished_at = ?, units_done = ? "
                         "WHERE id = ?", (now(), len({r.get('np') for r in records}), run_id))
        return run_id
    finally:
        conn.close()


# ---------------------------------------------------------------------- reads


def stored_unit_keys(conn: sqlite3.Connection, study_id: int, round: int) -> set[str]:
    return {r[0] for r in conn.execute("SELECT key FROM units WHERE study_id = ? AND round = ?",
                                       (study_id, round))}


def failed_unit_keys(conn: sqlite3.Connection, study_id: int, round: int) -> set[str]:
    return {r[0] for r in conn.execute(
        "SELECT DISTINCT key FROM failures WHERE study_id = ? AND round = ?", (study_id, round))}


def study_id(conn: sqlite3.Connection, name: str) -> int | None:
    row = conn.execute("SELECT id FROM studies WHERE name = ?", (name,)).fetchone()
    return row[0] if row else None


def latest_round(conn: sqlite3.Connection, study_id: int) -> int:
    row = conn.execute("SELECT MAX(round) FROM runs WHERE study_id = ?", (study_id,)).fetchone()
    return row[0] or 1


def _as_list(v) -> list | None:
    if v is None:
        return None
    if isinstance(v, (list, tuple, set)):
        return list(v) or None
    return [v]


def _where(filters: dict[str, Any]) -> tuple[str, list]:
    clauses, args = [], []
    for col, val in filters.items():
        vals = _as_list(val)
        if vals is None:
            continue
        ranges = [v for v in vals if isinstance(v, tuple)]  # (low, high), inclusive
        plain = [v for v in vals if not isinstance(v, tuple)]
        parts = []
        if plain:
            parts.append(f"{col} IN ({', '.join('?' * len(plain))})")
            args += plain
        for lo, hi in ranges:
            parts.append(f"({col} >= ? AND {col} <= ?)")
            args += [lo if lo != float("-inf") else -1e308, hi if hi != float("inf") else 1e308]
        clauses.append("(" + " OR ".join(parts) + ")")
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


def studies_frame(conn: sqlite3.Connection):
    """Studies with their runs, stored launches, failures and points (pandas)."""
    import pandas as pd

    q = """
    SELECT s.name AS study, s.description,
           (SELECT COUNT(*) FROM runs r WHERE r.study_id = s.id) AS runs,
           (SELECT COUNT(*) FROM units u WHERE u.study_id = s.id) AS launches,
           (SELECT COUNT(*) FROM failures f WHERE f.study_id = s.id) AS failures,
           (SELECT COUNT(*) FROM measurements m JOIN runs r ON m.run_id = r.id
             WHERE r.study_id = s.id) AS points,
           (SELECT MAX(r.round) FROM runs r WHERE r.study_id = s.id) AS rounds,
           (SELECT r.status FROM runs r WHERE r.study_id = s.id ORDER BY r.id DESC LIMIT 1)
             AS last_status,
           (SELECT MAX(r.started_at) FROM runs r WHERE r.study_id = s.id) AS last_run
    FROM studies s ORDER BY s.name"""
    df = pd.read_sql_query(q, conn)
    bench = conn.execute("SELECT COUNT(*), MAX(started_at) FROM runs WHERE study_id IS NULL"
                         ).fetchone()
    if bench[0]:
        pts = conn.execute("SELECT COUNT(*) FROM measurements m JOIN runs r ON m.run_id = r.id "
                           "WHERE r.study_id IS NULL").fetchone()[0]
        df = pd.concat([df, pd.DataFrame([{
            "study": "(bench)", "description": "colltune bench --db", "runs": bench[0],
            "launches": None, "failures": 0, "points": pts, "rounds": None,
            "last_status": None, "last_run": bench[1]}])], ignore_index=True)
    return df


POINT_COLUMNS = (
    "study", "run_id", "round", "host", "mpi_kind", "mpi_version", "collective", "algorithm",
    "spec", "params", "np", "nodes", "ppn", "mapping", "rank_order", "repetition", "size", "root",
    "dtype", "op", "timing", "iterations", "warmup", "rep_min_us", "mean_us", "median_us",
    "p90_us", "p99_us", "rep_max_us", "stddev_us", "valid_reps", "invalid", "rank_min_us",
    "rank_max_us", "window_us", "sleep_us", "time_budget_s", "valid", "fallback", "align",
    "load_level", "probe_us", "simulated", "started_at", "command")


def measurements_frame(conn: sqlite3.Connection, *, study=None, collective=None, algorithm=None,
                       np=None, size=None, mapping=None, rank_order=None, run_id=None,
                       round=None, host=None, samples: bool = False,
                       include_simulated: bool = False, only_simulated: bool = False):
    """Points as a pandas DataFrame, one row per stored measurement, with the study
    name, host and MPI of their run and the command of their launch. Every filter
    takes a value or a list, whose items may be (low, high) tuples: inclusive ranges
    (units.parse_selection); `study="(bench)"` selects `colltune bench --db` runs.
    `algorithm` matches the algorithm name or the spec as written. `cores` is the
    run's (evidence.oversubscribed compares it with `ppn`); `unit_id` the launch's, so
    that evidence.py pairs only algorithms measured in the same launch (the MPI
    library's algorithms run in launches of their own: compared unpaired).

    Simulated points (SimGrid SMPI) are left out unless `include_simulated`;
    `only_simulated` selects them alone. `platform` and `simulator` say where a
    simulated point was simulated."""
    import pandas as pd

    filters = {"m.collective": collective, "m.np": np, "m.size": size, "m.mapping": mapping,
               "m.rank_order": rank_order, "m.run_id": run_id, "m.round": round, "r.host": host}
    where, args = _where(filters)
    extra = []
    studies = _as_list(study)
    if studies:
        named = [s for s in studies if s != "(bench)"]
        parts = []
        if named:
            parts.append(f"s.name IN ({', '.join('?' * len(named))})")
            args += named
        if "(bench)" in studies:
            parts.append("r.study_id IS NULL")
        extra.append("(" + " OR ".join(parts) + ")")
    algos = _as_list(algorithm)
    if algos:
        marks = ", ".join("?" * len(algos))
        extra.append(f"(m.algorithm IN ({marks}) OR m.spec IN ({marks}))")
        args += algos + algos
    if only_simulated:
        extra.append("m.simulated = 1")
    elif not include_simulated:
        extra.append("m.simulated = 0")
    if extra:
        where = (where + " AND " if where else " WHERE ") + " AND ".join(extra)
    cols = ["s.name AS study", "m.run_id", "m.round", "r.host", "r.mpi_kind", "r.mpi_version"]
    cols += [f"m.{c}" for c in POINT_COLUMNS[6:-2]]
    cols += ["r.started_at", "COALESCE(u.command, r.launcher_command) AS command",
             "r.cores", "m.unit_id", "r.platform", "r.simulator"]
    if samples:
        cols.append("m.samples")
    q = (f"SELECT {', '.join(cols)} FROM measurements m JOIN runs r ON m.run_id = r.id "
         f"LEFT JOIN studies s ON r.study_id = s.id LEFT JOIN units u ON m.unit_id = u.id"
         f"{where} ORDER BY s.name, m.collective, m.algorithm, m.spec, m.np, m.mapping, "
         f"m.rank_order, m.size, m.repetition, m.id")
    df = pd.read_sql_query(q, conn, params=args)
    df["study"] = df["study"].fillna("(bench)")
    return df


def summary_frame(points):
    """Median over repetitions per point (study, collective, spec, np, mapping, order,
    size): reps, median of medians, min, the spread between repetitions, and whether
    the point was measured oversubscribed (evidence.oversubscribed)."""
    import pandas as pd

    if points.empty:
        return points
    keys = ["study", "mpi_kind", "collective", "spec", "np", "nodes", "mapping", "rank_order",
            "size"]
    if "platform" in points.columns:  # simulated points: one group per platform
        keys.insert(2, "platform")
    from colltune.analysis.evidence import oversubscribed

    df = points.copy()
    df["oversubscribed"] = oversubscribed(df).to_numpy()
    for k in keys:
        df[k] = df[k].astype(object).where(df[k].notna(), "")
    g = df.groupby(keys, sort=True, dropna=False)
    out = g.agg(reps=("median_us", "size"), median_us=("median_us", "median"),
                rep_min_us=("rep_min_us", "min"), max_median_us=("median_us", "max"),
                min_median_us=("median_us", "min"),
                oversubscribed=("oversubscribed", "any")).reset_index()
    out["spread"] = (out["max_median_us"] - out["min_median_us"]) / out["median_us"]
    out = out.drop(columns=["max_median_us", "min_median_us"])
    return pd.DataFrame(out)


def failures_frame(conn: sqlite3.Connection, *, study=None):
    import pandas as pd

    where, args = _where({"s.name": study})
    q = ("SELECT s.name AS study, f.run_id, f.round, f.collective, f.np, f.mapping, "
         "f.rank_order, f.repetition, f.algorithms, f.library_spec, f.returncode, f.timed_out, "
         "f.error, f.command, f.stderr, f.started_at, f.seconds FROM failures f "
         f"LEFT JOIN runs r ON f.run_id = r.id LEFT JOIN studies s ON f.study_id = s.id{where} "
         "ORDER BY f.id")
    return pd.read_sql_query(q, conn, params=args)


def runs_frame(conn: sqlite3.Connection, *, study=None):
    import pandas as pd

    where, args = _where({"s.name": study})
    q = ("SELECT r.id AS run_id, COALESCE(s.name, '(bench)') AS study, r.kind, r.round, "
         "r.status, r.host, r.cpu_model, r.cores, r.mpi_kind, r.mpi_version, r.colltune_version, "
         "r.git_revision, r.launcher, r.seed, r.units_planned, r.units_skipped, r.units_done, "
         "r.units_failed, r.started_at, r.finished_at, r.command_line FROM runs r "
         f"LEFT JOIN studies s ON r.study_id = s.id{where} ORDER BY r.id")
    return pd.read_sql_query(q, conn, params=args)


# ---------------------------------------------------------------------- tunings


def store_tuning(conn: sqlite3.Connection, *, study: str, round: int | None, target: str,
                 collectives: list[str] | None, include_oversubscribed: bool, rules: str,
                 summary: list[dict], points: dict | None = None,
                 notes: list[str] | None = None, argv: list[str] | None = None) -> int:
    """What `colltune tune` made of a study (the rules file's text, the quality summary
    and per-point figures as JSON), in one transaction; returns the row id."""
    from colltune import __version__

    with transaction(conn):
        cur = conn.execute(
            """INSERT INTO tunings (study_id, study, round, target, collectives,
               include_oversubscribed, created_at, colltune_version, git_revision, command_line,
               rules, summary, points, notes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (study_id(conn, study), study, round, target, ",".join(collectives or []) or None,
             int(include_oversubscribed), now(), __version__, git_revision(),
             " ".join(argv if argv is not None else sys.argv), rules,
             json.dumps(summary), json.dumps(points) if points is not None else None,
             json.dumps(notes or [])))
        return cur.lastrowid


def tunings_frame(conn: sqlite3.Connection, *, study=None, target=None):
    """The stored tunings (newest last), without the per-point JSON."""
    import pandas as pd

    where, args = _where({"study": study, "target": target})
    return pd.read_sql_query(
        "SELECT id, study, round, target, collectives, include_oversubscribed, created_at, "
        f"colltune_version, git_revision, rules, summary, notes FROM tunings{where} ORDER BY id",
        conn, params=args)
