"""The MPI library's own algorithms as benchmark candidates (colltune.mpi.libalgos,
alternating launches: colltune.drivers.bench.run_bench)."""

from __future__ import annotations

import json

import pytest

from colltune.base import specs
from colltune.base.collectives import COLLECTIVES
from colltune.drivers import bench as bench_mod
from colltune.mpi import launch
from colltune.mpi import libalgos as L
from colltune.mpi.libraries import MPI
from conftest import colltune

FAKE_OMPI = MPI("openmpi", None, None, None, "5.0.11", "Open MPI v5.0.11")  # type: ignore[arg-type]
FAKE_MPICH = MPI("mpich", None, None, None, "5.0.2", "MPICH 5.0.2")  # type: ignore[arg-type]


# ----------------------------------------------------------- tables vs the library


def test_ompi_table_matches_ompi_info(ompi_build):
    """Numbers and names of coll_tuned_<coll>_algorithm, and every MCA parameter the
    specs can set, as this Open MPI's ompi_info reports them."""
    enums, params = L.ompi_info_algorithms(ompi_build.mpi)
    for coll in COLLECTIVES:
        if not L.OMPI[coll]:  # gatherv, scatterv: coll/tuned has none
            assert coll in ("gatherv", "scatterv") and coll not in enums, coll
            continue
        assert enums[coll][0] == "ignore"
        assert {n: v for n, v in enums[coll].items() if n} == \
            {int(a.selector): a.lib_name for a in L.OMPI[coll]}, coll
    assert L.ompi_table_problems(ompi_build.mpi) == []
    # han outranks tuned, hence OMPI_MCA_coll=^han in every ompi: launch
    assert "coll_han_priority" in params and "coll_tuned_priority" in params


@pytest.mark.mpich
def test_mpich_table_matches_mpivars(mpich_build):
    values, names = L.mpich_cvars(mpich_build.mpi)
    for coll in COLLECTIVES:
        assert set(values[coll]) - {"auto"} == {a.lib_name for a in L.MPICH[coll]}, coll
    assert "MPIR_CVAR_DEVICE_COLLECTIVES" in names
    assert L.mpich_table_problems(mpich_build.mpi) == []


# ------------------------------------------------------------ specs and errors


def test_parse_and_env():
    assert specs.parse_lib_spec("ompi:binomial:segsize=8192,fanout=4") == \
        ("ompi", "binomial", {"segsize": "8192", "fanout": "4"})
    assert L.lib_env(FAKE_OMPI, "bcast", "ompi:chain:segsize=16K,fanout=2") == {
        "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
        "OMPI_MCA_coll": "^han",
        "OMPI_MCA_coll_tuned_bcast_algorithm": "2",
        "OMPI_MCA_coll_tuned_bcast_algorithm_segmentsize": "16384",
        "OMPI_MCA_coll_tuned_bcast_algorithm_chain_fanout": "2",
    }
    assert L.lib_env("openmpi", "bcast", "ompi:knomial:radix=8")[
        "OMPI_MCA_coll_tuned_bcast_algorithm_knomial_radix"] == "8"
    # the library's own names are aliases
    assert L.lib_env(FAKE_OMPI, "reduce", "ompi:in-order_binary") == \
        L.lib_env(FAKE_OMPI, "reduce", "ompi:in_order_binary")
    assert L.lib_env(FAKE_MPICH, "bcast", "mpich:scatter_allgather") == {
        "MPIR_CVAR_DEVICE_COLLECTIVES": "none",
        "MPIR_CVAR_BCAST_INTRA_ALGORITHM": "scatter_recursive_doubling_allgather",
    }
    assert L.lib_env(FAKE_MPICH, "bcast", "mpich:tree:kval=4,tree_type=knomial_1") == {
        "MPIR_CVAR_DEVICE_COLLECTIVES": "none", "MPIR_CVAR_BCAST_INTRA_ALGORITHM": "tree",
        "MPIR_CVAR_BCAST_TREE_KVAL": "4", "MPIR_CVAR_BCAST_TREE_TYPE": "knomial_1",
    }
    assert "ompi:binomial" in L.all_names(FAKE_OMPI, "bcast")
    assert all(s.startswith("mpich:") for s in L.all_names("mpich", "allreduce"))
    assert "mpich:ccl" not in L.all_names("mpich", "allreduce")
    assert L.all_names("unknown", "bcast") == []


