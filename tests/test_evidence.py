"""evidence.py: oversubscribed points and "faster" only with evidence (synthetic data)."""

import re

import numpy as np
import pandas as pd
import pytest

from colltune.analysis import costmodel as cm
from colltune.analysis import evidence as ev


def test_clear_difference_is_a_winner_with_its_interval():
    rng = np.random.default_rng(3)
    fast, slow = rng.normal(10, 0.4, 6), rng.normal(14, 0.5, 6)
    v = ev.compare(fast, slow)
    assert v.outcome == "faster" and v.level == "significant"
    assert 1.3 < v.speedup < 1.5 and 1 < v.ci_low <= v.speedup <= v.ci_high
    assert v.p < 0.05 and v.n == 6
    # printed as the one ratio, time / native's time (< 1: faster), and its interval
    assert v.ratio == pytest.approx(1 / v.speedup)
    assert v.text().startswith(f"×{v.ratio:.2f} of native ({round((1 - v.ratio) * 100)} % "
                               "faster; 95% CI 0.") and "n=6" in v.text()
    back = ev.compare(slow, fast)
    assert back.outcome == "slower" and back.text().startswith(f"×{back.ratio:.2f} of native")
    assert back.ratio > 1 and "% slower; 95% CI 1." in back.text()
    # the same data give the same interval (fixed seed)
    assert ev.compare(fast, slow) == v


def test_overlapping_noisy_distributions_are_a_tie():
    """Small messages on a shared machine: 40-60 % spread, 1 % apart -> tie."""
    rng = np.random.default_rng(7)
    for seed in range(5):
        rng = np.random.default_rng(seed)
        a = 0.37 * rng.lognormal(0, 0.35, 5)
        b = 0.37 * 1.01 * rng.lognormal(0, 0.35, 5)
        v = ev.compare(a, b)
        assert v.outcome == "tie", v.text()
        assert v.text().startswith(f"tie: {ev.fmt_ratio(v.ratio)} of native (")
        assert "; within noise; 95% CI" in v.text()


def test_a_tiny_consistent_difference_below_the_minimum_effect_is_a_tie():
    a = np.array([1.00, 1.001, 1.002, 1.003, 1.004])
    v = ev.compare(a, a * 1.01)  # 1 % apart, perfectly separated
    assert v.p < 0.05 and v.outcome == "tie"


def test_too_few_repetitions_are_insufficient_evidence():
    v = ev.compare([1.0, 1.1], [5.0, 5.2])
    assert v.outcome == "insufficient" and v.level == "insufficient"
    assert "insufficient evidence" in v.text() and "n=2" in v.text()
    # 3 against 3 cannot reach 5 % with a rank test either
    assert ev.compare([1, 1.1, 1.2], [5, 5.1, 5.2]).outcome == "insufficient"
    assert ev.compare([], [1, 2, 3, 4]).outcome == "insufficient"


def _reps(label, center, n, spread, rng, **kw):
    return [dict(label=label, median_us=center * rng.lognormal(0, spread), **kw)
            for _ in range(n)]


def test_best_per_point_keeps_the_default_on_a_tie_and_names_a_real_winner():
    rng = np.random.default_rng(11)
    rows = []
    # 8 B: linear_nb measured 1 % faster inside 40 % noise -> native kept
    rows += _reps("native", 0.40, 5, 0.3, rng, size=8)
    rows += _reps("linear_nb", 0.396, 5, 0.3, rng, size=8)
    # 1 MiB: rabenseifner clearly faster
    rows += _reps("native", 300, 5, 0.02, rng, size=1 << 20)
    rows += _reps("rabenseifner", 200, 5, 0.02, rng, size=1 << 20)
    best = ev.best_per_point(pd.DataFrame(rows), ["size"]).set_index("size")
    assert best.loc[8, "best"] == "native" and best.loc[8, "ratio"] == 1.0
    assert best.loc[8, "evidence"].startswith("native kept")
    assert best.loc[1 << 20, "best"] == "rabenseifner"
    assert best.loc[1 << 20, "level"] == "significant"
    r = best.loc[1 << 20, "ratio"]
    assert 0.6 < r < 0.75 and best.loc[1 << 20, "ci_high"] < 1
    assert best.loc[1 << 20, "evidence"].startswith(f"{ev.fmt_ratio(r)} of native "
                                                    "(") and "% faster; 95% CI" in \
        best.loc[1 << 20, "evidence"]
    # two repetitions: nobody wins, whatever the medians say
    two = ev.best_per_point(pd.DataFrame(rows).groupby(["label", "size"]).head(2), ["size"])
    assert set(two["best"]) == {"native"} and set(two["level"]) == {"insufficient"}


