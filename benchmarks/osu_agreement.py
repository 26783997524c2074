#!/usr/bin/env python3
"""colltune's figure for the MPI library's own collective vs an OSU-style loop.

For each collective and size, compares

    colltune   `colltune bench --timing osu --algo native` (colltune-bench through
               bench.run, as the command runs it): "Avg Latency" = mean_us, the mean
               over processes of each process's mean call time, over --reps loops
    OSU-style  colltune-osu-style (native/tools/osu_style.c): a plain MPI loop timed
               as osu_bcast / osu_reduce / osu_allgather / osu_allreduce 7.x time it
               (page-aligned buffers, skip calls, a barrier after every timed call,
               1000 iterations up to 8 KiB, 100 above), its "Avg Latency"

in alternating launches (colltune, OSU-style, then OSU-style, colltune in the next
round, so neither always runs first), and prints per point both medians over the
launches, the median and range of the per-round ratios colltune / OSU-style, the
ratio of the two programs' fastest launches, and PASS when the median ratio is within
the goal (default 5 %). Run it on a quiet machine: the ratio of two runs of the same
loop spreads by tens of percent at sub-microsecond latencies when other work shares
the cores. colltune runs one repetition per launch by default, so both programs time
the same number of calls.

    .venv/bin/python benchmarks/osu_agreement.py                  # np 2, 8 B..1 MiB
    .venv/bin/python benchmarks/osu_agreement.py --launches 9 -o osu.json
    .venv/bin/python benchmarks/osu_agreement.py --align 1        # both on plain malloc
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from colltune.drivers import bench as bench_mod
from colltune.mpi import launch
from colltune.mpi import placement
from colltune.mpi import libraries as mpi_mod
from colltune.mpi.build import build as do_build
from colltune.base.files import write_atomic
from colltune.base.units import fmt_size, add_size_option, parse_sizes

COLLECTIVES = ("bcast", "reduce", "allgather", "allreduce")


def run_osu_style(b, coll: str, np: int, sizes: list[int], align: int | None,
                  iterations: int | None = None) -> dict[int, dict]:
    """One launch of colltune-osu-style; its records by size."""
    prog = [str(b.program("colltune-osu-style")), "--coll", coll,
            "--sizes", ",".join(map(str, sizes))]
    if iterations:
        prog += ["--iterations", str(iterations)]
    if align is not None:
        prog += ["--align", str(align)]
    res = launch.run(launch.prepare(b.mpi, np, prog), timeout=600)
    if res.timed_out or res.returncode != 0:
        raise SystemExit(launch.failure_message("colltune-osu-style", res))
    recs = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    return {r["size"]: r for r in recs}


def run_colltune(b, coll: str, np: int, sizes: list[int], reps: int,
                 align: int | None, iterations: int | None = None) -> dict[int, dict]:
    spec = bench_mod.BenchSpec(coll, ["native"], np, sizes, reps=reps, timing="osu",
                               align=align, iterations=iterations)
    recs, _ = bench_mod.run(b, spec, timeout=600)
    return {r["size"]: r for r in recs}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", type=int, default=2)
    add_size_option(ap, default="8,1K,64K,1M")
    ap.add_argument("--coll", default=",".join(COLLECTIVES),
                    help="collectives, comma-separated (default: all four)")
    ap.add_argument("--launches", type=int, default=5, help="launches of each program")
    ap.add_argument("--reps", type=int, default=1,
                    help="colltune's repetitions per launch (default 1: as many timed calls "
                         "as the OSU-style loop; a mean over more calls has a smaller spread, "
                         "so under load its median over launches is higher)")
    ap.add_argument("--align", type=int, default=None,
                    help="buffer alignment for both programs (default: the page size)")
    ap.add_argument("--iterations", type=int, default=None,
                    help="timed calls per size in both programs, like OSU's -i (default: "
                         "OSU's, 1000 up to 8 KiB and 100 above); more calls per launch "
                         "make each launch's figure steadier on a noisy machine")
    ap.add_argument("--goal", type=float, default=0.05,
                    help="largest |ratio - 1| that passes (default 0.05)")
    ap.add_argument("--mpi", default=None)
    ap.add_argument("-o", "--output", help="write every record and the table here as JSON")
    args = ap.parse_args()
    colls = [c for c in args.coll.split(",") if c]
    bad = [c for c in colls if c not in COLLECTIVES]
    if bad:
        ap.error(f"unknown collective {', '.join(bad)}; valid: {', '.join(COLLECTIVES)}")
    console = Console(width=max(Console().width, 140))
    b = do_build(mpi_mod.find(args.mpi))
    sizes = parse_sizes(args.sizes)
    oversub = args.np > placement.cores()
    ours: dict[tuple, list[float]] = {}
    theirs: dict[tuple, list[float]] = {}
    ratios: dict[tuple, list[float]] = {}
    records: list[dict] = []
    for rnd in range(args.launches):
        for coll in colls:
            order = ("colltune", "osu-style") if rnd % 2 == 0 else ("osu-style", "colltune")
            got: dict[str, dict[int, dict]] = {}
            for who in order:
                if who == "colltune":
                    got[who] = run_colltune(b, coll, args.np, sizes, args.reps, args.align,
                                            args.iterations)
                else:
                    got[who] = run_osu_style(b, coll, args.np, sizes, args.align, args.iterations)
            for s in sizes:
                c, o = got["colltune"][s], got["osu-style"][s]
                key = (coll, s)
                ours.setdefault(key, []).append(c["mean_us"])
                theirs.setdefault(key, []).append(o["avg_us"])
                ratios.setdefault(key, []).append(c["mean_us"] / o["avg_us"])
                for who, r in (("colltune", c), ("osu-style", o)):
                    records.append({**r, "round": rnd, "program": who, "collective": coll,
                                    "size": s, "np": args.np})
        console.print(f"round {rnd + 1}/{args.launches} done", style="dim")

    title = (f"colltune bench --timing osu --algo native vs an OSU-style loop, np {args.np}"
             f"{' (OVERSUBSCRIBED: processes share cores)' if oversub else ''}, "
             f"{args.launches} alternating launches each ({b.mpi.banner}); Avg Latency in µs, "
             f"median over launches; ratio = colltune / OSU-style per round")
    t = Table(title=title, title_justify="left")
    for col in ("collective", "size", "colltune µs", "OSU-style µs", "ratio (median)",
                "ratio (min–max)", "ratio of fastest", f"within {args.goal:.0%}"):
        t.add_column(col, justify="left" if col == "collective" else "right")
    rows = []
    fails = 0
    for coll in colls:
        for s in sizes:
            key = (coll, s)
            med = statistics.median(ratios[key])
            ok = abs(med - 1) <= args.goal
            fails += not ok
            row = {"collective": coll, "size": s, "colltune_us": statistics.median(ours[key]),
                   "osu_style_us": statistics.median(theirs[key]), "ratio": med,
                   "ratio_min": min(ratios[key]), "ratio_max": max(ratios[key]),
                   "ratio_fastest": min(ours[key]) / min(theirs[key]), "pass": ok}
            rows.append(row)
            t.add_row(coll, fmt_size(s), f"{row['colltune_us']:.3f}",
                      f"{row['osu_style_us']:.3f}", f"{med:.3f}",
                      f"{row['ratio_min']:.2f}–{row['ratio_max']:.2f}",
                      f"{row['ratio_fastest']:.3f}", "[green]PASS[/]" if ok else "[red]FAIL[/]")
    console.print(t)
    console.print(f"{len(rows) - fails}/{len(rows)} points within {args.goal:.0%}"
                  + ("; oversubscribed points prove nothing" if oversub else ""),
                  highlight=False)
    if args.output:
        write_atomic(Path(args.output), json.dumps({"rows": rows, "records": records},
                                                   indent=2) + "\n")
    return 0 if fails == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
