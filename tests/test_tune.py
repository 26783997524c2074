"""colltune tune: choices with evidence, the interpolation policy, regret and the ratio to native,
cross-validation, bad input, and a real sweep -> tune through the command line."""

from __future__ import annotations

import json
import math
import os
import sqlite3
import subprocess
import sys

import pandas as pd
import pytest

from colltune.rules import ruleset as rules
from colltune.tuning import tune
from colltune.rules.ruleset import Rule
from colltune.tuning.tune import TuneError

NOISE = (1.00, 1.02, 0.98, 1.01, 0.99)  # per launch: shared by every algorithm of it


def frame(points, reps=5, cores=64, mpi_kind="openmpi", noise=NOISE, own=None):
    """points: {(collective, np, size): {label: median µs}} -> one row per
    (launch, algorithm), algorithms of a point measured in the same launches (noise:
    per launch, shared; own: label -> per-launch factors of that algorithm alone)."""
    rows, unit = [], 0
    own = own or {}
    for (coll, np_, size), algos in points.items():
        for rep in range(reps):
            unit += 1
            for label, us in algos.items():
                algo, _, params = label.partition(":") if not label.startswith(
                    ("ompi:", "mpich:")) else (label, "", "")
                rows.append({"study": "s", "run_id": 1, "unit_id": unit, "round": 1,
                             "repetition": rep + 1, "collective": coll, "algorithm": algo,
                             "spec": label, "params": params, "np": np_, "nodes": 1,
                             "ppn": np_, "mapping": "core", "size": size,
                             "median_us": us * noise[rep % len(noise)]
                             * own.get(label, (1.0,) * reps)[rep],
                             "valid": 1, "cores": cores, "mpi_kind": mpi_kind,
                             "mpi_version": "5.0.11"})
    return pd.DataFrame(rows)


def grid(fn, colls=("bcast",), nps=(2,), sizes=(8, 1024, 1 << 20)):
    return {(c, n, s): fn(c, n, s) for c in colls for n in nps for s in sizes}


# ------------------------------------------------------------------ choices and rules


def test_a_clear_winner_is_chosen_and_its_regret_is_one():
    f = frame(grid(lambda c, n, s: {"native": 10.0, "binomial": 5.0, "linear": 20.0}))
    t = tune.tune(f, "colltune")
    assert [(r.algorithm, r.np_min, r.np_max, r.size_min, r.size_max) for r in t.rules.rules] \
        == [("native", 1, 1, 0, None), ("binomial", 2, 2, 0, None),  # three sizes merged
            ("native", 3, None, 0, None)]  # not measured: the library's own decision
    ins = t.points["in-sample"]
    assert (ins["chosen"] == "binomial").all()
    assert ins["regret"].tolist() == pytest.approx([1.0, 1.0, 1.0])
    assert ins["vs_native"].tolist() == pytest.approx([0.5, 0.5, 0.5])  # the one ratio: time / native
    s = t.summary.set_index("evaluation").loc["in-sample"]
    assert s["regret_gmean"] == pytest.approx(1.0) and s["vs_native_gmean"] == pytest.approx(0.5)


def test_a_gain_within_the_spread_keeps_native():
    # 1 % faster (below the 3 % minimum effect): a tie, native kept; its regret shows it
    f = frame(grid(lambda c, n, s: {"native": 10.0, "binomial": 9.9}))
    t = tune.tune(f, "colltune")
    assert {r.algorithm for r in t.rules.rules} == {"native"}
    assert t.points["in-sample"]["regret"].tolist() == pytest.approx([10 / 9.9] * 3)
    assert t.points["in-sample"]["vs_native"].tolist() == pytest.approx([1.0] * 3)
    # noisy launches: a 20 % gain whose repetitions scatter by 50 % is not significant
    noisy = frame(grid(lambda c, n, s: {"native": 10.0, "binomial": 8.0}),
                  own={"binomial": (0.6, 1.4, 0.7, 1.3, 0.8)})
    assert {r.algorithm for r in tune.select(noisy, "colltune").rules} == {"native"}


def test_sizes_split_at_geometric_midpoints_and_ends_extend():
    best = {8: "linear", 1024: "binomial", 1 << 20: "binomial", 1 << 24: "linear"}
    f = frame(grid(lambda c, n, s: {"native": 10.0, best[s]: 4.0,
                                    ("binomial" if best[s] == "linear" else "linear"): 30.0},
                   sizes=tuple(best)))
    rs = tune.select(f, "colltune")
    got = [(r.size_min, r.size_max, r.algorithm) for r in rs.rules if r.np_min == 2]
    assert got == [(0, 90, "linear"),                   # isqrt(8 * 1024) = 90
                   (91, 4194304, "binomial"),           # 1024 and 1M merged; isqrt(1M * 16M)
                   (4194305, None, "linear")]
    assert tune.size_split(0, 64) == 32 and tune.size_split(8, 9) == 8
    # every size has exactly one rule
    for size in (0, 90, 91, 5000, 4194304, 4194305, 1 << 40):
        assert sum(r.matches("bcast", 2, size) for r in rs.rules) == 1
        assert rs.lookup("bcast", 3, size).algorithm == "native"  # np 3 not measured


