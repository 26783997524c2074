"""What every command shares: the consoles, the one error path, building on demand,
and the options several commands take in the same words."""

from __future__ import annotations

import sys

import click
from rich.markup import escape

from colltune.results import db as db_mod
from colltune.mpi.backend import backend_for
from colltune.mpi.build import Build, build_for
from colltune.base.errors import ColltuneError
from colltune.analysis.fit import default_db
from colltune.mpi.placement import MAX_PER_CORE, check_process_counts
from colltune.mpi.platforms import resolve
from colltune.base.units import parse_ints, parse_selection, parse_sizes

from colltune.output.terminal import BenchProgress, err, out  # noqa: F401 - the consoles
from colltune import workflows
from colltune.workflows import DEFAULT_PLATFORM, Progress, Terminated, interrupt_on_term

MPI_HELP = ("MPI library: openmpi (default), mpich, smpi (SimGrid 4.1 simulation, installed on "
            "first use; see --platform), or a path to a prefix/bin dir/mpicc")
PLATFORM_HELP = ("Simulated platform for --mpi smpi: a preset (tapems-16x12, orfeo-thin, "
                 "cloud-8vm, marconi100, this-machine, flat) or a platform description file; "
                 "default flat. Simulated points are stored apart from measurements.")
INCLUDE_SIMULATED_HELP = ("Also use simulated points (SimGrid, --mpi smpi); by default they are "
                          "never mixed with measurements.")


def resolve_platform(spec: str | None, mpi) -> object | None:
    """The Platform of --platform for a simulated MPI (default: DEFAULT_PLATFORM);
    an `error:` line when --platform is given for a real MPI."""

    if not backend_for(mpi).simulated:
        if spec:
            fail("--platform is for simulation: add --mpi smpi")
        return None
    return resolve(spec or DEFAULT_PLATFORM)


def _say(text: str, markup: bool = True) -> None:
    err.print(text, highlight=False, markup=markup)


