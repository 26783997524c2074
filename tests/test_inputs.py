"""Bad input is refused up front (issue 29): exit status 2, `error:` lines and nothing
else (no traceback), nothing launched, nothing written. Study files with several
mistakes, output paths whose folder is missing or unwritable, several algorithms for
`traffic`, misspelt names in the readers' filters."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from colltune.results import db, store
from conftest import colltune
from test_db import _record
from test_report import make_db as make_bare_db


def refused(res, lines: int = 1) -> list[str]:
    """The error lines of a refused command (exit 2, only `error:` lines on stderr)."""
    assert res.returncode == 2, (res.stdout, res.stderr)
    out = res.stderr.strip().splitlines()
    assert len(out) == lines and all(x.startswith("error: ") for x in out), out
    assert "Traceback" not in res.stderr + res.stdout
    return out


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def dbs(tmp_path_factory):
    """A colltune database (study 'tiny': bcast, binomial and native, np 2, core) and a
    bare one (test_report's synthetic study 'quick')."""
    d = tmp_path_factory.mktemp("inputs")
    path = d / "r.db"
    conn = db.open_db(path)
    sid = store.upsert_study(conn, "tiny", {"name": "tiny"}, "a test study")
    rid = store.store_run(conn, study_id=sid, round=1)
    store.store_unit(conn, study_id=sid, run_id=rid, round=1, key="k1", collective="bcast",
                     np=2, nodes=1, ppn=2, mapping="core", rank_order="seq", repetition=1,
                     algorithms=["binomial", "native"], library_spec=None, command="mpirun",
                     env={}, notes=[], started_at=db.now(), seconds=1.0,
                     records=[_record("binomial", median=2.0), _record("native", median=1.0)])
    store.finish_run(conn, rid, "done")
    conn.close()
    return path, make_bare_db(d / "bare.db")


# ---------------------------------------------------------------- 1. study files

SEVEN_MISTAKES = """\
[study]
name = "bad"
collectives = ["bcast", "reduse"]
algorithms = ["binomial", "natve"]
sizes = [8, "12Q", "1:1M"]
processes = ["2:8", "x"]
repetitons = 2
mapping = ["core", "sockt"]
order = "random"
timing = "osuu"
"""


@pytest.mark.parametrize("how", [["--dry-run"], ["--emit-sbatch", "job.sh"], []])
def test_a_study_file_with_seven_mistakes_gets_them_all_at_once(tmp_path, how):
    f = tmp_path / "bad.toml"
    f.write_text(SEVEN_MISTAKES)
    how = [str(tmp_path / a) if a == "job.sh" else a for a in how]
    res = colltune("sweep", str(f), "--db", str(tmp_path / "r.db"), *how, timeout=600)
    lines = refused(res, lines=8)
    where = [int(x.split(":")[2]) for x in lines]  # error: FILE:LINE: ...
    assert where == [3, 4, 5, 6, 7, 8, 9, 10], lines  # in the order of the file
    for key, hint in (("study.collectives[1]", "did you mean 'reduce'?"),
                      ("study.algorithms[1]", "did you mean 'native'?"),
                      ("study.sizes[1]", "'12Q' is not a size"),
                      ("study.processes[1]", "'x' is not a process count"),
                      ("study.repetitons", "did you mean 'repetitions'?"),
                      ("study.mapping[1]", "did you mean 'socket'?"),
                      ("study.order[0]", "'random' is not one of seq, rr"),
                      ("study.timing", "did you mean 'osu'?")):
        assert any(f": {key}: " in x and hint in x for x in lines), (key, lines)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml"]  # no db, no script


def test_study_ranges_read_as_on_the_command_line(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('[study]\nname = "r"\ncollectives = ["bcast"]\nalgorithms = ["native"]\n'
                 'sizes = "8:32"\nprocesses = "2:3"\n')
    res = colltune("sweep", str(f), "--db", str(tmp_path / "r.db"), "--dry-run", timeout=600)
    assert res.returncode == 0, res.stderr
    assert "sizes: 8, 16, 32; processes: 2, 3;" in res.stdout, res.stdout
    res = colltune("sweep", str(f), "--db", str(tmp_path / "r.db"), "--dry-run", "--np", "2:3",
                   timeout=600)
    assert "processes: 2, 3;" in res.stdout, res.stdout
    assert not (tmp_path / "r.db").exists()


# ---------------------------------------------------------------- 2. output paths

def _output_commands(d: Path, dbp: Path, bare: Path, rules: Path):
    """(arguments before the output, the option, arguments after) of every command
    that writes a file."""
    return [
        (["export", "--db", str(dbp)], "-o", []),
        (["plot", "--db", str(bare), "--kind", "vs-size"], "-o", []),
        (["report", "--db", str(bare)], "-o", []),
        (["tune", "--db", str(dbp), "--study", "tiny", "--target", "colltune"], "-o", []),
        (["rules", "export", str(rules), "--to", "openmpi"], "-o", []),
        (["bench", "--coll", "bcast", "--np", "2", "--format", "csv"], "-o", []),
        (["pingpong", "--format", "csv"], "-o", []),
        (["traffic", "--coll", "bcast", "--algo", "binomial", "--np", "2", "--format", "json"],
         "-o", []),
        (["heat", "--np", "2"], "-o", []),
        (["platform", "write", "flat"], "-o", []),
        (["platform", "calibrate"], "-o", []),
        (["run"], "--profile", ["--print-env"]),
        (["sweep", "--preset", "quick", "--db", str(d / "s.db")], "--emit-sbatch", []),
        (["quick", "--db", str(d / "q.db")], "-o", []),
    ]


def test_every_output_option_refuses_a_missing_or_unwritable_folder(tmp_path, dbs):
    from test_rules_export import OMPI_RULES, _rs
    from colltune.rules import ruleset as R

    dbp, bare = dbs
    rules = tmp_path / "tuned.rules"
    rules.write_text(R.to_text(_rs("openmpi", OMPI_RULES)))
    before = digest(dbp), digest(bare)
    for pre, opt, post in _output_commands(tmp_path, dbp, bare, rules):
        target = tmp_path / "no" / "such" / "out.x"
        (line,) = refused(colltune(*pre, opt, str(target), *post, timeout=300))
        if pre[0] == "run":  # the profile's folder: the library creates none, it says so
            assert line.startswith(f"error: {opt} {target}: the folder {target.parent} does "
                                   "not exist"), line
        else:
            assert line == f"error: {opt} {target}: directory {target.parent} does not exist", pre
        assert not (tmp_path / "no").exists(), pre
        if pre[0] in ("export", "report", "bench", "platform"):
            (line,) = refused(colltune(*pre, opt, "/proc/colltune-x.out", *post, timeout=300))
            assert line == f"error: {opt} /proc/colltune-x.out: directory /proc is not writable"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tuned.rules"]
    assert (digest(dbp), digest(bare)) == before


# ---------------------------------------------------------------- 3. traffic --algo

def test_traffic_takes_one_algorithm(tmp_path):
    out = tmp_path / "t.json"
    (line,) = refused(colltune("traffic", "--coll", "bcast", "--algo", "binomial,linear",
                               "--np", "2", "--format", "json", "-o", str(out), timeout=120))
    assert line == ("error: --algo 'binomial,linear': traffic counts one algorithm at a "
                    "time; give one, e.g. --algo binomial")
    # the parameters of one spec are no second algorithm
    (line,) = refused(colltune("traffic", "--coll", "bcast", "--algo",
                               "chain:segsize=8192,fanout=2,linear", "--np", "2", timeout=120))
    assert "e.g. --algo chain:segsize=8192,fanout=2" in line
    assert not out.exists()


# ---------------------------------------------------------------- 4. readers' filters

@pytest.mark.parametrize("cmd", ["results", "export", "fit", "plot", "report", "model"])
@pytest.mark.parametrize("option, value, message", [
    ("--coll", "bcst", "unknown collective 'bcst' (did you mean 'bcast'?); valid: bcast, "),
    ("--coll", "bcast,reduse", "unknown collective 'reduse' (did you mean 'reduce'?)"),
    ("--algo", "natve", "unknown algorithm 'natve' in {db} (did you mean 'native'?); it holds: "
                        "binomial, "),
    ("--mapping", "sockt", "unknown mapping 'sockt' (did you mean 'socket'?); valid: core, "
                           "socket, node"),
])
def test_a_misspelt_filter_is_refused_with_did_you_mean(tmp_path, dbs, cmd, option, value,
                                                        message):
    dbp, bare = dbs
    use = dbp if cmd in ("results", "export") else bare
    before = digest(use)
    out = tmp_path / "out.x"
    extra = {"export": ["-o", str(out)], "plot": ["--kind", "vs-size", "-o", str(out)],
             "report": ["-o", str(out)]}.get(cmd, [])
    (line,) = refused(colltune(cmd, "--db", str(use), option, value, *extra, timeout=300))
    assert line.startswith("error: " + message.format(db=use)), line
    assert not out.exists() and digest(use) == before


def test_a_misspelt_study_is_refused_and_a_valid_empty_filter_keeps_its_message(dbs):
    dbp, bare = dbs
    (line,) = refused(colltune("results", "--db", str(dbp), "--study", "tny"))
    assert line == f"error: unknown study 'tny' in {dbp} (did you mean 'tiny'?); it holds: tiny"
    (line,) = refused(colltune("fit", "--db", str(bare), "--study", "quik"))
    assert "(did you mean 'quick'?)" in line
    # valid names that select nothing: the messages they had
    res = colltune("results", "--db", str(dbp), "--coll", "gather")
    assert res.returncode == 0 and res.stderr.strip() == "no points match", res.stderr
    res = colltune("results", "--db", str(dbp), "--study", "(bench)")
    assert res.returncode == 0 and res.stderr.strip() == "no points match", res.stderr
    (line,) = refused(colltune("fit", "--db", str(bare), "--coll", "gather"))
    assert line == "error: the selection holds no measurements"