def test_process_counts_cover_up_to_the_next_and_equal_neighbours_merge():
    def fn(c, n, s):
        win = "linear" if n == 16 else "binomial"
        return {"native": 10.0, win: 4.0}
    f = frame(grid(fn, nps=(2, 4, 16, 32)))
    rs = tune.select(f, "colltune")
    got = [(r.np_min, r.np_max, r.algorithm) for r in rs.rules]
    assert got == [(1, 1, "native"), (2, 15, "binomial"), (16, 31, "linear"),
                   (32, 32, "binomial"), (33, None, "native")]
    assert rs.lookup("bcast", 1, 8).algorithm == "native"      # below the smallest: native
    assert rs.lookup("bcast", 1000, 8).algorithm == "native"   # above the largest
    assert rs.lookup("bcast", 20, 8).algorithm == "linear"


def test_between_measured_counts_the_choice_switches_where_the_interpolated_times_cross():
    # linear 4 -> 12 µs from 16 to 256 processes, binomial 8 at both: in log-log the two
    # lines cross at f = log 2 / log 3 of the way, 16 * 16**0.631 = 92.2 processes
    def fn(c, n, s):
        return {"native": 100.0, "linear": 4.0 if n == 16 else 12.0, "binomial": 8.0}
    rs = tune.select(frame(grid(fn, nps=(16, 256)), cores=256), "colltune")
    got = [(r.np_min, r.np_max, r.algorithm) for r in rs.rules]
    assert got == [(1, 15, "native"), (16, 92, "linear"), (93, 256, "binomial"),
                   (257, None, "native")]
    assert tune.np_switch(16, 256, (4.0, 12.0), (8.0, 8.0)) == 93
    # symmetric: the geometric midpoint; a time missing (an adaptive study that did not
    # run linear at 256): linear up to the next measured count, as without times
    assert tune.np_switch(16, 256, (4.0, 16.0), (8.0, 8.0)) == 64
    assert tune.np_switch(16, 256, (4.0, None), (8.0, 8.0)) == 256
    assert tune.np_switch(16, 256, (4.0, 16.0), (0.0, 8.0)) == 256
    # the switch stays strictly after the lower count and at most at the upper
    assert tune.np_switch(16, 17, (4.0, 16.0), (8.0, 8.0)) == 17
    assert tune.np_switch(16, 256, (9.0, 16.0), (8.0, 8.0)) == 17  # already slower at 16
    # per size: each measured size switches at its own count
    def fn2(c, n, s):
        lin = {8: (4.0, 12.0), 1024: (4.0, 16.0)}.get(s, (4.0, 5.0))
        return {"native": 100.0, "linear": lin[0] if n == 16 else lin[1], "binomial": 8.0}
    rs = tune.select(frame(grid(fn2, nps=(16, 256)), cores=256), "colltune")
    assert rs.lookup("bcast", 92, 8).algorithm == "linear"
    assert rs.lookup("bcast", 93, 8).algorithm == "binomial"
    assert rs.lookup("bcast", 63, 1024).algorithm == "linear"
    assert rs.lookup("bcast", 64, 1024).algorithm == "binomial"
    assert rs.lookup("bcast", 255, 1 << 20).algorithm == "linear"   # 5 < 8 at 256 too
    assert rs.lookup("bcast", 256, 1 << 20).algorithm == "linear"
    for n in (1, 16, 17, 63, 64, 92, 93, 255, 256, 4096):
        for size in (0, 8, 1000, 5000, 1 << 20, 1 << 30):
            assert sum(r.matches("bcast", n, size) for r in rs.rules) == 1
    # the two counts measured different sizes: a size one count lacks takes its rule there
    pts = {("bcast", 16, 8): {"native": 100.0, "linear": 4.0, "binomial": 8.0},
           ("bcast", 16, 1 << 20): {"native": 100.0, "linear": 4.0, "binomial": 8.0},
           ("bcast", 256, 8): {"native": 100.0, "linear": 16.0, "binomial": 8.0}}
    rs = tune.select(frame(pts, cores=256), "colltune")
    assert rs.lookup("bcast", 63, 8).algorithm == "linear"
    assert rs.lookup("bcast", 64, 8).algorithm == "binomial"
    # 1 MiB: linear at 16, the 8-byte rule (binomial) at 256, no time of either at 256
    assert rs.lookup("bcast", 255, 1 << 20).algorithm == "linear"
    assert rs.lookup("bcast", 256, 1 << 20).algorithm == "binomial"
    for n in (1, 16, 17, 63, 64, 255, 256, 4096):
        for size in (0, 8, 1000, 5000, 1 << 20, 1 << 30):
            assert sum(r.matches("bcast", n, size) for r in rs.rules) == 1


def test_parameters_are_part_of_the_choice_and_survive_the_rules_file(tmp_path):
    f = frame(grid(lambda c, n, s: {"native": 10.0, "chain:segsize=8192": 3.0,
                                    "chain:segsize=65536": 6.0}))
    t = tune.tune(f, "colltune", meta={"study": "s"})
    (r,) = [x for x in t.rules.rules if not x.note]  # the measured count's
    assert r.algorithm == "chain" and r.params == (("segsize", 8192),)
    back = rules.from_text(rules.to_text(t.rules))
    assert back.rules == t.rules.rules and back.target == "colltune"
    assert back.meta["study"] == "s" and "geometric" in back.meta["policy"]