def progress() -> Progress:
    """How the workflows report to a command: lines on stderr, the progress bar of
    output/terminal (a sweep draws its own, studies.sweep)."""
    return Progress(say=_say, bar=BenchProgress)


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
    away), keep it in the colltune cache and stop with an `error:` line saying where
    (workflows.write_or_keep)."""
    try:
        workflows.write_or_keep(path, data, name)
    except workflows.WorkflowError as exc:
        fail(str(exc))


class QuietAliases(click.Option):
    """An option whose older spellings still work but are not shown in --help."""

    def get_help_record(self, ctx):
        saved = self.opts
        self.opts = saved[:1]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = saved

    def get_error_hint(self, ctx):
        return f"'{self.opts[0]}'"


NP_HELP = "Process counts: 2,4 or 2:8 (an end of a range may be left out: 8:)."
SIZE_HELP = "Sizes in bytes, K/M/G suffixes: 8,64K or 1:1M (an end may be left out)."


class _Counts(click.ParamType):
    """The one way an option reads process counts (--np) or sizes (--size): the parsers
    of base/units.py, the same syntax on every command (README, "Options").

    many=True: a list to run, `2,4` or `2:8` (sizes: `8,64K` or `1:1M`, powers of two)
    -> list[int]. many=False: the same syntax, one value -> int; a list is refused with
    `one` (why the command runs one). selection=True: a filter of stored measurements,
    where an end of a range may be left out (`8:`); the text is checked here and passed
    on as written (the readers parse it, units.parse_selection). A value that is
    already parsed (a command invoking another) passes through."""

    sizes = False

    def __init__(self, many: bool = True, one: str | None = None, min: int | None = None,
                 selection: bool = False):
        self.many, self.one, self.min, self.selection = many, one, min, selection

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        opt = param.opts[0] if param is not None else f"--{self.name}"
        if self.selection:
            try:
                parse_selection(value, opt, sizes=self.sizes)
            except ValueError as exc:
                raise ValueRefused(str(exc), ctx=ctx, param=param) from None
            return value
        try:
            values = parse_sizes(value) if self.sizes else parse_ints(value, "")
            lo = self.min if self.min is not None else (None if self.sizes else 1)
            if lo is not None and min(values) < lo:  # before anything is built or written
                bad = min(values)
                raise ValueError(("" if self.sizes else "a process count ")
                                 + f"must be at least {lo}"
                                 + (f" ({bad} is not)" if value.strip() != str(bad) else ""))
            if not self.many and len(values) > 1:
                raise ValueError("give one value" + (f" ({self.one})" if self.one else ""))
        except ValueError as exc:
            raise ValueRefused(f"{opt} '{value}': {str(exc).lstrip(': ')}", ctx=ctx,
                               param=param) from None
        return values if self.many else values[0]


class ValueRefused(click.BadParameter):
    """A bad --np/--size: the message says which option and value, as fail() does."""

    def format_message(self) -> str:
        return self.message


class NpType(_Counts):
    name = "np"


class SizeType(_Counts):
    name = "size"
    sizes = True


def np_option(*decls, **kwargs):
    """--np on every command: `np_option(dest, many=..., one=..., min=...)`."""
    return _counts_option(NpType, "--np", NP_HELP, decls, kwargs)


def size_option(*decls, **kwargs):
    """--size on every command (--sizes still read, not shown): like np_option."""
    return _counts_option(SizeType, "--size", SIZE_HELP, decls, kwargs)


def _counts_option(cls, name, default_help, decls, kwargs):
    ptype = cls(kwargs.pop("many", True), kwargs.pop("one", None), kwargs.pop("min", None),
                kwargs.pop("selection", False))
    kwargs.setdefault("help", default_help)
    aliases = ["--sizes"] if cls is SizeType and ptype.many else []
    return click.option(name, *aliases, *decls, cls=QuietAliases, type=ptype, **kwargs)


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
    np_option("--np-range", "np_range", selection=True),
    size_option("--size-range", "size_range", selection=True),
    click.option("--include-simulated", is_flag=True,
                 help="Also use simulated points (SimGrid, --mpi smpi); by default they are "
                      "never mixed with measurements."),
]


def select_options(f):
    for opt in reversed(SELECT_OPTIONS):
        f = opt(f)
    return f


GAMMA_HELP = ("γ: 'measure' (MPI_Reduce_local timed on 1 process), 'db' ((Reduce − Bcast)/n "
              "at np 2), 'auto' (measure, else db), or ns per byte (as `colltune model` prints it).")


def gamma_value(gamma_opt: str) -> float | None:
    """--gamma: a number in ns/byte -> s/byte, or None for the modes measure, db and auto.
    A number below 0.001 ns/byte (a reduction at a petabyte a second) is the old unit,
    seconds per byte, and is refused with the value to write instead."""
    if gamma_opt in ("auto", "measure", "db"):
        return None
    try:
        ns = float(gamma_opt)
    except ValueError:
        fail(f"--gamma '{gamma_opt}': measure, db, auto or a number (ns per byte)")
    if 0 < ns < 1e-3:
        fail(f"--gamma {gamma_opt}: γ is in ns per byte (as `colltune model` prints it), "
             f"not seconds: write --gamma {ns * 1e9:g}")
    return ns * 1e-9


def _seconds_refused(new: str, unit: str, scale: float):
    def refuse(ctx, param, value):
        if value is not None:
            old = param.opts[0]
            raise click.UsageError(f"{old} (seconds) is now {new} ({unit}): write "
                                   f"{new} {value * scale:g} for {old} {value:g}", ctx)
    return refuse


def _gamma_checked(ctx, param, value):
    gamma_value(value)  # refused before anything is read or measured
    return value


def _scaled(factor: float):
    return lambda ctx, param, value: None if value is None else value * factor


# α and β as `colltune model` prints them (µs, ns/byte); the commands get seconds. The
# old --alpha/--beta (seconds) are refused with the value to write, never misread.
COST_OPTIONS = [
    click.option("--alpha-us", "alpha", type=float, callback=_scaled(1e-6),
                 help="α in µs (as `colltune model` prints it); with --beta-ns, skips the "
                      "ping-pong."),
    click.option("--beta-ns", "beta", type=float, callback=_scaled(1e-9),
                 help="β in ns per byte (as `colltune model` prints it)."),
    click.option("--alpha", "alpha_s", type=float, hidden=True, expose_value=False,
                 callback=_seconds_refused("--alpha-us", "µs", 1e6)),
    click.option("--beta", "beta_s", type=float, hidden=True, expose_value=False,
                 callback=_seconds_refused("--beta-ns", "ns per byte", 1e9)),
    click.option("--gamma", "gamma_opt", default="auto", show_default=True, help=GAMMA_HELP,
                 callback=_gamma_checked),
]


def cost_options(f):
    """--alpha-us, --beta-ns and --gamma of model and report."""
    for opt in reversed(COST_OPTIONS):
        f = opt(f)
    return f


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


def check_nps(nps, oversubscribe: bool = False, force: bool = False, timing: bool = True,
              placement=None, simulated: bool = False) -> list[str]:
    """The process-count policy (placement.check_process_counts) before any launch; the
    notes are printed."""
    notes = check_process_counts(nps, oversubscribe=oversubscribe, force=force, timing=timing,
                                 placement=placement, simulated=simulated)
    for n in notes:
        err.print(f"note: {n}", highlight=False)
    return notes