def test_oversubscribed_points_are_marked_and_give_no_conclusion():
    df = pd.DataFrame({"np": [2, 4, 4, 8, 8], "nodes": [1, 1, None, 2, 2],
                       "ppn": [None, None, None, 4, 2], "cores": [2, 2, 2, 2, 2]})
    assert list(ev.oversubscribed(df)) == [False, True, True, True, False]
    assert list(cm.oversubscribed(df)) == list(ev.oversubscribed(df))
    assert not ev.oversubscribed(df.drop(columns=["cores"])).any()  # unknown: not marked
    rng = np.random.default_rng(1)
    rows = (_reps("native", 10, 5, 0.01, rng, np=4, ppn=4, cores=2)
            + _reps("linear", 4, 5, 0.01, rng, np=4, ppn=4, cores=2))
    best = ev.best_per_point(pd.DataFrame(rows), ["np"])
    assert best["best"].isna().all() and bool(best["oversubscribed"].iloc[0])
    assert "oversubscribed" in best["evidence"].iloc[0]
    asked = ev.best_per_point(pd.DataFrame(rows), ["np"], include_oversubscribed=True)
    assert asked["best"].iloc[0] == "linear"


def test_paired_launches_cancel_what_slowed_a_whole_launch():
    """Interleaved in the same launches: a launch-wide slowdown hits both algorithms;
    the per-launch ratios show a 10 % gain the unpaired comparison cannot."""
    rng = np.random.default_rng(2)
    launch = rng.lognormal(0, 0.6, 6)  # launch-to-launch noise, 60 %
    base = 10 * launch * rng.lognormal(0, 0.01, 6)
    cand = 10 / 1.1 * launch * rng.lognormal(0, 0.01, 6)
    assert ev.compare(cand, base).outcome == "tie"
    v = ev.compare(cand, base, pairs=True)
    assert v.outcome == "faster" and v.paired and 1.05 < v.speedup < 1.15
    assert v.ci_low > 1 and "n=6 paired" in v.text()
    assert ev.compare(cand[:2], base[:2], pairs=True).outcome == "insufficient"
    # best_per_point pairs rows by their launch (run_id, repetition) when the frame has them
    rows = ([dict(label="native", median_us=b, repetition=i, run_id=1, size=8)
             for i, b in enumerate(base)]
            + [dict(label="linear", median_us=c, repetition=i, run_id=1, size=8)
               for i, c in enumerate(cand)])
    best = ev.best_per_point(pd.DataFrame(rows), ["size"]).iloc[0]
    assert best["best"] == "linear" and "paired" in best["evidence"]


