"""Exports the libraries read unchanged (Open MPI coll/tuned rules, MPICH selection JSON),
their checks for silent failures, `colltune rules`, and the proof that an exported file
really steers the library (colltune.rulesfiles, export_openmpi, export_mpich)."""

from __future__ import annotations

import json

import pytest

from colltune.rules import mpich as em
from colltune.rules import openmpi as eo
from colltune.rules import ruleset as R
from colltune.rules import files as rf
from colltune.mpi.build import build
from colltune.base.errors import ColltuneError
from colltune.mpi.libraries import find as find_mpi
from conftest import colltune


def _rs(target: str, text: str) -> R.RuleSet:
    return R.from_text(f"# colltune-rules 1\n# target: {target}\n{text}")


OMPI_RULES = """\
bcast 2 - 0 8191 ompi:binomial -
bcast 2 - 8192 - ompi:pipeline segsize=8192
allgather 2 3 0 1023 ompi:ring -
allgather 2 3 1024 - ompi:bruck -
reduce 2 - 0 - native -
"""

MPICH_RULES = """\
bcast 2 - 0 8191 mpich:binomial -
bcast 2 - 8192 - mpich:scatter_ring_allgather -
allgather 2 3 0 1023 mpich:ring -
allgather 2 3 1024 - mpich:bruck -
"""


@pytest.fixture(scope="module")
def ompi_installed(ompi_build):
    return eo.Installed.of(ompi_build.mpi)


@pytest.fixture(scope="module")
def mpich_b():
    try:
        return build(find_mpi("mpich"))
    except ColltuneError as exc:  # no MPICH and none installable here
        pytest.skip(f"MPICH not available: {exc}")


# ------------------------------------------------------------------ Open MPI format


def test_openmpi_round_trip(ompi_installed):
    ex = eo.to_text(_rs("openmpi", OMPI_RULES), ompi_installed)
    assert eo.check(ex.text, ompi_installed) == []
    pf = eo.parse(ex.text)
    assert pf.version == 1 and not pf.problems
    by = {c.name: c for c in pf.colls}
    assert set(by) == {"bcast", "allgather", "reduce"}
    assert [c.coll_id for c in pf.colls] == [7, 11, 0]  # ids of coll_base_functions.h
    # bcast from 2 processes: binomial (number from ompi_info) below 8192 B, pipeline above
    bc = by["bcast"].comms[-1]
    assert bc.comm_size == 2
    assert [(m.msgbytes, ompi_installed.name("bcast", m.alg), m.segsize) for m in bc.rules] == \
        [(0, "binomial", 0), (8192, "pipeline", 8192)]
    # allgather: colltune's per-process sizes times the communicator size, per size
    ag = {c.comm_size: c for c in by["allgather"].comms}
    assert [m.msgbytes for m in ag[2].rules] == [0, 2048]
    assert [m.msgbytes for m in ag[3].rules] == [0, 3072]
    assert [m.alg for m in ag[4].rules] == [0]  # beyond the rules: Open MPI's fixed rules
    # native: ALG 0 everywhere
    assert all(m.alg == 0 for c in by["reduce"].comms for m in c.rules)
    rows = eo.rows(pf, ompi_installed)
    assert any(r["algorithm"] == "pipeline (3)" and r["bytes_min"] == 8192 for r in rows)


def test_openmpi_check_catches_each_silent_failure(ompi_installed):
    good = "1\n7 1\n2 2\n0 6 0 0\n8192 3 0 8192\n"
    assert eo.check(good, ompi_installed) == []
    cases = {
        "first size not 0": ("1\n7 1\n2 1\n10 6 0 0\n", 4, "not 0"),
        "unknown number": ("1\n7 1\n2 1\n0 66 0 0\n", 4, "does not exist"),
        "truncated": ("1\n7 1\n2 2\n0 6 0 0\n", 4, "truncated"),
        "1K suffix": ("1\n7 1\n2 2\n0 6 0 0\n1K 3 0 0\n", 5, "'1K' is not a plain integer"),
        "late header": ("# x\nrule-file-version-2\n1\n7 1\n2 1\n0 6 0 0 0\n", 2, "very first"),
        "count too small": ("1\n7 1\n2 1\n0 6 0 0\n8192 3 0 0\n", 5, "after the last rule"),
    }
    for name, (text, line, words) in cases.items():
        problems = eo.check(text, ompi_installed)
        assert problems, name
        assert any(ln == line and words in p for ln, p in problems), (name, problems)
    # version 2 (MAXREQ column) parses where the header opens the file
    assert eo.parse("rule-file-version-2\n1\n11 1\n2 1\n0 2 4 1024 8\n").colls[0] \
        .comms[0].rules[0].maxreq == 8


