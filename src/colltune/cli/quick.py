"""`colltune quick`: the main job."""

from __future__ import annotations


from pathlib import Path

import click

from .. import db as db_mod
from .. import registry
from ..files import check_writable
from ..study import load_preset
from ..sweep import definition_changes
from ._common import MPI_HELP, build_or_fail, command, db_option, db_path_or_default, err, fail
from .bench import emit_records
from .report import report as report_cmd
from .sweep import sweep as sweep_cmd


@command()
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
@db_option()
@click.option("-o", "--output", "report_path", default="quick-report.html", show_default=True,
              type=click.Path(dir_okay=False), help="The HTML report.")
@click.option("--new-round", is_flag=True,
              help="Measure again (a new round) even if the study is already stored.")
@click.pass_context
def quick(ctx, mpi_spec, db_path, report_path, new_round) -> None:
    """The main job: the `quick` study (sweep --preset quick) into the results database,
    a table of every algorithm next to native, and the HTML report.

    The study runs at 2 and 4 processes whatever the core count, so that every
    machine gives the same table: counts above the cores are measured
    oversubscribed, marked so in the database and the report."""
    db_path = db_path_or_default(db_path)
    db_mod.check_writable(db_path)
    check_writable(report_path, "-o/--output")
    if not new_round and Path(db_path).is_file():  # the preset changed with colltune
        conn = db_mod.open_db(db_path)
        try:
            changes, rnd = definition_changes(conn, load_preset("quick"))
        finally:
            conn.close()
        if changes:
            err.print(f"note: the quick study changed since round {rnd} in {db_path} ("
                      + "; ".join(changes) + f"): measuring round {rnd + 1}", highlight=False)
            new_round = True
    try:
        ctx.invoke(sweep_cmd, preset="quick", db_path=db_path, mpi_spec=mpi_spec,
                   new_round=new_round, oversubscribe=True)
    except SystemExit as exc:  # failed launches are in the database and the report
        if exc.code != 1:
            raise
        err.print("[yellow]some launches failed; they are listed in the report[/]")
    conn = db_mod.open_reader(db_path, schema=True)
    try:
        df = db_mod.measurements_frame(conn, study="quick")
    finally:
        conn.close()
    if df.empty:
        fail(f"the quick study stored no measurements in {db_path}")
    df = df[df["round"] == df["round"].max()]
    agg = (df.groupby(["collective", "np", "spec", "size"], sort=False)
             .agg(median_us=("median_us", "median"), fallback=("fallback", "first"))
             .reset_index())
    b = build_or_fail(mpi_spec)
    order = {c: {n: i for i, n in enumerate(["native"] + registry.names(b, c))}
             for c in set(agg["collective"])}
    records = sorted((dict(r, fallback=r["fallback"] if isinstance(r["fallback"], str)
                           and r["fallback"] else None) for r in agg.to_dict("records")),
                     key=lambda r: order[r["collective"]].get(r["spec"], 999))
    banner = f"{df['mpi_kind'].iloc[0]} {df['mpi_version'].iloc[0]}; median of repetitions"
    emit_records(records, "table", None, banner)
    ctx.invoke(report_cmd, db_path=db_path, study="quick", output=report_path)
