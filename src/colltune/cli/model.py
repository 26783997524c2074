"""`colltune model`: Hockney α–β–γ fitted here, every algorithm's cost formula against
the measurements."""

from __future__ import annotations

import json
from functools import partial

import click

from colltune.drivers import gamma as gamma_driver
from colltune.drivers import p2p, registry
from colltune.results import reader
from colltune.analysis.costmodel import CostModelError, algorithm_dicts, model_json, resolve_params, run_model
from colltune.output.model_tables import print_model
from colltune.analysis.fit import FitError, read_selection
from ._common import command, build_or_fail, cost_options, fail, gamma_value, out, select_options


@command("model")
@select_options
@click.option("--pingpong-json", type=click.Path(exists=True, dir_okay=False),
              help="Ping-pong records (`colltune pingpong --format json -o FILE`) for α, β. "
                   "Without it: the database's ping-pong records, else measured now.")
@click.option("--pingpong-np", "measure_np", default=2, show_default=True,
              type=click.IntRange(min=2), help="Processes of the ping-pong measured now.")
@cost_options
@click.option("--mpi", "mpi_spec", help="MPI library for the registry and measurements.")
@click.option("--algorithms-json", type=click.Path(exists=True, dir_okay=False),
              help="The registry as `colltune algorithms --json` prints it; with α, β and γ "
                   "given (or from files/the database) no MPI build is needed.")
@click.option("--points", is_flag=True, help="Also print every predicted vs measured point.")
@click.option("--json", "as_json", is_flag=True, help="Everything machine-readable.")
@click.option("--include-oversubscribed", is_flag=True,
              help="Also compare points measured with more processes than cores (left out "
                   "by default: the formulas assume a core per process).")
def model(db_path, study, coll, algo, mapping, np_range, size_range, include_simulated,
          pingpong_json, measure_np, alpha, beta, gamma_opt, mpi_spec, algorithms_json, points, as_json,
          include_oversubscribed) -> None:
    """Hockney α–β–γ fitted on this machine; every algorithm's cost formula against the
    measurements: error per point and collective, and the model's choice against the
    measured best."""
    try:
        df = read_selection(db_path, study, coll, algo, mapping, np_range, size_range,
                            include_simulated)
    except FitError as exc:
        fail(str(exc))
    gamma = gamma_value(gamma_opt)
    offline = algorithms_json is not None and (
        (alpha is not None and beta is not None) or pingpong_json is not None
        or reader.pingpong_points(db_path) is not None) and (
        gamma is not None or gamma_opt == "db")
    b = None if offline else build_or_fail(mpi_spec)
    if algorithms_json is not None:
        try:
            algos = algorithm_dicts(algorithms_json)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            fail(f"--algorithms-json {algorithms_json}: {exc}")
    else:
        algos = algorithm_dicts(registry.algorithms(b))
    notes: list[str] = []
    try:
        params = resolve_params(
            df, pingpong=pingpong_json, alpha=alpha, beta=beta, gamma=gamma,
            gamma_mode=gamma_opt if gamma is None else "auto",
            measure_pingpong=partial(p2p.measure_pingpong, b) if b else None,
            measure_gamma=partial(gamma_driver.measure_gamma, b) if b else None,
            db_path=db_path, measure_np=measure_np, notes=notes)
    except CostModelError as exc:
        fail(str(exc))
    except Exception as exc:  # a ping-pong failure (P2PError) and the like
        fail(f"cannot determine α, β, γ: {exc}")
    result = run_model(df, algos, params, include_oversubscribed)
    notes += result["model_notes"]
    if as_json:
        doc = model_json(result)
        doc["notes"] = notes
        click.echo(json.dumps(doc, indent=2))
        return
    print_model(out, result, points)
    for n in notes:
        out.print(f"note: {n}", highlight=False)
