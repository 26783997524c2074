"""`colltune tune`: a study's measurements -> a rules file and its quality."""

from __future__ import annotations

import json
import sys

import click

from .. import __version__
from colltune.mpi import libraries as mpi_mod
from colltune.results import db as db_mod
from colltune.results import reader, store
from colltune.rules import files as rules_files
from colltune.rules import interpose
from colltune.rules import ruleset as rules_mod
from colltune.base.errors import ColltuneError, did_you_mean
from colltune.base.files import check_writable
from colltune.base.collectives import COLLECTIVES
from colltune.base.lazy import LazyModule
from colltune.base.specs import is_lib_spec, split_specs
from colltune.drivers import bench as bench_mod
from colltune.drivers import registry
from colltune.rules.ruleset import TARGETS
from colltune.studies.sweep import sweep_lock
from colltune.tuning import adaptive, exact
from colltune.tuning import tune as tune_mod
from ._common import (MPI_HELP, PLATFORM_HELP, build_or_fail, check_nps, command, db_option,
                      err, fail, np_option, out, resolve_platform, size_option, write_or_keep)
from colltune.output.terminal import BenchProgress, quality_table, rules_table

pd = LazyModule("pandas")


@command()
@db_option()
@click.option("--study", help="The study whose measurements are tuned from (default: the only "
              "study in the database).")
@click.option("--round", "round_", type=int, help="Its round (default: the latest).")
@click.option("--target", help="Whose algorithms are the candidates: "
              + ", ".join(TARGETS) + " (colltune: ours and native; openmpi: ompi:* and "
              "native; mpich: mpich:* and native).")
@click.option("--coll", help="Only these collectives (comma-separated).")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="The rules file to write, atomically: for --target openmpi or mpich the "
                   "file that library reads (Open MPI's coll/tuned rules, MPICH's selection "
                   "JSON), for --target colltune colltune's own (the interposition library).")
@click.option("--colltune-format", is_flag=True,
              help="--target openmpi/mpich: write colltune's own rules file instead (the "
                   "input of colltune rules export and of tune --rules).")
@click.option("--rules", "rules_path", type=click.Path(dir_okay=False),
              help="Instead of making rules: evaluate this rules file on the study (regret "
                   "and gain over native per point); writes nothing.")
