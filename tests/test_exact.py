"""Tuning where a measurement is exact (simulation): evidence's exact comparisons,
tune's choices from one repetition of simulated points, and the adaptive loop over
process counts and layouts (colltune.tuning.exact) on a synthetic deterministic grid."""

import math

import numpy as np
import pandas as pd
import pytest

from colltune.analysis import evidence
from colltune.tuning import exact, tune
from colltune.tuning.adaptive import AdaptiveError
from colltune.tuning.exact import Grid, Launch, Point

SIZES = (8, 64, 512, 4096, 32768, 262144, 2097152)
NPS = (16, 64, 256)
PPNS = (2, 8)
CANDS = ("native", "small", "large", "mid", "slow")


def truth(c: str, p: Point) -> float:
    """Deterministic times: `small` wins small sizes, `large` large ones, `mid`
    between them on 8 a node only (a node-aware choice), `slow` never."""
    n, s = math.log2(p.np), p.size
    base = {"native": 10 * n + s / 100, "small": 4 * n + s / 40,
            "large": 30 * n + s / 400, "slow": 40 * n + s / 50}
    if c == "mid":
        return (12 * n + s / 300) * (0.5 if p.ppn == 8 else 2.0)
    return base[c]


def grid() -> Grid:
    return Grid("bcast", CANDS, tuple(Point(n, q, s) for n in NPS for q in PPNS for s in SIZES))


def measure(calls: list):
    def m(la: Launch):
        calls.append(la)
        return [{"candidate": c, "size": s, "median_us": truth(c, Point(la.np, la.ppn, s))}
                for c in la.algos for s in la.sizes]
    return m


def regret(g: Grid, rs) -> list[float]:
    lab = {exact.label(c): c for c in g.candidates}
    out = []
    for p in g.points:
        r = rs.lookup(g.collective, p.np, p.size, ppn=p.ppn)
        c = lab.get(r.spec, "native") if r else "native"
        out.append(truth(c, p) / min(truth(x, p) for x in g.candidates))
    return out


def test_exact_comparison_decides_from_one_value():
    v = evidence.compare([10.0], [10.5], exact=True)
    assert v.outcome == "faster" and v.level == "exact (simulated)"
    assert "deterministic simulation" in v.text()
    assert evidence.compare([10.0], [10.005], exact=True).outcome == "tie"
    assert evidence.compare([11.0], [10.0], exact=True).outcome == "slower"
    assert evidence.compare([], [10.0], exact=True).outcome == "insufficient"
    # the same single values measured (not exact): no conclusion
    assert evidence.compare([10.0], [10.5]).outcome == "insufficient"


def _frame(simulated: int) -> pd.DataFrame:
    rows = []
    for alg, us in (("native", 10.0), ("binomial", 8.0), ("linear", 9.99)):
        rows.append({"collective": "bcast", "np": 16, "size": 8, "algorithm": alg, "params": "",
                     "median_us": us, "simulated": simulated, "unit_id": 0, "run_id": 0,
                     "round": 1, "repetition": 0})
    return pd.DataFrame(rows)


def test_simulated_points_choose_from_one_repetition():
    p = tune.prepare(_frame(1), "colltune")
    assert p.exact and any("deterministic" in n for n in p.notes)
    assert tune.choices(p)["best"].tolist() == ["binomial"]
    rs = tune.select(_frame(1), "colltune")
    assert rs.lookup("bcast", 16, 8).algorithm == "binomial"
    # measured with one repetition: native kept (the evidence test cannot conclude)
    assert not tune.prepare(_frame(0), "colltune").exact
    assert tune.select(_frame(0), "colltune").lookup("bcast", 16, 8).algorithm == "native"


