#!/usr/bin/env python3
"""Simulated vs measured ping-pong on this machine: how close is `this-machine`?

1. Two ping-pong runs here (2 processes, colltune-pingpong, sizes 8 B .. 1 MiB):
   run A calibrates, run B is what the simulation is compared with (so the
   piecewise factors are not judged on the very numbers they were made from).
2. Two platforms from run A: `hockney` (alpha, beta only) and `piecewise` (the
   factors that reproduce run A size by size), as `colltune platform calibrate`
   writes them.
3. colltune-pingpong (native/tools/pingpong.c, unchanged) compiled with SimGrid's
   smpicc and run under smpirun on both platforms, with the options of
   platform.simgrid_cfg and smpi/simulate-computation:no (the simulated times are
   the network model's alone). The piecewise simulation runs twice: the numbers
   must be identical (determinism).
4. A table per size: measured (run B, min and median), simulated, and the ratios
   simulated / measured; summaries: the geometric mean of the ratios and the
   largest deviation. Run A against run B (min) shows the machine's own
   run-to-run spread, the floor any model can reach.

    .venv/bin/python lab/scripts/sim_vs_measured.py
    .venv/bin/python lab/scripts/sim_vs_measured.py --reps 11 --size 8:1M -o sim_vs_measured.json
    .venv/bin/python lab/scripts/sim_vs_measured.py --calib-json a.json --eval-json b.json
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from colltune.mpi import libraries as mpi_mod
from colltune.mpi import platforms as plat
from colltune.mpi.build import build as do_build
from colltune.drivers.p2p import PingpongSpec, run_pingpong
from colltune.base.paths import cache_dir, native_dir
from colltune.base.units import add_size_option, parse_sizes

out = Console(width=150)


def smpi_bin() -> Path:
    return cache_dir() / "mpi" / "smpi" / "bin"


def build_smpi_pingpong(workdir: Path) -> Path:
    """colltune-pingpong compiled with smpicc (the program, the library it links)."""
    nat = native_dir()
    srcs = [nat / "tools" / "pingpong.c", nat / "tools" / "driver_common.c",
            nat / "tools" / "plain.c", *sorted((nat / "lib").glob("*.c"))]
    exe = workdir / "colltune-pingpong-smpi"
    cmd = [str(smpi_bin() / "smpicc"), "-O2", "-std=c11", "-D_GNU_SOURCE",
           f"-I{nat / 'include'}", f"-I{nat / 'tools'}", f"-I{nat / 'lib'}",
           *map(str, srcs), "-lm", "-o", str(exe)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"smpicc failed:\n{' '.join(cmd)}\n{res.stderr[-4000:]}")
    return exe


def simulate(exe: Path, p: plat.Platform, sizes, iterations: int, workdir: Path) -> tuple[dict, float]:
    """{size: simulated one-way µs} of a 2-process ping-pong on `p`, and wall seconds."""
    xml = workdir / f"{p.name}-{id(p)}.xml"
    hosts = workdir / f"{p.name}-{id(p)}.hosts"
    xml.write_text(p.xml())
    hosts.write_text(p.hostfile(2))
    cmd = [str(smpi_bin() / "smpirun"), "-np", "2", "-platform", str(xml), "-hostfile", str(hosts),
           *plat.simgrid_cfg(p), "--cfg=smpi/simulate-computation:no", "--cfg=smpi/wtime:0",
           "--log=root.thres:warning", str(exe), "--sizes", ",".join(map(str, sizes)),
           "--reps", "1", "--iterations", str(iterations), "--warmup", "1"]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        sys.exit(f"smpirun failed:\n{' '.join(cmd)}\n{res.stdout[-2000:]}\n{res.stderr[-4000:]}")
    recs = [json.loads(l) for l in res.stdout.splitlines() if l.startswith("{")]
    recs = [r for r in recs if "size" in r]  # not the placement line
    return {int(r["size"]): float(r["median_us"]) for r in recs}, wall


def measure(sizes, reps: int, mpi_spec: str | None) -> list[dict]:
    b = do_build(mpi_mod.find(mpi_spec))
    recs, _ = run_pingpong(b, PingpongSpec(2, tuple(sizes), reps=reps))
    return recs


def load_avg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mpi", help="MPI library of the measured runs (default openmpi)")
    add_size_option(ap, default="8:1M", help="sizes, as colltune pingpong takes them")
    ap.add_argument("--reps", type=int, default=11, help="repetitions of each size, each run")
    ap.add_argument("--statistic", default="min", choices=["min", "median"],
                    help="time of a size the calibration uses")
    ap.add_argument("--sim-iterations", type=int, default=50,
                    help="round trips per size in the simulation (deterministic: few suffice)")
    ap.add_argument("--calib-json", help="run A records (colltune pingpong --format json)")
    ap.add_argument("--eval-json", help="run B records")
    ap.add_argument("-o", "--output", help="write every figure here (JSON)")
    args = ap.parse_args()
    if not (smpi_bin() / "smpicc").exists():
        sys.exit(f"SimGrid is not installed: {smpi_bin() / 'smpicc'} is missing")
    sizes = parse_sizes(args.sizes)
    loads = {"before": load_avg()}
    if args.calib_json:
        run_a = json.loads(Path(args.calib_json).read_text())
    else:
        out.print(f"run A (calibration): ping-pong, {len(sizes)} sizes x {args.reps} reps ...")
        run_a = measure(sizes, args.reps, args.mpi)
    if args.eval_json:
        run_b = json.loads(Path(args.eval_json).read_text())
    else:
        out.print(f"run B (evaluation): ping-pong, {len(sizes)} sizes x {args.reps} reps ...")
        run_b = measure(sizes, args.reps, args.mpi)
    loads["after_measuring"] = load_avg()
    key = {"min": "min_us", "median": "median_us"}[args.statistic]
    a = {int(r["size"]): float(r[key]) for r in run_a}
    b_min = {int(r["size"]): float(r["min_us"]) for r in run_b}
    b_med = {int(r["size"]): float(r["median_us"]) for r in run_b}
    b = {"min": b_min, "median": b_med}[args.statistic]
    sizes = sorted(set(a) & set(b))

    hockney = plat.calibrated(run_a, statistic=args.statistic, piecewise=False)
    piecewise = plat.calibrated(run_a, statistic=args.statistic, piecewise=True)
    with tempfile.TemporaryDirectory(prefix="colltune-simvm-") as tmp:
        w = Path(tmp)
        out.print("compiling colltune-pingpong with smpicc ...")
        exe = build_smpi_pingpong(w)
        sim_h, wall_h = simulate(exe, hockney, sizes, args.sim_iterations, w)
        sim_p, wall_p = simulate(exe, piecewise, sizes, args.sim_iterations, w)
        sim_p2, _ = simulate(exe, piecewise, sizes, args.sim_iterations, w)
    deterministic = sim_p == sim_p2

    c = hockney.calibration
    t = Table(title=f"one-way ping-pong, 2 processes: measured (run B, {args.statistic}) vs "
                    "simulated on this-machine", title_justify="left")
    for col in ("size", "run A µs", "run B µs", "B median µs", "A/B", "sim hockney µs",
                "hockney/B", "sim piecewise µs", "piecewise/B"):
        t.add_column(col, justify="right")
    rows = []
    for m in sizes:
        row = {"size": m, "run_a_us": a[m], "run_b_us": b[m], "run_b_median_us": b_med[m],
               "sim_hockney_us": sim_h[m], "sim_piecewise_us": sim_p[m],
               "a_over_b": a[m] / b[m], "hockney_over_b": sim_h[m] / b[m],
               "piecewise_over_b": sim_p[m] / b[m]}
        rows.append(row)
        t.add_row(str(m), f"{a[m]:.3f}", f"{b[m]:.3f}", f"{b_med[m]:.3f}", f"{row['a_over_b']:.2f}",
                  f"{sim_h[m]:.3f}", f"{row['hockney_over_b']:.2f}", f"{sim_p[m]:.3f}",
                  f"{row['piecewise_over_b']:.2f}")
    out.print(t)

    def summary(k: str) -> dict:
        rs = [r[k] for r in rows]
        logs = [abs(math.log(x)) for x in rs]
        return {"geomean": math.exp(sum(math.log(x) for x in rs) / len(rs)),
                "median_abs_dev": math.exp(sorted(logs)[len(logs) // 2]) - 1,
                "max_abs_dev": math.exp(max(logs)) - 1,
                "worst_size": rows[logs.index(max(logs))]["size"]}

    sums = {k: summary(k) for k in ("a_over_b", "hockney_over_b", "piecewise_over_b")}
    for k, s in sums.items():
        out.print(f"{k}: geometric mean {s['geomean']:.3f}, median deviation "
                  f"{100 * s['median_abs_dev']:.0f}%, largest {100 * s['max_abs_dev']:.0f}% "
                  f"(at {s['worst_size']} B)", highlight=False)
    out.print(f"calibration (run A, {args.statistic}): alpha {c['alpha_us']:.3f} µs, beta "
              f"{c['beta_GBps']:.3f} GB/s; simulation wall {wall_h:.2f} s (hockney), "
              f"{wall_p:.2f} s (piecewise); two piecewise simulations identical: {deterministic}; "
              f"load average {loads['before']} before, {loads['after_measuring']} after measuring",
              highlight=False)
    if args.output:
        Path(args.output).write_text(json.dumps({
            "rows": rows, "summary": sums, "alpha_us": c["alpha_us"], "beta_GBps": c["beta_GBps"],
            "statistic": args.statistic, "deterministic": deterministic, "load": loads,
            "simulation_wall_s": {"hockney": wall_h, "piecewise": wall_p},
            "mpi": run_b[0].get("mpi"), "cfg": plat.simgrid_cfg(piecewise),
            "run_a": run_a, "run_b": run_b}, indent=2) + "\n")
        out.print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