@click.option("--profile", "profile_path", type=click.Path(dir_okay=False),
              help="Also weigh the quality by the sizes an application really calls: a "
                   "profile of the interposition library (COLLTUNE_PROFILE, docs/"
                   "interposition.md); adds 'profile-weighted' rows.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="What is printed: tables, or one JSON object (rules "
              "and quality).")
@click.option("--include-oversubscribed", is_flag=True,
              help="Let points measured with more processes than cores drive choices too "
                   "(left out by default).")
@click.option("--measure", is_flag=True,
              help="Measure adaptively instead of reading a stored study: a small design, "
                   "then where the decision is least certain, until --budget; stores the "
                   "measurements as the study tune-adaptive-COLL (or --study).")
@np_option("np_", help="--measure: the process counts (each its own adaptive design and "
           "budget; the rules cover them all).")
@size_option("sizes", help="--measure: the sizes (bytes: 8,64K,1M or a power-of-two range "
             "1:1M).")
@click.option("--algo", "algos", default="ours,native", show_default=True,
              help="--measure: the candidates (colltune's algorithms with parameters, native; "
                   "'ours' = every colltune algorithm).")
@click.option("--budget", help="--measure: the share of the exhaustive design's cells "
              "(candidates x sizes x --reps) that may be measured, e.g. 20%.")
@click.option("--reps", type=int, default=4, show_default=True,
              help="--measure: the exhaustive design's repetitions (separate launches), at "
                   "most this many of every (candidate, size).")
@click.option("--iterations", type=int, help="--measure: timed calls per point (default: the "
              "driver's).")
@click.option("--mpi", "mpi_spec", help="--measure: " + MPI_HELP)
@click.option("--platform", "platform_spec", help="--measure --mpi smpi: " + PLATFORM_HELP)
@click.option("--ppn", "ppn_text",
              help="--measure --mpi smpi: the layouts, processes per node (comma-separated: "
                   "each process count runs as np/ppn nodes of each); simulated points are "
                   "exact, so one model covers every process count and layout "
                   "(colltune.tuning.exact) and --reps does not apply. Default: the "
                   "platform's cores a node (at most np).")
@click.option("--load-level", "load_level",
              help="A study with load levels (study.load): tune from this level's points "
                   "alone, rules without a load dimension (e.g. 'none': rules of a quiet "
                   "system). Default: every level, one rule set per load class "
                   "(docs/workload.md).")
@click.option("--include-simulated", is_flag=True,
              help="Make rules from simulated points too (SimGrid, --mpi smpi); by default "
                   "they are never mixed with measurements.")
def tune(db_path, study, round_, target, coll, output, colltune_format, rules_path,
         profile_path, fmt, include_oversubscribed, measure, np_, sizes, algos, budget, reps,
         iterations, mpi_spec, platform_spec, ppn_text, load_level,
         include_simulated=False) -> None:
    """The best algorithm (with its parameters) for every collective, process count
    and size of a study, as a rules file; prints the decision table and its quality
    (regret against the fastest measured, gain over native; in-sample and
    cross-validated) and stores both in the database (a read-only database: not stored,
    with a note). With --measure it measures adaptively first (--budget). docs/tuning.md."""
    calls = None
    if profile_path is not None:
        calls = interpose.read_profile(profile_path).calls()
    if measure:
        if calls is not None:
            fail("--profile: not with --measure (tune the stored study afterwards with it)")
        _measure(db_path, study, target, coll, output, fmt, np_, sizes, algos, budget, reps,
                 iterations, mpi_spec, rules_path, round_, platform_spec, ppn_text)
        return
    extra = [o for o, v in (("--np", np_), ("--size", sizes), ("--budget", budget),
                            ("--iterations", iterations), ("--mpi", mpi_spec),
                            ("--platform", platform_spec), ("--ppn", ppn_text))
             if v is not None]
    if extra:
        fail(f"{', '.join(extra)}: only with --measure")
    if rules_path is not None:
        if output is not None:
            fail("--rules evaluates a rules file and writes none: leave out -o")
    elif target is None or output is None:
        fail("--target and -o FILE are needed (or --rules FILE to evaluate one)")
    if target is not None and target not in TARGETS:
        fail(f"--target '{target}': unknown{did_you_mean(target, TARGETS)} "
             f"(valid: {', '.join(TARGETS)})")
    colls = None
    if coll:
        colls = [c.strip() for c in coll.split(",") if c.strip()]
        for c in colls:
            if c not in COLLECTIVES:
                fail(f"--coll '{c}': unknown collective{did_you_mean(c, COLLECTIVES)} "
                     f"(valid: {', '.join(COLLECTIVES)})")
    given = None
    library = None  # --target openmpi/mpich: the installed library whose file -o is
    read_only = None  # why the database cannot store the tuning
    if colltune_format and (rules_path is not None or target == "colltune"):
        fail("--colltune-format: only with --target openmpi or mpich and -o")
    if rules_path is not None:
        given = rules_mod.read(rules_path)
        if target is not None and target != given.target:
            fail(f"--target {target}: the rules file {rules_path} is for {given.target}")
        target = given.target
        conn = db_mod.open_reader(db_path)  # evaluating writes nothing
    else:
        check_writable(output, "-o")
        if target != "colltune" and not colltune_format:
            try:  # its algorithm numbers/names are read from the installed library
                library = mpi_mod.find(target, auto_install=False)
            except ColltuneError as exc:
                fail(f"-o for --target {target} is the file that library reads, which needs "
                     f"it installed: {exc} (--colltune-format writes colltune's own file)")
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
                fail("--study is needed: the database holds "
                     + (f"the studies {', '.join(names)}" if names else "no study "
                        "(run colltune sweep first)"))
            study = names[0]
        frame, rnd = tune_mod.read_frame(conn, study, round_, include_simulated)
        if load_level is not None:
            levels = sorted({str(x) for x in frame["load_level"].dropna()})
            if not levels:
                fail(f"--load-level: study '{study}' has no load levels (study.load)")
            if load_level not in levels:
                fail(f"--load-level '{load_level}': not a level of study '{study}'"
                     f"{did_you_mean(load_level, levels)} (levels: {', '.join(levels)})")
            frame = frame[frame["load_level"] == load_level]
        if given is not None:
            _evaluate(given, rules_path, frame, study, rnd, colls, include_oversubscribed, fmt,
                      calls)
            return
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
            _add_weighted(result.points["in-sample"], calls, result.notes)
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
                                   notes=result.notes, argv=["colltune"] + sys.argv[1:])
        except db_mod.SQLError as exc:
            fail(f"cannot store the tuning in {db_path}: {exc}; no rules file written")
    finally:
        conn.close()
    usage: list[str] = []
    if library is None:
        write_or_keep(output, text, "tune.rules")
    else:
        try:
            usage = rules_files.export(result.rules, target, output, library)
        except rules_mod.RulesError as exc:
            fail(f"{exc} ({'the tuning is stored; ' if read_only is None else ''}"
                 "--colltune-format writes colltune's own rules file)")
    if read_only is not None:
        err.print(f"note: the tuning is not stored ({read_only}); the rules file is written",
                  highlight=False)
    for n in result.notes:
        err.print(f"note: {n}", highlight=False)
    kind = rules_files.FORMAT_NAMES[target if library is not None else "colltune"]
    if fmt == "json":
        click.echo(json.dumps({"study": study, "round": rnd, "output": str(output),
                               "format": kind, "use": usage,
                               "rules": json.loads(rules_mod.to_json(result.rules)),
                               "quality": data}, indent=2))
        return
    out.print(rules_table(result.rules))
    out.print(quality_table(result.summary, result.has_native, result.points, result.keys))
    out.print(f"{len(result.rules.rules)} rules from {len(result.choices)} measured cells of "
              f"study '{study}' round {rnd} written to {output} ({kind}"
              + (f" for {library.name} {library.version})" if library is not None else ")"),
              highlight=False)
    if usage:
        out.print("use it with:", highlight=False)
        for ln in usage:
            out.print(f"  {ln}", highlight=False, markup=False)


