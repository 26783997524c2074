"""Heat diffusion application and STREAM triad: collectives inside a real code.

Launches `colltune-heat` and `colltune-stream` (native/apps/heat/heat.c, native/apps/stream/stream.c),
parses their JSON lines and relates the stencil's speed to the memory
bandwidth. The commands `heat` and `stream` are in cli/heat.py. See docs/heat.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from colltune.drivers import run
from colltune.mpi.build import Build
from colltune.base.errors import ColltuneError
from colltune.base.units import fmt_size

DECOMPS = ("rows", "2d")
VARIANTS = ("blocking", "overlap", "persistent")
OUTPUT_FORMATS = ("raw", "pgm")

# The stencil's arithmetic per cell and iteration (heat.c): 3 adds for the
# neighbour sum, 4*T, the difference, k*(...), the add = 7 for the update,
# plus 1 subtraction for the change |T' - T| (abs and max not counted).
FLOPS_PER_CELL = 8
# Memory traffic per cell and iteration with perfect caching of the
# neighbours: read T, read k, write T' = 3 x 8 bytes. Like the STREAM triad
# (read b, read c, write a) it counts no write-allocate read, so the ratio of
# the two is the same with or without write-allocate.
BYTES_PER_CELL = 24

HEAT_FIELDS = ["kind", "np", "rows", "cols", "decomp", "variant", "pgrid", "iterations",
               "iterations_done", "threshold", "converged", "final_max_change", "time_s",
               "gflops", "flops_per_cell", "bytes_per_cell", "comp_s_max", "comp_s_mean",
               "halo_s_max", "halo_s_mean", "coll_s_max", "coll_s_mean", "time_s_mean",
               "allreduce", "allreduce_used", "allreduce_fallback", "reduce", "reduce_used",
               "reduce_fallback", "report_interval", "reports", "seed", "init",
               "conductivity", "output", "output_format", "mpi"]
STREAM_FIELDS = ["kind", "np", "elements", "array_bytes", "reps", "best_s", "avg_s", "max_s",
                 "bytes_per_element", "triad_GBps", "triad_GBps_write_allocate",
                 "per_rank_GBps", "sum_rank_best_GBps", "mpi"]


class HeatError(ColltuneError, RuntimeError):
    """colltune-heat or colltune-stream could not run or printed nonsense."""


@dataclass
class HeatSpec:
    np: int = 1
    rows: int | None = None          # None: 100, or the size of the PGM files
    cols: int | None = None
    iterations: int = 1000
    threshold: float = 0.0           # 0: no convergence test
    report_interval: int = 0         # 0: no reports
    decomp: str = "rows"
    pgrid: str | None = None         # "PRxPC", --decomp 2d only
    variant: str = "overlap"
    allreduce: str = "native"
    reduce: str = "native"
    seed: int | None = None
    init: str | None = None          # PGM file
    conductivity: str | None = None  # PGM file
    output: str | None = None
    output_format: str = "raw"


@dataclass
class StreamSpec:
    np: int = 1
    elements: int | None = None      # doubles per array per rank (default 2^24)
    reps: int = 10


def bandwidth_bound_gflops(gbs: float, bytes_per_cell: int = BYTES_PER_CELL,
                           flops_per_cell: int = FLOPS_PER_CELL) -> float:
    """Most GFLOP/s the stencil can reach if memory moves `gbs` GB/s (10^9 B/s)."""
    if gbs <= 0:
        raise ValueError(f"bandwidth {gbs} GB/s must be positive")
    return gbs / bytes_per_cell * flops_per_cell


def with_bound(rec: dict, gbs: float) -> dict:
    """The heat record plus the bandwidth bound and the fraction of it reached."""
    bound = bandwidth_bound_gflops(gbs, rec.get("bytes_per_cell", BYTES_PER_CELL),
                                   rec.get("flops_per_cell", FLOPS_PER_CELL))
    return {**rec, "stream_GBps": gbs, "bound_gflops": bound,
            "bound_fraction": rec["gflops"] / bound}


def _check_spec(spec: HeatSpec) -> None:
    if spec.np < 1:
        raise HeatError(f"--np {spec.np}: at least 1 process")
    for name, v in (("rows", spec.rows), ("cols", spec.cols)):
        if v is not None and v < 1:
            raise HeatError(f"--{name} {v}: must be at least 1")
    if spec.iterations < 0:
        raise HeatError(f"--iterations {spec.iterations}: must be >= 0")
    if spec.threshold < 0:
        raise HeatError(f"--threshold {spec.threshold}: must be >= 0")
    if spec.report_interval < 0:
        raise HeatError(f"--report-interval {spec.report_interval}: must be >= 0")
    if spec.decomp not in DECOMPS:
        raise HeatError(f"--decomp '{spec.decomp}': valid: {', '.join(DECOMPS)}")
    if spec.variant not in VARIANTS:
        raise HeatError(f"--variant '{spec.variant}': valid: {', '.join(VARIANTS)}")
    if spec.output_format not in OUTPUT_FORMATS:
        raise HeatError(f"--output-format '{spec.output_format}': valid: "
                        f"{', '.join(OUTPUT_FORMATS)}")
    if spec.pgrid is not None:
        m = re.fullmatch(r"(\d+)x(\d+)", spec.pgrid)
        if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
            raise HeatError(f"--pgrid '{spec.pgrid}': expected PRxPC, e.g. 2x3")
        if spec.decomp != "2d":
            raise HeatError("--pgrid applies to --decomp 2d only")
        if int(m.group(1)) * int(m.group(2)) != spec.np:
            raise HeatError(f"--pgrid {spec.pgrid} is not a grid of --np {spec.np} processes")
    for name, path in (("init", spec.init), ("conductivity", spec.conductivity)):
        if path is not None and not Path(path).is_file():
            raise HeatError(f"--{name} '{path}': no such file")


def heat_argv(build: Build, spec: HeatSpec) -> list[str]:
    """The colltune-heat command line (without the launcher) for `spec`."""
    prog = [run.program_path(build, "colltune-heat", HeatError),
            "--iterations", str(spec.iterations), "--decomp", spec.decomp, "--variant", spec.variant,
            "--allreduce", spec.allreduce, "--reduce", spec.reduce]
    optional = (("--rows", spec.rows), ("--cols", spec.cols), ("--pgrid", spec.pgrid),
                ("--seed", spec.seed), ("--init", spec.init),
                ("--conductivity", spec.conductivity), ("--output", spec.output))
    for opt, v in optional:
        if v is not None:
            prog += [opt, str(v)]
    if spec.threshold:
        prog += ["--threshold", repr(float(spec.threshold))]
    if spec.report_interval:
        prog += ["--report-interval", str(spec.report_interval)]
    if spec.output is not None:
        prog += ["--output-format", spec.output_format]
    return prog


def run_heat(build: Build, spec: HeatSpec, timeout: float = 600
             ) -> tuple[dict, list[dict], list[str]]:
    """One launch of colltune-heat: its summary record, its report records, the notes."""
    _check_spec(spec)
    argv = heat_argv(build, spec)
    records, notes = run.run_records(build, argv[0], spec.np, argv[1:], error=HeatError,
                                     timeout=timeout)
    summary = [r for r in records if r.get("kind") == "heat"]
    reports = [r for r in records if r.get("kind") == "heat_report"]
    if len(summary) != 1:
        raise HeatError(f"colltune-heat printed {len(summary)} summary records, expected 1")
    return summary[0], reports, notes


def run_stream(build: Build, spec: StreamSpec, timeout: float = 600) -> tuple[dict, list[str]]:
    """One launch of colltune-stream: its record and the launcher's notes."""
    if spec.np < 1:
        raise HeatError(f"--np {spec.np}: at least 1 process")
    if spec.elements is not None and spec.elements < 1:
        raise HeatError(f"--elements {spec.elements}: must be at least 1")
    if spec.reps < 1:
        raise HeatError(f"--reps {spec.reps}: must be at least 1")
    prog = ["--reps", str(spec.reps)]
    if spec.elements is not None:
        prog += ["--elements", str(spec.elements)]
    records, notes = run.run_records(build, "colltune-stream", spec.np, prog, error=HeatError,
                                     timeout=timeout)
    return records[-1], notes


