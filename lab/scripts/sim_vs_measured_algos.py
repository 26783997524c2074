#!/usr/bin/env python3
"""Simulated vs measured latency of every algorithm at 2 processes on this machine.

1. A ping-pong here (2 processes), the eager-limit search and the local copy and
   reduction timer calibrate `this-machine` (piecewise factors, the MPI library's
   eager limit and the charged computation, as `colltune platform calibrate` writes
   it). The ping-pong runs just before and just after each collective's measurement,
   and that collective is simulated on the fastest of the two (the calibration of
   its own); both are printed, so that a machine that changed during the measurement
   shows.
2. Every colltune algorithm of each collective (and `native`), 2 processes, sizes
   8 B .. 1 MiB, measured with colltune-bench here (OSU timing: the loop the simulation
   runs), `--reps` repetitions, median of the per-repetition times.
3. The same colltune-bench compiled with smpicc, run under SMPI on the calibrated
   platform (deterministic: the simulation defaults, one timed call a point), twice:
   with the charged computation (local copies and reductions of colltune's
   algorithms, docs/simulation.md "Charged computation": timed with their data coming
   from memory, as `colltune platform calibrate` does by default) and without it (as
   before issue 28); and as the variant "cached", charged as timed in the cache.
4. Per algorithm and size: measured, simulated and simulated / measured; per
   algorithm the geometric mean of the ratios, charged and uncharged.
5. Choosing from the simulation: per collective and size, the algorithms the
   simulation ranks first (ties within evidence.EXACT_TOL) and what that choice
   costs measured, over the measured fastest (the regret); `--judge FILE` judges the
   choices by another run's measurements (the same machine again) and prints what
   this run's own measured choices cost there, the floor that noise alone sets.

The MPI library's own collective in SMPI is SMPI's, not Open MPI's: `native` is shown
but left out of the summary.

`-o FILE` keeps every figure and each collective's calibrated platform description;
`--replay FILE` simulates again against that file's measurements, on its platforms,
without measuring (the simulation is deterministic): a quiet machine's measurements,
brought home, can test model changes on any machine.

    .venv/bin/python lab/scripts/sim_vs_measured_algos.py
    .venv/bin/python lab/scripts/sim_vs_measured_algos.py --colls bcast,allreduce \\
        --size 8,64,1K,8K,64K,1M --reps 5 -o sim_vs_measured_algos.json
    .venv/bin/python lab/scripts/sim_vs_measured_algos.py --replay \\
        lab/data/device-2026-11-28/c-simacc-1.json --shared 16
    .venv/bin/python lab/scripts/sim_vs_measured_algos.py --replay \\
        lab/data/device-2026-11-28/d-simacc-1.json \\
        --judge lab/data/device-2026-11-28/d-simacc-2.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from colltune.analysis.evidence import EXACT_TOL
from colltune.drivers import bench
from colltune.mpi import launch
from colltune.drivers import registry
from colltune.mpi import libraries as mpi_mod
from colltune.mpi import platforms as plat
from colltune.mpi.build import build as do_build
from colltune.drivers.gamma import COLD_POOL_BYTES, COMPUTE_SIZES, measure_gamma
from colltune.drivers.p2p import PingpongSpec, measure_eager_limit, measure_exchange, run_pingpong
from colltune.base.units import fmt_size, parse_size, add_size_option, parse_sizes

out = Console(width=160)
OTHER = {"cold": "copies and reductions charged as timed with their data in memory",
         "cached": "copies and reductions charged as timed with their data in the cache"}


def load_avg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def machine() -> dict:
    """Where the measurements ran: host name, processor, cores."""
    cpu = "n/a"
    try:
        cpu = next((line.split(":", 1)[1].strip() for line in
                    Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name")), "n/a")
    except OSError:
        pass
    return {"host": plat.local_hostname(), "cpu": cpu, "cores": os.cpu_count()}


def geo_mean(xs) -> float:
    xs = list(xs)
    return math.exp(statistics.fmean(math.log(x) for x in xs)) if xs else float("nan")


def selection(rows: list[dict], against: list[dict] | None = None) -> list[dict]:
    """What a tuner choosing from the simulation would lose here: per collective and
    size, colltune's algorithms the simulation ranks first (every one within
    EXACT_TOL of the fastest simulated: a tie, tune.py's exact comparison), and the
    measured time of that choice over the measured fastest (the regret; of a tie its
    best and worst member), charged and uncharged. `against`: another run's rows of
    the same points, whose measurements judge the choices instead (the same machine
    measured again: a choice is not judged by the noise it was made on); then also
    this run's own measured choice judged there, the floor that noise alone sets."""
    def by_point(rs):
        out: dict[tuple[str, int], dict[str, dict]] = {}
        for r in rs:
            if r["algorithm"] != "native":
                out.setdefault((r["collective"], int(r["size"])), {})[r["algorithm"]] = r
        return out
    here, judge = by_point(rows), by_point(against if against is not None else rows)
    result = []
    for (coll, size), algos in here.items():
        meas = {a: r["measured_us"] for a, r in judge.get((coll, size), {}).items()
                if a in algos}
        if len(meas) < 2:
            continue
        best = min(meas, key=meas.get)
        row = {"collective": coll, "size": size, "measured_best": best,
               "measured_best_us": meas[best]}
        for key, label in (("simulated_us", "charged"), ("simulated_uncharged_us",
                                                         "uncharged")):
            sim = {a: algos[a][key] for a in meas}
            lo = min(sim.values())
            tied = [a for a in meas if sim[a] <= lo * (1 + EXACT_TOL)]
            regrets = [meas[a] / meas[best] for a in tied]
            row[label] = {"picks": tied, "regret_best": min(regrets),
                          "regret_worst": max(regrets)}
        if against is not None:
            own = min(meas, key=lambda a: algos[a]["measured_us"])
            row["measured_pick"] = own
            row["measured_pick_regret"] = meas[own] / meas[best]
        result.append(row)
    return result


