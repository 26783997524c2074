"""Cost models: the safe formula evaluator, α/β/γ fits, predictions and selection."""

import math

import numpy as np
import pandas as pd
import pytest

from colltune.analysis import costmodel as cm
from colltune.drivers import gamma as gamma_driver


# ---------------------------------------------------------------------------- evaluator

@pytest.mark.parametrize("text, values, expected", [
    ("(p-1)*(a + n*b)", dict(p=4, n=100, a=1, b=0.5), 153.0),
    ("ceil(log2(p))*ceil(n/s)*(a + s*b)", dict(p=5, n=10, s=4, a=1, b=1), 3 * 3 * 5),
    ("2*max(0, ceil(log2(p+1)) + ceil(n/s) - 2)*(a + s*b)", dict(p=1, n=1, s=1, a=1, b=0), 0.0),
    ("floor(log2(p))", dict(p=9), 3.0),
    ("min(k, p-1)", dict(k=4, p=3), 2.0),
    ("-a + +b", dict(a=1, b=3), 2.0),
    ("p**2 / 4", dict(p=6), 9.0),
    ("2*(p-1)/p*n*b + (p-1)/p*n*g", dict(p=4, n=8, b=1, g=0.5), 12 + 3),
])
def test_evaluate_known_values(text, values, expected):
    assert cm.evaluate(text, **values) == pytest.approx(expected)


def test_integer_rounding_is_exact_where_floating_point_is_not():
    # log2(243)/log2(3) = 5.000000000000001 in double precision (docs/cost-model.md)
    assert math.log2(243) / math.log2(3) > 5
    assert cm.evaluate("ceil(log2(p)/log2(k))", p=243, k=3) == 5
    assert cm.evaluate("ceil(n/s)", n=8193, s=8192) == 2
    assert cm.evaluate("ceil(n/s)", n=2**30 + 1, s=2**30) == 2
    assert cm.evaluate("floor(log2(p))", p=2**20 - 1) == 19


@pytest.mark.parametrize("text", [
    "__import__('os').system('true')", "a.__class__", "open('x')", "p if p else n",
    "[p]", "{p: 1}", "lambda: 1", "x + 1", "ceil(p, n)", "min(p)", "log2()", "'s'", "True + 1",
    "p < n", "p and n", "p; n", "p = 1", "print(p)", "f'{p}'", "p[0]", "ceil(*[p])",
    "max(p, key=n)", "2**2**2**2**2", "p // 2", "p % 2", "~p", "", "   ", "a" * 3000,
    "(" * 300 + "p" + ")" * 300, "math.log2(p)", "log2",
])
def test_unsafe_or_foreign_expressions_are_rejected(text):
    with pytest.raises(cm.FormulaError):
        cm.evaluate(text, p=4, n=8, a=1, b=1, k=2)


def test_evaluation_errors_are_formula_errors():
    with pytest.raises(cm.FormulaError, match="division by zero"):
        cm.evaluate("n/s", n=1, s=0)
    with pytest.raises(cm.FormulaError, match="log2"):
        cm.evaluate("log2(p-1)", p=1)
    with pytest.raises(cm.FormulaError, match="no value"):
        cm.evaluate("p + n", p=1)
    with pytest.raises(cm.FormulaError, match="unknown variable"):
        cm.evaluate("p", p=1, z=2)
    with pytest.raises(cm.FormulaError):
        cm.evaluate("p**1000", p=1e10)


# ---------------------------------------------------------------------------- variables

BCAST_CHAIN = {"name": "chain", "collective": "bcast",
               "cost": "(min(k,p-1)*ceil(n/s) + ceil((p-1)/min(k,p-1)) - 1)*(a + s*b)",
               "params": [{"name": "segsize", "default": 8192}, {"name": "fanout", "default": 4}]}
KNOMIAL = {"name": "knomial", "collective": "bcast",
           "cost": "(k-1)*ceil(log2(p)/log2(k) - 1e-9)*ceil(n/s)*(a + s*b)",
           "params": [{"name": "radix", "default": 4}, {"name": "segsize", "default": 0}]}
GATHER_LINEAR = {"name": "linear", "collective": "gather", "cost": "(p-1)*(a + n/p*b)",
                 "params": []}
REDUCE_BINOMIAL = {"name": "binomial", "collective": "reduce",
                   "cost": "ceil(log2(p))*ceil(n/s)*(a + s*b + s*g)",
                   "params": [{"name": "segsize", "default": 0}]}
