"""`colltune build`, `colltune info`, `colltune algorithms`."""

from __future__ import annotations

import json

import click
from rich.table import Table

from .. import __version__
from colltune.workflows import basic as wf
from ._common import command, MPI_HELP, build_or_fail, out


@command()
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
@click.option("--force", is_flag=True, help="Rebuild from scratch.")
@click.option("-v", "--verbose", is_flag=True, help="Show the compiler output.")
def build(mpi_spec: str | None, force: bool, verbose: bool) -> None:
    """Build the native part against an MPI library (cached per library)."""
    b = build_or_fail(mpi_spec, force=force, verbose=verbose)
    out.print(f"built against {b.mpi.banner} in {b.dir}", highlight=False)


@command()
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
def info(mpi_spec: str | None) -> None:
    """MPI implementation and version, compiler, build location."""
    b = build_or_fail(mpi_spec)
    t = Table(show_header=False, box=None)
    for what, value in wf.info(b, __version__):
        t.add_row(what, value)
    out.print(t)


@command()
@click.option("--coll", "colls", help="Only these collectives (comma-separated).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
def algorithms(colls: str | None, as_json: bool, mpi_spec: str | None) -> None:
    """The table of algorithms: parameters, constraints, fallbacks, cost formulas."""
    b = build_or_fail(mpi_spec)
    wanted, algos = wf.algorithms(b, colls.split(",") if colls else None)
    if as_json:
        click.echo(json.dumps([a.__dict__ for a in algos], indent=2))
        return
    for c in wanted:
        t = Table(title=f"{c}", title_justify="left", show_lines=False)
        for col in ("algorithm", "parameters", "constraint -> fallback", "Hockney cost",
                    "pattern"):
            t.add_column(col, overflow="fold")
        for a in algos:
            if a.collective != c:
                continue
            cons = ", ".join(a.constraints)
            t.add_row(a.name, a.param_text(), f"{cons} -> {a.fallback}" if cons else "",
                      a.cost or "", a.summary)
        out.print(t)
    out.print("cost: a = alpha (latency, s), b = beta (s/byte), g = gamma (reduction s/byte), "
              "n = bytes, p = processes, s = segment bytes, k = fan-out/radix", highlight=False)
