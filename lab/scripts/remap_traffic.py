#!/usr/bin/env python3
"""Rank remapping at scale: the traffic tables of docs/remapping.md, counted from the
algorithms' sends (colltune-traffic-count) with virtual nodes, one launch per line.

    recursive doubling Allgather on SEQ and RR, each with the other order as remap:
        every rank's intra/inter-node bytes against seed 003's LogGP table (exit 1 on
        any difference)
    ring and neighbour exchange Allgather, ring Allreduce on RR (+ remap=seq),
    binomial Bcast on SEQ (+ remap=rr): totals

Nothing is timed, so P = 128 runs oversubscribed on a small machine (about 30-50 s
per launch with Open MPI on 2 shared cores; 8 + 8 launches).

    .venv/bin/python lab/scripts/remap_traffic.py                  # P = 128, M = 16
    .venv/bin/python lab/scripts/remap_traffic.py --np 16 --nodes 4 --size 1K
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from colltune.drivers import traffic  # noqa: E402
from colltune.mpi.build import build_for  # noqa: E402
from colltune.base.specs import with_remap  # noqa: E402
from colltune.base.units import parse_size  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", default=None, help="openmpi (default), mpich or a path")
    ap.add_argument("--np", type=int, default=128)
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--size", default="64K", help="bytes (Allgather: per process)")
    args = ap.parse_args()
    P, M, m = args.np, args.nodes, parse_size(args.size)
    if P % M:
        ap.error("--np must be a multiple of --nodes (the seed's table is for P = M*Q)")
    Q = P // M
    b = build_for(args.mpi)
    bad = 0
    print(f"P = {P}, M = {M}, Q = {Q}, m = {m} B\n")
    print("| algorithm | placement | remap | intra B/rank | inter B/rank | seed intra | "
          "seed inter |")
    print("|---|---|---|---|---|---|---|")
    for order in ("seq", "rr"):
        for remap in (None, "rr" if order == "seq" else "seq"):
            spec = with_remap("recursive_doubling", remap)
            (t,) = traffic.count(b, "allgather", spec, P, [m], nodes=M, order=order)
            want = traffic.loggp_volumes("recursive_doubling", t.remap_applied
                                         if t.remap_applied != "none" else order, M, Q, m)
            got = {(r[0], r[2]) for r in t.ranks}
            ok = got == {(want["intra_bytes"], want["inter_bytes"])}
            bad += not ok
            (gi, ge), = got if len(got) == 1 else ((-1, -1),)
            print(f"| recursive_doubling | {order} | {remap or 'none'} | {gi} | {ge} | "
                  f"{want['intra_bytes']} | {want['inter_bytes']} |{'' if ok else ' DIFFERS'}")
    print("\n| algorithm | placement | remap | inter B (msgs) | intra B (msgs) | "
          "largest inter B of one rank |")
    print("|---|---|---|---|---|---|")
    for coll, algo, order, remap in (("allgather", "ring", "rr", "seq"),
                                     ("allgather", "neighbor_exchange", "rr", "seq"),
                                     ("bcast", "binomial", "seq", "rr"),
                                     ("allreduce", "ring", "rr", "seq")):
        for r in (None, remap):
            (t,) = traffic.count(b, coll, with_remap(algo, r), P, [m], nodes=M,
                                 order=order)
            tot = t.total
            print(f"| {coll} {algo} | {order} | {r or 'none'} | {tot['inter_bytes']} "
                  f"({tot['inter_msgs']}) | {tot['intra_bytes']} ({tot['intra_msgs']}) | "
                  f"{max(x[2] for x in t.ranks)} |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
