"""Workload-aware selection (issue 18, docs/workload.md): load levels in studies, the
LOAD key of rules files, rules per load class from `tune`, the seed's analysis, the
generator beside a launch, and the interposition library choosing the rule set of the
measured (or forced) load class."""

from __future__ import annotations

import dataclasses
import math
import sqlite3

import numpy as np
import pandas as pd
import pytest

from colltune.base.collectives import COLLECTIVES
from colltune.results import db as db_mod
from colltune.rules import interpose
from colltune.mpi import launch
from colltune.rules import ruleset as rules
from colltune.rules import files as rulesfiles
from colltune.studies import study
from colltune.studies import sweep
from colltune.tuning import tune
from colltune.analysis import load as load_analysis
from colltune.analysis.points import latest_round
from colltune.drivers import loadgen as workload
from colltune.studies.study import StudyError

TWO_CLASSES = """# colltune-rules 1
# target: colltune
# load-class: quiet 0 20
# load-class: busy 20 -
bcast 1 - 0 - binomial - load=quiet
bcast 1 - 0 - linear - load=busy
allreduce 1 - 0 - ring -
"""


# ------------------------------------------------------------------ rules format


def test_rules_with_load_classes_round_trip_and_choose_by_index():
    rs = rules.from_text(TWO_CLASSES)
    assert [(c.name, c.lo, c.hi) for c in rs.load_classes] == [("quiet", 0, 20), ("busy", 20, None)]
    assert rs.load_class(5.0) == "quiet" and rs.load_class(20.0) == "busy"
    assert rs.load_class(1e9) == "busy"
    assert rs.lookup("bcast", 4, 100, load="quiet").algorithm == "binomial"
    assert rs.lookup("bcast", 4, 100, load="busy").algorithm == "linear"
    assert rs.lookup("allreduce", 4, 100, load="busy").algorithm == "ring"  # any load
    back = rules.from_text(rules.to_text(rs))
    assert back.rules == rs.rules and back.load_classes == rs.load_classes
    quiet = rs.for_load("quiet")
    assert [r.algorithm for r in quiet.rules] == ["binomial", "ring"]
    assert all(r.load is None for r in quiet.rules)
    with pytest.raises(rules.RulesError, match="no load class 'calm'"):
        rs.for_load("calm")


def test_files_without_load_read_as_before():
    text = "# colltune-rules 1\nbcast 2 - 0 - binomial -\nbcast 2 - 0 - binomial - core\n"
    rs = rules.from_text(text)
    assert rs.load_classes == [] and [r.load for r in rs.rules] == [None, None]
    assert rs.rules[1].mapping == "core"


@pytest.mark.parametrize("text,match", [
    ("bcast 1 - 0 - binomial - load=busy\n", "no such load class"),
    ("# load-class: busy 5\n", "NAME MIN MAX"),
    ("# load-class: busy 5 2\n", "0 <= MIN < MAX"),
    ("# load-class: a 0 1\n# load-class: a 1 2\n", "defined twice"),
])
def test_bad_load_lines_are_named(text, match):
    with pytest.raises(rules.RulesError, match=match):
        rules.from_text("# colltune-rules 1\n" + text, "f.rules")


def test_library_export_refuses_load_classes(tmp_path):
    rs = rules.from_text(TWO_CLASSES)
    with pytest.raises(rules.RulesError, match="load classes"):
        rulesfiles.export(rs, "openmpi", tmp_path / "x.rules", None)
    assert not (tmp_path / "x.rules").exists()


# ------------------------------------------------------------------ studies

BASE = """[study]
name = "w"
collectives = ["bcast"]
algorithms = ["binomial", "native"]
sizes = [8]
processes = [2]
repetitions = 1
"""


def test_study_load_levels_builtin_and_own():
    s = study.loads(BASE + 'load = ["none", "heavy", "mine"]\n'
                    '[study.load_levels.mine]\npattern = "hot"\nsize = "4K"\nduty = 0.5\n')
    assert s.load == ["none", "heavy", "mine"]
    assert s.load_levels["none"]["np"] == 0
    assert s.load_levels["mine"]["pattern"] == "hot" and s.load_levels["mine"]["size"] == 4096
    assert s.load_levels["heavy"] == dataclasses.asdict(workload.LEVELS["heavy"])


