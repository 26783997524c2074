#!/usr/bin/env python3
"""Heat diffusion: GFLOP/s, the memory-bandwidth bound, and what overlapping the halo
exchange is worth, measured so that machine drift cancels out.

For each grid and process count, the three halo-exchange variants (blocking,
overlap, persistent) run in rounds, one launch each, in a rotated order per round
(B O P, O P B, P B O, ...), next to a STREAM triad launch at the same process
count. The overlap gain of a variant is computed per round as
T(blocking) / T(variant) (paired: both from the same round, seconds apart), and
the median over rounds is reported with its range, so a noisy period of the
machine moves both sides of a ratio alike. GFLOP/s and the bound use the median
time and the median bandwidth.

    .venv/bin/python lab/scripts/heat_overlap.py
    .venv/bin/python lab/scripts/heat_overlap.py --np 1,2,4 --grids 1000x1000:200,5000x5000:8 \\
        --rounds 9 -o heat.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from colltune.drivers import heat as heat_mod
from colltune.mpi import libraries as mpi_mod
from colltune.mpi.build import build as do_build
from colltune.base.units import parse_ints

VARIANTS = ("blocking", "overlap", "persistent")


def parse_grids(text: str) -> list[tuple[int, int, int]]:
    """'1000x1000:200,5000x5000:8' -> [(rows, cols, iterations), ...]."""
    out = []
    for item in text.split(","):
        shape, _, its = item.strip().partition(":")
        r, _, c = shape.lower().partition("x")
        try:
            out.append((int(r), int(c), int(its or 100)))
        except ValueError:
            raise SystemExit(f"--grids: '{item}' is not ROWSxCOLS[:ITERATIONS]") from None
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", default="1,2", help="process counts (default 1,2)")
    ap.add_argument("--grids", default="1000x1000:200,5000x5000:8",
                    help="ROWSxCOLS:ITERATIONS, comma-separated (default "
                         "1000x1000:200,5000x5000:8)")
    ap.add_argument("--decomp", default="rows", choices=heat_mod.DECOMPS)
    ap.add_argument("--rounds", type=int, default=7, help="rounds of the three variants "
                                                          "(default 7)")
    ap.add_argument("--stream-elements", type=int, default=1 << 24,
                    help="doubles per array per process of the triad (default 16M)")
    ap.add_argument("--mpi", default=None)
    ap.add_argument("-o", "--output", help="also write every record here as JSON")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    nps = parse_ints(args.np, "--np")
    grids = parse_grids(args.grids)
    err = Console(stderr=True)
    out = Console(width=max(Console().width, 140))
    b = do_build(mpi_mod.find(args.mpi))
    err.print(f"{b.mpi.banner}; {args.rounds} rounds; decomposition {args.decomp}",
              highlight=False)

    records: list[dict] = []
    rows_out = []
    for np in nps:
        for rows, cols, its in grids:
            times: dict[str, list[float]] = {v: [] for v in VARIANTS}
            halo: dict[str, list[float]] = {v: [] for v in VARIANTS}
            gbs: list[float] = []
            gains: dict[str, list[float]] = {v: [] for v in VARIANTS[1:]}
            for rnd in range(args.rounds):
                k = rnd % len(VARIANTS)
                order = VARIANTS[k:] + VARIANTS[:k]  # rotate who goes first
                t_round = {}
                for v in order:
                    spec = heat_mod.HeatSpec(np=np, rows=rows, cols=cols, iterations=its,
                                             decomp=args.decomp, variant=v, seed=1)
                    rec, _, _ = heat_mod.run_heat(b, spec)
                    records.append({**rec, "round": rnd})
                    t_round[v] = rec["time_s"]
                    times[v].append(rec["time_s"])
                    halo[v].append(rec.get("halo_s_max") or 0.0)
                srec, _ = heat_mod.run_stream(b, heat_mod.StreamSpec(
                    np=np, elements=args.stream_elements))
                records.append({**srec, "round": rnd})
                gbs.append(srec["triad_GBps"])
                for v in VARIANTS[1:]:
                    gains[v].append(t_round["blocking"] / t_round[v])
                err.print(f"  np={np} {rows}x{cols}: round {rnd + 1}/{args.rounds}",
                          highlight=False, end="\r")
            bw = statistics.median(gbs)
            bound = heat_mod.bandwidth_bound_gflops(bw)
            cells = rows * cols
            for v in VARIANTS:
                t = statistics.median(times[v])
                gf = heat_mod.FLOPS_PER_CELL * cells * its / t / 1e9
                g = gains.get(v)
                rows_out.append(dict(np=np, grid=f"{rows}x{cols}", iterations=its, variant=v,
                                     time_s=t, gflops=gf, halo_ms=statistics.median(halo[v]) * 1e3,
                                     stream_GBps=bw, bound_gflops=bound, of_bound=gf / bound,
                                     gain=statistics.median(g) if g else None,
                                     gain_min=min(g) if g else None,
                                     gain_max=max(g) if g else None))
    err.print(" " * 60, end="\r")

    t = Table(title=f"heat diffusion ({args.decomp}), medians over {args.rounds} rounds; "
                    "gain = T(blocking)/T(variant) per round (> 1: faster than blocking)",
              title_justify="left")
    for c in ("np", "grid", "iter", "variant", "time", "GFLOP/s", "halo (max rank)",
              "triad GB/s", "bound GFLOP/s", "of bound", "gain (min..max)"):
        t.add_column(c, justify="left" if c in ("grid", "variant") else "right")
    for r in rows_out:
        gain = ("" if r["gain"] is None else
                f"{r['gain']:.3f} ({r['gain_min']:.2f}..{r['gain_max']:.2f})")
        t.add_row(str(r["np"]), r["grid"], str(r["iterations"]), r["variant"],
                  f"{r['time_s']:.4f} s", f"{r['gflops']:.2f}", f"{r['halo_ms']:.2f} ms",
                  f"{r['stream_GBps']:.1f}", f"{r['bound_gflops']:.2f}",
                  f"{r['of_bound']:.0%}", gain)
    out.print(t)
    out.print(f"{b.mpi.banner}; GFLOP/s = {heat_mod.FLOPS_PER_CELL} FLOPs x cells x iterations "
              f"/ time; bound = triad GB/s / {heat_mod.BYTES_PER_CELL} B per cell x "
              f"{heat_mod.FLOPS_PER_CELL} FLOPs", highlight=False)
    if args.output:
        Path(args.output).write_text(json.dumps({"summary": rows_out, "records": records},
                                                indent=2) + "\n")
        err.print(f"records written to {args.output}", highlight=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