BCAST_BINOMIAL = {"name": "binomial", "collective": "bcast",
                  "cost": "ceil(log2(p))*ceil(n/s)*(a + s*b)",
                  "params": [{"name": "segsize", "default": 0}]}
BCAST_LINEAR = {"name": "linear", "collective": "bcast", "cost": "(p-1)*(a + n*b)", "params": []}
NATIVE = {"name": "native", "collective": "bcast", "cost": None, "params": []}
ALLGATHER_RING = {"name": "ring", "collective": "allgather",
                  "cost": "(p-1)*a + (p-1)/p*n*b", "params": []}
ALLGATHER_TWO = {"name": "two_proc", "collective": "allgather", "cost": "a + n/2*b",
                 "params": []}


def test_formula_variables_follow_the_cost_model_rules():
    v = cm.formula_variables(BCAST_CHAIN, p=3, size=100_000)
    assert v == {"p": 3, "n": 100_000, "s": 8192, "k": 2}  # k = min(fanout, p-1)
    v = cm.formula_variables(BCAST_CHAIN, p=8, size=100, params={"segsize": "0"})
    assert v["s"] == 100 and v["k"] == 4  # segsize 0: one segment
    v = cm.formula_variables(BCAST_CHAIN, p=8, size=100_000, elem=8,
                             params={"segsize": "8190", "fanout": "2"})
    assert v["s"] == 8184 and v["k"] == 2  # Bcast: bytes, cut on 8-byte units (8 | n)
    v = cm.formula_variables(BCAST_CHAIN, p=8, size=100_002, params={"segsize": "8191"})
    assert v["s"] == 8190  # n = 100002: 2-byte units
    reduce_chain = dict(BCAST_CHAIN, collective="reduce")
    v = cm.formula_variables(reduce_chain, p=8, size=100_000, elem=8,
                             params={"segsize": "8190", "fanout": "2"})
    assert v["s"] == 8184  # Reduce: whole elements, floor(8190/8)*8
    v = cm.formula_variables(BCAST_CHAIN, p=8, size=100, params={"segsize": "16k"})
    assert v["s"] == 100  # at most the message
    assert cm.formula_variables(KNOMIAL, p=9, size=10, params={"radix": "3"})["k"] == 3
    assert cm.formula_variables(GATHER_LINEAR, p=4, size=10)["n"] == 40  # n = p * size


def test_predict_seconds_and_its_domain():
    assert cm.predict_seconds(BCAST_LINEAR, 4, 1000, 1e-6, 1e-9, 0) == pytest.approx(
        3 * (1e-6 + 1e-6))
    with pytest.raises(cm.FormulaError, match="no cost formula"):
        cm.predict_seconds(NATIVE, 4, 8, 1e-6, 1e-9, 0)
    with pytest.raises(cm.FormulaError, match="p >= 2"):
        cm.predict_seconds(BCAST_LINEAR, 1, 8, 1e-6, 1e-9, 0)
    with pytest.raises(cm.FormulaError, match="size 0"):
        cm.predict_seconds(BCAST_LINEAR, 2, 0, 1e-6, 1e-9, 0)


def test_every_registry_formula_evaluates_and_the_documented_example_holds(ompi_build):
    from colltune.drivers import registry

    algos = cm.algorithm_dicts(registry.algorithms(ompi_build))
    with_cost = [a for a in algos.values() if a["cost"]]
    assert len(with_cost) >= 30
    for a in with_cost:
        for p in (2, 3, 4, 7, 16, 243):
            for size in (1, 7, 1000, 1 << 20):
                t = cm.predict_seconds(a, p, size, 2e-6, 1e-10, 1e-10, elem=1)
                assert t >= 0 and math.isfinite(t), (a["name"], p, size)
    # docs/cost-model.md: Bcast of 1 MiB on 16 processes, alpha 2 us, beta 0.1 ns/byte
    us = {n: cm.predict_seconds(a, 16, 2**20, 2e-6, 1e-10, 0) * 1e6
          for (c, n), a in algos.items() if c == "bcast" and a["cost"]}
    assert us["scatter_allgather"] == pytest.approx(212.6, abs=0.1)
    assert us["linear"] == pytest.approx(1602.9, abs=0.1)
    assert min(us, key=us.get) == "scatter_allgather"
    assert max(us, key=us.get) in ("linear", "linear_nb")