@pytest.mark.parametrize("extra,match", [
    ('load = ["none", "hevy"]\n', "did you mean 'heavy'"),
    ('load = ["none", "none"]\n', "named twice"),
    ('load = ["mine"]\n[study.load_levels.mine]\npatern = "hot"\n', "did you mean 'pattern'"),
    ('load = ["mine"]\n[study.load_levels.mine]\nduty = 0\n', "0 < duty <= 1"),
    ('[study.load_levels.mine]\nduty = 0.5\n', "names none"),
])
def test_study_load_errors_name_the_key(extra, match):
    with pytest.raises(StudyError, match=match):
        study.loads(BASE + extra)


def test_plan_has_a_launch_per_load_level_and_keys_without_load_unchanged(ompi_build):
    plain = study.loads(BASE)
    loaded = study.loads(BASE + 'load = ["none", "light"]\n')
    p0 = sweep.make_plan(plain, ompi_build, seed=1)
    p1 = sweep.make_plan(loaded, ompi_build, seed=1)
    assert [u.load for u in p0.units] == [None]
    assert sorted(u.load for u in p1.units) == ["light", "none"]
    assert "/load-" not in p0.units[0].key and all("/load-" in u.key for u in p1.units)
    assert any("take CPU time" in n for n in p1.notes)


# ------------------------------------------------------------------ analysis and tuning


def _frame(seed=3):
    """Launches under two levels: 'a' is fast when quiet, 'b' when busy; every launch
    has its own probe, latencies grow with it."""
    rng = np.random.default_rng(seed)
    rows, unit = [], 0
    for level, probe0, fast in (("none", 5.0, "a"), ("heavy", 40.0, "b")):
        for rep in range(6):
            unit += 1
            probe = probe0 * (1 + 0.1 * rng.random())
            for algo in ("native", "a", "b"):
                base = probe * 10
                lat = base * (0.6 if algo == fast else 1.0) * (1 + 0.01 * rng.random())
                rows.append({"study": "w", "run_id": 1, "unit_id": unit, "round": 1,
                             "repetition": rep + 1, "collective": "bcast", "algorithm": algo,
                             "spec": algo, "params": "{}", "np": 2, "nodes": 1, "ppn": 2,
                             "mapping": "core", "size": 1024, "median_us": lat, "valid": 1,
                             "load_level": level, "probe_us": probe, "cores": 2,
                             "mpi_kind": "openmpi", "mpi_version": "5"})
    return pd.DataFrame(rows)


def test_analysis_correlation_best_per_level_and_changes():
    df = _frame()
    corr = load_analysis.correlations(df)
    assert set(corr["algorithm"]) == {"native", "a", "b"}
    assert (corr["pearson"] > 0.9).all() and (corr["spearman"] > 0.7).all()
    assert load_analysis.level_order(df) == ["none", "heavy"]
    best = load_analysis.best_per_level(df.assign(label=df["algorithm"]))
    assert list(zip(best["load_level"], best["best"])) == [("none", "a"), ("heavy", "b")]
    ch = load_analysis.changes(best)
    assert ch["changes"].tolist() == [1]
    classes = tune.classes_from_frame(df)
    assert [c.name for c in classes] == ["none", "heavy"]
    assert 5 < classes[0].hi < 40 and classes[1].lo == classes[0].hi
    text = load_analysis.summary_text(df.assign(label=df["algorithm"]))
    assert "changes with the load at 1 of 1" in text


def test_tune_makes_rules_per_load_class():
    t = tune.tune(_frame(), "colltune")
    rs = t.rules
    assert [c.name for c in rs.load_classes] == ["none", "heavy"]
    # the measured count (np 2); below and above it: native, said so in a comment
    by = {r.load: r.algorithm for r in rs.rules
          if r.np_min <= 2 and (r.np_max is None or r.np_max >= 2)}
    assert by == {"none": "a", "heavy": "b"}
    ins = t.points["in-sample"]
    assert (ins["regret"] == 1).all()
    # a quiet-only tuning (what --load-level none does) has no load dimension
    quiet = tune.tune(_frame()[lambda d: d["load_level"] == "none"], "colltune")
    assert quiet.rules.load_classes == [] and {
        r.algorithm for r in quiet.rules.rules
        if r.np_min <= 2 and (r.np_max is None or r.np_max >= 2)} == {"a"}
    text = rules.to_text(rs)
    assert "# load-class: none 0 " in text and "load=heavy" in text


def test_without_probe_values_the_analysis_says_why():
    with pytest.raises(workload.LoadError, match="no load dimension"):
        load_analysis.correlations(_frame().assign(probe_us=math.nan))


