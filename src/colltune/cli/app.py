"""Tuning for one application: `colltune study from-profile` (a study from the profile
of `colltune run --profile`) and the rendering of the comparisons of `colltune run
--compare` and `colltune autotune`. The work is in colltune.tuning.from_profile,
colltune.tuning.appcompare and colltune.tuning.autotune."""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from colltune.base.files import check_writable
from colltune.base.units import fmt_size
from colltune.drivers import registry
from colltune.rules import interpose
from colltune.studies import study as study_mod
from colltune.tuning import from_profile
from ._common import MPI_HELP, Command, build_or_fail, fail, out, write_or_keep
from .rules import Group


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


def changeable(build) -> set[str]:
    """The collectives colltune has algorithms of its own for (beyond native)."""
    return {a.collective for a in registry.algorithms(build) if a.name != "native"}


def make_study(profile_path: str, share: float, build, *, reps: int = 5, library: bool = True,
               name: str | None = None, mpi: str | None = None):
    """(plan, study text) of a profile; the text is checked by the one study parser."""
    prof = interpose.read_profile(profile_path)
    pl = from_profile.plan(prof, profile_path, share, changeable(build))
    text = from_profile.study_text(pl, name=name, repetitions=reps, library=library,
                                   algorithms=registry.algorithms(build), mpi=mpi)
    study_mod.loads(text, source=f"{profile_path} (study from it)")
    return pl, text


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
        t.add_row(c.collective, str(c.np), c.bucket_text(), sizes, str(c.calls),
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
    build = build_or_fail(mpi_spec)
    pl, text = make_study(profile, frac, build, reps=reps, library=library, name=name,
                          mpi=mpi_spec)
    print_plan(pl)
    write_or_keep(output, text, "study.toml")
    out.print(f"wrote {output}: colltune sweep {output} measures it", highlight=False)