def test_mapping_is_a_key_only_where_the_study_varied_it():
    f = frame(grid(lambda c, n, s: {"native": 10.0, "binomial": 5.0}))
    g = f.copy()
    g["mapping"] = "socket"
    g["unit_id"] += 1000
    g.loc[g["algorithm"] == "binomial", "median_us"] *= 4  # slower than native there
    rs = tune.select(pd.concat([f, g]), "colltune")
    assert {(r.mapping, r.algorithm) for r in rs.rules if not r.note} == {
        ("core", "binomial"), ("socket", "native")}
    assert all(r.mapping is None for r in tune.select(f, "colltune").rules)


# ------------------------------------------------------------------ quality


def test_cross_validation_evaluates_rules_built_without_the_point():
    # A wins at 8 B and 1 MiB, B at 1 KiB: left out, 1 KiB falls in A's range
    lat = {8: {"native": 10.0, "A": 2.0, "B": 4.0}, 1024: {"native": 10.0, "A": 6.0, "B": 3.0},
           1 << 20: {"native": 10.0, "A": 2.0, "B": 4.0}}
    f = frame(grid(lambda c, n, s: lat[s], nps=(2, 4)))
    t = tune.tune(f, "colltune")
    ins = t.summary.set_index("evaluation").loc["in-sample"]
    assert ins["regret_gmean"] == pytest.approx(1.0)
    loso = t.points["leave-one-size-out"]
    at1k = loso[loso["size"] == 1024]
    assert (at1k["chosen"] == "A").all() and at1k["regret"].tolist() == pytest.approx([2.0, 2.0])
    # at 8 B: the rules of 1 KiB and 1 MiB give B below isqrt(1K * 1M) = 32768
    at8 = loso[loso["size"] == 8]
    assert (at8["chosen"] == "B").all() and at8["regret"].tolist() == pytest.approx([2.0, 2.0])
    s = t.summary.set_index("evaluation").loc["leave-one-size-out"]
    assert s["regret_worst"] == pytest.approx(2.0)
    # at 1 MiB: B, the choice of the largest remaining size (1 KiB), extends upwards
    at1m = loso[loso["size"] == 1 << 20]
    assert (at1m["chosen"] == "B").all()
    assert s["regret_gmean"] == pytest.approx(2.0) and s["points"] == 6
    assert s["vs_native_worst"] == pytest.approx(6 / 10)  # worst = largest ratio
    # leaving one of two counts out: the rules of the other stop at it, native there
    lono = t.summary.set_index("evaluation").loc["leave-one-np-out"]
    assert (t.points["leave-one-np-out"]["chosen"] == "native").all() and lono["points"] == 6
    assert lono["regret_gmean"] == pytest.approx((5 * 10 / 3 * 5) ** (1 / 3))


def test_the_quality_view_merges_coinciding_evaluations_and_says_why():
    # every choice native: leave-one-size-out chooses native too, one row, a note, no gain
    f = frame(grid(lambda c, n, s: {"native": 5.0, "binomial": 10.0}))
    t = tune.tune(f, "colltune")
    view, notes = tune.quality_view(t.summary, t.points, t.has_native, t.keys)
    assert view["evaluation"].tolist() == ["in-sample = leave-one-size-out"]
    assert any("coincide" in n and "every choice is native" in n for n in notes)
    assert any(tune.NO_GAIN in n for n in notes)
    assert "vs_native_gmean" not in view.columns  # a column of 1s says nothing: gone
    assert "regret_worst_at" not in view.columns  # regret 1 everywhere: no worst point
    # a winner at every size: the rules without a size choose it there too
    f = frame(grid(lambda c, n, s: {"native": 10.0, "binomial": 5.0}))
    t = tune.tune(f, "colltune")
    view, notes = tune.quality_view(t.summary, t.points, t.has_native, t.keys)
    assert len(view) == 1 and any("neighbours have the same choice" in n for n in notes)
    assert view.iloc[0]["vs_native_gmean"] == "×0.50"  # printed as every ratio is
    # choices that differ by size: two rows, nothing merged
    lat = {8: {"native": 10.0, "A": 2.0, "B": 4.0}, 1024: {"native": 10.0, "A": 6.0, "B": 3.0},
           1 << 20: {"native": 10.0, "A": 2.0, "B": 4.0}}
    t = tune.tune(frame(grid(lambda c, n, s: lat[s])), "colltune")
    view, notes = tune.quality_view(t.summary, t.points, t.has_native, t.keys)
    assert view["evaluation"].tolist() == ["in-sample", "leave-one-size-out"]
    assert not any("coincide" in n for n in notes)
    assert view.iloc[1]["regret_worst_at"]  # worse than 1 somewhere: where is said


