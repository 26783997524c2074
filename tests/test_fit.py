"""colltune fit: OLS models over measurements (statsmodels formula API)."""

import json
import math
import sqlite3

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from click.testing import CliRunner

from colltune.analysis import fit
from colltune.cli.fit import fit as fit_cmd


def synthetic(b_np=1.5, b_size=0.002, log=False, b0=0.03, b1=0.33, noise=0.02, seed=1,
              sizes=tuple(2**e for e in range(1, 21)), nps=tuple(range(2, 26, 2)), reps=2):
    """bcast/linear/core rows with latency from a known model (multiplicative noise)."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in nps:
        for s in sizes:
            for r in range(reps):
                if log:
                    lat = 2 ** (b0 * p + b1 * math.log2(max(s, 1)) + rng.normal(0, noise))
                else:
                    lat = (b_np * p + b_size * s) * (1 + rng.normal(0, noise))
                rows.append(dict(collective="bcast", algorithm="linear", mapping="core", np=p,
                                 size=s, median_us=lat, rep_min_us=lat * 0.9, rep_max_us=lat * 1.1,
                                 repetition=r, params=""))
    return pd.DataFrame(rows)


def test_linear_model_recovers_coefficients_and_matches_statsmodels():
    df = synthetic()
    frame = fit.model_frame(df)
    f, label = fit.resolve_formula(model="seed-linear")
    assert f == "latency ~ 0 + processes + size"
    r = fit.fit_formula(frame, f, label)
    c = {x.term: x for x in r.coefs}
    assert set(c) == {"processes", "size"}
    assert c["processes"].coef == pytest.approx(1.5, rel=0.03)
    assert c["size"].coef == pytest.approx(0.002, rel=0.03)
    # the same numbers as statsmodels itself on the same data
    ref = smf.ols("y ~ 0 + p + s", data=pd.DataFrame(
        {"y": df["median_us"], "p": df["np"], "s": df["size"]})).fit()
    assert r.r2 == pytest.approx(ref.rsquared, rel=1e-12)
    assert r.r2_adj == pytest.approx(ref.rsquared_adj, rel=1e-12)
    assert r.aic == pytest.approx(ref.aic, rel=1e-12)
    assert r.bic == pytest.approx(ref.bic, rel=1e-12)
    assert r.n == len(df) == int(ref.nobs)
    assert c["processes"].std_err == pytest.approx(ref.bse["p"], rel=1e-10)
    assert c["size"].p == pytest.approx(ref.pvalues["s"], abs=1e-12)
    lo, hi = ref.conf_int().loc["p"]
    assert (c["processes"].ci_low, c["processes"].ci_high) == pytest.approx((lo, hi))
    assert c["processes"].t == pytest.approx(ref.tvalues["p"])
    assert not r.intercept
    assert any("uncentered" in n for n in r.notes)
    assert c["processes"].meaning.startswith("each extra process adds 1.5")
    assert "MB/s" in c["size"].meaning and "per MiB" in c["size"].meaning


def test_log_model_recovers_coefficients_and_explains_them():
    df = synthetic(log=True)
    r = fit.fit_formula(fit.model_frame(df), *fit.resolve_formula(model="seed-log"))
    c = {x.term: x for x in r.coefs}
    assert c["processes"].coef == pytest.approx(0.03, abs=0.002)
    assert c["log2_size"].coef == pytest.approx(0.33, abs=0.005)
    assert r.response == "log2_latency"
    ref = smf.ols("np.log2(y) ~ 0 + p + np.log2(s)", data=pd.DataFrame(
        {"y": df["median_us"], "p": df["np"], "s": df["size"]})).fit()
    assert r.r2 == pytest.approx(ref.rsquared, rel=1e-12)
    assert r.aic == pytest.approx(ref.aic, rel=1e-12)
    f0 = 2 ** c["processes"].coef
    assert c["processes"].factor == pytest.approx(f0)
    assert c["processes"].meaning.startswith("one more process multiplies latency by 2^")
    assert f"×{f0:.4g}" in c["processes"].meaning
    assert c["log2_size"].meaning.startswith("doubling the size multiplies latency by 2^")
    assert c["log2_size"].factor == pytest.approx(2 ** c["log2_size"].coef)
    # the AIC on the latency scale: the log-normal likelihood of the latencies
    y = df["median_us"].to_numpy()
    assert r.aic_latency_scale == pytest.approx(
        ref.aic + 2 * np.sum(np.log(y * np.log(2))), rel=1e-9)


def test_user_formula_with_numpy_equals_builtin_and_intercept_is_explained():
    df = synthetic(log=True)
    frame = fit.model_frame(df)
    a = fit.fit_formula(frame, *fit.resolve_formula(model="seed-log"))
    b = fit.fit_formula(frame, *fit.resolve_formula("np.log2(latency) ~ 0 + processes + "
                                                    "np.log2(size)"))
    assert [x.coef for x in a.coefs] == pytest.approx([x.coef for x in b.coefs])
    assert a.aic == pytest.approx(b.aic)
    assert b.coefs[1].meaning.startswith("doubling the size multiplies latency")
    c = fit.fit_formula(frame, "log2(latency) ~ processes + log2(size)")
    assert c.intercept and c.coefs[0].term == "Intercept"
    assert "µs" in c.coefs[0].meaning and not any("uncentered" in n for n in c.notes)


def test_size_zero_rows_are_excluded_from_log_models_with_a_note():
    df = synthetic(log=True, sizes=(0, 8, 64, 512, 4096))
    frame = fit.model_frame(df)
    r = fit.fit_formula(frame, *fit.resolve_formula(model="seed-log"))
    zeros = int((df["size"] == 0).sum())
    assert zeros > 0 and r.n == len(df) - zeros
    assert any("size 0" in n for n in r.notes)
    lin = fit.fit_formula(frame, *fit.resolve_formula(model="seed-linear"))
    assert lin.n == len(df)


def test_bad_formulas_and_too_little_data():
    frame = fit.model_frame(synthetic())
    with pytest.raises(fit.FitError, match="no '~'"):
        fit.resolve_formula("latency + size")
    with pytest.raises(fit.FitError, match="cannot fit"):
        fit.fit_formula(frame, "latency ~ nosuchcolumn")
    with pytest.raises(fit.FitError, match="observation"):
        fit.fit_formula(frame.iloc[[0, -1]], "latency ~ 0 + processes + size")
    with pytest.raises(fit.FitError, match="unknown model"):
        fit.resolve_formula(model="nope")


def test_fit_by_group_and_selection():
    df = pd.concat([synthetic(log=True), synthetic(log=True, b0=0.05, seed=2)
                    .assign(algorithm="binomial")])
    sel = fit.select(df, algorithm="binomial,linear", np_range=fit.parse_range("4..12", "np"),
                     size_range=fit.parse_range("1K..", "size", sizes=True))
    assert sel["np"].between(4, 12).all() and (sel["size"] >= 1024).all()
    rs = fit.fit_selection(df, [fit.resolve_formula(model="seed-log")], by=["algorithm"])
    assert [r.group for r in rs] == [{"algorithm": "binomial"}, {"algorithm": "linear"}]
    assert rs[0].coefs[0].coef == pytest.approx(0.05, abs=0.003)
    assert rs[1].coefs[0].coef == pytest.approx(0.03, abs=0.003)


def test_parse_range():
    assert fit.parse_range("2..16", "np") == (2, 16)
    assert fit.parse_range("8", "np") == (8, 8)
    assert fit.parse_range("..64K", "size", sizes=True) == (-math.inf, 65536)
    assert fit.parse_range(None, "np") is None
    with pytest.raises(fit.FitError):
        fit.parse_range("9..2", "np")
    with pytest.raises(fit.FitError):
        fit.parse_range("a..b", "np")


def make_db(path, df, with_runs=True):
    con = sqlite3.connect(path)
    if with_runs:
        con.execute("CREATE TABLE studies (id INTEGER PRIMARY KEY, name TEXT)")
        con.executemany("INSERT INTO studies VALUES (?, ?)", [(1, "quick"), (2, "other")])
        con.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, study_id INTEGER, host TEXT, "
                    "mpi TEXT, command TEXT)")
        con.executemany("INSERT INTO runs VALUES (?, ?, ?, ?, ?)",
                        [(1, 1, "nodeA", "Open MPI 5", "colltune bench ..."),
                         (2, 2, "nodeB", "MPICH 4", "colltune bench ...")])
        df = df.assign(run_id=[1 + (i % 2) for i in range(len(df))])
    df.to_sql("measurements", con, index=False)
    con.commit()
    con.close()


def test_load_measurements_joins_runs_and_studies(tmp_path):
    df = synthetic(nps=(2, 4), sizes=(8, 64))
    make_db(tmp_path / "r.db", df)
    all_ = fit.load_measurements(tmp_path / "r.db")
    assert len(all_) == len(df)
    assert {"host", "mpi", "study", "command"} <= set(all_.columns)
    q = fit.load_measurements(tmp_path / "r.db", study="quick")
    assert len(q) == len(df) // 2 and set(q["host"]) == {"nodeA"}
    one = fit.load_measurements(tmp_path / "r.db", study="quick", np=4, algorithm=["linear"])
    assert set(one["np"]) == {4}
    with pytest.raises(fit.FitError, match="studies: other, quick"):
        fit.load_measurements(tmp_path / "r.db", study="nope")
    with pytest.raises(fit.FitError, match="no column"):
        fit.load_measurements(tmp_path / "r.db", nosuch=1)


def test_load_measurements_tolerates_a_bare_table_and_reports_problems(tmp_path):
    df = synthetic(nps=(2,), sizes=(8,))[["collective", "algorithm", "np", "size", "median_us"]]
    make_db(tmp_path / "bare.db", df, with_runs=False)
    got = fit.load_measurements(tmp_path / "bare.db")
    assert list(got.columns) == ["collective", "algorithm", "np", "size", "median_us"]
    with pytest.raises(fit.FitError, match="records no studies"):
        fit.load_measurements(tmp_path / "bare.db", study="quick")
    with pytest.raises(fit.FitError, match="no results database"):
        fit.load_measurements(tmp_path / "missing.db")
    con = sqlite3.connect(tmp_path / "empty.db")
    con.execute("CREATE TABLE other (x)")
    con.close()
    with pytest.raises(fit.FitError, match="no 'measurements' table"):
        fit.load_measurements(tmp_path / "empty.db")
    sqlite3.connect(tmp_path / "nomed.db").execute(
        "CREATE TABLE measurements (collective, algorithm, np, size)").connection.close()
    with pytest.raises(fit.FitError, match="median_us"):
        fit.load_measurements(tmp_path / "nomed.db")


def test_fit_command_json_and_table(tmp_path):
    make_db(tmp_path / "r.db", synthetic(log=True))
    runner = CliRunner()
    res = runner.invoke(fit_cmd, ["--db", str(tmp_path / "r.db"), "--study", "quick",
                                  "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert [m["formula"] for m in doc["models"]] == [
        "latency ~ 0 + processes + size", "log2_latency ~ 0 + processes + log2_size"]
    m = doc["models"][1]
    assert {"r2", "r2_adj", "aic", "bic", "n", "coefs", "notes", "aic_latency_scale"} <= set(m)
    assert {"term", "coef", "std_err", "t", "p", "ci_low", "ci_high", "meaning",
            "factor"} <= set(m["coefs"][0])
    assert doc["selection"]["algorithms"] == ["linear"]
    res = runner.invoke(fit_cmd, ["--db", str(tmp_path / "r.db"), "--model", "seed-log",
                                  "--formula", "latency ~ processes", "--np-range", "2..10"],
                        env={"COLUMNS": "160"})
    assert res.exit_code == 0, res.output
    for text in ("coef", "std err", "P>|t|", "[0.025", "0.975]", "R² (uncentered)",
                 "Adj. R²", "AIC", "No. Observations", "one more process multiplies latency"):
        assert text in res.output
    res = runner.invoke(fit_cmd, ["--db", str(tmp_path / "r.db"), "--formula", "latency ~ x"])
    assert res.exit_code == 2 and "cannot fit" in res.output


def test_fit_by_prints_a_heading_per_group_that_names_it(tmp_path):
    df = pd.concat([synthetic(log=True), synthetic(log=True, b0=0.05, seed=2)
                    .assign(algorithm="binomial")])
    make_db(tmp_path / "r.db", df)
    res = CliRunner().invoke(fit_cmd, ["--db", str(tmp_path / "r.db"), "--study", "quick",
                                       "--by", "algorithm", "--model", "seed-log"],
                             env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    heads = [ln for ln in res.output.splitlines() if "OLS:" in ln]
    assert len(heads) == 2 and len(set(heads)) == 2  # one per group, and they differ
    assert heads[0].startswith("algorithm binomial") and heads[1].startswith("algorithm linear")


def test_load_measurements_reads_a_colltune_database(tmp_path):
    """The schema of colltune.db (runs, studies, units; params as JSON)."""
    from colltune.results import db
    from colltune.results import store

    conn = db.open_db(tmp_path / "c.db")
    sid = store.upsert_study(conn, "quick", {"collectives": ["bcast"]})
    rid = store.store_run(conn, study_id=sid, command_line="colltune sweep --preset quick")
    recs = [dict(collective="bcast", algorithm="chain", params="segsize=8192,fanout=4", np=p,
                 size=s, median_us=1.0 + p + s / 1000, rep_min_us=1.0, rep_max_us=9.0)
            for p in (2, 4) for s in (8, 1024)]
    with db.transaction(conn):
        store.store_measurements(conn, rid, recs, mapping="core", repetition=0)
    conn.close()
    df = fit.load_measurements(tmp_path / "c.db", study="quick")
    assert len(df) == 4 and set(df["study"]) == {"quick"}
    assert set(df["params"]) == {"fanout=4,segsize=8192"}  # JSON back to k=v
    assert "host" in df.columns and "command_line" in df.columns and "samples" not in df.columns
    store.store_bench(recs[:1], mpi=None, path=tmp_path / "c.db", argv=["colltune", "bench"])
    assert set(fit.load_measurements(tmp_path / "c.db")["study"]) == {"quick", "(bench)"}
    assert len(fit.load_measurements(tmp_path / "c.db", study="(bench)")) == 1


def test_a_term_without_variation_is_dropped_with_a_note_not_fitted(tmp_path):
    """One process count: no 'processes' effect can be estimated (it would stand in for
    the intercept and read as 'one more process multiplies latency by ×0.37')."""
    df = synthetic(log=True, nps=(2,), sizes=(8, 64, 1024, 65536, 1 << 20), reps=3)
    frame = fit.model_frame(df)
    for name in fit.SEED_MODELS:
        r = fit.fit_formula(frame, *fit.resolve_formula(model=name))
        assert [c.term for c in r.coefs] == ["size" if name == "seed-linear" else "log2_size"]
        assert r.dropped and r.dropped[0]["term"] == "processes"
        assert "one value (2)" in r.dropped[0]["reason"]
        assert any("'processes' dropped, not fitted" in n for n in r.notes)
        assert not any("multiplies latency by" in c.meaning and c.term == "processes"
                       for c in r.coefs)
    # with an intercept the constant term is dropped too (it would be rank-deficient)
    r = fit.fit_formula(frame, "latency ~ processes + size")
    assert [c.term for c in r.coefs] == ["Intercept", "size"]
    # a term that varies is kept: two process counts fit both
    two = fit.fit_formula(fit.model_frame(synthetic(log=True, nps=(2, 4))),
                          *fit.resolve_formula(model="seed-log"))
    assert [c.term for c in two.coefs] == ["processes", "log2_size"] and not two.dropped
    # nothing varies: an error that says why
    with pytest.raises(fit.FitError, match="no term varies"):
        fit.fit_formula(frame[frame["size"] == 8], "latency ~ 0 + processes + size")
    # the command says it, in the table and in JSON
    make_db(tmp_path / "one.db", df)
    res = CliRunner().invoke(fit_cmd, ["--db", str(tmp_path / "one.db"), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    for m in doc["models"]:
        assert [d["term"] for d in m["dropped"]] == ["processes"]
        assert "processes" not in [c["term"] for c in m["coefs"]]
    res = CliRunner().invoke(fit_cmd, ["--db", str(tmp_path / "one.db")],
                             env={"COLUMNS": "160"})
    assert res.exit_code == 0 and "'processes' dropped, not fitted" in res.output
    assert "one more process multiplies" not in res.output
