#!/usr/bin/env python3
"""Wall seconds per simulated point under SimGrid's SMPI, against the process count.

One launch per (collective, algorithm, process count), each simulating every size
(one point = one algorithm at one size: its timed call(s), as `colltune sweep --preset
scale` runs them; the launch's start-up shared among its points). Prints the wall time of each launch
divided by its points, with the simulated latency next to it, so that the cost of
a 1024-process point can be read per algorithm. Goal (issue 16): one 1024-process
point in at most 20 s of wall time on a 2-core machine.

    .venv/bin/python lab/scripts/sim_speed.py --np 64,256,1024 --size 8,1M
    .venv/bin/python lab/scripts/sim_speed.py --coll bcast --algo pipeline,binomial --np 1024
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

from rich.console import Console
from rich.table import Table

from colltune.drivers import bench as bench_mod
from colltune.mpi import launch
from colltune.drivers import registry
from colltune.mpi import libraries as mpi_mod
from colltune.mpi import simgrid
from colltune.mpi.build import build as do_build
from colltune.mpi.platforms import resolve
from colltune.base.units import fmt_size, parse_ints, add_size_option, parse_sizes


# left out by default, as by the scale preset: all p input vectors on every rank (1 GiB
# per rank at 1024 processes and 1 MiB; killed for memory at 256 processes here)
MEMORY_BOUND = {"allreduce": ("allgather_reduce",)}


def _children_cpu() -> float:
    """User + system CPU seconds of the finished child processes (the simulations):
    on a shared machine the wall time follows the load, the CPU time much less."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--coll", default="bcast,allreduce")
    ap.add_argument("--algo", default="all",
                    help="algorithms (default: every one and native, as the scale preset: "
                         "without Allreduce allgather_reduce, which holds p x size per rank)")
    ap.add_argument("--np", default="64,128,256,512,1024")
    add_size_option(ap, default="8,1K,64K,1M")
    ap.add_argument("--platform", default="tapems-16x12")
    ap.add_argument("--iterations", type=int, default=bench_mod.SIM_ITERATIONS,
                    help="timed calls per point (default %(default)s)")
    ap.add_argument("--warmup-every-point", action="store_true",
                    help="a warm-up call before every point, as simulated points were taken "
                         "before (default: none; each algorithm's communicators are made "
                         "before its first point)")
    ap.add_argument("--cfg", action="append", default=[], metavar="KEY:VALUE",
                    help="an extra SimGrid setting for every launch (repeatable), e.g. "
                         "contexts/nthreads:2; the simulated latencies show whether it "
                         "changed the results")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("-o", "--output", help="write the rows here as JSON")
    args = ap.parse_args()
    console = Console(width=max(Console().width, 120))
    b = do_build(mpi_mod.find("smpi"))
    plat = resolve(args.platform)
    sizes = parse_sizes(args.sizes)
    nps = parse_ints(args.np, "--np")
    rows = []
    load = os.getloadavg()[0]
    alloc = simgrid.allocator() or "the C library's malloc"  # preloaded by launch
    console.print(f"{b.mpi.banner}, platform {plat.name}; load average at start {load:.2f} "
                  f"on {os.cpu_count()} cores; SimGrid's allocator {alloc}", highlight=False)
    for coll in args.coll.split(","):
        names = ([a for a in registry.names(b, coll) if a not in MEMORY_BOUND.get(coll, ())]
                 if args.algo == "all" else args.algo.split(","))
        for algo in names:
            for np in nps:
                old = args.warmup_every_point
                spec = bench_mod.BenchSpec(coll, [algo], np, sizes, args.iterations, reps=1,
                                           warmup=1 if old else None,
                                           warmup_once=False if old else None,
                                           prepare=False if old else None)
                t0 = time.monotonic()
                c0 = _children_cpu()
                try:
                    with launch.simulate(plat, tuple(args.cfg)):
                        recs, _ = bench_mod.run(b, spec, timeout=args.timeout)
                    err = None
                except bench_mod.BenchError as exc:
                    recs, err = [], str(exc).splitlines()[0][:120]
                wall = time.monotonic() - t0
                cpu = _children_cpu() - c0
                row = {"collective": coll, "algorithm": algo, "np": np, "wall_s": wall,
                       "cpu_s": cpu, "cpu_s_per_point": cpu / len(sizes),
                       "points": len(sizes), "s_per_point": wall / len(sizes),
                       "simulated_us": {r["size"]: r["median_us"] for r in recs},
                       "error": err, "load": os.getloadavg()[0], "allocator": alloc}
                rows.append(row)
                console.print(f"{coll} {algo} np={np}: {wall:.1f} s for {len(sizes)} points "
                              f"({row['s_per_point']:.2f} s/point; CPU {cpu:.1f} s, "
                              f"{row['cpu_s_per_point']:.2f} s/point)" + (f" FAILED: {err}"
                                                                      if err else ""),
                              highlight=False)
    warm = ("1 warm-up call per point" if args.warmup_every_point
            else "no warm-up call, communicators prepared")
    t = Table(title=f"wall seconds per simulated point ({plat.name}, sizes "
                    f"{', '.join(fmt_size(s) for s in sizes)}, {args.iterations} timed call(s) "
                    f"per point, {warm}; CPU seconds of the simulation in brackets)",
                    title_justify="left")
    t.add_column("collective")
    t.add_column("algorithm")
    for np in nps:
        t.add_column(f"np {np}", justify="right")
    keys = list(dict.fromkeys((r["collective"], r["algorithm"]) for r in rows))
    by = {(r["collective"], r["algorithm"], r["np"]): r for r in rows}
    for coll, algo in keys:
        cells = []
        for np in nps:
            r = by.get((coll, algo, np))
            cells.append("" if r is None else "failed" if r["error"] else
                         f"{r['s_per_point']:.2f} ({r['cpu_s_per_point']:.2f})")
        t.add_row(coll, algo, *cells)
    console.print(t)
    worst = max((r for r in rows if r["np"] == max(nps) and not r["error"]),
                key=lambda r: r["s_per_point"], default=None)
    if worst:
        console.print(f"slowest at np {max(nps)}: {worst['collective']} {worst['algorithm']} "
                      f"{worst['s_per_point']:.2f} s/point", highlight=False)
    if args.output:
        with open(args.output, "w") as f:
            json.dump(rows, f, indent=2)
    return 1 if any(r["error"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
