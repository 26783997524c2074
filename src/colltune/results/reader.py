"""THE reader of the results database: measurements, runs, studies, launches,
failures, ping-pong points and tunings (results/db.py owns the file, results/store.py
writes it). Nothing else in colltune sends SQL to read it.

The measurements, three ways:
  measurements_frame  a colltune database's points with their run's provenance, with
                      the filters of `colltune results` and `export` (a connection)
  round_frame         one round of one study, as `colltune tune` decides from it
  read_measurements   any SQLite file with a `measurements` table (fit and report
                      also read bare tables): every column there is, joined with
                      `runs` and `studies` where the file has them (a path)
and `pingpong_points` the ping-pong points of a file, `read_tables` whole tables.
`oversubscribed` is the one test of "more processes on a node than it has cores",
from the stored columns (analysis.evidence uses it too).

pandas is imported where a frame is made, not with this module."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from colltune.base.collectives import COLLECTIVES, measurement_kind
from colltune.base.errors import did_you_mean
from colltune.base.units import parse_selection
from colltune.mpi.placement import MAPPINGS
from colltune.results.db import DamagedError, DBError, kind_sql, open_reader

# ------------------------------------------------------------------ studies and runs


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


def study_names(conn: sqlite3.Connection) -> list[str]:
    """The stored studies' names, sorted."""
    return [r[0] for r in conn.execute("SELECT name FROM studies ORDER BY name")]


def study_definition(conn: sqlite3.Connection, study_id: int) -> str | None:
    """The stored definition of a study (JSON text), None when it has none."""
    row = conn.execute("SELECT definition FROM studies WHERE id = ?", (study_id,)).fetchone()
    return row[0] if row else None


def run_count(conn: sqlite3.Connection, study_id: int) -> int:
    """How many runs a study has (whatever their status)."""
    return conn.execute("SELECT COUNT(*) FROM runs WHERE study_id = ?",
                        (study_id,)).fetchone()[0]


# ------------------------------------------------------------------ the names filters take

_WORDS = {"study": "study", "collective": "collective", "algorithm": "algorithm",
          "mapping": "mapping"}


