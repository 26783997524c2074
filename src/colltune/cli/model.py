"""`colltune model`: Hockney α–β–γ fitted here, every algorithm's cost formula against
the measurements."""

from __future__ import annotations

import json

import click

from colltune.output.model_tables import print_model
from colltune.workflows import model as wf
from ._common import command, build_or_fail, cost_options, gamma_value, out, select_options


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
    gamma = gamma_value(gamma_opt)
    selection = dict(study=study, coll=coll, algo=algo, mapping=mapping, np_range=np_range,
                     size_range=size_range, include_simulated=include_simulated)
    result, notes = wf.model(db_path, selection, lambda: build_or_fail(mpi_spec),
                             algorithms_json=algorithms_json, pingpong_json=pingpong_json,
                             measure_np=measure_np, alpha=alpha, beta=beta, gamma=gamma,
                             gamma_mode=gamma_opt, include_oversubscribed=include_oversubscribed)
    if as_json:
        doc = wf.model_json(result)
        doc["notes"] = notes
        click.echo(json.dumps(doc, indent=2))
        return
    print_model(out, result, points)
    for n in notes:
        out.print(f"note: {n}", highlight=False)