def test_the_quality_table_has_distinct_headings_and_no_placeholder_gain():
    from rich.console import Console

    from colltune.cli.tune import quality_table

    def text(t):
        con = Console(width=200, record=True)
        con.print(quality_table(t.summary, t.has_native, t.points, t.keys))
        return con.export_text()

    lat = {8: {"native": 10.0, "A": 2.0, "B": 4.0}, 1024: {"native": 10.0, "A": 6.0, "B": 3.0},
           1 << 20: {"native": 10.0, "A": 2.0, "B": 4.0}}
    out = text(tune.tune(frame(grid(lambda c, n, s: lat[s])), "colltune"))
    assert "worst regret at" in out and "worst ×native at" in out
    assert " worst at " not in out
    out = text(tune.tune(frame(grid(lambda c, n, s: {"native": 5.0, "binomial": 10.0})),
                         "colltune"))
    assert "in-sample = leave-one-size-out" in out and "coincide" in out
    assert "every choice is native: no gain" in out and "×native gmean" not in out
    # native-only in one collective, a winner in the other: its gain cell says so
    pts = {**grid(lambda c, n, s: {"native": 5.0, "binomial": 10.0}),
           **grid(lambda c, n, s: {"native": 10.0, "binomial": 5.0}, colls=("reduce",))}
    out = text(tune.tune(frame(pts), "colltune"))
    assert "×native gmean" in out and "every choice is native: no gain" in out and "×0.50" in out


def test_quality_of_a_rules_file_against_measurements():
    f = frame(grid(lambda c, n, s: {"native": 10.0, "binomial": 5.0, "linear": 8.0}))
    rs = rules.RuleSet("colltune", [Rule("bcast", 1, None, 0, None, "linear")])
    pts, summ = tune.quality(f, rs)
    assert pts["regret"].tolist() == pytest.approx([1.6] * 3)
    assert summ.iloc[0]["vs_native_gmean"] == pytest.approx(0.8)


# ------------------------------------------------------------------ bad input


def test_a_rules_file_from_another_library_or_version():
    f = frame(grid(lambda c, n, s: {"native": 10.0, "ompi:chain": 5.0}))
    rs = tune.select(f, "openmpi", meta={"mpi": "openmpi 5.0.11"})
    assert tune.rules_notes(rs, f) == []
    old = rules.RuleSet("openmpi", rs.rules + [Rule("bcast", 1, None, 0, None, "ompi:gone")],
                        {"mpi": "openmpi 4.1.6"})
    notes = tune.rules_notes(old, f)
    assert any("openmpi 4.1.6" in n and "openmpi 5.0.11" in n for n in notes)
    assert any("ompi:gone" in n for n in notes)
    with pytest.raises(TuneError, match="measured with openmpi"):
        tune.rules_notes(rules.RuleSet("mpich", [], {}), f)
    # a rule that matches no measured algorithm leaves the point unmeasured, not wrong
    pts, summ = tune.quality(f, rules.RuleSet("openmpi",
                                              [Rule("bcast", 1, None, 0, None, "ompi:gone")]))
    assert pts["regret"].isna().all() and summ.iloc[0]["unmeasured"] == 3


def test_no_native_gives_regret_only_with_a_note():
    f = frame(grid(lambda c, n, s: {"binomial": 5.0, "linear": 8.0}))
    t = tune.tune(f, "colltune")
    assert not t.has_native and any("no native" in n for n in t.notes)
    assert t.points["in-sample"]["regret"].tolist() == pytest.approx([1.0] * 3)
    assert t.points["in-sample"]["vs_native"].isna().all()
    assert {r.algorithm for r in t.rules.rules if not r.note} == {"binomial"}


def test_empty_study_and_missing_candidates_are_errors():
    with pytest.raises(TuneError, match="no measurements"):
        tune.tune(pd.DataFrame(), "colltune")
    f = frame(grid(lambda c, n, s: {"native": 10.0, "binomial": 5.0}))
    with pytest.raises(TuneError, match=r"ompi:all.*native"):
        tune.tune(f, "openmpi")
    with pytest.raises(TuneError, match="measured with openmpi, not mpich"):
        tune.tune(f, "mpich")
    with pytest.raises(TuneError, match="did you mean 'openmpi'"):
        tune.tune(f, "openmp")
    with pytest.raises(TuneError, match="did you mean 'bcast'"):
        tune.tune(f, "colltune", collectives=["bcst"])


def test_library_target_picks_among_the_library_only():
    f = frame(grid(lambda c, n, s: {"native": 10.0, "binomial": 2.0, "ompi:chain": 5.0,
                                    "ompi:linear": 12.0}))
    rs = tune.select(f, "openmpi")
    assert {r.algorithm for r in rs.rules if not r.note} == {"ompi:chain"}
    assert rs.target == "openmpi"
    assert {r.algorithm for r in tune.select(f, "colltune").rules if not r.note} == {"binomial"}


def test_an_algorithm_for_one_process_count_is_not_extended_to_others():
    # Open MPI's two_proc allgather errors at any np but 2: the rules keep it to np 2
    f = frame(grid(lambda c, n, s: {"native": 10.0, "ompi:two_proc": 2.0, "ompi:ring": 5.0},
                   colls=("allgather",), nps=(2,)))
    rs = tune.select(f, "openmpi")
    got = [(r.np_min, r.np_max, r.algorithm) for r in rs.rules]
    assert got == [(1, 1, "native"), (2, 2, "ompi:two_proc"), (3, None, "native")]
    assert tune.np_exact("allgather", "ompi:two_proc") == 2
    assert tune.np_exact("allgather", "two_proc") is None  # colltune's falls back itself


