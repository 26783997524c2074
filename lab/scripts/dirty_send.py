#!/usr/bin/env python3
"""What a message costs when its data was just written by the sender's core.

The ping-pong that calibrates the simulation sends from a buffer nobody writes, but
collective algorithms forward what they just received, copied or reduced: Bcast
`scatter_allgather` sends back the block it received, every Allreduce sends data it
copied or reduced a moment before. On a node whose MPI library moves large messages
with one copy made by the receiver (Open MPI's shared memory with CMA, `smsc/cma`),
the receiver's core then reads lines that are dirty in the sender's cache.

Two processes (one node), OSU style (a barrier before each timed message, the mean
over the ranks of the slower rank's time), three cases per size:

    clean      rank 0 sends a buffer it does not write
    sender     rank 0 writes the buffer (memset, untimed, before the barrier), then sends it
    receiver   rank 1 writes its receive buffer first (the destination's lines dirty)

and the two halves of a 2-process scatter + allgather Bcast: a message of half the
size 0 -> 1, then the exchange of the halves, with the block just received sent back
(as the algorithm does) or from other buffers.

    .venv/bin/python lab/scripts/dirty_send.py
    .venv/bin/python lab/scripts/dirty_send.py --size 64K,1M --mpi mpich
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from colltune.base.errors import ColltuneError
from colltune.base.units import fmt_size, add_size_option, parse_sizes
from colltune.drivers import run as runner
from colltune.mpi import libraries as mpi_mod
from colltune.mpi.build import build as do_build

SOURCE = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void msg(char *b, int n, int r) {
    if (r == 0) MPI_Send(b, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
    else MPI_Recv(b, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static void xch(char *s, char *d, int n, int r) {
    MPI_Sendrecv(s, n, MPI_BYTE, 1 - r, 2, d, n, MPI_BYTE, 1 - r, 2, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    int iters = atoi(argv[1]);
    for (int a = 2; a < argc; a++) {
        int n = atoi(argv[a]), h = n / 2;
        char *buf = malloc(4 * (size_t)n), *oth = buf + 2 * (size_t)n;
        memset(buf, 1, 4 * (size_t)n);
        static const char *names[] = {"clean", "sender", "receiver", "scatter_allgather",
                                      "scatter_allgather_other"};
        for (int pat = 0; pat < 5; pat++) {
            double tot = 0;
            for (int i = -iters / 10; i < iters; i++) {
                if (pat == 1 && r == 0) memset(buf, i, n);
                if (pat == 2 && r == 1) memset(buf, i, n);
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                if (pat <= 2) {
                    msg(buf, n, r);
                } else {
                    msg(buf + h, h, r);
                    if (pat == 3) xch(buf + r * h, buf + (1 - r) * h, h, r);
                    else xch(oth, oth + h, h, r);
                }
                if (i >= 0) tot += MPI_Wtime() - t0;
            }
            double mine = tot / iters * 1e6, sum;
            MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            if (r == 0)
                printf("{\"size\": %d, \"case\": \"%s\", \"mean_us\": %.4f}\n", n, names[pat],
                       sum / 2);
        }
        free(buf);
    }
    MPI_Finalize();
    return 0;
}
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mpi", help="MPI library (default openmpi)")
    add_size_option(ap, default="4K,16K,64K,256K,1M")
    ap.add_argument("--iterations", type=int, default=1000,
                    help="timed messages per case and size (default %(default)s)")
    args = ap.parse_args()
    try:
        sizes = parse_sizes(args.sizes)
    except ValueError as exc:
        ap.error(f"--size: {exc}")
    if args.iterations < 10:
        ap.error(f"--iterations {args.iterations}: at least 10")
    console = Console()
    b = do_build(mpi_mod.find(args.mpi))
    if b.mpi.simulated:
        ap.error("--mpi smpi: this measures a machine's caches; a simulation has none")
    with tempfile.TemporaryDirectory(prefix="colltune-dirty-") as tmp:
        exe = Path(tmp) / "dirty_send"
        src = Path(tmp) / "dirty_send.c"
        src.write_text(SOURCE)
        try:
            runner.run_argv([str(b.mpi.mpicc), "-O2", "-o", str(exe), str(src)],
                            name="mpicc", env=b.mpi.env())
            got = runner.run_program(b, str(exe), 2, [str(args.iterations),
                                                      *map(str, sizes)],
                                     name="dirty_send", timeout=1800)
        except ColltuneError as exc:
            console.print(f"error: {exc}", markup=False)
            return 1
    by = {(r["size"], r["case"]): r["mean_us"] for r in got.records}
    t = Table(title=f"{b.mpi.banner}, 2 processes: µs a message (mean over the ranks, "
                    f"{args.iterations} a case) and its ratio to the clean one; s+a: the "
                    "scatter + allgather halves, the received half sent back, and the "
                    "same messages from other buffers", title_justify="left")
    for c in ("size", "clean", "sender wrote", "receiver wrote", "s+a: half, exchange",
              "other buffers"):
        t.add_column(c, justify="right")
    for m in sizes:
        c = by[(m, "clean")]
        cells = [f"{c:.2f}"]
        for k in ("sender", "receiver"):
            cells.append(f"{by[(m, k)]:.2f} x{by[(m, k)] / c:.2f}")
        s, o = by[(m, "scatter_allgather")], by[(m, "scatter_allgather_other")]
        cells += [f"{s:.2f} x{s / o:.2f}", f"{o:.2f}"]
        t.add_row(fmt_size(m), *cells)
    console.print(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
