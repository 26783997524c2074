#!/usr/bin/env python3
"""SIMULATED: which rank order each binomial-tree orientation prefers (docs/remapping.md,
"With intra-node contention").

colltune's `binomial` Bcast (the parent of v is v minus its highest set bit: the root
serves the nearest rank first) against SMPI's own `binomial_tree` (colltune's `native`
under `--cfg=smpi/bcast:binomial_tree`; the parent of v is v minus its lowest set bit,
MPICH's orientation: the root serves P/2 first), with the ranks placed SEQ and RR over
the nodes of a simulated platform. Prints SEQ and RR times and RR / SEQ per algorithm,
process count and size (> 1: SEQ preferred).

    .venv/bin/python lab/scripts/remap_tree_orientation.py
    .venv/bin/python lab/scripts/remap_tree_orientation.py --platform tapems-16x12 \\
        --np 128,192 --size 64K,1M
"""

from __future__ import annotations

import argparse

from colltune.base.units import fmt_size, add_size_option, parse_sizes
from colltune.drivers import bench as bench_mod
from colltune.mpi import launch
from colltune.mpi.build import build_for
from colltune.mpi.placement import Placement

LABELS = {"native": "SMPI binomial_tree (lowest bit)", "binomial": "colltune binomial (highest bit)"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="tapems-16x12-membus",
                    help="simulated platform (default: tapems-16x12-membus)")
    ap.add_argument("--np", default="128,192", help="process counts (default: 128,192)")
    add_size_option(ap, default="64K,1M", help="message sizes (default: 64K,1M)")
    args = ap.parse_args()
    sizes = parse_sizes(args.sizes)
    nps = [int(x) for x in args.np.split(",") if x.strip()]
    b = build_for("smpi")
    print(f"SIMULATED on {args.platform}, SimGrid SMPI; mapping node (ranks spread over the "
          "nodes)\n")
    print("| tree | P | size | SEQ µs | RR µs | RR / SEQ |")
    print("|---|---|---|---|---|---|")
    for np_ in nps:
        got: dict[tuple[str, int], dict[str, float]] = {}
        for order in ("seq", "rr"):
            spec = bench_mod.BenchSpec("bcast", ["native", "binomial"], np_, list(sizes), reps=1)
            with launch.simulate(args.platform, ("smpi/bcast:binomial_tree",)), \
                    launch.session(Placement(mapping="node", order=order)):
                recs, _ = bench_mod.run(b, spec, timeout=1800)
            for r in recs:
                got.setdefault((r["spec"], r["size"]), {})[order] = float(r["median_us"])
        for (spec, size), t in sorted(got.items()):
            print(f"| {LABELS[spec]} | {np_} | {fmt_size(size)} | {t['seq']:.1f} | "
                  f"{t['rr']:.1f} | {t['rr'] / t['seq']:.2f} |")


if __name__ == "__main__":
    main()
