"""`colltune results` and `colltune export`: read the results database."""

from __future__ import annotations

from pathlib import Path

import click

from colltune.analysis.evidence import OVER_LEGEND, OVER_MARK, oversubscribed
from colltune.results import db as db_mod
from colltune.results import reader
from colltune.base.files import check_writable
from colltune.results.export import filters, frame_table, open_results, write_frame_atomic
from colltune.base.units import fmt_size
from ._common import command, db_option, err, fail, np_option, out, size_option


def _emit(df, fmt: str, title: str, columns: list[str], limit: int | None) -> None:
    if fmt == "csv":
        click.echo(df.to_csv(index=False), nl=False)
    elif fmt == "json":
        click.echo(df.to_json(orient="records", indent=2))
    else:
        out.print(frame_table(df, title, columns, limit))
        if limit and len(df) > limit:
            err.print(f"{len(df) - limit} more rows: --limit 0 shows all, --format csv "
                      "prints them, `colltune export` writes them", highlight=False)


FILTER_OPTIONS = [
    db_option(),
    click.option("--study", multiple=True, help="Study name(s); '(bench)' for bench runs."),
    click.option("--coll", help="Only these collectives (comma-separated)."),
    click.option("--algo", help="Only these algorithms (name or spec as written, "
                                "comma-separated)."),
    np_option("nps", selection=True),
    size_option("sizes", selection=True),
    click.option("--mapping", help="Only these mappings: core, socket, node (comma-separated)."),
    click.option("--order", help="seq, rr."),
    click.option("--run", "run_id", help="Run id(s)."),
    click.option("--round", "rnd", help="Round(s) of a study."),
    click.option("--include-simulated", is_flag=True,
                 help="Also list simulated points (SimGrid, --mpi smpi; column platform); "
                      "by default they are never mixed with measurements."),
]


def _with_filters(f):
    for opt in reversed(FILTER_OPTIONS):
        f = opt(f)
    return f


@command()
@_with_filters
@click.option("--all", "every", is_flag=True,
              help="Every stored measurement (each repetition) instead of the median per point.")
@click.option("--runs", is_flag=True, help="List the runs (host, MPI, version, status).")
@click.option("--failures", is_flag=True, help="List the failed launches with their error.")
@click.option("--format", "fmt", default="table", show_default=True,
              type=click.Choice(["table", "csv", "json"]))