def test_adaptive_loop_keeps_its_budget_and_decides_from_simulations_only():
    g = grid()
    calls: list = []
    res = exact.run(g, measure(calls), budget=0.4, seed=1)
    assert res.cells <= exact.budget_cells(g, 0.4) == int(0.4 * len(CANDS) * len(g.points))
    assert res.cells == sum(la.cells for la in calls) and len(calls) == len(res.launches)
    assert all(la.cells > 0 for la in calls)
    ch = exact.choices(g, res.values)
    # every choice is the fastest simulated at its point (native within EXACT_TOL)
    for r in ch.to_dict("records"):
        p = Point(int(r["np"]), int(r["ppn"]), int(r["size"]))
        simulated = {c: v for (c, q), v in res.values.items() if q == p}
        assert "native" in simulated and len(simulated) >= 2
        assert exact.label(min(simulated, key=simulated.get)) == r["best"]
    # the rules carry the layouts (ppn) and are near the oracle on this smooth grid
    rs = exact.rules(ch)
    assert any(r.ppn is not None for r in rs.rules)
    reg = regret(g, rs)
    gm = math.exp(sum(map(math.log, reg)) / len(reg))
    assert gm < 1.05, f"adaptive regret {gm:.3f} on the synthetic grid"
    # at 20 % (one cell a point with 5 candidates) still far better than the default
    res = exact.run(g, measure([]), budget=0.2, seed=1)
    reg = regret(g, exact.rules(exact.choices(g, res.values)))
    nat = [truth("native", p) / min(truth(c, p) for c in CANDS) for p in g.points]
    assert math.prod(reg) ** (1 / len(reg)) < 0.6 * math.prod(nat) ** (1 / len(nat))
    # exhaustive: the oracle itself (ties within EXACT_TOL aside)
    full = {(c, p): truth(c, p) for c in CANDS for p in g.points}
    assert max(regret(g, exact.rules(exact.choices(g, full)))) < 1 + 1e-9


def test_node_unaware_rules_lose_where_layouts_differ():
    g = grid()
    full = {(c, p): truth(c, p) for c in CANDS for p in g.points}
    aware = regret(g, exact.rules(exact.choices(g, full)))
    pooled = regret(g, exact.rules(exact.choices(g, full, pool_layouts=True)))
    assert max(aware) < 1 + 1e-9 and max(pooled) > 1.2
    assert all(r.ppn is None for r in exact.rules(exact.choices(g, full, pool_layouts=True)).rules)


def test_initial_design_and_budget_errors():
    g = grid()
    allowed = exact.budget_cells(g, 0.2)
    first = exact.initial_launches(g, allowed)
    assert sum(la.cells for la in first) <= exact.INITIAL_SHARE * allowed
    assert {(la.np, la.ppn) for la in first} <= {(16, 2), (16, 8), (256, 2), (256, 8)}
    assert all(la.algos == CANDS for la in first)
    # the initial design leaves the loop 2 cells a point where the budget has them
    rich = exact.budget_cells(g, 0.6)                       # 126 cells, 42 points
    cells = [sum(la.cells for la in exact.initial_launches(g, rich, reserve=r))
             for r in (0, exact.RESERVE)]
    assert cells == [60, 40] and cells[1] <= rich - exact.RESERVE * len(g.points)
    # where it has not, the least design: every candidate at the largest layout's middle
    least = exact.initial_launches(g, allowed, reserve=exact.RESERVE)
    assert [(la.np, la.ppn, la.sizes) for la in least] == [(256, 8, (4096,))]
    # the loop keeps the reserve where it has a prior (the candidates' shapes), not without
    prior = [[math.nan if c == "native" else math.log(truth(c, p)) for c in CANDS]
             for p in g.points]
    for pr, want in ((None, first), (prior, least)):
        calls: list = []
        exact.run(g, measure(calls), budget=0.2, seed=1,
                  prior=None if pr is None else np.array(pr))
        assert calls[:len(want)] == want
    with pytest.raises(AdaptiveError, match="budget"):
        exact.run(g, measure([]), budget=0.005)
    with pytest.raises(AdaptiveError, match="native"):
        Grid("bcast", ("small", "large"), g.points)
    assert exact.label("chain:segsize=16K,fanout=2") == "chain:fanout=2,segsize=16K"


