"""An application's time with and without rules, measured as a user would
(`colltune run --compare`, the last step of `colltune autotune`).

The program runs alternately on two sides, A and B: the MPI library's defaults (the
program as it is, nothing preloaded) against a rules file under the interposition
library, or two rules files. Each pair of runs is one A and one B back to back, in a
balanced order (AB, BA, AB, ...: a drift of the machine during the comparison falls
on both sides alike). Each run gives its wall time (the whole command: launcher
start-up and the program's own start-up included, as the user waits for it), or the
program's own figure: the last number matched by `--metric REGEX` on its output (the
first group of the expression if it has one; a time: lower is better).

The ratio B / A is the geometric mean of the per-pair ratios with the 95 % interval of
the paired t-test on log times, and the verdict is the project's evidence rule
(analysis/evidence.py `compare(..., pairs=True)`: faster or slower needs the interval
beyond 1 and an effect of at least MIN_EFFECT; else a tie, "no difference beyond the
noise"). Every run is stored in the results database as it ends (results/store.py
`store_app_run`: side, rules file and its SHA-256, command, wall time, figure, exit
status), under a run of kind 'app-compare' that records the host, the MPI library,
the environment and the command line, and, at the end, the outcome (`summary`).
Ctrl-C stops the running program and keeps the runs stored.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from colltune.analysis import evidence
from colltune.base.errors import ColltuneError
from colltune.mpi import launch
from colltune.results import db as db_mod
from colltune.results import store
from colltune.rules import interpose

DEFAULTS = "library defaults"
RUN_TIMEOUT_S = 3600.0


class CompareError(ColltuneError):
    """A comparison that cannot run or whose runs give no figure."""


@dataclass(frozen=True)
class Side:
    label: str  # "library defaults" or the rules file's name
    rules: str | None  # the rules file (absolute), None: the library's defaults
    sha256: str | None
    env: dict[str, str]  # what is added to the environment (COLLTUNE_*, LD_PRELOAD)


@dataclass
class AppRun:
    position: int  # 0-based, in the order run
    pair: int
    side: str  # "A" or "B"
    wall_s: float
    metric: float | None
    returncode: int

    @property
    def value(self) -> float | None:
        return self.metric if self.metric is not None else self.wall_s


@dataclass
class Comparison:
    a: Side
    b: Side
    argv: list[str]
    metric: str | None
    runs: list[AppRun] = field(default_factory=list)
    run_id: int | None = None
    status: str = "running"
    verdict: evidence.Verdict | None = None

    def values(self, side: str) -> list[float]:
        """The figure of every complete pair's run on one side, in pair order."""
        pairs = self.complete_pairs()
        return [r.value for p in pairs for r in self.runs if r.pair == p and r.side == side]

    def complete_pairs(self) -> list[int]:
        have: dict[int, set[str]] = {}
        for r in self.runs:
            have.setdefault(r.pair, set()).add(r.side)
        return sorted(p for p, s in have.items() if s == {"A", "B"})

    def decide(self) -> evidence.Verdict:
        """The verdict on B against A over the complete pairs (evidence.compare, paired)."""
        self.verdict = evidence.compare(self.values("B"), self.values("A"), pairs=True)
        return self.verdict

    def what(self) -> str:
        return f"the program's figure ({self.metric})" if self.metric else "wall time"

    def answer(self) -> str:
        """One line: B against A in words, with the evidence."""
        v = self.verdict or self.decide()
        if v.outcome == "insufficient":
            return f"{self.b.label} against {self.a.label}: {v.text(self.a.label)}"
        head = {"faster": f"{self.b.label} is faster than {self.a.label}",
                "slower": f"{self.b.label} is slower than {self.a.label}",
                "tie": f"no difference beyond the noise between {self.b.label} and "
                       f"{self.a.label}"}.get(
            v.outcome, f"{self.b.label} against {self.a.label}: {v.outcome}")
        return f"{head} ({self.what()}): {v.text(self.a.label)}"

    def summary(self) -> dict:
        v = self.verdict or self.decide()
        return {"a": self.a.label, "b": self.b.label, "a_rules": self.a.rules,
                "b_rules": self.b.rules, "a_sha256": self.a.sha256, "b_sha256": self.b.sha256,
                "metric": self.metric, "what": self.what(), "pairs": len(self.complete_pairs()),
                "verdict": v.to_dict(), "answer": self.answer(), "status": self.status}