def test_schema_v4_adds_the_load_columns(tmp_path):
    conn = db_mod.open_db(tmp_path / "x.db")
    cols = {r[1] for r in conn.execute("PRAGMA table_info(measurements)")}
    assert {"load_level", "probe_us"} <= cols
    assert db_mod.schema_version(conn) == db_mod.SCHEMA_VERSION >= 4
    conn.close()
    c = sqlite3.connect(tmp_path / "old.db")  # a v3 database migrates
    for stmt in db_mod.MIGRATIONS[0] + db_mod.MIGRATIONS[1] + db_mod.MIGRATIONS[2]:
        c.execute(stmt)
    c.execute("PRAGMA user_version = 3")
    c.commit()
    c.close()
    conn = db_mod.open_db(tmp_path / "old.db")
    assert {"load_level", "probe_us"} <= {r[1] for r in
                                          conn.execute("PRAGMA table_info(measurements)")}
    conn.close()


# ------------------------------------------------------------------ running


def test_generator_runs_beside_and_stops_with_its_session(ompi_build):
    lv = workload.LoadLevel("t", "pairs", 2, 4096, 2, 0.5, 20.0)
    with launch.session() as s:
        gen = workload.start_generator(ompi_build, lv)
        assert gen.running()
        stats = gen.stop()
    assert stats["kind"] == "load" and stats["messages"] > 0 and stats["np"] == 2
    assert 0 < stats["busy_fraction"] <= 1
    assert s.background and not s.background[0].running()
    with launch.session():  # left running: the session's end stops it
        gen = workload.start_generator(ompi_build, lv)
    assert not gen.running()


def test_a_study_with_load_stores_the_probe_with_every_point(ompi_build, tmp_path):
    s = study.loads(BASE.replace('["binomial", "native"]', '["binomial"]')
                    + 'iterations = 20\nwarmup = 2\nprobe_iterations = 50\n'
                    'load = ["none", "light"]\n')
    plan = sweep.make_plan(s, ompi_build, seed=2)
    conn = db_mod.open_db(tmp_path / "w.db")
    oc = sweep.execute(plan, conn, progress=False)
    assert oc.failed == 0 and oc.done == 2
    rows = conn.execute("SELECT load_level, probe_us FROM measurements").fetchall()
    assert sorted(r[0] for r in rows) == ["light", "none"]
    assert all(r[1] is not None and r[1] > 0 for r in rows)
    notes = [r[0] for r in conn.execute("SELECT notes FROM units")]
    assert any("load light: pairs" in n for n in notes)
    conn.close()


