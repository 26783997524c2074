"""`colltune heat` and `colltune stream`: the heat-diffusion application and the memory
bandwidth it is bound by (drivers/heat.py launches them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from colltune.drivers.heat import (DECOMPS, OUTPUT_FORMATS, VARIANTS, HeatError, HeatSpec,
                                   StreamSpec, _check_spec, heat_table, reports_table, run_heat,
                                   run_stream, stream_table, with_bound)
from colltune.mpi.build import Build

__all__ = ["DECOMPS", "OUTPUT_FORMATS", "VARIANTS", "HeatError", "HeatSpec", "HeatRun",
           "check_spec", "heat", "stream", "heat_table", "reports_table", "stream_table"]

check_spec = _check_spec  # a HeatSpec's mistakes (HeatError) before anything is built


@dataclass
class HeatRun:
    """A run of the heat application: its summary record (with the bandwidth bound when
    a bandwidth was given or measured), the report records, the STREAM record when it
    was measured first, and the launcher's notes."""

    record: dict
    reports: list[dict] = field(default_factory=list)
    stream: dict | None = None
    notes: list[str] = field(default_factory=list)


def heat(build: Build, spec: HeatSpec, stream_gbs: float | None = None,
         stream_elements: int | None = None, timeout: float = 600) -> HeatRun:
    """One launch of the heat application. With stream_elements, the memory bandwidth
    is measured first at the same process count (STREAM triad) and bounds the GFLOP/s;
    with stream_gbs, that bandwidth is given."""
    if stream_gbs and stream_elements is not None:
        raise HeatError("--stream measures the bandwidth, --stream-gbs gives it: use one "
                        "of them")
    check_spec(spec)
    stream_rec = None
    if stream_elements is not None:
        stream_rec, _ = run_stream(build, StreamSpec(np=spec.np, elements=stream_elements),
                                   timeout=timeout)
        stream_gbs = stream_rec["triad_GBps"]
    rec, reports, notes = run_heat(build, spec, timeout=timeout)
    if stream_gbs:
        rec = with_bound(rec, stream_gbs)
    return HeatRun(rec, reports, stream_rec, notes)


def stream(build: Build, np: int, elements: int | None = None, reps: int = 10,
           timeout: float = 600) -> tuple[dict, list[str]]:
    """One launch of the STREAM triad on `np` processes at once: its record (best GB/s
    of `reps`) and the launcher's notes."""
    return run_stream(build, StreamSpec(np, elements, reps), timeout=timeout)