@pytest.mark.parametrize("mpi, spec, message", [
    (FAKE_MPICH, "ompi:binomial", "ompi:binomial needs Open MPI; this build uses MPICH 5.0.2"),
    (FAKE_OMPI, "mpich:binomial", "mpich:binomial needs MPICH; this build uses Open MPI 5.0.11"),
    (FAKE_OMPI, "ompi:binomal", "unknown Open MPI bcast algorithm 'ompi:binomal'; valid: "
                                "ompi:linear, ompi:chain, ompi:pipeline, ompi:split_binary"),
    (FAKE_MPICH, "mpich:chain", "unknown MPICH bcast algorithm 'mpich:chain'; valid: "
                                "mpich:binomial, mpich:nb"),
    (FAKE_OMPI, "ompi:binomial:fanout=2", "unknown parameter 'fanout' for ompi:binomial "
                                          "(bcast); valid: segsize"),
    (FAKE_OMPI, "ompi:linear:segsize=8", "unknown parameter 'segsize' for ompi:linear "
                                         "(bcast); valid: none"),
    (FAKE_OMPI, "ompi:chain:fanout=0", "fanout=0 must be in [1,"),
    (FAKE_OMPI, "ompi:chain:segsize=big", "segsize=big is not a whole number of bytes"),
    (FAKE_MPICH, "mpich:tree:tree_type=oak", "tree_type=oak is not one of kary, knomial_1"),
    (FAKE_OMPI, "ompi:", "is not a library algorithm spec"),
    (FAKE_OMPI, "ompi:chain:fanout", "parameter 'fanout' is not key=value"),
])
def test_errors(mpi, spec, message):
    with pytest.raises(ValueError) as exc:
        L.lib_env(mpi, "bcast", spec)
    assert message in str(exc.value)


# -------------------------------------------------- launch plan and merging


def test_plan_alternates_launches():
    plan = bench_mod.plan_launches(["native", "binomial", "ompi:binomial", "ompi:linear"], 3)
    assert [(p.algos, p.library_spec, p.rep) for p in plan[:3]] == [
        (("native", "binomial"), None, 0),
        (("native",), "ompi:binomial", 0),
        (("native",), "ompi:linear", 0),
    ]
    assert [p.library_spec for p in plan] == [None, "ompi:binomial", "ompi:linear"] * 3
    assert [p.rep for p in plan] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    # library algorithms only: no launch for ours
    assert [p.library_spec for p in bench_mod.plan_launches(["ompi:ring", "ompi:bruck"], 2)] == \
        ["ompi:ring", "ompi:bruck", "ompi:ring", "ompi:bruck"]
    # ours only: one launch doing all repetitions in the driver, as before
    assert bench_mod.plan_launches(["native", "chain"], 5) == \
        [bench_mod.PlannedLaunch(("native", "chain"), None, -1)]


def test_summarize_matches_driver_definitions():
    s = bench_mod.summarize([4.0, 1.0, 3.0, 2.0])
    assert s["rep_min_us"] == 1.0 and s["rep_max_us"] == 4.0 and s["mean_us"] == 2.5
    assert s["median_us"] == 2.5 and s["p90_us"] == 3.7 and s["p99_us"] == 3.97
    assert s["stddev_us"] == pytest.approx(1.291, abs=1e-3) and s["valid_reps"] == 4
    assert bench_mod.summarize([5.0])["stddev_us"] == 0
    assert bench_mod.summarize([]) == {**{f: None for f in bench_mod.STAT_FIELDS}, "valid_reps": 0}


def test_merge_keeps_launches_without_valid_samples():
    a = _fake_record("ompi:ring", 8, 3.0, invalid=2, valid=True)
    b = _fake_record("ompi:ring", 8, 1.0, invalid=1, valid=False)
    c = dict(_fake_record("ompi:ring", 8, 1.0), median_us=None, rank_min_us=None, invalid=5)
    (m,) = bench_mod.merge_records([a, b, c])
    assert (m["median_us"], m["valid_reps"], m["invalid"], m["launches"]) == (2.0, 2, 8, 3)
    assert m["valid"] is False and m["rank_min_us"] == pytest.approx((2.7 + 0.9) / 2)
    (m,) = bench_mod.merge_records([c])
    assert m["median_us"] is None and m["valid_reps"] == 0


