"""What every command shares: the consoles, the one error path, building on demand,
and the options several commands take in the same words."""

from __future__ import annotations

import sys

import click
from rich.console import Console
from rich.markup import escape

from colltune.results import db as db_mod
from colltune.mpi.build import Build, build_for
from colltune.base.console import stdout_console
from colltune.base.errors import ColltuneError
from colltune.base.files import save_fallback, write_atomic
from colltune.base.units import parse_ints
from colltune.analysis.fit import default_db
from colltune.mpi import launch
from colltune.mpi.launch import Terminated, interrupt_on_term
from colltune.mpi.placement import MAX_PER_CORE, check_process_counts
from colltune.mpi.platforms import resolve

out = stdout_console()
err = Console(stderr=True, soft_wrap=True)  # messages stay one line each (grep, logs)

MPI_HELP = ("MPI library: openmpi (default), mpich, smpi (SimGrid 4.1 simulation, installed on "
            "first use; see --platform), or a path to a prefix/bin dir/mpicc")
PLATFORM_HELP = ("Simulated platform for --mpi smpi: a preset (tapems-16x12, orfeo-thin, "
                 "cloud-8vm, marconi100, this-machine, flat) or a platform description file; "
                 "default flat. Simulated points are stored apart from measurements.")
INCLUDE_SIMULATED_HELP = ("Also use simulated points (SimGrid, --mpi smpi); by default they are "
                          "never mixed with measurements.")


def resolve_platform(spec: str | None, mpi) -> object | None:
    """The Platform of --platform for a simulated MPI (default: launch.DEFAULT_PLATFORM);
    an `error:` line when --platform is given for a real MPI."""

    if not getattr(mpi, "simulated", False):
        if spec:
            fail("--platform is for simulation: add --mpi smpi")
        return None
    return resolve(spec or launch.DEFAULT_PLATFORM)


def fail(msg: str | list[str], code: int = 2) -> None:
    """The one way a command stops on an error: `error: MSG` on stderr, exit status 2.
    A list of messages (every mistake of a study file) is an `error:` line for each."""
    for line in ([str(m) for m in msg] if isinstance(msg, list) else [str(msg)]):
        if line.startswith("error:"):  # a message that already says so: one "error:" only
            line = line[len("error:"):].lstrip()
        err.print(f"[bold red]error:[/] {escape(line)}", highlight=False, soft_wrap=True)
    sys.exit(code)


class Command(click.Command):
    """A command whose ColltuneError (raised anywhere below it) becomes one `error:` line:
    the one error path of every command."""

    def invoke(self, ctx: click.Context):
        try:
            with interrupt_on_term():  # SIGTERM/SIGHUP: as Ctrl-C, launches stopped
                return super().invoke(ctx)
        except ColltuneError as exc:
            fail(getattr(exc, "errors", None) or str(exc), exc.exit_code)
        except Exception as exc:  # a database damaged where its check at opening missed it
            why = db_mod.damage_of(exc)
            if why is None:
                raise
            fail(f"a results database is damaged (SQLite: {why}): restore a copy, or move it "
                 "aside and recover what is left with `sqlite3 FILE .recover | sqlite3 "
                 f"recovered.db` ({db_mod.RECOVER_DOC})")
        except KeyboardInterrupt as exc:
            why = f" ({exc.args[0]})" if isinstance(exc, Terminated) and exc.args else ""
            err.print(f"[yellow]interrupted[/]{why}", highlight=False)
            sys.exit(130)


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


def write_or_keep(path, data: str | bytes, name: str) -> None:
    """Write an output atomically; if that fails (the disk filled up, the folder went
    away), keep it in the colltune cache and stop with an `error:` line saying where."""
    try:
        write_atomic(path, data)
    except OSError as exc:
        try:
            where = save_fallback(name, data)
        except OSError:
            fail(f"cannot write {path}: {exc.strerror or exc}; nothing could be saved")
        fail(f"cannot write {path}: {exc.strerror or exc}; saved in {where} instead")


