#!/usr/bin/env python3
"""Load-aware rules vs load-unaware rules vs the library's default, on held-out runs
(issue 18, docs/workload.md).

1. Training: the study (default: the `load-local` preset: Bcast at np 2, five
   candidates, 8 B / 64 KiB / 1 MiB, load levels none / light / heavy made by
   colltune-load on this machine, the probe before every launch) is swept into a
   database: round 1.
2. Held out: the same study again, a new round (round 2): other launches, other
   probe values, the levels in another shuffled order.
3. Rules from round 1 (tuning.regret.held_out_regret): load-aware (`colltune tune`: a rule
   set per load class, classes split at the geometric midpoints of the levels' median
   probe), load-unaware (tuned on the quiet level alone: `colltune tune --load-level
   none`), default (native everywhere).
4. Every launch of round 2 picks with each: the load-aware rules by the class of that
   launch's own probe value (as the interposition library does at MPI_Init); also
   with the true level (a perfect probe). Regret = the pick's latency in that launch /
   the fastest latency in that launch; printed as geometric means per size, per level
   and overall, with the correlation of the probe with each algorithm's latency.

    .venv/bin/python lab/scripts/load_regret.py                     # ~5 minutes on 2 cores
    .venv/bin/python lab/scripts/load_regret.py --db load.db --reps 6 --json load_regret.json
    .venv/bin/python lab/scripts/load_regret.py --preset seed004-sim --db sim.db   # simulated

A simulated study (`seed004-sim`, mpi = "smpi") is deterministic: its held-out round
differs from the training round by the load alone (every launch's generator draws its
pairings from a seed of its own, unit key and round), not by noise; `default` is then
SMPI's own MPI_Bcast (what `native` runs under SimGrid).

A database that already holds the study's rounds is reused (`--fresh` measures again).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from colltune.results import db as db_mod  # noqa: E402
from colltune.results import reader  # noqa: E402
from colltune.studies import study as study_mod  # noqa: E402
from colltune.studies import sweep
from colltune.tuning import tune
from colltune.analysis import load as load_analysis  # noqa: E402
from colltune.tuning import regret  # noqa: E402
from colltune.mpi.build import build_for  # noqa: E402
from colltune.base.files import write_atomic  # noqa: E402
from colltune.base.units import fmt_size  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="load-local", help="the study (a preset name)")
    ap.add_argument("--db", default="load_regret.db", help="results database")
    ap.add_argument("--reps", type=int, help="repetitions per round (default: the study's)")
    ap.add_argument("--mpi", help="MPI library (default: the study's `mpi`, else openmpi)")
    ap.add_argument("--fresh", action="store_true", help="measure both rounds again")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()

    st = study_mod.read_preset(args.preset)
    if args.reps:
        st.repetitions = args.reps
    b = build_for(args.mpi or st.mpi or "openmpi")
    sim = bool(b.mpi.simulated)
    conn = db_mod.open_db(args.db)
    sid = reader.study_id(conn, st.name)
    have = 0 if sid is None else reader.latest_round(conn, sid)
    t0 = time.monotonic()
    rounds_left = 2 if args.fresh else max(0, 2 - have)
    for i in range(rounds_left):
        plan = sweep.make_plan(st, b)
        oc = sweep.execute(plan, conn, new_round=have >= 1 or i > 0, progress=False)
        print(f"round {oc.round}: {oc.done} launches stored, {oc.failed} failed, "
              f"{oc.seconds:.0f} s", file=sys.stderr)
        if oc.status != "done":
            return 130
    last = reader.latest_round(conn, reader.study_id(conn, st.name))
    train, _ = tune.read_frame(conn, st.name, last - 1, include_simulated=sim)
    test, _ = tune.read_frame(conn, st.name, last, include_simulated=sim)
    conn.close()

    per, rs = regret.held_out_regret(train, test)
    print(f"study {st.name}: train round {last - 1} ({train['unit_id'].nunique()} launches), "
          f"held out round {last} ({test['unit_id'].nunique()} launches); "
          f"{time.monotonic() - t0:.0f} s")
    print("load classes (probe µs per iteration): " + "; ".join(
        f"{c.name} {c.lo:g}..{'' if c.hi is None else f'{c.hi:g}'}"
        for c in rs["aware"].load_classes))
    corr = load_analysis.correlations(pd_concat(train, test))
    print("\ncorrelation of the probe with each algorithm's latency (both rounds):")
    for r in corr.itertuples():
        print(f"  {fmt_size(r.size):>5} {r.algorithm:<20} n={r.launches:<3} pearson "
              f"{r.pearson:6.3f}  spearman {r.spearman:6.3f}  spread x{r.spread:.2f}")
    print(f"\nheld-out launches classified right by their probe: "
          f"{(per['class'] == per['load_level']).mean():.0%}")
    pols = regret.REGRET_POLICIES
    head = f"{'':>14} {'n':>3} " + " ".join(f"{p:>24}" for p in pols)
    for by, title in ((["size"], "per size"), (["load_level"], "per load level"),
                      (["collective"], "overall")):
        s = regret.regret_summary(per, by)
        print(f"\nregret (geometric mean of pick / fastest in the launch), {title}:")
        print(head)
        for r in s.to_dict("records"):
            k = " ".join(fmt_size(r[c]) if c == "size" else str(r[c]) for c in by)
            print(f"{k:>14} {r['launches']:>3} " + " ".join(f"{r[p]:>24.3f}" for p in pols))
    print("\npicks per size and class (load-aware) vs quiet-tuned:")
    for (size, cls), g in per.groupby(["size", "class"]):
        print(f"  {fmt_size(size):>5} {cls:<6} aware {g['load-aware:pick'].iloc[0]:<22} "
              f"unaware {g['load-unaware (quiet):pick'].iloc[0]:<22} fastest "
              f"{g['fastest'].value_counts().to_dict()}")
    if args.json:
        out = {"study": st.name, "simulated": sim, "classes": [c.__dict__ for c in rs["aware"].load_classes],
               "correlations": json.loads(corr.to_json(orient="records")),
               "per_size": json.loads(regret.regret_summary(per, ["size"]).to_json(
                   orient="records")),
               "per_level": json.loads(regret.regret_summary(per, ["load_level"]).to_json(
                   orient="records")),
               "launches": json.loads(per.to_json(orient="records"))}
        write_atomic(Path(args.json), json.dumps(out, indent=2))
    return 0


def pd_concat(a, b):
    import pandas as pd

    return pd.concat([a, b], ignore_index=True)


if __name__ == "__main__":
    sys.exit(main())
