"""`colltune platform calibrate`: measure this machine (a 2-process ping-pong, two
messages at once, the eager limit, a local copy and reduction) and fit the
this-machine platform the simulator uses (mpi/platforms.calibrated)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from colltune.base.errors import ColltuneError
from colltune.base.units import fmt_size
from colltune.drivers.gamma import COLD_POOL_BYTES, COMPUTE_SIZES, measure_gamma
from colltune.drivers.p2p import (EXCHANGE_SIZES, PingpongSpec, measure_eager_limit,
                                  measure_exchange, run_pingpong)
from colltune.mpi import platforms as plat
from colltune.mpi.build import Build

from .basic import Progress, quiet

__all__ = ["records_from_json", "check_sizes", "calibrate", "far_from_fit"]


def records_from_json(path: str) -> list[dict]:
    """Ping-pong records as `colltune pingpong --format json` writes them."""
    try:
        records = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ColltuneError(f"--from-json {path}: {exc}") from None
    if not isinstance(records, list):
        raise ColltuneError(f"--from-json {path}: expected a list of ping-pong records")
    return records


def check_sizes(sizes: list[int] | None) -> None:
    """At least two ping-pong sizes (fitting latency and bandwidth needs two)."""
    if sizes is None or len(sizes) < 2:
        raise ColltuneError(f"--size: {len(sizes or [])} size; fitting latency and bandwidth "
                            "needs at least two (e.g. --size 8:1M)")


def calibrate(build: Build | Callable[[], Build], sizes: list[int] | None = None,
              reps: int = 11, statistic: str = "min", piecewise: bool = True,
              records: list[dict] | None = None, records_from: str | None = None,
              compute: bool = True, data_from: str = "memory", eager: bool = True,
              exchange: bool = True, timeout: float = 600,
              progress: Progress = quiet) -> plat.Platform:
    """The this-machine platform fitted to what is measured here: a 2-process ping-pong
    at `sizes` (or the ping-pong `records` given, read from `records_from`), and unless
    switched off the local copy and reduction (data from memory or cache), the eager
    limit and two messages at once. `build` (or a function that builds) is used only
    for what is measured. The platform is returned, not written."""
    b = None

    def built() -> Build:
        nonlocal b
        if b is None:
            b = build() if callable(build) else build
        return b

    if records is None:
        check_sizes(sizes)
        built()
        progress(f"ping-pong, 2 processes, {len(sizes)} sizes x {reps} repetitions "
                 f"({b.mpi.banner}) ...")
        records, _ = run_pingpong(b, PingpongSpec(2, tuple(sizes), reps=reps),
                                  timeout=timeout)
        command_line = records[0].get("command", "")
    else:
        command_line = f"records of {records_from}"
    charged = {}
    if compute:
        built()
        for kind, op in (("copy", "copy"), ("reduce", "sum")):
            progress(f"local {kind} ({'memcpy' if op == 'copy' else 'MPI_Reduce_local, char sum'}"
                     f"), one process, {len(COMPUTE_SIZES)} sizes, data from {data_from} ...")
            pool = COLD_POOL_BYTES if data_from == "memory" else None
            g = measure_gamma(b, "char", op, sizes=COMPUTE_SIZES, timeout=timeout,
                              pool_bytes=pool)
            charged[kind] = {"points": g.points, "command": g.command, "pool_bytes": pool}
    eager_rec = None
    if eager:
        built()
        progress("eager limit: MPI_Send with the receiver 1 ms late, 2 processes ...")
        eager_rec = measure_eager_limit(b, timeout=timeout)
    pair = None
    measured = {int(r["size"]) for r in records if r.get("kind", "pingpong") == "pingpong"}
    pair_sizes = [m for m in EXCHANGE_SIZES if m in measured]
    if exchange and not pair_sizes:
        progress("no exchange (two messages at once): it is compared with the ping-pong at "
                 + ", ".join(map(fmt_size, EXCHANGE_SIZES)) + ", none of which was measured")
    elif exchange:
        built()
        progress(f"two messages at once: 2 processes sending to each other, "
                 f"{len(pair_sizes)} sizes x {reps} repetitions ...")
        pair = measure_exchange(b, pair_sizes, reps=reps, timeout=timeout)
    return plat.calibrated(records, statistic=statistic, piecewise=piecewise,
                           command=command_line, compute=charged, eager=eager_rec,
                           exchange=pair)


def far_from_fit(p: plat.Platform) -> list[int]:
    """The calibrated sizes whose measured time is more than 2x off the Hockney fit."""
    c = p.calibration
    return [m for m, t in zip(c["sizes"], c["times_us"])
            if not 0.5 <= t / (c["alpha_us"] + m / (c["beta_GBps"] * 1e3)) <= 2]