def test_commands_measure_honestly_unless_asked_and_mark_oversubscription(ompi_build):
    """quick's preset stops at the cores; --np asks for more; bench tables say which
    process counts share cores."""
    from conftest import colltune

    from colltune.mpi import placement

    res = colltune("sweep", "--preset", "quick", "--dry-run", "--db", "/nonexistent/x.db")
    assert res.returncode == 0, res.stderr[-2000:]
    cores = placement.cores()
    honest = [p for p in (2, 4, 8, 16, 32, 64, 128, 256) if p <= cores]
    assert f"processes: {', '.join(map(str, honest))}" in res.stdout.replace("\n", " ") or \
        f"processes: {honest[0]}.." in res.stdout
    over = cores + 1
    res = colltune("sweep", "--preset", "quick", "--dry-run", "--np", f"2,{over}", "--db",
                   "/nonexistent/x.db")
    assert res.returncode == 0 and f"processes: 2, {over}" in res.stdout, res.stdout[-2000:]
    res = colltune("bench", "--coll", "bcast", "--algo", "native,linear", "--np", f"2,{over}",
                   "--sizes", "8", "--iterations", "10", "--reps", "1")
    assert res.returncode == 2 and "--oversubscribe" in res.stderr  # refused unless asked
    res = colltune("bench", "--coll", "bcast", "--algo", "native,linear", "--np", f"2,{over}",
                   "--sizes", "8", "--iterations", "10", "--reps", "1", "--oversubscribe")
    assert res.returncode == 0, res.stderr[-2000:]
    text = " ".join(res.stdout.split())
    assert f"{over} processes † OVERSUBSCRIBED: {over} processes on {cores} cores" in text
    assert "2 processes †" not in text and "† oversubscribed: processes share cores" in text


def test_versus_baseline_and_the_marks_on_ratios(capsys):
    rng = np.random.default_rng(4)
    rows = []
    for rep in range(5):
        launch = rng.lognormal(0, 0.5)
        for spec, f in (("native", 1.0), ("linear", 1 / 1.5), ("binomial", 1 / 1.01)):
            rows.append(dict(collective="bcast", np=2, size=8, spec=spec, repetition=rep,
                             run_id=1, median_us=10 * f * launch * rng.lognormal(0, 0.01)))
    ver = ev.versus_baseline(pd.DataFrame(rows), ["collective", "np", "size"], label="spec")
    got = dict(zip(ver["spec"], ver["outcome"]))
    assert got == {"linear": "faster", "binomial": "tie"}
    from colltune.cli.bench import VERDICT_LEGEND, emit_records

    recs = [dict(collective="bcast", np=2, size=8, spec=s, median_us=m, verdict=v)
            for s, m, v in (("native", 10.0, None), ("linear", 6.7, "faster"),
                            ("binomial", 9.9, "tie"), ("chain", 9.0, "insufficient"))]
    emit_records(recs, "table", None, "test", cores=2)
    text = capsys.readouterr().out
    assert "×0.67 " not in text.replace("×0.67 │", "")  # a real difference: unmarked
    assert "×0.99 ≈" in text and "×0.90 ?" in text
    assert " ".join(VERDICT_LEGEND.split()) in " ".join(text.split())


def test_bootstrap_interval_depends_on_the_values_not_their_order():
    """The terminal and the report read the same rows in different orders: the one
    interval function gives the same digits for any order (each side sorted before
    it is resampled with the recorded seed)."""
    rng = np.random.default_rng(11)
    a, b = rng.lognormal(0, 0.3, 12), rng.lognormal(0.1, 0.3, 11)
    ref = ev.bootstrap_ratio_ci(a, b)
    for k in range(5):
        perm = np.random.default_rng(k)
        assert ev.bootstrap_ratio_ci(perm.permutation(a), perm.permutation(b)) == ref
    v = ev.compare(list(a)[::-1], list(b))
    assert (v.ci_low, v.ci_high) == ref and v.seed == ev.SEED
    assert v.to_dict()["seed"] == ev.SEED
    assert ev.bootstrap_ratio_ci(a, b, seed=ev.SEED + 1) != ref  # the seed matters


