"""`colltune rules`: show, check, export and verify rules files (colltune's own, Open
MPI's coll/tuned rules file, MPICH's selection JSON). The work is in rules/files.py
(rules verify: workflows/rules.py)."""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from colltune.drivers import registry
from colltune.mpi import libraries as mpi_mod
from colltune.rules import ruleset as rules_mod
from colltune.rules import files as rf
from colltune.base.errors import ColltuneError
from colltune.base.files import check_writable
from colltune.workflows import rules as wf
from ._common import (MPI_HELP, Command, build_or_fail, check_nps, command, err, fail, np_option,
                      out, size_option)


class Group(Command, click.Group):
    """A group of commands with the one error path (see _common.Command)."""


@click.group(name="rules", cls=Group)
def rules() -> None:
    """Rules files: colltune's own, Open MPI's coll/tuned file, MPICH's selection JSON.

    show prints any of them as a table, check validates one (errors name the line),
    export writes the file a library reads unchanged, verify runs the library under a
    file and shows which algorithm really ran. See docs/rules-files.md.
    """


def _installed(kind: str, mpi_spec: str | None):
    """The MPI library to check a file of `kind` against, or None (not installed)."""
    spec = mpi_spec or kind
    try:
        mpi = mpi_mod.find(spec, auto_install=False)
    except ColltuneError:
        if mpi_spec:
            raise
        return None
    return mpi if mpi.kind == kind else None


@command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--mpi", "mpi_spec", help="Library to name Open MPI's algorithm numbers with "
              "(default: the installed Open MPI for an Open MPI file).")
@click.option("--all", "every", is_flag=True,
              help="MPICH file: every collective, not only those colltune has algorithms for "
                   "(colltune algorithms).")
def show(file, mpi_spec, every) -> None:
    """Print a rules file of any of the three formats as a table."""
    text = rf.read_text(file)
    kind = rf.detect(text, file)
    mpi = _installed(kind, mpi_spec) if kind != "colltune" else None
    headers, rows, notes = rf.table(text, kind, mpi, every)
    if kind == "colltune":  # what the rules rest on, from the file's header
        meta = rules_mod.from_text(text, file).meta
        for key in ("study", "measured processes", "left out", "policy"):
            if meta.get(key):
                out.print(f"{key}: {escape(meta[key])}", highlight=False)
    t = Table(title=f"{file}: {rf.FORMAT_NAMES[kind]}", title_justify="left")
    for h in headers:
        t.add_column(h, justify="right" if h in ("line", "faninout", "segsize", "maxreq") else "left")
    for r in rows:
        t.add_row(*[escape(c) for c in r])
    out.print(t)
    for n in notes:
        err.print(f"note: {escape(n)}", highlight=False)


@command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--mpi", "mpi_spec", help=MPI_HELP + " (default: the library the file is for, "
              "when installed; for a colltune rules file, the build whose algorithm table "
              "is used).")
def check(file, mpi_spec) -> None:
    """Validate a rules file: every problem as FILE:LINE: problem, exit status 2.

    An Open MPI file is checked against the installed Open MPI's algorithm numbers, an
    MPICH file against the installed MPICH's algorithm names and its full list of
    collectives, so a file the library would ignore or abort on is caught here. A
    colltune rules file is checked as the interposition library reads it (algorithm
    names, parameters and their ranges from the native algorithm table, MAPPING,
    test-only names refused), and its first problem is reported: the library drops the
    whole file at it.
    """
    text = rf.read_text(file)
    kind = rf.detect(text, file)
    mpi = algorithms = None
    target = None
    if kind != "colltune":
        mpi = _installed(kind, mpi_spec)
        if mpi_spec and mpi is None:
            fail(f"{file} is an {rf.FORMAT_NAMES[kind]}; --mpi {mpi_spec} is not that library")
    else:
        try:
            target = rules_mod.from_text(text, file).target
        except rules_mod.RulesError:
            pass
        if target in (None, "colltune"):
            # the algorithms, their parameters and ranges: the native library's own table
            algorithms = registry.algorithms(build_or_fail(mpi_spec), hidden=True)
    res = rf.check(text, kind, mpi, file, algorithms)
    for w in res.warnings:
        err.print(f"warning: {escape(w)}", highlight=False)
    made_for = rf.written_for(text, kind)
    if made_for and mpi is not None and made_for != mpi.version:
        err.print(f"warning: {file} was written for {mpi.name} {made_for}; the installed "
                  f"version is {mpi.version} (numbers checked against the installed one)",
                  highlight=False)
    if res.problems:
        for line, problem in res.problems:
            where = f"{file}:{line}" if line else file
            err.print(f"{escape(where)}: {escape(problem)}", highlight=False)
        raise SystemExit(2)
    against = f" against {mpi.name} {mpi.version}" if mpi is not None else ""
    if target not in (None, "colltune"):
        against = (f" for target {target} (the input of colltune rules export --to {target}; "
                   "the interposition library reads target colltune only)")
    out.print(f"{file}: a valid {rf.FORMAT_NAMES[kind]}{against}", highlight=False)