def _fake_record(spec, size, value, **extra):
    rec = {"collective": "bcast", "algorithm": spec.split(":")[0], "params": "", "spec": spec,
           "np": 2, "size": size, "rep_min_us": value, "mean_us": value, "median_us": value,
           "p90_us": value, "p99_us": value, "rep_max_us": value, "stddev_us": 0, "valid_reps": 1,
           "rank_min_us": value * 0.9, "rank_max_us": value * 1.1, "fallback": None,
           "mpi": "Open MPI v5.0.11", "command": "mpirun ..."}
    rec.update(extra)
    return rec


def test_run_bench_alternates_relabels_and_merges(monkeypatch):
    """Where the library's algorithm needs a launch of its own (lib_cvars None: MPICH,
    here Open MPI pretending), launches alternate one repetition at a time."""
    monkeypatch.setattr(L, "lib_cvars", lambda *a: None)
    calls = []

    def runner(build, spec, timeout=None, extra_env=None):
        calls.append((tuple(spec.algos), spec.reps, extra_env))
        k = len(calls)  # launch number; the warm-up candidate (first) reports 999
        return [_fake_record(a, s, 999.0 if i == 0 else 10.0 * k + i)
                for s in spec.sizes for i, a in enumerate(spec.algos)], ["a note"]

    build = type("B", (), {"mpi": FAKE_OMPI})()
    spec = bench_mod.BenchSpec("bcast", ["native", "binomial", "ompi:binomial:segsize=4K"], 2,
                               [8, 1024], reps=3)
    recs, notes = bench_mod.run_bench(build, spec, runner=runner)
    assert notes == ["a note"]
    # warm-up candidate first, then ours together / the library's default forced
    assert [c[0] for c in calls] == [("native", "native", "binomial"), ("native", "native")] * 3
    assert all(c[1] == 1 for c in calls)  # one repetition per launch
    assert calls[0][2] is None and calls[1][2]["OMPI_MCA_coll_tuned_bcast_algorithm"] == "6"
    assert [(r["spec"], r["size"]) for r in recs] == [
        ("native", 8), ("binomial", 8), ("ompi:binomial:segsize=4K", 8),
        ("native", 1024), ("binomial", 1024), ("ompi:binomial:segsize=4K", 1024)]
    assert all(r["median_us"] < 999 for r in recs)  # warm-up records dropped
    lib = recs[2]
    assert lib["algorithm"] == "ompi:binomial" and lib["params"] == "segsize=4096"
    assert lib["library_env"]["OMPI_MCA_coll_tuned_bcast_algorithm_segmentsize"] == "4096"
    assert lib["valid_reps"] == 3 and lib["launches"] == 3
    # launches 2, 4, 6 forced ompi:binomial; its record is the second candidate
    assert (lib["rep_min_us"], lib["median_us"], lib["rep_max_us"]) == (21.0, 41.0, 61.0)
    # OSU Min/Max Latency of the launches together: their mean (equal timed calls)
    assert lib["rank_min_us"] == pytest.approx(36.9) and lib["rank_max_us"] == pytest.approx(45.1)
    assert (recs[0]["median_us"], recs[1]["median_us"]) == (31.0, 32.0)  # launches 1, 3, 5
    assert "library_env" not in recs[0]


def test_ompi_algorithms_share_natives_launch():
    """Open MPI's algorithms run beside native in one launch (libalgos.lib_cvars): one
    launch, all repetitions, paired in time."""
    calls = []

    def runner(build, spec, timeout=None, extra_env=None):
        calls.append((tuple(spec.algos), spec.reps, extra_env))
        return [_fake_record(a, 8, 1.0) for a in spec.algos], []

    build = type("B", (), {"mpi": FAKE_OMPI})()
    spec = bench_mod.BenchSpec("bcast", ["native", "binomial", "ompi:binomial:segsize=4K"], 2,
                               [8], reps=3)
    bench_mod.run_bench(build, spec, runner=runner)
    assert calls == [(("native", "binomial", "ompi:binomial:segsize=4K"), 3, None)]
    assert L.lib_cvars(FAKE_OMPI, "bcast", "ompi:binomial:segsize=4K") == {
        "coll_han_priority": "0", "coll_tuned_bcast_algorithm": "6",
        "coll_tuned_bcast_algorithm_segmentsize": "4096"}
    assert L.lib_cvars(FAKE_MPICH, "bcast", "mpich:binomial") is None


