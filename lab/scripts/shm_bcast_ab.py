#!/usr/bin/env python3
"""Bcast `shm` (segsize=0: the serial slot) against its ring (segsize > 0), from
`colltune bench --format csv` files of launches that interleave them.

Per process count (the file name's `npN_` prefix) and size: every spec's median
over the launches of the launch's median (`median_us`), and the geometric mean over
the launches of the per-launch ratio to `shm` (measured in the same launch, so a
slow phase of a shared machine hits both). Process counts other than 2 on the 2-core
VM are oversubscribed: printed, marked, no conclusion.

    .venv/bin/python lab/scripts/shm_bcast_ab.py lab/data/shm-bcast-2026-11-29/ab3
"""
import argparse
import csv
import glob
import math
import os
import statistics as st
from collections import defaultdict


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", help="folder of npN_*.csv files from colltune bench")
    ap.add_argument("--cores", type=int, default=2, help="cores of the machine measured")
    args = ap.parse_args()
    med, ratio = defaultdict(list), defaultdict(list)
    for f in sorted(glob.glob(os.path.join(args.folder, "np*_*.csv"))):
        np_ = int(os.path.basename(f).split("_")[0][2:])
        by = {(r["spec"], int(r["size"])): float(r["median_us"])
              for r in csv.DictReader(open(f))}
        for (spec, size), v in by.items():
            med[(np_, spec, size)].append(v)
            if ("shm", size) in by:
                ratio[(np_, spec, size)].append(v / by[("shm", size)])
    specs = list(dict.fromkeys(k[1] for k in med))
    for np_ in sorted({k[0] for k in med}):
        over = " OVERSUBSCRIBED: no conclusion" if np_ > args.cores else ""
        print(f"np {np_}{over}: median µs over launches [geometric mean of the "
              "per-launch ratio to shm]")
        for size in sorted({k[2] for k in med if k[0] == np_}):
            cells = []
            for s in specs:
                if (np_, s, size) not in med:
                    continue
                r = ratio[(np_, s, size)]
                g = math.exp(sum(map(math.log, r)) / len(r)) if r else float("nan")
                cells.append(f"{s} {st.median(med[(np_, s, size)]):.1f} [{g:.2f}]")
            print(f"  {size:>8} ({len(med[(np_, 'shm', size)])} launches): " + " | ".join(cells))


if __name__ == "__main__":
    main()
