"""`colltune tune`: a study's measurements -> a rules file and its quality
(workflows.tune)."""

from __future__ import annotations

import json

import click

from colltune.base.errors import did_you_mean
from colltune.output.terminal import quality_table, rules_table
from colltune.rules import interpose
from colltune.rules import ruleset as rules_mod
from colltune.rules.ruleset import TARGETS
from colltune.workflows import tune as tune_flow
from ._common import (MPI_HELP, PLATFORM_HELP, command, db_option, err, fail, np_option, out,
                      progress, size_option)


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
        res = tune_flow.tune_measured(db_path, coll=coll, nps=np_, sizes=sizes, budget=budget,
                                      output=output, algos=algos, reps=reps,
                                      iterations=iterations, mpi_spec=mpi_spec,
                                      platform_spec=platform_spec, ppn_text=ppn_text,
                                      study=study, progress=progress())
        render_measured(res, fmt)
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
    colls = tune_flow.collectives(coll)
    if colltune_format and (rules_path is not None or target == "colltune"):
        fail("--colltune-format: only with --target openmpi or mpich and -o")
    res = tune_flow.tune_stored(db_path, study=study, target=target, output=output,
                                round_=round_, colls=colls, rules_path=rules_path,
                                colltune_format=colltune_format,
                                include_oversubscribed=include_oversubscribed,
                                load_level=load_level, include_simulated=include_simulated,
                                calls=calls, progress=progress())
    render(res, fmt)


def render(res, fmt: str = "text") -> None:
    """What `colltune tune` prints of a tuning (tune_flow.Tuned) or an evaluation of a
    rules file (tune_flow.Evaluated): tables, or one JSON object."""
    if isinstance(res, tune_flow.Evaluated):
        _render_evaluated(res, fmt)
        return
    result, data = res.result, res.data
    if res.read_only is not None:
        err.print(f"note: the tuning is not stored ({res.read_only}); the rules file is "
                  "written", highlight=False)
    for n in result.notes:
        err.print(f"note: {n}", highlight=False)
    if fmt == "json":
        click.echo(json.dumps({"study": res.study, "round": res.round,
                               "output": str(res.output), "format": res.kind, "use": res.usage,
                               "rules": json.loads(rules_mod.to_json(result.rules)),
                               "quality": data}, indent=2))
        return
    library = res.library
    out.print(rules_table(result.rules))
    out.print(quality_table(result.summary, result.has_native, result.points, result.keys))
    out.print(f"{len(result.rules.rules)} rules from {len(result.choices)} measured cells of "
              f"study '{res.study}' round {res.round} written to {res.output} ({res.kind}"
              + (f" for {library.name} {library.version})" if library is not None else ")"),
              highlight=False)
    if res.usage:
        out.print("use it with:", highlight=False)
        for ln in res.usage:
            out.print(f"  {ln}", highlight=False, markup=False)


def _render_evaluated(ev, fmt: str) -> None:
    pts, summary = ev.points, ev.summary
    if fmt == "json":
        click.echo(json.dumps({"study": ev.study, "round": ev.round, "rules": ev.rules_path,
                               "summary": json.loads(summary.to_json(orient="records")),
                               "points": json.loads(pts.to_json(orient="records"))}, indent=2))
        return
    out.print(quality_table(summary, pts["native_us"].notna().any(), {"rules file": pts}))
    out.print(f"the rules of {ev.rules_path} on {len(pts)} measured cells of study "
              f"'{ev.study}' round {ev.round}", highlight=False)


def render_measured(res: "tune_flow.Measured", fmt: str = "text") -> None:
    """What `colltune tune --measure` prints: its notes, then tables or one JSON object."""
    for n in res.notes:
        err.print(f"note: {n}", highlight=False)
    if fmt == "json":
        click.echo(json.dumps({"study": res.study, "round": res.round,
                               "output": str(res.output), "cells": res.cells,
                               "budget_cells": res.budget_cells,
                               "exhaustive_cells": res.exhaustive, "launches": res.launches,
                               "rounds": res.rounds,
                               "rules": json.loads(rules_mod.to_json(res.rules)),
                               "choices": json.loads(res.choices.drop(
                                   columns=["params", "general_params"])
                                   .to_json(orient="records")),
                               "quality": json.loads(res.summary.to_json(orient="records"))},
                              indent=2))
        return
    out.print(rules_table(res.rules))
    out.print(quality_table(res.summary.assign(evaluation="in-sample"), True,
                            {"in-sample": res.points}))
    out.print(f"{len(res.rules.rules)} rules from {res.cells} "
              f"{'simulated' if res.simulated else 'measured'} cells ({res.launches} launches) "
              f"of study '{res.study}' round {res.round} written to {res.output}",
              highlight=False)
