"""mpi.backend: what a build's backend can do (the upper layers ask it instead of
testing `simulated`), and tuning.measured: the one entry point of `tune --measure`
that picks the engine (exact or adaptive) from the backend."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from colltune.drivers import verify
from colltune.mpi.backend import MEASURED, SIMULATED, backend_for
from colltune.mpi.platforms import resolve
from colltune.tuning import adaptive, exact, measured
from colltune.tuning.adaptive import AdaptiveError

from test_adaptive import GRID, fake_measure


def _build(simulated: bool):
    return SimpleNamespace(mpi=SimpleNamespace(simulated=simulated, kind="x", version="1"))


def test_the_backend_answers_from_the_build():
    sim, real = backend_for(_build(True)), backend_for(_build(False))
    assert sim is SIMULATED and real is MEASURED and backend_for(None) is MEASURED
    assert backend_for(_build(True).mpi) is SIMULATED  # an MPI itself
    assert (sim.exact, sim.default_reps, sim.parallel_launches, sim.load_in_launch,
            sim.tuning_engine) == (True, 1, True, True, "exact")
    assert (real.exact, real.default_reps, real.parallel_launches, real.load_in_launch,
            real.tuning_engine) == (False, 3, False, False, "adaptive")
    assert sim.verify_families(verify.FAMILIES) == tuple(
        f for f in verify.FAMILIES if f not in ("inter", "mixed"))
    assert real.verify_families(verify.FAMILIES) == verify.FAMILIES
    with pytest.raises(dataclasses.FrozenInstanceError):
        sim.exact = False  # one answer per backend


def test_the_tuning_entry_point_picks_the_engine_from_the_backend():
    assert measured.engine_for(_build(True)) == "exact"
    assert measured.engine_for(_build(False)) == "adaptive"
    plat = resolve("flat")
    d = measured.design(_build(True), "bcast", ("native", "binomial", "linear"), [2, 4],
                        (8, 1024, 65536), fraction=0.5, reps=4, platform=plat,
                        ppns={2: [1], 4: [1]})
    assert d.engine == "exact" and d.reps == 1 and len(d.grid.points) == 6 and not d.grids
    assert d.total == exact.budget_cells(d.grid, 0.5) and d.platform is plat
    with pytest.raises(AdaptiveError, match="its nodes have 1 cores"):  # checked up front
        measured.design(_build(True), "bcast", ("native", "binomial"), [4], (8,),
                        fraction=0.5, reps=1, platform=plat, ppns={4: [2]})
    d = measured.design(_build(False), "bcast", GRID.candidates, [2], GRID.sizes,
                        fraction=0.2, reps=4)
    assert d.engine == "adaptive" and [g.np for g in d.grids] == [2] and d.grid is None
    assert d.total == adaptive.budget_cells(d.grids[0], 4, 0.2)
    with pytest.raises(AdaptiveError):  # below the initial design: refused before measuring
        measured.design(_build(False), "bcast", GRID.candidates, [2], GRID.sizes,
                        fraction=0.01, reps=4)


def test_the_adaptive_engine_through_the_entry_point_is_the_loop_itself():
    """measured.run (adaptive) gives what adaptive.run gives on the same measurements,
    hands every launch to on_launch and reports the cells spent."""
    d = measured.Design("adaptive", None, "bcast", 0.2, 4,
                        adaptive.budget_cells(GRID, 4, 0.2), grids=[GRID],
                        measures=[fake_measure(seed=3)])
    launches, seen = [], []
    out = measured.run(d, on_launch=lambda *a: launches.append(a), study="s", round=1,
                       mpi="x 1", progress=lambda done, text: seen.append(done))
    ref = adaptive.run(GRID, fake_measure(seed=3), reps=4, budget=0.2)
    assert out.cells == ref.cells <= out.total and out.launches == len(launches)
    assert [a[2] for a in launches] == [f"adaptive-np2-{i}" for i in range(out.launches)]
    for s in GRID.sizes:
        assert (out.rules.lookup("bcast", 2, s).algorithm
                == adaptive.final_rules(ref).lookup("bcast", 2, s).algorithm)
    assert seen[-1] == out.cells and seen == sorted(seen)
    assert out.rules.meta["study"] == "s" and "launches" in out.rules.meta["adaptive"]
    assert out.notes and out.notes[0].startswith("adaptive np=2:")
