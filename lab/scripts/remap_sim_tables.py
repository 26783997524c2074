#!/usr/bin/env python3
"""The simulated rank-remapping results of a database as Markdown tables
(docs/remapping.md): per process count, every algorithm's latency per placement (seq,
rr, seq>rr, rr>seq), the favourable order, the speedup of remapping and its overhead,
from colltune.analysis.remap.remap_effect over the stored points of the `remap` study.

    colltune sweep --preset remap --mpi smpi --db /tmp/remap-sim/colltune.db
    .venv/bin/python lab/scripts/remap_sim_tables.py --db /tmp/remap-sim/colltune.db
    .venv/bin/python lab/scripts/remap_sim_tables.py --db D --size 64K,1M   # a summary
    .venv/bin/python lab/scripts/remap_sim_tables.py --db D --study remap192 # P = 192
"""

from __future__ import annotations

import argparse
import math

from colltune.analysis.fit import load_measurements
from colltune.analysis.remap import remap_effect
from colltune.base.units import fmt_size, add_size_option, parse_sizes


def _f(v, fmt="{:.1f}") -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True, help="results database")
    ap.add_argument("--study", default="remap", help="study name (default: remap)")
    add_size_option(ap, help="only these sizes (e.g. 64K,1M)")
    args = ap.parse_args()
    pts = load_measurements(args.db, study=args.study, only_simulated=True)
    eff = remap_effect(pts)
    if args.sizes:
        eff = eff[eff["size"].isin(parse_sizes(args.sizes))]
    for n, g in eff.groupby("np"):
        print(f"\nP = {n}\n")
        print("| collective | algorithm | size | SEQ µs | RR µs | SEQ>RR µs | RR>SEQ µs | "
              "favourable | speedup | overhead | identity |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for _, r in g.iterrows():
            print(f"| {r['collective']} | {r['algorithm']} | {fmt_size(int(r['size']))} | "
                  f"{_f(r['us_seq'])} | {_f(r['us_rr'])} | {_f(r['us_seq>rr'])} | "
                  f"{_f(r['us_rr>seq'])} | {r['best']} | {_f(r['speedup'], '{:.2f}×')} | "
                  f"{_f(100 * r['overhead'], '{:+.1f}%')} | "
                  f"{_f(100 * r['identity_overhead'], '{:+.1f}%')} |")


if __name__ == "__main__":
    main()
