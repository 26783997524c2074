#!/usr/bin/env python3
"""Cheaper tuning: exhaustive sweep vs adaptive measurement (`colltune tune --measure`)
on the same grid: what each costs and how good its rules are.

Per collective, on one grid (candidates x sizes at one process count):

    exhaustive  every candidate at every size in --reps launches (one per repetition,
                each covering the whole grid): candidates x sizes x reps cells;
                rules = tune.select on them (what `colltune tune` makes of a sweep)
    adaptive    colltune.tuning.adaptive.run with --budget (a share of those cells): a small
                initial design, then cells where the decision is least certain;
                rules = adaptive.final_rules

Both run on this machine one after the other per collective, the order alternating
from collective to collective (exhaustive first for the first collective, adaptive
first for the next, ...) so that a slow phase of a shared machine hits both alike.
Both rule sets are evaluated against the exhaustive sweep's medians
(tune.quality with the exhaustive frame as the truth): regret = the rule's choice's
median / the fastest median at every grid size. The exhaustive rules are evaluated
in-sample (on the measurements they were made from), which favours them.

Cost unit: a cell = one (candidate, size, repetition), one stored measurement. A
launch = one mpirun of colltune-bench. The goal (issue 19): adaptive regret geomean
within 3 % of the exhaustive rules' (adaptive / exhaustive <= 1.03) at <= 20 % of
the exhaustive cells. Launches are printed too: the exhaustive design needs only
--reps launches (each as long as the whole grid), the adaptive one more, shorter ones.

    .venv/bin/python lab/scripts/tune_budget.py                       # bcast, allreduce; np 2
    .venv/bin/python lab/scripts/tune_budget.py --coll bcast,reduce,allreduce \\
        --size 1,2,4,8,16,32,64,128,256,512,1K,2K,4K,8K,16K,32K,64K,128K,256K,512K,1M \\
        --reps 6 --budget 15% --json tune_budget.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from colltune.tuning import adaptive
from colltune.drivers import bench as bench_mod
from colltune.drivers import registry
from colltune.tuning import tune  # noqa: E402
from colltune.mpi.build import build_for  # noqa: E402
from colltune.base.files import write_atomic  # noqa: E402
from colltune.base.specs import is_lib_spec, split_specs  # noqa: E402
from colltune.base.units import fmt_size, add_size_option, parse_sizes  # noqa: E402

DEFAULT_SIZES = ",".join(str(4 ** i) for i in range(11))  # 1 B .. 1 MiB, x4


def regret(frame, rs) -> tuple[float, float, str]:
    pts, summary = tune.quality(frame, rs)
    row = summary.iloc[0]
    return float(row["regret_gmean"]), float(row["regret_worst"]), str(row["regret_worst_at"])


def one(build, coll: str, args, first: str) -> dict:
    cands = bench_mod.expand_algos(build, coll, split_specs(args.algo))
    cands = [c for c in cands if not is_lib_spec(c)]
    registry.check_specs(build, coll, cands)
    sizes = tuple(sorted(set(parse_sizes(args.sizes))))
    grid = adaptive.Grid(coll, tuple(cands), sizes, args.np, args.np)
    measure = adaptive.bench_measure(build, grid, iterations=args.iterations,
                                     timing=args.timing)
    out: dict = {"collective": coll, "np": args.np, "candidates": cands,
                 "sizes": list(sizes), "reps": args.reps, "budget": args.budget,
                 "exhaustive_cells": grid.exhaustive_cells(args.reps)}

    def progress(kind):
        def f(used, total, launch, rnd):
            print(f"  {coll} {kind}: {used}/{total} cells, next launch "
                  f"{len(launch.algos)} candidates x {len(launch.sizes)} sizes",
                  file=sys.stderr, flush=True)
        return f

    def run_exhaustive():
        t = time.monotonic()
        frame, launches = adaptive.exhaustive(grid, measure, args.reps, progress("exhaustive"))
        out["exhaustive"] = {"launches": len(launches), "cells": sum(x.cells for x in launches),
                             "seconds": time.monotonic() - t}
        return frame

    def run_adaptive():
        res = adaptive.run(grid, measure, reps=args.reps, budget=args.budget,
                           progress=progress("adaptive"), seed=args.seed,
                           initial_sizes=args.initial_sizes, initial_reps=args.initial_reps,
                           batch=args.batch)
        out["adaptive"] = {"launches": len(res.launches), "cells": res.cells,
                           "budget_cells": res.budget, "rounds": res.rounds,
                           "seconds": res.seconds, "stopped": res.stopped}
        return res

    if first == "exhaustive":
        ex = run_exhaustive()
        res = run_adaptive()
    else:
        res = run_adaptive()
        ex = run_exhaustive()
    ex_rules = tune.select(ex, "colltune")
    ad_rules = adaptive.final_rules(res)
    ch = adaptive.final_choices(res)
    out["adaptive"]["sizes_untested"] = int((ch["how"] == "untested").sum())
    for name, rs in (("exhaustive", ex_rules), ("adaptive", ad_rules)):
        g, w, at = regret(ex, rs)
        out[name].update(regret_gmean=g, regret_worst=w, regret_worst_at=at,
                         rules=[f"{fmt_size(r.size_min)}-"
                                f"{'' if r.size_max is None else fmt_size(r.size_max)} {r.spec}"
                                for r in rs.rules])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--coll", default="bcast,allreduce", help="collectives (comma-separated)")
    ap.add_argument("--np", type=int, default=2, help="process count (default 2)")
    add_size_option(ap, default=DEFAULT_SIZES, help="sizes (default 1 B..1 MiB, x4)")
    ap.add_argument("--algo", default="ours,native", help="candidates (default ours,native)")
    ap.add_argument("--reps", type=int, default=4, help="exhaustive repetitions (default 4)")
    ap.add_argument("--budget", default="20%", help="adaptive budget, share of the "
                    "exhaustive cells (default 20%%)")
    ap.add_argument("--iterations", type=int, default=100,
                    help="timed calls per point (default 100)")
    ap.add_argument("--timing", default="osu", choices=["osu", "window", "auto"],
                    help="the driver's timing (default osu: on a machine shared beyond its "
                         "cores, window timing's calibrated windows can grow to minutes)")
    ap.add_argument("--initial-sizes", type=int, default=3,
                    help="sizes of the adaptive initial design (default 3)")
    ap.add_argument("--initial-reps", type=int, default=2,
                    help="repetitions of the adaptive initial design (default 2)")
    ap.add_argument("--batch", type=int, default=2,
                    help="sizes measured per adaptive round (default 2)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mpi", default=None, help="openmpi (default), mpich or a path")
    ap.add_argument("--json", help="also write the figures here (atomically)")
    args = ap.parse_args()
    try:
        args.budget = adaptive.parse_budget(args.budget)
    except adaptive.AdaptiveError as exc:
        ap.error(str(exc))
    if args.reps < 2:
        ap.error("--reps: at least 2")
    build = build_for(args.mpi)
    results = []
    for i, coll in enumerate(c.strip() for c in args.coll.split(",") if c.strip()):
        results.append(one(build, coll, args, "exhaustive" if i % 2 == 0 else "adaptive"))

    print(f"\nnp {args.np}, timing {args.timing}, {args.iterations} iterations, {args.reps} "
          f"repetitions, budget {100 * args.budget:g}% of the exhaustive cells; regret against "
          "the exhaustive medians (in-sample for exhaustive)")
    hdr = (f"{'collective':<10} {'method':<10} {'launches':>8} {'cells':>6} {'cells %':>7} "
           f"{'seconds':>7} {'regret gmean':>12} {'regret worst':>12}  worst at")
    print(hdr)
    print("-" * len(hdr))
    ok_all = True
    for r in results:
        ex, ad = r["exhaustive"], r["adaptive"]
        for name, x in (("exhaustive", ex), ("adaptive", ad)):
            print(f"{r['collective']:<10} {name:<10} {x['launches']:>8} {x['cells']:>6} "
                  f"{100 * x['cells'] / r['exhaustive_cells']:>6.1f}% {x['seconds']:>7.1f} "
                  f"{x['regret_gmean']:>12.4f} {x['regret_worst']:>12.4f}  "
                  f"{x['regret_worst_at']}")
        rel = ad["regret_gmean"] / ex["regret_gmean"]
        share = ad["cells"] / r["exhaustive_cells"]
        ok = rel <= 1.03 and share <= 0.20 + 1e-9
        ok_all &= ok
        r["goal"] = {"regret_ratio": rel, "cells_share": share, "met": ok}
        print(f"{'':<10} adaptive/exhaustive regret {rel:.4f}, cells {100 * share:.1f}%, "
              f"launches {ad['launches']} vs {ex['launches']}, {ad['rounds']} rounds, "
              f"{ad['sizes_untested']} of {len(r['sizes'])} sizes not settled (native): "
              f"goal (<= 1.03 at <= 20 % of the cells) {'MET' if ok else 'NOT met'}")
        print(f"{'':<10} exhaustive rules: {'; '.join(ex['rules'])}")
        print(f"{'':<10} adaptive rules:   {'; '.join(ad['rules'])}")
    print(f"\ngoal {'met' if ok_all else 'NOT met'} for "
          f"{'every collective' if ok_all else 'at least one collective'}")
    if args.json:
        write_atomic(args.json, json.dumps(results, indent=2, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
