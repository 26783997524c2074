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

The MPI library's own collective in SMPI is SMPI's, not Open MPI's: `native` is shown
but left out of the summary.

`-o FILE` keeps every figure and each collective's calibrated platform description;
`--replay FILE` simulates again against that file's measurements, on its platforms,
without measuring (the simulation is deterministic): a quiet machine's measurements,
brought home, can test model changes on any machine.

    .venv/bin/python benchmarks/sim_vs_measured_algos.py
    .venv/bin/python benchmarks/sim_vs_measured_algos.py --colls bcast,allreduce \\
        --sizes 8,64,1K,8K,64K,1M --reps 5 -o sim_vs_measured_algos.json
    .venv/bin/python benchmarks/sim_vs_measured_algos.py --replay \\
        benchmarks/measurements/device-2026-11-28/c-simacc-1.json --shared 16
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

from colltune.drivers import bench
from colltune.mpi import launch
from colltune.drivers import registry
from colltune.mpi import libraries as mpi_mod
from colltune.mpi import platforms as plat
from colltune.mpi.build import build as do_build
from colltune.drivers.gamma import COLD_POOL_BYTES, COMPUTE_SIZES, measure_gamma
from colltune.drivers.p2p import PingpongSpec, measure_eager_limit, measure_exchange, run_pingpong
from colltune.base.units import fmt_size, parse_size, parse_sizes

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
    ap.add_argument("--sizes", default="8,1K,64K,1M", help="message sizes")
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
                         "(benchmarks/dirty_send.py: sender-written minus clean), e.g. "
                         "4096:0.4,16384:1.8,65536:4.5,262144:13,1048576:32")
    ap.add_argument("--charge-from", choices=("calibrated", "cached"), default="calibrated",
                    help="the copy and reduction tables of the main simulation: as the run "
                         "calibrated them, or the variant timed in the cache")
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
        if args.charge_from == "cached" and other_label == "cached" and other:
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
            g = math.exp(statistics.fmean(math.log(x) for x, _ in rs.values()))
            g0 = math.exp(statistics.fmean(math.log(x) for _, x in rs.values()))
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
                  f"{math.exp(statistics.fmean(math.log(x) for x in ratios)):.2f}, "
                  f"median deviation {100 * (math.exp(statistics.median(logs)) - 1):.0f}%, "
                  f"{100 * within:.0f}% within 0.8-1.25", highlight=False)
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
            "mpi": replay["mpi"] if replay else measured_build.mpi.banner,
            "simulator": smpi_build.mpi.banner,
            "sizes": sizes, "reps": replay["reps"] if replay else args.reps,
            "machine": replay.get("machine") if replay else machine()}, indent=2) + "\n")
        out.print(f"wrote {args.output}")


if __name__ == "__main__":
    sys.exit(main())