def test_ompi_algorithms_run_on_their_own_communicators(ompi_build, tmp_path):
    """colltune-bench --lib: each library algorithm's communicator, made under its
    MPI_T control variables, runs that algorithm (seen by the preloaded observer)
    while native on MPI_COMM_WORLD keeps the library's own choice; every record
    carries the load average around its launch."""
    shim = ompi_build.dir / "libcolltune-ompi-algos.so"
    env = {"LD_PRELOAD": str(shim), "COLLTUNE_OBSERVE_DIR": str(tmp_path)}
    spec = bench_mod.BenchSpec("bcast", ["native", "ompi:linear",
                                         "ompi:chain:segsize=8192,fanout=4", "linear"], 2,
                               [65536], reps=2, iterations=20)
    recs, _ = bench_mod.run(ompi_build, spec, extra_env=env)
    by = {r["algorithm"]: r for r in recs}
    assert set(by) == {"native", "ompi:linear", "ompi:chain", "linear"}
    assert by["ompi:chain"]["library_cvars"]["coll_tuned_bcast_algorithm_chain_fanout"] == "4"
    assert all(r["load1_before"] is not None and r["load1_after"] is not None for r in recs)
    seen: dict = {}
    for f in tmp_path.glob("*.txt"):
        for line in f.read_text().splitlines():
            label, _, rest = line.partition("\t")
            kv = dict(p.split("=", 1) for p in rest.split())
            if kv["depth"] == "0":
                seen.setdefault(label, set()).add((kv["algo"], kv["faninout"], kv["segsize"]))
    assert seen["ompi:linear"] == {("basic_linear", "-1", "-1")}
    assert seen["ompi:chain:segsize=8192,fanout=4"] == {("chain", "4", "8192")}
    assert {a for a, _, _ in seen["native"]} != {"basic_linear"}  # the library's own choice


def test_run_bench_uses_raw_samples_and_skips_two_proc(monkeypatch):
    monkeypatch.setattr(L, "lib_cvars", lambda *a: None)  # launches of their own
    def runner(build, spec, timeout=None, extra_env=None):
        assert getattr(spec, "raw", True)  # per-repetition samples asked for, where offered
        return [_fake_record(a, 8, 2.0, samples_us=[1.0, 2.0, 3.0]) for a in spec.algos], []

    build = type("B", (), {"mpi": FAKE_OMPI})()
    spec = bench_mod.BenchSpec("allgather", ["ring", "ompi:ring", "ompi:two_proc"], 4, [8],
                               reps=2, raw=True)
    recs, notes = bench_mod.run_bench(build, spec, runner=runner, warm_up=False)
    assert notes == ["ompi:two_proc skipped at np=4: Open MPI's two_proc needs exactly 2 "
                     "processes"]
    assert [r["spec"] for r in recs] == ["ring", "ompi:ring"]
    assert recs[1]["valid_reps"] == 6 and recs[1]["samples_us"] == [1.0, 2.0, 3.0] * 2


def test_run_bench_rejects_bad_specs_before_launching():
    def runner(*a, **k):  # pragma: no cover - must not be reached
        raise AssertionError("launched")

    build = type("B", (), {"mpi": FAKE_MPICH})()
    spec = bench_mod.BenchSpec("bcast", ["native", "ompi:binomial"], 2, [8])
    with pytest.raises(ValueError, match="needs Open MPI; this build uses MPICH 5.0.2"):
        bench_mod.run_bench(build, spec, runner=runner)


# ------------------------------------- each ompi: name runs that Open MPI algorithm
#
# Proof by traffic: Open MPI's pml/monitoring component counts, per (sender,
# receiver), the point-to-point messages that the collective sends, in size classes
# (class = bit length of the size: 1000 B -> 10, 500 B -> 9, 250 B -> 8). One call at
# np=4, root 0, 1000 B (allgather: 1000 B per process) is run under the spec's
# environment; the pattern must be the one that defines the algorithm. The driver's
# own barriers (0 B), statistics reductions (8 B) and placement check (the library's
# MPI_Comm_split_type: 16-31 B) are below class 7 (64 B) and left out.

P = 4
FULL, HALF, QUARTER = 10, 9, 8  # 1000, 500 and 250 bytes
TWO, RESULT = 11, 12  # allgather: 2000 B, 3000-4000 B


def _edges(pairs, cls=FULL, count=1):
    return {(a, b): {cls: count} for a, b in pairs}


def _merge(*patterns):
    out: dict = {}
    for pat in patterns:
        for edge, classes in pat.items():
            for cls, n in classes.items():
                out.setdefault(edge, {})
                out[edge][cls] = out[edge].get(cls, 0) + n
    return out