# ---------------------------------------------------------------------------- α, β, γ

def pingpong_records(alpha=2e-6, beta=1e-10, noise=0.01, seed=3):
    rng = np.random.default_rng(seed)
    recs = []
    for s in [0, 1, 8, 64, 512, 4096, 32768, 262144, 1 << 20, 4 << 20]:
        t = (alpha + beta * s) * (1 + rng.normal(0, noise))
        recs.append({"kind": "pingpong", "np": 2, "size": s, "median_us": t * 1e6,
                     "min_us": t * 1e6 * 0.98, "max_us": t * 1e6 * 1.05})
    recs.append({"kind": "ring", "np": 4, "size": 8, "median_us": 99.0})  # ignored
    return recs


@pytest.mark.parametrize("weighting", ["relative", "absolute"])
def test_hockney_fit_recovers_alpha_and_beta(weighting):
    h = cm.fit_hockney(pingpong_records(), weighting=weighting)
    assert h.n == 10 and h.sizes[0] == 0 and h.sizes[-1] == 4 << 20
    assert h.r2 > 0.99
    if weighting == "relative":
        # small messages fix α, large ones β
        assert h.alpha == pytest.approx(2e-6, rel=0.02)
        assert h.beta == pytest.approx(1e-10, rel=0.03)
        assert h.bandwidth_MBps == pytest.approx(1e4, rel=0.03)
        assert not h.notes
    else:
        # plain least squares: the largest messages dominate, α is poorly determined
        assert h.beta == pytest.approx(1e-10, rel=0.05)


def test_hockney_fit_reads_json_files_and_needs_two_sizes(tmp_path):
    import json

    f = tmp_path / "pp.json"
    f.write_text(json.dumps(pingpong_records(noise=0)))
    h = cm.fit_hockney(f)
    assert h.alpha == pytest.approx(2e-6) and h.beta == pytest.approx(1e-10)
    with pytest.raises(cm.CostModelError, match="two sizes"):
        cm.fit_hockney([{"size": 8, "median_us": 1.0}])
    lg = cm.loggp_from_hockney(h)
    assert lg["L_plus_2o_s"] == h.alpha and lg["G_s_per_byte"] == h.beta
    assert lg["L_s"] is None and lg["o_s"] is None and lg["g_s"] is None


def model_measurements(alpha=2e-6, beta=1e-10, gamma=5e-10, nps=(2, 4, 8),
                       sizes=(8, 4096, 65536, 1 << 20), reps=2):
    """Measurements that are exactly the Hockney predictions of four algorithms."""
    rows = []
    for algo in (BCAST_LINEAR, BCAST_BINOMIAL, REDUCE_BINOMIAL):
        for p in nps:
            for s in sizes:
                t = cm.predict_seconds(algo, p, s, alpha, beta, gamma) * 1e6
                for r in range(reps):
                    rows.append(dict(collective=algo["collective"], algorithm=algo["name"],
                                     params="segsize=0" if "segsize" in str(algo["params"])
                                     else "", np=p, size=s, median_us=t, repetition=r,
                                     dtype="char", op="sum"))
    for p in nps:
        for s in sizes:
            rows.append(dict(collective="bcast", algorithm="native", params="", np=p, size=s,
                             median_us=1.0, repetition=0, dtype="char", op="sum"))
    return pd.DataFrame(rows)


ALGOS = {(a["collective"], a["name"]): a for a in
         (BCAST_LINEAR, BCAST_BINOMIAL, REDUCE_BINOMIAL, NATIVE, ALLGATHER_RING, ALLGATHER_TWO)}


def test_gamma_from_reduce_minus_bcast_at_two_processes():
    g = cm.gamma_from_measurements(model_measurements(gamma=5e-10))
    assert g.gamma == pytest.approx(5e-10, rel=1e-6)
    assert "np 2" in g.source and g.dtype == "char"
    with pytest.raises(cm.CostModelError):
        cm.gamma_from_measurements(model_measurements(nps=(4,)))


def test_gamma_slope_from_reduce_local_points():
    pts = [{"size": s, "median_us": (0.1e-6 + 3e-11 * s) * 1e6} for s in (1 << 14, 1 << 18,
                                                                         1 << 22)]
    g = cm.fit_gamma_points(pts, "test", "char", "sum")
    assert g.gamma == pytest.approx(3e-11, rel=1e-6)


