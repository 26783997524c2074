"""`colltune autotune -- CMD`: the whole loop for one application, and its one answer.

1. a profiled run of the program under the interposition library (no rules: the
   library's defaults run), writing WORKDIR/profile.json (`profile_run`);
2. the study from it (tuning/from_profile.py), WORKDIR/study.toml;
3. the study measured (studies/sweep.py: resumable, Ctrl-C keeps what was measured);
4. the rules (tuning/tune.py, target colltune), their quality weighted by the profile,
   WORKDIR/rules;
5. the program run alternately with the library's defaults and with the rules
   (tuning/appcompare.py), with the evidence;
6. one answer (`answer`): the rules file to use, or "keep the library's defaults".

A rerun with the same WORKDIR resumes: the profile and the study that are there are
used again (`--new` makes them afresh), the sweep skips the launches it stored, and the
comparison is measured again (the earlier ones stay stored).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from colltune.analysis import evidence
from colltune.base.errors import ColltuneError
from colltune.drivers import registry
from colltune.mpi import launch
from colltune.rules import interpose
from colltune.rules import ruleset as rules_mod
from colltune.studies import study as study_mod
from colltune.tuning import appcompare, from_profile

PROFILE = "profile.json"
STUDY = "study.toml"
RULES = "rules"


class AutotuneError(ColltuneError):
    """A step of the loop that cannot go on (the profiled run failed, no profile)."""


@dataclass(frozen=True)
class Workdir:
    path: Path

    @property
    def profile(self) -> Path:
        return self.path / PROFILE

    @property
    def study(self) -> Path:
        return self.path / STUDY

    @property
    def rules(self) -> Path:
        return self.path / RULES


def workdir(path: str | Path) -> Workdir:
    """The loop's folder (made if missing: its parent must exist)."""
    p = Path(path).expanduser().resolve()
    if not p.parent.is_dir():
        raise AutotuneError(f"--dir {path}: the folder {p.parent} does not exist")
    p.mkdir(exist_ok=True)
    return Workdir(p)


def profile_run(argv: list[str], build, profile: Path,
                timeout: float = appcompare.RUN_TIMEOUT_S) -> launch.Result:
    """Run the program once under the interposition library with no rules (the
    library's defaults: `native` everywhere), writing its profile at MPI_Finalize."""
    if not argv:
        raise AutotuneError("nothing to run: give the command after --, e.g. colltune "
                            "autotune -- mpirun -np 4 ./app")
    if profile.exists():
        profile.unlink()
    extra = interpose.settings(profile=profile)
    extra.update(interpose.preload(build))
    side = appcompare.Side("profiled", None, None, extra)
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLLTUNE_")}
    env.update(extra)
    res = launch.run(launch.Launch(appcompare.argv_for(argv, side, build.mpi.kind), env),
                     timeout=timeout)
    if res.timed_out or res.returncode != 0:
        tail = (res.stderr.strip() or res.stdout.strip())[-400:]
        why = "timed out" if res.timed_out else f"exit status {res.returncode}"
        raise AutotuneError(f"the profiled run failed ({why}): {res.command}"
                            + (f"; its output ends: {tail!r}" if tail else ""))
    if not profile.exists():
        raise AutotuneError(f"the profiled run wrote no profile ({profile}): is the program an "
                            f"MPI program built with {build.mpi.banner} that calls MPI_Finalize?")
    return res


def all_native(rules_path: Path) -> bool:
    """Whether every rule of a rules file says `native` (the library's own)."""
    rs = rules_mod.read(rules_path)
    return all(r.algorithm == "native" for r in rs.rules)


@dataclass
class Answer:
    use_rules: bool
    line: str  # the answer in one sentence
    evidence: str  # the verdict's text


def answer(cmp: appcompare.Comparison, rules_path: Path, argv: list[str]) -> Answer:
    """The one answer of the loop: the rules file when the program was faster with it
    beyond the noise, else the library's defaults."""
    v = cmp.verdict or cmp.decide()
    text = v.text(cmp.a.label)
    if v.outcome == "faster":
        return Answer(True, f"use the rules file {rules_path}: colltune run --rules {rules_path} "
                            f"-- {' '.join(argv)}", text)
    why = {"slower": "the rules made the program slower",
           "tie": "no rule beat them beyond the noise",
           "insufficient": f"too few runs to tell (at least {evidence.MIN_PAIRS} a side)"}.get(
        v.outcome, f"the comparison is not conclusive ({v.outcome})")
    return Answer(False, f"keep the library's defaults: {why}", text)


def program_name(argv: list[str]) -> str:
    """The program of a command line (`mpirun -np 2 ./app x` -> app): the first argument
    that is an executable file, after the launcher."""
    for a in argv[1:] if len(argv) > 1 else argv:
        if os.path.isfile(a) and os.access(a, os.X_OK):
            return Path(a).name
    return Path(argv[0]).name if argv else "app"


def make_study(argv: list[str], wd: Workdir, share: float, build, *, reps: int = 5,
               library: bool = False, mpi: str | None = None):
    """(plan, study text) from the loop's profile, named for the program and a digest of
    what it measures (two applications never share a study; the same cells resume)."""
    pl = from_profile.plan(interpose.read_profile(wd.profile), wd.profile, share,
                           from_profile.changeable(build))
    what = repr((pl.collectives(), pl.sizes(), pl.processes())).encode()
    name = f"{program_name(argv)}-{hashlib.sha1(what).hexdigest()[:8]}"
    text = from_profile.study_text(pl, name=name, repetitions=reps, library=library,
                                   algorithms=registry.algorithms(build), mpi=mpi)
    study_mod.loads(text, source=str(wd.study))
    return pl, text
