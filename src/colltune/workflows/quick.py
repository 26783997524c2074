"""`quick`: the main job, as a chain of calls.

    quick()
      -> sweep.load_study(preset "quick") / sweep.placed (--np)
      -> sweep.sweep           the quick study into the database (resumable)
      -> pingpong_once         α, β of the cost model, measured once per database
      -> answer                what to use where: the latest round's points, the verdicts
      -> on_answer(answer)     the caller shows it (the command line: its tables)
      -> report.report         the HTML report

Each step is a function of its own, callable alone from Python."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from colltune.analysis.evidence import versus_baseline
from colltune.analysis.points import latest_round, median_repetition
from colltune.base.errors import ColltuneError
from colltune.base.files import check_writable
from colltune.drivers import p2p, registry
from colltune.mpi.backend import backend_for
from colltune.mpi.build import build_for
from colltune.results import db as db_mod
from colltune.results import reader, store
from colltune.studies.study import read_preset
from colltune.studies.sweep import Outcome, definition_changes
from . import Progress, WorkflowError, progress_or_quiet
from . import report as report_flow
from . import sweep as sweep_flow


@dataclass
class Answer:
    """What quick shows first: the points (`df`, the latest round at the asked process
    counts) and one record per point with its median, verdict and ratio to native."""

    df: object  # pandas.DataFrame
    records: list[dict]
    banner: str
    cores: int | None
    reps: int
    include_oversubscribed: bool


@dataclass
class QuickResult:
    sweep: Outcome
    answer: Answer | None = None  # None: the sweep was interrupted
    report: report_flow.ReportResult | None = None


def preset_changed(db_path, progress: Progress) -> bool:
    """Whether the stored quick study's definition differs from the preset's (it changed
    with colltune): then a new round is measured, and said so."""
    if not Path(db_path).is_file():
        return False
    conn = db_mod.open_db(db_path)
    try:
        changes, rnd = definition_changes(conn, read_preset("quick"))
    finally:
        conn.close()
    if changes:
        progress.say(f"note: the quick study changed since round {rnd} in {db_path} ("
                     + "; ".join(changes) + f"): measuring round {rnd + 1}")
    return bool(changes)


def quick(db_path=None, *, mpi_spec: str | None = None,
          report_path: str = "quick-report.html", new_round: bool = False,
          nps: list[int] | None = None, include_oversubscribed: bool = False,
          progress: Progress | None = None, on_answer=None) -> QuickResult:
    """The quick study measured into `db_path`, the answer (given to `on_answer` as soon
    as it is known), then the HTML report. Failed launches are stored and listed in
    the report; an interrupted sweep returns at once (QuickResult.answer is None)."""
    progress = progress_or_quiet(progress)
    db_path = str(db_path or db_mod.default_path())
    db_mod.check_writable(db_path)
    check_writable(report_path, "-o")
    new_round = new_round or preset_changed(db_path, progress)
    study = sweep_flow.load_study(None, "quick", mpi_spec)
    study, _ = sweep_flow.placed(study, nps=nps)
    oc = sweep_flow.sweep(study, db_path, mpi_spec=mpi_spec, new_round=new_round,
                          oversubscribe=bool(nps), progress=progress)
    status = sweep_flow.exit_status(oc)
    if status == 130:
        return QuickResult(oc)
    if status:  # failed launches are in the database and the report
        progress.say("[yellow]some launches failed; they are listed in the report[/]")
    b = build_for(mpi_spec)
    pingpong_once(b, db_path, progress)
    ans = answer(db_path, b, nps, include_oversubscribed)
    if on_answer is not None:
        on_answer(ans)
    rep = report_flow.report(db_path, report_path, study="quick",
                             include_oversubscribed=include_oversubscribed, progress=progress)
    return QuickResult(oc, ans, rep)


def answer(db_path, b, nps: list[int] | None = None,
           include_oversubscribed: bool = False) -> Answer:
    """What to use where, from the quick study's stored points: per point the median
    repetition's own OSU columns, the spread over repetitions and the verdict against
    native; records in the registry's order (native first)."""
    conn = db_mod.open_reader(db_path, schema=True)
    try:
        df = reader.measurements_frame(conn, study="quick")
    finally:
        conn.close()
    if df.empty:
        raise WorkflowError(f"the quick study stored no measurements in {db_path}")
    df = terminal_rows(df, nps)
    agg = median_repetition(df, ["collective", "np", "spec", "size"])
    for c in ("align", "iterations", "valid_reps"):
        if c in agg.columns:
            agg[c] = agg[c].astype("Int64")
    order = {c: {n: i for i, n in enumerate(["native"] + registry.names(b, c))}
             for c in set(agg["collective"])}
    records = table_records(df, agg, include_oversubscribed)
    records.sort(key=lambda r: order[r["collective"]].get(r["spec"], 999))
    reps = int(agg["repetitions"].max()) if len(agg) else 0
    banner = (f"{df['mpi_kind'].iloc[0]} {df['mpi_version'].iloc[0]}; {reps} repetitions: "
              "median, OSU columns of the median repetition")
    cores = int(df["cores"].dropna().min()) if df["cores"].notna().any() else None
    return Answer(df, records, banner, cores, reps, include_oversubscribed)


def terminal_rows(df, nps: list[int] | None = None):
    """The rows quick's tables are made of: the latest round (points.latest_round, as
    the report's summary selects them), at the process counts of --np."""
    df = latest_round(df)
    if nps:
        df = df[df["np"].isin(list(nps))]
    return df


def table_records(df, agg, include_oversubscribed: bool = False) -> list[dict]:
    """The records of quick's median table: one per point (`agg`, median_repetition of
    `df`) with its verdict against native and its `ratio`, the comparison's own estimate
    over the repetitions (evidence.ratio_to_baseline: the one the summary and the
    report print), time / native's time."""
    ver = versus_baseline(df, ["collective", "np", "size"], label="spec",
                          include_oversubscribed=include_oversubscribed)
    verdict = {(r.collective, r.np, r.size, r.spec): (r.outcome, r.ratio, bool(r.paired))
               for r in ver.itertuples()}
    records = []
    for r in agg.astype(object).where(agg.notna(), None).to_dict("records"):
        outcome, ratio, paired = verdict.get((r["collective"], r["np"], r["size"], r["spec"]),
                                             (None, None, False))
        fb = r.get("fallback")
        records.append(dict(r, fallback=fb if isinstance(fb, str) and fb else None,
                            verdict=outcome, ratio=ratio, paired=paired))
    return records


def pingpong_once(b, db_path, progress: Progress | None = None) -> None:
    """The cost model's α and β come from a ping-pong stored in the database with its
    provenance: measured here once (the first quick on a database), so that every
    report built from it later launches nothing and gives the same figures."""
    progress = progress_or_quiet(progress)
    if backend_for(b).simulated or reader.pingpong_points(db_path) is not None:
        return
    progress.say("measuring a ping-pong once for the cost model's α and β (stored in "
                 f"{db_path}; reports read it from there)")
    try:
        recs = p2p.measure_pingpong(b)
        store.store_pingpong(recs, mpi=b.mpi, path=db_path, argv=sys.argv,
                             notes=["colltune quick: the ping-pong of the cost model's α, β"])
    except ColltuneError as exc:
        progress.say(f"note: no ping-pong for the cost model ({exc}); the report says so")