def print_selection(sel: list[dict], judged_by: str | None) -> None:
    t = Table(title="choosing from the simulation: colltune's algorithms the simulation "
                    "ranks first (ties within " f"{100 * EXACT_TOL:g} %), their measured time "
                    "over the measured fastest" + (f" (measurements of {judged_by})"
                                                   if judged_by else ""),
              title_justify="left")
    for c in ("collective", "size", "simulated first (charged)", "measured fastest",
              "regret, best-worst of the tie", "uncharged: regret"):
        t.add_column(c, justify="right" if "regret" in c or c == "size" else "left")
    if judged_by:
        t.add_column("this run's measured choice: regret", justify="right")
    for r in sel:
        c, u = r["charged"], r["uncharged"]
        picks = c["picks"][0] + (f" (+{len(c['picks']) - 1} tied)" if len(c["picks"]) > 1
                                 else "")
        cells = [r["collective"], fmt_size(r["size"]), picks, r["measured_best"],
                 f"{c['regret_best']:.2f}-{c['regret_worst']:.2f}",
                 f"{u['regret_best']:.2f}-{u['regret_worst']:.2f}"]
        if judged_by:
            cells.append(f"{r['measured_pick_regret']:.2f}")
        t.add_row(*cells)
    out.print(t)
    for label in ("charged", "uncharged"):
        worst = [r[label]["regret_worst"] for r in sel]
        bestc = [r[label]["regret_best"] for r in sel]
        within = sum(1 for x in worst if x <= 1.05)
        out.print(f"choosing from the simulation, {label}: {len(sel)} points, regret geometric "
                  f"mean {geo_mean(bestc):.3f}-{geo_mean(worst):.3f} (best-worst member of "
                  f"each tie), largest {max(worst):.2f}; {within} of {len(sel)} points within "
                  "5 % of the fastest (worst member)", highlight=False)
    if judged_by:
        own = [r["measured_pick_regret"] for r in sel]
        out.print(f"this run's measured choices judged by {judged_by}: regret geometric mean "
                  f"{geo_mean(own):.3f}, largest {max(own):.2f} (what noise alone costs)",
                  highlight=False)