class QuietAliases(click.Option):
    """An option whose older spellings still work but are not shown in --help."""

    def get_help_record(self, ctx):
        saved = self.opts
        self.opts = saved[:1]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = saved


NP_HELP = "Process counts: 2,4 or 2:8 (an end of a range may be left out: 8:)."
SIZE_HELP = "Sizes in bytes, K/M/G suffixes: 8,64K or 1:1M (an end may be left out)."

# the selection of measurements that fit, model, plot and report take (results and
# export take the same --coll, --algo, --mapping, --np and --size, and more)
SELECT_OPTIONS = [
    click.option("--db", "db_path", default=lambda: str(default_db()), show_default="$COLLTUNE_DB "
                 "or ./colltune.db", type=click.Path(dir_okay=False),
                 help="Results database (SQLite)."),
    click.option("--study", help="Only this study."),
    click.option("--coll", help="Only these collectives (comma-separated)."),
    click.option("--algo", help="Only these algorithms (comma-separated)."),
    click.option("--mapping", help="Only these mappings: core, socket, node (comma-separated)."),
    click.option("--np", "--np-range", "np_range", cls=QuietAliases, help=NP_HELP),
    click.option("--size", "--size-range", "size_range", cls=QuietAliases, help=SIZE_HELP),
    click.option("--include-simulated", is_flag=True,
                 help="Also use simulated points (SimGrid, --mpi smpi); by default they are "
                      "never mixed with measurements."),
]


def select_options(f):
    for opt in reversed(SELECT_OPTIONS):
        f = opt(f)
    return f


def gamma_value(gamma_opt: str) -> float | None:
    """--gamma: a number (s/byte), or None for the modes measure, db and auto."""
    if gamma_opt in ("auto", "measure", "db"):
        return None
    try:
        return float(gamma_opt)
    except ValueError:
        fail(f"--gamma '{gamma_opt}': measure, db, auto or a number (s/byte)")


def db_option(**kwargs):
    """--db PATH: the results database; default $COLLTUNE_DB, else ./colltune.db."""
    kwargs.setdefault("default", lambda: str(db_mod.default_path()))
    kwargs.setdefault("show_default", "$COLLTUNE_DB or ./colltune.db")
    kwargs.setdefault("help", "Results database (SQLite file).")
    return click.option("--db", "db_path", type=click.Path(dir_okay=False), **kwargs)


def db_path_or_default(db_path: str | None):
    return db_path if db_path else str(db_mod.default_path())


def oversubscribe_options(f):
    """--oversubscribe and --force, for commands that measure time (see
    placement.check_process_counts)."""
    f = click.option("--force", is_flag=True,
                     help=f"Launch even more than {MAX_PER_CORE} processes per core.")(f)
    f = click.option("--oversubscribe", is_flag=True,
                     help="Measure with more processes than cores (they share cores: the "
                          "points are marked oversubscribed).")(f)
    return f


def parse_nps(text: str, what: str = "--np") -> list[int]:
    """Process counts to launch ('2,4', '2:8'), each at least 1; else an `error:` line
    (before anything is built, launched or written, --dry-run included)."""
    try:
        nps = parse_ints(text, what)
    except ValueError as exc:
        fail(str(exc))
    small = sorted({n for n in nps if n < 1})
    if small:
        fail(f"{what} {text}: a process count must be at least 1"
             + (f" ({small[0]} is not)" if text.strip() != str(small[0]) else ""))
    return nps


def check_nps(nps, oversubscribe: bool = False, force: bool = False, timing: bool = True,
              placement=None, simulated: bool = False) -> list[str]:
    """The process-count policy (placement.check_process_counts) before any launch; the
    notes are printed."""
    notes = check_process_counts(nps, oversubscribe=oversubscribe, force=force, timing=timing,
                                 placement=placement, simulated=simulated)
    for n in notes:
        err.print(f"note: {n}", highlight=False)
    return notes
