"""Rank remapping (issue 17): the remap parameter, the verify family `remap` on
virtual nodes, and traffic counted from the algorithms' own sends against the
seed's LogGP table (recursive doubling) and our derivations (ring, neighbour
exchange, binomial Bcast). Open MPI, oversubscribed; about a minute in all."""

import json

import pytest

from colltune.drivers import registry
from colltune.drivers import traffic
from colltune.drivers import verify
from colltune.base import specs
from colltune.base.errors import ColltuneError
from conftest import colltune

KIB = 1024


def _count(build, coll, spec, np, nodes=None, order="seq", node_list=None, sizes=(KIB,),
           root=0):
    return traffic.count(build, coll, spec, np, list(sizes), nodes=nodes, order=order,
                         node_list=node_list, root=root)


# ---- the parameter --------------------------------------------------------------
REMAPPED = ("bcast", "reduce", "allgather", "allreduce")  # the collectives remap applies to


def test_remap_is_a_parameter_of_every_algorithm_of_the_remapped_collectives(ompi_build):
    for a in registry.algorithms(ompi_build):
        names = {p["name"]: p for p in a.params}
        if a.collective not in REMAPPED:  # gather; alltoall(v), scatter, barrier: not yet
            assert "remap" not in names, a
        else:
            assert names["remap"]["values"] == ["none", "seq", "rr", "auto"], a
            assert names["remap"]["auto"] in ("none", "seq", "rr")
    auto = {(a.collective, a.name): {p["name"]: p for p in a.params}["remap"]["auto"]
            for a in registry.algorithms(ompi_build) if a.collective in REMAPPED}
    assert auto[("allgather", "recursive_doubling")] == "rr"
    assert auto[("allgather", "ring")] == "seq"
    assert auto[("allgather", "neighbor_exchange")] == "seq"
    assert auto[("allreduce", "ring")] == "seq"


def test_bad_remap_values_are_refused(ompi_build):
    res = colltune("traffic", "--coll", "allgather", "--algo", "ring:remap=sideways", "--np", "2")
    assert res.returncode == 2
    assert "remap='sideways' is invalid; valid: none, seq, rr, auto" in res.stderr
    res = colltune("traffic", "--coll", "gather", "--algo", "linear:remap=seq", "--np", "2")
    assert res.returncode == 2 and "has no parameter 'remap'" in res.stderr
    with pytest.raises(ColltuneError, match="already sets remap"):
        specs.with_remap("ring:remap=seq", "rr")
    assert specs.with_remap("chain:segsize=8192", "rr") == "chain:segsize=8192,remap=rr"
    assert specs.with_remap("ring", "auto") == "ring:remap=auto"


# ---- correctness: the verify family on virtual nodes ------------------------------
ALGOS = ["ring", "recursive_doubling", "neighbor_exchange", "binomial", "bruck",
         "rabenseifner", "linear", "gather_bcast", "reduce_bcast", "chain", "sparbit"]


@pytest.mark.parametrize("np", [1, 3, 4, 5, 6])
def test_verify_remap_family(ompi_build, np):
    """remap=seq, rr, auto against the MPI library's collective, on 2 and 3 virtual
    nodes placed seq and rr (whole nodes or not) and two irregular placements; the
    dispatcher must report the order it applied (none for a non-commutative op)."""
    report = verify.run(ompi_build, [np], ["bcast", "reduce", "allgather", "allreduce"],
                        ALGOS, timeout=600, families=["remap"])
    assert report.ok, "\n".join(report.failure_lines())
    assert report.runs[0].summary["cases"] > 500


# ---- traffic: the seed's table ---------------------------------------------------
@pytest.mark.parametrize("np,nodes", [(16, 4), (8, 2)])
def test_rda_traffic_matches_the_seed(ompi_build, np, nodes):
    M, Q = nodes, np // nodes
    for order in ("seq", "rr"):
        for t in _count(ompi_build, "allgather", "recursive_doubling", np, nodes, order,
                        sizes=(KIB, 4 * KIB)):
            want = traffic.loggp_volumes("recursive_doubling", order, M, Q, t.size)
            assert t.placement == order and t.regular
            for r in t.ranks:  # every rank: the seed's per-rank volumes, exactly
                assert (r[0], r[2]) == (want["intra_bytes"], want["inter_bytes"]), (order, r)
            assert t.total["intra_msgs"] + t.total["inter_msgs"] == np * (np.bit_length() - 1)