def run_bench(b, coll: str, algos: list[str], sizes: list[int], reps: int,
              iterations: int | None) -> dict[tuple[str, int], dict]:
    spec = bench.BenchSpec(coll, algos, 2, sizes, reps=reps, timing="osu",
                           iterations=iterations)
    recs, _ = bench.run(b, spec)
    return {(r["spec"], int(r["size"])): r for r in recs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mpi", help="MPI library of the measured runs (default openmpi)")
    ap.add_argument("--colls", default="bcast,allreduce,reduce,allgather",
                    help="collectives, comma-separated")
    add_size_option(ap, default="8,1K,64K,1M", help="message sizes")
    ap.add_argument("--reps", type=int, default=5, help="measured repetitions per point")
    ap.add_argument("--iterations", type=int, help="measured iterations per repetition "
                    "(default: the driver's, by size)")
    ap.add_argument("--cfg", action="append", default=[], metavar="KEY:VALUE",
                    help="an extra SimGrid setting of the simulated runs (repeatable)")
    ap.add_argument("--algos", metavar="SPEC;SPEC;...",
                    help="these algorithm specs instead of every algorithm and native, "
                         "';'-separated (a spec's parameters are ','-separated), e.g. "
                         "'chain:segsize=8192;binomial'")
    ap.add_argument("--sim-iterations", type=int, default=None,
                    help="timed calls of a simulated point (default: the driver's, one; "
                         "OSU timing's barrier between calls leaves the ranks skewed "
                         "differently after one call than in a long loop)")
    ap.add_argument("--variant", action="append", default=[], metavar="LABEL=KEY:VALUE,...",
                    help="also simulate (charged) with these SimGrid settings on top of "
                         "--cfg and print its summary line (repeatable): several models "
                         "against one set of measurements; `iterations:N` among them sets "
                         "the variant's timed calls a point")
    ap.add_argument("--no-exchange", dest="exchange", action="store_false",
                    help="calibrate without the exchange (two messages at once): no memory "
                         "bus in the simulated node")
    ap.add_argument("--replay", metavar="JSON", help="measure nothing: simulate against "
                    "the measurements and platforms of an earlier run's -o file")
    ap.add_argument("--shared", type=float, metavar="GBPS",
                    help="simulate with this memory bus instead of the calibrated one (0: "
                         "none), e.g. on a --replay of a run calibrated without it")
    ap.add_argument("--split-cores", action="store_true",
                    help="a model tried: each core a host of its own with a link per "
                         "direction (the calibrated intra-node latency and bandwidth), so "
                         "that messages from one sender, or to one receiver, share a link "
                         "(and SMPI sees one core a node)")
    ap.add_argument("--forward", metavar="BYTES:US,...",
                    help="a model tried: charge a send whose data the rank wrote during the "
                         "call (received, copied, reduced) this table's time first "
                         "(lab/scripts/dirty_send.py: sender-written minus clean), e.g. "
                         "4096:0.4,16384:1.8,65536:4.5,262144:13,1048576:32")
    ap.add_argument("--charge-from", choices=("calibrated", "cached", "memory"),
                    default="calibrated",
                    help="the copy and reduction tables of the main simulation: as the run "
                         "calibrated them, the ones timed in the cache, or the ones timed "
                         "from memory (today's default; on a replay of a file that holds "
                         "both)")
    ap.add_argument("--judge", metavar="JSON",
                    help="judge the choices made from the simulation by the measurements "
                         "of another run's -o file (the same machine measured again), "
                         "beside this run's own measured choices")
    ap.add_argument("-o", "--output", help="write every figure here (JSON)")
    args = ap.parse_args()
    variants: dict[str, tuple[str, ...]] = {}
    for v in args.variant:
        label, sep, cfgs = v.partition("=")
        if not sep or not label:
            ap.error(f"--variant {v!r}: expected LABEL=KEY:VALUE[,KEY:VALUE...]")
        variants[label] = tuple(c for c in cfgs.split(",") if c)
    def split_variant(cfgs: tuple[str, ...]) -> tuple[tuple[str, ...], int | None]:
        its = [c for c in cfgs if c.startswith("iterations:")]
        n = int(its[-1].split(":", 1)[1]) if its else args.sim_iterations
        return tuple(c for c in cfgs if not c.startswith("iterations:")), n
    sizes = parse_sizes(args.sizes)
    colls = [c.strip() for c in args.colls.split(",") if c.strip()]
    loads = {"before": load_avg()}
    replay = json.loads(Path(args.replay).read_text()) if args.replay else None
    if replay is not None:
        if "platforms" not in replay:
            ap.error(f"--replay {args.replay}: no platform descriptions in it (written by an "
                     "older version of this script)")
        colls = [c for c in colls if c in replay["platforms"]] if args.colls != \
            ap.get_default("colls") else list(replay["platforms"])
        sizes = [int(m) for m in replay["sizes"]]
        measured_build = None
    else:
        measured_build = do_build(mpi_mod.find(args.mpi))
    smpi_build = do_build(mpi_mod.find("smpi"))

    if replay is None:
        pp_spec = PingpongSpec(2, tuple(parse_sizes("8:1M")), reps=11)
        out.print("local copy and reduction (the charged computation) ...")
        # charged as colltune platform calibrate does: data from memory; the variant
        # "cached": the same operations timed on one pair of buffers, in the cache
        compute, other = {}, {}
        for kind, op in (("copy", "copy"), ("reduce", "sum")):
            g = measure_gamma(measured_build, "char", op, sizes=COMPUTE_SIZES,
                              pool_bytes=COLD_POOL_BYTES)
            compute[kind] = {"points": g.points, "command": g.command,
                             "pool_bytes": COLD_POOL_BYTES}
            g = measure_gamma(measured_build, "char", op, sizes=COMPUTE_SIZES)
            other[kind] = plat.compute_points(g.points, "min")
        other_label = "cached"
        out.print("eager limit (MPI_Send with the receiver late) ...")
        eager = measure_eager_limit(measured_build)
    else:
        eager = {"eager_limit": replay["eager_limit_bytes"]}
        # files of before 2026-11-28 17:00 charge cached data and keep the other tables as
        # compute_cold; later ones the reverse
        other_label = "cold" if "compute_cold" in replay else "cached"
        other = {k: tuple(tuple(x) for x in v)
                 for k, v in replay.get(f"compute_{other_label}", {}).items()}
    if other:  # the copies and reductions charged from the other tables
        variants[other_label] = ()
    # what the platforms' own tables were timed on: from memory since 2026-11-28 17:00
    # (such files keep compute_cached), in the cache before (compute_cold, or nothing)
    main_kind = ("memory" if replay is None or "compute_cached" in replay else "cached")
    if args.charge_from not in ("calibrated", main_kind) and not other:
        ap.error(f"--charge-from {args.charge_from}: "
                 + (f"{args.replay} holds only the tables timed " if replay else
                    "this run times only the tables ")
                 + ("in the cache" if main_kind == "cached" else "from memory"))
    swap = args.charge_from not in ("calibrated", main_kind)

    rows: list[dict] = []
    walls: dict[str, float] = {}
    cals: dict[str, dict] = {}
    platforms: dict[str, str] = {}
    drift: dict[str, dict[int, tuple[float, float]]] = {}
    for coll in colls:
        if replay is not None:
            platform = plat.loads(replay["platforms"][coll], f"{args.replay} [{coll}]")
            meas = {(r["algorithm"], int(r["size"])): {"median_us": r["measured_us"],
                                                       "rep_min_us": r["measured_min_us"]}
                    for r in replay["rows"] if r["collective"] == coll}
            algos = list(dict.fromkeys(spec for spec, _ in meas))
            drift[coll] = {int(m): tuple(v) for m, v in
                           replay["pingpong_before_after_us"][coll].items()}
            out.print(f"{coll}: {len(algos)} algorithms x {len(sizes)} sizes replayed from "
                      f"{args.replay}")
        else:
            algos = ([a.strip() for a in args.algos.split(";") if a.strip()] if args.algos
                     else [a for a in registry.names(measured_build, coll)] + ["native"])
            # this VM's ping-pong moves by up to 2x within seconds (8 B one-way 0.12-0.44
            # us on 2026-11-27): each collective is simulated on a calibration of its own,
            # from ping-pongs just before and just after its measurement (fastest of both)
            out.print(f"{coll}: ping-pong, {len(algos)} algorithms x {len(sizes)} sizes "
                      "measured, ping-pong ...")
            pp_b, _ = run_pingpong(measured_build, pp_spec)
            ex_b = measure_exchange(measured_build) if args.exchange else []
            meas = run_bench(measured_build, coll, algos, sizes, args.reps, args.iterations)
            pp_a, _ = run_pingpong(measured_build, pp_spec)
            ex_a = measure_exchange(measured_build) if args.exchange else []
            drift[coll] = {int(b["size"]): (float(b["min_us"]), float(a["min_us"]))
                           for b, a in zip(pp_b, pp_a)}
            pp = [dict(b, min_us=min(float(b["min_us"]), float(a["min_us"])))
                  for b, a in zip(pp_b, pp_a)]
            ex = [dict(b, min_us=min(float(b["min_us"]), float(a["min_us"])))
                  for b, a in zip(ex_b, ex_a)]
            platform = plat.calibrated(pp, statistic="min", piecewise=True, compute=compute,
                                       eager=eager, exchange=ex)
        platforms[coll] = platform.to_toml()
        if args.shared is not None:  # a model change tried on a replay (or on a run)
            platform = dataclasses.replace(platform, intra_shared_bandwidth_GBps=args.shared
                                           or None)
        if args.split_cores:
            platform = dataclasses.replace(
                platform, nodes=max(2, platform.cores), sockets=1, cores_per_socket=1,
                net_latency_us=platform.intra_latency_us,
                net_bandwidth_GBps=platform.intra_bandwidth_GBps,
                intra_shared_bandwidth_GBps=None, switch_bandwidth_GBps=None)
        if swap:  # charged from the other tables (--charge-from)
            platform = dataclasses.replace(platform, compute=dict(other))
        if args.forward:
            fwd = tuple((int(parse_size(b)), float(us)) for b, us in
                        (x.split(":") for x in args.forward.split(",") if x))
            platform = dataclasses.replace(platform, compute={**platform.compute,
                                                              "forward": fwd})
        uncharged = dataclasses.replace(platform, compute={})
        cal = cals[coll] = platform.calibration
        out.print(f"{coll}: simulated on this-machine ...")
        t0 = time.perf_counter()
        with launch.simulate(platform, tuple(args.cfg)):
            sim = run_bench(smpi_build, coll, algos, sizes, 1, args.sim_iterations)
        walls[coll] = time.perf_counter() - t0
        with launch.simulate(uncharged, tuple(args.cfg)):
            sim0 = run_bench(smpi_build, coll, algos, sizes, 1, args.sim_iterations)
        simv = {}
        for label, cfgs in variants.items():
            vcfg, vits = split_variant(cfgs)
            vplat = (dataclasses.replace(platform, compute=other) if label == other_label
                     and not cfgs else platform)
            with launch.simulate(vplat, (*args.cfg, *vcfg)):
                simv[label] = run_bench(smpi_build, coll, algos, sizes, 1, vits)
        for (spec, size), m in sorted(meas.items(), key=lambda kv: (algos.index(kv[0][0])
                                                                    if kv[0][0] in algos else 99,
                                                                    kv[0][1])):
            s, s0 = sim.get((spec, size)), sim0.get((spec, size))
            if s is None or s0 is None:
                continue
            rows.append({"collective": coll, "algorithm": spec, "size": size,
                         "measured_us": float(m["median_us"]),
                         "measured_min_us": float(m["rep_min_us"]),
                         "simulated_us": float(s["median_us"]),
                         "simulated_uncharged_us": float(s0["median_us"]),
                         "ratio": float(s["median_us"]) / float(m["median_us"]),
                         "ratio_uncharged": float(s0["median_us"]) / float(m["median_us"]),
                         **{f"ratio[{label}]": float(v[(spec, size)]["median_us"])
                            / float(m["median_us"]) for label, v in simv.items()
                            if (spec, size) in v}})
    loads["after"] = load_avg()
    for coll in colls:
        t = Table(title=f"{coll}, 2 processes: simulated (this-machine, calibrated) / measured "
                        "(median of repetitions)", title_justify="left")
        t.add_column("algorithm")
        for m in sizes:
            t.add_column(fmt_size(m), justify="right")
        t.add_column("geo. mean", justify="right")
        t.add_column("uncharged: sizes", justify="right")
        t.add_column("geo. mean", justify="right")
        by_algo: dict[str, dict[int, tuple[float, float]]] = {}
        for r in rows:
            if r["collective"] == coll:
                by_algo.setdefault(r["algorithm"], {})[r["size"]] = (r["ratio"],
                                                                     r["ratio_uncharged"])
        for algo, rs in by_algo.items():
            g = geo_mean(x for x, _ in rs.values())
            g0 = geo_mean(x for _, x in rs.values())
            t.add_row(algo, *[f"{rs[m][0]:.2f}" if m in rs else "-" for m in sizes], f"{g:.2f}",
                      " ".join(f"{rs[m][1]:.2f}" if m in rs else "-" for m in sizes),
                      f"{g0:.2f}")
        out.print(t)
    ours = [r for r in rows if r["algorithm"] != "native"]
    for key, what in (("ratio_uncharged", "uncharged (before)"), ("ratio", "charged"),
                      *((f"ratio[{label}]", f"charged, {label} ({', '.join(c) or OTHER[label]})")
                        for label, c in variants.items())):
        if not ours or any(key not in r for r in ours):
            continue
        # a simulated time of 0 (a call that waits for nothing) counts as 1/1000 of
        # the measured one, so that it weighs in the means instead of failing them
        ratios = [max(r[key], 1e-3) for r in ours]
        logs = [abs(math.log(x)) for x in ratios]
        within = sum(1 for x in ratios if 0.8 <= x <= 1.25) / len(ours)
        out.print(f"{what}: {len(ours)} points of colltune's algorithms (native left out): "
                  f"geometric mean of simulated/measured "
                  f"{geo_mean(ratios):.2f}, "
                  f"median deviation {100 * (math.exp(statistics.median(logs)) - 1):.0f}%, "
                  f"{100 * within:.0f}% within 0.8-1.25", highlight=False)
    judge_rows = json.loads(Path(args.judge).read_text())["rows"] if args.judge else None
    sel = selection(rows, judge_rows)
    if sel:
        print_selection(sel, args.judge)
    for coll, d in drift.items():
        moved = [m for m, (a, b) in d.items() if not 0.9 <= b / a <= 1.1]
        c = cals[coll]
        out.print(f"{coll}: calibration alpha {c['alpha_us']:.3f} µs, beta {c['beta_GBps']:.3f} "
                  "GB/s (piecewise factors on top); ping-pong before -> after (fastest of 11, "
                  "one-way µs): " + ", ".join(f"{fmt_size(m)} {d[m][0]:.3f} -> {d[m][1]:.3f}"
                                               for m in (8, 1024, 65536, 1048576) if m in d)
                  + (f"; {len(moved)} of {len(d)} sizes moved by more than 10 %: the machine "
                     "changed during the measurement" if moved else "; within 10 % at every "
                     "size"), highlight=False)
    out.print(f"eager limit {eager['eager_limit']} B; simulation wall "
              + ", ".join(f"{c} {w:.1f} s" for c, w in walls.items())
              + f"; load average {loads['before']} before, {loads['after']} after", highlight=False)
    if args.output:
        Path(args.output).write_text(json.dumps({
            "rows": rows, "calibration": cals, "eager_limit_bytes": eager["eager_limit"],
            "pingpong_before_after_us": {c: {str(m): list(v) for m, v in d.items()}
                                         for c, d in drift.items()},
            "platforms": platforms, "replayed_from": args.replay,
            f"compute_{other_label}": {k: [list(x) for x in v] for k, v in other.items()},
            "load": loads, "simulation_wall_s": walls,
            "selection": sel, "selection_judged_by": args.judge,
            "mpi": replay["mpi"] if replay else measured_build.mpi.banner,
            "simulator": smpi_build.mpi.banner,
            "sizes": sizes, "reps": replay["reps"] if replay else args.reps,
            "machine": replay.get("machine") if replay else machine()}, indent=2) + "\n")
        out.print(f"wrote {args.output}")


if __name__ == "__main__":
    sys.exit(main())
