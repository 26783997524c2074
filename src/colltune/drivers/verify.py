"""The correctness matrix: each algorithm against the MPI library's own collective.

One launch of colltune-verify per process count runs every case; its JSON lines
are collected here into a report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from colltune.drivers.run import run_program
from colltune.mpi.backend import SIMULATED, backend_for
from colltune.mpi.build import Build
from colltune.base.errors import ColltuneError

DEFAULT_NPS = (1, 2, 3, 4, 5, 7, 8, 13, 16)
FAMILIES = ("main", "mixed", "garbage", "self", "inter", "remap", "empty")
# Under SimGrid's SMPI: inter and mixed (mpi.backend says why)
SMPI_UNSUPPORTED_FAMILIES = SIMULATED.unsupported_families


@dataclass
class RunOutcome:
    np: int
    command: str
    algos: list[dict] = field(default_factory=list)
    failures: list[dict] = field(default_factory=list)
    summary: dict | None = None
    error: str | None = None  # crash or timeout, with the case running at the time
    notes: list[str] = field(default_factory=list)
    # the nodes and processes per node MPI saw (MPI_Comm_split_type shared): {"nodes", "ppn"}
    placement: dict | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and not self.failures and self.summary is not None \
            and self.summary["failed"] == 0


@dataclass
class Report:
    runs: list[RunOutcome] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.runs)

    @property
    def cases(self) -> int:
        return sum(r.summary["cases"] for r in self.runs if r.summary)

    def failure_lines(self) -> list[str]:
        lines = []
        for r in self.runs:
            if r.error:
                lines.append(f"np={r.np}: {r.error}")
            for f in r.failures:
                fam = f.get("family", "main")
                lines.append(
                    f"FAIL {f['collective']}/{f['spec']} np={f['np']} "
                    + (f"[{fam}{', MPI_COMM_SELF' if f.get('comm') == 'self' else ''}] "
                       if fam != "main" else "")
                    + f"root={f['root']} "
                    f"count={f['count']} type={f['type']} op={f['op']} "
                    f"in_place={'yes' if f['in_place'] else 'no'} (rank {f['rank']}): "
                    f"{f['message']}"
                )
        return lines


def _last_started(stderr: str) -> str:
    started = [l for l in stderr.splitlines() if l.startswith("verify: ")]
    return started[-1][len("verify: "):].rstrip(" .") if started else "start-up"


def run(build: Build, nps: list[int], collectives: list[str], algos: list[str] | None,
        quick: bool = False, timeout: float = 1200,
        progress: Callable[[RunOutcome], None] | None = None,
        families: list[str] | None = None) -> Report:
    """Run colltune-verify at each process count. families: case families
    (main, mixed, garbage, self, inter, remap, empty; default all; under SimGrid's SMPI all but
    inter and mixed, see SMPI_UNSUPPORTED_FAMILIES)."""
    report = Report()
    backend = backend_for(build)
    if backend.unsupported_families and families is not None \
            and set(families) == set(FAMILIES):  # "all" (the command's default)
        families = None
    if families is None and backend.unsupported_families:
        families = list(backend.verify_families(FAMILIES))
    elif families and backend.unsupported_families:
        bad = [f for f in families if f in backend.unsupported_families]
        if bad:

            raise ColltuneError(f"family {', '.join(bad)}: not under SimGrid's SMPI (it has no "
                                "inter-communicators, and does not match different derived "
                                "datatypes of one type signature)")
    for np in nps:
        prog = ["--coll", ",".join(collectives)]
        if algos:
            prog += ["--algo", ",".join(algos)]
        if quick:
            prog.append("--quick")
        if families:
            prog += ["--family", ",".join(families)]
        res = run_program(build, "colltune-verify", np, prog, timeout=timeout, check=False,
                          strict=False)
        out = RunOutcome(np, res.command, notes=res.notes)
        for rec in res.records:
            ev = rec.get("event")
            if ev == "algo":
                out.algos.append(rec)
            elif ev == "fail":
                out.failures.append(rec)
            elif ev == "summary":
                out.summary = rec
            elif rec.get("kind") == "placement":
                out.placement = {"nodes": rec["nodes"], "ppn": rec["ppn"]}
        if res.timed_out:
            out.error = (f"timed out after {timeout:.0f} s (hang?) while running "
                         f"{_last_started(res.stderr)}")
        elif out.summary is None:
            tail = "\n".join(res.stderr.strip().splitlines()[-15:])
            out.error = (f"exited with status {res.returncode} while running "
                         f"{_last_started(res.stderr)}:\n{tail}")
        report.runs.append(out)
        if progress:
            progress(out)
    return report