def test_one_ratio_everywhere_terminal_report_csv_json(tmp_path):
    """Every ratio colltune prints is time / native's time (< 1: faster), computed by
    evidence.ratio_to_baseline: quick's median table and its 'what to use' table, the
    report's summary show the same number with the same words (the ratio of the
    medians, the paired estimate labelled beside it), bench's CSV and JSON carry the
    comparison's estimate in `ratio`, and 'fastest measured' has fewer µs than native."""
    import html
    import io
    import json as json_

    from rich.console import Console

    from colltune.analysis.points import median_repetition
    from colltune.cli.bench import emit_records
    from colltune.cli.quick import best_table as quick_best
    from colltune.cli.quick import table_records
    from colltune.output import report as rp

    rng = np.random.default_rng(8)
    rows = []
    for rep in range(5):
        launch = rng.lognormal(0, 0.6)  # a launch slows both alike: compared paired
        for spec, f in (("native", 1.0), ("linear", 0.8)):
            lat = 10 * f * launch * rng.lognormal(0, 0.03)
            rows.append(dict(collective="bcast", algorithm=spec, spec=spec, params="", np=2,
                             size=65536, median_us=lat, min_us=lat, max_us=lat,
                             repetition=rep, run_id=1, ppn=2, cores=2, nodes=1))
    df = pd.DataFrame(rows)
    lin, nat = (list(df.loc[df["spec"] == s, "median_us"]) for s in ("linear", "native"))
    r = ev.ratio_to_baseline(lin, nat, paired=True)  # the paired comparison's estimate
    assert 0.7 < r < 0.9 and ev.compare(lin, nat, pairs=True).ratio == pytest.approx(r)
    assert ev.ratio_text(r) == f"×{r:.2f} of native ({round((1 - r) * 100)} % faster)"
    # what is shown: the ratio of the medians, the paired estimate labelled beside it
    mr = ev.ratio_to_baseline(lin, nat)
    assert ev.fmt_ratio(mr) != ev.fmt_ratio(r)
    words = ev.ratio_text(mr, "native", f"paired {ev.fmt_ratio(r)}")

    # terminal: quick's median table and its "what to use" table
    records = table_records(df, median_repetition(df, ["collective", "np", "spec", "size"]))
    rec = next(x for x in records if x["spec"] == "linear")
    assert rec["ratio"] == pytest.approx(r)
    import colltune.cli._common as common
    with common.out.capture() as captured:
        emit_records(records, "table", None, "t", cores=2)
    table = captured.get()
    line = next(ln for ln in table.splitlines() if "linear" in ln and "×" in ln)
    assert f"{rec['median_us']:.2f} {ev.fmt_ratio(mr)} (paired {ev.fmt_ratio(r)})" in line
    assert "time / native's time" in " ".join(table.split())
    wide = Console(file=io.StringIO(), width=400)
    wide.print(quick_best(df))
    what = wide.file.getvalue()
    assert "│ linear │ significant │ " + f"{words[:-1]}; 95% CI" in what

    # CSV and JSON: the same number in the column `ratio`
    emit_records(records, "csv", str(tmp_path / "r.csv"), "t")
    emit_records(records, "json", str(tmp_path / "r.json"), "t")
    import csv as csv_
    got = {row["spec"]: row["ratio"] for row in csv_.DictReader((tmp_path / "r.csv").open())}
    assert got["native"] == "" and ev.fmt_ratio(float(got["linear"])) == ev.fmt_ratio(r)
    assert float(got["linear"]) == pytest.approx(r)
    js = {x["spec"]: x["ratio"] for x in json_.loads((tmp_path / "r.json").read_text())}
    assert js["native"] is None and js["linear"] == pytest.approx(r)

    # the report: the summary's sentence and table say the same, in the same words
    text, _ = rp.build_report(df, db_path=tmp_path / "x.db", model=None, model_note="none",
                              dpi=40)
    summary = html.unescape(text[text.index('id="summary"'):text.index('id="coll-bcast"')])
    assert f"use <b>linear</b> (np 2, size 64K: {words})" in summary
    assert f"<td>{words[:-1]}; 95% CI" in summary  # by how much, with its interval
    # fastest measured: the lowest median, fewer µs than native's beside it
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", summary)
    i = cells.index("linear", 3)
    fastest_us, native_us = float(cells[i + 1]), float(cells[i + 2])
    assert fastest_us < native_us