def test_openmpi_refuses_what_it_cannot_write(ompi_installed):
    with pytest.raises(R.RulesError, match="targets mpich"):
        eo.to_text(_rs("mpich", "bcast 2 - 0 - mpich:binomial -\n"), ompi_installed)
    with pytest.raises(R.RulesError, match="valid"):
        eo.to_text(_rs("openmpi", "bcast 2 - 0 - ompi:nosuch -\n"), ompi_installed)
    with pytest.raises(R.RulesError, match="one radix"):
        eo.to_text(_rs("openmpi", "bcast 2 - 0 99 ompi:knomial radix=2\n"
                                  "bcast 2 - 100 - ompi:knomial radix=4\n"), ompi_installed)
    # a knomial radix cannot be in the file: it goes to the mpirun line
    ex = eo.to_text(_rs("openmpi", "bcast 2 - 0 - ompi:knomial radix=8\n"), ompi_installed)
    assert ex.mca == {"coll_tuned_bcast_algorithm_knomial_radix": "8"}
    assert "--mca coll_tuned_bcast_algorithm_knomial_radix 8" in eo.usage("/f", ex.mca)[0]
    # an installed version that does not know an algorithm: refused, numbers listed
    old = eo.Installed("5.0.0", {"bcast": {0: "ignore", 1: "basic_linear"}}, {})
    with pytest.raises(R.RulesError, match="no bcast algorithm 'binomial'.*1 basic_linear"):
        eo.to_text(_rs("openmpi", "bcast 2 - 0 - ompi:binomial -\n"), old)
    with pytest.raises(R.RulesError, match="5.0.7"):
        eo.to_text(_rs("openmpi", "reduce 2 - 0 - ompi:binomial max_requests=4\n"),
                   eo.Installed("5.0.3", {"reduce": {5: "binomial"}}, {}))


# --------------------------------------------------------------------- MPICH format


def test_mpich_check_and_lookup_without_library():
    text = json.dumps({"collective=bcast": {"comm_type=intra": {
        "comm_size<=4": {"avg_msg_size<=100": {"algorithm=MPIR_Bcast_intra_binomial": {}},
                         "avg_msg_size=any": {"algorithm=MPIR_Bcast_intra_scatter_ring_allgather": {}}},
        "comm_size=any": {"algorithm=MPIR_Bcast_intra_binomial": {}}}},
        "collective=allgather": {"comm_type=intra": {
            "avg_msg_size<=10": {"algorithm=MPIR_Allgather_intra_ring": {}}}}}, indent=1)
    problems = em.check(text)
    assert any("avg_msg_size on allgather" in p for _, p in problems)
    assert any("no 'avg_msg_size=any'" in p for _, p in problems)
    line = next(ln for ln, p in problems if "avg_msg_size on allgather" in p)
    assert '"avg_msg_size<=10"' in text.splitlines()[line - 1]
    assert em.lookup(text, "bcast", 3, 50) == "MPIR_Bcast_intra_binomial"
    assert em.lookup(text, "bcast", 3, 5000) == "MPIR_Bcast_intra_scatter_ring_allgather"
    assert em.lookup(text, "bcast", 8, 5000) == "MPIR_Bcast_intra_binomial"
    bad = em.check('{"collective=bcast": {"comm_type=intra": {\n"algorithm=X": {}\n}')
    assert bad and "not valid JSON" in bad[0][1]


def test_mpich_round_trip(mpich_b):
    inst = em.Installed.of(mpich_b.mpi)
    ex = em.to_json(_rs("mpich", MPICH_RULES), inst)
    assert em.check(ex.text, inst) == []
    tree = json.loads(ex.text)
    # complete: every collective of MPICH's own tree, the others exactly as MPICH has them
    assert set(tree) == set(inst.tree)
    assert tree["collective=barrier"] == inst.tree["collective=barrier"]
    ag = tree["collective=allgather"]["comm_type=intra"]
    assert "total_msg_size<=3069" in ag["comm_size<=3"]  # 1023 B per process x 3
    assert not any("avg_msg_size" in k for k in json.dumps(ag).split('"'))
    assert em.lookup(ex.text, "bcast", 3, 100) == "MPIR_Bcast_intra_binomial"
    assert em.lookup(ex.text, "allgather", 3, 2000) == "MPIR_Allgather_intra_brucks"
    # an incomplete file: a missing collective is a problem
    del tree["collective=barrier"]
    assert any("barrier" in p for _, p in em.check(json.dumps(tree), inst))
    # an unknown algorithm name is refused with the valid ones
    t2 = ex.text.replace("MPIR_Bcast_intra_binomial", "MPIR_Bcast_intra_nosuch", 1)
    assert any("unknown algorithm MPIR_Bcast_intra_nosuch" in p and "MPIR_Bcast_intra_binomial" in p
               for _, p in em.check(t2, inst))
    with pytest.raises(R.RulesError, match="targets openmpi"):
        em.to_json(_rs("openmpi", "bcast 2 - 0 - native -\n"), inst)


# ------------------------------------------------------------------------ the CLI


