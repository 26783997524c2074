"""`colltune pingpong` and `colltune probe`: point-to-point latency and bandwidth, and
the network probe (drivers/p2p.py launches them)."""

from __future__ import annotations

from collections.abc import Callable

from colltune.drivers.p2p import (MODES, PINGPONG_FIELDS, PROBE_FIELDS, P2PError, PingpongSpec,
                                  ProbeSpec, _check_np, _render, pingpong_table, probe_table,
                                  run_pingpong, run_probe)
from colltune.mpi.build import Build

__all__ = ["MODES", "PINGPONG_FIELDS", "PROBE_FIELDS", "P2PError", "check_np", "render",
           "pingpong_table", "probe_table", "pingpong", "probe", "describe_pingpong"]

check_np = _check_np  # what a mode needs of --np, checked before anything is built
render = _render      # records as csv or json text


def pingpong(build: Build, nps: list[int], sizes: list[int], mode: str = "pingpong",
             iterations: int | None = None, warmup: int | None = None, reps: int = 5,
             persistent: bool = False, timeout: float = 600,
             on_launch: Callable[[int, list[dict], list[str]], None] | None = None
             ) -> list[dict]:
    """One launch of the ping-pong (or ring, or exchange) per process count; the records
    of every size and count. on_launch(np, records, notes) after each launch."""
    for np in nps:
        check_np(mode, np)
    records = []
    for np in nps:
        spec = PingpongSpec(np, tuple(sizes), mode, iterations, warmup, reps, persistent)
        recs, notes = run_pingpong(build, spec, timeout=timeout)
        if on_launch:
            on_launch(np, recs, notes)
        records += recs
    return records


def describe_pingpong(mode: str, np: int, persistent: bool) -> str:
    """What a launch of `mode` times, and how it sends (a table's title)."""
    how = ("persistent requests (MPI_Start/MPI_Wait)" if persistent
           else "MPI_Sendrecv" if mode == "exchange"
           else "MPI_Send/MPI_Recv, as osu_latency")
    what = {"pingpong": "one-way latency = RTT/2",
            "exchange": "ranks 0 and 1 send to each other at once, time of one "
                        "exchange"}.get(mode, f"per-hop latency = round time/{np}")
    return f"{mode}, {np} processes, {what}, {how}"


def probe(build: Build, np: int, size: int, iterations: int = 1000, warmup: int | None = None,
          seed: int | None = None, baseline_us: float | None = None, timeout: float = 600
          ) -> tuple[dict, list[str]]:
    """One launch of the network probe: its record (latency distribution, load index)
    and the launcher's notes."""
    return run_probe(build, ProbeSpec(np, size, iterations, warmup, seed, baseline_us),
                     timeout=timeout)
