"""`colltune pingpong` and `colltune probe`: point-to-point latency and the network probe."""

from __future__ import annotations

from pathlib import Path

import click

from colltune.base.files import check_writable
from colltune.workflows import p2p as wf
from colltune.workflows.p2p import MODES, PINGPONG_FIELDS, PROBE_FIELDS, pingpong_table, probe_table
from ._common import (MPI_HELP, build_or_fail, check_nps, command, err, fail, np_option, out,
                      oversubscribe_options, size_option, write_or_keep)


def _emit_text(text: str, output: str | None) -> None:
    if output:
        write_or_keep(Path(output), text, "p2p-records" + Path(output).suffix)
    else:
        click.echo(text, nl=False)


def _notes(notes: list[str]) -> None:
    if notes:
        err.print("note: " + "; ".join(notes), highlight=False)


# ---------------------------------------------------------------------------- commands

FORMAT_OPT = click.option("--format", "fmt", default="table", show_default=True,
                          type=click.Choice(["table", "csv", "json"]))
OUTPUT_OPT = click.option("-o", "--output",
                          help="Write csv/json here (atomically) instead of stdout.")


@command()
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
@np_option("nps", default="2", show_default=True,
           help="Process counts, one launch each (2,4 or 2:8); the ping-pong uses ranks 0 "
                "and 1, the ring all of them.")
@size_option("sizes", default="1:1M", show_default=True,
             help="Bytes: list (8,64K,1M) or power-of-two range (1:1M).")
@click.option("--mode", default="pingpong", show_default=True, type=click.Choice(MODES),
              help="pingpong: 0 <-> 1; ring: a token goes 0 -> 1 -> ... -> N-1 -> 0; "
                   "exchange: 0 and 1 send to each other at once (time of one exchange).")
@click.option("--iterations", type=click.IntRange(min=1),
              help="Timed round trips per repetition (default 1000, 100 above 8K).")
@click.option("--warmup", type=click.IntRange(min=0),
              help="Untimed round trips first (default iterations/10, at least 1).")
@click.option("--reps", default=5, show_default=True, type=click.IntRange(min=1),
              help="Repetitions; min/median/mean/max are over them.")
@click.option("--persistent/--no-persistent", default=False, show_default=True,
              help="Persistent requests (MPI_Send_init/MPI_Recv_init + MPI_Start/MPI_Wait), "
                   "or plain MPI_Send/MPI_Recv as osu_latency (the default).")
@click.option("--timeout", default=600.0, show_default=True, help="Seconds before giving up.")
@FORMAT_OPT
@OUTPUT_OPT
@oversubscribe_options
def pingpong(mpi_spec, nps, sizes, mode, iterations, warmup, reps, persistent, timeout, fmt,
             output, oversubscribe, force) -> None:
    """Point-to-point latency (one-way = RTT/2) and bandwidth: ping-pong, ring, or two
    concurrent messages (exchange)."""
    if fmt == "table" and output:
        fail("-o writes csv or json: add --format csv or --format json")
    size_list = sizes  # parsed by --size
    for np in nps:
        wf.check_np(mode, np)
    if output:
        check_writable(output, "-o")
    check_nps(nps, oversubscribe=oversubscribe, force=force)
    b = build_or_fail(mpi_spec)

    def launched(np, recs, notes):
        _notes(notes)
        if fmt == "table":
            out.print(pingpong_table(recs, wf.describe_pingpong(mode, np, persistent)))

    records = wf.pingpong(b, nps, size_list, mode, iterations, warmup, reps, persistent,
                          timeout=timeout, on_launch=launched)
    if fmt == "table":
        per = "exchange" if mode == "exchange" else "one-way"
        out.print(f"{b.mpi.banner}; MB/s = size / median {per} time, 1 MB = 10^6 bytes",
                  highlight=False)
        return
    _emit_text(wf.render(records, fmt, PINGPONG_FIELDS), output)


@command()
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
@np_option("np", many=False, default="4", show_default=True,
           one="the load index is of one set of processes; run the probe once per count",
           help="Processes, paired at random each iteration (odd: one sits out).")
@size_option("size", many=False, default="4K", show_default=True,
             one="the exchange sends one size; run the probe once per size",
             help="Bytes each partner sends.")
@click.option("--iterations", default=1000, show_default=True, type=click.IntRange(min=1),
              help="Timed exchanges, each with a fresh random pairing.")
@click.option("--warmup", type=click.IntRange(min=0), help="Untimed exchanges first (default 10).")
@click.option("--seed", type=click.IntRange(min=0, max=2**64 - 1),
              help="Seed of the pairings (default: chosen at random and reported).")
@click.option("--baseline-us", type=click.FloatRange(min=0, min_open=True),
              help="Median exchange time of a quiet system (µs): load index = median / this. "
                   "Without it: median / this run's minimum.")
@click.option("--timeout", default=600.0, show_default=True, help="Seconds before giving up.")
@FORMAT_OPT
@OUTPUT_OPT
@oversubscribe_options
def probe(mpi_spec, np, size, iterations, warmup, seed, baseline_us, timeout, fmt,
          output, oversubscribe, force) -> None:
    """Network probe: random pairwise exchanges, latency distribution and a load index."""
    if fmt == "table" and output:
        fail("-o writes csv or json: add --format csv or --format json")
    nbytes = size  # parsed by --size
    wf.check_np("probe", np)
    if output:
        check_writable(output, "-o")
    check_nps([np], oversubscribe=oversubscribe, force=force)
    b = build_or_fail(mpi_spec)
    rec, notes = wf.probe(b, np, nbytes, iterations, warmup, seed, baseline_us, timeout=timeout)
    _notes(notes)
    if fmt == "table":
        out.print(probe_table(rec, f"probe, {np} processes, exchange time per rank and "
                                   f"iteration, {b.mpi.banner}"))
        if rec.get("load_basis") == "baseline":
            expl = f"load index = median / baseline {rec['baseline_us']:.2f} µs"
        else:
            expl = "load index = median / min of this run (pass --baseline-us for a fixed reference)"
        out.print(expl, highlight=False)
        return
    _emit_text(wf.render([rec], fmt, PROBE_FIELDS), output)
