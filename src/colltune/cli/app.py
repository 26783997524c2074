"""Tuning for one application: `colltune study from-profile` (a study from the profile
of `colltune run --profile`) and the rendering of the comparisons of `colltune run
--compare` and `colltune autotune`. The work is in colltune.workflows.app (over
colltune.tuning.from_profile, appcompare and autotune)."""

from __future__ import annotations

import statistics
import sys

import click
from rich.markup import escape
from rich.table import Table

from colltune.base.files import check_writable
from colltune.base.units import fmt_size
from colltune.workflows import app as app_flow
from ._common import (MPI_HELP, Command, command, db_option, fail, out,
                      oversubscribe_options, progress, write_or_keep)
from .rules import Group
from .tune import render as render_tuned


def parse_share(text: str) -> float:
    """`90%`, `90` or `0.9` -> 0.9."""
    t = str(text).strip()
    pct = t.endswith("%")
    try:
        v = float(t.rstrip("%").strip())
    except ValueError:
        fail(f"--share {text}: a share of the collective time, e.g. 90% or 0.9")
    if pct or v > 1:
        v /= 100
    if not 0 < v <= 1:
        fail(f"--share {text}: between 0 and 100 %")
    return v


def print_plan(pl) -> None:
    t = Table(title=f"{pl.source}: {100 * pl.covered:.1f} % of the collective time "
                    f"({pl.total_s:.6g} s a rank) in {len(pl.cells)} cells",
              title_justify="left")
    for h in ("collective", "np", "bucket", "sizes the program used", "calls", "share", "measured"):
        t.add_column(h, justify="right" if h in ("np", "calls", "share") else "left")
    for c in pl.cells:
        sizes = ", ".join(fmt_size(s) for s in c.sizes) + (" (and more)" if c.capped else "")
        if not c.observed:
            sizes += " (centre: no sizes in the profile)"
        t.add_row(escape(c.label), str(c.np), c.bucket_text(), sizes, str(c.calls),
                  f"{100 * c.share:.1f} %", "yes" if c.measured else f"no: {escape(c.why_not)}")
    out.print(t)
    if pl.left:
        out.print(f"beyond the share: {len(pl.left)} more cells, "
                  f"{100 * sum(c.share for c in pl.left):.1f} % of the time", highlight=False)


@click.group(name="study", cls=Group)
def study() -> None:
    """Study files made for you (colltune sweep STUDY.toml measures them)."""


@study.command("from-profile", cls=Command)
@click.argument("profile", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              help="The study file to write (TOML); checked before anything is read.")
@click.option("--share", default="90%", show_default=True,
              help="The share of the program's collective time to cover: the cells "
                   "(collective, communicator size, size bucket) in order of time until it.")
@click.option("--reps", type=click.IntRange(1), default=5, show_default=True,
              help="Repetitions of the study (separate launches).")
@click.option("--library/--no-library", default=True, show_default=True,
              help="Also the MPI library's own algorithms as candidates (each a launch of "
                   "its own; rules for --target openmpi/mpich).")
@click.option("--name", help="The study's name (default: from the profile's file name).")
@click.option("--mpi", "mpi_spec", help=MPI_HELP + " (the one the program is built with).")
def from_profile_cmd(profile, output, share, reps, library, name, mpi_spec) -> None:
    """A study of what an application's profile (colltune run --profile) says carries
    its collective time: the collectives, communicator sizes and sizes it really used,
    with every colltune algorithm (parameter grids included), native and the library's
    own as candidates. Collectives colltune cannot change are listed, not measured."""
    check_writable(output, "-o")
    frac = parse_share(share)
    pl, text = app_flow.study_from_profile(profile, frac, reps=reps, library=library, name=name,
                                           mpi_spec=mpi_spec)
    print_plan(pl)
    write_or_keep(output, text, "study.toml")
    out.print(f"wrote {output}: colltune sweep {output} measures it", highlight=False)


# ------------------------------------------------------------- run --compare

def compare_options(f):
    """The options of `colltune run --compare` (cli/interpose.py run)."""
    for opt in reversed([
        click.option("--compare", multiple=True, type=click.Path(dir_okay=False),
                     metavar="RULES", help="Run the program alternately with the library's "
                     "defaults and with this rules file (give it twice: one file against the "
                     "other), --reps times each, and say whether it changed beyond the noise."),
        click.option("--reps", type=click.IntRange(1), default=5, show_default=True,
                     help="--compare: runs of each side (4 or more to tell a difference)."),
        click.option("--metric", metavar="REGEX",
                     help="--compare: the program's own figure (a time: lower is better), the "
                          "last number this expression matches in its output (its first "
                          "group), instead of the wall time."),
        db_option(help="--compare: the results database the runs are stored in.")]):
        f = opt(f)
    return f


def run_compare(rules_files: list[str], reps: int, metric: str | None, mpi_spec: str | None,
                db_path: str | None, cmd: list[str], timeout: float | None = None):
    """`colltune run --compare RULES [--compare RULES2] --reps N -- CMD`: the program's
    time without and with the rules (or with each file), with the evidence."""
    if len(rules_files) > 2:
        fail("--compare: one rules file (against the library's defaults) or two")
    if not cmd:
        fail("nothing to run: give the command after --, e.g. colltune run --compare FILE "
             "--reps 5 -- mpirun -np 4 ./app")
    build, argv, a, b = app_flow.prepare_compare(rules_files, metric, mpi_spec, db_path, cmd,
                                                 progress())
    return show_compare(argv, a, b, reps, metric, build, db_path, timeout)