def _xor(d, cls, count=1):  # partners at distance d (recursive doubling/halving)
    return _edges([(a, a ^ d) for a in range(P)], cls, count)


def _ring(shift, cls, count=1):  # everyone sends to (rank + shift) mod p
    return _edges([(a, (a + shift) % P) for a in range(P)], cls, count)


_BCAST_SCATTER = _merge(_edges([(0, 2)], HALF), _edges([(0, 1), (2, 3)], QUARTER))
_BINTREE_DOWN = [(0, 1), (0, 2), (1, 3)]

EXPECTED = {
    "bcast": {
        "ompi:linear": _edges([(0, 1), (0, 2), (0, 3)]),
        "ompi:chain:fanout=2": _edges([(0, 1), (1, 2), (0, 3)]),  # chains 0-1-2 and 0-3
        "ompi:pipeline": _edges([(0, 1), (1, 2), (2, 3)]),
        "ompi:pipeline:segsize=250": _edges([(0, 1), (1, 2), (2, 3)], QUARTER, 4),
        # halves go down the two subtrees, left/right partners swap halves, the root
        # sends the missing half to the rank without a partner
        "ompi:split_binary": _edges([(0, 1), (0, 2), (1, 3), (1, 2), (2, 1), (0, 3)], HALF),
        "ompi:binary": _edges(_BINTREE_DOWN),
        "ompi:binomial": _edges(_BINTREE_DOWN),  # the same tree as binary at p=4
        "ompi:knomial": _edges([(0, 1), (0, 2), (0, 3)]),  # radix 4: one round
        "ompi:knomial:radix=2": _edges([(0, 1), (0, 2), (2, 3)]),
        # binomial scatter of p blocks, then recursive-doubling / ring allgather
        "ompi:scatter_allgather": _merge(_BCAST_SCATTER, _xor(1, QUARTER), _xor(2, HALF)),
        "ompi:scatter_ring_allgather": _merge(_BCAST_SCATTER, _ring(1, QUARTER, P - 1)),
    },
    "reduce": {
        "ompi:linear": _edges([(1, 0), (2, 0), (3, 0)]),
        "ompi:chain:fanout=2": _edges([(2, 1), (1, 0), (3, 0)]),
        "ompi:pipeline": _edges([(3, 2), (2, 1), (1, 0)]),
        "ompi:pipeline:segsize=250": _edges([(3, 2), (2, 1), (1, 0)], QUARTER, 4),
        "ompi:binary": _edges([(1, 0), (2, 0), (3, 1)]),
        "ompi:binomial": _edges([(1, 0), (2, 0), (3, 2)]),
        # binary tree over ranks in order, rooted at p-1, result forwarded to root 0
        "ompi:in_order_binary": _edges([(0, 1), (1, 3), (2, 3), (3, 0)]),
        # recursive-halving reduce-scatter, then binomial gather of the blocks to 0
        "ompi:rabenseifner": _merge(_xor(1, HALF), _xor(2, QUARTER),
                                    _edges([(3, 1), (2, 0)], QUARTER), _edges([(1, 0)], HALF)),
    },
    "allgather": {
        # gather to 0 (tuned picks binomial), then bcast of the p blocks (binomial)
        "ompi:linear": _merge(_edges([(1, 0), (3, 2)]), _edges([(2, 0)], TWO),
                              _edges(_BINTREE_DOWN, RESULT)),
        "ompi:bruck": _merge(_ring(-1, FULL), _ring(-2, TWO)),
        "ompi:recursive_doubling": _merge(_xor(1, FULL), _xor(2, TWO)),
        "ompi:ring": _ring(1, FULL, P - 1),
        "ompi:neighbor_exchange": _merge(_edges([(0, 1), (1, 0), (2, 3), (3, 2)]),
                                         _edges([(1, 2), (2, 1), (3, 0), (0, 3)], TWO)),
        "ompi:sparbit": _merge(_ring(2, FULL), _ring(1, FULL, 2)),  # distance halving
    },
    "allreduce": {
        "ompi:basic_linear": _edges([(1, 0), (2, 0), (3, 0), (0, 1), (0, 2), (0, 3)]),
        # tuned's reduce (binary tree at this size) then its bcast (binomial tree)
        "ompi:reduce_bcast": _edges([(1, 0), (2, 0), (3, 1)] + _BINTREE_DOWN),
        "ompi:recursive_doubling": _merge(_xor(1, FULL), _xor(2, FULL)),
        # reduce-scatter and allgather around the ring, p blocks of 250 B
        "ompi:ring": _ring(1, QUARTER, 2 * (P - 1)),
        # each 250 B block in two segments of <= 128 B during the reduce-scatter
        "ompi:segmented_ring:segsize=128": _merge(_ring(1, 7, 2 * (P - 1)),
                                                  _ring(1, QUARTER, P - 1)),
        "ompi:rabenseifner": _merge(_xor(1, HALF, 2), _xor(2, QUARTER, 2)),
    },
}