def test_oversubscribed_points_drive_no_choice_unless_asked():
    f = pd.concat([frame(grid(lambda c, n, s: {"native": 10.0, "binomial": 5.0}, nps=(2,))),
                   frame(grid(lambda c, n, s: {"native": 10.0, "linear": 5.0}, nps=(8,)))
                   .assign(unit_id=lambda d: d["unit_id"] + 100)])
    f["cores"] = 4
    t = tune.tune(f, "colltune")
    assert {r.algorithm for r in t.rules.rules} == {"binomial", "native"}
    assert any("oversubscribed" in n and "left out" in n for n in t.notes)
    assert set(t.points["in-sample"]["np"]) == {2}
    t2 = tune.tune(f, "colltune", include_oversubscribed=True)
    assert t2.rules.lookup("bcast", 8, 8).algorithm == "linear"


def test_rules_of_an_np2_study_with_np4_left_out_cover_np2_only(tmp_path):
    """Rules rest on measured cells: a study measured at np 2 and np 4, np 4
    oversubscribed (2 cores) and left out, gives rules for np 2 alone; every other
    count is native, with a comment saying why, and the header lists the counts
    measured and those left out (rules show prints them)."""
    f = pd.concat([frame(grid(lambda c, n, s: {"native": 10.0, "pairwise": 5.0},
                              colls=("alltoall",), nps=(2,))),
                   frame(grid(lambda c, n, s: {"native": 10.0, "linear": 5.0},
                              colls=("alltoall",), nps=(4,)))
                   .assign(unit_id=lambda d: d["unit_id"] + 100)])
    f["cores"] = 2
    rs = tune.tune(f, "colltune").rules
    assert [(r.np_min, r.np_max, r.algorithm) for r in rs.rules] == [
        (1, 1, "native"), (2, 2, "pairwise"), (3, None, "native")]
    assert rs.meta["measured processes"] == "2"
    assert rs.meta["left out"] == "np 4 (oversubscribed, more processes than cores)"
    text = rules.to_text(rs)
    assert "# np above 2 not measured (measured 2) so native\nalltoall 3 - 0 - native -" in text
    assert "# measured processes: 2\n" in text and "# left out: np 4 (" in text
    back = rules.from_text(text)
    assert back.rules == rs.rules and back.meta["left out"] == rs.meta["left out"]
    path = tmp_path / "t.rules"
    path.write_text(text)
    res = _cli("rules", "show", str(path))
    assert res.returncode == 0, res.stderr
    first = res.stdout.splitlines()[:3]
    assert "measured processes: 2" in first and any(l.startswith("left out: np 4") for l in first)


def test_candidates_missing_at_some_points_are_noted():
    def fn(c, n, s):
        return {"native": 10.0, "binomial": 5.0, **({"linear": 2.0} if s == 8 else {})}
    t = tune.tune(frame(grid(fn)), "colltune")
    assert any("not measured" in n for n in t.notes)
    assert t.rules.lookup("bcast", 2, 8).algorithm == "linear"


# ------------------------------------------------------------------ end to end

def _tiny_study(name, collectives, algorithms, repetitions=4, iterations=30, warmup=3):
    """A study of two sizes (8 B, 64 KiB) at 2 processes."""
    return (f'\n[study]\nname = "{name}"\ncollectives = {json.dumps(collectives)}\n'
            f"algorithms = {json.dumps(algorithms)}\nsizes = [8, 65536]\nprocesses = [2]\n"
            f"repetitions = {repetitions}\niterations = {iterations}\nwarmup = {warmup}\n")


TINY = _tiny_study("tinytune", ["bcast"], ["binomial", "linear", "native"])


def _cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "colltune", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, COLUMNS="200"))


def _sweep(tmp_path, study_text):
    """`sweep` of the study into tmp_path/r.db (which it returns), asserted to succeed;
    and sweep's result."""
    study, dbp = tmp_path / "study.toml", tmp_path / "r.db"
    study.write_text(study_text)
    res = _cli("sweep", study, "--db", dbp)
    assert res.returncode == 0, res.stderr
    return dbp, res


def _tune_openmpi_and_verify(dbp, study_name, conf, coll):
    """`tune --target openmpi -o conf`, then `rules verify conf` at np 2 and 3 and sizes 8
    and 64K: every row of coll agrees (verify exits 1 on a disagreement). Returns
    tune's result and verify's rows."""
    tuned = _cli("tune", "--db", dbp, "--study", study_name, "--target", "openmpi", "-o", conf)
    assert tuned.returncode == 0, tuned.stderr
    assert "Open MPI coll/tuned rules file" in tuned.stdout
    res = _cli("rules", "verify", conf, "--np", "2,3", "--size", "8,64K")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    # one table per process count, one row per size, each agreeing
    assert "2 processes" in res.stdout and "3 processes" in res.stdout
    rows = [ln for ln in res.stdout.splitlines() if f" {coll} " in ln]
    assert len(rows) == 4 and not any(" NO " in ln for ln in rows), res.stdout
    return tuned, rows


