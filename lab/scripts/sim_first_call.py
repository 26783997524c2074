#!/usr/bin/env python3
"""Whether a simulated point needs warm-up calls: every algorithm's first timed call
against its later ones, and the simulation's default (no warm-up call, each
algorithm's communicators prepared before its first point, one timed call) against a
warm-up call and two timed calls before every point.

Under SimGrid's SMPI with computation not simulated, a call's simulated time depends
only on the messages it sends. The first call of one of colltune's algorithms on a
communicator also makes its private duplicate (and, with `remap=`, the placement and
the permuted communicator), whose messages are simulated too; `colltune-bench
--prepare` (ct_comm_prepare) makes them before the first point instead. This script
checks, for every algorithm of every collective (and each with remap=seq and rr), on
a platform with several nodes, that

1. with --prepare and no warm-up, the first timed call equals the second (two
   repetitions of one call), and
2. every point equals the same point timed after a warm-up call before every point
   (the way simulated points were taken before),

within --tolerance: a call starts after a barrier whose exit leaves the ranks a few
nanoseconds apart depending on what ran before it, so the same algorithm differs by
up to 0.05 % between launches of different content (in the old way too: Allgather
two_proc, which falls back to ring at 16 processes, 25.864 us next to ring's 25.851).

Exit status 1 when a point differs by more than --tolerance (relative).

    .venv/bin/python lab/scripts/sim_first_call.py --np 12 --nodes 3
"""

from __future__ import annotations

import argparse
import sys

from colltune.drivers import bench as bench_mod
from colltune.mpi import launch
from colltune.mpi.placement import Placement
from colltune.drivers import registry
from colltune.mpi import libraries as mpi_mod
from colltune.mpi.build import build as do_build
from colltune.mpi.platforms import resolve
from colltune.base.units import add_size_option, parse_sizes


def _run(b, coll, algos, np_, sizes, plat, placement, **kw):
    spec = bench_mod.BenchSpec(coll, algos, np_, sizes, **kw)
    with launch.simulate(plat), launch.session(placement):
        recs, _ = bench_mod.run(b, spec)
    return {(r["spec"], r["size"]): r for r in recs}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--coll", default="bcast,reduce,gather,allgather,allreduce")
    ap.add_argument("--np", type=int, default=12)
    ap.add_argument("--nodes", type=int, default=3, help="nodes the processes spread over")
    add_size_option(ap, default="8,1K,64K")
    ap.add_argument("--platform", default="tapems-16x12")
    ap.add_argument("--order", default="rr", help="rank order on the nodes (seq or rr)")
    ap.add_argument("--tolerance", type=float, default=1e-3,
                    help="relative difference allowed (default %(default)g: the barrier before "
                         "a call leaves the ranks a few ns apart, depending on what ran before "
                         "it; two identical algorithms in one launch differ by up to 0.05 %%)")
    args = ap.parse_args()
    b = do_build(mpi_mod.find("smpi"))
    plat = resolve(args.platform)
    sizes = parse_sizes(args.sizes)
    place = Placement(mapping="node", order=args.order, nodes=args.nodes)
    bad = checked = 0
    largest = 0.0
    for coll in args.coll.split(","):
        algos = registry.names(b, coll)
        if coll != "gather":
            algos += [f"{a}:remap={r}" for a in registry.names(b, coll) for r in ("seq", "rr")]
        new = _run(b, coll, algos, args.np, sizes, plat, place, iterations=1, reps=2, raw=True)
        old = _run(b, coll, algos, args.np, sizes, plat, place, iterations=2, warmup=1, reps=1,
                   warmup_once=False, prepare=False)
        for key, r in new.items():
            first, second = r["samples_us"]
            ref = old[key]["median_us"]
            checked += 1
            worst = max(abs(first - second), abs(r["median_us"] - ref)) / max(ref, 1e-9)
            largest = max(largest, worst)
            if worst > args.tolerance:
                bad += 1
                print(f"DIFFERS {coll} {key[0]} {key[1]} B: first {first:.3f} second "
                      f"{second:.3f} us, warmed-up before every point {ref:.3f} us")
        print(f"{coll}: {len(new)} points checked", flush=True)
    print(f"{checked} points, {bad} differ by more than {args.tolerance:g} (relative); the "
          f"largest difference: {largest:.2e}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
