"""The one place that launches MPI programs.

Adds `--oversubscribe` (Open MPI) when more processes than cores are asked for
and `--allow-run-as-root` (Open MPI) when running as root, only then, and says
so in the notes it returns; under MPICH, oversubscription turns on yielding
progress so that waiting processes give their core away.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass, field

from .mpi import MPI


@dataclass
class Launch:
    argv: list[str]
    env: dict[str, str]
    notes: list[str] = field(default_factory=list)

    @property
    def command_line(self) -> str:
        return " ".join(self.argv)


@dataclass
class Result:
    command: str
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    notes: list[str]


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def prepare(mpi: MPI, np: int, program: list[str], extra_env: dict[str, str] | None = None) -> Launch:
    """Command line and environment to run `program` on `np` local processes."""
    if np < 1:
        raise ValueError(f"process count {np} must be at least 1")
    env = mpi.env()
    notes: list[str] = []
    over = np > cores()
    if mpi.kind == "mpich":
        argv = [str(mpi.launcher), "-n", str(np)]
        if over:
            env.setdefault("MPIR_CVAR_CH4_PROGRESS_THROTTLE", "1")
            env.setdefault("MPIR_CVAR_ENABLE_HEAVY_YIELD", "1")
            notes.append(f"{np} processes on {cores()} cores: MPICH progress set to yield")
    else:
        argv = [str(mpi.launcher), "-np", str(np)]
        if mpi.kind == "openmpi":
            if os.geteuid() == 0:
                argv.append("--allow-run-as-root")
                notes.append("running as root: added --allow-run-as-root")
            if over:
                argv.append("--oversubscribe")
                notes.append(f"{np} processes on {cores()} cores: added --oversubscribe")
    if extra_env:
        env.update(extra_env)
    return Launch(argv + program, env, notes)


def run(launch: Launch, timeout: float | None = None) -> Result:
    """Run a launch to completion; on timeout the whole process group is killed."""
    proc = subprocess.Popen(launch.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=launch.env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        timed_out = True
    except KeyboardInterrupt:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return Result(launch.command_line, proc.returncode, out, err, timed_out, launch.notes)
