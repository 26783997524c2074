"""`colltune quick`: the main job."""

from __future__ import annotations


import sys
from pathlib import Path

import click

from colltune.analysis.evidence import versus_baseline
from colltune.analysis.points import latest_round, median_repetition
from colltune.results import db as db_mod
from colltune.results import reader, store
from colltune.base.errors import ColltuneError
from colltune.drivers import p2p
from colltune.drivers import registry
from colltune.base.files import check_writable
from colltune.studies.study import read_preset
from colltune.studies.sweep import definition_changes
from ._common import (MPI_HELP, build_or_fail, command, db_option, db_path_or_default, err, fail,
                      np_option)
from colltune.output.terminal import (best_table, compact_tables, emit_records,  # noqa: F401
                                      print_answer)
from .report import report as report_cmd
from .sweep import sweep as sweep_cmd


@command()
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
@db_option()
@click.option("-o", "--output", "report_path", default="quick-report.html", show_default=True,
              type=click.Path(dir_okay=False), help="The HTML report.")
@click.option("--new-round", is_flag=True,
              help="Measure again (a new round) even if the study is already stored.")
@np_option("nps", help="Process counts instead of the preset's (powers of two up to "
              "the cores), e.g. 2,4: counts above the cores run oversubscribed, are marked † "
              "and draw no conclusion.")
@click.option("--include-oversubscribed", is_flag=True,
              help="Draw conclusions from oversubscribed points too (still marked †).")
@click.option("--osu-tables", is_flag=True,
              help="Also print the OSU-style tables (Avg/Min/Max latency, iterations) of "
                   "every point, after the answer.")
@click.pass_context
def quick(ctx, mpi_spec, db_path, report_path, new_round, nps, include_oversubscribed,
          osu_tables) -> None:
    """The main job: the `quick` study (sweep --preset quick) into the results database,
    then, first, what to use where with its evidence, one compact table per collective
    (median µs and the ratio to native's median), and the HTML report.

    The preset measures np 2, 4, 8, ... up to the machine's cores, so that every
    process has a core; --np asks for others (counts above the cores run
    oversubscribed, are marked so and draw no conclusion)."""
    db_path = db_path_or_default(db_path)
    db_mod.check_writable(db_path)
    check_writable(report_path, "-o")
    if not new_round and Path(db_path).is_file():  # the preset changed with colltune
        conn = db_mod.open_db(db_path)
        try:
            changes, rnd = definition_changes(conn, read_preset("quick"))
        finally:
            conn.close()
        if changes:
            err.print(f"note: the quick study changed since round {rnd} in {db_path} ("
                      + "; ".join(changes) + f"): measuring round {rnd + 1}", highlight=False)
            new_round = True
    try:
        ctx.invoke(sweep_cmd, preset="quick", db_path=db_path, mpi_spec=mpi_spec,
                   new_round=new_round, nps=nps, oversubscribe=bool(nps))
    except SystemExit as exc:  # failed launches are in the database and the report
        if exc.code != 1:
            raise
        err.print("[yellow]some launches failed; they are listed in the report[/]")
    b = build_or_fail(mpi_spec)
    pingpong_once(b, db_path)
    conn = db_mod.open_reader(db_path, schema=True)
    try:
        df = reader.measurements_frame(conn, study="quick")
    finally:
        conn.close()
    if df.empty:
        fail(f"the quick study stored no measurements in {db_path}")
    df = terminal_rows(df, nps)
    # per point the median repetition's own OSU columns, and the spread over repetitions
    agg = median_repetition(df, ["collective", "np", "spec", "size"])
    for c in ("align", "iterations", "valid_reps"):
        if c in agg.columns:
            agg[c] = agg[c].astype("Int64")
    order = {c: {n: i for i, n in enumerate(["native"] + registry.names(b, c))}
             for c in set(agg["collective"])}
    records = table_records(df, agg, include_oversubscribed)
    records.sort(key=lambda r: order[r["collective"]].get(r["spec"], 999))
    reps = int(agg["repetitions"].max()) if len(agg) else 0
    banner = (f"{df['mpi_kind'].iloc[0]} {df['mpi_version'].iloc[0]}; {reps} repetitions: "
              "median, OSU columns of the median repetition")
    cores = int(df["cores"].dropna().min()) if df["cores"].notna().any() else None
    print_answer(df, records, include_oversubscribed, cores, reps)
    if osu_tables:
        emit_records(records, "table", None, banner, cores=cores)
    ctx.invoke(report_cmd, db_path=db_path, study="quick", output=report_path,
               include_oversubscribed=include_oversubscribed)


def terminal_rows(df, nps: list[int] | None = None):
    """The rows quick's tables are made of: the latest round (points.latest_round, as
    the report's summary selects them), at the process counts of --np."""
    df = latest_round(df)
    if nps:
        df = df[df["np"].isin(list(nps))]
    return df


def table_records(df, agg, include_oversubscribed: bool = False) -> list[dict]:
    """The records of quick's median table: one per point (`agg`, median_repetition of
    `df`) with its verdict against native and its `ratio`, the comparison's own estimate
    over the repetitions (evidence.ratio_to_baseline: the one the summary and the
    report print), time / native's time."""
    ver = versus_baseline(df, ["collective", "np", "size"], label="spec",
                          include_oversubscribed=include_oversubscribed)
    verdict = {(r.collective, r.np, r.size, r.spec): (r.outcome, r.ratio, bool(r.paired))
               for r in ver.itertuples()}
    records = []
    for r in agg.astype(object).where(agg.notna(), None).to_dict("records"):
        outcome, ratio, paired = verdict.get((r["collective"], r["np"], r["size"], r["spec"]),
                                             (None, None, False))
        fb = r.get("fallback")
        records.append(dict(r, fallback=fb if isinstance(fb, str) and fb else None,
                            verdict=outcome, ratio=ratio, paired=paired))
    return records


def pingpong_once(b, db_path) -> None:
    """The cost model's α and β come from a ping-pong stored in the database with its
    provenance: measured here once (the first quick on a database), so that every
    report built from it later launches nothing and gives the same figures."""
    if b.mpi.simulated or reader.pingpong_points(db_path) is not None:
        return
    err.print("measuring a ping-pong once for the cost model's α and β (stored in "
              f"{db_path}; reports read it from there)", highlight=False)
    try:
        recs = p2p.measure_pingpong(b)
        store.store_pingpong(recs, mpi=b.mpi, path=db_path, argv=sys.argv,
                             notes=["colltune quick: the ping-pong of the cost model's α, β"])
    except ColltuneError as exc:
        err.print(f"note: no ping-pong for the cost model ({exc}); the report says so",
                  highlight=False)