def test_remap_gives_the_target_placements_traffic(ompi_build):
    """SEQ placement + remap=rr moves exactly what an RR placement moves (and the
    reverse), with no extra exchange: the seed's RDA* pays M*m inter-node bytes per
    rank, the layer pays (M-1)*m. Also at P = 12 on 3 nodes (not a power of two)."""
    for np, nodes in ((16, 4), (12, 3)):
        seq, rr = (_count(ompi_build, "allgather", "recursive_doubling", np, nodes, o)[0]
                   for o in ("seq", "rr"))
        seq_as_rr = _count(ompi_build, "allgather", "recursive_doubling:remap=rr", np, nodes,
                           "seq")[0]
        rr_as_seq = _count(ompi_build, "allgather", "recursive_doubling:remap=seq", np, nodes,
                           "rr")[0]
        assert seq_as_rr.remap_applied == "rr" and rr_as_seq.remap_applied == "seq"
        assert seq_as_rr.total == rr.total and rr_as_seq.total == seq.total
        assert sorted(seq_as_rr.ranks) == sorted(rr.ranks)
    # already in the target order: a no-op
    same = _count(ompi_build, "allgather", "recursive_doubling:remap=seq", 8, 2, "seq")[0]
    assert same.remap_applied == "none"


# ---- traffic: our derivations for ring, neighbour exchange, binomial Bcast -----------
def test_ring_allgather_traffic(ompi_build):
    """Each rank sends P-1 blocks to rank+1: under SEQ only the M node-boundary links
    (the wrap-around included) cross, M*(P-1)*m bytes; under RR every link crosses."""
    P, M, m = 16, 4, KIB
    seq = _count(ompi_build, "allgather", "ring", P, M, "seq")[0]
    rr = _count(ompi_build, "allgather", "ring", P, M, "rr")[0]
    assert seq.total["inter_bytes"] == M * (P - 1) * m
    assert seq.total["intra_bytes"] == (P - M) * (P - 1) * m
    assert rr.total["inter_bytes"] == P * (P - 1) * m and rr.total["intra_bytes"] == 0
    assert seq.total["inter_msgs"] == M * (P - 1)


