"""The algorithm table and argument checking."""

import json

from colltune.mpi import launch
from conftest import colltune

BCAST = {"native", "linear", "linear_nb", "chain", "pipeline", "binary", "split_binary",
         "binomial", "knomial", "scatter_allgather", "scatter_ring_allgather",
         "scatter_direct_allgather"}
REDUCE = {"native", "linear", "chain", "pipeline", "binary", "binomial", "in_order_binary",
          "rabenseifner"}


def test_native_selftest(ompi_build):
    """C unit tests of the registry, parser, dispatcher errors and fallback reporting."""
    ln = launch.prepare(ompi_build.mpi, 1, [str(ompi_build.program("colltune-selftest"))])
    res = launch.run(ln, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert " 0 failed" in res.stdout


def test_algorithms_json_lists_the_promised_algorithms():
    res = colltune("algorithms", "--json")
    assert res.returncode == 0, res.stderr
    algos = json.loads(res.stdout)
    by = {}
    for a in algos:
        by.setdefault(a["collective"], set()).add(a["name"])
        assert a["summary"]
        if a["name"] != "native":
            assert a["cost"], a
    assert BCAST <= by["bcast"]
    assert REDUCE <= by["reduce"]
    assert "_broken" not in by["bcast"]  # test-only entry stays hidden
    chain = next(a for a in algos if a["collective"] == "bcast" and a["name"] == "chain")
    assert {p["name"] for p in chain["params"]} == {"segsize", "fanout", "remap"}
    rab = next(a for a in algos if a["collective"] == "reduce" and a["name"] == "rabenseifner")
    assert "commutative" in rab["constraints"] and rab["fallback"]


def test_registry_collectives_are_pythons_list_and_the_new_families():
    """The native registry and base.collectives.COLLECTIVES name the same collectives
    (issue 30 added alltoall, alltoallv, scatter, barrier), each with its families."""
    from colltune.base.collectives import COLLECTIVES

    res = colltune("algorithms", "--json")
    assert res.returncode == 0, res.stderr
    algos = json.loads(res.stdout)
    by = {}
    for a in algos:
        by.setdefault(a["collective"], set()).add(a["name"])
    assert set(by) == set(COLLECTIVES)
    assert {"native", "linear", "pairwise", "bruck", "linear_sync", "two_proc"} <= by["alltoall"]
    assert {"native", "linear", "pairwise"} <= by["alltoallv"]
    assert {"native", "linear", "linear_nb", "binomial"} <= by["scatter"]
    assert {"native", "linear", "double_ring", "recursive_doubling", "bruck", "two_proc",
            "tree"} <= by["barrier"]
    assert "_broken" not in by["alltoall"]
    sync = next(a for a in algos if a["collective"] == "alltoall" and a["name"] == "linear_sync")
    assert [p["name"] for p in sync["params"]] == ["max_requests"]  # no remap for alltoall
    assert sync["params"][0]["default"] == 0 and sync["ompi_name"] == "linear_sync"
    two = next(a for a in algos if a["collective"] == "alltoall" and a["name"] == "two_proc")
    assert two["constraints"] == ["two_processes"] and two["fallback"] == "pairwise"
    res = colltune("bench", "--coll", "alltoall", "--algo", "linear_sync:max_requests=-1",
                   "--np", "1", "--sizes", "8")
    assert res.returncode == 2 and "max_requests=-1 is out of range" in res.stderr


def test_algorithms_table_is_readable():
    res = colltune("algorithms", "--coll", "reduce")
    assert res.returncode == 0, res.stderr
    assert "in_order_binary" in res.stdout and "commutative" in res.stdout


def test_unknown_algorithm_lists_valid_ones():
    res = colltune("bench", "--coll", "bcast", "--algo", "nosuch", "--np", "1", "--sizes", "8")
    assert res.returncode == 2
    assert "unknown bcast algorithm 'nosuch'" in res.stderr
    assert "binomial" in res.stderr and "scatter_ring_allgather" in res.stderr


def test_bad_parameter_says_valid_range():
    res = colltune("bench", "--coll", "bcast", "--algo", "chain:segsize=-5", "--np", "1",
                   "--sizes", "8")
    assert res.returncode == 2
    assert "segsize=-5 is out of range" in res.stderr and "0..1073741824" in res.stderr
    res = colltune("bench", "--coll", "bcast", "--algo", "knomial:radix=1", "--np", "1",
                   "--sizes", "8")
    assert res.returncode == 2 and "radix=1" in res.stderr and "2..64" in res.stderr


def test_bad_size_says_why():
    res = colltune("bench", "--coll", "bcast", "--np", "1", "--sizes", "12Q")
    assert res.returncode == 2 and "'12Q' is not a size" in res.stderr
    res = colltune("bench", "--coll", "reduce", "--dtype", "int", "--np", "1", "--sizes", "6")
    assert res.returncode == 2 and "not a multiple of the int element" in res.stderr


def test_info_names_the_mpi():
    res = colltune("info")
    assert res.returncode == 0, res.stderr
    assert "Open MPI 5." in res.stdout and "build" in res.stdout
