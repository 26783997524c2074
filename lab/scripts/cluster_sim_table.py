#!/usr/bin/env python3
"""Simulated against measured per algorithm and size, as a Markdown table, from one or
more files of `sim_vs_measured_algos.py -o` (runs of the same points: on the namespace
cluster at 2 nodes x 1, docs/cluster.md).

Per algorithm and size: the MEASURED median of each run (µs), the SIMULATED time of
each run (each run simulates on its own calibration) and simulated / measured (the
runs' range). Then per collective and overall (colltune's algorithms; native, SMPI's
own collective in the simulation, left out) the geometric mean of the ratios and the
share of points within 0.8-1.25, per run.

    .venv/bin/python lab/scripts/cluster_sim_table.py run1.json run2.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

from colltune.base.units import fmt_size


def us(x: float) -> str:
    return f"{x:,.0f}".replace(",", " ") if x >= 100 else f"{x:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    runs = [json.loads(Path(f).read_text()) for f in args.files]
    sizes = runs[0]["sizes"]
    by = [{(r["collective"], r["algorithm"], int(r["size"])): r for r in run["rows"]}
          for run in runs]
    colls = list(dict.fromkeys(r["collective"] for r in runs[0]["rows"]))
    for coll in colls:
        print(f"\n| {coll} | " + " | ".join(f"{fmt_size(s)}: MEASURED / SIMULATED µs (ratio)"
                                          for s in sizes) + " |")
        print("|---|" + "---|" * len(sizes))
        algos = list(dict.fromkeys(r["algorithm"] for r in runs[0]["rows"]
                                   if r["collective"] == coll))
        for a in algos:
            cells = []
            for s in sizes:
                rs = [b[(coll, a, s)] for b in by if (coll, a, s) in b]
                if not rs:
                    cells.append("–")
                    continue
                meas = ", ".join(us(r["measured_us"]) for r in rs)
                sim = ", ".join(us(r["simulated_us"]) for r in rs)
                ratios = [r["ratio"] for r in rs]
                rat = (f"{min(ratios):.2f}–{max(ratios):.2f}" if len(rs) > 1
                       else f"{ratios[0]:.2f}")
                cells.append(f"{meas} / {sim} ({rat})")
            print(f"| {a} | " + " | ".join(cells) + " |")
    print()
    for i, b in enumerate(by, 1):
        for coll in colls + [None]:
            rs = [r for (c, a, _), r in b.items() if a != "native" and (coll is None or c == coll)]
            if not rs:
                continue
            ratios = [max(r["ratio"], 1e-3) for r in rs]
            g = math.exp(statistics.fmean(math.log(x) for x in ratios))
            within = sum(0.8 <= x <= 1.25 for x in ratios) / len(ratios)
            big = [x for r, x in zip(rs, ratios) if int(r["size"]) >= (1 << 20)]
            gb = math.exp(statistics.fmean(math.log(x) for x in big)) if big else float("nan")
            print(f"run {i} {coll or 'all'}: {len(rs)} points, geometric mean "
                  f"{g:.2f}, {within:.0%} within 0.8-1.25; 1 MiB alone {gb:.2f}")


if __name__ == "__main__":
    main()
