"""`colltune quick`: the main job (workflows.quick: sweep, ping-pong, answer, report)."""

from __future__ import annotations

import sys

import click

from colltune.output.terminal import (best_table, compact_tables, emit_records,  # noqa: F401
                                      print_answer)
from colltune.workflows import quick as quick_flow
from colltune.workflows.quick import table_records, terminal_rows  # noqa: F401
from ._common import MPI_HELP, command, db_option, db_path_or_default, np_option, progress
from .report import render_report


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
def quick(mpi_spec, db_path, report_path, new_round, nps, include_oversubscribed,
          osu_tables) -> None:
    """The main job: the `quick` study (sweep --preset quick) into the results database,
    then, first, what to use where with its evidence, one compact table per collective
    (median µs and the ratio to native's median), and the HTML report.

    The preset measures np 2, 4, 8, ... up to the machine's cores, so that every
    process has a core; --np asks for others (counts above the cores run
    oversubscribed, are marked so and draw no conclusion)."""

    def show(ans: quick_flow.Answer) -> None:
        print_answer(ans.df, ans.records, ans.include_oversubscribed, ans.cores, ans.reps)
        if osu_tables:
            emit_records(ans.records, "table", None, ans.banner, cores=ans.cores)

    res = quick_flow.quick(db_path_or_default(db_path), mpi_spec=mpi_spec,
                           report_path=report_path, new_round=new_round, nps=nps,
                           include_oversubscribed=include_oversubscribed, progress=progress(),
                           on_answer=show)
    if res.answer is None:  # interrupted: what was measured is stored
        sys.exit(130)
    render_report(res.report)
