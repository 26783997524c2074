"""Rules from new measurements (`colltune tune --measure`): one entry point that picks
the engine from the build's backend (mpi.backend.Backend.tuning_engine).

  exact     (tuning/exact.py) a simulated backend: a call's time is the same every
            time, so one model covers every process count and layout (ppn) and each
            cell is simulated once
  adaptive  (tuning/adaptive.py) a measured backend: one loop per process count in
            the launcher's layout, each cell measured up to `reps` times, choices
            settled by the evidence test

`design` checks the request and sets the grids up (AdaptiveError with the reason,
before anything runs); `run` measures within the budget and makes the rules. Storing
is the caller's: `on_launch(np, ppn, key, number, launch, records)` is called with
every launch's records as it finishes; `progress(cells_done, text)` reports the
cells spent (text None: a plain update).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from colltune import __version__
from colltune.mpi.backend import backend_for
from colltune.results.db import now
from colltune.tuning import adaptive, exact

OnLaunch = Callable[[int, int, str, int, object, list], None]
Progress = Callable[[int, "str | None"], None]


@dataclass
class Design:
    """What `run` measures: the engine, its grid(s) and budget."""

    engine: str                      # 'exact' or 'adaptive'
    build: object
    collective: str
    fraction: float                  # the budget, a share of the exhaustive design
    reps: int                        # adaptive: the exhaustive design's repetitions
    total: int                       # budget cells
    grid: exact.Grid | None = None                              # exact
    platform: object = None                                     # exact
    grids: list[adaptive.Grid] = field(default_factory=list)    # adaptive, one per np
    measures: list = field(default_factory=list)                # adaptive


@dataclass
class Outcome:
    rules: object                    # rules.ruleset.RuleSet
    choices: object                  # pandas DataFrame: the choice per point
    cells: int
    launches: int
    rounds: int
    exhaustive: int                  # cells of the exhaustive design
    total: int                       # budget cells
    notes: list[str]


def engine_for(build) -> str:
    """'exact' or 'adaptive': the engine that tunes on this build's backend."""
    return backend_for(build).tuning_engine


def design(build, collective: str, candidates, nps, sizes, *, fraction: float, reps: int,
           iterations: int | None = None, platform=None,
           ppns: dict[int, list[int]] | None = None) -> Design:
    """The grids of one tuning of `collective` over `nps` x `sizes` x `candidates`
    within `fraction` of the exhaustive design. exact: `platform` (mpi.platforms) and
    `ppns` (the layouts per process count); adaptive: `reps`, `iterations`.
    AdaptiveError when the request cannot be met."""
    engine = engine_for(build)
    if engine == "exact":
        ppns = ppns or {n: [n] for n in nps}
        grid = exact.Grid(collective, tuple(candidates), tuple(
            exact.Point(n, q, s) for n in nps for q in ppns[n] for s in sizes))
        for n in nps:
            for q in ppns[n]:
                exact.layout_platform(platform, n, q)
        total = exact.budget_cells(grid, fraction)
        exact.initial_launches(grid, total)
        return Design(engine, build, collective, fraction, 1, total, grid=grid,
                      platform=platform)
    grids = [adaptive.Grid(collective, tuple(candidates), tuple(sizes), n, n) for n in nps]
    measures = [adaptive.bench_measure(build, g, iterations=iterations) for g in grids]
    for g in grids:
        adaptive.check_budget(g, reps, fraction)
    total = sum(adaptive.budget_cells(g, reps, fraction) for g in grids)
    return Design(engine, build, collective, fraction, reps, total, grids=grids,
                  measures=measures)


def run(d: Design, *, on_launch: OnLaunch, study: str, round: int, mpi: str,
        progress: Progress | None = None) -> Outcome:
    """Measure `d` within its budget and make the rules (meta: study, round, mpi)."""
    progress = progress or (lambda done, text: None)
    meta = {"study": study, "round": str(round), "mpi": mpi, "created": now(),
            "colltune": __version__}
    if d.engine == "exact":
        return _run_exact(d, on_launch, meta, progress)
    return _run_adaptive(d, on_launch, meta, progress)


def _run_adaptive(d: Design, on_launch: OnLaunch, meta: dict, progress: Progress) -> Outcome:
    """The measured loops (tuning.adaptive), one per process count."""
    reps, fraction, coll = d.reps, d.fraction, d.collective
    exhaustive = sum(g.exhaustive_cells(reps) for g in d.grids)
    results = []
    for g, measure_fn in zip(d.grids, d.measures):
        done = sum(r.cells for r in results)

        def step(used, allowed, launch, rnd_no, g=g, done=done):
            progress(done + used, f"{coll} np={g.np} adaptive: round {rnd_no + 1}, "
                                  f"{launch.cells} cells next")

        results.append(adaptive.run(
            g, measure_fn, reps=reps, budget=fraction, progress=step,
            on_launch=lambda number, la, recs, g=g: on_launch(
                g.np, g.np, f"adaptive-np{g.np}-{number}", number, la, recs)))
        progress(sum(r.cells for r in results), None)
    cells = sum(r.cells for r in results)
    launches = sum(len(r.launches) for r in results)
    meta["adaptive"] = (f"{cells} of {exhaustive} cells ({100 * fraction:g}% budget), "
                        f"{launches} launches")
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
    return Outcome(rs, ch, cells, launches, sum(r.rounds for r in results), exhaustive,
                   d.total, notes)


def _run_exact(d: Design, on_launch: OnLaunch, meta: dict, progress: Progress) -> Outcome:
    """The exact loop (tuning.exact): every process count and layout, one model, one
    repetition a cell (simulated)."""
    grid, plat = d.grid, d.platform
    sim = exact.sim_measure(d.build, plat, grid.collective)
    count = [0]

    def measure(la):
        recs = sim(la)
        on_launch(la.np, la.ppn, f"exact-np{la.np}-ppn{la.ppn}-{count[0]}", count[0], la, recs)
        count[0] += 1
        return recs

    def step(used, allowed, la, rnd_no):
        progress(used, f"{grid.collective} np={la.np} ppn={la.ppn} exact adaptive: round "
                       f"{rnd_no + 1}, {la.cells} cells next")

    res = exact.run(grid, measure, budget=d.fraction,
                    prior=exact.platform_prior(grid, d.build, plat), progress=step)
    progress(res.cells, None)
    meta["platform"] = plat.name
    meta["adaptive"] = (f"{res.cells} of {grid.exhaustive_cells()} cells "
                        f"({100 * d.fraction:g}% budget), {len(res.launches)} launches, "
                        "simulated (exact)")
    ch = exact.choices(grid, res.values)
    rs = exact.rules(ch, meta)
    notes = [f"exact adaptive (simulated on {plat.name}): {res.cells} of {d.total} budget "
             f"cells ({grid.exhaustive_cells()} exhaustive), {len(res.launches)} launches, "
             f"{res.rounds} rounds ({res.stopped}); {len(ch)} of {len(grid.points)} points "
             "settled (native and another candidate simulated), the rules' interpolation "
             "elsewhere"]
    return Outcome(rs, ch, res.cells, len(res.launches), res.rounds, grid.exhaustive_cells(),
                   d.total, notes)