def test_rules_cli_show_check_export(tmp_path, ompi_build):
    src = tmp_path / "tuned.rules"
    src.write_text(R.to_text(_rs("openmpi", OMPI_RULES)))
    out = tmp_path / "tuned.conf"
    r = colltune("rules", "export", str(src), "--to", "openmpi", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "coll_tuned_dynamic_rules_filename" in r.stdout and out.exists()
    r = colltune("rules", "check", str(out))
    assert r.returncode == 0 and "valid" in r.stdout, r.stderr
    r = colltune("rules", "show", str(out))
    assert r.returncode == 0 and "pipeline (3)" in r.stdout
    r = colltune("rules", "show", str(src))
    assert r.returncode == 0 and "ompi:pipeline:segsize=8192" in r.stdout
    bad = tmp_path / "bad.conf"
    bad.write_text("1\n7 1\n2 1\n0 66 0 0\n")
    r = colltune("rules", "check", str(bad))
    assert r.returncode == 2 and f"{bad}:4: bcast algorithm 66 does not exist" in r.stderr
    assert "Traceback" not in r.stderr
    # wrong target: nothing written, a clear error
    out2 = tmp_path / "x.json"
    r = colltune("rules", "export", str(src), "--to", "mpich", "-o", str(out2))
    assert r.returncode == 2 and "targets openmpi" in r.stderr and not out2.exists()
    # a file from another version: warned
    out.write_text(out.read_text().replace("for Open MPI 5", "for Open MPI 4"))
    r = colltune("rules", "check", str(out))
    assert r.returncode == 0 and "warning:" in r.stderr and "written for Open MPI 4" in r.stderr
    r = colltune("rules", "show", str(tmp_path / "missing.conf"))
    assert r.returncode == 2 and "cannot read" in r.stderr


# ------------------------------------------------------------- the end-to-end proof


def test_openmpi_file_steers_the_library(tmp_path, ompi_build):
    """Open MPI under an exported file runs, at two sizes, the two algorithms the file
    names (seen by the preloaded observer), not its fixed rules' choice."""
    path = tmp_path / "tuned.conf"
    rf.export(_rs("openmpi", "bcast 2 - 0 8191 ompi:binomial -\n"
                             "bcast 2 - 8192 - ompi:pipeline segsize=4096\n"
                             "allgather 2 - 0 511 ompi:ring -\n"
                             "allgather 2 - 512 - ompi:bruck -\n"), "openmpi", path, ompi_build.mpi)
    kind, rows, notes = rf.which_ran(path, ompi_build, np=3, sizes=[64, 65536])
    got = {(r.collective, r.size): (r.ran, r.ok) for r in rows}
    assert got[("bcast", 64)] == ("binomial", True)
    assert got[("bcast", 65536)] == ("pipeline (segsize=4096)", True)
    assert got[("allgather", 64)] == ("ring", True)
    assert got[("allgather", 65536)] == ("bruck", True)
    # the observer really tells: without the file, the fixed rules choose otherwise
    # and it tells a disagreement: a forced algorithm beats the file (Open MPI's precedence)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OMPI_MCA_coll_tuned_bcast_algorithm", "1")
        _, forced, _ = rf.which_ran(path, ompi_build, np=3, sizes=[64], collectives=["bcast"])
    assert [(r.ran, r.ok) for r in forced] == [("basic_linear", False)]
    plain = rf._observe(ompi_build, 3, "allgather", [64], {}, "libcolltune-ompi-algos.so", 1, 60)
    assert plain["allgather 64"] and not any("algo=ring " in x for x in plain["allgather 64"])


@pytest.mark.mpich
def test_mpich_file_steers_the_library(tmp_path, mpich_b):
    """MPICH under an exported file: at each size the socket traffic matches the forced
    run of the algorithm the file names, and not that of the other size's choice."""
    path = tmp_path / "sel.json"
    rf.export(_rs("mpich", "allgather 2 - 0 511 mpich:ring -\n"
                           "allgather 2 - 512 - mpich:bruck -\n"
                           "bcast 2 - 0 8191 mpich:binomial -\n"
                           "bcast 2 - 8192 - mpich:scatter_ring_allgather -\n"),
              "mpich", path, mpich_b.mpi)
    kind, rows, notes = rf.which_ran(path, mpich_b, np=3, sizes=[64, 16384])
    got = {(r.collective, r.size): r for r in rows}
    ring, bruck = got[("allgather", 64)], got[("allgather", 16384)]
    assert ring.ok and "ring" in ring.ran.split(", ") and "brucks" not in ring.ran.split(", ")
    assert bruck.ok and "brucks" in bruck.ran.split(", ") and "ring" not in bruck.ran.split(", ")
    small, big = got[("bcast", 64)], got[("bcast", 16384)]
    assert small.ok and "scatter_ring_allgather" not in small.ran.split(", ")
    assert big.ok and big.ran == "scatter_ring_allgather"
    # a forced algorithm beats the file, and the comparison shows it
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MPIR_CVAR_ALLGATHER_INTRA_ALGORITHM", "ring")
        _, forced, _ = rf.which_ran(path, mpich_b, np=3, sizes=[16384], collectives=["allgather"])
    assert forced[0].ok is False and "ring" in forced[0].ran.split(", ")


def test_a_collective_without_table_rows_is_refused_in_one_line(tmp_path, ompi_build,
                                                                monkeypatch):
    """A collective the exporters have no rows for (one added to colltune later) is
    refused with one line naming what is not exported; nothing is written."""
    monkeypatch.setattr(rf, "EXPORTED_TO", {**rf.EXPORTED_TO, "openmpi": tuple(
        c for c in rf.EXPORTED_TO["openmpi"] if c != "scatter")})
    out = tmp_path / "s.conf"
    with pytest.raises(R.RulesError) as ei:
        rf.export(_rs("openmpi", "scatter 2 - 0 - ompi:binomial -\n"), "openmpi", out,
                  ompi_build.mpi)
    msg = str(ei.value)
    assert "scatter rules cannot be exported to openmpi yet (not exported: scatter" in msg
    assert "\n" not in msg and not out.exists()


def test_every_collective_has_its_rows_in_both_exporters():
    """Both exporters have every collective of the registry: an id and a byte count for
    Open MPI, a size test for MPICH (the table rows a new collective needs)."""
    from colltune.base.collectives import COLLECTIVES

    # Gatherv and Scatterv: Open MPI 5.0's coll/tuned has no algorithms for them, and
    # MPICH's two (linear, nb) send the same messages, so rules verify cannot tell which
    # ran: not exported (the interposition library applies colltune's rules for them)
    assert rf.EXPORTED_TO["openmpi"] == rf.EXPORTED_TO["mpich"] == rf.EXPORTED == tuple(
        c for c in COLLECTIVES if c not in ("gatherv", "scatterv"))
    assert {c: em.SIZE_TESTS[c] for c in ("reduce_scatter_block", "reduce_scatter",
                                          "allgatherv")} == {
        c: ("total_msg_size", True) for c in ("reduce_scatter_block", "reduce_scatter",
                                              "allgatherv")}  # avg_msg_size aborts there
    assert {c: eo.COLL_IDS[c] for c in ("alltoallv", "barrier", "scatter", "allgatherv",
                                        "reduce_scatter", "reduce_scatter_block")} == {
        "alltoallv": 4, "barrier": 6, "scatter": 15, "allgatherv": 1, "reduce_scatter": 12,
        "reduce_scatter_block": 13}  # coll_base_functions.h COLLTYPE
    assert [eo.msg_bytes(c, 100, 4) for c in ("bcast", "scatter", "alltoallv", "barrier",
                                              "allgatherv", "reduce_scatter",
                                              "reduce_scatter_block")] \
        == [100, 400, 0, 0, 100, 400, 400]
    assert em.SIZE_TESTS["barrier"] == (None, False)
    assert em.SIZE_TESTS["alltoallv"] == em.SIZE_TESTS["scatter"] == ("total_msg_size", True)


# ------------------------------------------------------------------------- alltoall

A2A_OMPI = ("alltoall 2 - 0 511 ompi:pairwise -\n"
            "alltoall 2 - 512 8191 ompi:modified_bruck -\n"
            "alltoall 2 - 8192 - ompi:linear_sync max_requests=3\n")


def test_openmpi_alltoall_export(ompi_installed):
    """Alltoall goes under Open MPI's id for it, with thresholds in bytes of all
    processes (per destination x communicator size x ... as Open MPI compares: type size
    x count x comm size), and max_requests in the MAXREQ column of a version 2 file."""
    ex = eo.to_text(_rs("openmpi", A2A_OMPI), ompi_installed)
    assert ex.text.startswith("rule-file-version-2\n")
    pf = eo.parse(ex.text)
    assert [c.name for c in pf.colls] == ["alltoall"] and pf.colls[0].coll_id == eo.COLL_IDS[
        "alltoall"]
    by_np = {c.comm_size: [(m.msgbytes, ompi_installed.name("alltoall", m.alg), m.maxreq)
                           for m in c.rules] for c in pf.colls[0].comms}
    for n in (2, 3, 7):
        assert by_np[n] == [(0, "pairwise", 0), (512 * n, "modified_bruck", 0),
                            (8192 * n, "linear_sync", 3)]


def test_openmpi_alltoall_file_steers_the_library(tmp_path, ompi_build):
    """Open MPI under an exported alltoall file runs, at np 2 and 3 and three sizes, the
    algorithm the file names (max_requests included), seen by the preloaded observer."""
    path = tmp_path / "a2a.conf"
    rf.export(_rs("openmpi", A2A_OMPI), "openmpi", path, ompi_build.mpi)
    for np in (2, 3):
        _, rows, _ = rf.which_ran(path, ompi_build, np=np, sizes=[64, 1024, 16384])
        got = {r.size: (r.named, r.ran, r.ok) for r in rows if r.collective == "alltoall"}
        assert got == {64: ("pairwise", "pairwise", True),
                       1024: ("modified_bruck", "modified_bruck", True),
                       16384: ("linear_sync (max_requests=3)", "linear_sync (max_requests=3)",
                               True)}, (np, got)
    # the observer tells a disagreement: a forced algorithm beats the file
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OMPI_MCA_coll_tuned_alltoall_algorithm", "1")
        _, forced, _ = rf.which_ran(path, ompi_build, np=3, sizes=[64])
    assert [(r.ran, r.ok) for r in forced] == [("linear", False)]
    r = colltune("rules", "verify", str(path), "--np", "2,3")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "linear_sync (max_requests=3)" in r.stdout and "alltoall" in r.stdout


@pytest.mark.mpich
def test_mpich_alltoall_file_steers_the_library(tmp_path, mpich_b):
    """MPICH's alltoall under an exported file: avg_msg_size is the bytes per destination
    (colltune's size as it is), in-place calls keep MPICH's in-place algorithm, and the
    traffic at each size matches the forced run of the algorithm the file names."""
    path = tmp_path / "a2a.json"
    rf.export(_rs("mpich", "alltoall 2 - 0 511 mpich:pairwise -\n"
                           "alltoall 2 - 512 - mpich:brucks -\n"), "mpich", path, mpich_b.mpi)
    intra = json.loads(path.read_text())["collective=alltoall"]["comm_type=intra"]
    assert intra["is_sendbuf_inplace=yes"] == {
        "algorithm=MPIR_Alltoall_intra_pairwise_sendrecv_replace": {}}
    assert intra["is_sendbuf_inplace=no"]["comm_size=any"] == {
        "avg_msg_size<=511": {"algorithm=MPIR_Alltoall_intra_pairwise": {}},
        "avg_msg_size=any": {"algorithm=MPIR_Alltoall_intra_brucks": {}}}
    # np 2 and 3: every alltoall algorithm sends the same traffic; the file's is among them
    for np in (2, 3):
        _, rows, _ = rf.which_ran(path, mpich_b, np=np, sizes=[64, 16384])
        got = {r.size: r for r in rows}
        assert got[64].named == "pairwise" and got[16384].named == "brucks"
        for r in rows:
            assert r.ok and r.named in r.ran.split(", "), (np, r)
    # np 4 tells them apart; 256 B per destination is 1 KiB in all, so a threshold read
    # as the total would have chosen brucks
    _, rows, _ = rf.which_ran(path, mpich_b, np=4, sizes=[256, 65536])
    got = {r.size: r for r in rows}
    small, big = got[256].ran.split(", "), got[65536].ran.split(", ")
    assert got[256].ok and "pairwise" in small and "brucks" not in small
    assert got[65536].ok and "brucks" in big and "pairwise" not in big
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM", "pairwise")
        _, forced, _ = rf.which_ran(path, mpich_b, np=4, sizes=[65536])
    assert forced[0].ok is False and "pairwise" in forced[0].ran.split(", ")


def test_mpich_alltoall_in_place_algorithm_refused(mpich_b):
    with pytest.raises(R.RulesError, match="MPI_IN_PLACE calls only"):
        em.to_json(_rs("mpich", "alltoall 2 - 0 - mpich:pairwise_sendrecv_replace -\n"),
                   em.Installed.of(mpich_b.mpi))


# ------------------------------------------------------ alltoallv, scatter, barrier

NEW_OMPI = ("alltoallv 2 - 0 1023 ompi:pairwise -\n"
            "alltoallv 2 - 1024 - ompi:linear -\n"
            "scatter 2 - 0 511 ompi:binomial -\n"
            "scatter 2 - 512 8191 ompi:linear_nb -\n"
            "scatter 2 - 8192 - ompi:linear -\n"
            "barrier 2 3 0 - ompi:bruck -\n"
            "barrier 4 - 0 - ompi:double_ring -\n")


def test_openmpi_alltoallv_scatter_barrier_export(ompi_installed):
    """Ids 4, 15 and 6; scatter thresholds x the communicator size; alltoallv and
    barrier one 0-byte rule per comm size (Open MPI measures them as 0 bytes), the
    smallest size's algorithm for alltoallv, with a note saying so."""
    ex = eo.to_text(_rs("openmpi", NEW_OMPI), ompi_installed)
    pf = eo.parse(ex.text)
    assert not pf.problems and eo.check(ex.text, ompi_installed) == []
    by = {c.name: c for c in pf.colls}
    assert {n: by[n].coll_id for n in by} == {"alltoallv": 4, "scatter": 15, "barrier": 6}

    def rules(coll):
        return {c.comm_size: [(m.msgbytes, ompi_installed.name(coll, m.alg) if m.alg else 0)
                              for m in c.rules] for c in by[coll].comms}

    assert rules("alltoallv") == {1: [(0, 0)], 2: [(0, "pairwise")]}
    assert rules("barrier") == {1: [(0, 0)], 2: [(0, "bruck")], 4: [(0, "double_ring")]}
    sc = rules("scatter")
    for n in (2, 3, 9):
        assert sc[n] == [(0, "binomial"), (512 * n, "linear_nb"), (8192 * n, "basic_linear")]
    assert any("alltoallv: Open MPI's rules measure every alltoallv call as 0 bytes" in n
               for n in ex.notes)
    assert not any(n.startswith("barrier") for n in ex.notes)  # one size: nothing lost


def test_openmpi_alltoallv_scatter_barrier_file_steers_the_library(tmp_path, ompi_build):
    """Open MPI under the exported file runs, at np 2 and 4, the algorithm it names for
    each size (alltoallv's at every size), seen by the preloaded observer; a forced
    algorithm (which beats the file) is reported as a disagreement."""
    path = tmp_path / "new.conf"
    rf.export(_rs("openmpi", NEW_OMPI), "openmpi", path, ompi_build.mpi)
    for np, bar in ((2, "bruck"), (4, "double_ring")):
        _, rows, _ = rf.which_ran(path, ompi_build, np=np)
        got = {(r.collective, r.size): (r.named, r.ran, r.ok) for r in rows}
        assert got == {("alltoallv", 4): ("pairwise", "pairwise", True),
                       ("scatter", 4): ("binomial", "binomial", True),
                       ("scatter", 512): ("linear_nb", "linear_nb", True),
                       ("scatter", 8192): ("basic_linear", "basic_linear", True),
                       ("barrier", 0): (bar, bar, True)}, (np, got)
    _, rows, _ = rf.which_ran(path, ompi_build, np=2, sizes=[65536], collectives=["alltoallv"])
    assert [(r.ran, r.ok) for r in rows] == [("pairwise", True)]  # size-blind
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OMPI_MCA_coll_tuned_barrier_algorithm", "1")
        _, forced, _ = rf.which_ran(path, ompi_build, np=4, collectives=["barrier"])
    assert [(r.ran, r.ok) for r in forced] == [("linear", False)]


NEW_MPICH = ("alltoallv 2 - 0 1023 mpich:scattered -\n"
             "alltoallv 2 - 1024 - mpich:nb -\n"
             "scatter 2 - 0 511 mpich:binomial -\n"
             "scatter 2 - 512 - mpich:nb -\n"
             "barrier 2 3 0 - mpich:recexch -\n"
             "barrier 4 - 0 - mpich:k_bruck kval=3\n")


@pytest.mark.mpich
def test_mpich_alltoallv_scatter_barrier_json(mpich_b):
    """total_msg_size (x the communicator size) for alltoallv (under MPICH's in-place
    test) and scatter, no size test for barrier, and barrier's k inside the leaf."""
    ex = em.to_json(_rs("mpich", NEW_MPICH), em.Installed.of(mpich_b.mpi))
    tree = json.loads(ex.text)
    a2av = tree["collective=alltoallv"]["comm_type=intra"]
    assert a2av["is_sendbuf_inplace=yes"] == {
        "algorithm=MPIR_Alltoallv_intra_pairwise_sendrecv_replace": {}}
    assert a2av["is_sendbuf_inplace=no"]["comm_size<=4"] == {
        "total_msg_size<=4092": {"algorithm=MPIR_Alltoallv_intra_scattered": {}},
        "total_msg_size=any": {"algorithm=MPIR_Alltoallv_allcomm_nb": {}}}
    assert tree["collective=scatter"]["comm_type=intra"]["comm_size<=3"] == {
        "total_msg_size<=1533": {"algorithm=MPIR_Scatter_intra_binomial": {}},
        "total_msg_size=any": {"algorithm=MPIR_Scatter_allcomm_nb": {}}}
    bar = tree["collective=barrier"]["comm_type=intra"]
    assert bar["comm_size<=3"] == {"algorithm=MPIR_Barrier_intra_recexch": {"k=2": {}}}
    assert bar["comm_size=any"] == {"algorithm=MPIR_Barrier_intra_k_dissemination": {"k=3": {}}}
    assert em.leaf_params(ex.text, "barrier", 4) == {
        "MPIR_Barrier_intra_k_dissemination": {"kval": "3"}}
    assert em.lookup(ex.text, "scatter", 3, 511) == "MPIR_Scatter_intra_binomial"
    assert em.lookup(ex.text, "scatter", 3, 512) == "MPIR_Scatter_allcomm_nb"


@pytest.mark.mpich
def test_mpich_barrier_and_alltoallv_files_steer_the_library(tmp_path, mpich_b):
    """MPICH's barrier under the exported file at np 4 has the traffic of
    k_dissemination with k=3 (the leaf's k, the same algorithm with the default k=2
    sends half as much: the only match), at np 3 that of recexch; alltoallv and scatter
    are consistent with the file at np 4."""
    path = tmp_path / "new.json"
    rf.export(_rs("mpich", NEW_MPICH), "mpich", path, mpich_b.mpi)
    _, rows, _ = rf.which_ran(path, mpich_b, np=4)
    got = {(r.collective, r.size): r for r in rows}
    bar = got[("barrier", 0)]
    assert (bar.named, bar.ran, bar.ok) == ("k_dissemination", "k_dissemination", True)
    assert got[("alltoallv", 4)].named == "scattered"
    assert got[("alltoallv", 1024)].named == "nb"
    assert got[("scatter", 512)].named == "nb"
    assert all(r.ok for r in rows), rows
    _, rows3, _ = rf.which_ran(path, mpich_b, np=3, collectives=["barrier"])
    assert [(r.named, r.ok) for r in rows3] == [("recexch", True)]
    assert "recexch" in rows3[0].ran.split(", ")


# ------------------------------------------------------------------ processes per node

PPN = """# colltune-rules 1
# load-class: quiet 0 9.5
bcast 16 - 0 - binomial - ppn=1-1
bcast 16 - 0 - linear - load=quiet ppn=2-
bcast 16 - 0 - chain - core ppn=4
bcast 1 - 0 - native -
"""


def test_ppn_rules_round_trip_and_match_their_range():
    rs = R.from_text(PPN, "p.rules")
    assert [r.ppn for r in rs.rules] == [(1, 1), (2, None), (4, 4), None]
    assert R.from_text(R.to_text(rs)).rules == rs.rules
    assert "ppn=2-" in R.to_text(rs) and "ppn=1-1" in R.to_text(rs)
    assert rs.lookup("bcast", 32, 8, ppn=1).algorithm == "binomial"
    assert rs.lookup("bcast", 32, 8, ppn=8).algorithm == "linear"
    assert rs.lookup("bcast", 8, 8, ppn=1).algorithm == "native"  # np below 16
    # an unknown ppn (a caller without it) takes the first rule of the range, as load
    assert rs.lookup("bcast", 32, 8).algorithm == "binomial"


@pytest.mark.parametrize("line,match", [
    ("bcast 2 - 0 - binomial - ppn=x", "ppn=x: write ppn=MIN-MAX"),
    ("bcast 2 - 0 - binomial - ppn=4-2", r"needs 1 <= MIN <= MAX"),
    ("bcast 2 - 0 - binomial - ppn=0", r"needs 1 <= MIN <= MAX"),
    ("bcast 2 - 0 - binomial - ppn=1 ppn=2", "ppn= given twice"),
])
def test_bad_ppn_fields_are_named(line, match):
    with pytest.raises(R.RulesError, match=match):
        R.from_text("# colltune-rules 1\n" + line + "\n", "f.rules")


def test_openmpi_classic_export_refuses_ppn_rules_in_one_line(tmp_path):
    rs = R.from_text(PPN.replace("load=quiet ", "").replace("# load-class: quiet 0 9.5\n", ""))
    with pytest.raises(R.RulesError, match="processes per node.*--format json"):
        rf.export(rs, "openmpi", tmp_path / "x", None)
    assert not (tmp_path / "x").exists()


def test_mpich_export_writes_ppn_rules_as_comm_avg_ppn_tests(mpich_b):
    rs = R.from_text("# colltune-rules 1\n# target: mpich\n"
                     "bcast 1 - 0 - mpich:binomial - ppn=1-1\n"
                     "bcast 1 - 0 1023 mpich:scatter_recursive_doubling_allgather - ppn=2-4\n"
                     "bcast 1 - 0 - mpich:scatter_ring_allgather -\n")
    inst = em.Installed.of(mpich_b.mpi)
    text = em.to_json(rs, inst).text
    assert em.check(text, inst) == []
    assert '"comm_avg_ppn<=1"' in text and '"comm_avg_ppn<=4"' in text
    assert '"comm_avg_ppn=any"' in text
    fn = {a: em.function_name("bcast", a) for a in
          ("binomial", "scatter_recursive_doubling_allgather", "scatter_ring_allgather")}
    assert em.lookup(text, "bcast", 16, 64, ppn=1) == fn["binomial"]
    assert em.lookup(text, "bcast", 16, 64, ppn=3) == fn["scatter_recursive_doubling_allgather"]
    assert em.lookup(text, "bcast", 16, 4096, ppn=3) == fn["scatter_ring_allgather"]
    assert em.lookup(text, "bcast", 16, 64, ppn=8) == fn["scatter_ring_allgather"]


# ------------------------------------------------------------------ Open MPI 6 JSON rules

PPN_OMPI = """# colltune-rules 1
# target: openmpi
bcast 1 - 0 1023 ompi:binomial - ppn=1-1
bcast 1 - 0 8191 ompi:chain segsize=8192,fanout=2
bcast 1 - 8192 - ompi:pipeline segsize=65536
allreduce 1 - 0 - ompi:ring - ppn=4-
allreduce 1 - 0 - native -
alltoall 1 - 0 - ompi:linear_sync max_requests=8
"""


def test_openmpi_json_export_follows_the_schema_and_maps_ppn(ompi_installed):
    ex = eo.to_json(R.from_text(PPN_OMPI), ompi_installed)
    doc = json.loads(ex.text)
    assert eo.check_json(doc) == []
    assert doc["rule_file_version"] == 3 and doc["module"] == "tuned"
    got = {c: [(e["comm_size_min"], e["comm_size_max"], e.get("comm_rank_distribution", "any"),
                [(r["msg_size_min"], r["msg_size_max"], r["alg"], r.get("faninout"),
                  r.get("seg_size"), r.get("reqs")) for r in e["rules"]])
               for e in es] for c, es in doc["collectives"].items()}
    # ppn=1-1 -> one-per-node, first; the rules without ppn= -> any, last
    assert got["bcast"][0] == (1, "inf", "one-per-node", [
        (0, 1023, "binomial", None, None, None), (1024, 8191, "chain", 2, 8192, None),
        (8192, "inf", "pipeline", None, 65536, None)])
    assert got["bcast"][-1] == (1, "inf", "any", [(0, 8191, "chain", 2, 8192, None),
                                                 (8192, "inf", "pipeline", None, 65536, None)])
    # ppn=4- holds on a single node of 4 or more processes; native is alg 0 (ignore)
    assert got["allreduce"] == [(4, "inf", "single-node", [(0, "inf", "ring", None, None, None)]),
                                (1, "inf", "any", [(0, "inf", 0, None, None, None)])]
    assert got["alltoall"] == [(1, "inf", "any", [(0, "inf", "linear_sync", None, None, 8)])]
    assert any("ppn=4-" in n and "single-node" in n for n in ex.notes)


def test_openmpi_json_check_names_what_breaks_the_schema():
    bad = {"rule_file_version": 3, "module": "tuned", "extra": 1, "collectives": {
        "reduce_scatter": [], "bcast": [{"comm_size_min": "big", "rules": [
            {"msg_size_min": 0}, {"alg": "x", "seg_size": "8K", "colour": 1}]},
            {"comm_rank_distribution": "two-per-node", "rules": []}]}}
    problems = "\n".join(eo.check_json(bad))
    for part in ("unknown keys ['extra']", "'reduce_scatter' is not one the schema names",
                 "comm_size_min: 'big'", "rules[0]: an object with 'alg'",
                 "rules[1].seg_size: an integer", "unknown keys ['colour']",
                 "comm_rank_distribution 'two-per-node'"):
        assert part in problems, (part, problems)


def test_rules_export_format_json_on_the_command_line(tmp_path, ompi_build):
    src = tmp_path / "ppn.rules"
    src.write_text(PPN_OMPI)
    res = colltune("rules", "export", str(src), "--to", "openmpi", "--format", "json",
                   "-o", str(tmp_path / "r.json"))
    assert res.returncode == 0, res.stderr
    assert eo.check_json(json.loads((tmp_path / "r.json").read_text())) == []
    assert "Open MPI 6 JSON rules file" in res.stdout
    # the classic file cannot say ppn: one line naming the way out, nothing written
    res = colltune("rules", "export", str(src), "--to", "openmpi", "-o", str(tmp_path / "c"))
    assert res.returncode == 2 and "--format json" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and not (tmp_path / "c").exists()


def test_mpich_runs_what_a_ppn_keyed_file_says_on_emulated_nodes(tmp_path, mpich_b):
    """rules verify runs MPICH with a node per rank (MPIR_CVAR_NOLOCAL=1: comm_avg_ppn is
    1). The ppn=2- rule comes first: an MPICH that ignored the comm_avg_ppn test, or
    counted the ranks of this one machine as one node, would run binomial; the traffic
    shows the ppn=1-1 rule's algorithm."""
    rs = R.from_text("# colltune-rules 1\n# target: mpich\n"
                     "bcast 1 - 0 - mpich:binomial - ppn=2-\n"
                     "bcast 1 - 0 - mpich:scatter_ring_allgather - ppn=1-1\n")
    path = tmp_path / "ppn.json"
    rf.export(rs, "mpich", path, mpich_b.mpi)
    _, rows, _ = rf.which_ran(path, mpich_b, np=4, sizes=[65536], collectives=["bcast"])
    assert [(r.named, r.ok) for r in rows] == [("scatter_ring_allgather", True)], rows
    assert "binomial" not in rows[0].ran.split(", ")


def test_rules_show_and_check_say_the_ppn_ranges(tmp_path, ompi_build):
    path = tmp_path / "ppn.rules"
    path.write_text("# colltune-rules 1\nbcast 16 - 0 - binomial - ppn=1-1\n"
                    "bcast 16 - 0 - linear - ppn=2-\nallreduce 1 - 0 - ring -\n")
    res = colltune("rules", "check", str(path))
    assert res.returncode == 0 and "a valid colltune rules file" in res.stdout, res.stderr
    headers, rows, _ = rf.table(path.read_text(), "colltune")
    assert headers[-1] == "per node"
    assert [r[-1] for r in rows] == ["1", "2-", "any"]
    res = colltune("rules", "show", str(path))
    assert res.returncode == 0 and "per node" in res.stdout


# ------------------------------------------- reduce_scatter(_block), allgatherv (Open MPI)

RS_OMPI = ("reduce_scatter_block 2 - 0 1023 ompi:recursive_halving -\n"
           "reduce_scatter_block 2 - 1024 - ompi:butterfly -\n"
           "reduce_scatter 2 - 0 1023 ompi:ring -\n"
           "reduce_scatter 2 - 1024 - ompi:recursive_halving -\n"
           "allgatherv 2 - 0 1023 ompi:ring -\n"
           "allgatherv 2 - 1024 - ompi:bruck -\n")


def test_openmpi_reduce_scatter_and_allgatherv_files_steer_the_library(tmp_path, ompi_build):
    """Ids 13, 12 and 1 in the classic file; Open MPI 5.0.11 runs what it names at 2 and
    4 processes. The sizes tell the byte counts apart: at 4 processes a 1 KiB block is
    4 KiB of Reduce_scatter(_block) (the file's threshold x 4: butterfly and
    recursive_halving, not the small-size algorithms) while a 512 B Allgatherv block
    stays under the file's 1 KiB (Open MPI compares the counts' total / comm size: ring;
    the total, 2 KiB, would have given bruck). Open MPI's JSON format refuses allgatherv
    in one line: its schema has no key for it."""
    path = tmp_path / "rs.conf"
    rf.export(_rs("openmpi", RS_OMPI), "openmpi", path, ompi_build.mpi)
    ids = [c.coll_id for c in eo.parse(path.read_text()).colls]
    assert sorted(ids) == [1, 12, 13]
    want = {("reduce_scatter_block", 4): "recursive_halving",
            ("reduce_scatter_block", 512): "recursive_halving",
            ("reduce_scatter_block", 1024): "butterfly",
            ("reduce_scatter", 4): "ring", ("reduce_scatter", 1024): "recursive_halving",
            ("allgatherv", 4): "ring", ("allgatherv", 512): "ring",
            ("allgatherv", 1024): "bruck"}
    for np in (2, 4):
        _, rows, _ = rf.which_ran(path, ompi_build, np=np, sizes=[4, 512, 1024])
        got = {(r.collective, r.size): (r.ran, r.ok) for r in rows}
        for key, algo in want.items():
            assert got[key] == (algo, True), (np, key, got)
    with pytest.raises(R.RulesError, match="schema names no allgatherv key"):
        rf.export(_rs("openmpi", RS_OMPI), "openmpi", tmp_path / "r.json", ompi_build.mpi,
                  fmt="json")
    assert not (tmp_path / "r.json").exists()


RS_MPICH = ("reduce_scatter_block 2 - 0 1023 mpich:recursive_halving -\n"
            "reduce_scatter_block 2 - 1024 - mpich:pairwise -\n"
            "reduce_scatter 2 - 0 1023 mpich:recursive_halving -\n"
            "reduce_scatter 2 - 1024 - mpich:pairwise -\n"
            "allgatherv 2 - 0 1023 mpich:ring -\n"
            "allgatherv 2 - 1024 - mpich:brucks -\n")


@pytest.mark.mpich
def test_mpich_reduce_scatter_and_allgatherv_files_steer_the_library(tmp_path, mpich_b):
    """MPICH compares total_msg_size for these three (its avg_msg_size aborts there):
    colltune's per-process thresholds x the communicator size. At 4 processes a 1 KiB
    block of Reduce_scatter(_block) is 4 KiB, the file's pairwise range, and pairwise is
    the only algorithm with that traffic; a 512 B Allgatherv block is 2 KiB, under the
    file's 4 KiB: ring, alone."""
    path = tmp_path / "rs.json"
    rf.export(_rs("mpich", RS_MPICH), "mpich", path, mpich_b.mpi)
    _, rows, _ = rf.which_ran(path, mpich_b, np=4, sizes=[512, 1024])
    got = {(r.collective, r.size): (r.ran, r.ok) for r in rows}
    assert got[("reduce_scatter_block", 1024)] == ("pairwise", True), got
    assert got[("reduce_scatter", 1024)] == ("pairwise", True), got
    assert got[("allgatherv", 512)] == ("ring", True), got
    assert all(ok for _, ok in got.values()), got
