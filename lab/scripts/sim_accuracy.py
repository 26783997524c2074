#!/usr/bin/env python3
"""Simulated Bcast/Allreduce against the Hockney formulas of the cost-model registry.

On a flat platform, one rank per node (mapping `node`: every message crosses the
network, no rank shares a node's link with another), α and β are fitted from a
simulated ping-pong (colltune-pingpong under SMPI, 2 ranks on 2 nodes, sizes 8 B to
4 MiB), γ = 0 (computation is not simulated, docs/simulation.md). Every algorithm's
registry cost formula then predicts each point, and the script prints the ratio
simulated / predicted per algorithm, size and process count. Where the formula
describes what the algorithm sends and the network has no contention the ratio should
be near 1; SMPI's size-dependent corrections of latency and bandwidth (its calibrated
defaults) and link sharing between concurrent messages are what moves it away.

A formula predicts the time until the last rank is done; OSU's latency (the record's
median_us) is the mean over ranks, in which a root that returns early and leaves that
finish early count as much as the last rank. `--statistic max` (the default) compares
the slowest rank's mean time per call (rank_max_us, OSU's "Max Latency": each call is
followed by a barrier, so this is the call's completion time); `--statistic avg`
compares OSU's average, as the first version of this script did.

    .venv/bin/python lab/scripts/sim_accuracy.py --np 8,32 --size 8,1K,64K,1M
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from rich.console import Console
from rich.table import Table

from colltune.drivers import bench as bench_mod
from colltune.analysis import costmodel
from colltune.mpi import launch
from colltune.mpi.placement import Placement
from colltune.drivers import p2p
from colltune.drivers import registry
from colltune.mpi import libraries as mpi_mod
from colltune.mpi.build import build as do_build
from colltune.mpi.platforms import resolve
from colltune.base.specs import parse_params
from colltune.base.units import fmt_size, parse_ints, add_size_option, parse_sizes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--coll", default="bcast,allreduce")
    ap.add_argument("--np", default="8,32")
    add_size_option(ap, default="8,1K,64K,1M")
    ap.add_argument("--platform", default="flat")
    ap.add_argument("--statistic", choices=["max", "avg"], default="max",
                    help="simulated time compared: the slowest rank's (max, default) or "
                         "OSU's mean over ranks (avg)")
    ap.add_argument("-o", "--output", help="write the rows here as JSON")
    args = ap.parse_args()
    console = Console(width=max(Console().width, 140))
    b = do_build(mpi_mod.find("smpi"))
    plat = resolve(args.platform)
    nps = parse_ints(args.np, "--np")
    sizes = parse_sizes(args.sizes)
    node = Placement(mapping="node")
    with launch.simulate(plat), launch.session(node):
        pp, _ = p2p.run_pingpong(b, p2p.PingpongSpec(
            np=2, sizes=(8, 64, 1024, 8192, 65536, 262144, 1048576, 4194304), reps=1,
            iterations=3, warmup=1))
    h = costmodel.fit_hockney(pp)
    console.print(f"{b.mpi.banner}, platform {plat.name}, one rank per node; simulated "
                  f"ping-pong: α = {h.alpha * 1e6:.3f} µs, β = {h.beta * 1e9:.4f} ns/B "
                  f"({1 / h.beta / 1e9:.2f} GB/s), largest relative residual "
                  f"{h.max_rel_error:.1%}; γ = 0", highlight=False)
    algos = costmodel.algorithm_dicts(registry.algorithms(b))
    rows = []
    for coll in args.coll.split(","):
        names = [n for n in registry.names(b, coll) if n != "native"]
        for np in nps:
            spec = bench_mod.BenchSpec(coll, names, np, sizes, reps=1)
            with launch.simulate(plat), launch.session(node):
                recs, _ = bench_mod.run(b, spec, timeout=1800)
            for r in recs:
                a = algos.get((coll, r["algorithm"]))
                try:
                    pred = costmodel.predict_seconds(a, np, r["size"], h.alpha, h.beta, 0.0,
                                                     params=parse_params(r.get("params")))
                except (costmodel.FormulaError, TypeError):
                    continue
                sim = r["rank_max_us"] if args.statistic == "max" else r["median_us"]
                rows.append({"collective": coll, "algorithm": r["algorithm"], "np": np,
                             "size": r["size"], "simulated_us": sim,
                             "simulated_avg_us": r["median_us"],
                             "simulated_max_us": r["rank_max_us"],
                             "predicted_us": pred * 1e6,
                             "ratio": sim / (pred * 1e6),
                             "ratio_avg": r["median_us"] / (pred * 1e6),
                             "ratio_max": r["rank_max_us"] / (pred * 1e6)})
    for coll in args.coll.split(","):
        t = Table(title=f"{coll}: simulated ({args.statistic} over ranks) / Hockney-predicted "
                        f"latency ({plat.name}, one rank per node)", title_justify="left")
        t.add_column("algorithm")
        cols = [(np, s) for np in nps for s in sizes]
        for np, s in cols:
            t.add_column(f"p{np} {fmt_size(s)}", justify="right")
        by = {(r["algorithm"], r["np"], r["size"]): r for r in rows if r["collective"] == coll}
        for algo in dict.fromkeys(r["algorithm"] for r in rows if r["collective"] == coll):
            t.add_row(algo, *(f"{by[(algo, np, s)]['ratio']:.2f}" if (algo, np, s) in by
                              else "" for np, s in cols))
        console.print(t)
        ratios = [r["ratio"] for r in rows if r["collective"] == coll]
        if ratios:
            within = sum(0.8 <= x <= 1.25 for x in ratios) / len(ratios)
            console.print(f"{coll}: median ratio {statistics.median(ratios):.2f}, "
                          f"{within:.0%} of {len(ratios)} points within 0.8..1.25",
                          highlight=False)
            other = "avg" if args.statistic == "max" else "max"
            ro = [r[f"ratio_{other}"] for r in rows if r["collective"] == coll]
            console.print(f"{coll} with the {other} over ranks instead: median ratio "
                          f"{statistics.median(ro):.2f}, "
                          f"{sum(0.8 <= x <= 1.25 for x in ro) / len(ro):.0%} within 0.8..1.25",
                          highlight=False)
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"alpha_s": h.alpha, "beta_s_per_B": h.beta, "statistic": args.statistic,
                       "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
