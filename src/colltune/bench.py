"""Launch colltune-bench and collect its records."""

from __future__ import annotations

import json
from dataclasses import dataclass

from . import launch
from .build import Build


class BenchError(RuntimeError):
    pass


@dataclass
class BenchSpec:
    collective: str
    algos: list[str]
    np: int
    sizes: list[int]
    iterations: int | None = None
    warmup: int | None = None
    reps: int = 3
    root: int = 0
    dtype: str = "char"
    op: str = "sum"


def run(build: Build, spec: BenchSpec, timeout: float = 3600) -> tuple[list[dict], list[str]]:
    """Run one launch; returns its records and the launcher's notes."""
    prog = [str(build.program("colltune-bench")), "--coll", spec.collective,
            "--algo", ",".join(spec.algos), "--sizes", ",".join(map(str, spec.sizes)),
            "--reps", str(spec.reps), "--root", str(spec.root), "--dtype", spec.dtype,
            "--op", spec.op]
    if spec.iterations is not None:
        prog += ["--iterations", str(spec.iterations)]
    if spec.warmup is not None:
        prog += ["--warmup", str(spec.warmup)]
    ln = launch.prepare(build.mpi, spec.np, prog)
    res = launch.run(ln, timeout=timeout)
    if res.timed_out:
        raise BenchError(f"benchmark timed out after {timeout:.0f} s: {res.command}")
    if res.returncode != 0:
        msg = "\n".join(l for l in res.stderr.strip().splitlines() if l.startswith("error:"))
        raise BenchError(msg or f"benchmark failed ({res.returncode}): {res.stderr.strip()[-2000:]}")
    records = []
    for line in res.stdout.splitlines():
        if line.startswith("{"):
            rec = json.loads(line)
            rec["command"] = res.command
            records.append(rec)
    return records, res.notes
