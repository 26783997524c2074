#!/usr/bin/env python3
"""Does interleaving other algorithms change the figure of `native`?

colltune-bench runs the algorithms of one collective interleaved (A B C A B C ...)
within every size and repetition. If the algorithm timed before `native` left state
behind (caches, the library's internal buffers, unexpected-message queues, a
process still busy), `native`'s figure would depend on its company. This script
measures it: per round, three launches, their order rotated from round to round,

    alone        colltune-bench --algo native
    interleaved  colltune-bench --algo <others>,native,<others>
    alone-long   colltune-bench --algo native with as many repetitions as the
                 interleaved launch has loops: as long as the interleaved launch,
                 without other algorithms (the control)

(`native` in the middle, so that it always follows another algorithm), all
`--timing osu` with 5 repetitions (alone-long: 5 x the algorithms), and compares
`native`'s figure, the median over the launch's repetitions (`median_us`, what
colltune's tables show), as per-round ratios interleaved / alone and interleaved /
alone-long. The median, not the mean: an interleaved launch lasts four times as long
as a lone one and so more often catches one of a shared machine's slow phases, which
would inflate its mean without anything being left behind by the other algorithms.
It prints per point the medians, the median ratios with bootstrap 95 % confidence
intervals over the rounds, and how many rounds had interleaved slower. A confidence
interval that holds 1 is no bias (within the noise of this machine); if
interleaved / alone excludes 1 but interleaved / alone-long holds it, the launch's
length, not its company, makes the difference.

    .venv/bin/python lab/scripts/interleave_bias.py                 # np 2, 8 B and 64 KiB
    .venv/bin/python lab/scripts/interleave_bias.py --rounds 15 --size 8,1K,64K,1M
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from colltune.drivers import bench as bench_mod
from colltune.mpi import placement
from colltune.mpi import libraries as mpi_mod
from colltune.mpi.build import build as do_build
from colltune.base.files import write_atomic
from colltune.base.units import fmt_size, add_size_option, parse_sizes

OTHERS = {  # collective -> (algorithms before native, algorithms after it)
    "bcast": (["linear", "binomial"], ["chain"]),
    "reduce": (["linear", "binomial"], ["rabenseifner"]),
    "allgather": (["ring", "bruck"], ["recursive_doubling"]),
    "allreduce": (["ring", "recursive_doubling"], ["rabenseifner"]),
}


def bootstrap_ci(values: list[float], n: int = 4000, seed: int = 1) -> tuple[float, float]:
    """95 % percentile-bootstrap interval of the median."""
    v = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    meds = np.median(rng.choice(v, size=(n, len(v)), replace=True), axis=1)
    lo, hi = np.quantile(meds, [0.025, 0.975])
    return float(lo), float(hi)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", type=int, default=2)
    add_size_option(ap, default="8,64K")
    ap.add_argument("--coll", default="bcast,allreduce",
                    help=f"collectives, comma-separated ({', '.join(OTHERS)})")
    ap.add_argument("--rounds", type=int, default=9, help="launches of each kind")
    ap.add_argument("--reps", type=int, default=5, help="repetitions per launch")
    ap.add_argument("--mpi", default=None)
    ap.add_argument("-o", "--output", help="write every record and the table here as JSON")
    args = ap.parse_args()
    colls = [c for c in args.coll.split(",") if c]
    bad = [c for c in colls if c not in OTHERS]
    if bad:
        ap.error(f"unknown collective {', '.join(bad)}; valid: {', '.join(OTHERS)}")
    console = Console(width=max(Console().width, 200))
    b = do_build(mpi_mod.find(args.mpi))
    sizes = parse_sizes(args.sizes)
    oversub = args.np > placement.cores()
    figs: dict[str, dict[tuple, list[float]]] = {"alone": {}, "interleaved": {},
                                                   "alone-long": {}}
    records: list[dict] = []
    for rnd in range(args.rounds):
        for coll in colls:
            before, after = OTHERS[coll]
            mixed = before + ["native"] + after
            kinds = {"alone": (["native"], args.reps), "interleaved": (mixed, args.reps),
                     "alone-long": (["native"], args.reps * len(mixed))}
            order = list(kinds)
            order = order[rnd % 3:] + order[:rnd % 3]  # rotated from round to round
            for kind in order:
                algos, reps = kinds[kind]
                spec = bench_mod.BenchSpec(coll, algos, args.np, sizes, reps=reps, timing="osu")
                recs, _ = bench_mod.run(b, spec, timeout=600)
                for r in recs:
                    r.update(round=rnd, kind=kind)
                    records.append(r)
                    if r["spec"] == "native":
                        figs[kind].setdefault((coll, r["size"]), []).append(r["median_us"])
        console.print(f"round {rnd + 1}/{args.rounds} done", style="dim")

    t = Table(title=f"native alone vs interleaved, np {args.np}"
                    f"{' (OVERSUBSCRIBED)' if oversub else ''}, {args.rounds} rounds of "
                    f"rotated launches ({b.mpi.banner}); native's median over repetitions, "
                    f"µs, median over rounds; ratios per round", title_justify="left")
    for col in ("collective", "size", "alone µs", "interleaved µs", "alone-long µs",
                "interleaved/alone", "95% CI", "slower", "interleaved/alone-long", "95% CI ",
                "verdict"):
        t.add_column(col, justify="left" if col in ("collective", "verdict") else "right")
    rows = []
    for coll in colls:
        for s in sizes:
            a, m, c = (figs[k][(coll, s)] for k in ("alone", "interleaved", "alone-long"))
            ratios = [x / y for x, y in zip(m, a)]
            control = [x / y for x, y in zip(m, c)]
            med, cmed = statistics.median(ratios), statistics.median(control)
            lo, hi = bootstrap_ci(ratios)
            clo, chi = bootstrap_ci(control)
            if lo <= 1 <= hi:
                verdict = "no bias (CI holds 1)"
            elif clo <= 1 <= chi:
                verdict = "launch length, not company"
            else:
                verdict = "interleaved slower" if lo > 1 else "interleaved faster"
            row = {"collective": coll, "size": s, "alone_us": statistics.median(a),
                   "interleaved_us": statistics.median(m), "alone_long_us": statistics.median(c),
                   "ratio": med, "ci": [lo, hi], "ratio_long": cmed, "ci_long": [clo, chi],
                   "slower_rounds": sum(r > 1 for r in ratios), "rounds": len(ratios),
                   "verdict": verdict}
            rows.append(row)
            t.add_row(coll, fmt_size(s), f"{row['alone_us']:.3f}",
                      f"{row['interleaved_us']:.3f}", f"{row['alone_long_us']:.3f}",
                      f"{med:.3f}", f"{lo:.2f}–{hi:.2f}",
                      f"{row['slower_rounds']}/{len(ratios)}", f"{cmed:.3f}",
                      f"{clo:.2f}–{chi:.2f}", verdict)
    console.print(t)
    if args.output:
        write_atomic(Path(args.output), json.dumps({"rows": rows, "records": records},
                                                   indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