def test_sweep_then_tune_on_the_command_line(tmp_path, ompi_build):
    dbp, res = _sweep(tmp_path, TINY)
    out = tmp_path / "bcast.rules"
    res = _cli("tune", "--db", dbp, "--study", "tinytune", "--target", "colltune", "-o", out)
    assert res.returncode == 0, res.stderr
    assert "regret gmean" in res.stdout and "in-sample" in res.stdout
    # two sizes: leave-one-size-out exists, under its one name (merged with in-sample
    # where it coincides)
    assert "leave-one-size-out" in res.stdout and "CV size" not in res.stdout
    assert "one process count" in res.stderr  # but not leave-one-np-out
    rs = rules.read(out)
    assert rs.target == "colltune" and rs.meta["study"] == "tinytune"
    assert {r.algorithm for r in rs.rules} <= {"binomial", "linear", "native"}
    for size in (0, 8, 65536, 1 << 30):
        assert rs.lookup("bcast", 2, size) is not None
    con = sqlite3.connect(dbp)
    (text, summary, target) = con.execute("SELECT rules, summary, target FROM tunings").fetchone()
    con.close()
    assert text == out.read_text() and target == "colltune"
    summ = json.loads(summary)
    ins = [s for s in summ if s["evaluation"] == "in-sample"][0]
    assert ins["points"] == 2 and ins["regret_gmean"] >= 1.0
    assert math.isfinite(ins["vs_native_gmean"])
    # JSON output, and the errors of bad names
    res = _cli("tune", "--db", dbp, "--study", "tinytune", "--target", "colltune", "-o", out,
               "--format", "json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["rules"]["target"] == "colltune"
    res = _cli("tune", "--db", dbp, "--study", "tinytun", "--target", "colltune", "-o", out)
    assert res.returncode == 2 and "did you mean 'tinytune'" in res.stderr
    assert "Traceback" not in res.stderr
    res = _cli("tune", "--db", dbp, "--study", "tinytune", "--target", "openmpi", "-o", out)
    assert res.returncode == 2 and "ompi:all" in res.stderr and "Traceback" not in res.stderr
    assert rules.read(out).target == "colltune"  # no wrong file written over it
    # evaluate a rules file on the study: the one just written gives the in-sample figures
    res = _cli("tune", "--db", dbp, "--study", "tinytune", "--rules", out, "--format", "json")
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout)["summary"][0]
    assert got["evaluation"] == "rules file"
    assert got["regret_gmean"] == pytest.approx(ins["regret_gmean"])
    bad = tmp_path / "bad.rules"
    bad.write_text("bcast 1 - 0 - binomial -\n")
    res = _cli("tune", "--db", dbp, "--study", "tinytune", "--rules", bad)
    assert res.returncode == 2 and "not a colltune rules file" in res.stderr
    assert "Traceback" not in res.stderr


def _ro_bind_works() -> bool:
    import shutil

    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("mount"):
        return False
    res = subprocess.run(["unshare", "-m", "sh", "-c", "mount --bind -o ro /tmp /mnt "
                          "2>/dev/null && ! touch /mnt/.x 2>/dev/null"], capture_output=True,
                         timeout=30)
    return res.returncode == 0


@pytest.mark.skipif(not _ro_bind_works(), reason="needs root and unshare -m for a read-only "
                    "bind mount (chmod does not stop root)")
def test_tune_writes_the_rules_file_from_a_read_only_database(tmp_path, ompi_build):
    """A database on a read-only mount (a private mount namespace): tune still writes the
    rules file, and says in one note line that the tuning is not stored."""
    study = tmp_path / "tiny.toml"
    study.write_text(TINY)
    src, mnt = tmp_path / "src", tmp_path / "mnt"
    src.mkdir()
    mnt.mkdir()
    assert _cli("sweep", study, "--db", src / "r.db").returncode == 0
    before = (src / "r.db").read_bytes()
    out = tmp_path / "ro.rules"
    exe = [sys.executable, "-m", "colltune"]
    script = (f"mount --bind -o ro {src} {mnt} || exit 99\n"
              + " ".join(exe + ["tune", "--db", str(mnt / "r.db"), "--study", "tinytune",
                                "--target", "colltune", "-o", str(out)]))
    res = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True,
                         timeout=300, env=dict(os.environ, COLUMNS="200"))
    assert res.returncode == 0, res.stderr
    notes = [ln for ln in res.stderr.splitlines() if "not stored" in ln]
    assert len(notes) == 1 and notes[0].startswith("note: the tuning is not stored (cannot "
                                                   "write the results database"), res.stderr
    assert rules.read(out).target == "colltune" and "written to" in res.stdout
    assert (src / "r.db").read_bytes() == before  # nothing stored
    con = sqlite3.connect(src / "r.db")
    assert con.execute("SELECT count(*) FROM tunings").fetchone()[0] == 0
    con.close()


TINY_OMPI = _tiny_study("tinyompi", ["bcast"], ["native", "ompi:binomial", "ompi:linear",
                                                "ompi:scatter_allgather"])


