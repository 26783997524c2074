"""The local-reduction timer: MPI_Reduce_local timed on one process, the cost model's γ.

Launches `colltune-gamma` (native/tools/gamma.c) and returns its records, one per
size (min/median/max µs of a call); analysis/costmodel.py fits γ from them
(`colltune model`, docs/cost-model.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from colltune.base.errors import ColltuneError
from colltune.drivers.run import run_program
from colltune.mpi.build import Build

GAMMA_SIZES = (16384, 65536, 262144, 1048576, 4194304)
# sizes of the local copy and reduction `colltune platform calibrate` times: the table
# simulation charges them from (docs/simulation.md, "Charged computation")
COMPUTE_SIZES = (8, 1024, 8192, 65536, 262144, 1048576)
# a pool of buffers larger than a processor's caches: each timed call's data comes from
# memory (colltune-gamma's POOL argument)
COLD_POOL_BYTES = 256 << 20


class GammaError(ColltuneError, RuntimeError):
    """The local-reduction timer could not run or printed nothing usable."""


@dataclass
class GammaRun:
    points: list[dict]   # one per size: size, dtype, op, iterations, reps, min/median/max_us
    sizes: tuple[int, ...]
    dtype: str
    op: str
    command: str
    notes: list[str]


def measure_gamma(build: Build, dtype: str = "char", op: str = "sum", sizes=GAMMA_SIZES,
                  timeout: float = 300, pool_bytes: int | None = None) -> GammaRun:
    """Time MPI_Reduce_local of `dtype` and `op` on one process at each size (bytes);
    op "copy": a memcpy of the same bytes instead. `pool_bytes`: the calls take their
    buffers in turn from a pool of that size (COLD_POOL_BYTES: larger than the caches,
    each call's data comes from memory); None: one pair of buffers, reused."""
    sizes = tuple(int(s) for s in sizes)
    if pool_bytes is not None and pool_bytes <= 0:
        raise GammaError(f"pool of {pool_bytes} bytes: must be positive")
    args = [dtype, op, ",".join(map(str, sizes))]
    if pool_bytes is not None:
        args.append(str(int(pool_bytes)))
    res = run_program(build, "colltune-gamma", 1, args,
                      error=GammaError, timeout=timeout, require_records=True)
    return GammaRun(res.records, sizes, dtype, op, res.command, res.notes)