def _add_weighted(points, calls, notes: list[str]) -> None:
    """Notes on a profile that weighs nothing the study measured."""
    have = set(points["collective"]) if len(points) else set()
    used = sorted({c for c, _, _, n in calls if n > 0})
    for c in used:
        if c not in have:
            notes.append(f"--profile: the application calls {c}, which the rules' points do "
                         "not cover: not weighed")
    if not used:
        notes.append("--profile: the profile records no call")


def _evaluate(rs, path, frame, study, rnd, colls, include_oversubscribed, fmt,
              calls=None) -> None:
    """--rules FILE: the quality of a given rules file on the study's points."""
    for n in tune_mod.rules_notes(rs, frame):
        err.print(f"note: {n}", highlight=False)
    pts, summary = tune_mod.quality(frame, rs, colls, include_oversubscribed)
    if calls is not None:
        notes: list[str] = []
        _add_weighted(pts, calls, notes)
        for n in notes:
            err.print(f"note: {n}", highlight=False)
        summary = pd.concat([summary, tune_mod.weighted(pts, calls)], ignore_index=True)
    if fmt == "json":
        click.echo(json.dumps({"study": study, "round": rnd, "rules": str(path),
                               "summary": json.loads(summary.to_json(orient="records")),
                               "points": json.loads(pts.to_json(orient="records"))}, indent=2))
        return
    out.print(quality_table(summary, pts["native_us"].notna().any(), {"rules file": pts}))
    out.print(f"the rules of {path} on {len(pts)} measured cells of study '{study}' round "
              f"{rnd}", highlight=False)