def sha256_of(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def side(build, rules: str | None, algorithms=None) -> Side:
    """A side of the comparison: the library's defaults (nothing preloaded) or a rules
    file under the interposition library, checked as `colltune run --rules` checks it."""
    if rules is None:
        return Side(DEFAULTS, None, None, {})
    env = interpose.settings(rules=rules, algorithms=algorithms)
    env.update(interpose.preload(build))
    path = str(Path(rules).resolve())
    return Side(Path(rules).name, path, sha256_of(path), env)


def argv_for(argv: list[str], s: Side, mpi_kind: str) -> list[str]:
    """The command of one side: the launcher passes the side's variables to every rank."""
    out = list(argv)
    if s.env and launch.is_launcher(out[0]):
        out[1:1] = interpose.launcher_options(mpi_kind, sorted(s.env))
    return out


def order(reps: int) -> list[tuple[int, str]]:
    """(pair, side) in the order run: AB, BA, AB, ... (balanced)."""
    out = []
    for p in range(reps):
        out += [(p, "A"), (p, "B")] if p % 2 == 0 else [(p, "B"), (p, "A")]
    return out


def figure(text: str, pattern: re.Pattern) -> float | None:
    """The last number `pattern` matches in `text` (its first group, if it has one)."""
    found = None
    for m in pattern.finditer(text):
        raw = m.group(1) if pattern.groups else m.group(0)
        try:
            found = float(raw)
        except (TypeError, ValueError):
            continue
    return found if found is not None and math.isfinite(found) else None


def compile_metric(metric: str | None) -> re.Pattern | None:
    if metric is None:
        return None
    try:
        return re.compile(metric)
    except re.error as exc:
        raise CompareError(f"--metric {metric!r}: not a regular expression ({exc})") from None


def run_compare(argv: list[str], a: Side, b: Side, reps: int, *, build,
                metric: str | None = None, db_path=None, timeout: float = RUN_TIMEOUT_S,
                on_run: Callable[[AppRun, Side, launch.Result], None] | None = None,
                kind: str = "app-compare") -> Comparison:
    """Run the program `reps` times on each side in the balanced order, store every run,
    and decide. A run that fails (exit status, timeout, no figure) stops the comparison
    with CompareError (the runs before it stay stored); Ctrl-C stops the running program,
    keeps what was stored and marks the comparison 'interrupted' (re-raised)."""
    if not argv:
        raise CompareError("nothing to run: give the command after --, e.g. colltune run "
                           "--compare FILE --reps 5 -- mpirun -np 4 ./app")
    if reps < 1:
        raise CompareError(f"--reps {reps}: at least 1 (4 or more to tell a difference from "
                           "the noise)")
    pattern = compile_metric(metric)
    cmp = Comparison(a, b, list(argv), metric)
    conn = db_mod.open_db(db_path)
    try:
        env = dict(os.environ)
        cmp.run_id = store.store_run(
            conn, kind=kind, mpi=build.mpi, launcher=os.path.basename(argv[0]),
            command_line=list(argv), env=env,
            notes=[f"A: {a.label}", f"B: {b.label}", f"reps {reps}, order AB BA ..."])
        sides = {"A": a, "B": b}
        try:
            for pos, (pair, which) in enumerate(order(reps)):
                s = sides[which]
                cmd = argv_for(argv, s, build.mpi.kind)
                started = db_mod.now()
                # only this side's settings: none of the caller's COLLTUNE_* variables
                full = {k: v for k, v in env.items() if not k.startswith("COLLTUNE_")}
                full.update(s.env)
                res = launch.run(launch.Launch(cmd, full), timeout=timeout)
                value = figure(res.stdout + "\n" + res.stderr, pattern) if pattern else None
                r = AppRun(pos, pair, which, res.seconds, value, res.returncode)
                ok = res.returncode == 0 and not res.timed_out and (
                    pattern is None or value is not None)
                store.store_app_run(conn, cmp.run_id, position=pos, pair=pair, arm=which,
                                    rules_file=s.rules, rules_sha256=s.sha256, command=cmd,
                                    started_at=started, wall_s=res.seconds, metric=value,
                                    returncode=None if res.timed_out else res.returncode)
                if not ok:
                    why = ("timed out" if res.timed_out else
                           f"exit status {res.returncode}" if res.returncode
                           else f"--metric {metric!r} matched no number in its output")
                    tail = (res.stderr.strip() or res.stdout.strip())[-400:]
                    raise CompareError(f"run {pos + 1} ({s.label}) {why}: {shlex.join(cmd)}"
                                       + (f"; its output ends: {tail!r}" if tail else ""))
                cmp.runs.append(r)
                if on_run is not None:
                    on_run(r, s, res)
            cmp.status = "done"
        except KeyboardInterrupt:
            cmp.status = "interrupted"
            raise
        except CompareError:
            cmp.status = "failed"
            raise
        finally:
            if cmp.runs:
                cmp.decide()
                store.set_run_summary(conn, cmp.run_id, cmp.summary())
            store.finish_run(conn, cmp.run_id, cmp.status if cmp.status != "running"
                             else "failed")
    finally:
        conn.close()
    return cmp