def test_measure_tune_export_verify_with_open_mpi(tmp_path, ompi_build):
    """The whole loop on the command line: a sweep of Open MPI's own algorithms, `tune
    --target openmpi -o FILE` writing the file Open MPI reads, and `rules verify` running
    Open MPI under it: whatever the rules chose is what ran. With --colltune-format, tune
    writes colltune's own file; `rules verify` of that one suggests an export command,
    which works as suggested (issue 29)."""
    import shlex

    dbp, _ = _sweep(tmp_path, TINY_OMPI)
    ours, conf = tmp_path / "ompi.rules", tmp_path / "tuned.conf"
    tuned, _ = _tune_openmpi_and_verify(dbp, "tinyompi", conf, "bcast")
    assert f"coll_tuned_dynamic_rules_filename {conf}" in tuned.stdout
    assert not conf.read_text().startswith("# colltune-rules")
    res = _cli("rules", "check", conf)
    assert res.returncode == 0 and "Open MPI coll/tuned rules file" in res.stdout, res.stderr
    # colltune's own file for the same target: the rule set that was exported
    res = _cli("tune", "--db", dbp, "--study", "tinyompi", "--target", "openmpi", "-o", ours,
               "--colltune-format")
    assert res.returncode == 0, res.stderr
    rs = rules.read(ours)
    assert rs.target == "openmpi" and rs.collectives() == ["bcast"]
    assert {r.algorithm for r in rs.rules} <= {"native", "ompi:binomial", "ompi:linear",
                                               "ompi:scatter_allgather"}
    res = _cli("rules", "verify", ours, "--np", "2")
    assert res.returncode == 2 and "export it first: colltune rules export" in res.stderr
    suggested = shlex.split(res.stderr.split("export it first: ", 1)[1].strip())
    assert suggested[:3] == ["colltune", "rules", "export"], suggested
    res = _cli(*suggested[1:])  # the command as suggested works
    assert res.returncode == 0, res.stderr
    exported = suggested[suggested.index("-o") + 1]
    def body(text):  # the rules, without the comments (the creation time differs)
        return [ln for ln in text.splitlines() if not ln.startswith("#")]

    assert body(open(exported).read()) == body(conf.read_text())
    # a target-colltune file: no export is suggested (it would fail)
    mine = tmp_path / "mine.rules"
    mine.write_text("# colltune-rules 1\nbcast 2 - 0 - binomial -\n")
    res = _cli("rules", "verify", mine)
    assert res.returncode == 2 and "rules export" not in res.stderr
    assert "interposition library reads it" in res.stderr


TINY_OMPI_A2A = _tiny_study("tinya2a", ["alltoall"],
                            ["native", "ompi:pairwise", "ompi:modified_bruck",
                             "ompi:linear_sync:max_requests=2"],
                            repetitions=3, iterations=20, warmup=2)


def test_tune_export_verify_alltoall_with_open_mpi(tmp_path, ompi_build):
    """Alltoall through the same loop (issue 30): a sweep of Open MPI's alltoall
    algorithms, `tune --target openmpi -o FILE`, and `rules verify` at np 2 and 3 and two
    sizes: the algorithm each range names is the one Open MPI ran."""
    dbp, _ = _sweep(tmp_path, TINY_OMPI_A2A)
    _, rows = _tune_openmpi_and_verify(dbp, "tinya2a", tmp_path / "a2a.conf", "alltoall")
    # every row names an algorithm or Open MPI's fixed rules, and shows what ran
    assert all(any(a in ln for a in ("pairwise", "modified_bruck", "linear_sync", "fixed rules"))
               for ln in rows), rows


def test_quality_weighted_by_the_calls_an_application_makes():
    """Calls count for the measured point whose rules cover them: an application that
    only calls small sizes sees only the small points' regret and ratio to native."""
    def fn(c, n, s):  # linear wins clearly at 8 B; at 1 MiB nothing beats native
        return {"native": 10.0, "linear": 5.0 if s == 8 else 30.0}
    t = tune.tune(frame(grid(fn, sizes=(8, 1 << 20))), "colltune")
    pts = t.points["in-sample"]
    small = [("bcast", 2, 16, 1000)]            # 16 B: covered by the 8 B point's rules
    w = tune.weighted(pts, small)
    (row,) = w.to_dict("records")
    assert row["points"] == 1 and row["calls"] == 1000
    assert row["vs_native_gmean"] == pytest.approx(0.5, rel=0.05)   # linear 5 / native 10
    big = tune.weighted(pts, [("bcast", 4, 1 << 22, 7)])       # above: the 1 MiB point
    assert big.iloc[0]["vs_native_gmean"] == pytest.approx(1.0)
    assert tune.weighted(pts, [("allreduce", 2, 8, 5)]).empty  # not in the points
    both = tune.weighted(pts, small + [("bcast", 2, 1 << 20, 1000)])
    assert both.iloc[0]["vs_native_gmean"] == pytest.approx(0.5 ** 0.5, rel=0.05)


def test_a_profile_weighs_the_quality_on_the_command_line(tmp_path, ompi_build):
    dbp, _ = _sweep(tmp_path, TINY)
    out = tmp_path / "bcast.rules"
    prof = tmp_path / "app.profile.json"
    prof.write_text(json.dumps({"format": "colltune-profile 1", "np_world": 2, "dropped": 0,
                                "entries": [dict(collective="bcast", np=2, size_min=8,
                                                 size_max=15, algorithm="native", spec="native",
                                                 source="no rule", calls=500, ranks=2,
                                                 total_s=0.01, mean_s=2e-5,
                                                 max_rank_total_s=0.01)]}))
    res = _cli("tune", "--db", dbp, "--study", "tinytune", "--target", "colltune", "-o", out,
               "--profile", prof, "--format", "json")
    assert res.returncode == 0, res.stderr
    rows = [r for r in json.loads(res.stdout)["quality"]["summary"]
            if r["evaluation"] == "profile-weighted"]
    assert len(rows) == 1 and rows[0]["calls"] == 500 and rows[0]["points"] == 1
    res = _cli("tune", "--db", dbp, "--study", "tinytune", "--rules", out, "--profile", prof)
    assert res.returncode == 0, res.stderr
    assert "by app calls" in res.stdout and "500 calls" in res.stdout
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    res = _cli("tune", "--db", dbp, "--study", "tinytune", "--rules", out, "--profile", bad)
    assert res.returncode == 2 and "not a colltune profile" in res.stderr


