"""`colltune report`: one self-contained HTML report of a study."""

from __future__ import annotations

from pathlib import Path

import click

from colltune.output import figures as plotmod
from colltune.drivers import registry
from colltune.mpi.build import build_for
from colltune.analysis.costmodel import algorithm_dicts
from colltune.base.files import check_writable
from colltune.analysis.fit import FitError, load_measurements, read_selection
from colltune.analysis.points import timing_groups, timings_text
from colltune.output.report import build_report, compute_model, read_applications, read_runs
from ._common import command, cost_options, err, fail, gamma_value, select_options, write_or_keep


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
    check_writable(output, "-o")
    # simulated points (SimGrid) always get a section of their own, never mixed in
    # (--include-simulated changes nothing here)
    try:
        if any(x is not None for x in (coll, algo, mapping, np_range, size_range)):
            df = read_selection(db_path, study, coll, algo, mapping, np_range, size_range,
                                allow_empty=True)
            sim = read_selection(db_path, study, coll, algo, mapping, np_range, size_range,
                                 only_simulated=True, allow_empty=True)
        else:
            df = load_measurements(db_path, study=study)
            sim = load_measurements(db_path, study=study, only_simulated=True)
    except FitError as exc:
        fail(str(exc))
    if df.empty and sim.empty:
        fail("no measurements to report")
    timings = timing_groups(df)
    if len({t for t, _, _ in timings}) > 1 and not pool_timings:
        studies = sorted({s for _, s, _ in timings})
        fail("the selection pools points measured with different timing methods ("
             f"{timings_text(timings)}): their latencies are different quantities. Choose "
             "one with --study " + " or --study ".join(f"'{s}'" for s in studies)
             + ", or pass --pool-timings to report them together (the report says so)")
    gamma = gamma_value(gamma_opt)
    runs = read_runs(db_path, study, df if not df.empty else sim)
    build = algos = None
    if algorithms_json is not None:
        try:
            algos = algorithm_dicts(algorithms_json)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            fail(f"--algorithms-json {algorithms_json}: {exc}")
    if algos is None or measure:
        try:
            build = build_for(mpi_spec, auto_install=False)
            if algos is None:
                algos = algorithm_dicts(registry.algorithms(build))
        except Exception as exc:  # noqa: BLE001 - a report without MPI is still a report
            err.print(f"note: no MPI build ({exc}); the cost model "
                      + ("cannot measure" if algos else "is left out"), highlight=False)
    if df.empty or (df["collective"] == "heat").all():
        measure = False  # no collective to model
    err.print("building the report" + (" (measuring α, β, γ first)" if measure else ""),
              highlight=False)
    coll_df = df[df["collective"] != "heat"]
    if df.empty:
        model, note = None, "only simulated points"
    elif coll_df.empty:  # a study of the heat application only: no collective cost model
        model, note = None, "no collective measurements in this study"
    else:
        model, note = compute_model(coll_df, db_path=db_path, algos=algos, build=build,
                                    pingpong=pingpong_json, alpha=alpha, beta=beta,
                                    gamma=gamma, gamma_mode=gamma_opt if gamma is None else "auto",
                                    measure=measure)
    palette = plotmod.Palette(plotmod.algorithm_order(mpi_spec))
    text, parts = build_report(df, runs=runs, db_path=db_path, study=study, palette=palette,
                               include_oversubscribed=include_oversubscribed,
                               model=model, model_note=note, dpi=dpi, surface_algo=surface_algo,
                               simulated=sim, applications=read_applications(db_path, study))
    path = Path(output)
    write_or_keep(path, text, "report.html")
    err.print(f"{len(parts.figures)} figures, {len(text) / 1e6:.1f} MB", highlight=False)
    click.echo(str(path.resolve()))