MONITOR = {"OMPI_MCA_pml_monitoring_enable": "1", "OMPI_MCA_pml_monitoring_enable_output": "1"}


def _traffic(build, coll, spec, np=P, size=1000):
    env = dict(MONITOR, **(L.lib_env(build.mpi, coll, spec) if spec else {}))
    prog = [str(build.program("colltune-bench")), "--coll", coll, "--algo", "native",
            "--sizes", str(size), "--iterations", "1", "--warmup", "0", "--reps", "1"]
    res = launch.run(launch.prepare(build.mpi, np, prog, extra_env=env), timeout=300)
    edges: dict = {}
    for line in res.stdout.splitlines():
        if line.startswith("E\t"):  # E src dst "N bytes" "M msgs sent" histogram
            f = line.split("\t")
            hist = [int(x) for x in f[5].split(",")]
            classes = {cls: n for cls, n in enumerate(hist) if n and cls >= 7}
            if classes:
                edges[(int(f[1]), int(f[2]))] = classes
    return res, edges


def _cases():
    for coll, specs in EXPECTED.items():
        for spec in specs:
            yield pytest.param(coll, spec, id=f"{coll}-{spec}")


def test_every_ompi_name_is_covered():
    """Each bcast/reduce/allgather/allreduce ompi: name has a traffic check below."""
    for coll in ("bcast", "reduce", "allgather", "allreduce"):
        checked = {L.resolve("openmpi", coll, s)[0].name for s in EXPECTED[coll]}
        checked |= {"two_proc"} if coll == "allgather" else set()
        assert checked == {a.name for a in L.OMPI[coll]}, coll


@pytest.mark.parametrize("coll, spec", list(_cases()))
def test_ompi_name_selects_that_algorithm(ompi_build, coll, spec):
    res, edges = _traffic(ompi_build, coll, spec)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "invalid value" not in res.stderr
    assert edges, f"no monitoring output (pml/monitoring missing?): {res.stdout[-1000:]}"
    assert edges == EXPECTED[coll][spec]


def test_ompi_two_proc_needs_two_processes(ompi_build):
    res, edges = _traffic(ompi_build, "allgather", "ompi:two_proc", np=2)
    assert res.returncode == 0, res.stderr[-2000:]
    assert edges == _edges([(0, 1), (1, 0)])  # one exchange
    res, _ = _traffic(ompi_build, "allgather", "ompi:two_proc", np=4)
    assert res.returncode != 0  # Open MPI's two_proc refuses other process counts


def test_run_bench_with_ompi_algorithms(ompi_build):
    """Open MPI's algorithms run in native's launch: one launch, both repetitions."""
    spec = bench_mod.BenchSpec("bcast", ["native", "binomial", "ompi:binomial", "ompi:linear"],
                               2, [8, 4096], iterations=10, reps=2)
    recs, notes = bench_mod.run_bench(ompi_build, spec)
    assert [(r["spec"], r["size"]) for r in recs] == [
        (a, s) for s in (8, 4096) for a in ("native", "binomial", "ompi:binomial", "ompi:linear")]
    for r in recs:
        assert r["valid_reps"] == 2 and "launches" not in r and r["median_us"] > 0
        assert {"collective", "algorithm", "params", "np", "size", "rep_min_us", "mean_us",
                "median_us", "p90_us", "p99_us", "rep_max_us", "stddev_us", "valid_reps"} <= set(r)
    lib = [r for r in recs if r["spec"].startswith("ompi:")]
    assert {r["algorithm"] for r in lib} == {"ompi:binomial", "ompi:linear"}
    assert all(r["library_env"]["OMPI_MCA_coll_tuned_use_dynamic_rules"] == "1" for r in lib)
    assert all(r["library_cvars"]["coll_han_priority"] == "0" for r in lib)


