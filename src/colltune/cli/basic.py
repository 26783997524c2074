"""`colltune build`, `colltune info`, `colltune algorithms`."""

from __future__ import annotations

import json
import subprocess

import click
from rich.table import Table

from .. import __version__
from colltune.mpi import placement
from colltune.drivers import registry
from colltune.base.collectives import COLLECTIVES
from colltune.base.errors import did_you_mean
from ._common import command, MPI_HELP, build_or_fail, fail, out


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
    cc = subprocess.run([str(b.mpi.mpicc), "--version"], capture_output=True, text=True,
                        env=b.mpi.env()).stdout.splitlines()
    t = Table(show_header=False, box=None)
    t.add_row("colltune", __version__)
    t.add_row("MPI", f"{b.mpi.name} {b.mpi.version}")
    t.add_row("MPI tools", str(b.mpi.bindir))
    t.add_row("launcher", str(b.mpi.launcher))
    t.add_row("compiler", f"{b.mpi.mpicc} ({cc[0] if cc else 'unknown'})")
    t.add_row("build", str(b.dir))
    t.add_row("cores", str(placement.cores()))
    out.print(t)


@command()
@click.option("--coll", "colls", help="Only these collectives (comma-separated).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
def algorithms(colls: str | None, as_json: bool, mpi_spec: str | None) -> None:
    """The table of algorithms: parameters, constraints, fallbacks, cost formulas."""
    b = build_or_fail(mpi_spec)
    wanted = colls.split(",") if colls else list(COLLECTIVES)
    for c in wanted:
        if c not in COLLECTIVES:
            fail(f"--coll: unknown collective '{c}'{did_you_mean(c, COLLECTIVES)}; "
                 f"valid: {', '.join(COLLECTIVES)}")
    algos = [a for a in registry.algorithms(b) if a.collective in wanted]
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