def _null_trials(trials, m, n, correct, paired):
    """Trials in which one of `m` candidates drawn from native's own distribution
    (lognormal, 10 % scatter, `n` repetitions) is called significantly faster."""
    rng = np.random.default_rng(20240601)
    wins = 0
    for _ in range(trials):
        launch = rng.lognormal(0, 0.05, n)  # what slowed each launch (paired design)
        def draw():
            x = 10 * rng.lognormal(0, 0.1, n)
            return dict(enumerate(x * launch)) if paired else list(x)
        samples = {"native": draw(), **{f"c{i}": draw() for i in range(m)}}
        if correct:
            row = ev.best_of_point(samples, min_effect=0, n_boot=500)
            wins += row["best"] != "native"
        else:  # what a point concluded before: each candidate at 5 % on its own
            wins += any(ev._cmp(samples[k], samples["native"], min_effect=0,
                                n_boot=500).outcome == "faster"
                        for k in samples if k != "native")
    return wins


@pytest.mark.parametrize("paired,n", [(True, 5), (False, 8)])
def test_twenty_candidates_from_natives_own_distribution_give_no_winner(paired, n):
    """The winner among many: 20 candidates no different from native give no
    "significant" winner in at least 95 % of points with Holm's correction; without
    it, more than 5 % of points have one (about one in five paired, one in ten
    unpaired, where the bootstrap interval must agree with the rank test)."""
    trials = 200
    corrected = _null_trials(trials, 20, n, True, paired)
    uncorrected = _null_trials(trials, 20, n, False, paired)
    assert corrected <= 0.05 * trials, corrected
    assert uncorrected > 0.08 * trials, uncorrected  # the test fails without Holm


def test_holm_adjusts_step_down_and_names_itself():
    adj = ev.holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.5})
    assert adj == pytest.approx({"a": 0.04, "c": 0.09, "b": 0.09, "d": 0.5})
    rng = np.random.default_rng(5)
    # one real winner (30 % faster) among 19 look-alikes survives the correction
    samples = {"native": dict(enumerate(10 * rng.lognormal(0, 0.02, 6)))}
    samples["fast"] = {k: v * 0.7 * rng.lognormal(0, 0.02) for k, v in samples["native"].items()}
    for i in range(19):
        samples[f"c{i}"] = {k: v * rng.lognormal(0, 0.02) for k, v in samples["native"].items()}
    row = ev.best_of_point(samples)
    assert row["best"] == "fast" and row["level"] == "significant"
    assert "Holm p=" in row["evidence"] and "over 20 candidates" in row["evidence"]
    v = ev.judge_point(samples)["fast"]
    assert v.family == 20 and v.p_holm < 0.05 and v.to_dict()["correction"] == "Holm"