def test_predictions_errors_and_selection_on_model_generated_data():
    df = model_measurements()
    params = cm.CostParams(2e-6, 1e-10, 5e-10)
    res = cm.run_model(df, ALGOS, params)
    pts = res["points"]
    modelled = pts.dropna(subset=["predicted_us"])
    assert len(modelled) == 3 * 3 * 4  # every point of the three algorithms, once
    assert modelled["rel_error"].abs().max() < 1e-9
    assert set(pts.loc[pts["algorithm"] == "native", "note"]) == {"no cost formula"}
    summ = res["by_collective"].set_index("collective")
    assert summ.loc["bcast", "points"] == 24 and summ.loc["reduce", "points"] == 12
    assert summ["median_abs_rel_error"].max() < 1e-9
    sel = res["selection"]
    bc = sel[sel["collective"] == "bcast"]
    assert len(bc) == 12 and (bc["measured_best"] == "native").all()  # native at 1 us
    assert bc["agree"].all() and (bc["slowdown"] == 1).all()
    # with twice the measured time for binomial, the model's pick becomes wrong
    df2 = df.copy()
    df2.loc[df2["algorithm"] == "binomial", "median_us"] *= 100
    sel2 = cm.run_model(df2, ALGOS, params)["selection"]
    wrong = sel2[(sel2["collective"] == "bcast") & (sel2["agree"] == False)]  # noqa: E712
    assert len(wrong) > 0 and (wrong["slowdown"] > 1).all()


def test_oversubscribed_points_are_left_out_unless_asked_for():
    df = model_measurements().assign(cores=4)
    df["ppn"] = df["np"]  # one node: np 8 on 4 cores is oversubscribed
    params = cm.CostParams(2e-6, 1e-10, 5e-10)
    res = cm.run_model(df, ALGOS, params)
    assert set(res["points"]["np"]) == {2, 4}
    assert len(res["model_notes"]) == 1 and "np 8" in res["model_notes"][0]
    kept = cm.run_model(df, ALGOS, params, include_oversubscribed=True)
    assert set(kept["points"]["np"]) == {2, 4, 8} and kept["model_notes"] == []
    # nothing but oversubscribed points: compared anyway, with a warning
    only = cm.run_model(df[df["np"] == 8], ALGOS, params)
    assert set(only["points"]["np"]) == {8} and "every point" in only["model_notes"][0]
    # without provenance nothing is dropped
    assert cm.oversubscribed(model_measurements()).sum() == 0


def test_fallback_uses_the_fallback_formula():
    df = pd.DataFrame([dict(collective="allgather", algorithm="two_proc", params="", np=4,
                            size=1000, median_us=10.0,
                            fallback="allgather/two_proc -> ring: the process count is not 2")])
    pts = cm.predict_points(df, ALGOS, cm.CostParams(1e-6, 1e-9, 0))
    ring = cm.predict_seconds(ALLGATHER_RING, 4, 1000, 1e-6, 1e-9, 0) * 1e6
    assert pts.loc[0, "predicted_us"] == pytest.approx(ring)
    assert pts.loc[0, "formula_of"] == "ring"


def test_resolve_params_without_mpi():
    df = model_measurements()
    p = cm.resolve_params(df, pingpong=pingpong_records(noise=0), gamma_mode="auto")
    assert p.alpha == pytest.approx(2e-6) and p.beta == pytest.approx(1e-10)
    assert p.gamma == pytest.approx(5e-10)  # from the database: no build to measure with
    assert p.gamma_info.source.startswith("database")
    d = p.to_dict()
    assert d["alpha_us"] == pytest.approx(2.0) and d["loggp"]["G_s_per_byte"] == p.beta
    with pytest.raises(cm.CostModelError, match="no ping-pong data"):
        cm.resolve_params(df)
    p = cm.resolve_params(df, alpha=1e-6, beta=1e-9, gamma=0.0)
    assert (p.alpha, p.beta, p.gamma, p.hockney) == (1e-6, 1e-9, 0.0, None)