@pytest.mark.mpich
def test_mpich_point(mpich_build):
    spec = bench_mod.BenchSpec("bcast", ["native", "mpich:binomial"], 2, [1024], iterations=10,
                               reps=1)
    recs, _ = bench_mod.run_bench(mpich_build, spec)
    lib = [r for r in recs if r["spec"] == "mpich:binomial"]
    assert len(lib) == 1 and lib[0]["median_us"] > 0 and "MPICH" in lib[0]["mpi"]
    assert lib[0]["library_env"] == {"MPIR_CVAR_DEVICE_COLLECTIVES": "none",
                                     "MPIR_CVAR_BCAST_INTRA_ALGORITHM": "binomial"}
    with pytest.raises(ValueError, match="ompi:binomial needs Open MPI; this build uses MPICH"):
        bench_mod.run_bench(mpich_build, bench_mod.BenchSpec("bcast", ["ompi:binomial"], 2, [8]))
    # MPICH reads the variable: a value it does not know stops MPI_Init
    prog = [str(mpich_build.program("colltune-bench")), "--coll", "bcast", "--algo", "native",
            "--sizes", "8", "--iterations", "1", "--reps", "1"]
    res = launch.run(launch.prepare(mpich_build.mpi, 2, prog, extra_env={
        "MPIR_CVAR_BCAST_INTRA_ALGORITHM": "no_such_algorithm"}), timeout=120)
    assert res.returncode != 0


def test_param_label_names_effective_parameters_on_both_sides():
    from colltune.mpi.libalgos import param_label
    # colltune's: the recorded parameters (the native library records its defaults)
    assert param_label("bcast", "chain", '{"fanout": 4, "segsize": 8192}') == \
        "chain (segsize 8 KiB, fanout 4)"
    # the library's: its forced defaults when the spec sets nothing
    assert param_label("bcast", "ompi:chain", "") == "ompi:chain (unsegmented, fanout 4)"
    assert param_label("bcast", "ompi:chain:segsize=8K") == "ompi:chain (segsize 8 KiB, fanout 4)"
    assert param_label("bcast", "ompi:knomial") == "ompi:knomial (unsegmented, radix 4)"
    assert param_label("allreduce", "mpich:tree") == "mpich:tree (unsegmented, kval 2, tree knomial_1)"
    assert param_label("bcast", "native") == "native"
    assert param_label("allgather", "ring:remap=seq") == "ring (remap seq)"


def test_quick_preset_forces_library_with_colltune_parameters(monkeypatch):
    from types import SimpleNamespace

    from colltune.drivers import bench as bench_mod
    from colltune.drivers import registry
    from colltune.mpi import libalgos
    from colltune.studies.study import read_preset

    assert "library-matched" in read_preset("quick").algorithms["bcast"]

    def p(name, default):
        return {"name": name, "kind": "int", "default": default}

    ours = [registry.Algorithm(n, c, tuple(ps), (), None, None, "", None, False) for n, c, ps in (
        ("chain", "bcast", (p("segsize", 8192), p("fanout", 4))),
        ("knomial", "bcast", (p("radix", 4), p("segsize", 0))),
        ("pipeline", "bcast", (p("segsize", 8192),)),
        ("linear", "bcast", ()),
        ("chain", "reduce", (p("segsize", 8192), p("fanout", 4))),
        ("segmented_ring", "allreduce", (p("segsize", 65536),)))]
    monkeypatch.setattr(registry, "algorithms", lambda build, hidden=False: tuple(ours))
    build = SimpleNamespace(mpi="openmpi")
    by_name = {(a.collective, a.name): {q["name"]: q["default"] for q in a.params} for a in ours}
    seen = 0
    for coll in ("bcast", "reduce", "allreduce"):
        specs = bench_mod.library_matched(build, coll)
        assert len(specs) == len(libalgos.all_names("openmpi", coll))
        for spec in specs:
            algo, values = libalgos.resolve("openmpi", coll, spec)
            mine = by_name.get((coll, algo.name), {})
            effective = libalgos.effective_params(coll, spec)
            for key in libalgos.MATCHED_KEYS:
                if key in mine and key in {q.key for q in algo.params}:
                    assert values[key] == str(mine[key]), spec  # forced, not left to defaults
                    assert effective[key] == str(mine[key])
                    seen += 1
    assert "ompi:chain:segsize=8192,fanout=4" in bench_mod.library_matched(build, "bcast")
    assert "ompi:segmented_ring:segsize=65536" in bench_mod.library_matched(build, "allreduce")
    assert seen >= 7


