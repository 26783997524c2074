"""Writes to the results database (results/db.py owns the file and its schema).

Every write of a launch (its unit row and all its measurements) is one
transaction: a crash leaves the launch either stored whole or not at all."""

from __future__ import annotations

import json
import os
import shlex
import socket
import sqlite3
import sys
from pathlib import Path
from typing import Iterable

from colltune import __version__
from colltune.results import reader
from colltune.base.collectives import MEASUREMENT_KINDS, measurement_kind
from colltune.base.specs import parse_params
from colltune.mpi.backend import backend_for
from colltune.results.db import now, open_db, transaction
from colltune.results.provenance import git_revision, host_info, mpi_info, relevant_env

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
    h = host_info()
    m = mpi_info(mpi)
    if isinstance(command_line, list):
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
             h["os"], m["mpi_kind"], m["mpi_version"], m["mpi_banner"], m["mpi_path"],
             __version__, git_revision(), launcher, launcher_command, command_line,
             json.dumps(relevant_env(env)), json.dumps(definition, sort_keys=True)
             if definition is not None else None, seed,
             None if shuffled is None else int(shuffled), units_planned, units_skipped,
             os.getpid(), now(), json.dumps(notes or [])))
        if backend_for(mpi).simulated:
            conn.execute(
                "UPDATE runs SET simulated = 1, platform = ?, platform_description = ?, "
                "simulator = ? WHERE id = ?",
                (getattr(platform, "name", None),
                 json.dumps(platform.describe(), sort_keys=True, default=str)
                 if platform is not None else None, mpi.banner, cur.lastrowid))
        return cur.lastrowid


def set_launcher_command(conn: sqlite3.Connection, run_id: int, command: str) -> None:
    """The run's launcher command: a sweep's first launch, known once it ran."""
    with transaction(conn):
        conn.execute("UPDATE runs SET launcher_command = ? WHERE id = ?", (command, run_id))


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
    "repetition", "round", "samples", "extra", "align", "load_level", "probe_us", "simulated",
    "load1_before", "load1_after", "kind")
# a record's own `kind` (a driver's record type: 'pingpong', 'exchange', 'heat', ...) is
# not the point's kind (computed here: MEASUREMENT_KINDS): it stays in `extra`
_RECORD_OWN = {"kind"}
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
    row["kind"] = defaults.get("kind") or measurement_kind(row["collective"])
    if row["kind"] not in MEASUREMENT_KINDS:
        raise ValueError(f"unknown measurement kind '{row['kind']}' (valid: "
                         f"{', '.join(MEASUREMENT_KINDS)})")
    if isinstance(row["valid"], bool):
        row["valid"] = int(row["valid"])
    row["simulated"] = 1 if row["simulated"] else 0
    extra = {k: v for k, v in rec.items()
             if (k not in MEASUREMENT_COLUMNS or k in _RECORD_OWN) and k not in _RECORD_SKIP}
    row["extra"] = json.dumps(extra, sort_keys=True, default=str) if extra else None
    for c in ("collective", "algorithm", "np", "size"):
        if row[c] is None:
            raise ValueError(f"record without '{c}': {rec}")
    return tuple(row[c] for c in MEASUREMENT_COLUMNS)


def store_measurements(conn: sqlite3.Connection, run_id: int, records: Iterable[dict], *,
                       unit_id: int | None = None, **defaults) -> int:
    """Store bench records (bench.run's dicts) of one run in one transaction.

    `defaults` fill fields the records lack: nodes, ppn, mapping, rank_order,
    repetition, round; `kind` (base.collectives.MEASUREMENT_KINDS) sets the points'
    kind, else each record's collective name says it (measurement_kind). Unknown record
    fields go to the `extra` JSON column, `samples_us` to `samples`. Returns the number stored.
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
                platform=None, kind: str = "bench", status: str = "done") -> int:
    """What `colltune bench --db PATH` does: one run (kind 'bench') with its records;
    `status` 'interrupted' for what a bench stopped by Ctrl-C had measured.

    Launches with the library's default placement: the nodes and processes per node MPI
    saw (`nodes_seen`, `ppn_seen`: under `colltune cluster env` or a default hostfile,
    more than one node), else nodes 1, ppn = np.
    Returns the run id.
    """
    conn = open_db(path)
    try:
        command = records[0].get("command") if records else None
        run_id = store_run(conn, kind=kind, mpi=mpi, launcher="local",
                           launcher_command=command, command_line=argv or sys.argv,
                           notes=notes, platform=platform)
        with transaction(conn):
            for r in records:
                store_measurements(conn, run_id, [r],
                                   nodes=r.get("nodes_seen") or r.get("nodes", 1),
                                   ppn=r.get("ppn_seen") or r.get("ppn", r.get("np")))
            conn.execute("UPDATE runs SET status = ?, finished_at = ?, units_done = ? "
                         "WHERE id = ?",
                         (status, now(), len({r.get('np') for r in records}), run_id))
        return run_id
    finally:
        conn.close()


def store_pingpong(records: list[dict], *, mpi, path: str | Path | None = None,
                   argv: list[str] | None = None, notes: list[str] | None = None) -> int:
    """Ping-pong records (colltune-pingpong) as points `pingpong`/`pingpong` of a run of
    kind 'pingpong', with the run's provenance: what reader.pingpong_points gives the
    cost model's α and β, so that a report built later measures nothing."""
    rows = [{**r, "collective": "pingpong", "algorithm": "pingpong", "spec": "pingpong"}
            for r in records]
    return store_bench(rows, mpi=mpi, path=path, argv=argv, notes=notes, kind="pingpong")


# ---------------------------------------------------------------------- tunings


def store_tuning(conn: sqlite3.Connection, *, study: str, round: int | None, target: str,
                 collectives: list[str] | None, include_oversubscribed: bool, rules: str,
                 summary: list[dict], points: dict | None = None,
                 notes: list[str] | None = None, argv: list[str] | None = None) -> int:
    """What `colltune tune` made of a study (the rules file's text, the quality summary
    and per-point figures as JSON), in one transaction; returns the row id."""
    with transaction(conn):
        cur = conn.execute(
            """INSERT INTO tunings (study_id, study, round, target, collectives,
               include_oversubscribed, created_at, colltune_version, git_revision, command_line,
               rules, summary, points, notes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (reader.study_id(conn, study), study, round, target, ",".join(collectives or []) or None,
             int(include_oversubscribed), now(), __version__, git_revision(),
             " ".join(argv if argv is not None else sys.argv), rules,
             json.dumps(summary), json.dumps(points) if points is not None else None,
             json.dumps(notes or [])))
        return cur.lastrowid


def store_app_run(conn: sqlite3.Connection, run_id: int, *, position: int, pair: int, arm: str,
                  rules_file: str | None, rules_sha256: str | None, command: list[str],
                  started_at: str, wall_s: float | None, metric: float | None,
                  returncode: int | None) -> int:
    """One run of an application in a comparison (`colltune run --compare`)."""
    with transaction(conn):
        cur = conn.execute(
            """INSERT INTO app_runs (run_id, position, pair, arm, rules_file, rules_sha256,
               command, started_at, wall_s, metric, returncode)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (run_id, position, pair, arm, rules_file, rules_sha256, shlex.join(command),
             started_at, wall_s, metric, returncode))
        return cur.lastrowid


def set_run_summary(conn: sqlite3.Connection, run_id: int, summary: dict) -> None:
    """What a run concluded (an application comparison: the verdict), as JSON."""
    with transaction(conn):
        conn.execute("UPDATE runs SET summary = ? WHERE id = ?",
                     (json.dumps(summary, sort_keys=True), run_id))