@command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--to", "to", required=True, type=click.Choice(["openmpi", "mpich"]),
              help="The library whose file to write.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The file to write.")
@click.option("--mpi", "mpi_spec", help="The installed library (default: the one --to names).")
@click.option("--format", "fmt", type=click.Choice(["classic", "json"]), default="classic",
              show_default=True,
              help="--to openmpi: the classic rules file (Open MPI 5) or Open MPI 6's JSON "
                   "rules (rule_file_version 3; rules keyed by ppn= become its "
                   "comm_rank_distribution).")
def export(file, to, output, mpi_spec, fmt) -> None:
    """Convert a colltune rules file (target openmpi or mpich) into the file that
    library reads, and print the lines that make it use the file."""
    rs = rules_mod.read(file)
    if rs.target != to:
        fail(f"{file} targets {rs.target}; --to {to} needs a rule set with target {to} "
             f"(its algorithms are {'ompi:NAME' if to == 'openmpi' else 'mpich:NAME'} or native)")
    check_writable(output, "-o")
    try:
        mpi = mpi_mod.find(mpi_spec or to, auto_install=False)
    except ColltuneError as exc:
        fail(f"{exc}")
    if fmt == "json" and to != "openmpi":
        fail("--format json: only with --to openmpi (MPICH's file is JSON already)")
    try:
        lines = rf.export(rs, to, output, mpi, fmt)
    except rules_mod.RulesError as exc:
        fail(str(exc))
    what = ("Open MPI 6 JSON rules file" if fmt == "json" else rf.FORMAT_NAMES[to])
    out.print(f"wrote {output} ({what} for {mpi.name} {mpi.version})",
              highlight=False)
    out.print("use it with:", highlight=False)
    for ln in lines:
        out.print(f"  {escape(ln)}", highlight=False)


@command()
@click.argument("file", type=click.Path(dir_okay=False))
@np_option("nps", default="3", show_default=True, min=2,
           help="Process counts to run with, one run each: 3 or 2,4 or 2:8.")
@size_option("sizes", help="Sizes to call the collectives at (colltune's sizes: bytes, per "
              "process for gather/allgather, per destination for alltoall; K/M "
              "suffixes). Default: the start of each "
              "range the file has at --np.")
@click.option("--coll", help="Only these collectives (comma-separated).")
@click.option("--iterations", default=2, show_default=True, type=int,
              help="Calls per size.")
@click.option("--mpi", "mpi_spec", help="The library (default: the one the file is for).")
def verify(file, nps, sizes, coll, iterations, mpi_spec) -> None:
    """Run the library under a rules file and show, per collective and size, the
    algorithm that really ran next to the one the file names.

    Open MPI: a preloaded library sees which coll/base algorithm function coll/tuned
    calls. MPICH: the socket traffic of each call is compared with runs forced to each
    of MPICH's algorithms. Exit status 1 when an algorithm differs from the file's.
    """
    kind = wf.library_of(file, mpi_spec, iterations)
    size_list = sizes  # parsed by --size (None: the file's sizes)
    colls = [c.strip() for c in coll.split(",") if c.strip()] if coll else None
    check_nps(nps, timing=False)
    b = build_or_fail(mpi_spec or kind)

    def ran(np, rows, notes):  # one table per process count
        t = Table(title=f"{file} under {b.mpi.name} {b.mpi.version}, {np} processes",
                  title_justify="left")
        for h in ("collective", "size", "file names", "ran", "ran inside", "agrees", "note"):
            t.add_column(h, justify="right" if h == "size" else "left")
        for r in rows:
            verdict = {True: "[green]yes[/]", False: "[bold red]NO[/]", None: "-"}[r.ok]
            if r.ok and not r.unique:
                verdict = "[green]consistent[/]"  # among the algorithms with this traffic
            t.add_row(r.collective, str(r.size), escape(r.named), escape(r.ran),
                      escape(r.inside), verdict, escape(r.note))
        out.print(t)
        for n in notes:
            err.print(f"note: {escape(n)}", highlight=False)

    runs = wf.verify(file, b, nps, size_list, colls, iterations, on_run=ran)
    bad = sum(r.ok is False for _, rows, _ in runs for r in rows)
    if bad:
        err.print(f"[bold red]{bad} size(s) ran another algorithm than the file names[/]",
                  highlight=False)
        raise SystemExit(1)


for _cmd in (show, check, export, verify):
    rules.add_command(_cmd)
del _cmd