def _pmpi(build, env, np=2):
    e = {"COLLTUNE_RULES": "", "COLLTUNE_VERBOSE": "1", "COLLTUNE_LOAD_INDEX": "",
         "COLLTUNE_LOAD_PROBE": "", **{interpose.force_variable(c): "" for c in COLLECTIVES}}
    e.update(interpose.preload(build, {}))
    e.update(env)
    res = launch.run(launch.prepare(build.mpi, np, [str(build.program("colltune-plaincolls"))],
                                    e), timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    return [ln for ln in res.stderr.splitlines() if ln.startswith("colltune-pmpi: ")]


def test_interposition_applies_the_rule_set_of_the_load_class(ompi_build, tmp_path):
    f = tmp_path / "load.rules"
    f.write_text(TWO_CLASSES)
    for index, cls, algo in (("5", "quiet", "binomial"), ("50", "busy", "linear")):
        lines = _pmpi(ompi_build, {"COLLTUNE_RULES": str(f), "COLLTUNE_LOAD_INDEX": index})
        assert any(f"load index {float(index):.3f} us (COLLTUNE_LOAD_INDEX; MPI_Init) -> class "
                   f"{cls}" in ln for ln in lines), lines
        ran = [ln for ln in lines if ln.startswith("colltune-pmpi: bcast np=2 size 0.. B:")]
        assert ran and all(f": {algo} (" in ln and f"load {cls}" in ln for ln in ran), ran
    # measured: the probe says how long it took
    lines = _pmpi(ompi_build, {"COLLTUNE_RULES": str(f), "COLLTUNE_LOAD_PROBE": "20"})
    probe = [ln for ln in lines if "load index" in ln]
    assert len(probe) == 1 and "probe: 20 iterations" in probe[0] and " ms; MPI_Init)" in probe[0]


def test_colltune_run_passes_the_load_settings(tmp_path):
    f = tmp_path / "load.rules"
    f.write_text(TWO_CLASSES)
    env = interpose.settings(rules=f, load_index=42.5, load_probe=0)
    assert env["COLLTUNE_LOAD_INDEX"] == "42.5" and env["COLLTUNE_LOAD_PROBE"] == "0"
    plain = tmp_path / "plain.rules"
    plain.write_text("# colltune-rules 1\nbcast 1 - 0 - binomial -\n")
    with pytest.raises(interpose.InterposeError, match="load classes"):
        interpose.settings(rules=plain, load_index=1.0)
    with pytest.raises(interpose.InterposeError, match=">= 0"):
        interpose.settings(rules=f, load_index=-1.0)


def test_mpi_pcontrol_measures_the_load_again(ompi_build, tmp_path):
    f = tmp_path / "load.rules"
    f.write_text(TWO_CLASSES)
    base = {"COLLTUNE_RULES": str(f), "COLLTUNE_VERBOSE": "1", "COLLTUNE_LOAD_PROBE": "10"}
    base.update(interpose.preload(ompi_build, {}))

    def run(args, extra=None):
        ln = launch.prepare(ompi_build.mpi, 2, [str(ompi_build.program("colltune-phases")),
                                                *args], {**base, **(extra or {})})
        res = launch.run(ln, timeout=120)
        assert res.returncode == 0 and "data ok" in res.stdout, res.stderr[-2000:]
        return [ln for ln in res.stderr.splitlines() if "load index" in ln]

    probes = run(["3", "65536"])
    assert [("MPI_Init" in p, "MPI_Pcontrol" in p) for p in probes] == \
        [(True, False), (False, True), (False, True)]
    assert len(run(["3", "65536", "5"])) == 1  # another level: the library's Pcontrol alone
    assert len(run(["2", "65536"], {"COLLTUNE_LOAD_PCONTROL": "5"})) == 1
    assert len(run(["2", "65536", "5"], {"COLLTUNE_LOAD_PCONTROL": "5"})) == 2


def test_a_generator_whose_launcher_failed_to_start_is_started_again(tmp_path, monkeypatch):
    """The launcher flake `launch.run` retries (Open MPI's PMIx listener) is retried for
    the background generator too; any other early end is an error at once."""
    import os

    count = tmp_path / "tries"
    script = tmp_path / "gen.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"echo x >> {count}\n"
        f"if [ $(wc -l < {count}) -lt 2 ]; then\n"
        "  echo \"The PMIx server's listener thread failed to start. We cannot\" >&2\n"
        "  exit 213\n"
        "fi\n"
        "echo '{\"kind\": \"load-ready\"}'\n"
        "while [ ! -e \"$1\" ]; do sleep 0.05; done\n"
        "echo '{\"kind\": \"load\", \"bytes\": 1, \"elapsed_s\": 1, \"busy_fraction\": 0.5}'\n")
    script.chmod(0o755)

    def fake_launch(build, level, duration=0.0, placement=None, stop_file=None):
        return launch.Launch([str(script), stop_file], dict(os.environ))

    monkeypatch.setattr(workload, "generator_launch", fake_launch)
    level = workload.LoadLevel("heavy", np=2)
    gen = workload.Generator(None, level, start_timeout=20)
    assert gen.running() and count.read_text().count("x") == 2
    assert gen.stop(grace=10)["busy_fraction"] == 0.5

    count.write_text("")
    script.write_text(script.read_text().replace("PMIx server's listener thread", "something"))
    with pytest.raises(workload.LoadError, match="ended before sending"):
        workload.Generator(None, level, start_timeout=20)
    assert count.read_text().count("x") == 1


def test_the_report_load_section_concludes_from_each_studys_latest_round():
    """A second study with a higher round number does not hide the first study's
    points (points.latest_round: per study, not the largest round of the database)."""
    from colltune.output import figures as pl
    from colltune.output.report.load import load_section
    from colltune.output.report.page import ReportParts

    w = _frame()
    other = _frame(seed=4).assign(study="x", round=3,
                                  load_level=lambda d: "x-" + d["load_level"])
    html = load_section(pd.concat([w, other], ignore_index=True), ReportParts(),
                        pl.Palette(pl.FALLBACK_ORDER))
    assert ">heavy<" in html and ">x-heavy<" in html  # both studies' levels concluded on
    # and within one study only its latest round counts: round 2 where b always wins
    w2 = _frame(seed=5).assign(round=2, median_us=lambda d: np.where(
        d["algorithm"] == "b", d["median_us"] * 0.3, d["median_us"]))
    best = load_analysis.best_per_level(latest_round(pd.concat([w, w2], ignore_index=True))
                                        .assign(label=lambda d: d["algorithm"]))
    assert set(best["best"]) == {"b"}
