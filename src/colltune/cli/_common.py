"""What every command shares: the consoles, the one error path, building on demand,
and the options several commands take in the same words."""

from __future__ import annotations

import sys

import click
from rich.console import Console
from rich.markup import escape

from ..build import Build, build_for
from ..console import stdout_console
from ..errors import ColltuneError
from ..fit import default_db

out = stdout_console()
err = Console(stderr=True)

MPI_HELP = "MPI library: openmpi (default), mpich, or a path to a prefix/bin dir/mpicc"


def fail(msg: str, code: int = 2) -> None:
    """The one way a command stops on an error: `error: MSG` on stderr, exit status 2."""
    err.print(f"[bold red]error:[/] {escape(str(msg))}", highlight=False)
    sys.exit(code)


class Command(click.Command):
    """A command whose ColltuneError (raised anywhere below it) becomes one `error:` line:
    the one error path of every command."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except ColltuneError as exc:
            fail(str(exc), exc.exit_code)


def command(*args, **kwargs):
    """`click.command` with the one error path (see Command)."""
    kwargs.setdefault("cls", Command)
    return click.command(*args, **kwargs)


def build_or_fail(mpi_spec: str | None, force: bool = False, verbose: bool = False) -> Build:
    """The native part built against the `--mpi` library, or an `error:` line."""
    try:
        return build_for(mpi_spec, force=force, verbose=verbose)
    except ColltuneError as exc:
        fail(str(exc))


def echo(text: str, nl: bool = True) -> None:
    click.echo(text, nl=nl)


# the selection of measurements that fit, model and plot take
SELECT_OPTIONS = [
    click.option("--db", "db_path", default=lambda: str(default_db()), show_default="$COLLTUNE_DB "
                 "or ./colltune.db", type=click.Path(dir_okay=False),
                 help="Results database (SQLite)."),
    click.option("--study", help="Only this study."),
    click.option("--coll", help="Only this collective (comma-separated for several)."),
    click.option("--algo", help="Only these algorithms (comma-separated)."),
    click.option("--mapping", help="Only this mapping (comma-separated for several)."),
    click.option("--np-range", help="Process counts a..b (inclusive; an end may be left out)."),
    click.option("--size-range", help="Sizes a..b in bytes, 1K/1M suffixes (e.g. 8..1M)."),
]


def select_options(f):
    for opt in reversed(SELECT_OPTIONS):
        f = opt(f)
    return f