def test_tune_quality_sim_benchmark_runs_a_small_grid(tmp_path, smpi_build):
    """lab/scripts/tune_quality_sim.py end to end on a tiny simulated grid: the exhaustive
    rules are the oracle in-sample, the adaptive ones keep the budget, the re-simulated
    launch equals the table (deterministic)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "tq.json"
    cmd = [sys.executable, str(root / "lab" / "scripts" / "tune_quality_sim.py"),
           "--platforms", "tapems-16x12", "--np", "4,8", "--ppn", "1,2", "--coll", "allreduce",
           "--size", "8,1K,64K,1M", "--jobs", "2",
           "--cache", str(tmp_path / "cells.json"), "--json", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "SIMULATED" in res.stdout and "node-aware vs best node-unaware" in res.stdout
    assert "exhaustive rules held out: within the goal in" in res.stdout
    (r,) = json.loads(out.read_text())["results"]
    rows = {(x["method"], x["evaluation"]): x for x in r["rows"]}
    assert rows[("exhaustive", "in-sample")]["regret_gmean"] == pytest.approx(1.0, abs=1e-3)
    ad = rows[("adaptive", "in-sample")]
    assert 0 < ad["cells"] <= 0.2 * r["exhaustive_cells"]
    assert rows[("native (SMPI default)", "in-sample")]["vs_default_gmean"] == 1.0
    assert {e for _, e in rows} == {"in-sample", "leave-one-np-out", "leave-one-layout-out"}
    # the oracle's cells: 2 a point (16 points), the oracle in-sample, and held out
    orc = rows[("oracle's cells (bound)", "in-sample")]
    assert orc["cells"] == 2 * 16 and orc["regret_gmean"] == pytest.approx(1.0, abs=1e-3)
    assert ("oracle's cells (bound)", "leave-one-np-out") in rows
    assert r["check_max_rel_diff"] < 1e-3
    # a second run reads every cell back from the cache: nothing simulated
    res2 = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert res2.returncode == 0 and "launches simulated" in res2.stdout
    assert json.loads(out.read_text())["results"][0]["simulated_launches"] == 0


def test_tune_measure_simulated_covers_every_count_and_layout(tmp_path, smpi_build):
    """colltune tune --measure --mpi smpi: one exact loop over the process counts and
    layouts, stored as a study (simulated points), rules with ppn ranges."""
    import json
    import os
    import sqlite3
    import subprocess
    import sys

    from colltune.rules import ruleset

    dbp, out = tmp_path / "s.db", tmp_path / "s.rules"
    args = [sys.executable, "-m", "colltune", "tune", "--db", str(dbp), "--measure",
            "--mpi", "smpi", "--platform", "tapems-16x12", "--coll", "allreduce",
            "--np", "4,8", "--ppn", "1,2", "--size", "8,1K,64K,1M",
            "--algo", "native,recursive_doubling,ring,rabenseifner,basic_linear",
            "--target", "colltune", "-o", str(out)]
    env = {**os.environ, "COLLTUNE_NO_PROGRESS": "1"}
    res = subprocess.run(args + ["--budget", "50%", "--format", "json"], capture_output=True,
                         text=True, timeout=900, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    data = json.loads(res.stdout)
    assert data["exhaustive_cells"] == 5 * 2 * 2 * 4
    assert 0 < data["cells"] <= data["budget_cells"] == 40
    assert "exact adaptive (simulated on tapems-16x12)" in res.stderr
    rs = ruleset.read(out)
    assert rs.meta["platform"] == "tapems-16x12"
    assert {r.ppn for r in rs.rules} == {(1, 1), (2, None)}
    con = sqlite3.connect(dbp)
    n, sim = con.execute("SELECT COUNT(*), SUM(simulated) FROM measurements").fetchone()
    layouts = set(con.execute("SELECT DISTINCT np, ppn FROM units"))
    con.close()
    assert n == sim == data["cells"] and layouts <= {(4, 1), (4, 2), (8, 1), (8, 2)}
    # bad layouts and options: a clear error before anything runs
    res = subprocess.run(args[:args.index("--ppn") + 1] + ["3"] + args[args.index("--ppn") + 2:]
                         + ["--budget", "50%"], capture_output=True, text=True, env=env)
    assert res.returncode == 2 and "multiple of ppn" in res.stderr
    res = subprocess.run([a for a in args if a not in ("--mpi", "smpi", "--platform",
                                                       "tapems-16x12")] + ["--budget", "50%"],
                         capture_output=True, text=True, env=env)
    assert res.returncode == 2 and "--ppn" in res.stderr


def test_the_terminal_and_report_table_agree_with_tune_on_simulated_points():
    """points.best_table (colltune results, the report) and load's per-level table
    decide simulated points exactly too: the same choice as tune."""
    from colltune.analysis import points

    sim = _frame(1)
    assert evidence.is_exact(sim) and not evidence.is_exact(_frame(0))
    assert not evidence.is_exact(pd.concat([_frame(1), _frame(0)]))
    tab = points.best_table(sim)
    assert tab["best"].tolist() == ["binomial"] and "exact" in tab["level"].iloc[0]
    assert points.best_table(_frame(0))["best"].tolist() == ["native"]
