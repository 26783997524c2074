"""`report`: one self-contained HTML report of a study, written atomically."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from colltune.analysis.costmodel import algorithm_dicts
from colltune.analysis.fit import load_measurements, read_selection
from colltune.analysis.points import timing_groups, timings_text
from colltune.base.files import check_writable
from colltune.drivers import registry
from colltune.mpi.build import build_for
from colltune.results import reader
from colltune.output import figures as plotmod
from colltune.output.report import build_report, compute_model, read_applications, read_runs
from . import Progress, WorkflowError, progress_or_quiet, write_or_keep


@dataclass
class ReportResult:
    path: Path
    figures: int
    size: int  # characters of the page


def report(db_path, output, *, study: str | None = None, coll: str | None = None,
           algo: str | None = None, mapping: str | None = None, np_range: str | None = None,
           size_range: str | None = None, pingpong_json: str | None = None,
           measure: bool = False, alpha: float | None = None, beta: float | None = None,
           gamma: float | None = None, gamma_mode: str = "auto",
           surface_algo: str | None = None, dpi: int = 100, mpi_spec: str | None = None,
           algorithms_json: str | None = None, include_oversubscribed: bool = False,
           pool_timings: bool = False, progress: Progress | None = None) -> ReportResult:
    """The report of a study (or a selection of it): provenance, figures, models, best
    algorithms, the cost model (α, β, γ: given, from the database, or measured now with
    `measure`). Simulated points always get a section of their own."""
    progress = progress_or_quiet(progress)
    check_writable(output, "-o")
    if any(x is not None for x in (coll, algo, mapping, np_range, size_range)):
        df = read_selection(db_path, study, coll, algo, mapping, np_range, size_range,
                            allow_empty=True)
        sim = read_selection(db_path, study, coll, algo, mapping, np_range, size_range,
                             only_simulated=True, allow_empty=True)
    else:
        df = load_measurements(db_path, study=study)
        sim = load_measurements(db_path, study=study, only_simulated=True)
    if df.empty and sim.empty:
        raise WorkflowError("no measurements to report")
    timings = timing_groups(df)
    if len({t for t, _, _ in timings}) > 1 and not pool_timings:
        studies = sorted({s for _, s, _ in timings})
        raise WorkflowError(
            "the selection pools points measured with different timing methods ("
            f"{timings_text(timings)}): their latencies are different quantities. Choose "
            "one with --study " + " or --study ".join(f"'{s}'" for s in studies)
            + ", or pass --pool-timings to report them together (the report says so)")
    runs = read_runs(db_path, study, df if not df.empty else sim)
    build = algos = None
    if algorithms_json is not None:
        try:
            algos = algorithm_dicts(algorithms_json)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise WorkflowError(f"--algorithms-json {algorithms_json}: {exc}") from None
    if algos is None or measure:
        try:
            build = build_for(mpi_spec, auto_install=False)
            if algos is None:
                algos = algorithm_dicts(registry.algorithms(build))
        except Exception as exc:  # noqa: BLE001 - a report without MPI is still a report
            progress.say(f"note: no MPI build ({exc}); the cost model "
                         + ("cannot measure" if algos else "is left out"))
    heat = reader.measurement_kinds(df) == "heat"
    if df.empty or heat.all():
        measure = False  # no collective to model
    progress.say("building the report" + (" (measuring α, β, γ first)" if measure else ""))
    coll_df = df[~heat]
    if df.empty:
        model, note = None, "only simulated points"
    elif coll_df.empty:  # a study of the heat application only: no collective cost model
        model, note = None, "no collective measurements in this study"
    else:
        model, note = compute_model(coll_df, db_path=db_path, algos=algos, build=build,
                                    pingpong=pingpong_json, alpha=alpha, beta=beta,
                                    gamma=gamma, gamma_mode=gamma_mode, measure=measure)
    palette = plotmod.Palette(plotmod.algorithm_order(mpi_spec))
    text, parts = build_report(df, runs=runs, db_path=db_path, study=study, palette=palette,
                               include_oversubscribed=include_oversubscribed,
                               model=model, model_note=note, dpi=dpi, surface_algo=surface_algo,
                               simulated=sim, applications=read_applications(db_path, study))
    path = Path(output)
    write_or_keep(path, text, "report.html")
    return ReportResult(path, len(parts.figures), len(text))