def test_resolve_params_measures_through_what_it_is_given():
    """Measurements made now come in through callables (the drivers); a timer that
    fails leaves γ to the database in `auto` mode."""
    df = model_measurements()
    asked = []

    def pingpong(np):
        asked.append(("pingpong", np))
        return pingpong_records(noise=0)

    def timer(dtype, op):
        asked.append(("gamma", dtype, op))
        pts = [{"size": s, "median_us": 4e-10 * s * 1e6} for s in (1 << 16, 1 << 20)]
        return gamma_driver.GammaRun(pts, (1 << 16, 1 << 20), dtype, op, "colltune-gamma", [])

    p = cm.resolve_params(df, measure_pingpong=pingpong, measure_gamma=timer, measure_np=3)
    assert asked == [("pingpong", 3), ("gamma", "char", "sum")]
    assert p.alpha == pytest.approx(2e-6) and p.gamma == pytest.approx(4e-10)
    assert p.hockney.source.endswith("(np 3)") and p.gamma_info.command == "colltune-gamma"

    def broken(dtype, op):
        raise gamma_driver.GammaError("colltune-gamma failed (1): boom")

    p = cm.resolve_params(df, alpha=1e-6, beta=1e-9, measure_gamma=broken)
    assert p.gamma_info.source.startswith("database")
    with pytest.raises(cm.CostModelError, match="boom"):
        cm.resolve_params(df, alpha=1e-6, beta=1e-9, measure_gamma=broken, gamma_mode="measure")


def test_gamma_measured_with_reduce_local(ompi_build):
    run = gamma_driver.measure_gamma(ompi_build, "double", "sum",
                                     sizes=(1 << 16, 1 << 20, 1 << 22))
    assert run.command and "colltune-gamma" in run.command
    g = cm.gamma_from_timer(run)
    assert g.gamma > 0 and len(g.points) == 3
    assert all(p["median_us"] > 0 for p in g.points)
    assert g.points[-1]["median_us"] > g.points[0]["median_us"]


def test_copies_timed_with_their_data_in_memory(ompi_build):
    """colltune-gamma's pool: each call takes the next pair of buffers of a pool larger
    than the caches. The records say the pool's size, and a 1 MiB copy from memory is
    not faster than the same copy on one pair of buffers in the cache (3.5x slower on
    the development VM)."""
    cached = gamma_driver.measure_gamma(ompi_build, "char", "copy", sizes=(1 << 20,))
    cold = gamma_driver.measure_gamma(ompi_build, "char", "copy", sizes=(1 << 20,),
                                      pool_bytes=64 << 20)
    assert cached.points[0]["pool_bytes"] == 0
    assert cold.points[0]["pool_bytes"] == 64 << 20  # 32 pairs of 1 MiB buffers
    assert cold.points[0]["min_us"] > 0.9 * cached.points[0]["min_us"]
    with pytest.raises(gamma_driver.GammaError, match="must be positive"):
        gamma_driver.measure_gamma(ompi_build, "char", "copy", sizes=(8,), pool_bytes=0)


def test_model_command_offline(tmp_path):
    """--algorithms-json and given α, β, γ: no MPI build needed."""
    import json
    import sqlite3

    from click.testing import CliRunner

    from colltune.cli.model import model as model_cmd

    db = tmp_path / "r.db"
    con = sqlite3.connect(db)
    model_measurements().to_sql("measurements", con, index=False)
    con.close()
    algos = tmp_path / "algos.json"
    algos.write_text(json.dumps(list(ALGOS.values())))
    pp = tmp_path / "pp.json"
    pp.write_text(json.dumps(pingpong_records(noise=0)))
    runner = CliRunner()
    res = runner.invoke(model_cmd, ["--db", str(db), "--algorithms-json", str(algos),
                                   "--pingpong-json", str(pp), "--gamma", "db", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["params"]["alpha_us"] == pytest.approx(2.0)
    assert doc["params"]["gamma_s_per_byte"] == pytest.approx(5e-10, rel=1e-6)
    assert {r["collective"] for r in doc["by_collective"]} == {"bcast", "reduce"}
    assert max(r["median_abs_rel_error"] for r in doc["by_collective"]) < 1e-9
    assert len(doc["points"]) == 3 * 3 * 4 + 12 and doc["selection"]
    res = runner.invoke(model_cmd, ["--db", str(db), "--algorithms-json", str(algos),
                                   "--alpha-us", "2", "--beta-ns", "0.1", "--gamma", "0.5",
                                   "--points"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    for text in ("model parameters", "prediction error per collective", "selection",
                 "predicted vs measured", "2.000 µs"):
        assert text in res.output
    # points without ties or notes print nothing there, never pandas' NaN
    assert "nan" not in res.output.lower()