def stored_names(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """What the name filters (--study, --coll, --algo, --mapping) can name in this
    database: its studies ('(bench)' for runs outside any), and the collectives,
    algorithms (names and specs as written) and mappings of its points, simulated
    ones included. A filter whose column the database lacks is left out."""
    tables = _table_names(conn)
    out: dict[str, set[str]] = {}
    if "measurements" in tables:
        cols = _table_columns(conn, "measurements")

        def distinct(*columns: str) -> set[str]:
            return {str(r[0]) for c in columns if c in cols
                    for r in conn.execute(f'SELECT DISTINCT "{c}" FROM measurements')
                    if r[0] is not None}
        for key, columns in (("collective", ("collective",)), ("mapping", ("mapping",)),
                             ("algorithm", ("algorithm", "spec"))):
            if any(c in cols for c in columns):
                out[key] = distinct(*columns)
    if "studies" in tables and "name" in _table_columns(conn, "studies"):
        out["study"] = set(study_names(conn))
    return out


def check_names(conn: sqlite3.Connection, where: str = "the database", *, study=None,
                collective=None, algorithm=None, mapping=None) -> None:
    """Refuse a filter value that names nothing there is: a misspelt collective or
    mapping, an algorithm or study the database does not hold. DBError "unknown
    collective 'bcst' (did you mean 'bcast'?); valid: ..." (a valid name that matches
    no point passes: the reader then finds none). Values: a name, a comma-separated
    text or a list."""
    try:
        stored = stored_names(conn)
    except sqlite3.DatabaseError:  # not a database: the reading that follows says so
        return
    valid = {"collective": set(COLLECTIVES), "mapping": set(MAPPINGS)}
    for key, given in (("study", study), ("collective", collective),
                       ("algorithm", algorithm), ("mapping", mapping)):
        if key not in stored:
            continue
        values = [x.strip() for v in (_as_list(given) or []) for x in str(v).split(",")]
        known = stored[key] | valid.get(key, set())
        for v in filter(None, values):
            if v in known or (key == "study" and v == "(bench)"):
                continue
            if key in valid:  # a fixed vocabulary
                raise DBError(f"unknown {_WORDS[key]} '{v}'{did_you_mean(v, known)}; valid: "
                              + ", ".join(sorted(known, key=_valid_order(key))))
            names = sorted(known)  # what this database holds
            listing = (", ".join(names[:15]) + (f", ... ({len(names)} in all)"
                                                if len(names) > 15 else "")) or "none"
            raise DBError(f"unknown {_WORDS[key]} '{v}' in {where}{did_you_mean(v, known)}; "
                          f"it holds: {listing}")


def check_names_at(db_path: str | Path, **given) -> None:
    """`check_names` on the database at `db_path` (any SQLite file with a
    `measurements` table); a file that cannot be read is left to the reader."""
    try:
        conn = open_reader(db_path)
    except (DBError, sqlite3.Error):
        return
    try:
        check_names(conn, str(db_path), **given)
    finally:
        conn.close()


def _valid_order(key: str):
    order = list(COLLECTIVES if key == "collective" else MAPPINGS)
    return lambda name: (order.index(name) if name in order else len(order), name)


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
    bench = conn.execute("SELECT COUNT(*), MAX(started_at), GROUP_CONCAT(DISTINCT kind) FROM runs "
                         "WHERE study_id IS NULL").fetchone()
    if bench[0]:
        pts = conn.execute("SELECT COUNT(*) FROM measurements m JOIN runs r ON m.run_id = r.id "
                           "WHERE r.study_id IS NULL").fetchone()[0]
        df = pd.concat([df, pd.DataFrame([{
            "study": "(bench)", "runs": bench[0],
            "description": "runs outside a study: " + ", ".join(
                RUN_KINDS.get(k, k) for k in sorted(str(bench[2] or "bench").split(","))),
            "launches": None, "failures": 0, "points": pts, "rounds": None,
            "last_status": None, "last_run": bench[1]}])], ignore_index=True)
    return df


# runs outside any study, by kind (the (bench) line of the studies table)
RUN_KINDS = {"bench": "colltune bench --db",
             "pingpong": "the cost model's ping-pong (colltune quick)"}

POINT_COLUMNS = (
    "study", "run_id", "round", "host", "mpi_kind", "mpi_version", "collective", "kind",
    "algorithm", "spec", "params", "np", "nodes", "ppn", "mapping", "rank_order", "repetition",
    "size", "root", "dtype", "op", "timing", "iterations", "warmup", "rep_min_us", "mean_us",
    "median_us", "p90_us", "p99_us", "rep_max_us", "stddev_us", "valid_reps", "invalid",
    "rank_min_us", "rank_max_us", "window_us", "sleep_us", "time_budget_s", "valid", "fallback",
    "align", "load_level", "probe_us", "simulated", "load1_before", "load1_after", "started_at",
    "command")


def measurements_frame(conn: sqlite3.Connection, *, study=None, collective=None, algorithm=None,
                       np=None, size=None, mapping=None, rank_order=None, run_id=None,
                       round=None, host=None, kind=None, samples: bool = False,
                       include_simulated: bool = False, only_simulated: bool = False):
    """Points as a pandas DataFrame, one row per stored measurement, with the study
    name, host and MPI of their run and the command of their launch. Every filter
    takes a value or a list, whose items may be (low, high) tuples: inclusive ranges
    (units.parse_selection); `study="(bench)"` selects `colltune bench --db` runs.
    `algorithm` matches the algorithm name or the spec as written. `cores` is the
    run's (`oversubscribed` compares it with `ppn`); `unit_id` the launch's, so
    that evidence.py pairs only algorithms measured in the same launch (the MPI
    library's algorithms run in launches of their own: compared unpaired).

    Simulated points (SimGrid SMPI) are left out unless `include_simulated`;
    `only_simulated` selects them alone. `platform` and `simulator` say where a
    simulated point was simulated. `kind` selects points by what they measure
    (base.collectives.MEASUREMENT_KINDS: 'collective', 'pingpong', 'heat', ...)."""
    import pandas as pd

    filters = {"m.collective": collective, "m.kind": kind, "m.np": np, "m.size": size,
               "m.mapping": mapping, "m.rank_order": rank_order, "m.run_id": run_id,
               "m.round": round, "r.host": host}
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
    the point was measured oversubscribed (`oversubscribed`)."""
    import pandas as pd

    if points.empty:
        return points
    keys = ["study", "mpi_kind", "collective", "spec", "np", "nodes", "mapping", "rank_order",
            "size"]
    if "platform" in points.columns:  # simulated points: one group per platform
        keys.insert(2, "platform")
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


def tunings_frame(conn: sqlite3.Connection, *, study=None, target=None):
    """The stored tunings (newest last), without the per-point JSON."""
    import pandas as pd

    where, args = _where({"study": study, "target": target})
    return pd.read_sql_query(
        "SELECT id, study, round, target, collectives, include_oversubscribed, created_at, "
        f"colltune_version, git_revision, rules, summary, notes FROM tunings{where} ORDER BY id",
        conn, params=args)


# ------------------------------------------------------------------ kinds of points


def measurement_kinds(df):
    """What each row of a frame of points measures (base.collectives.MEASUREMENT_KINDS),
    as a pandas Series: its `kind` column where the frame has one (every colltune
    database from schema v8 on, and every frame read_measurements makes), else from its
    collective names. The one test of "this point is a collective's" readers use."""
    import pandas as pd

    if "kind" in df.columns:
        return df["kind"].astype(object).where(df["kind"].notna(), "collective")
    if "collective" not in df.columns:
        return pd.Series("collective", index=df.index, dtype=object)
    return df["collective"].map(measurement_kind).astype(object)


# ------------------------------------------------------------------ oversubscription


def oversubscribed(df):
    """True for rows measured with more processes on a node than the node has cores.

    Processes per node: `ppn`, else `np` when the run used one node (`nodes` 1 or
    unknown); cores: `cores` (the run's, as the database records it). False where
    either is unknown; False for simulated points (SimGrid: no cores are shared).
    The one test of "oversubscribed" every module uses."""
    import numpy as np
    import pandas as pd

    if "cores" not in df.columns:
        return pd.Series(False, index=df.index)
    simulated = (pd.to_numeric(df["simulated"], errors="coerce").fillna(0).astype(bool)
                 if "simulated" in df.columns else pd.Series(False, index=df.index))
    cores = pd.to_numeric(df["cores"], errors="coerce")
    ppn = (pd.to_numeric(df["ppn"], errors="coerce") if "ppn" in df.columns
           else pd.Series(np.nan, index=df.index))
    if "np" in df.columns:
        nodes = (pd.to_numeric(df["nodes"], errors="coerce") if "nodes" in df.columns
                 else pd.Series(np.nan, index=df.index))
        one_node = nodes.isna() | (nodes == 1)
        ppn = ppn.where(ppn.notna() | ~one_node, pd.to_numeric(df["np"], errors="coerce"))
    return ((ppn > cores) & ~simulated).fillna(False).astype(bool)


# ------------------------------------------------------------------ one round of a study


def measured_rounds(conn: sqlite3.Connection, study_id: int,
                    include_simulated: bool = False) -> list[int]:
    """The rounds of a study that hold points, ascending; simulated points count only
    with `include_simulated`."""
    sim = "" if include_simulated else " AND m.simulated = 0"
    return [r[0] for r in conn.execute(
        "SELECT DISTINCT m.round FROM measurements m JOIN runs r ON m.run_id = r.id "
        f"WHERE r.study_id = ? AND m.round IS NOT NULL{sim} ORDER BY m.round", (study_id,))]


def simulated_count(conn: sqlite3.Connection, study_id: int) -> int:
    """How many simulated points (SimGrid SMPI) a study holds."""
    return conn.execute(
        "SELECT COUNT(*) FROM measurements m JOIN runs r ON m.run_id = r.id "
        "WHERE r.study_id = ? AND m.simulated = 1", (study_id,)).fetchone()[0]


def round_frame(conn: sqlite3.Connection, study_id: int, round: int,
                include_simulated: bool = False):
    """The points of one round of a study as `colltune tune` takes them (pandas), one
    row per stored measurement in the order stored, with the launch (`unit_id`) each
    came from and the run's `cores`, MPI kind and version. Simulated points only with
    `include_simulated`."""
    import pandas as pd

    sim = "" if include_simulated else " AND m.simulated = 0"
    return pd.read_sql_query(
        "SELECT s.name AS study, m.run_id, m.unit_id, m.round, m.repetition, m.collective, "
        "m.algorithm, m.spec, m.params, m.np, m.nodes, m.ppn, m.mapping, m.size, m.median_us, "
        "m.valid, m.load_level, m.probe_us, m.simulated, r.cores, r.mpi_kind, r.mpi_version "
        "FROM measurements m "
        "JOIN runs r ON m.run_id = r.id JOIN studies s ON r.study_id = s.id "
        f"WHERE s.id = ? AND m.round = ?{sim} ORDER BY m.id", conn, params=(study_id, round))


# ------------------------------------------------------------------ any SQLite file

HEAVY_COLUMNS = ("samples",)  # raw samples (JSON), not needed by the models


def _table_names(con: sqlite3.Connection) -> set[str]:
    return {r[0] for r in con.execute(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


def _table_columns(con: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]


def _key(columns: list[str], *candidates: str) -> str | None:
    for c in candidates:
        if c in columns:
            return c
    return None


def read_measurements(db_path: str | Path, study: str | None = None, *,
                      include_simulated: bool = False, only_simulated: bool = False):
    """The `measurements` table of a results database as a DataFrame (pandas).

    Joins `runs` (on `run_id`) and `studies` (on `study_id`) when the database has
    them, so that each row carries its run's provenance (host, MPI, ...) and its
    study name in a `study` column. Columns that clash with a measurement column
    keep the measurement's name and get the table's suffix (`host_run`).
    Tolerates any schema that has a `measurements` table: only the columns present
    are read (the raw `samples` never); a colltune file without the points' `kind`
    (before schema v8) gets it from the collective names (measurement_kinds), a bare
    table keeps its own columns. `study` selects one study by name (or id).
    Simulated points (SimGrid SMPI, column `simulated`) are left out unless
    `include_simulated`; `only_simulated` keeps them alone. Raises DBError when the
    file, the table or the study is missing (the message says which)."""
    import pandas as pd

    path = Path(db_path)
    if not path.is_file():
        raise DBError(f"no results database at {path}")
    try:
        con = open_reader(path)
    except sqlite3.Error as exc:
        raise DBError(f"cannot open {path}: {exc}") from exc
    try:
        try:
            tables = _table_names(con)
        except sqlite3.DatabaseError as exc:
            raise DBError(f"{path} is not an SQLite database: {exc}") from exc
        if "measurements" not in tables:
            raise DBError(f"{path} has no 'measurements' table (tables: "
                          f"{', '.join(sorted(tables)) or 'none'})")
        joined_runs = False
        mcols = [c for c in _table_columns(con, "measurements") if c not in HEAVY_COLUMNS]
        df = pd.read_sql_query(
            f"SELECT {', '.join(chr(34) + c + chr(34) for c in mcols)} FROM measurements", con)
        if "kind" not in df.columns and "collective" in df.columns and "runs" in tables \
                and "run_id" in df.columns:  # colltune before v8: the points' kind, not
            df["kind"] = measurement_kinds(df).to_numpy()  # the run's (kind_run below)
            mcols.append("kind")
        if "runs" in tables and "run_id" in df.columns:
            rcols = _table_columns(con, "runs")
            rkey = _key(rcols, "run_id", "id")
            if rkey:
                runs = pd.read_sql_query("SELECT * FROM runs", con)
                runs = runs.rename(columns={c: f"{c}_run" for c in runs.columns
                                            if c in mcols and c != rkey})
                if rkey != "run_id":
                    runs = runs.rename(columns={rkey: "run_id"})
                df = df.merge(runs, on="run_id", how="left")
                joined_runs = True
        if "studies" in tables and "study_id" in df.columns:
            scols = _table_columns(con, "studies")
            skey = _key(scols, "study_id", "id")
            sname = _key(scols, "name", "study", "title")
            if skey and sname:
                studies = pd.read_sql_query(
                    f'SELECT "{skey}" AS study_id, "{sname}" AS study_name FROM studies', con)
                df = df.merge(studies, on="study_id", how="left")
                if "study" not in df.columns:
                    df = df.rename(columns={"study_name": "study"})
    finally:
        con.close()
    if "study" not in df.columns:
        for alt in ("study_run", "study_name", "study_id"):
            if alt in df.columns:
                df["study"] = df[alt]
                break
    if joined_runs and "study" in df.columns:
        # runs outside any study: `colltune bench --db` (measurements_frame names them so too)
        df["study"] = df["study"].astype(object).where(df["study"].notna(), "(bench)")
    if study is not None:
        if "study" not in df.columns:
            raise DBError(f"{path} records no studies: drop --study")
        sel = df["study"].astype(str) == str(study)
        if not sel.any():
            known = sorted(df["study"].dropna().astype(str).unique())
            raise DBError(f"no measurements of study '{study}' in {path}"
                          f"{did_you_mean(study, known)}; studies: {', '.join(known) or 'none'}")
        df = df[sel]
    if "simulated" in df.columns:  # after the study's check: a simulated study exists
        sim = pd.to_numeric(df["simulated"], errors="coerce").fillna(0).astype(bool)
        if only_simulated:
            df = df[sim]
        elif not include_simulated:
            df = df[~sim]
    elif only_simulated:
        df = df.iloc[0:0]
    return df


def read_selection(db_path: str | Path, study: str | None = None, *, collective=None,
                   algorithm=None, mapping=None, nps: str | None = None,
                   sizes: str | None = None, include_simulated: bool = False,
                   only_simulated: bool = False, allow_empty: bool = False):
    """The measurements of a selection as the commands' options give it (fit, model,
    plot, report): names (a name, a comma-separated text or a list; a misspelt one is
    refused, not taken for an empty selection), `nps` and `sizes` as --np and --size
    take them (units.parse_selection: '2,4', '2:8', '8,64K:1M', open ends). Rows keep
    their index in read_measurements' frame. DBError when the selection is empty
    (unless `allow_empty`), saying so when it holds only simulated points."""
    import pandas as pd

    try:
        np_sel = parse_selection(nps, "--np")
        size_sel = parse_selection(sizes, "--size", sizes=True)
    except ValueError as exc:
        raise DBError(str(exc)) from None
    check_names_at(db_path, collective=collective, algorithm=algorithm, mapping=mapping)

    def chosen(simulated: bool, alone: bool):
        df = read_measurements(db_path, study, include_simulated=simulated,
                               only_simulated=alone).reset_index(drop=True)
        for col, given in (("collective", collective), ("algorithm", algorithm),
                           ("mapping", mapping)):
            names = [x.strip() for v in (_as_list(given) or []) for x in str(v).split(",")
                     if x.strip()]
            if given is None:
                continue
            if col not in df.columns:
                raise DBError(f"the measurements have no column '{col}' to filter on")
            df = df[df[col].astype(str).isin(names)]
        for col, sel in (("np", np_sel), ("size", size_sel)):
            if sel:
                values = pd.to_numeric(df[col], errors="coerce")
                keep = pd.Series(False, index=df.index)
                for lo, hi in sel:
                    keep |= (values >= lo) & (values <= hi)
                df = df[keep]
        return df

    df = chosen(include_simulated, only_simulated)
    if df.empty and not allow_empty and not include_simulated and not only_simulated:
        sim = chosen(False, True)
        if not sim.empty:
            raise DBError(f"the selection holds no measurements, only {len(sim)} simulated "
                          "points (--include-simulated uses them)")
    if df.empty and not allow_empty:
        raise DBError("the selection holds no measurements")
    return df


def pingpong_points(db_path):
    """Ping-pong records stored in the results database, if it keeps any (pandas;
    None when it keeps none or cannot be read): a table of their own (`pingpong`,
    `p2p`, ...) or the measured (not simulated) `pingpong`/`p2p` points of
    `measurements`."""
    import pandas as pd

    try:
        con = open_reader(db_path)
    except DamagedError:
        raise
    except (sqlite3.Error, DBError):
        return None
    try:
        tables = _table_names(con)
        for name in ("pingpong", "p2p", "pingpong_measurements", "p2p_measurements"):
            if name in tables:
                df = pd.read_sql_query(f'SELECT * FROM "{name}"', con)
                if {"size", "median_us"} <= set(df.columns) and len(df):
                    if "kind" in df.columns and (df["kind"] == "pingpong").any():
                        df = df[df["kind"] == "pingpong"]
                    return df
        if "measurements" in tables:
            cols = _table_columns(con, "measurements")
            if "kind" in cols or "collective" in cols:
                kind = "kind" if "kind" in cols else kind_sql()
                sim = " AND simulated = 0" if "simulated" in cols else ""  # measured only
                keep = ", ".join(f'"{c}"' for c in cols if c != "kind")  # the records' own
                df = pd.read_sql_query(f"SELECT {keep} FROM measurements "
                                       f"WHERE {kind} IN ('pingpong', 'p2p'){sim} ORDER BY rowid",
                                       con)
                if len(df):
                    return df
    except (sqlite3.Error, pd.errors.DatabaseError):
        return None
    finally:
        con.close()
    return None


def read_tables(db_path, names) -> dict:
    """Whole tables of a results database (or any SQLite file) by name, as DataFrames
    (pandas): those of `names` the file has. {} when it cannot be read."""
    import pandas as pd

    out = {}
    try:
        con = open_reader(db_path)
        try:
            tables = _table_names(con)
            for name in names:
                if name in tables:
                    out[name] = pd.read_sql_query(f'SELECT * FROM "{name}"', con)
        finally:
            con.close()
    except DamagedError:
        raise
    except (sqlite3.Error, pd.errors.DatabaseError, DBError):
        return {}
    return out


def app_comparisons(conn: sqlite3.Connection) -> list[dict]:
    """The application comparisons (`colltune run --compare`), newest first: the run's
    provenance, its summary (JSON decoded) and its runs of the program in order."""
    out = []
    for row in conn.execute(
            "SELECT id, status, host, cores, mpi_banner, command_line, started_at, "
            "finished_at, summary, environment FROM runs WHERE kind = 'app-compare' "
            "ORDER BY id DESC"):
        rid, status, host, cores, mpi, cmd, start, end, summary, env = row
        runs = [dict(zip(("position", "pair", "arm", "rules_file", "rules_sha256", "command",
                          "started_at", "wall_s", "metric", "returncode"), r))
                for r in conn.execute(
                    "SELECT position, pair, arm, rules_file, rules_sha256, command, started_at, "
                    "wall_s, metric, returncode FROM app_runs WHERE run_id = ? ORDER BY "
                    "position", (rid,))]
        out.append({"id": rid, "status": status, "host": host, "cores": cores, "mpi": mpi,
                    "command_line": cmd, "started_at": start, "finished_at": end,
                    "summary": json.loads(summary) if summary else None,
                    "environment": json.loads(env) if env else {}, "runs": runs})
    return out


def study_app_comparisons(db_path, study: str | None) -> list[dict]:
    """The application comparisons that belong to a study (the report's "Application"
    section): those whose rules file (either side) is, byte for byte (SHA-256), the rules
    text a `colltune tune` of the study stored; every comparison when `study` is None.
    [] for a database that has none or cannot be read."""
    import hashlib

    try:
        con = open_reader(db_path)
    except DamagedError:
        raise
    except (sqlite3.Error, DBError):
        return []
    try:
        if "app_runs" not in _table_names(con):
            return []
        found = app_comparisons(con)
        if study is None:
            return found
        texts = [r[0] for r in con.execute("SELECT rules FROM tunings WHERE study = ?",
                                           (study,))]
    finally:
        con.close()
    mine = {hashlib.sha256(t.encode()).hexdigest() for t in texts if t}
    return [c for c in found if c["summary"]
            and {c["summary"].get("a_sha256"), c["summary"].get("b_sha256")} & mine]
