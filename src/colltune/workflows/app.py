"""Tuning for one application: a study from its profile (`study_from_profile`), its
time with and without rules (`compare`, `run --compare`), and the whole loop
(`autotune`): a profiled run, the study of what carries its collective time, that
study measured (sweep.sweep), the rules from it weighted by the profile
(tune.tune_stored), the program run in alternation with and without them, and one
answer. The pieces are in tuning/from_profile.py, tuning/appcompare.py and
tuning/autotune.py."""

from __future__ import annotations

from dataclasses import dataclass

from colltune.drivers import registry
from colltune.mpi.build import build_for
from colltune.mpi.launch import user_command
from colltune.results import db as db_mod
from colltune.rules import interpose
from colltune.studies import study as study_mod
from colltune.tuning import appcompare, from_profile
from colltune.tuning import autotune as autotune_mod
from . import Progress, progress_or_quiet, write_or_keep
from . import sweep as sweep_flow
from . import tune as tune_flow


def study_from_profile(profile, share: float, *, reps: int = 5, library: bool = True,
                       name: str | None = None, mpi_spec: str | None = None):
    """(plan, study text): the cells of a profile that carry `share` of its collective
    time, as a study (tuning/from_profile.py)."""
    build = build_for(mpi_spec)
    return from_profile.make_study(profile, share, build, reps=reps, library=library,
                                   name=name, mpi=mpi_spec)


def as_written(build, cmd, progress: Progress | None = None) -> list[str]:
    """The user's command as `colltune run` runs it: a bare mpirun/mpiexec is the --mpi
    library's, root and slot options said (mpi/launch.user_command)."""
    progress = progress_or_quiet(progress)
    argv, notes = user_command(build.mpi, list(cmd))
    for n in notes:
        progress.say(f"note: {n}" if not n.startswith("hint:") else n)
    return argv


def sides(build, rules_files: list[str]):
    """The two sides of a comparison: the library's defaults against one rules file, or
    one file against the other (told apart by their paths when their names agree)."""
    algos = registry.algorithms(build, hidden=True)
    given = [appcompare.side(build, f, algos) for f in rules_files]
    a, b = (appcompare.side(build, None), given[0]) if len(given) == 1 else given
    if a.label == b.label:  # two files of the same name in different folders
        a = appcompare.Side(a.rules or a.label, a.rules, a.sha256, a.env)
        b = appcompare.Side(b.rules or b.label, b.rules, b.sha256, b.env)
    return a, b


def prepare_compare(rules_files: list[str], metric: str | None, mpi_spec: str | None,
                    db_path: str | None, cmd: list[str], progress: Progress | None = None):
    """(build, argv, a, b) of `run --compare`: the files' form checked before any build,
    the database checked writable, the command as written."""
    appcompare.compile_metric(metric)
    for f in rules_files:  # the files' form first, before any build
        interpose.settings(rules=f)
    db_mod.check_writable(db_path or db_mod.default_path())
    build = build_for(mpi_spec)
    argv = as_written(build, cmd, progress)
    a, b = sides(build, rules_files)
    return build, argv, a, b


def compare(cmd, a, b, reps: int, metric: str | None, build, db_path, timeout=None,
            on_run=None):
    """The program's time on each side, alternating, every run stored (appcompare)."""
    return appcompare.run_compare(list(cmd), a, b, reps, build=build, metric=metric,
                                  db_path=db_path,
                                  timeout=timeout or appcompare.RUN_TIMEOUT_S, on_run=on_run)


class AutotuneView:
    """What `autotune` shows along the way (the command line renders; the default shows
    nothing)."""

    def step(self, text: str) -> None: ...

    def plan(self, pl) -> None: ...

    def sweep_failed(self) -> None: ...

    def tuned(self, res) -> None: ...

    def compare(self, a, b, reps: int) -> None: ...

    def run(self, r, side, res) -> None: ...


@dataclass
class Autotuned:
    wd: object  # autotune_mod's work folder: profile, study, rules
    study: object  # the Study measured
    sweep: object  # its sweep's Outcome
    tuned: object | None = None  # tune_flow.Tuned
    comparison: object | None = None
    answer: object | None = None
    all_native: bool = False
    argv: list[str] | None = None
    db_path: str | None = None

    @property
    def interrupted(self) -> bool:
        return self.sweep.status == "interrupted"


def autotune(argv: list[str], *, dir_: str = "autotune", share: float = 0.9,
             study_reps: int = 5, reps: int = 5, metric: str | None = None,
             library: bool = False, new: bool = False, mpi_spec: str | None = None,
             db_path=None, oversubscribe: bool = False, force: bool = False,
             progress: Progress | None = None, view: AutotuneView | None = None) -> Autotuned:
    """The whole loop for one application (docs/application-tuning.md); a rerun resumes
    from the profile, study and rules kept in `dir_`. An interrupted sweep returns at
    once (Autotuned.interrupted): what it measured is stored."""
    progress = progress_or_quiet(progress)
    view = view or AutotuneView()
    appcompare.compile_metric(metric)
    dbp = str(db_path or db_mod.default_path())
    db_mod.check_writable(dbp)
    wd = autotune_mod.workdir(dir_)
    build = build_for(mpi_spec)
    argv = as_written(build, argv, progress)
    if new or not wd.profile.exists():
        view.step(f"1/5: a profiled run (the library's defaults) -> {wd.profile}")
        autotune_mod.profile_run(argv, build, wd.profile)
    else:
        view.step(f"1/5: the profile in {wd.profile} (--new profiles again)")
    view.step(f"2/5: the study of what carries its collective time -> {wd.study}")
    if new or not wd.study.exists():
        pl, text = autotune_mod.make_study(argv, wd, share, build, reps=study_reps,
                                           library=library, mpi=mpi_spec)
        view.plan(pl)
        write_or_keep(wd.study, text, "study.toml")
    s = study_mod.load(wd.study)
    view.step("3/5: measuring it (resumable: a rerun skips what is stored)")
    oc = sweep_flow.sweep(sweep_flow.load_study(str(wd.study), None, mpi_spec), dbp,
                          mpi_spec=mpi_spec, oversubscribe=oversubscribe, force=force,
                          progress=progress)
    done = Autotuned(wd, s, oc, argv=argv, db_path=dbp)
    status = sweep_flow.exit_status(oc)
    if status == 130:
        return done
    if status:
        view.sweep_failed()
    view.step(f"4/5: the rules, weighted by the profile -> {wd.rules}")
    done.tuned = tune_flow.tune_stored(dbp, study=s.name, target="colltune",
                                       output=str(wd.rules),
                                       calls=interpose.read_profile(str(wd.profile)).calls(),
                                       progress=progress)
    view.tuned(done.tuned)
    view.step(f"5/5: the program with the library's defaults and with the rules, {reps} runs "
              "each, alternating")
    a = appcompare.side(build, None)
    b = appcompare.side(build, str(wd.rules), registry.algorithms(build, hidden=True))
    view.compare(a, b, reps)
    done.comparison = compare(argv, a, b, reps, metric, build, dbp, on_run=view.run)
    done.answer = autotune_mod.answer(done.comparison, wd.rules, argv)
    done.all_native = autotune_mod.all_native(wd.rules)
    return done
