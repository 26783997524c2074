"""`colltune model`: Hockney α–β–γ fitted on this machine and every algorithm's cost
formula against the measurements (analysis/costmodel.py); α and β from ping-pong
records, the database or a ping-pong measured now, γ likewise."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from colltune.analysis.costmodel import (CostModelError, algorithm_dicts, model_json,
                                         resolve_params, run_model)
from colltune.analysis.fit import FitError, read_selection
from colltune.base.errors import ColltuneError
from colltune.drivers import gamma as gamma_driver
from colltune.drivers import p2p, registry
from colltune.mpi.build import Build
from colltune.results import reader

__all__ = ["CostModelError", "FitError", "model", "model_json", "needs_build"]


def needs_build(db_path, algorithms_json: str | None, alpha: float | None,
                beta: float | None, pingpong_json: str | None, gamma: float | None,
                gamma_mode: str) -> bool:
    """Whether the model needs the native part built: for the algorithm table (no
    --algorithms-json), or to measure α, β (none given, in a file or in the database)
    or γ (neither given nor taken from the database)."""
    offline = algorithms_json is not None and (
        (alpha is not None and beta is not None) or pingpong_json is not None
        or reader.pingpong_points(db_path) is not None) and (
        gamma is not None or gamma_mode == "db")
    return not offline


def model(db_path, selection: dict, build: Build | Callable[[], Build] | None,
          algorithms_json: str | None = None, pingpong_json: str | None = None,
          measure_np: int = 2, alpha: float | None = None, beta: float | None = None,
          gamma: float | None = None, gamma_mode: str = "auto",
          include_oversubscribed: bool = False) -> tuple[dict, list[str]]:
    """The cost model over the measurements `selection` picks (read_selection's study,
    coll, algo, mapping, np_range, size_range, include_simulated): (the result of
    costmodel.run_model, the notes). `build` (or a function that builds) is used only
    when needs_build says so."""
    df = read_selection(db_path, selection.get("study"), selection.get("coll"),
                        selection.get("algo"), selection.get("mapping"),
                        selection.get("np_range"), selection.get("size_range"),
                        selection.get("include_simulated", False))
    b = None
    if needs_build(db_path, algorithms_json, alpha, beta, pingpong_json, gamma, gamma_mode):
        b = build() if callable(build) else build
    if algorithms_json is not None:
        try:
            algos = algorithm_dicts(algorithms_json)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ColltuneError(f"--algorithms-json {algorithms_json}: {exc}") from None
    else:
        algos = algorithm_dicts(registry.algorithms(b))
    notes: list[str] = []
    try:
        params = resolve_params(
            df, pingpong=pingpong_json, alpha=alpha, beta=beta, gamma=gamma,
            gamma_mode=gamma_mode if gamma is None else "auto",
            measure_pingpong=partial(p2p.measure_pingpong, b) if b else None,
            measure_gamma=partial(gamma_driver.measure_gamma, b) if b else None,
            db_path=db_path, measure_np=measure_np, notes=notes)
    except CostModelError:
        raise
    except Exception as exc:  # a ping-pong failure (P2PError) and the like
        raise ColltuneError(f"cannot determine α, β, γ: {exc}") from exc
    result = run_model(df, algos, params, include_oversubscribed)
    return result, notes + result["model_notes"]