def _measure(db_path, study, target, coll, output, fmt, np_, sizes, algos, budget, reps,
             iterations, mpi_spec, rules_path, round_, platform_spec=None,
             ppn_text=None) -> None:
    """--measure: the adaptive loop (colltune.adaptive; colltune.tuning.exact when
    simulated), stored as a study, then rules."""
    if rules_path is not None or round_ is not None:
        fail("--measure makes rules from new measurements: leave out --rules and --round")
    missing = [o for o, v in (("--coll", coll), ("--np", np_), ("--size", sizes),
                              ("--target", target), ("--budget", budget), ("-o", output))
               if v is None]
    if missing:
        fail(f"--measure needs {', '.join(missing)}")
    if target != "colltune":
        fail(f"--measure --target {target}: only --target colltune is measured adaptively "
             "(each of the library's algorithms needs a launch of its own); measure the "
             "library's algorithms with colltune sweep, then colltune tune --study")
    if coll not in COLLECTIVES:
        fail(f"--coll '{coll}': one collective{did_you_mean(coll, COLLECTIVES)} "
             f"(valid: {', '.join(COLLECTIVES)})")
    if iterations is not None and iterations < 1:
        fail(f"--iterations {iterations}: must be >= 1")
    try:
        fraction = adaptive.parse_budget(budget)
        size_list = sorted(set(sizes))  # parsed by --size
    except (ColltuneError, ValueError) as exc:
        fail(f"{exc}")
    check_writable(output, "-o")
    db_mod.check_writable(db_path)
    nps = sorted(set(np_))
    b = build_or_fail(mpi_spec)
    plat = resolve_platform(platform_spec, b.mpi)
    if b.mpi.simulated:
        ppns = _ppns(ppn_text, plat, nps)
    else:
        if ppn_text is not None:
            fail("--ppn: layouts are simulated (--mpi smpi); measured, a process count runs "
                 "in the launcher's layout")
        if reps < 2:
            fail(f"--reps {reps}: at least 2 (the evidence test needs repetitions; 4 or more "
                 "to tell 3 % apart)")
        check_nps(nps)
    try:
        cands = bench_mod.expand_algos(b, coll, split_specs(algos))
    except ValueError as exc:
        fail(str(exc))
    registry.check_specs(b, coll, [c for c in cands if not is_lib_spec(c)])
    name = study or f"tune-adaptive-{coll}"
    np_text = ",".join(map(str, nps))
    definition = {"adaptive": True, "collective": coll, "np": nps, "sizes": size_list,
                  "candidates": list(cands), "budget": fraction, "repetitions": reps,
                  "iterations": iterations}
    if b.mpi.simulated:
        try:
            grid = exact.Grid(coll, tuple(cands), tuple(
                exact.Point(n, q, s) for n in nps for q in ppns[n] for s in size_list))
            for n in nps:
                for q in ppns[n]:
                    exact.layout_platform(plat, n, q)
            exact.initial_launches(grid, exact.budget_cells(grid, fraction))
        except adaptive.AdaptiveError as exc:
            fail(str(exc))
        definition.update(repetitions=1, platform=plat.name,
                          ppn={str(n): ppns[n] for n in nps})
    else:
        try:
            grids = [adaptive.Grid(coll, tuple(cands), tuple(size_list), n, n) for n in nps]
            measures = [adaptive.bench_measure(b, g, iterations=iterations) for g in grids]
            for g in grids:
                adaptive.check_budget(g, reps, fraction)
        except adaptive.AdaptiveError as exc:
            fail(str(exc))
    # one measurement of a study into a database at a time, as sweeps (released at exit)
    click.get_current_context().with_resource(sweep_lock(db_path, name))
    conn = db_mod.open_db(db_path)
    try:
        old_sid = reader.study_id(conn, name)
        if old_sid is not None and '"adaptive": true' not in (
                reader.study_definition(conn, old_sid) or ""):
            conn.close()
            fail(f"--study {name}: the database holds a study of that name that was not "
                 "measured by colltune tune --measure; name another (the default is "
                 f"tune-adaptive-{coll})")
        sid = store.upsert_study(conn, name, definition,
                                 f"colltune tune --measure: {coll} np {np_text}, adaptive, "
                                 f"budget {100 * fraction:g}%")
        has_runs = reader.run_count(conn, sid)
        rnd = reader.latest_round(conn, sid) + 1 if has_runs else 1  # each --measure a round
        run_id = store.store_run(conn, kind="tune-adaptive", study_id=sid, mpi=b.mpi,
                                 launcher="local", command_line=["colltune"] + sys.argv[1:],
                                 definition=definition, round=rnd)

        def on_launch(np_, ppn, key, number, launch, recs):
            store.store_unit(conn, study_id=sid, run_id=run_id, round=rnd, key=key,
                             collective=coll, np=np_, nodes=-(-np_ // ppn), ppn=ppn,
                             mapping=None, rank_order=None, repetition=number,
                             algorithms=list(launch.algos), library_spec=None,
                             command=recs[0].get("command") if recs else None, env=None,
                             notes=None, started_at=db_mod.now(), seconds=None,
                             records=recs)

        status = "failed"
        mpi = f"{b.mpi.kind} {b.mpi.version}"
        try:
            if b.mpi.simulated:
                rs, ch, cells, launches, rounds, exhaustive, total, notes = _run_exact(
                    b, plat, grid, fraction, on_launch, name, rnd, mpi)
            else:
                rs, ch, cells, launches, rounds, exhaustive, total, notes = _run_measured(
                    grids, measures, reps, fraction, on_launch, name, rnd, mpi)
            status = "done"
        except adaptive.AdaptiveError as exc:
            fail(str(exc))
        except (bench_mod.BenchError, ColltuneError, OSError) as exc:
            fail(f"a launch failed: {exc} (the launches before it are stored in study "
                 f"'{name}' round {rnd})")
        finally:
            store.finish_run(conn, run_id, status)
        stored, _ = tune_mod.read_frame(conn, name, rnd, include_simulated=b.mpi.simulated)
        pts, summary = tune_mod.quality(stored, rs)
        text = rules_mod.to_text(rs)
        store.store_tuning(conn, study=name, round=rnd, target="colltune", collectives=[coll],
                           include_oversubscribed=False, rules=text,
                           summary=json.loads(summary.to_json(orient="records")),
                           points={"rules file": json.loads(pts.to_json(orient="records"))},
                           notes=notes, argv=["colltune"] + sys.argv[1:])
    finally:
        conn.close()
    write_or_keep(output, text, "tune.rules")
    for n in notes:
        err.print(f"note: {n}", highlight=False)
    if fmt == "json":
        click.echo(json.dumps({"study": name, "round": rnd, "output": str(output),
                               "cells": cells, "budget_cells": total,
                               "exhaustive_cells": exhaustive, "launches": launches,
                               "rounds": rounds,
                               "rules": json.loads(rules_mod.to_json(rs)),
                               "choices": json.loads(ch.drop(columns=["params",
                                                                     "general_params"])
                                                     .to_json(orient="records")),
                               "quality": json.loads(summary.to_json(orient="records"))},
                              indent=2))
        return
    out.print(rules_table(rs))
    out.print(quality_table(summary.assign(evaluation="in-sample"), True,
                            {"in-sample": pts}))
    out.print(f"{len(rs.rules)} rules from {cells} {'simulated' if b.mpi.simulated else 'measured'}"
              f" cells ({launches} launches) of study '{name}' round {rnd} written to {output}",
              highlight=False)


def _ppns(text, plat, nps) -> dict[int, list[int]]:
    """--ppn per process count (default: the platform's cores a node, at most np)."""
    if text is None:
        return {n: [min(n, plat.cores_per_node)] for n in nps}
    try:
        vals = sorted({int(x) for x in str(text).split(",") if x.strip()})
    except ValueError:
        fail(f"--ppn {text}: whole numbers, comma-separated (e.g. 2,8)")
    if not vals or vals[0] < 1:
        fail(f"--ppn {text}: at least one, each >= 1")
    return {n: [q for q in vals if q <= n] or [n] for n in nps}


def _run_measured(grids, measures, reps, fraction, on_launch, name, rnd, mpi):
    """The measured loops (colltune.adaptive), one per process count."""
    budgets = [adaptive.budget_cells(g, reps, fraction) for g in grids]
    total = sum(budgets)
    exhaustive = sum(g.exhaustive_cells(reps) for g in grids)
    coll = grids[0].collective
    results = []
    with BenchProgress(total) as prog:
        for g, measure_fn in zip(grids, measures):
            done = sum(r.cells for r in results)

            def progress(used, allowed, launch, rnd_no, g=g, done=done):
                prog.set(done + used, f"{coll} np={g.np} adaptive: round "
                                      f"{rnd_no + 1}, {launch.cells} cells next", force=True)

            results.append(adaptive.run(
                g, measure_fn, reps=reps, budget=fraction, progress=progress,
                on_launch=lambda number, la, recs, g=g: on_launch(
                    g.np, g.np, f"adaptive-np{g.np}-{number}", number, la, recs)))
            prog.set(sum(r.cells for r in results), force=True)
    cells = sum(r.cells for r in results)
    launches = sum(len(r.launches) for r in results)
    meta = {"study": name, "round": str(rnd), "mpi": mpi, "created": db_mod.now(),
            "colltune": __version__,
            "adaptive": f"{cells} of {exhaustive} cells "
                        f"({100 * fraction:g}% budget), {launches} launches"}
    rs = adaptive.final_rules_of(results, "colltune", meta)
    ch = adaptive.final_choices_of(results)
    notes = []
    for r in results:
        how = ch[ch["np"] == r.grid.np]["how"].value_counts()
        notes.append(
            f"adaptive np={r.grid.np}: {r.cells} of "
            f"{adaptive.budget_cells(r.grid, reps, fraction)} budget cells "
            f"({r.grid.exhaustive_cells(reps)} exhaustive), "
            f"{len(r.launches)} launches, {r.rounds} rounds ({r.stopped}); of "
            f"{len(r.grid.sizes)} sizes {how.get('tested', 0)} settled by the evidence "
            f"test, {how.get('between', 0)} between settled sizes of one choice, "
            f"{how.get('untested', 0)} not settled: native")
    return rs, ch, cells, launches, sum(r.rounds for r in results), exhaustive, total, notes


def _run_exact(b, plat, grid, fraction, on_launch, name, rnd, mpi):
    """The exact loop (colltune.tuning.exact): every process count and layout, one
    model, one repetition a cell (simulated)."""
    total = exact.budget_cells(grid, fraction)
    sim = exact.sim_measure(b, plat, grid.collective)
    count = [0]

    def measure(la):
        recs = sim(la)
        on_launch(la.np, la.ppn, f"exact-np{la.np}-ppn{la.ppn}-{count[0]}", count[0], la, recs)
        count[0] += 1
        return recs

    with BenchProgress(total) as prog:
        def progress(used, allowed, la, rnd_no):
            prog.set(used, f"{grid.collective} np={la.np} ppn={la.ppn} exact adaptive: round "
                           f"{rnd_no + 1}, {la.cells} cells next", force=True)

        res = exact.run(grid, measure, budget=fraction,
                        prior=exact.platform_prior(grid, b, plat), progress=progress)
        prog.set(res.cells, force=True)
    meta = {"study": name, "round": str(rnd), "mpi": mpi, "created": db_mod.now(),
            "colltune": __version__, "platform": plat.name,
            "adaptive": f"{res.cells} of {grid.exhaustive_cells()} cells "
                        f"({100 * fraction:g}% budget), {len(res.launches)} launches, "
                        "simulated (exact)"}
    ch = exact.choices(grid, res.values)
    rs = exact.rules(ch, meta)
    settled = len(ch)
    notes = [f"exact adaptive (simulated on {plat.name}): {res.cells} of {total} budget cells "
             f"({grid.exhaustive_cells()} exhaustive), {len(res.launches)} launches, "
             f"{res.rounds} rounds ({res.stopped}); {settled} of {len(grid.points)} points "
             "settled (native and another candidate simulated), the rules' interpolation "
             "elsewhere"]
    return rs, ch, res.cells, len(res.launches), res.rounds, grid.exhaustive_cells(), total, \
        notes
