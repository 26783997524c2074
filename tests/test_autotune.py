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
    # the study's report has the application: the comparison of its rules
    rep = colltune("report", "--db", str(db), "--study", s.name, "-o", str(tmp_path / "r.html"))
    assert rep.returncode == 0, rep.stderr[-2000:]
    html = (tmp_path / "r.html").read_text()
    assert 'id="application"' in html and cmp["summary"]["answer"].split(":")[0] in html
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


def test_ctrl_c_keeps_what_was_measured_and_a_rerun_resumes(ompi_build, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    argv = launch.prepare(ompi_build.mpi, 2, [
        str(ompi_build.program("colltune-heat-plain")), "--rows", "50", "--cols", "50",
        "--iterations", "300", "--threshold", "1e-12"]).argv
    work, db = tmp_path / "loop", tmp_path / "at.db"
    cmd = [str(Path(sys.executable).parent / "colltune"), "autotune", "--dir", str(work),
           "--db", str(db), "--study-reps", "12", "--reps", "1", "--", *argv]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, COLUMNS="200"))
    stored = 0
    try:
        t0 = time.monotonic()
        while stored < 2 and time.monotonic() - t0 < 300:
            assert p.poll() is None, p.communicate()
            if db.exists():
                try:
                    c = sqlite3.connect(db, timeout=1)
                    stored = c.execute("SELECT COUNT(*) FROM units").fetchone()[0]
                    c.close()
                except sqlite3.Error:
                    pass
            time.sleep(0.1)
        assert stored >= 2
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, out[-2000:] + err[-2000:]
    assert "answer:" not in out and "Run the same command again to resume" in err
    c = sqlite3.connect(db)
    kept = c.execute("SELECT COUNT(*) FROM units").fetchone()[0]
    c.close()
    assert 2 <= kept < 12
    res = colltune(*cmd[1:])
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert f"{kept} already stored" in res.stderr and "answer:" in res.stdout
