"""`colltune verify`: the correctness matrix."""

from __future__ import annotations

import json
import sys

import click
from rich.table import Table

from colltune.base.collectives import COLLECTIVES
from colltune.mpi.placement import MAX_PER_CORE, check_process_counts
from colltune.workflows import verify as wf
from ._common import MPI_HELP, build_or_fail, command, err, np_option, out


@command()
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
@np_option("nps", default=",".join(map(str, wf.DEFAULT_NPS)),
              show_default=True, help="Process counts, one launch each.")
@click.option("--coll", "colls", default=",".join(COLLECTIVES), show_default=True,
              help="Collectives to verify.")
@click.option("--algo", "algos", help="Only these algorithm names (default: all).")
@click.option("--quick", is_flag=True, help="Skip the large count (2^17+3 elements).")
@click.option("--family", "families", default=",".join(wf.FAMILIES), show_default=True,
              help="Case families: main (roots, counts, datatypes, ops, in-place, parameters), "
                   "mixed (different datatypes of equal type signature on different ranks; "
                   "for reduce_scatter, shapes of recvcounts), "
                   "garbage (ignored arguments filled with garbage), self (MPI_COMM_SELF), "
                   "inter (intercommunicators get one clear error), remap (remap=seq, rr, auto "
                   "on virtual nodes: regular, uneven and irregular placements), empty (empty "
                   "type signatures written both ways, a count of 0 and a count of a zero-size "
                   "datatype, mixed over ranks, wholly and partly empty). Under --mpi smpi "
                   "all but mixed and inter (SimGrid's SMPI supports neither).")
@click.option("--timeout", default=1200.0, show_default=True,
              help="Seconds per launch before it counts as a hang.")
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON.")
@click.option("--force", is_flag=True,
              help=f"Launch even more than {MAX_PER_CORE} processes per core.")
def verify(mpi_spec, nps, colls, algos, quick, families, timeout, as_json, force) -> None:
    """Compare every algorithm with the MPI library's own collective.

    Cases: roots first/last/middle, counts 0, 1, 7, 1000, 2^17+3, datatypes
    char/int/double/strided vector, ops sum/max/prod/a non-commutative user op,
    in-place, and each parameter (segment size, fan-out, radix, inner
    algorithms) moved through its edge values. Exits 1 naming every failing case.
    """
    np_list = nps  # parsed by --np
    fam_list = [f.strip() for f in families.split(",") if f.strip()]
    wf.check_families(fam_list)
    check_process_counts(np_list, force=force, timing=False)  # correctness: may share cores
    b = build_or_fail(mpi_spec)
    coll_list = [c.strip() for c in colls.split(",") if c.strip()]
    algo_list = [a.strip() for a in algos.split(",")] if algos else None

    def launched(r: wf.RunOutcome) -> None:
        for note in r.notes:
            err.print(f"  note: {note}", highlight=False)
        status = "ok" if r.ok else "FAILED"
        cases = r.summary["cases"] if r.summary else "?"
        secs = f"{r.summary['seconds']:.1f} s" if r.summary else ""
        pl = r.placement
        where = f", on {pl['nodes']} nodes (up to {pl['ppn']} processes a node)" \
            if pl and pl["nodes"] > 1 else ""
        err.print(f"  np={r.np:<3} {status:6} {cases} cases {secs}{where}", highlight=False)

    report = wf.verify(b, np_list, coll_list, algo_list, quick=quick, families=fam_list,
                       timeout=timeout, progress=lambda m: err.print(m, highlight=False),
                       on_run=launched)
    if as_json:
        click.echo(json.dumps({"mpi": b.mpi.banner, "ok": report.ok, "runs": [
            r.__dict__ for r in report.runs]}, indent=2))
    else:
        t = Table(title=f"verify on {b.mpi.banner}", title_justify="left")
        for col in ("collective", "algorithm", "np", "cases", "failed", "fallback"):
            t.add_column(col)
        for r in report.runs:
            for a in r.algos:
                t.add_row(a["collective"], a["algorithm"], str(a["np"]), str(a["cases"]),
                          str(a["failed"]), a["fallback"] or "")
        out.print(t)
    lines = report.failure_lines()
    for line in lines:
        err.print(f"[red]{line}[/]", highlight=False)
    if report.ok:
        err.print(f"[green]verify passed:[/] {report.cases} cases, np "
                  f"{', '.join(map(str, np_list))}", highlight=False)
    else:
        err.print(f"[bold red]verify failed[/]: {len(lines)} problem(s)", highlight=False)
        sys.exit(1)
