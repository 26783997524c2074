"""`colltune load`: the background traffic generator (run, effect, levels) and the
analysis of a study with load levels (analyse); drivers/loadgen.py runs the generator,
analysis/load.py analyses."""

from __future__ import annotations

import json

from colltune.analysis import load as load_analysis
from colltune.drivers import loadgen
from colltune.drivers.loadgen import LEVELS, PATTERNS, LoadError, LoadLevel
from colltune.mpi.build import Build
from colltune.results import db as db_mod
from colltune.tuning import tune as tune_mod

from .basic import Progress, quiet

__all__ = ["LEVELS", "PATTERNS", "LoadError", "LoadLevel", "level", "run", "check_levels", "effect",
           "analyse", "analysis_json", "summary_text"]

summary_text = load_analysis.summary_text


def level(name: str | None = None, **options) -> LoadLevel:
    """A built-in level by name (one with a generator), else the level the options
    describe (pattern, np, size, window, duty, period_ms); LoadError otherwise."""
    if name is not None:
        if name not in LEVELS:
            raise LoadError(f"--level '{name}': unknown; built in: {', '.join(LEVELS)}")
        lv = LEVELS[name]
        if lv.quiet:
            raise LoadError(f"--level {name}: no generator to run")
        return lv
    try:
        return loadgen.parse_level("options", "custom", options)
    except ValueError as exc:  # LoadError is one too
        raise LoadError(str(exc)) from None


def run(build: Build, lv: LoadLevel, duration: float = 10.0,
        progress: Progress = quiet) -> dict:
    """The generator of `lv` in the foreground for `duration` seconds (0: until Ctrl-C
    or SIGTERM); its statistics (bytes, messages, elapsed_s, rate_MBps, busy_fraction)."""
    ln = loadgen.generator_launch(build, lv, duration)
    progress(f"load: {lv.describe()} for "
             + (f"{duration:g} s" if duration else "until Ctrl-C") + f": {ln.command_line}")
    return loadgen.run_generator(ln, timeout=None if not duration else duration + 120)


def check_levels(names: list[str]) -> None:
    """Built-in level names, each once (LoadError otherwise)."""
    if len(set(names)) != len(names):
        raise LoadError("--levels: a level is named twice")
    for n in names:
        if n not in LEVELS:
            raise LoadError(f"--levels: unknown level '{n}'; built in: {', '.join(LEVELS)}")


def effect(build: Build, names: list[str], np: int = 2, sizes=(8, 65536, 1 << 20),
           algo: str = "native"):
    """What the generator does to a measurement here: the probe, a ping-pong and a Bcast
    (`algo`) under each built-in level of `names` (the first is the reference of the
    ratios); a frame of loadgen.EFFECT_COLUMNS."""
    check_levels(names)
    return loadgen.effect(build, [LEVELS[n] for n in names], np, sizes, algo)


def analyse(db_path, study: str, round_: int | None = None,
            include_simulated: bool = False):
    """The measurements of a round (default: the latest) of a study with load levels,
    labelled by algorithm, and the round: (frame, round)."""
    conn = db_mod.open_reader(db_path)
    try:
        frame, rnd = tune_mod.read_frame(conn, study, round_,
                                         include_simulated=include_simulated)
    finally:
        conn.close()
    return frame.assign(label=frame["algorithm"]), rnd


def analysis_json(frame, study: str, rnd: int) -> dict:
    """The analysis as data: the probe's correlation with every algorithm's latency, the
    best algorithm per level, and how often it changes with the load."""
    best = load_analysis.best_per_level(frame)
    corr = load_analysis.correlations(frame)
    return {"study": study, "round": rnd,
            "correlations": json.loads(corr.to_json(orient="records")),
            "best_per_level": json.loads(best.to_json(orient="records")),
            "changes": json.loads(load_analysis.changes(best).to_json(orient="records"))}
