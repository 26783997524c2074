"""colltune.adaptive (tune --measure): the loop on a synthetic latency function (finds
the best within the budget, never exceeds it), bad budgets, and one real
`colltune tune --measure` through the command line."""

from __future__ import annotations

import json
import math
import os
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

from colltune.tuning import adaptive
from colltune.rules import ruleset as rules
from colltune.tuning import tune
from colltune.tuning.adaptive import AdaptiveError, Grid, Launch

SIZES = tuple(2 ** i for i in range(0, 21))  # 21 sizes


def true_us(c: str, s: int) -> float:
    """Three algorithms with two crossovers; native 10 % above the best below 4 KiB,
    close to `tree` (10 % better) in between, far behind `pipe` at the largest sizes."""
    lin, tree, pipe = 1 + s / 1000, 5 + s / 4000, 20 + s / 10000
    if c == "native":
        return 1.1 * min(lin, tree, pipe) if s < 4096 else 0.9 * tree
    return {"lin": lin, "tree": tree, "pipe": pipe}[c]


def fake_measure(noise=0.03, seed=1, log=None):
    rng = np.random.default_rng(seed)

    def measure(la: Launch) -> list[dict]:
        if log is not None:
            log.append(la)
        return [{"collective": "bcast", "algorithm": c, "spec": c, "params": "", "np": 2,
                 "size": s, "median_us": true_us(c, s) * float(np.exp(rng.normal(0, noise))),
                 "candidate": c} for s in la.sizes for c in la.algos]
    return measure


GRID = Grid("bcast", ("native", "lin", "tree", "pipe"), SIZES, 2, 2)


def true_regret(rs) -> list[float]:
    out = []
    for s in SIZES:
        chosen = rs.lookup("bcast", 2, s).algorithm
        out.append(true_us(chosen, s) / min(true_us(c, s) for c in GRID.candidates))
    return out


def test_finds_the_true_best_at_most_sizes_within_a_fifth_of_the_cells():
    log: list[Launch] = []
    res = adaptive.run(GRID, fake_measure(log=log), reps=4, budget=0.20)
    allowed = math.floor(0.20 * 4 * 21 * 4)
    assert res.budget == allowed
    assert res.cells == sum(la.cells for la in log) <= allowed
    assert res.cells >= allowed - 1  # the budget is spent, not left over
    assert len(res.frame) == res.cells  # one stored measurement per cell
    rs = adaptive.final_rules(res)
    reg = true_regret(rs)
    best = sum(r <= 1.0 + 1e-12 for r in reg)
    assert best >= 16, reg  # the true best at >= 16 of 21 sizes
    assert math.exp(np.mean(np.log(reg))) < 1.03
    assert max(reg) < 1.15
    # the crossovers are found: lin at the smallest sizes, pipe at the largest
    assert rs.lookup("bcast", 2, 1).algorithm == "lin"
    assert rs.lookup("bcast", 2, 1 << 20).algorithm == "pipe"


def test_never_more_than_reps_of_a_cell_and_never_over_the_budget():
    for budget in (0.15, 0.33, 0.5, 1.0):
        log: list[Launch] = []
        res = adaptive.run(GRID, fake_measure(log=log, seed=3), reps=3, budget=budget)
        assert res.cells <= math.floor(budget * GRID.exhaustive_cells(3))
        counts = res.frame.groupby(["candidate", "size"]).size()
        assert counts.max() <= 3
        assert all(la.cells >= 1 and set(la.algos) <= set(GRID.candidates) for la in log)


def test_the_budget_ends_exactly_when_a_launch_would_overflow_it():
    # 4 candidates x 21 sizes x 4 = 336 cells; 7 % = 23 cells: initial design 4 x 2 x 2 = 16
    log: list[Launch] = []
    res = adaptive.run(GRID, fake_measure(log=log), reps=4, budget=0.07)
    assert res.budget == 23
    assert res.cells <= 23 and res.cells >= 22
    assert res.stopped


@pytest.mark.parametrize("text, value", [("20%", 0.2), ("20", 0.2), (" 5.5 % ", 0.055),
                                         ("100%", 1.0)])
def test_budget_parses(text, value):
    assert adaptive.parse_budget(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["0%", "0", "-5%", "150%", "abc", "", "20%%"])
def test_bad_budgets_error_clearly(text):
    with pytest.raises(AdaptiveError, match="budget"):
        adaptive.parse_budget(text)


def test_a_budget_below_the_initial_design_is_refused_before_measuring():
    calls = []
    with pytest.raises(AdaptiveError, match=r"raise the budget to at least"):
        adaptive.run(GRID, lambda la: calls.append(la) or [], reps=4, budget=0.02)
    assert calls == []


def test_bad_grids_and_repetitions():
    with pytest.raises(AdaptiveError, match="at least two"):
        Grid("bcast", ("native",), (1, 2), 2)
    with pytest.raises(AdaptiveError, match="ascending"):
        Grid("bcast", ("native", "lin"), (8, 1), 2)
    with pytest.raises(AdaptiveError, match="repetitions"):
        adaptive.run(GRID, fake_measure(), reps=1, budget=0.5)