def test_alltoall_library_candidates():
    """Open MPI's alltoall algorithms (numbers from ompi_info, checked above) with
    max_requests for linear_sync; MPICH's with its throttle; Alltoallv's too."""
    env = L.lib_env(FAKE_OMPI, "alltoall", "ompi:linear_sync:max_requests=4")
    assert env["OMPI_MCA_coll_tuned_alltoall_algorithm"] == "4"
    assert env["OMPI_MCA_coll_tuned_alltoall_algorithm_max_requests"] == "4"
    assert L.lib_env(FAKE_OMPI, "alltoall", "ompi:modified_bruck") == \
        L.lib_env(FAKE_OMPI, "alltoall", "ompi:bruck")
    assert L.lib_env(FAKE_OMPI, "alltoallv", "ompi:basic_linear")[
        "OMPI_MCA_coll_tuned_alltoallv_algorithm"] == "1"
    assert L.lib_env(FAKE_MPICH, "alltoall", "mpich:scattered:max_requests=8")[
        "MPIR_CVAR_ALLTOALL_THROTTLE"] == "8"
    assert L.skip_reason(FAKE_OMPI, "alltoall", "ompi:two_proc", 3)
    assert "mpich:pairwise_sendrecv_replace" not in L.all_names(FAKE_MPICH, "alltoall")
    with pytest.raises(ValueError, match="unknown parameter 'segsize'"):
        L.resolve(FAKE_OMPI, "alltoall", "ompi:pairwise:segsize=1")


def test_alltoall_bench_against_the_library(ompi_build):
    res = colltune("bench", "--coll", "alltoall", "--algo",
                   "linear_sync:max_requests=2,ompi:linear_sync:max_requests=2,ompi:bruck",
                   "--np", "2", "--sizes", "8,1K", "--reps", "2", "--validate", "--format",
                   "json")
    assert res.returncode == 0, res.stderr[-2000:]
    recs = json.loads(res.stdout)
    assert {r["spec"] for r in recs} >= {"ompi:linear_sync:max_requests=2", "ompi:bruck"}
    assert all(r["valid"] is True for r in recs), recs


def test_reduce_scatter_library_candidates():
    """Open MPI's reduce_scatter(_block) algorithms (numbers from ompi_info, checked
    above) under colltune's names; MPICH's under its own."""
    assert L.lib_env(FAKE_OMPI, "reduce_scatter", "ompi:nonoverlapping") == \
        L.lib_env(FAKE_OMPI, "reduce_scatter", "ompi:non-overlapping")
    assert L.lib_env(FAKE_OMPI, "reduce_scatter", "ompi:butterfly")[
        "OMPI_MCA_coll_tuned_reduce_scatter_algorithm"] == "4"
    assert L.lib_env(FAKE_OMPI, "reduce_scatter_block", "ompi:recursive_halving")[
        "OMPI_MCA_coll_tuned_reduce_scatter_block_algorithm"] == "3"
    assert L.lib_env(FAKE_MPICH, "reduce_scatter_block", "mpich:pairwise") == {
        "MPIR_CVAR_DEVICE_COLLECTIVES": "none",
        "MPIR_CVAR_REDUCE_SCATTER_BLOCK_INTRA_ALGORITHM": "pairwise",
    }
    with pytest.raises(ValueError, match="unknown Open MPI reduce_scatter algorithm"):
        L.resolve(FAKE_OMPI, "reduce_scatter", "ompi:recursive_doubling")


def test_reduce_scatter_bench_against_the_library(ompi_build):
    res = colltune("bench", "--coll", "reduce_scatter_block", "--algo",
                   "butterfly,ompi:butterfly,ompi:basic_linear", "--np", "2", "--sizes",
                   "8,1K", "--reps", "1", "--validate", "--format", "json")
    assert res.returncode == 0, res.stderr[-2000:]
    recs = json.loads(res.stdout)
    assert {r["spec"] for r in recs} >= {"ompi:butterfly", "ompi:basic_linear", "butterfly"}
    assert all(r["valid"] is True for r in recs), recs


def test_matched_spec_leaves_an_auto_segsize_to_the_library():
    """colltune's segsize=auto changes with the message size; one library launch has one
    segment size, so it is not forced (ours_vs_library forces the rule's value per size)."""
    spec = L.matched_spec("openmpi", "bcast", "ompi:chain", {"segsize": "auto", "fanout": 4})
    assert spec == "ompi:chain:fanout=4"
    assert L.matched_spec("openmpi", "bcast", "ompi:chain", {"segsize": 8192, "fanout": 4}) == \
        "ompi:chain:segsize=8192,fanout=4"