# ---------------------------------------------------------------------------- output

def _secs(v: float | None) -> str:
    if v is None:
        return "n/a"
    if v >= 1:
        return f"{v:.3f} s"
    if v >= 1e-3:
        return f"{v * 1e3:.3f} ms"
    return f"{v * 1e6:.1f} µs"


def heat_table(rec: dict) -> Table:
    t = Table(title=f"heat diffusion, {rec['rows']} x {rec['cols']}, {rec['np']} processes "
                    f"({rec['pgrid'][0]} x {rec['pgrid'][1]} grid), {rec['decomp']}, "
                    f"{rec['variant']}", title_justify="left")
    t.add_column("quantity")
    t.add_column("value", justify="right")
    t.add_column("note")
    fmc = rec["final_max_change"]
    stop = ("converged" if rec["converged"] else
            "no threshold" if not rec["threshold"] else "threshold not reached")
    t.add_row("iterations", f"{rec['iterations_done']} / {rec['iterations']}",
              f"threshold {rec['threshold']:g}: {stop}")
    t.add_row("final max change", "n/a" if fmc is None else f"{fmc:.6g}",
              "largest |T' - T| of the last iteration")
    t.add_row("time", _secs(rec["time_s"]), "main loop, slowest rank")
    t.add_row("GFLOP/s", f"{rec['gflops']:.3f}",
              f"{rec['flops_per_cell']} FLOPs per cell and iteration")
    n = rec["np"]
    for key, what in (("comp", "computation"), ("halo", "halo exchange"),
                      ("coll", "collectives")):
        t.add_row(f"{what}", f"{_secs(rec[key + '_s_max'])}",
                  f"max over ranks; mean {_secs(rec[key + '_s_mean'])}" if n > 1 else "")
    for c in ("allreduce", "reduce"):
        used = rec.get(f"{c}_used")
        note = "not called" if used is None else f"ran {used}"
        if rec.get(f"{c}_fallback"):
            note += f" (fallback: {rec[c + '_fallback']})"
        t.add_row(c, rec[c], note)
    if "bound_gflops" in rec:
        t.add_row("bandwidth bound", f"{rec['bound_gflops']:.3f} GFLOP/s",
                  f"{rec['stream_GBps']:.2f} GB/s / {rec['bytes_per_cell']} B per cell x "
                  f"{rec['flops_per_cell']} FLOPs")
        t.add_row("fraction of bound", f"{rec['bound_fraction'] * 100:.1f} %", "")
    return t


