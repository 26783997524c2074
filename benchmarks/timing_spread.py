#!/usr/bin/env python3
"""Run-to-run spread of the two timing methods, `osu` and `window`.

Launches the same benchmark several times with each method, alternating
(osu, window, osu, window, ...) so that drift of the machine affects both alike,
and prints per (algorithm, size) how much the median latency moves from one
launch to the next:

    spread = (max - min) / median   over the launches' medians
    cv     = standard deviation / mean over the launches' medians

The method with the smaller spread is the more reproducible one on this machine.
Both methods measure something slightly different (osu: mean over processes of
each call's own time; window: latest finish over ranks after a common start),
so compare spreads, not latencies.

    .venv/bin/python benchmarks/timing_spread.py --np 2
    .venv/bin/python benchmarks/timing_spread.py --np 4 --launches 5 -o spread.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from colltune.drivers import bench as bench_mod
from colltune.mpi import libraries as mpi_mod
from colltune.mpi.build import build as do_build
from colltune.base.units import fmt_size, add_size_option, parse_sizes

CASES = {  # collective -> algorithms
    "bcast": ["native", "binomial", "scatter_allgather"],
    "allreduce": ["native", "ring", "recursive_doubling"],
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", type=int, default=2)
    add_size_option(ap, default="8,1K,64K,1M")
    ap.add_argument("--launches", type=int, default=5, help="launches per method")
    ap.add_argument("--iterations", type=int, default=None)
    ap.add_argument("--mpi", default=None)
    ap.add_argument("-o", "--output", help="write all records here as JSON")
    args = ap.parse_args()
    console = Console(width=max(Console().width, 120))  # never fold the table
    b = do_build(mpi_mod.find(args.mpi))
    sizes = parse_sizes(args.sizes)
    medians: dict[tuple, list[float]] = {}
    records: list[dict] = []
    for launch in range(args.launches):
        for method in ("osu", "window"):
            for coll, algos in CASES.items():
                spec = bench_mod.BenchSpec(coll, algos, args.np, sizes, args.iterations,
                                           reps=1, timing=method)
                recs, _ = bench_mod.run(b, spec)
                for r in recs:
                    r["launch"] = launch
                    records.append(r)
                    if r.get("median_us") is not None:
                        medians.setdefault((method, coll, r["spec"], r["size"]), []).append(
                            r["median_us"])
            console.print(f"launch {launch + 1}/{args.launches} {method} done", style="dim")

    t = Table(title=f"run-to-run spread over {args.launches} launches, np={args.np} "
                    f"({b.mpi.banner}); spread = (max-min)/median of the launches' medians",
              title_justify="left")
    for col in ("collective", "algorithm", "size", "osu median µs", "osu spread", "osu cv",
                "window median µs", "window spread", "window cv"):
        t.add_column(col, justify="left" if col in ("collective", "algorithm") else "right")
    summary = {"osu": [], "window": []}
    for coll, algos in CASES.items():
        for a in algos:
            for s in sizes:
                row = [coll, a, fmt_size(s)]
                for method in ("osu", "window"):
                    v = medians.get((method, coll, a, s), [])
                    if len(v) < 2:
                        row += ["–", "–", "–"]
                        continue
                    med = statistics.median(v)
                    spread = (max(v) - min(v)) / med
                    cv = statistics.stdev(v) / statistics.mean(v)
                    summary[method].append(spread)
                    row += [f"{med:.2f}", f"{spread:.1%}", f"{cv:.1%}"]
                t.add_row(*row)
    console.print(t)
    for method, v in summary.items():
        if v:
            console.print(f"{method}: median spread over all points {statistics.median(v):.1%}, "
                          f"worst {max(v):.1%}", highlight=False)
    if args.output:
        Path(args.output).write_text(json.dumps(records, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
