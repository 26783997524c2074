#!/usr/bin/env python3
"""What SimGrid's SMPI itself costs for the messages of a ring Allreduce: the floor
under any ring point of `lab/scripts/sim_speed.py`.

A bare ring program (nothing but its messages: 2 x (p-1) steps in which every rank
sends SIZE bytes to the next and receives from the previous one, the messages of one
ring Allreduce of p x SIZE bytes) is compiled with colltune's `smpicc` and simulated
under the settings of colltune's launches (mpi/launch.py SMPI_CFG) on a platform,
in three call patterns per step, interleaved over `--runs` rounds:

    sendrecv   MPI_Sendrecv
    send       MPI_Irecv, MPI_Send, MPI_Wait (colltune's reduce-scatter steps)
    isend      MPI_Irecv, MPI_Isend, MPI_Waitall

Prints the wall seconds of each simulation (the whole smpirun, start-up included),
the microseconds a message, and the simulated time of the ring (the same for all
three when the patterns cost the same simulated time).

    .venv/bin/python lab/scripts/sim_message_floor.py --np 256 --runs 3
    .venv/bin/python lab/scripts/sim_message_floor.py --np 1024 --patterns sendrecv
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from colltune.mpi import libraries as mpi_mod
from colltune.mpi import simgrid
from colltune.mpi.launch import SMPI_CFG, SMPI_LOG
from colltune.mpi.platforms import resolve, smpirun_files
from colltune.base.units import parse_size

PATTERNS = ("sendrecv", "send", "isend")

SOURCE = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, p, mode = atoi(argv[1]), n = atoi(argv[2]);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    char *a = malloc(n > 0 ? n : 1), *b = malloc(n > 0 ? n : 1);
    memset(a, 1, n > 0 ? n : 1);
    int next = (r + 1) % p, prev = (r + p - 1) % p;
    MPI_Request q[2];
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int k = 0; k < 2 * (p - 1); k++) {
        if (mode == 0) {
            MPI_Sendrecv(a, n, MPI_CHAR, next, 1, b, n, MPI_CHAR, prev, 1, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
        } else if (mode == 1) {
            MPI_Irecv(b, n, MPI_CHAR, prev, 1, MPI_COMM_WORLD, &q[0]);
            MPI_Send(a, n, MPI_CHAR, next, 1, MPI_COMM_WORLD);
            MPI_Wait(&q[0], MPI_STATUS_IGNORE);
        } else {
            MPI_Irecv(b, n, MPI_CHAR, prev, 1, MPI_COMM_WORLD, &q[0]);
            MPI_Isend(a, n, MPI_CHAR, next, 1, MPI_COMM_WORLD, &q[1]);
            MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        }
        char *t = a;
        a = b;
        b = t;
    }
    double t1 = MPI_Wtime();
    if (r == 0) printf("simulated_us %.3f\n", (t1 - t0) * 1e6);
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--np", type=int, default=256, help="processes (default %(default)s)")
    ap.add_argument("--size", default="1K", help="bytes a message (default %(default)s: a "
                    "1 MiB ring Allreduce at 1024 processes)")
    ap.add_argument("--platform", default="tapems-16x12")
    ap.add_argument("--patterns", default=",".join(PATTERNS),
                    help="comma-separated, of " + ", ".join(PATTERNS))
    ap.add_argument("--runs", type=int, default=1, help="rounds of all patterns, interleaved")
    ap.add_argument("--cfg", action="append", default=[], metavar="KEY:VALUE",
                    help="an extra SimGrid setting (repeatable)")
    args = ap.parse_args()
    patterns = [p.strip() for p in args.patterns.split(",") if p.strip()]
    bad = [p for p in patterns if p not in PATTERNS]
    if bad:
        ap.error(f"--patterns: unknown {', '.join(bad)}; valid: {', '.join(PATTERNS)}")
    if args.np < 2 or args.runs < 1:
        ap.error(f"--np {args.np}, --runs {args.runs}: a ring needs 2 processes or more, "
                 "and at least one run")
    try:
        size = parse_size(args.size)
    except ValueError as exc:
        ap.error(f"--size: {exc}")
    console = Console()
    mpi = mpi_mod.find("smpi")  # installs colltune's SimGrid on first use
    plat = resolve(args.platform)
    if plat.topology == "flat" and args.np > plat.cores:
        plat = plat.with_nodes(-(-args.np // plat.cores_per_node))
    messages = 2 * (args.np - 1) * args.np
    rows: dict[str, list[tuple[float, float]]] = {p: [] for p in patterns}
    with tempfile.TemporaryDirectory(prefix="colltune-floor-") as tmp:
        exe = Path(tmp) / "ring"
        src = Path(tmp) / "ring.c"
        src.write_text(SOURCE)
        subprocess.run([str(mpi.mpicc), "-O2", "-o", str(exe), str(src)], check=True,
                       capture_output=True, text=True)
        files = smpirun_files(plat, args.np, tmp)
        base = [str(mpi.launcher), "-np", str(args.np), *files,
                *[f"--cfg={c}" for c in (*SMPI_CFG, *args.cfg)],
                *[f"--log={c}" for c in SMPI_LOG]]
        env = mpi.env()  # with the allocator of colltune's launches (simgrid.allocator)
        lib = simgrid.preload_env(env)
        console.print(f"{mpi.banner}, platform {plat.name}, {args.np} processes, "
                      f"{messages:,} messages of {size} B a ring, allocator {lib or 'malloc'}",
                      highlight=False)
        for run in range(args.runs):
            for p in patterns:
                t0 = time.monotonic()
                r = subprocess.run([*base, str(exe), str(PATTERNS.index(p)), str(size)],
                                   capture_output=True, text=True, env=env)
                wall = time.monotonic() - t0
                m = re.search(r"simulated_us (\S+)", r.stdout)
                if r.returncode != 0 or not m:
                    console.print(f"{p}: failed ({r.returncode}): {r.stderr.strip()[-400:]}",
                                  markup=False)
                    return 1
                rows[p].append((wall, float(m.group(1))))
                console.print(f"run {run + 1} {p}: {wall:.2f} s, simulated {m.group(1)} µs",
                              highlight=False)
    t = Table(title=f"wall seconds of the simulation (start-up included) and µs a message, "
                    f"{args.np} processes", title_justify="left")
    for c in ("pattern", "wall s (each run)", "µs a message (fastest)", "simulated µs"):
        t.add_column(c, justify="left" if c == "pattern" else "right")
    for p, vals in rows.items():
        walls = [w for w, _ in vals]
        sims = sorted({s for _, s in vals})
        t.add_row(p, ", ".join(f"{w:.2f}" for w in walls), f"{min(walls) / messages * 1e6:.2f}",
                  ", ".join(f"{s:.3f}" for s in sims))
    console.print(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
