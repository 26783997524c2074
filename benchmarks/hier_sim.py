#!/usr/bin/env python3
"""Hierarchical algorithms against the best flat colltune algorithm and the MPI
library's own (SMPI's default) on simulated clusters (issue 55): one `colltune bench
--mpi smpi` launch per (platform, collective, process count), every algorithm and size
in it, and a Markdown table per platform and collective: each size's best flat
algorithm, the hierarchical ones, and their speedup over the best flat one (the
geometric mean over the sizes last). SIMULATED figures (SimGrid's SMPI, colltune's
platform presets): label them so wherever they are quoted.

    .venv/bin/python benchmarks/hier_sim.py                       # tapems-16x12, P = 192
    .venv/bin/python benchmarks/hier_sim.py --platform orfeo-thin --np 64 \\
        --size 8,1K,64K --size 1M,4M --colls bcast,allreduce
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

from colltune.base.units import add_size_option, fmt_size

FLAT = {
    "bcast": ["native", "binomial", "knomial", "binary", "pipeline", "chain",
              "split_binary", "scatter_allgather", "scatter_ring_allgather", "scatter_direct_allgather"],
    "allreduce": ["native", "recursive_doubling", "ring", "segmented_ring", "rabenseifner",
                  "reduce_bcast"],
    "reduce": ["native", "binomial", "binary", "pipeline", "chain", "rabenseifner"],
    "allgather": ["native", "ring", "recursive_doubling", "bruck", "sparbit",
                  "neighbor_exchange"],
    "barrier": ["native", "bruck", "recursive_doubling", "tree"],
    "alltoall": ["native", "pairwise", "linear", "bruck"],
}
HIER = {  # (the best variants on tapems-16x12 at 192 of a wider exploration)
    "bcast": ["hier", "hier:inter=knomial,intra=linear_nb",
              "hier:inter=scatter_direct_allgather,intra=linear_nb", "hier_ml",
              "hier_ml:inter=scatter_direct_allgather,leaders=4",
              "hier_ml:inter=pipeline,segsize=131072"],
    "allreduce": ["hier", "hier:inter=recursive_doubling", "hier_ml",
                  "hier_ml:inter=recursive_doubling,leaders=4", "hier_ml:inter=ring",
                  "hier_ml:segsize=262144"],
    "reduce": ["hier", "hier:inter=rabenseifner"],
    "allgather": ["hier", "hier:inter=ring"],
    "barrier": ["hier"],
    "alltoall": ["hier", "hier:inter=linear"],
}


def bench(platform: str, coll: str, np: int, sizes: str, iterations: int,
          mpi: str = "smpi") -> list[dict]:
    algos = FLAT[coll] + HIER[coll]
    where = ["--platform", platform] if mpi == "smpi" else ["--oversubscribe"]  # (a check)
    cmd = [str(Path(sys.executable).parent / "colltune"), "bench", "--mpi", mpi, *where,
           "--coll", coll, "--algo", ",".join(algos), "--np", str(np),
           "--size", sizes, "--iterations", str(iterations), "--warmup", "2", "--reps", "1",
           "--format", "json"]  # (warm-up: the first call builds the node groups)
    print("$ " + " ".join(cmd[1:]), file=sys.stderr, flush=True)
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"bench failed ({res.returncode}):\n{res.stderr[-3000:]}")
    return json.loads(res.stdout)


def _gmean(v: list[float]) -> float:
    return math.exp(sum(map(math.log, v)) / len(v))


def table(recs: list[dict]) -> list[str]:
    by_size: dict[int, dict[str, float]] = {}
    for r in recs:
        by_size.setdefault(r["size"], {})[r["spec"]] = r["median_us"]
    hier = [s for s in dict.fromkeys(r["spec"] for r in recs) if s.startswith("hier")]
    # (every hierarchical spec starts with "hier": hier, hier_ml)
    out = ["| size | best flat (µs) | native (µs) | " + " | ".join(f"{h} (µs, ×)" for h in hier)
           + " |", "|---" * (3 + len(hier)) + "|"]
    ratios: dict[str, list[float]] = {h: [] for h in hier}
    for size in sorted(by_size):
        t = by_size[size]
        flat = {k: v for k, v in t.items() if not k.startswith("hier")}
        best = min(flat, key=flat.get)
        cells = []
        for h in hier:
            if h in t and t[h] > 0:
                ratios[h].append(flat[best] / t[h])
                cells.append(f"{t[h]:.1f} ({flat[best] / t[h]:.2f}×)")
            else:
                cells.append("")
        out.append(f"| {fmt_size(size)} | {flat[best]:.1f} {best} | {t.get('native', math.nan):.1f} | "
                   + " | ".join(cells) + " |")
    # the best hierarchical variant of each size: what a rule set tuned among them picks
    best_h = [max(r) for r in zip(*ratios.values())] if hier and all(
        len(v) == len(by_size) for v in ratios.values()) else []
    out[0] = out[0][:-1] + "| best hier (×) |"
    out[1] += "---|"
    for i, r in enumerate(best_h):
        out[2 + i] += f" {r:.2f}× |"
    gm = [f"{_gmean(v):.2f}×" if v else "" for v in [*ratios.values(), best_h]]
    out.append("| geometric mean | | | " + " | ".join(gm) + " |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="tapems-16x12")
    ap.add_argument("--np", default="192", help="process counts, comma list: one table each")
    ap.add_argument("--colls", default="bcast,allreduce")
    add_size_option(ap, default="8,1K,64K,1M,4M")
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--mpi", default="smpi",
                    help="smpi (the figures); another library only checks the script")
    args = ap.parse_args()
    sizes = args.sizes
    for np in [int(x) for x in args.np.split(",")]:
        for coll in args.colls.split(","):
            recs = bench(args.platform, coll, np, sizes, args.iterations, args.mpi)
            what = (f"{args.platform}, P = {np} (SIMULATED, SimGrid SMPI)" if args.mpi == "smpi"
                    else f"P = {np} on {args.mpi} here (oversubscribed: no conclusion)")
            print(f"\n{coll}, {what}\n", flush=True)
            print("\n".join(table(recs)), flush=True)


if __name__ == "__main__":
    main()
