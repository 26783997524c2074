"""`tune`: rules from a stored study (`tune_stored`), the quality of a given rules file
on it (`evaluate`), or rules from adaptive measurements (`tune_measured`: measured
with tuning/adaptive.py, or simulated exactly with tuning/exact.py), recorded as a
study by the one recorder (studies/recorder.py)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field

from colltune import __version__
from colltune.base.collectives import COLLECTIVES
from colltune.base.errors import ColltuneError, did_you_mean
from colltune.base.files import check_writable
from colltune.base.lazy import LazyModule
from colltune.base.specs import is_lib_spec, split_specs
from colltune.drivers import bench as bench_mod
from colltune.drivers import registry
from colltune.mpi import libraries as mpi_mod
from colltune.mpi import launch
from colltune.mpi.build import build_for
from colltune.mpi.placement import check_process_counts
from colltune.mpi.platforms import resolve
from colltune.results import db as db_mod
from colltune.results import reader, store
from colltune.rules import files as rules_files
from colltune.rules import ruleset as rules_mod
from colltune.studies.recorder import Recorder
from colltune.studies.sweep import sweep_lock
from colltune.mpi.backend import backend_for
from colltune.tuning import adaptive, measured
from colltune.tuning import tune as tune_mod
from . import Progress, WorkflowError, progress_or_quiet, write_or_keep

pd = LazyModule("pandas")


def _argv(argv):
    return argv if argv is not None else ["colltune"] + sys.argv[1:]


# ------------------------------------------------------------ from a stored study

@dataclass
class Tuned:
    """Rules made from a stored study, written to `output`."""

    study: str
    round: int
    target: str
    output: str
    result: object  # tuning.tune's result: rules, choices, summary, points, notes
    data: dict
    kind: str  # the rules file's format
    library: object | None = None  # the installed library whose file was written
    usage: list[str] = field(default_factory=list)
    read_only: str | None = None  # why the tuning is not stored


@dataclass
class Evaluated:
    """The quality of a given rules file on a stored study."""

    study: str
    round: int
    rules_path: str
    points: object
    summary: object


def collectives(coll: str | None) -> list[str] | None:
    """--coll a,b: the collectives, each checked."""
    if not coll:
        return None
    colls = [c.strip() for c in coll.split(",") if c.strip()]
    for c in colls:
        if c not in COLLECTIVES:
            raise WorkflowError(f"--coll '{c}': unknown collective{did_you_mean(c, COLLECTIVES)}"
                                f" (valid: {', '.join(COLLECTIVES)})")
    return colls


def tune_stored(db_path, *, study: str | None = None, target: str | None = None,
                output: str | None = None, round_: int | None = None,
                colls: list[str] | None = None, rules_path: str | None = None,
                colltune_format: bool = False, include_oversubscribed: bool = False,
                load_level: str | None = None, include_simulated: bool = False, calls=None,
                argv: list[str] | None = None,
                progress: Progress | None = None) -> Tuned | Evaluated:
    """Rules for `target` from a stored study (written to `output`, the tuning stored in
    the database unless it is read-only), or with `rules_path` the quality of that
    rules file on the study. `calls` (a profile's) adds the quality weighted by them."""
    progress = progress_or_quiet(progress)
    given = None
    library = None  # --target openmpi/mpich: the installed library whose file -o is
    read_only = None  # why the database cannot store the tuning
    if rules_path is not None:
        given = rules_mod.read(rules_path)
        if target is not None and target != given.target:
            raise WorkflowError(f"--target {target}: the rules file {rules_path} is for "
                                f"{given.target}")
        target = given.target
        conn = db_mod.open_reader(db_path)  # evaluating writes nothing
    else:
        check_writable(output, "-o")
        if target != "colltune" and not colltune_format:
            try:  # its algorithm numbers/names are read from the installed library
                library = mpi_mod.find(target, auto_install=False)
            except ColltuneError as exc:
                raise WorkflowError(
                    f"-o for --target {target} is the file that library reads, which needs "
                    f"it installed: {exc} (--colltune-format writes colltune's own file)"
                ) from None
        try:
            db_mod.check_writable(db_path)  # the quality is stored: checked before any work
            conn = db_mod.open_db(db_path, create=False)
        except db_mod.DBError as exc:
            if not str(exc).startswith("cannot write the results database"):
                raise
            read_only = str(exc)  # tune anyway; the rules file is what is wanted
            conn = db_mod.open_reader(db_path, schema=True)
    try:
        if study is None:
            names = reader.study_names(conn)
            if len(names) != 1:
                raise WorkflowError("--study is needed: the database holds "
                                    + (f"the studies {', '.join(names)}" if names else
                                       "no study (run colltune sweep first)"))
            study = names[0]
        frame, rnd = tune_mod.read_frame(conn, study, round_, include_simulated)
        if load_level is not None:
            levels = sorted({str(x) for x in frame["load_level"].dropna()})
            if not levels:
                raise WorkflowError(f"--load-level: study '{study}' has no load levels "
                                    "(study.load)")
            if load_level not in levels:
                raise WorkflowError(
                    f"--load-level '{load_level}': not a level of study '{study}'"
                    f"{did_you_mean(load_level, levels)} (levels: {', '.join(levels)})")
            frame = frame[frame["load_level"] == load_level]
        if given is not None:
            return evaluate(given, rules_path, frame, study, rnd, colls,
                            include_oversubscribed, calls, progress)
        mpi = sorted({f"{k} {v}" for k, v in zip(frame["mpi_kind"], frame["mpi_version"])
                      if k is not None})
        meta = {"study": study, "round": str(rnd), "mpi": "; ".join(mpi) or "unknown",
                "created": db_mod.now(), "colltune": __version__}
        if include_oversubscribed:
            meta["oversubscribed"] = "included"
        if load_level is not None:
            meta["load level"] = load_level
        result = tune_mod.tune(frame, target, colls, include_oversubscribed, meta)
        if calls is not None:
            add_weighted(result.points["in-sample"], calls, result.notes)
            result.summary = pd.concat([result.summary, tune_mod.weighted(
                result.points["in-sample"], calls)], ignore_index=True)
        text = rules_mod.to_text(result.rules)
        data = result.to_dict()
        try:
            if read_only is None:
                store.store_tuning(conn, study=study, round=rnd, target=target,
                                   collectives=colls,
                                   include_oversubscribed=include_oversubscribed, rules=text,
                                   summary=data["summary"], points=data["points"],
                                   notes=result.notes, argv=_argv(argv))
        except db_mod.SQLError as exc:
            raise WorkflowError(f"cannot store the tuning in {db_path}: {exc}; no rules file "
                                "written") from None
    finally:
        conn.close()
    usage: list[str] = []
    if library is None:
        write_or_keep(output, text, "tune.rules")
    else:
        try:
            usage = rules_files.export(result.rules, target, output, library)
        except rules_mod.RulesError as exc:
            raise WorkflowError(f"{exc} ({'the tuning is stored; ' if read_only is None else ''}"
                                "--colltune-format writes colltune's own rules file)") from None
    kind = rules_files.FORMAT_NAMES[target if library is not None else "colltune"]
    return Tuned(study, rnd, target, output, result, data, kind, library, usage, read_only)


def add_weighted(points, calls, notes: list[str]) -> None:
    """Notes on a profile that weighs nothing the study measured."""
    have = set(points["collective"]) if len(points) else set()
    used = sorted({c for c, _, _, n in calls if n > 0})
    for c in used:
        if c not in have:
            notes.append(f"--profile: the application calls {c}, which the rules' points do "
                         "not cover: not weighed")
    if not used:
        notes.append("--profile: the profile records no call")


def evaluate(rs, path, frame, study, rnd, colls, include_oversubscribed, calls=None,
             progress: Progress | None = None) -> Evaluated:
    """--rules FILE: the quality of a given rules file on the study's points."""
    progress = progress_or_quiet(progress)
    for n in tune_mod.rules_notes(rs, frame):
        progress.say(f"note: {n}")
    pts, summary = tune_mod.quality(frame, rs, colls, include_oversubscribed)
    if calls is not None:
        notes: list[str] = []
        add_weighted(pts, calls, notes)
        for n in notes:
            progress.say(f"note: {n}")
        summary = pd.concat([summary, tune_mod.weighted(pts, calls)], ignore_index=True)
    return Evaluated(study, rnd, str(path), pts, summary)


# --------------------------------------------------------- adaptive measurements

@dataclass
class Measured:
    """Rules from adaptive measurements, stored as study `study` round `round`."""

    study: str
    round: int
    output: str
    rules: object  # RuleSet
    choices: object  # DataFrame
    cells: int
    launches: int
    rounds: int
    exhaustive: int
    budget_cells: int
    notes: list[str]
    points: object
    summary: object
    simulated: bool


def ppns(text, plat, nps) -> dict[int, list[int]]:
    """--ppn per process count (default: the platform's cores a node, at most np)."""
    if text is None:
        return {n: [min(n, plat.cores_per_node)] for n in nps}
    try:
        vals = sorted({int(x) for x in str(text).split(",") if x.strip()})
    except ValueError:
        raise WorkflowError(f"--ppn {text}: whole numbers, comma-separated (e.g. 2,8)") from None
    if not vals or vals[0] < 1:
        raise WorkflowError(f"--ppn {text}: at least one, each >= 1")
    return {n: [q for q in vals if q <= n] or [n] for n in nps}


def tune_measured(db_path, *, coll: str, nps: list[int], sizes: list[int], budget: str,
                  output: str, algos: str = "ours,native", reps: int = 4,
                  iterations: int | None = None, mpi_spec: str | None = None,
                  platform_spec: str | None = None, ppn_text: str | None = None,
                  study: str | None = None, argv: list[str] | None = None,
                  progress: Progress | None = None) -> Measured:
    """The adaptive loop (tuning/adaptive.py; tuning/exact.py when simulated): a small
    design, then where the decision is least certain, until the budget; every launch
    recorded as study `study` (default tune-adaptive-COLL), one round per call; then
    the rules, written to `output`, and their quality, stored."""
    progress = progress_or_quiet(progress)
    if coll not in COLLECTIVES:
        raise WorkflowError(f"--coll '{coll}': one collective{did_you_mean(coll, COLLECTIVES)} "
                            f"(valid: {', '.join(COLLECTIVES)})")
    if iterations is not None and iterations < 1:
        raise WorkflowError(f"--iterations {iterations}: must be >= 1")
    try:
        fraction = adaptive.parse_budget(budget)
        size_list = sorted(set(sizes))
    except (ColltuneError, ValueError) as exc:
        raise WorkflowError(f"{exc}") from None
    check_writable(output, "-o")
    db_mod.check_writable(db_path)
    nps = sorted(set(nps))
    b = build_for(mpi_spec)
    engine = measured.engine_for(b)
    plat = layouts = None
    if engine == "exact":
        plat = resolve(platform_spec or launch.DEFAULT_PLATFORM)
        layouts = ppns(ppn_text, plat, nps)
    else:
        if platform_spec:
            raise WorkflowError("--platform is for simulation: add --mpi smpi")
        if ppn_text is not None:
            raise WorkflowError("--ppn: layouts are simulated (--mpi smpi); measured, a process "
                                "count runs in the launcher's layout")
        if reps < 2:
            raise WorkflowError(f"--reps {reps}: at least 2 (the evidence test needs "
                                "repetitions; 4 or more to tell 3 % apart)")
        for n in check_process_counts(nps):
            progress.note(n)
    try:
        cands = bench_mod.expand_algos(b, coll, split_specs(algos))
    except ValueError as exc:
        raise WorkflowError(str(exc)) from None
    registry.check_specs(b, coll, [c for c in cands if not is_lib_spec(c)])
    name = study or f"tune-adaptive-{coll}"
    np_text = ",".join(map(str, nps))
    definition = {"adaptive": True, "collective": coll, "np": nps, "sizes": size_list,
                  "candidates": list(cands), "budget": fraction, "repetitions": reps,
                  "iterations": iterations}
    d = measured.design(b, coll, cands, nps, size_list, fraction=fraction, reps=reps,
                        iterations=iterations, platform=plat, ppns=layouts)
    if d.engine == "exact":
        definition.update(repetitions=1, platform=plat.name,
                          ppn={str(n): layouts[n] for n in nps})
    # one measurement of a study into a database at a time, as sweeps
    with sweep_lock(db_path, name):
        conn = db_mod.open_db(db_path)
        try:
            old_sid = reader.study_id(conn, name)
            if old_sid is not None and '"adaptive": true' not in (
                    reader.study_definition(conn, old_sid) or ""):
                raise WorkflowError(
                    f"--study {name}: the database holds a study of that name that was not "
                    "measured by colltune tune --measure; name another (the default is "
                    f"tune-adaptive-{coll})")
            rec = Recorder(conn, name, definition,
                           f"colltune tune --measure: {coll} np {np_text}, adaptive, "
                           f"budget {100 * fraction:g}%")
            rnd = rec.next_round()  # each --measure a round
            rec.start(kind="tune-adaptive", round=rnd, mpi=b.mpi, launcher="local",
                      command_line=_argv(argv), definition=definition)

            def on_launch(np_, ppn, key, number, la, recs):
                rec.unit(key=key, collective=coll, np=np_, nodes=-(-np_ // ppn), ppn=ppn,
                         mapping=None, rank_order=None, repetition=number,
                         algorithms=list(la.algos), library_spec=None,
                         command=recs[0].get("command") if recs else None, env=None,
                         notes=None, started_at=db_mod.now(), seconds=None, records=recs)

            status = "failed"
            mpi = f"{b.mpi.kind} {b.mpi.version}"
            try:
                with progress.bar(d.total) as prog:
                    out = measured.run(d, on_launch=on_launch, study=name, round=rnd,
                                       mpi=mpi, progress=lambda done, text: prog.set(
                                           done, text, force=True))
                rs, ch, cells, launches, rounds, exhaustive, total, notes = (
                    out.rules, out.choices, out.cells, out.launches, out.rounds,
                    out.exhaustive, out.total, out.notes)
                status = "done"
            except adaptive.AdaptiveError:
                raise
            except (bench_mod.BenchError, ColltuneError, OSError) as exc:
                raise WorkflowError(f"a launch failed: {exc} (the launches before it are "
                                    f"stored in study '{name}' round {rnd})") from None
            finally:
                rec.finish(status)
            simulated = backend_for(b).simulated
            stored, _ = tune_mod.read_frame(conn, name, rnd, include_simulated=simulated)
            pts, summary = tune_mod.quality(stored, rs)
            text = rules_mod.to_text(rs)
            store.store_tuning(conn, study=name, round=rnd, target="colltune",
                               collectives=[coll], include_oversubscribed=False, rules=text,
                               summary=json.loads(summary.to_json(orient="records")),
                               points={"rules file": json.loads(pts.to_json(orient="records"))},
                               notes=notes, argv=_argv(argv))
        finally:
            conn.close()
        write_or_keep(output, text, "tune.rules")
    return Measured(name, rnd, output, rs, ch, cells, launches, rounds, exhaustive, total,
                    notes, pts, summary, simulated)