@click.option("--limit", default=200, show_default=True, help="Rows in a table (0: all).")
def results(db_path, study, coll, algo, nps, sizes, mapping, order, run_id, rnd,
            include_simulated, every, runs,
            failures, fmt, limit) -> None:
    """Studies in the results database, or their points.

    Without filters: one line per study (runs, launches, failures, points).
    With filters (--study, --coll, ...): the points, median over repetitions,
    or each measurement with --all.
    """
    f = filters(study, coll, algo, nps, sizes, mapping, order, run_id, rnd)
    conn = open_results(db_path)
    try:
        _check_names(conn, db_path, f)
        if runs:
            df = reader.runs_frame(conn, study=f["study"])
            if fmt == "table":
                df["mpi"] = df["mpi_kind"].fillna("") + " " + df["mpi_version"].fillna("")
                df["git"] = df["git_revision"].fillna("").map(
                    lambda r: r[:10] + ("+dirty" if r.endswith("+dirty") else ""))
                skipped = df["units_skipped"].fillna(0).astype(int)
                df["launches"] = [f"{d} done, {f} failed, {s} skipped" for d, f, s in zip(
                    df["units_done"], df["units_failed"], skipped, strict=True)]
                cols = ["run_id", "study", "kind", "round", "status", "host", "mpi", "git",
                        "seed", "launches", "started_at"]
            else:
                cols = list(df.columns)
            _emit(df, fmt, "runs", cols, limit)
            return
        if failures:
            df = reader.failures_frame(conn, study=f["study"])
            if df.empty and fmt == "table":
                err.print("no failed launches", highlight=False)
                return
            df["error"] = df["error"].fillna("").str.slice(0, 300)
            _emit(df, fmt, "failed launches", ["study", "run_id", "collective", "np", "mapping",
                                               "repetition", "algorithms", "returncode",
                                               "timed_out", "error"], limit)
            return
        if not any(v for v in f.values()) and not every:
            df = reader.studies_frame(conn)
            if df.empty:
                err.print(f"no results in {db_path or db_mod.default_path()}", highlight=False)
                return
            _emit(df, fmt, "studies", ["study", "runs", "rounds", "launches", "failures",
                                       "points", "last_status", "last_run", "description"],
                  limit)
            return
        pts = reader.measurements_frame(conn, include_simulated=include_simulated, **f)
        if pts.empty:
            hidden = reader.measurements_frame(conn, only_simulated=True, **f)
            err.print("no points match" + (f" ({len(hidden)} simulated points do: "
                                           "--include-simulated lists them)"
                                           if not include_simulated and len(hidden) else ""),
                      highlight=False)
            return
        sim_cols = ["platform"] if include_simulated else []
        pts["oversubscribed"] = oversubscribed(pts).to_numpy()
        if fmt == "table" and pts["oversubscribed"].any():
            err.print(OVER_LEGEND, highlight=False)
        if every:
            if fmt == "table":
                pts["size"] = pts["size"].map(fmt_size)
                pts["np"] = [f"{n} {OVER_MARK}" if o else str(n)
                             for n, o in zip(pts["np"], pts["oversubscribed"])]
            _emit(pts, fmt, "measurements", ["study", "run_id", "collective", "spec", "np",
                                             "mapping", "rank_order", "repetition", "size",
                                             "median_us", "rep_min_us", "rep_max_us", "valid_reps",
                                             "fallback", *sim_cols], limit)
            return
        df = reader.summary_frame(pts)
        if fmt == "table":
            df["size"] = df["size"].map(fmt_size)
            df["np"] = [f"{n} {OVER_MARK}" if o else str(n)
                        for n, o in zip(df["np"], df["oversubscribed"])]
        _emit(df, fmt, "points: median over repetitions (µs); spread = (max - min) / median "
                       "of the repetitions' medians",
              ["study", "collective", "spec", "np", "nodes", "mapping", "rank_order", "size",
               "reps", "median_us", "rep_min_us", "spread", *sim_cols], limit)
    finally:
        conn.close()


def _check_names(conn, db_path, f: dict) -> None:
    """--study, --coll, --algo, --mapping name what there is (else one error line)."""
    reader.check_names(conn, str(db_path or db_mod.default_path()), study=f["study"],
                       collective=f["collective"], algorithm=f["algorithm"],
                       mapping=f["mapping"])


@command()
@_with_filters
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet"]),
              help="Output format (default: from the file name, else csv).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="File to write (atomically).")
@click.option("--summary", is_flag=True, help="The median over repetitions per point instead "
              "of every measurement.")
@click.option("--samples", is_flag=True, help="Include the raw samples (JSON) where stored.")
def export(db_path, study, coll, algo, nps, sizes, mapping, order, run_id, rnd,
           include_simulated, fmt, output, summary, samples) -> None:
    """Write points of the results database as CSV or Parquet.

    One row per measurement with its study, run, host, MPI library, placement and
    every statistic (or one row per point with --summary).
    """
    check_writable(output, "-o")
    f = filters(study, coll, algo, nps, sizes, mapping, order, run_id, rnd)
    conn = open_results(db_path)
    try:
        _check_names(conn, db_path, f)
        df = reader.measurements_frame(conn, samples=samples,
                                       include_simulated=include_simulated, **f)
    finally:
        conn.close()
    if summary:
        df = reader.summary_frame(df)
    else:
        df["oversubscribed"] = oversubscribed(df).to_numpy()
    path = Path(output)
    fmt = fmt or ("parquet" if path.suffix.lower() in (".parquet", ".pq") else "csv")
    try:
        write_frame_atomic(df, path, fmt)
    except ImportError as exc:
        fail(f"parquet needs pyarrow ({exc}); pip install pyarrow, or --format csv")
    except OSError as exc:  # the points stay in the database: nothing to keep
        fail(f"cannot write {path}: {exc.strerror or exc}")
    err.print(f"wrote {len(df)} rows to {path} ({fmt})", highlight=False)
