#!/usr/bin/env python3
"""Seed 004 on the namespace cluster (docs/cluster.md): tables from a sweep database.

The studies (`--study`, repeatable; default cluster-seed004 and cluster-seed004-unshaped)
measure Bcast at 2 nodes x 1 process under the load levels none/light/heavy
(colltune-load on the same two nodes, the probe before each launch), one through a
100 Mbit/s switch and one through an unshaped one, in interleaved rounds. Per study:

1. the probe index per level (median and range over the launches);
2. per algorithm and size, the median latency over the launches of each level, the
   spread ((max - min) / median) and loaded / none (ratio of the medians);
3. the probe's Pearson correlation with each algorithm's latency over all launches
   (the seed's Fig. 2), per size;
4. the fastest algorithm per level and size, with the runner-up's ratio to it;
5. with `--tc LOG` (lines of `tc -s qdisc show` sampled every second, written by the
   sampler of the run: `TIME DEV qdisc tbf ... backlog Nb Mp`), the backlog and drops of
   the token buckets during each level's launches (how much the switch queued).

Levels other than `none` run 4 processes on 2 cores (2 measured, 2 generator):
OVERSUBSCRIBED, marked so in every table.

    .venv/bin/python lab/scripts/cluster_seed004.py --db seed004.db --tc tc.log \\
        [--json out.json] [--csv points.csv]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import re
import statistics
from pathlib import Path

from colltune.results import reader

LEVELS = ("none", "light", "heavy")
OVER = "OVERSUBSCRIBED (4 processes on 2 cores)"


def pearson(xs, ys) -> float:
    if len(xs) < 3:
        return float("nan")
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sx = math.sqrt(sum((x - mx) ** 2 for x in xs))
    sy = math.sqrt(sum((y - my) ** 2 for y in ys))
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / (sx * sy) if sx and sy \
        else float("nan")


def spread(xs) -> float:
    m = statistics.median(xs)
    return (max(xs) - min(xs)) / m if m else float("nan")


def tc_samples(path: Path) -> list[tuple[float, str, int, int]]:
    """(time, device, backlog bytes, dropped packets so far) of each tbf line."""
    out = []
    for line in path.read_text().splitlines():
        if "tbf" not in line:
            continue
        t, dev = line.split()[:2]
        b = re.search(r"backlog (\d+)b", line)
        d = re.search(r"dropped (\d+)", line)
        out.append((float(t), dev, int(b.group(1)) if b else 0, int(d.group(1)) if d else 0))
    return out


def when(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def analyse(db: str, study: str, tc: list | None) -> dict:
    df = reader.read_measurements(db, study)
    units = reader.read_tables(db, ["units", "studies"])
    res: dict = {"study": study, "rounds": sorted(int(r) for r in df["round"].unique()),
                 "launches": int(df["unit_id"].nunique())}
    res["probe_us"] = {}
    for lv in LEVELS:
        p = df[df["load_level"] == lv].groupby("unit_id")["probe_us"].first().dropna()
        if len(p):
            res["probe_us"][lv] = {"median": float(p.median()), "min": float(p.min()),
                                   "max": float(p.max()), "launches": int(len(p))}
    pts = {}
    for (algo, size, lv), g in df.groupby(["algorithm", "size", "load_level"]):
        xs = [float(x) for x in g["median_us"]]
        pts.setdefault(f"{algo}|{int(size)}", {})[lv] = {
            "median_us": statistics.median(xs), "spread": spread(xs), "n": len(xs)}
    res["points"] = pts
    corr = {}
    for (algo, size), g in df.groupby(["algorithm", "size"]):
        g = g.dropna(subset=["probe_us"])
        corr[f"{algo}|{int(size)}"] = pearson(list(g["probe_us"]), list(g["median_us"]))
    res["pearson"] = corr
    best = {}
    for (size, lv), g in df.groupby(["size", "load_level"]):
        med = g.groupby("algorithm")["median_us"].median().sort_values()
        best[f"{int(size)}|{lv}"] = {"fastest": med.index[0],
                                     "runner_up": med.index[1] if len(med) > 1 else None,
                                     "runner_up_ratio": float(med.iloc[1] / med.iloc[0])
                                     if len(med) > 1 else None}
    res["fastest"] = best
    if tc and "units" in units:
        sid = units["studies"].set_index("name").loc[study, "id"]
        u = units["units"][units["units"]["study_id"] == sid]
        lv_of = df.groupby("unit_id")["load_level"].first()
        q: dict[str, dict] = {}
        for _, row in u.iterrows():
            lv = lv_of.get(row["id"])
            if lv is None or not row["finished_at"]:
                continue
            t0, t1 = when(row["started_at"]), when(row["finished_at"])
            inside = [s for s in tc if t0 <= s[0] <= t1]
            if not inside:
                continue
            d = q.setdefault(lv, {"samples": 0, "backlog_max_B": 0, "backlog_sum": 0,
                                  "busy_samples": 0, "drops": 0})
            d["samples"] += len(inside)
            d["backlog_max_B"] = max(d["backlog_max_B"], max(s[2] for s in inside))
            d["backlog_sum"] += sum(s[2] for s in inside)
            d["busy_samples"] += sum(1 for s in inside if s[2] > 0)
            by_dev: dict[str, list[int]] = {}
            for s in inside:
                by_dev.setdefault(s[1], []).append(s[3])
            d["drops"] += sum(max(v) - min(v) for v in by_dev.values())
        for d in q.values():
            d["backlog_mean_B"] = d.pop("backlog_sum") / d["samples"]
            d["queued_share"] = d.pop("busy_samples") / d["samples"]
        res["queues"] = q
    return res


def print_study(r: dict) -> None:
    print(f"\n## {r['study']}: rounds {r['rounds']}, {r['launches']} launches")
    print("probe index (µs per probe iteration), median [range] over launches:")
    for lv, p in r["probe_us"].items():
        mark = f"  {OVER}" if lv != "none" else ""
        print(f"  {lv:6s} {p['median']:9.0f} [{p['min']:.0f}–{p['max']:.0f}] "
              f"({p['launches']} launches){mark}")
    sizes = sorted({int(k.split("|")[1]) for k in r["points"]})
    algos = sorted({k.split("|")[0] for k in r["points"]})
    for size in sizes:
        print(f"size {size} B: median µs (spread) per level; loaded/none; Pearson(probe)")
        for a in algos:
            p = r["points"].get(f"{a}|{size}", {})
            cells = [f"{lv} {p[lv]['median_us']:.0f} ({p[lv]['spread']:.2f})"
                     for lv in LEVELS if lv in p]
            ratios = [f"{lv}/none {p[lv]['median_us'] / p['none']['median_us']:.2f}"
                      for lv in LEVELS[1:] if lv in p and "none" in p]
            print(f"  {a:18s} " + " | ".join(cells) + "  " + " ".join(ratios)
                  + f"  r={r['pearson'].get(f'{a}|{size}', float('nan')):.2f}")
        for lv in LEVELS:
            b = r["fastest"].get(f"{size}|{lv}")
            if b:
                print(f"  fastest under {lv}: {b['fastest']} (runner-up {b['runner_up']} "
                      f"×{b['runner_up_ratio']:.2f})")
    for lv, d in r.get("queues", {}).items():
        print(f"token-bucket queues during {lv}: {d['samples']} samples, backlog mean "
              f"{d['backlog_mean_B'] / 1024:.0f} KiB, max {d['backlog_max_B'] / 1024:.0f} KiB, "
              f"non-empty in {d['queued_share']:.0%} of samples, {d['drops']} packets dropped")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--study", action="append")
    ap.add_argument("--tc", help="the tc sampler's log (queues of the capped links)")
    ap.add_argument("--json", help="write every figure here")
    ap.add_argument("--csv", help="write every measured point here (one row a point and "
                                  "launch: study, round, launch, level, probe, algorithm, "
                                  "size, median)")
    args = ap.parse_args()
    tc = tc_samples(Path(args.tc)) if args.tc else None
    results = [analyse(args.db, s, tc) for s in
               (args.study or ["cluster-seed004", "cluster-seed004-unshaped"])]
    for r in results:
        print_study(r)
    if len(results) == 2:
        a, b = results
        print(f"\nloaded/none at {a['study']} over loaded/none at {b['study']} "
              "(the network's share of the slowdown; the CPU's is in both):")
        for key in sorted(a["points"], key=lambda k: (int(k.split("|")[1]), k)):
            pa, pb = a["points"][key], b["points"].get(key, {})
            cells = []
            for lv in LEVELS[1:]:
                if lv in pa and lv in pb and "none" in pa and "none" in pb:
                    ra = pa[lv]["median_us"] / pa["none"]["median_us"]
                    rb = pb[lv]["median_us"] / pb["none"]["median_us"]
                    cells.append(f"{lv} {ra:.2f} / {rb:.2f} = {ra / rb:.2f}")
            print(f"  {key:28s} " + "  ".join(cells))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    if args.csv:
        import pandas as pd

        cols = ["study", "round", "unit_id", "load_level", "probe_us", "algorithm", "size",
                "median_us", "rep_min_us", "rep_max_us", "nodes", "ppn"]
        frames = [reader.read_measurements(args.db, r["study"])[cols] for r in results]
        pd.concat(frames).to_csv(args.csv, index=False, float_format="%.3f")


if __name__ == "__main__":
    main()
