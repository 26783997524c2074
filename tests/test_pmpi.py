"""The interposition library: colltune's algorithms inside a program that knows nothing
of colltune (issue 15).

colltune-plaincolls (native/tests/plaincolls.c) is plain MPI: all five collectives at
several counts and roots, MPI_IN_PLACE, a non-commutative user op, a sub-communicator,
an intercommunicator, communicators created and freed; it checks every result against
values it computes itself and exits 1 on any difference. Here it runs with
libcolltune-pmpi.so preloaded, with every algorithm forced in turn and with a rules
file, at 2 and 3 processes, under Open MPI and MPICH. COLLTUNE_VERBOSE=1 shows which
algorithm ran, so each test also proves that ours ran, not the library's.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from colltune.rules import interpose
from colltune.rules import ruleset as rules
from colltune.mpi import launch
from colltune.drivers import registry
from colltune.base.collectives import COLLECTIVES
from conftest import colltune

NPS = [2, 3]
ALL_VARS = ["COLLTUNE_RULES", "COLLTUNE_VERBOSE", "COLLTUNE_PROFILE",
            *(interpose.force_variable(c) for c in COLLECTIVES)]


def _run(build, np, env=None, args=(), timeout=120):
    """plaincolls under the interposition library; every COLLTUNE_ variable the test
    does not set is empty, so nothing leaks in from the caller's environment."""
    e = {v: "" for v in ALL_VARS}
    e.update(interpose.preload(build, {}))
    e.update(env or {})
    ln = launch.prepare(build.mpi, np, [str(build.program("colltune-plaincolls")), *args], e)
    res = launch.run(ln, timeout=timeout)
    assert not res.timed_out, f"hang: {ln.command_line}\n{res.stderr[-3000:]}"
    return res


def _passed(res):
    assert res.returncode == 0, res.stdout + res.stderr[-4000:]
    assert re.search(r"plaincolls: \d+ checks passed", res.stdout), res.stdout


def _decisions(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("colltune-pmpi: ")
            and "warning:" not in ln]


def _forced_matrix(build, np):
    names = {c: registry.names(build, c) for c in COLLECTIVES}
    rounds = max(len(v) for v in names.values())
    for k in range(rounds):
        chosen = {c: names[c][k % len(names[c])] for c in COLLECTIVES}
        env = {interpose.force_variable(c): a for c, a in chosen.items()}
        env["COLLTUNE_VERBOSE"] = "1"
        res = _run(build, np, env)
        _passed(res)
        lines = _decisions(res.stderr)
        for coll, algo in chosen.items():
            var = interpose.force_variable(coll)
            mine = [ln for ln in lines if ln.startswith(f"colltune-pmpi: {coll} np={np} ")
                    and f"({var}" in ln]
            assert mine, f"{coll}/{algo} np={np}: no decision printed\n" + "\n".join(lines)
            # what ran: the algorithm itself, or its declared fallback, which says so
            for ln in mine:
                ran = ln.split(": ", 2)[2].split(" ", 1)[0]
                assert ran == algo or f"{coll}/{algo} ->" in ln, ln
            assert any(ln.split(": ", 2)[2].startswith(algo + " ") for ln in mine) \
                or algo == "native" or all("->" in ln for ln in mine), mine
    return rounds


@pytest.mark.parametrize("np", NPS)
def test_every_algorithm_forced_openmpi(ompi_build, np):
    assert _forced_matrix(ompi_build, np) >= 8


@pytest.mark.mpich
@pytest.mark.parametrize("np", NPS)
def test_every_algorithm_forced_mpich(mpich_build, np):
    assert _forced_matrix(mpich_build, np) >= 8


def test_a_wrong_algorithm_is_caught(ompi_build):
    """The checks can fail: the test-only Bcast that corrupts data, forced, is caught by
    the plain program (so a passing run really ran our algorithms)."""
    res = _run(ompi_build, 3, {"COLLTUNE_BCAST": "_broken"})
    assert res.returncode != 0
    assert "FAIL rank" in res.stderr and "bcast" in res.stderr


RULES = """# colltune-rules 1
# target: colltune
# COLLECTIVE NP_MIN NP_MAX SIZE_MIN SIZE_MAX ALGORITHM PARAMS [MAPPING]
bcast 2 - 0 1000 binomial -
bcast 2 - 1001 - pipeline segsize=1024
reduce 3 - 0 - in_order_binary -
reduce 2 2 0 - native -
gather 1 - 0 - binomial -
allgather 2 - 0 100 recursive_doubling -
allgather 2 - 101 - ring -
allreduce 2 - 0 64 recursive_doubling -
allreduce 2 - 65 - rabenseifner - core
"""


def _rules_run(build, np, tmp_path):
    path = tmp_path / "app.rules"
    path.write_text(RULES)
    res = _run(build, np, {"COLLTUNE_RULES": str(path), "COLLTUNE_VERBOSE": "1"})
    _passed(res)
    lines = _decisions(res.stderr)
    text = "\n".join(lines)
    f = str(path)
    # the first matching line wins, per size range
    assert f"bcast np={np} size 0..1000 B: binomial ({f}:4)" in text, text
    assert f"bcast np={np} size 1001.. B: pipeline ({f}:5)" in text, text
    if np == 3:
        assert f"reduce np=3 size 0.. B: in_order_binary ({f}:6)" in text, text
    else:
        assert f"reduce np=2 size 0.. B: native ({f}:7)" in text, text
    assert f"gather np={np} size 0.. B: binomial ({f}:8)" in text, text
    assert f"allgather np={np} size 0..100 B: recursive_doubling ({f}:9" in text, text
    assert f"allgather np={np} size 101.. B: ring ({f}:10)" in text, text
    assert f"allreduce np={np} size 0..64 B: recursive_doubling ({f}:11" in text, text
    # rabenseifner needs a commutative op: the affine op falls back, and says so
    assert re.search(rf"allreduce np={np} size 65\.\. B: \w+ \({re.escape(f)}:12; "
                     r"allreduce/rabenseifner -> .*not commutative", text), text
    # the intercommunicator goes to the library's own
    assert "bcast np=" in text and "(intercommunicator: the library's own)" in text
    return lines


@pytest.mark.parametrize("np", NPS)
def test_rules_file_openmpi(ompi_build, np, tmp_path):
    _rules_run(ompi_build, np, tmp_path)


@pytest.mark.mpich
@pytest.mark.parametrize("np", NPS)
def test_rules_file_mpich(mpich_build, np, tmp_path):
    _rules_run(mpich_build, np, tmp_path)