def test_neighbor_exchange_traffic(ompi_build):
    """P/2 steps: one block with the first neighbour, then two blocks per step,
    alternating neighbours. Each rank sends m + 2m*floor((P/2-1)/2) over its first
    link and 2m*floor(P/4) over its other one; under SEQ (Q even) node boundaries
    are second links of both ends, so 2*M*2m*floor(P/4) bytes cross; under RR all."""
    P, M, m = 16, 4, KIB
    seq = _count(ompi_build, "allgather", "neighbor_exchange", P, M, "seq")[0]
    rr = _count(ompi_build, "allgather", "neighbor_exchange", P, M, "rr")[0]
    assert seq.total["inter_bytes"] == 2 * M * 2 * m * (P // 4)
    assert seq.total["intra_bytes"] + seq.total["inter_bytes"] == P * (P - 1) * m
    assert rr.total["inter_bytes"] == P * (P - 1) * m
    assert seq.total["intra_msgs"] + seq.total["inter_msgs"] == P * P // 2


def test_binomial_bcast_traffic(ompi_build):
    """The tree's P-1 edges v -> v + 2^r (2^r > v) each carry the message once: an
    edge crosses nodes under SEQ iff 2^r >= Q (P - Q edges), under RR iff 2^r < M
    (M - 1 edges). So by volume our binomial Bcast prefers RR (auto = rr)."""
    P, M, n = 16, 4, 4 * KIB
    Q = P // M
    seq = _count(ompi_build, "bcast", "binomial", P, M, "seq", sizes=(n,))[0]
    rr = _count(ompi_build, "bcast", "binomial", P, M, "rr", sizes=(n,))[0]
    assert seq.total["inter_msgs"] == P - Q and seq.total["inter_bytes"] == (P - Q) * n
    assert rr.total["inter_msgs"] == M - 1 and rr.total["inter_bytes"] == (M - 1) * n
    auto = _count(ompi_build, "bcast", "binomial:remap=auto", P, M, "seq", sizes=(n,))[0]
    assert auto.remap_applied == "rr" and auto.total == rr.total


def test_irregular_placement_and_root(ompi_build):
    """An irregular placement (nodes of 3, 1 and 2 ranks, interleaved) is sorted by
    node for remap=seq: the ring then crosses only at the 3 node boundaries; a Bcast
    root keeps its data wherever it plays."""
    nl = [0, 1, 0, 2, 0, 2]
    t = _count(ompi_build, "allgather", "ring:remap=seq", 6, node_list=nl)[0]
    assert t.placement == "irregular" and not t.regular and t.remap_applied == "seq"
    assert t.total["inter_msgs"] == 3 * 5
    b = _count(ompi_build, "bcast", "binomial:remap=rr", 6, node_list=nl, root=3)[0]
    assert b.remap_applied == "rr" and b.total["intra_msgs"] + b.total["inter_msgs"] == 5


def test_traffic_cli_json(ompi_build, tmp_path):
    out = tmp_path / "t.json"
    res = colltune("traffic", "--coll", "allgather", "--algo", "recursive_doubling", "--np",
                   "8", "--nodes", "2", "--order", "rr", "--sizes", "1K", "--remap", "seq",
                   "--format", "json", "-o", str(out))
    assert res.returncode == 0, res.stderr
    d = json.loads(out.read_text())[0]
    assert d["remap_applied"] == "seq" and d["placement"] == "rr" and len(d["per_rank"]) == 8
    # rr placement remapped to seq: the SEQ volumes of the seed's table
    want = traffic.loggp_volumes("recursive_doubling", "seq", 2, 4, KIB)
    assert d["per_rank"][5]["inter_bytes"] == want["inter_bytes"]
    res = colltune("traffic", "--coll", "allgather", "--algo", "ring", "--np", "4",
                   "--nodes", "2", "--node-list", "0,0,1,1")
    assert res.returncode == 2 and "exclude each other" in res.stderr
    # --np as on every command: a list, one launch (and table) per count
    res = colltune("traffic", "--coll", "allgather", "--algo", "ring", "--np", "2,4",
                   "--size", "1K", "--format", "json")
    assert res.returncode == 0, res.stderr
    assert [d["np"] for d in json.loads(res.stdout)] == [2, 4]


# ---- tune: remap is one more candidate parameter -------------------------------------
def test_tune_keeps_remap_in_rules_and_the_library_parses_them(ompi_build, tmp_path):
    import pandas as pd

    from colltune.rules import ruleset as rules
    from colltune.tuning import tune

    rows = []
    for rep in range(5):
        for label, us in (("native", 10.0), ("recursive_doubling", 6.0),
                          ("recursive_doubling:remap=rr", 3.0)):
            algo, _, params = label.partition(":")
            rows.append({"study": "s", "run_id": 1, "unit_id": rep + 1, "round": 1,
                         "repetition": rep + 1, "collective": "allgather", "algorithm": algo,
                         "spec": label, "params": params, "np": 8, "nodes": 2, "ppn": 4,
                         "mapping": "node", "size": 1024, "median_us": us * (1 + rep / 100),
                         "valid": 1, "cores": 64, "mpi_kind": "openmpi",
                         "mpi_version": "5.0.11"})
    t = tune.tune(pd.DataFrame(rows), "colltune", meta={"study": "s"})
    # the measured count (np 8); below and above it: native, said so in a comment
    (r,) = [r for r in t.rules.rules if r.np_min <= 8 and (r.np_max is None or r.np_max >= 8)]
    assert {x.algorithm for x in t.rules.rules if x is not r} <= {"native"}
    assert r.algorithm == "recursive_doubling" and r.params == (("remap", "rr"),)
    assert r.spec == "recursive_doubling:remap=rr"
    text = rules.to_text(t.rules)
    assert rules.from_text(text).rules == t.rules.rules
    path = tmp_path / "remap.rules"
    path.write_text(text)
    res = colltune("rules", "check", str(path))
    assert res.returncode == 0, res.stdout + res.stderr
