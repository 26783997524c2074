"""`colltune heat` and `colltune stream`: the heat-diffusion application, memory bandwidth."""

from __future__ import annotations

import json

import click

from colltune.workflows import heat as wf
from colltune.workflows.heat import (DECOMPS, OUTPUT_FORMATS, VARIANTS, HeatError, HeatSpec,
                                     heat_table, reports_table, stream_table)
from colltune.base.units import parse_size
from colltune.base.files import check_writable
from ._common import (MPI_HELP, build_or_fail, check_nps, command, err, fail, np_option, out,
                      oversubscribe_options)


def _notes(notes: list[str]) -> None:
    if notes:
        err.print("note: " + "; ".join(notes), highlight=False)


# ---------------------------------------------------------------------------- commands

FORMAT_OPT = click.option("--format", "fmt", default="table", show_default=True,
                          type=click.Choice(["table", "json"]))


@command()
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
@np_option("np", many=False, default="1", show_default=True, min=1,
           one="one run of the simulation, one final grid; run it once per count",
           help="Processes.")
@click.option("--rows", type=click.IntRange(min=1),
              help="Grid rows (default 100, or the PGM files' height).")
@click.option("--cols", type=click.IntRange(min=1),
              help="Grid columns (default 100, or the PGM files' width).")
@click.option("--iterations", default=1000, show_default=True, type=click.IntRange(min=0),
              help="Most iterations.")
@click.option("--threshold", default=0.0, show_default=True, type=click.FloatRange(min=0),
              help="Stop after the first iteration whose largest |change| is below this "
                   "(Allreduce MAX every iteration); 0: never.")
@click.option("--report-interval", default=0, show_default=True, type=click.IntRange(min=0),
              help="Every K iterations min/max/average temperature to rank 0 (Reduce); 0: none.")
@click.option("--decomp", default="rows", show_default=True, type=click.Choice(DECOMPS),
              help="rows: blocks of rows; 2d: blocks on a MPI_Dims_create process grid.")
@click.option("--pgrid", help="Process grid PRxPC for --decomp 2d (default MPI_Dims_create).")
@click.option("--variant", default="overlap", show_default=True, type=click.Choice(VARIANTS),
              help="blocking: MPI_Sendrecv after computing; overlap: Isend/Irecv of the frame "
                   "while the interior is computed; persistent: as overlap with "
                   "Send_init/Recv_init + Startall.")
@click.option("--allreduce", default="native", show_default=True,
              help="colltune Allreduce algorithm (spec) for the convergence test.")
@click.option("--reduce", "reduce_", default="native", show_default=True,
              help="colltune Reduce algorithm (spec) for the reports.")
@click.option("--seed", type=click.IntRange(min=0, max=2**64 - 1),
              help="Seed of the generated fields (default 1).")
@click.option("--init", type=click.Path(exists=True, dir_okay=False),
              help="Initial temperature from a P2/P5 PGM (0..maxval -> 0..100).")
@click.option("--conductivity", type=click.Path(exists=True, dir_okay=False),
              help="Conductivity weight from a P2/P5 PGM (0..maxval -> 0..0.25).")
@click.option("-o", "--output", help="Write the final grid here.")
@click.option("--output-format", default="raw", show_default=True,
              type=click.Choice(OUTPUT_FORMATS),
              help="raw: rows*cols float64, row-major, native byte order; pgm: 16-bit P5.")
@click.option("--stream-gbs", type=click.FloatRange(min=0, min_open=True),
              help="Memory bandwidth (GB/s, all processes together) for the bound.")
@click.option("--stream", "run_stream_first", is_flag=True,
              help="Measure the bandwidth first with colltune-stream at the same --np.")
@click.option("--stream-elements", default="16M", show_default=True,
              help="With --stream: doubles per array per process.")
@click.option("--timeout", default=600.0, show_default=True, help="Seconds before giving up.")
@FORMAT_OPT
@oversubscribe_options
def heat(mpi_spec, np, rows, cols, iterations, threshold, report_interval, decomp, pgrid,
         variant, allreduce, reduce_, seed, init, conductivity, output, output_format,
         stream_gbs, run_stream_first, stream_elements, timeout, fmt, oversubscribe,
         force) -> None:
    """Heat diffusion with colltune collectives: GFLOP/s and where the time goes."""
    if stream_gbs and run_stream_first:
        fail("--stream measures the bandwidth, --stream-gbs gives it: use one of them")
    spec = HeatSpec(np, rows, cols, iterations, threshold, report_interval, decomp, pgrid,
                    variant, allreduce, reduce_, seed, init, conductivity, output,
                    output_format)
    try:
        wf.check_spec(spec)
        n_stream = parse_size(stream_elements)
    except (HeatError, ValueError) as exc:
        fail(str(exc))
    if output:
        check_writable(output, "-o")
    check_nps([np], oversubscribe=oversubscribe, force=force)
    b = build_or_fail(mpi_spec)
    run = wf.heat(b, spec, stream_gbs, n_stream if run_stream_first else None,
                  timeout=timeout)
    rec, reports, stream_rec = run.record, run.reports, run.stream
    _notes(run.notes)
    if fmt == "json":
        doc = {**rec, "report_records": reports}
        if stream_rec is not None:
            doc["stream"] = stream_rec
        click.echo(json.dumps(doc, indent=2))
        return
    if stream_rec is not None:
        out.print(stream_table(stream_rec))
    if reports:
        out.print(reports_table(reports))
    out.print(heat_table(rec))
    out.print(f"{b.mpi.banner}; GFLOP/s = {rec['flops_per_cell']} x cells x iterations / time",
              highlight=False)


@command()
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
@np_option("np", many=False, default="1", show_default=True, min=1,
           one="the bandwidth of one set of processes; run it once per count",
           help="Processes, each running the triad on its own arrays at the same time.")
@click.option("--elements", default="16M", show_default=True,
              help="Doubles per array per process (suffixes K, M, G = 2^10, 2^20, 2^30).")
@click.option("--reps", default=10, show_default=True, type=click.IntRange(min=1),
              help="Timed repetitions; the best is reported.")
@click.option("--timeout", default=600.0, show_default=True, help="Seconds before giving up.")
@FORMAT_OPT
@oversubscribe_options
def stream(mpi_spec, np, elements, reps, timeout, fmt, oversubscribe, force) -> None:
    """Memory bandwidth: STREAM-style triad a[i] = b[i] + s*c[i] on every process."""
    try:
        n = parse_size(elements)
    except ValueError as exc:
        fail(f"--elements: {exc}")
    check_nps([np], oversubscribe=oversubscribe, force=force)
    b = build_or_fail(mpi_spec)
    rec, notes = wf.stream(b, np, n, reps, timeout=timeout)
    _notes(notes)
    if fmt == "json":
        click.echo(json.dumps(rec, indent=2))
        return
    out.print(stream_table(rec))
    out.print(f"{b.mpi.banner}; GB/s = 10^9 B/s, best of {reps}, 24 B per element "
              "(2 reads + 1 write) as STREAM counts, 32 B with the write-allocate read",
              highlight=False)