def test_rules_cover_every_size_and_native_keeps_ties():
    # every candidate the same as native: nothing beats the default anywhere
    g = Grid("bcast", ("native", "a", "b"), (1, 64, 4096, 1 << 18), 2, 2)
    rng = np.random.default_rng(0)

    def flat(la):
        return [{"collective": "bcast", "algorithm": c, "spec": c, "params": "", "np": 2,
                 "size": s, "median_us": 10.0 * float(np.exp(rng.normal(0, 0.02))),
                 "candidate": c} for s in la.sizes for c in la.algos]
    res = adaptive.run(g, flat, reps=4, budget=0.75)
    rs = adaptive.final_rules(res)
    assert [r.algorithm for r in rs.rules] == ["native"]
    pts, summary = tune.quality(res.frame, rs)
    assert summary.iloc[0]["points"] >= 2


# ------------------------------------------------------------------ real, through the CLI


def _cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "colltune", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, COLUMNS="200"))


def test_tune_measure_end_to_end(tmp_path, ompi_build):
    dbp, out = tmp_path / "r.db", tmp_path / "a.rules"
    args = ["tune", "--db", dbp, "--measure", "--coll", "bcast", "--np", "1,2",
            "--size", "8,1K,64K", "--algo", "native,binomial,linear", "--target", "colltune",
            "--reps", "4", "--iterations", "30", "-o", out]
    res = _cli(*args, "--budget", "60%", "--format", "json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    # two process counts, each its own loop and budget
    assert data["exhaustive_cells"] == 2 * 3 * 3 * 4
    assert data["cells"] <= data["budget_cells"] == 2 * math.floor(0.6 * 36)
    rs = rules.read(out)
    assert rs.target == "colltune" and rs.meta["study"] == "tune-adaptive-bcast"
    for np_ in (1, 2, 3):
        for size in (0, 8, 1024, 65536, 1 << 30):
            assert rs.lookup("bcast", np_, size).algorithm in {"native", "binomial", "linear"}
    assert {c["np"] for c in data["choices"]} == {1, 2}
    con = sqlite3.connect(dbp)
    n = con.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
    units = con.execute("SELECT COUNT(*) FROM units").fetchone()[0]
    unit_nps = {r[0] for r in con.execute("SELECT DISTINCT np FROM units")}
    con.close()
    assert n == data["cells"] and units == data["launches"] and unit_nps == {1, 2}
    # the stored study can be tuned again like any other
    res = _cli("tune", "--db", dbp, "--study", "tune-adaptive-bcast", "--target", "colltune",
               "-o", tmp_path / "b.rules")
    assert res.returncode == 0, res.stderr
    # bad input: a clear error, nothing launched
    res = _cli(*args, "--budget", "0%")
    assert res.returncode == 2 and "budget" in res.stderr
    res = _cli(*args, "--budget", "1%")
    assert res.returncode == 2 and "raise the budget" in res.stderr
    res = _cli("tune", "--db", dbp, "--measure", "--coll", "bcast", "--target", "colltune",
               "-o", out)
    assert res.returncode == 2 and "--np" in res.stderr and "--budget" in res.stderr
    # a sweep's study is not overwritten by --measure --study
    from colltune.results import db
    from colltune.results import store
    con = db.open_db(dbp)
    store.upsert_study(con, "mysweep", {"name": "mysweep"})
    con.close()
    res = _cli(*args, "--budget", "60%", "--study", "mysweep")
    assert res.returncode == 2 and "not measured by colltune tune --measure" in res.stderr


def test_two_repetitions_write_only_native_even_where_a_candidate_is_twice_as_fast():
    # pipe is about 2x faster than native at 1 MiB, lin 10 % at small sizes: two
    # repetitions cannot support either, and the model's predictions conclude nothing
    g = Grid("bcast", ("native", "lin", "tree", "pipe"), SIZES[::4], 2, 2)
    res = adaptive.run(g, fake_measure(seed=1), reps=2, budget=1.0)
    pred = res.prediction
    assert g.candidates[int(pred.best()[-1])] == "pipe"  # the model does see it
    rs = adaptive.final_rules(res)
    assert [r.algorithm for r in rs.rules] == ["native"]


def test_every_non_native_rule_rests_on_sizes_the_evidence_test_settled():
    res = adaptive.run(GRID, fake_measure(seed=3), reps=4, budget=0.20)
    ch = adaptive.final_choices(res)
    ev = adaptive.evidence_of(GRID, res.frame, reps=4)
    sizes = list(GRID.sizes)
    for r in ch.to_dict("records"):
        if r["best"] == "native":
            continue
        assert r["how"] in ("tested", "between")
        if r["how"] == "tested":
            assert ev.tested[r["size"]] == r["best"]
        else:  # settled sizes of the same choice on both sides
            i = sizes.index(r["size"])
            left = [ev.tested[s] for s in sizes[:i] if s in ev.tested]
            right = [ev.tested[s] for s in sizes[i + 1:] if s in ev.tested]
            assert left[-1] == right[0] == r["best"]
    assert (ch["best"] != "native").any()  # lin and pipe do win somewhere