def test_load_during_natives_launches_only_is_unstable_or_noise_never_significant():
    """A CPU hog during native's launches only (synthetic repetitions): unpaired sides
    that scatter, or saw different load averages, are "unstable: measure again";
    algorithms sharing native's launches (paired) see the same hog: within noise."""
    rng = np.random.default_rng(4)
    hog = np.array([2.5, 3.5, 1.2, 4, 3])  # how the hog slowed each of native's launches
    native = 10 * hog * rng.lognormal(0, 0.02, 5)
    ours = 10 * hog * rng.lognormal(0, 0.02, 5)  # same launches as native
    lib = 10 * rng.lognormal(0, 0.02, 5)  # launches of its own, no hog
    rows = ([dict(label="native", median_us=v, repetition=i, unit_id=1, size=8)
             for i, v in enumerate(native)]
            + [dict(label="linear", median_us=v, repetition=i, unit_id=1, size=8)
               for i, v in enumerate(ours)]
            + [dict(label="ompi:linear", median_us=v, repetition=i, unit_id=2, size=8)
               for i, v in enumerate(lib)])
    df = pd.DataFrame(rows)
    assert ev.compare(lib, native).outcome == "faster"  # what the U test alone says
    ver = ev.versus_baseline(df, ["size"]).set_index("label")
    assert ver.loc["ompi:linear", "outcome"] == "unstable"
    assert "native's median repetition 2.3× its fastest" in ver.loc["ompi:linear", "text"]
    assert ver.loc["linear", "outcome"] == "tie"
    best = ev.best_per_point(df, ["size"]).iloc[0]
    assert best["best"] == "native" and best["level"] == ev.UNSTABLE
    assert "unstable: measure again" in best["evidence"]
    # the hog in every one of native's launches: no scatter, but the load averages
    # seen during the two sides' launches differ
    steady = 10 * 3 * rng.lognormal(0, 0.02, 5)
    rows = ([dict(label="native", median_us=v, repetition=i, unit_id=1, size=8,
                  load1_before=2.6, load1_after=3.1) for i, v in enumerate(steady)]
            + [dict(label="ompi:linear", median_us=v, repetition=i, unit_id=2, size=8,
                    load1_before=1.1, load1_after=1.0) for i, v in enumerate(lib)])
    ver = ev.versus_baseline(pd.DataFrame(rows), ["size"]).set_index("label")
    assert ver.loc["ompi:linear", "outcome"] == "unstable"
    assert "load average 3.1 during native's launches, 1.1 during" in \
        ver.loc["ompi:linear", "text"]
    # the same loads on both sides: the difference stands (what pairing is for)
    same = pd.DataFrame(rows).assign(load1_before=1.0, load1_after=1.2)
    assert ev.versus_baseline(same, ["size"]).set_index("label").loc[
        "ompi:linear", "outcome"] == "faster"


def test_quick_leads_with_the_answer_then_one_compact_table_per_collective():
    """quick's first screen is what to use where; then one table per collective whose
    ratio is that of the two medians printed, the paired estimate labelled as such."""
    import colltune.cli._common as common
    from colltune.analysis.points import median_repetition
    from colltune.cli.quick import print_answer, table_records

    rng = np.random.default_rng(9)
    rows = []
    for coll in ("bcast", "allreduce"):
        for size in (8, 65536, 1 << 20):
            for rep in range(5):
                launch = rng.lognormal(0, 0.5)
                for spec, f in (("native", 1.0), ("linear", 0.5), ("binomial", 1.0),
                                ("chain", 1.2)):
                    lat = 10 * f * launch * rng.lognormal(0, 0.02)
                    rows.append(dict(collective=coll, algorithm=spec, spec=spec, params="",
                                     np=2, size=size, median_us=lat, repetition=rep,
                                     run_id=1, unit_id=rep, ppn=2, cores=2, nodes=1))
    df = pd.DataFrame(rows)
    records = table_records(df, median_repetition(df, ["collective", "np", "spec", "size"]))
    with common.out.capture() as captured:
        print_answer(df, records, cores=2, reps=5)
    lines = captured.get().splitlines()
    assert lines[0].startswith("what to use")
    first = [i for i, ln in enumerate(lines) if ln.startswith("bcast: median µs")]
    assert first and first[0] < 60  # the answer fits a screen, before any table
    answer = "\n".join(lines[:first[0]])
    assert answer.count("│ linear ") == 6 and "Holm" in answer  # every point answered
    assert sum(ln.startswith(("bcast: median", "allreduce: median")) for ln in lines) == 2
    rec = next(r for r in records if r["spec"] == "linear" and r["collective"] == "bcast"
               and r["size"] == 8)
    nat = next(r for r in records if r["spec"] == "native" and r["collective"] == "bcast"
               and r["size"] == 8)
    mr = rec["median_us"] / nat["median_us"]
    row = next(ln for ln in lines[first[0]:] if ln.startswith("│ linear"))
    assert f"{rec['median_us']:.2f} ×{mr:.2f}" in row
    if f"{rec['ratio']:.2f}" != f"{mr:.2f}":
        assert f"(paired ×{rec['ratio']:.2f})" in row
    assert not any("Avg Latency" in ln for ln in lines)  # OSU tables only when asked