def test_layouts_of_one_count_give_node_aware_rules():
    """np 16 measured as 16 nodes x 1 and 2 nodes x 8: binomial wins at one process per
    node, linear at 8 per node; the rules carry ppn ranges and the interposition file
    says them (ppn=1-2, ppn=3-: the choices' times cross at 2.8)."""
    one = frame(grid(lambda c, n, s: {"native": 10.0, "binomial": 5.0, "linear": 20.0},
                     nps=(16,), sizes=(8, 1024)))
    eight = frame(grid(lambda c, n, s: {"native": 10.0, "binomial": 20.0, "linear": 5.0},
                       nps=(16,), sizes=(8, 1024)))
    one = one.assign(nodes=16, ppn=1)
    eight = eight.assign(nodes=2, ppn=8, unit_id=eight["unit_id"] + 100)
    t = tune.tune(pd.concat([one, eight], ignore_index=True), "colltune")
    assert "ppn" in t.keys
    got = [(r.algorithm, r.ppn) for r in t.rules.rules if not r.note]
    # between the layouts the choice switches where the two candidates' times (5 -> 20
    # and 20 -> 5, a power law in ppn) cross: the geometric midpoint, 2.8 processes a node
    assert got == [("binomial", (1, 2)), ("linear", (3, None))], got
    assert t.rules.lookup("bcast", 16, 8, ppn=1).algorithm == "binomial"
    assert t.rules.lookup("bcast", 16, 8, ppn=2).algorithm == "binomial"
    assert t.rules.lookup("bcast", 16, 8, ppn=3).algorithm == "linear"
    assert t.rules.lookup("bcast", 16, 8, ppn=8).algorithm == "linear"
    assert (t.points["in-sample"]["regret"] == 1).all()
    text = rules.to_text(t.rules)
    assert "ppn=1-2" in text and "ppn=3-" in text
    assert rules.from_text(text).rules == t.rules.rules
    # one layout per count: no ppn dimension, as before
    assert "ppn" not in tune.tune(one, "colltune").keys
    # a size one layout alone measured: the rules still cover every ppn, np and size once
    eight_small = eight[eight["size"] == 8]
    rs = tune.tune(pd.concat([one, eight_small], ignore_index=True), "colltune").rules
    for q in range(1, 11):
        for n in (1, 16, 100):
            for size in (0, 8, 100, 1024, 1 << 20):
                assert sum(r.matches("bcast", n, size, ppn=q) for r in rs.rules) == 1, (q, n, size)
    assert rs.lookup("bcast", 16, 1024, ppn=7).algorithm == "binomial"  # ppn 1's, until 8
    assert rs.lookup("bcast", 16, 8, ppn=3).algorithm == "linear"
TINY_RS = _tiny_study("tinyrs", ["reduce_scatter_block", "reduce_scatter"],
                      ["native", "butterfly", "ring", "recursive_halving"],
                      repetitions=2, iterations=20, warmup=2)


def test_sweep_and_tune_reduce_scatter(tmp_path, ompi_build):
    """Reduce_scatter(_block) through sweep, the results database and tune (issue 30):
    sizes per process, every algorithm measured, a colltune rules file the
    interposition library's checker accepts."""
    dbp, res = _sweep(tmp_path, TINY_RS)
    out = tmp_path / "rs.rules"
    assert "32 points" in res.stdout + res.stderr
    res = _cli("tune", "--db", dbp, "--study", "tinyrs", "--target", "colltune", "-o", out)
    assert res.returncode == 0, res.stderr
    rules = [ln.split()[0] for ln in out.read_text().splitlines() if not ln.startswith("#")]
    assert set(rules) == {"reduce_scatter_block", "reduce_scatter"}, rules
    res = _cli("rules", "check", out)
    assert res.returncode == 0 and "a valid colltune rules file" in res.stdout, res.stderr


def test_gatherv_rules_choose_by_process_count_alone():
    """Alltoallv, Gatherv and Scatterv (a rank knows only its own counts; every rank must
    choose alike): a colltune rules file has one choice per process count covering every size,
    the per-size winner with the least geometric-mean regret over the sizes; other
    collectives keep their size ranges."""
    def times(c, n, s):
        if s < 1000:  # linear wins small sizes by 10 %, binomial large ones by 2x
            return {"native": 10.0, "linear": 5.0, "binomial": 5.5}
        return {"native": 10.0, "linear": 10.0, "binomial": 5.0}

    f = frame(grid(times, colls=("gatherv", "scatterv", "alltoallv", "gather"), nps=(2, 4),
                   sizes=(8, 64, 1 << 16, 1 << 20)))
    rs = tune.select(f, "colltune")
    by = {}
    for r in rs.rules:  # the measured process counts (beyond them: native, said so)
        if r.np_min <= 4 and (r.np_max is None or r.np_max >= 2):
            by.setdefault(r.collective, []).append(r)
    for coll in ("gatherv", "scatterv", "alltoallv"):
        assert [(r.algorithm, r.size_min, r.size_max) for r in by[coll]] == \
            [("binomial", 0, None)], by[coll]
    assert [r.algorithm for r in by["gather"]] == ["linear", "binomial"], by["gather"]