BAD_FILES = {
    "garbage": ("# colltune-rules 1\nbcast 2 - 0 100 binomial -\nbcast 2 - 64K - chain -\n",
                ":3: SIZE_MIN '64K' is not a non-negative decimal integer"),
    "header": ("bcast 2 - 0 - binomial -\n", ":1: not a colltune rules file"),
    "target": ("# colltune-rules 1\n# target: openmpi\nbcast 2 - 0 - ompi:binomial -\n",
               ":2: target 'openmpi'"),
    "algorithm": ("# colltune-rules 1\nreduce 2 - 0 - nosuch -\n",
                  ":2: unknown reduce algorithm 'nosuch'; valid: native,"),
    "param": ("# colltune-rules 1\nbcast 2 - 0 - chain fanout=0\n",
              ":2: bcast/chain: fanout=0 is out of range: valid 1..1024"),
    "range": ("# colltune-rules 1\nbcast 4 2 0 - binomial -\n", ":2: NP_MAX 2 is below NP_MIN 4"),
    "fields": ("# colltune-rules 1\nbcast 2 - 0 binomial -\n", ":2: expected 7 or 8 fields"),
    "hidden": ("# colltune-rules 1\nbcast 2 - 0 - _broken -\n", ":2: bcast/_broken is a test-only"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_bad_rules_file_warns_once_and_runs_the_library(ompi_build, tmp_path, case):
    """One warning naming FILE:LINE, on rank 0 only; then every collective is the
    library's own (the file's other lines are not used either) and results are right."""
    text, expect = BAD_FILES[case]
    path = tmp_path / "bad.rules"
    path.write_text(text)
    res = _run(ompi_build, 2, {"COLLTUNE_RULES": str(path), "COLLTUNE_VERBOSE": "1"})
    _passed(res)
    warnings = [ln for ln in res.stderr.splitlines() if "colltune-pmpi: warning:" in ln]
    assert len(warnings) == 1, res.stderr
    assert str(path) + expect in warnings[0], warnings[0]
    assert "the rules file is ignored" in warnings[0]
    ran = {ln.split(": ", 2)[2].split(" ")[0] for ln in _decisions(res.stderr)}
    assert ran == {"native"}, _decisions(res.stderr)


# ---- issue 29: `colltune rules check` and the C reader refuse the same files ----------

H = "# colltune-rules 1\n"
GOOD = "bcast 2 - 0 99 binomial -\n"  # a good line first: the problem is on line 3
# name -> (text, the line of the first problem)
PARITY_BAD = {
    "algorithm typo": (H + GOOD + "bcast 2 - 100 - binomal -\n", 3),
    "not an integer": (H + GOOD + "bcast 2 - 100 - binomial segsize=lots\n", 3),
    "out of range": (H + GOOD + "bcast 2 - 100 - chain fanout=0\n", 3),
    "parameter typo": (H + GOOD + "bcast 2 - 100 - chain fanot=2\n", 3),
    "no value": (H + GOOD + "bcast 2 - 100 - chain fanout\n", 3),
    "given twice": (H + GOOD + "bcast 2 - 100 - chain fanout=2,fanout=3\n", 3),
    "empty item": (H + GOOD + "bcast 2 - 100 - chain fanout=2,\n", 3),
    "test-only": (H + GOOD + "bcast 2 - 100 - _broken -\n", 3),
    "inner algorithm": (H + GOOD + "allgather 2 - 0 - gather_bcast gather=nosuch\n", 3),
    "hidden inner": (H + GOOD + "allreduce 2 - 0 - reduce_bcast bcast=_broken\n", 3),
    "inner parameter": (H + GOOD + "allgather 2 - 0 - gather_bcast bcast=knomial:radix=99\n",
                        3),
    "inner remap": (H + GOOD + "allreduce 2 - 0 - reduce_bcast bcast=chain:remap=rr\n", 3),
    "remap": (H + GOOD + "bcast 2 - 100 - binomial remap=sideways\n", 3),
    "segsize auto without a rule": (H + GOOD + "bcast 2 - 100 - binomial segsize=auto\n", 3),
    "negative segsize": (H + GOOD + "reduce 2 - 100 - pipeline segsize=-1\n", 3),
    "gather has no remap": (H + GOOD + "gather 2 - 0 - binomial remap=rr\n", 3),
    "mapping garbage": (H + GOOD + "bcast 2 - 100 - binomial - garbage\n", 3),
    "mapping typo": (H + GOOD + "bcast 2 - 100 - binomial - cores\n", 3),
    "library algorithm": (H + GOOD + "bcast 2 - 100 - ompi:binomial -\n", 3),
    "np too large": (H + GOOD + "bcast 2 2000000000 100 - binomial -\n", 3),
    "size suffix": (H + GOOD + "bcast 2 - 64K - binomial -\n", 3),
    "fields": (H + GOOD + "bcast 2 - 100 binomial -\n", 3),
    "class name": (H + "# load-class: 1st 0 5\n" + GOOD, 2),
    "class nan": (H + "# load-class: quiet nan 5\n" + GOOD, 2),
    "class hex": (H + "# load-class: quiet 0x1 5\n" + GOOD, 2),
    "first of two": (H + "bcast 2 - 0 99 binomal -\nbcast 2 - 100 binomial -\n", 2),
    "ppn garbage": (H + GOOD + "bcast 2 - 100 - binomial - ppn=two\n", 3),
    "ppn reversed": (H + GOOD + "bcast 2 - 100 - binomial - ppn=4-2\n", 3),
    "ppn zero": (H + GOOD + "bcast 2 - 100 - binomial - ppn=0-\n", 3),
    "ppn twice": (H + GOOD + "bcast 2 - 100 - binomial - ppn=1 ppn=2\n", 3),
    "gatherv by size": (H + GOOD + "gatherv 2 - 100 - binomial -\n", 3),
    "scatterv by size": (H + GOOD + "scatterv 2 - 0 4096 linear -\n", 3),
    "alltoallv by size": (H + GOOD + "alltoallv 2 - 64 - pairwise -\n", 3),
}
PARITY_GOOD = {
    "the demo file": RULES,
    "suffixes, inner algorithms, remap, mapping, classes": (
        H + "# target: colltune\n# load-class: quiet 0 9.5\n# load-class: busy 9.5 -\n"
        "bcast 2 - 0 99 binomial segsize=8K,remap=rr core load=quiet\n"
        "bcast 2 - 0 99 chain segsize=1M,fanout=2 node\n"
        "bcast 2 - 100 - pipeline segsize=auto\n"
        "reduce 2 - 0 - in_order_binary segsize=auto\n"
        "allgather 2 - 0 - gather_bcast gather=linear,bcast=knomial socket\n"
        "allreduce 2 8 0 - reduce_bcast reduce=binomial,bcast=chain:segsize=8K+fanout=2\n"
        "gatherv 2 - 0 - binomial -\n"
        "scatterv 2 8 0 - linear_nb -\n"
        "gather 1 - 0 - native -\n"),
    "processes per node, either order with load": (
        H + "# load-class: quiet 0 9.5\n# load-class: busy 9.5 -\n"
        "bcast 2 - 0 99 binomial - ppn=1-1 load=quiet\n"
        "bcast 2 - 0 99 chain - load=busy ppn=2-\n"
        "bcast 2 - 100 - linear - core ppn=3\n"
        "gather 1 - 0 - native -\n"),
}


def _c_reader(build, path):
    """The interposition library's verdict on a rules file: its warnings (a bad file
    gives one and is dropped whole) and the decisions it printed."""
    res = _run(build, 1, {"COLLTUNE_RULES": str(path), "COLLTUNE_VERBOSE": "1"})
    _passed(res)
    warnings = [ln for ln in res.stderr.splitlines() if ln.startswith("colltune-pmpi: warning:")]
    return warnings, _decisions(res.stderr)


def test_rules_check_and_the_library_refuse_the_same_files(ompi_build, tmp_path):
    """Each bad file: `colltune rules check` exits 2 with one line FILE:LINE: (its first
    problem) and the library drops it with one warning naming the same FILE:LINE. Each
    good file: both accept it, and the library's decisions come from its lines."""
    for i, (name, (text, line)) in enumerate(sorted(PARITY_BAD.items())):
        path = tmp_path / f"bad{i}.rules"
        path.write_text(text)
        res = colltune("rules", "check", str(path))
        assert res.returncode == 2, (name, res.stdout, res.stderr)
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"{path}:{line}: "), (name, lines)
        assert "Traceback" not in res.stderr and "a valid" not in res.stdout
        warnings, ran = _c_reader(ompi_build, path)
        assert len(warnings) == 1, (name, warnings)
        assert f"{path}:{line}: " in warnings[0] and "the rules file is ignored" in warnings[0]
        assert {d.split(": ", 2)[2].split(" ")[0] for d in ran} == {"native"}, (name, ran)
    for i, (name, text) in enumerate(sorted(PARITY_GOOD.items())):
        path = tmp_path / f"good{i}.rules"
        path.write_text(text)
        res = colltune("rules", "check", str(path))
        assert res.returncode == 0 and "a valid colltune rules file" in res.stdout, \
            (name, res.stderr)
        warnings, ran = _c_reader(ompi_build, path)
        assert warnings == [], (name, warnings)
        assert any(f"({path}:" in d for d in ran), (name, ran)


@pytest.mark.parametrize("np", NPS)
def test_ppn_rules_hold_at_the_communicators_processes_per_node(ompi_build, np, tmp_path):
    """Every rank of this one-node job shares the node: ppn = np. The first rule whose
    ppn range holds wins, as RuleSet.lookup says."""
    text = (H + "bcast 1 - 0 - linear - ppn=1-1\nbcast 1 - 0 - binomial - ppn=2-2\n"
            "bcast 1 - 0 - chain - ppn=3-\n")
    path = tmp_path / "ppn.rules"
    path.write_text(text)
    want = {2: ("binomial", 3), 3: ("chain", 4)}[np]
    rs = rules.from_text(text)
    assert rs.lookup("bcast", np, 8, ppn=np).algorithm == want[0]
    assert rs.lookup("bcast", np, 8, ppn=1).algorithm == "linear"
    res = _run(ompi_build, np, {"COLLTUNE_RULES": str(path), "COLLTUNE_VERBOSE": "1"})
    _passed(res)
    text = "\n".join(_decisions(res.stderr))
    assert re.search(rf"bcast np={np} size 0\.\. B: {want[0]} \({re.escape(str(path))}:{want[1]}\)",
                     text), text
    # ppn=1-1 never holds on the whole job's communicator (a one-process one may match it)
    assert not re.search(rf"bcast np={np} .*\({re.escape(str(path))}:2\)", text), text


def test_a_typo_is_refused_with_the_closest_name(ompi_build, tmp_path):
    """Both sides name the closest valid name."""
    path = tmp_path / "typo.rules"
    path.write_text(PARITY_BAD["algorithm typo"][0])
    res = colltune("rules", "check", str(path))
    assert "unknown bcast algorithm 'binomal' (did you mean 'binomial'?)" in res.stderr
    assert "_broken" not in res.stderr  # test-only names are not offered
    warnings, _ = _c_reader(ompi_build, path)
    assert "unknown bcast algorithm 'binomal' (did you mean 'binomial'?)" in warnings[0]
    path.write_text(PARITY_BAD["mapping typo"][0])
    assert "(did you mean 'core'?)" in colltune("rules", "check", str(path)).stderr
    assert "(did you mean 'core'?)" in _c_reader(ompi_build, path)[0][0]


def test_warnings_stay_one_line(ompi_build, tmp_path):
    """A file name with a newline in it: the warning is still one line (the control
    character replaced), starting with the library's prefix."""
    res = _run(ompi_build, 1, {"COLLTUNE_RULES": str(tmp_path / "two\nlines.rules")})
    _passed(res)
    mine = [ln for ln in res.stderr.splitlines() if "lines.rules" in ln]
    assert len(mine) == 1 and mine[0].startswith("colltune-pmpi: warning: ")
    assert "two?lines.rules: cannot read the rules file" in mine[0], mine


@pytest.mark.skipif(not shutil.which("strace"), reason="needs strace")
def test_each_line_is_one_write(ompi_build, tmp_path):
    """Every line the library prints is one write(2) of the whole line: the program's
    own output on the same stderr cannot land inside it."""
    trace = tmp_path / "trace.txt"
    e = {v: "" for v in ALL_VARS}
    e.update(interpose.preload(ompi_build, {}))
    e.update({"COLLTUNE_VERBOSE": "1", "COLLTUNE_BCAST": "binomial",
              "COLLTUNE_GATHER": "foo"})  # a warning too
    ln = launch.prepare(ompi_build.mpi, 1, ["strace", "-f", "-e", "trace=write", "-s", "4000",
                                            "-o", str(trace),
                                            str(ompi_build.program("colltune-plaincolls"))], e)
    res = launch.run(ln, timeout=120)
    _passed(res)
    printed = [x for x in res.stderr.splitlines() if x.startswith("colltune-pmpi: ")]
    writes = re.findall(r'write\(2, "(colltune-pmpi: [^"]*)"', trace.read_text())
    assert len(printed) >= 5 and any("warning:" in x for x in printed), res.stderr
    assert len(writes) == len(printed), (writes, printed)
    assert all(w.endswith("\\n") and "\\n" not in w[:-2] for w in writes), writes


def test_bad_specs_and_a_missing_file_warn_and_the_rest_still_applies(ompi_build, tmp_path):
    res = _run(ompi_build, 3, {"COLLTUNE_RULES": str(tmp_path / "missing.rules"),
                               "COLLTUNE_GATHER": "foo", "COLLTUNE_REDUCE": "binomial:segsize=-3",
                               "COLLTUNE_BCAST": "knomial:radix=3", "COLLTUNE_VERBOSE": "1"})
    _passed(res)
    warnings = [ln for ln in res.stderr.splitlines() if "colltune-pmpi: warning:" in ln]
    assert len(warnings) == 3, res.stderr
    text = "\n".join(warnings)
    assert "COLLTUNE_GATHER='foo' ignored: unknown gather algorithm 'foo'; valid:" in text
    assert "COLLTUNE_REDUCE='binomial:segsize=-3' ignored: reduce/binomial: segsize=-3 is out " \
           "of range" in text
    assert "missing.rules: cannot read the rules file" in text
    lines = "\n".join(_decisions(res.stderr))
    assert "bcast np=3 size 4..7 B: knomial (COLLTUNE_BCAST)" in lines, lines
    assert "gather np=3 size 4..7 B: native (no rule)" in lines, lines


def test_thread_multiple_runs_our_algorithms(ompi_build):
    """MPI_THREAD_MULTIPLE is no longer refused (issue 30; threads at once:
    tests/test_threads.py): the forced Bcast runs, says so, and the corrupting one
    forced is caught, so it really ran."""
    res = _run(ompi_build, 2, {"COLLTUNE_BCAST": "binomial", "COLLTUNE_VERBOSE": "1"},
               ["--multiple"])
    _passed(res)
    assert "MPI_THREAD_MULTIPLE" not in res.stderr and "warning" not in res.stderr
    assert "colltune-pmpi: bcast np=2 size 4..7 B: binomial (COLLTUNE_BCAST)" in \
        _decisions(res.stderr), res.stderr
    res = _run(ompi_build, 2, {"COLLTUNE_BCAST": "_broken"}, ["--multiple"])
    assert res.returncode != 0
    assert "FAIL rank" in res.stderr and "bcast" in res.stderr


@pytest.mark.mpich
def test_private_communicators_are_freed_with_the_users_mpich(mpich_build):
    """MPICH runs out of context ids after about 2045 live communicators: 2100
    MPI_Comm_dup / collectives / MPI_Comm_free pass only if the private duplicate of
    each is freed with it."""
    res = _run(mpich_build, 2, {"COLLTUNE_BCAST": "binomial", "COLLTUNE_ALLREDUCE": "ring"},
               ["--loop", "2100"], timeout=300)
    _passed(res)


def test_communicators_made_and_freed_openmpi(ompi_build):
    """Duplicates and intercommunicators made and freed in turn (their handles are
    reused): the cached communicator facts follow them (an intercommunicator taken for
    the intracommunicator that had its handle would fail with MPI_ERR_COMM)."""
    res = _run(ompi_build, 3, {"COLLTUNE_BCAST": "binomial", "COLLTUNE_ALLREDUCE": "ring",
                               "COLLTUNE_VERBOSE": "1"}, ["--loop", "200"])
    _passed(res)
    assert "allreduce np=2 size -: native (intercommunicator: the library's own)" in res.stderr


def test_profile_at_finalize(ompi_build, tmp_path):
    prof = tmp_path / "app.profile.json"
    res = _run(ompi_build, 3, {"COLLTUNE_PROFILE": str(prof), "COLLTUNE_BCAST": "binomial",
                               "COLLTUNE_ALLGATHER": "ring"})
    _passed(res)
    p = interpose.read_profile(prof)
    assert p.np_world == 3 and p.dropped == 0
    by = {(e.collective, e.np, e.size_min, e.algorithm): e for e in p.entries}
    # world Bcast of 1 int: 2 roots x 2 passes over MPI_COMM_WORLD; all 3 ranks
    e = by[("bcast", 3, 4, "binomial")]
    assert (e.calls, e.ranks, e.size_max, e.source) == (4, 3, 7, "COLLTUNE_BCAST")
    assert e.total_s > 0 and e.mean_s == pytest.approx(e.total_s / e.calls, rel=1e-6)
    # the odd/even communicator: 2 processes (ranks 0, 2) and 1 (rank 1)
    assert by[("bcast", 2, 4, "binomial")].ranks == 2
    assert by[("bcast", 1, 4, "binomial")].ranks == 1
    # 70000 ints = 280000 B lies in 262144..524287
    assert by[("bcast", 3, 262144, "binomial")].calls == 4
    assert ("allgather", 3, 2048, "ring") in by  # 1000 ints per process
    assert by[("reduce", 3, 4, "native")].source == "no rule"
    # calls per bucket over every communicator: world 4, two ranks 2, one rank 1 (one root)
    assert p.sizes("bcast")[4] == 4 + 2 + 1
    res = colltune("profile", str(prof))
    assert res.returncode == 0, res.stderr
    assert "binomial" in res.stdout and "COLLTUNE_BCAST" in res.stdout
    res = colltune("profile", str(prof), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["entries"][0]["collective"] == "bcast"


def test_profile_reader_rejects_what_is_not_a_profile(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "colltune-profile 1", "entries": [{"collective": "bcast"}]}')
    with pytest.raises(interpose.InterposeError, match=r"entry 0: \"np\" is missing"):
        interpose.read_profile(bad)
    bad.write_text("[1, 2")
    with pytest.raises(interpose.InterposeError, match="not JSON"):
        interpose.read_profile(bad)
    res = colltune("profile", str(bad))
    assert res.returncode == 2 and "error:" in res.stderr and "not JSON" in res.stderr


def test_settings_check_the_rules_file_first(tmp_path):
    good = tmp_path / "good.rules"
    good.write_text(RULES)
    env = interpose.settings(rules=good, force={"bcast": "binomial"}, verbose=True,
                             profile=tmp_path / "p.json")
    assert env == {"COLLTUNE_RULES": str(good.resolve()), "COLLTUNE_BCAST": "binomial",
                   "COLLTUNE_VERBOSE": "1", "COLLTUNE_PROFILE": str(tmp_path / "p.json")}
    lib = tmp_path / "lib.rules"
    lib.write_text("# colltune-rules 1\n# target: openmpi\nbcast 2 - 0 - ompi:binomial -\n")
    with pytest.raises(interpose.InterposeError, match="target 'openmpi'"):
        interpose.settings(rules=lib)
    with pytest.raises(interpose.InterposeError, match="unknown collective 'scan'"):
        interpose.settings(force={"scan": "linear"})
    assert interpose.launcher_options("openmpi", ["A", "B"]) == ["-x", "A", "-x", "B"]
    assert interpose.launcher_options("mpich", ["A", "B"]) == ["-genvlist", "A,B"]


def _colltune_run(build, mpi_flag):
    """`colltune run` passes the settings with the launcher's own options (-x, -genvlist)
    and returns the program's exit status."""
    ln = launch.prepare(build.mpi, 2, [str(build.program("colltune-plaincolls"))])
    res = colltune("run", "--mpi", mpi_flag, "--force", "bcast=knomial:radix=3", "--verbose",
                   "--", *ln.argv)
    assert res.returncode == 0, res.stdout + res.stderr[-3000:]
    assert "plaincolls:" in res.stdout and "checks passed" in res.stdout
    assert "bcast np=2 size 4..7 B: knomial (COLLTUNE_BCAST)" in res.stderr, res.stderr
    # the test-only Bcast is refused before the launch (plain COLLTUNE_BCAST=_broken still
    # runs it: test_a_wrong_algorithm_is_caught)
    bad = colltune("run", "--mpi", mpi_flag, "--force", "bcast=_broken", "--", *ln.argv)
    assert bad.returncode == 2 and "test-only" in bad.stderr and "plaincolls" not in bad.stdout
    env = colltune("run", "--mpi", mpi_flag, "--force", "reduce=binomial", "--print-env")
    assert env.returncode == 0, env.stderr
    assert env.stdout.startswith("export COLLTUNE_REDUCE=binomial LD_PRELOAD=")
    assert str(interpose.library(build)) in env.stdout


def test_colltune_run_refuses_before_the_launch(ompi_build, tmp_path):
    """A typo in a forced algorithm, a parameter, a test-only name, a rules file the
    library would drop, a missing one, a profile in a missing folder: exit 2, one line,
    nothing launched (the command would leave a marker file)."""
    marker = tmp_path / "launched"
    cmd = ["--", "touch", str(marker)]
    bad = tmp_path / "bad.rules"
    bad.write_text(PARITY_BAD["not an integer"][0])
    cases = [
        (["--force", "bcast=binomal"], "--force bcast=binomal: unknown bcast algorithm "
         "'binomal' (did you mean 'binomial'?); valid: native,"),
        (["--force", "bcst=binomial"], "--force bcst=binomial: unknown collective 'bcst' "
         "(did you mean 'bcast'?)"),
        (["--force", "bcast=chain:fanot=2"], "bcast/chain has no parameter 'fanot' "
         "(did you mean 'fanout'?)"),
        (["--force", "reduce=binomial:segsize=lots"], "segsize='lots' is not an integer"),
        (["--force", "bcast=_broken"], "bcast/_broken is a test-only algorithm"),
        (["--rules", str(bad)], f"{bad}:3: bcast/binomial: segsize='lots' is not an integer"),
        (["--rules", str(tmp_path / "missing.rules")], "missing.rules: cannot read"),
        (["--profile", "/nonexistent/dir/p.json"], "--profile /nonexistent/dir/p.json: the "
         "folder /nonexistent/dir does not exist"),
    ]
    for args, expect in cases:
        res = colltune("run", "--mpi", "openmpi", *args, *cmd)
        lines = res.stderr.strip().splitlines()
        assert res.returncode == 2 and len(lines) == 1, (args, res.stderr)
        assert lines[0].startswith("error: ") and expect in lines[0], (args, lines)
        assert not marker.exists(), args
    res = colltune("run", "--mpi", "openmpi", "--force", "bcast=knomial:radix=8,segsize=8K",
                   "--profile", str(tmp_path / "p.json"), *cmd)
    assert res.returncode == 0 and marker.exists(), res.stderr


def test_colltune_run_openmpi(ompi_build):
    _colltune_run(ompi_build, "openmpi")


@pytest.mark.mpich
def test_colltune_run_mpich(mpich_build):
    _colltune_run(mpich_build, "mpich")


def _heat_demo(build, tmp_path, np):
    """colltune-heat-plain (heat.c built without colltune's library: MPI_Allreduce and
    MPI_Reduce of the MPI library) under the interposition library and a rules file
    gives the grid of colltune-heat bitwise, stops at the same iteration and reports
    the same minimum and maximum; the verbose lines show our algorithms ran."""
    from colltune.drivers import heat

    spec = dict(np=np, rows=37, cols=23, iterations=400, threshold=1.0, report_interval=10,
                seed=3, decomp="2d")
    ref_out = tmp_path / "ref.raw"
    rec, reports, _ = heat.run_heat(build, heat.HeatSpec(output=str(ref_out), **spec))
    # converged: the Allreduce decided when to stop
    assert rec["converged"] is True and 5 < rec["iterations_done"] < 400
    rules = tmp_path / "heat.rules"
    rules.write_text("# colltune-rules 1\n# target: colltune\n"
                     "allreduce 2 - 0 - recursive_doubling -\n"
                     "reduce 2 - 0 - binomial -\n")
    out = tmp_path / "plain.raw"
    argv = heat.heat_argv(build, heat.HeatSpec(output=str(out), **spec))
    argv[0] = str(build.program("colltune-heat-plain"))
    e = {v: "" for v in ALL_VARS}
    e.update(interpose.preload(build, {}))
    e.update({"COLLTUNE_RULES": str(rules), "COLLTUNE_VERBOSE": "1"})
    res = launch.run(launch.prepare(build.mpi, np, argv, e), timeout=300)
    assert res.returncode == 0 and not res.timed_out, res.stderr[-3000:]
    text = "\n".join(_decisions(res.stderr))
    assert f"allreduce np={np} size 0.. B: recursive_doubling ({rules}:3)" in text, text
    assert f"reduce np={np} size 0.. B: binomial ({rules}:4)" in text, text
    recs = [json.loads(ln) for ln in res.stdout.splitlines() if ln.startswith("{")]
    summary = [r for r in recs if r.get("kind") == "heat"][0]
    plain_reports = [r for r in recs if r.get("kind") == "heat_report"]
    assert summary["converged"] is True
    assert summary["iterations_done"] == rec["iterations_done"]
    assert summary["final_max_change"] == rec["final_max_change"]
    assert out.read_bytes() == ref_out.read_bytes()
    assert [(r["iteration"], r["min"], r["max"]) for r in plain_reports] == \
        [(r["iteration"], r["min"], r["max"]) for r in reports]


@pytest.mark.parametrize("np", NPS)
def test_heat_built_without_colltune_same_grid_openmpi(ompi_build, tmp_path, np):
    _heat_demo(ompi_build, tmp_path, np)


@pytest.mark.mpich
def test_heat_built_without_colltune_same_grid_mpich(mpich_build, tmp_path):
    _heat_demo(mpich_build, tmp_path, 3)


@pytest.mark.parametrize("kind", ["openmpi", pytest.param("mpich", marks=pytest.mark.mpich)])
def test_the_installed_libraries_have_no_fortran_bindings(kind, request):
    """docs/interposition.md says Fortran callers are not covered and that the libraries
    colltune installs have no Fortran bindings: this checks the second half, so the
    docs are revisited the day they have."""
    build = request.getfixturevalue("ompi_build" if kind == "openmpi" else "mpich_build")
    libdir = build.mpi.bindir.parent / "lib"
    libs = [p for p in libdir.iterdir() if ".so" in p.name and p.is_file()]
    assert any(p.name.startswith("libmpi.so") for p in libs), libs
    names = {p.name for p in libs}
    assert not any(n.startswith(("libmpi_mpifh", "libmpi_usempi", "libmpifort")) for n in names)
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed")
    fortran = {"mpi_bcast_", "mpi_bcast__", "mpi_bcast", "MPI_BCAST", "pmpi_bcast_"}
    elf = [p for p in libs if p.name.startswith("libmpi") and p.read_bytes()[:4] == b"\x7fELF"]
    assert elf, libs
    for p in elf:
        res = subprocess.run([nm, "-D", "--defined-only", str(p)], capture_output=True,
                             text=True, timeout=60)
        assert res.returncode == 0, res.stderr
        syms = {ln.split()[-1] for ln in res.stdout.splitlines() if ln.strip()}
        assert "MPI_Bcast" in syms and not syms & fortran, (p, syms & fortran)


def _mem_available_gib() -> float:
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return 0.0


def test_a_bcast_of_close_to_int_max_elements(ompi_build):
    """INT_MAX - 7 unsigned chars (2 GiB per process) through the interposition library
    and a segmented algorithm, every byte checked (about 20 s on 2 cores)."""
    if _mem_available_gib() < 8:
        pytest.skip("needs 8 GiB of free memory (2 processes x 2 GiB, with room to spare)")
    res = _run(ompi_build, 2, {"COLLTUNE_BCAST": "pipeline", "COLLTUNE_VERBOSE": "1"},
               ["--large"], timeout=300)
    _passed(res)
    assert "bcast np=2 size 1073741824..2147483647 B: pipeline (COLLTUNE_BCAST)" in res.stderr


def test_a_rules_file_written_by_tune_drives_the_interposition_library(ompi_build, tmp_path):
    """The file `colltune tune --target colltune` writes (its long metadata comments
    included) is what the C reader takes: each decision names the tuner's line."""
    import pandas as pd

    from colltune.rules import ruleset as R
    from colltune.tuning import tune

    rows = []
    for unit in range(5):  # five paired launches: binomial clearly faster at 8 B only
        for size, lat in ((8, {"native": 10.0, "binomial": 4.0, "linear": 30.0}),
                          (65536, {"native": 10.0, "binomial": 10.1, "linear": 4.0})):
            for label, us in lat.items():
                rows.append(dict(collective="bcast", np=3, size=size, label=label,
                                 algorithm=label, params="{}", median_us=us * (1 + unit / 100),
                                 unit_id=unit, rep=unit, ppn=3, cores=4, mapping="core"))
    t = tune.tune(pd.DataFrame(rows), "colltune", meta={"study": "synthetic"})
    path = tmp_path / "tuned.rules"
    path.write_text(R.to_text(t.rules))
    picked = {(r.size_min, r.algorithm) for r in t.rules.rules}
    assert ("binomial" in {a for _, a in picked}) and ("linear" in {a for _, a in picked})
    res = _run(ompi_build, 3, {"COLLTUNE_RULES": str(path), "COLLTUNE_VERBOSE": "1"})
    _passed(res)
    text = "\n".join(_decisions(res.stderr))
    assert "warning" not in res.stderr, res.stderr
    for r in t.rules.rules:
        if r.collective == "bcast" and r.algorithm != "native":
            assert re.search(rf"bcast np=3 size {r.size_min}\.\.\S* B: {r.algorithm} ", text), text


# ---- issue 15 point 6: an unmodified OSU-style program measures what the rules chose --

def _osu_latency(build, rules, coll, nbytes, iterations):
    """colltune-osu-latency (native/tests/osu_latency.c, plain MPI) at 2 processes under
    the interposition library and `rules`: its reported latency (µs) and the decisions
    COLLTUNE_VERBOSE printed."""
    e = {v: "" for v in ALL_VARS}
    e.update(interpose.preload(build, {}))
    e.update({"COLLTUNE_RULES": str(rules), "COLLTUNE_VERBOSE": "1"})
    prog = [str(build.program("colltune-osu-latency")), coll, str(nbytes), str(iterations)]
    ln = launch.prepare(build.mpi, 2, prog, e)
    res = launch.run(ln, timeout=60)
    assert not res.timed_out, f"hang: {ln.command_line}\n{res.stderr[-3000:]}"
    assert res.returncode == 0, res.stdout + res.stderr[-3000:]
    m = re.search(rf"^{nbytes}\s+([0-9.]+)\s*$", res.stdout, re.M)
    assert m, res.stdout
    return float(m.group(1)), _decisions(res.stderr)


def test_an_osu_style_program_reports_the_latency_of_the_rules_choice(ompi_build, tmp_path):
    """The program knows nothing of colltune; only the rules file differs between the
    launches. A Bcast `chain` with 512-byte segments cuts 1 MiB into 2048 messages in a
    row, far slower than the library's own broadcast, so the latency the program prints
    must follow the rules file: medians over 3 interleaved launches each, the slow
    choice at least 1.5x the native one (in practice hundreds of times)."""
    import statistics

    nbytes = 1 << 20
    files = {}
    for name, spec in (("native", "native -"), ("slow", "chain segsize=512,fanout=1")):
        files[name] = tmp_path / f"{name}.rules"
        files[name].write_text("# colltune-rules 1\n# target: colltune\n"
                               f"bcast 2 - 0 - {spec}\n")
    lat = {"native": [], "slow": []}
    for rnd in range(3):
        for name in (("native", "slow") if rnd % 2 == 0 else ("slow", "native")):
            us, lines = _osu_latency(ompi_build, files[name], "bcast", nbytes, 10)
            lat[name].append(us)
            mine = [ln for ln in lines if ln.startswith("colltune-pmpi: bcast np=2 ")
                    and f"({files[name]}:3)" in ln]
            assert mine, "\n".join(lines)
            want = "native" if name == "native" else "chain"
            assert all(ln.split(": ", 2)[2].startswith(want + " ") for ln in mine), mine
    med = {k: statistics.median(v) for k, v in lat.items()}
    assert med["slow"] > 1.5 * med["native"], lat


# ---- issue 30: MPI_Alltoall and MPI_Alltoallv ------------------------------------------

def _alltoall_forced_by_colltune_run(build, mpi_flag, np):
    """An unmodified program (plaincolls: MPI_Alltoall in place and not, MPI_Alltoallv
    with uneven counts, on the world, a reversed sub-communicator and an
    intercommunicator) under `colltune run --force alltoall=ALG` for every Alltoall
    algorithm (and Alltoallv's alongside): right results, and the verbose line says
    that ours ran (or its declared fallback, which says so)."""
    ln = launch.prepare(build.mpi, np, [str(build.program("colltune-plaincolls"))])
    a2a = registry.names(build, "alltoall")
    a2av = registry.names(build, "alltoallv")
    assert {"linear", "pairwise", "bruck", "linear_sync", "two_proc"} <= set(a2a), a2a
    assert {"linear", "pairwise"} <= set(a2av), a2av
    for k, algo in enumerate(a2a):
        spec = "linear_sync:max_requests=1" if algo == "linear_sync" else algo
        v = a2av[k % len(a2av)]
        res = colltune("run", "--mpi", mpi_flag, "--force", f"alltoall={spec}",
                       "--force", f"alltoallv={v}", "--verbose", "--", *ln.argv)
        assert res.returncode == 0, f"{algo}: " + res.stdout + res.stderr[-3000:]
        assert re.search(r"plaincolls: \d+ checks passed", res.stdout), res.stdout
        lines = _decisions(res.stderr)
        mine = [ln_ for ln_ in lines if ln_.startswith(f"colltune-pmpi: alltoall np={np} ")
                and "(COLLTUNE_ALLTOALL" in ln_]
        assert mine, f"alltoall/{algo}: no decision printed\n" + "\n".join(lines)
        for ln_ in mine:
            ran = ln_.split(": ", 2)[2].split(" ", 1)[0]
            assert ran == algo or f"alltoall/{algo} -> pairwise" in ln_, ln_
        if algo != "native" and (algo != "two_proc" or np == 2):
            assert any(ln_.split(": ", 2)[2].startswith(algo + " ") for ln_ in mine), mine
        assert any(ln_.startswith(f"colltune-pmpi: alltoallv np={np} ") and
                   ln_.split(": ", 2)[2].startswith(v + " ") and "(COLLTUNE_ALLTOALLV" in ln_
                   for ln_ in lines) or v == "native", "\n".join(lines)
        # the intercommunicator's Alltoall went to the library's own
        assert any(ln_.startswith("colltune-pmpi: alltoall ") and "intercommunicator" in ln_
                   for ln_ in lines), "\n".join(lines)


@pytest.mark.parametrize("np", NPS)
def test_alltoall_every_algorithm_under_colltune_run_openmpi(ompi_build, np):
    _alltoall_forced_by_colltune_run(ompi_build, "openmpi", np)


@pytest.mark.mpich
def test_alltoall_every_algorithm_under_colltune_run_mpich(mpich_build):
    _alltoall_forced_by_colltune_run(mpich_build, "mpich", 3)


def test_alltoall_a_wrong_algorithm_is_caught(ompi_build):
    """The program's Alltoall checks can fail: the test-only corrupting Alltoall is
    caught."""
    res = _run(ompi_build, 3, {"COLLTUNE_ALLTOALL": "_broken"})
    assert res.returncode != 0
    assert "FAIL rank 2" in res.stderr and "alltoall count=" in res.stderr


def test_alltoall_rules_verbose_and_profile(ompi_build, tmp_path):
    """A rules file with Alltoall(v) lines: the first matching line per size range
    runs, `max_requests` from the PARAMS field included, and the profile counts the
    calls per algorithm (colltune's Alltoall size: bytes per destination)."""
    path = tmp_path / "a2a.rules"
    path.write_text("# colltune-rules 1\n# target: colltune\n"
                    "alltoall 2 - 0 100 bruck -\n"
                    "alltoall 2 - 101 - linear_sync max_requests=1\n"
                    "alltoallv 3 - 0 - pairwise -\n")
    prof = tmp_path / "a2a.profile.json"
    res = _run(ompi_build, 3, {"COLLTUNE_RULES": str(path), "COLLTUNE_VERBOSE": "1",
                               "COLLTUNE_PROFILE": str(prof)})
    _passed(res)
    text = "\n".join(_decisions(res.stderr))
    f = str(path)
    assert f"alltoall np=3 size 0..100 B: bruck ({f}:3)" in text, text
    assert f"alltoall np=2 size 0..100 B: bruck ({f}:3)" in text, text
    assert f"alltoall np=3 size 101.. B: linear_sync ({f}:4)" in text, text
    assert re.search(rf"alltoallv np=3 size \S+ B: pairwise \({re.escape(f)}:5\)", text), text
    p = interpose.read_profile(prof)
    by = {(e.collective, e.np, e.size_min, e.algorithm): e for e in p.entries}
    # the one-process sub-communicator (rank 1) matches no Alltoall line: the library's own
    assert by[("alltoall", 1, 4, "native")].source == "no rule", by.keys()
    # 1000 ints per destination = 4000 B, in 2048..4095; world passes twice, 3 ranks
    e = by[("alltoall", 3, 2048, "linear_sync")]
    assert (e.calls, e.ranks, e.source) == (2, 3, f"{path}:4"), e
    assert any(k[0] == "alltoallv" and k[3] == "pairwise" for k in by), by.keys()


def _two_forced_by_colltune_run(build, mpi_flag, np, first, second):
    """Every algorithm of two collectives (each (name, algorithms it must have)) under
    `colltune run --force` in the unmodified plaincolls, paired round by round: right
    results, and the verbose lines say that ours ran (or its declared fallback, which
    says so)."""
    ln = launch.prepare(build.mpi, np, [str(build.program("colltune-plaincolls"))])
    names = []
    for coll, need in (first, second):
        have = registry.names(build, coll)
        assert set(need) <= set(have), (coll, have)
        names.append(have)
    for k in range(max(map(len, names))):
        pair = [(coll, algos[k % len(algos)]) for (coll, _), algos in zip((first, second), names)]
        res = colltune("run", "--mpi", mpi_flag,
                       *[x for coll, algo in pair for x in ("--force", f"{coll}={algo}")],
                       "--verbose", "--", *ln.argv)
        assert res.returncode == 0, f"{pair}: " + res.stdout + res.stderr[-3000:]
        assert re.search(r"plaincolls: \d+ checks passed", res.stdout), res.stdout
        lines = _decisions(res.stderr)
        for coll, algo in pair:
            var = interpose.force_variable(coll)
            mine = [x for x in lines if x.startswith(f"colltune-pmpi: {coll} np={np} ")
                    and f"({var}" in x]
            assert mine, f"{coll}/{algo}: no decision printed\n" + "\n".join(lines)
            for x in mine:
                ran = x.split(": ", 2)[2].split(" ", 1)[0]
                assert ran == algo or f"{coll}/{algo} ->" in x, x


def _scatter_barrier_forced_by_colltune_run(build, mpi_flag, np):
    """Every Scatter and Barrier algorithm under `colltune run --force` in an unmodified
    program (plaincolls: MPI_Scatter at both end roots, in place at the root every
    other pass; MPI_Barrier with each rank entering late in turn, checked on one
    clock): right results, and ours ran (or its declared fallback, which says so)."""
    _two_forced_by_colltune_run(
        build, mpi_flag, np, ("scatter", ("linear", "linear_nb", "binomial")),
        ("barrier", ("linear", "double_ring", "recursive_doubling", "bruck", "tree")))


@pytest.mark.parametrize("np", NPS)
def test_scatter_barrier_every_algorithm_under_colltune_run_openmpi(ompi_build, np):
    _scatter_barrier_forced_by_colltune_run(ompi_build, "openmpi", np)


@pytest.mark.mpich
def test_scatter_barrier_every_algorithm_under_colltune_run_mpich(mpich_build):
    _scatter_barrier_forced_by_colltune_run(mpich_build, "mpich", 3)


def _reduce_scatter_forced_by_colltune_run(build, mpi_flag, np):
    """Every Reduce_scatter_block and Reduce_scatter algorithm under `colltune run
    --force` in an unmodified program (plaincolls: MPI_Reduce_scatter_block with sum,
    MPI_Reduce_scatter with a non-commutative op and uneven counts, some zero, each in
    place every other count, on the world, a sub-communicator and dups): right results,
    and ours ran (or, for the non-commutative op, its declared fallback, which says so)."""
    _two_forced_by_colltune_run(
        build, mpi_flag, np,
        ("reduce_scatter_block", ("basic_linear", "recursive_halving", "butterfly",
                                  "recursive_doubling", "ring", "pairwise")),
        ("reduce_scatter", ("nonoverlapping", "recursive_halving", "butterfly",
                            "recursive_doubling", "ring", "pairwise")))


@pytest.mark.parametrize("np", NPS)
def test_reduce_scatter_every_algorithm_under_colltune_run_openmpi(ompi_build, np):
    _reduce_scatter_forced_by_colltune_run(ompi_build, "openmpi", np)


@pytest.mark.mpich
def test_reduce_scatter_every_algorithm_under_colltune_run_mpich(mpich_build):
    _reduce_scatter_forced_by_colltune_run(mpich_build, "mpich", 3)


def test_colltune_run_works_as_written_from_a_fresh_shell(ompi_build, tmp_path):
    """`colltune run -- mpirun -np 2 ./app` as docs/interposition.md writes it, as root,
    from a shell whose PATH lacks the virtual environment: the bare mpirun is the --mpi
    library's, the root option is added and said; more processes than cores get a
    one-line hint naming the option."""
    import os
    import subprocess
    import sys as _sys
    from pathlib import Path as _Path

    exe = _Path(_sys.executable).parent / "colltune"
    app = str(ompi_build.program("colltune-plaincolls"))
    env = {"HOME": os.environ.get("HOME", "/root"), "PATH": "/usr/bin:/bin",
           "COLUMNS": "200"}
    res = subprocess.run([str(exe), "run", "--", "mpirun", "-np", "2", app], env=env,
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "checks passed" in res.stdout
    assert f"note: mpirun is {ompi_build.mpi.banner}'s: {ompi_build.mpi.bindir}/mpirun" \
        in res.stderr
    if os.geteuid() == 0:
        assert "note: running as root: added --allow-run-as-root" in res.stderr
    from colltune.mpi import launch as launch_mod
    from colltune.mpi.placement import cores

    argv, notes = launch_mod.user_command(ompi_build.mpi, ["mpirun", "-np", str(cores() + 1),
                                                           app])
    hint = [n for n in notes if n.startswith("hint:")]
    assert len(hint) == 1 and "add --oversubscribe" in hint[0]
    assert launch_mod.user_command(ompi_build.mpi, ["mpirun", "--oversubscribe", "-np",
                                                    str(cores() + 1), app])[1][-1:] != hint
    assert launch_mod.user_command(ompi_build.mpi, ["./app"]) == (["./app"], [])
    # the distribution's suffixed launcher stays itself (it is the program's library's),
    # and gets the root option too
    argv, notes = launch_mod.user_command(ompi_build.mpi, ["mpirun.openmpi", "-np", "2", app])
    assert argv[0] == "mpirun.openmpi"
    assert ("--allow-run-as-root" in argv) == (os.geteuid() == 0)
    assert [launch_mod.is_launcher(a) for a in ("mpirun.openmpi", "/opt/x/bin/mpiexec",
                                                "mpiexec.hydra", "./app", "srun")] == \
        [True, True, True, False, False]
