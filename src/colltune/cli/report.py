"""`colltune report`: one self-contained HTML report of a study."""

from __future__ import annotations

import click

from colltune.workflows import report as report_flow
from ._common import command, cost_options, err, gamma_value, progress, select_options


@command()
@select_options
@click.option("-o", "--output", required=True, help="HTML file to write (atomically).")
@click.option("--pingpong-json", type=click.Path(exists=True, dir_okay=False),
              help="Ping-pong records for the cost model's α, β.")
@click.option("--measure/--no-measure", default=False,
              help="Measure α, β (ping-pong, 2 processes) and γ (MPI_Reduce_local) now, on "
                   "this machine (launches MPI). Default: α, β from the ping-pong points in "
                   "the database, γ from the study's Reduce measurements; what they cannot "
                   "give is shown as not measured.")
@cost_options
@click.option("--surface-algo", help="Algorithm of each collective's surface (default native).")
@click.option("--dpi", default=100, show_default=True, type=click.IntRange(50, 300),
              help="Resolution of the embedded figures.")
@click.option("--mpi", "mpi_spec", help="MPI library (registry, measurements).")
@click.option("--algorithms-json", type=click.Path(exists=True, dir_okay=False),
              help="The registry as `colltune algorithms --json` prints it (no MPI build "
                   "needed for the cost formulas).")
@click.option("--include-oversubscribed", is_flag=True,
              help="Also draw conclusions (best algorithm, ratio to native) from points "
                   "measured with more processes than cores (marked †; left out by default).")
@click.option("--pool-timings", is_flag=True,
              help="Report points measured with different timing methods (osu, window) "
                   "together; the report names what it pooled. Default: refused.")
def report(db_path, study, coll, algo, mapping, np_range, size_range, include_simulated, output,
           pingpong_json,
           measure, alpha, beta, gamma_opt, surface_algo, dpi, mpi_spec,
           algorithms_json, include_oversubscribed=False, pool_timings=False) -> None:
    """One self-contained HTML report of a study: provenance, figures, models, best
    algorithms, cost model. Prints the path of the file. --coll, --algo, --mapping,
    --np and --size narrow what it covers."""
    res = report_flow.report(db_path, output, study=study, coll=coll, algo=algo,
                             mapping=mapping, np_range=np_range, size_range=size_range,
                             pingpong_json=pingpong_json, measure=measure, alpha=alpha,
                             beta=beta, gamma=gamma_value(gamma_opt),
                             gamma_mode=gamma_opt if gamma_value(gamma_opt) is None else "auto",
                             surface_algo=surface_algo, dpi=dpi, mpi_spec=mpi_spec,
                             algorithms_json=algorithms_json,
                             include_oversubscribed=include_oversubscribed,
                             pool_timings=pool_timings, progress=progress())
    render_report(res)


def render_report(res: "report_flow.ReportResult") -> None:
    """The end of `colltune report` (and of quick): its size on stderr, its path on stdout."""
    err.print(f"{res.figures} figures, {res.size / 1e6:.1f} MB", highlight=False)
    click.echo(str(res.path.resolve()))