def reports_table(reports: list[dict]) -> Table:
    t = Table(title="reports (Reduce MIN / MAX / SUM to rank 0)", title_justify="left")
    for col in ("iteration", "min", "max", "average", "max change"):
        t.add_column(col, justify="right")
    for r in reports:
        mc = r.get("max_change")
        t.add_row(str(r["iteration"]), f"{r['min']:.6g}", f"{r['max']:.6g}", f"{r['avg']:.6g}",
                  "n/a" if mc is None else f"{mc:.6g}")
    return t


def stream_table(rec: dict) -> Table:
    t = Table(title=f"STREAM triad a = b + s*c, {rec['np']} processes at once, "
                    f"3 arrays of {fmt_size(rec['array_bytes'])} per process",
              title_justify="left")
    for col in ("GB/s (24 B/elem)", "GB/s (32 B/elem, write-allocate)", "per process GB/s",
                "best", "avg", "max", "reps"):
        t.add_column(col, justify="right")
    t.add_row(f"{rec['triad_GBps']:.2f}", f"{rec['triad_GBps_write_allocate']:.2f}",
              f"{rec['per_rank_GBps']:.2f}", _secs(rec["best_s"]), _secs(rec["avg_s"]),
              _secs(rec["max_s"]), str(rec["reps"]))
    return t