def show_sides(a, b) -> None:
    out.print(f"A: {escape(a.label)}" + (f" ({a.rules}, sha256 {a.sha256[:12]})" if a.rules
                                         else " (the program as it is, nothing preloaded)"),
              highlight=False)
    out.print(f"B: {escape(b.label)}" + (f" ({b.rules}, sha256 {b.sha256[:12]})" if b.rules
                                         else ""), highlight=False)


def show_run(total: int):
    """A line per run of a comparison as it ends."""
    def on_run(r, s, res):
        fig = f", figure {r.metric:g}" if r.metric is not None else ""
        out.print(f"run {r.position + 1}/{total} {r.side} ({escape(s.label)}): "
                  f"{r.wall_s:.3f} s{fig}", highlight=False)
    return on_run


def show_compare(cmd, a, b, reps, metric, build, db_path, timeout=None):
    """Run a comparison, a line per run as it ends, then the table and the answer."""
    show_sides(a, b)
    cmp = app_flow.compare(cmd, a, b, reps, metric, build, db_path, timeout,
                           on_run=show_run(2 * reps))
    render_comparison(cmp)
    return cmp


def render_comparison(cmp) -> None:
    unit = "" if cmp.metric else " (s)"
    t = Table(title=f"{cmp.what()}, {len(cmp.complete_pairs())} pairs (AB BA ...)",
              title_justify="left")
    for h in ("side", "runs", f"median{unit}", f"min{unit}", f"each run in pair order{unit}"):
        t.add_column(h, justify="left" if h == "side" else "right")
    for key, s in (("A", cmp.a), ("B", cmp.b)):
        v = cmp.values(key)
        if not v:
            continue
        t.add_row(f"{key}: {escape(s.label)}", str(len(v)), f"{statistics.median(v):.4g}",
                  f"{min(v):.4g}", " ".join(f"{x:.4g}" for x in v))
    out.print(t)
    out.print(escape(cmp.answer()), highlight=False)
    out.print(f"stored: run {cmp.run_id} of kind app-compare (colltune results --runs --run "
              f"{cmp.run_id})", highlight=False)


# ------------------------------------------------------------------ autotune

@command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--dir", "dir_", default="autotune", show_default=True,
              type=click.Path(file_okay=False),
              help="The loop's folder: profile.json, study.toml and rules are kept there, "
                   "and a rerun resumes from them.")
@click.option("--share", default="90%", show_default=True,
              help="The share of the program's collective time the study covers.")
@click.option("--study-reps", type=click.IntRange(1), default=5, show_default=True,
              help="Repetitions of the study (separate launches of each configuration).")
@click.option("--reps", type=click.IntRange(1), default=5, show_default=True,
              help="Runs of the program on each side of the final comparison.")
@click.option("--metric", metavar="REGEX",
              help="The program's own figure (a time: lower is better) instead of its wall "
                   "time: the last number this expression matches in its output.")
@click.option("--library/--no-library", default=False, show_default=True,
              help="Also measure the MPI library's own algorithms (the rules are colltune's, "
                   "applied by the interposition library, so they cannot be chosen).")
@click.option("--new", is_flag=True,
              help="Profile the program and make the study afresh (else those in --dir).")
@click.option("--mpi", "mpi_spec", help=MPI_HELP + " (the one the program is built with).")
@db_option()
@oversubscribe_options
@click.argument("cmd", nargs=-1, type=click.UNPROCESSED)
def autotune(dir_, share, study_reps, reps, metric, library, new, mpi_spec, db_path,
             oversubscribe, force, cmd) -> None:
    """The whole loop for one application: a profiled run, the study of what carries its
    collective time, that study measured, the rules from it (their quality weighted by
    the profile), the program run with the library's defaults and with the rules in
    alternation, and one answer: the rules file to use, or keep the library's defaults.
    Ctrl-C keeps what was measured; a rerun resumes. docs/application-tuning.md."""
    argv = list(cmd)
    if not argv:
        fail("nothing to run: give the command after --, e.g. colltune autotune -- mpirun "
             "-np 4 ./app")
    frac = parse_share(share)
    res = app_flow.autotune(argv, dir_=dir_, share=frac, study_reps=study_reps, reps=reps,
                            metric=metric, library=library, new=new, mpi_spec=mpi_spec,
                            db_path=db_path, oversubscribe=oversubscribe, force=force,
                            progress=progress(), view=AutotuneView())
    if res.interrupted:  # the sweep kept what it measured
        sys.exit(130)
    ans, wd = res.answer, res.wd
    native = " (every rule says native: the library's own)" if res.all_native else ""
    out.print("")
    out.print(f"[bold]answer:[/] {escape(ans.line)}", highlight=False)
    out.print(f"  the program with the rules{native}: {escape(ans.evidence)}", highlight=False)
    out.print(f"  kept: {wd.profile}, {wd.study}, {wd.rules}; stored in "
              f"{res.db_path} (study {res.study.name}, comparison run "
              f"{res.comparison.run_id})", highlight=False)


class AutotuneView(app_flow.AutotuneView):
    """autotune's steps on stdout, as they come."""

    def step(self, text: str) -> None:
        out.print(f"[bold]autotune[/] {text}", highlight=False)

    def plan(self, pl) -> None:
        print_plan(pl)

    def sweep_failed(self) -> None:
        out.print("note: some launches failed or differed from the library's result (stored "
                  "as such): the rules come from what was measured", highlight=False)

    def tuned(self, res) -> None:
        render_tuned(res)

    def compare(self, a, b, reps: int) -> None:
        show_sides(a, b)
        self._on_run = show_run(2 * reps)

    def run(self, r, side, res) -> None:
        self._on_run(r, side, res)
