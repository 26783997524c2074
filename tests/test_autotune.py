"""`colltune autotune` (issue 54): the whole loop on the heat application built without
colltune (colltune-heat-plain), at 2 processes, kept small; a rerun resumes."""

from __future__ import annotations

import sqlite3

from colltune.mpi import launch
from colltune.results import db as db_mod
from colltune.results import reader
from colltune.rules import ruleset as rules_mod
from colltune.studies import study as study_mod

from conftest import colltune


def test_the_loop_on_the_heat_application(ompi_build, tmp_path):
    # an Allreduce of the largest change every iteration (a threshold never reached)
    argv = launch.prepare(ompi_build.mpi, 2, [
        str(ompi_build.program("colltune-heat-plain")), "--rows", "100", "--cols", "100",
        "--iterations", "1500", "--threshold", "1e-12"]).argv
    work, db = tmp_path / "loop", tmp_path / "at.db"
    res = colltune("autotune", "--dir", str(work), "--db", str(db), "--study-reps", "4",
                   "--reps", "4", "--", *argv)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    text = res.stdout
    for step in range(1, 6):
        assert f"autotune {step}/5" in text
    # the study: the Allreduce of 8 bytes at 2 processes, and nothing the program did not use
    s = study_mod.load(work / "study.toml")
    assert s.collectives == ["allreduce"] and s.sizes_of("allreduce") == [8]
    assert s.processes == [2] and s.from_profile["file"] == str(work / "profile.json")
    # the rules (colltune's own file) and their weighted quality
    assert rules_mod.read(work / "rules").target == "colltune"
    assert "by app calls" in text
    # the comparison, stored with its runs, and one answer
    conn = db_mod.open_db(db)
    [cmp] = reader.app_comparisons(conn)
    assert cmp["status"] == "done" and len(cmp["runs"]) == 8
    assert cmp["summary"]["b_rules"] == str(work / "rules")
    outcome = cmp["summary"]["verdict"]["outcome"]
    assert outcome in ("faster", "slower", "tie")  # four pairs: never "insufficient"
    answer = [ln for ln in text.splitlines() if ln.startswith("answer:")]
    assert len(answer) == 1
    want = "use the rules file" if outcome == "faster" else "keep the library's defaults"
    assert want in answer[0], answer
    points = conn.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
    conn.close()
    # a rerun resumes: the profile and the study are used again, the sweep measures nothing
    res = colltune("autotune", "--dir", str(work), "--db", str(db), "--study-reps", "4",
                   "--reps", "1", "--", *argv)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "(--new profiles again)" in res.stdout
    assert "4 already stored" in res.stderr or "already stored" in res.stderr, res.stderr
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM measurements").fetchone()[0] == points
    # one run a side: too few to tell, and the answer says so
    assert "keep the library's defaults: too few runs to tell" in res.stdout
