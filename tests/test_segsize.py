"""segsize=auto: the C rule (registry.c ct_segsize_resolve) and its Python mirror
(analysis/segsize.py) agree; the registry shows the default as auto; explicit values
win."""

import json
import subprocess

from colltune.analysis import segsize
from conftest import colltune


def test_c_and_python_rules_agree_over_a_grid(ompi_build):
    # answered before MPI_Init, as --list-json
    res = subprocess.run([str(ompi_build.program("colltune-verify")), "--segsize-table"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)["segsize"]
    algos = json.loads(colltune("algorithms", "--json").stdout)
    rule = {(a["collective"], a["name"]): segsize.segsize_param(a).get("auto_rule")
            for a in algos if segsize.segsize_param(a)}
    assert {k for k, v in rule.items() if v} == {
        ("bcast", "chain"), ("bcast", "pipeline"), ("bcast", "binary"),
        ("bcast", "split_binary"), ("reduce", "chain"), ("reduce", "pipeline"),
        ("reduce", "binary"), ("reduce", "in_order_binary")}
    assert len(rows) > 5000
    bad = [r for r in rows
           if segsize.resolve(rule[(r[0], r[1])], r[0], r[4], r[3], r[2]) != r[5]]
    assert not bad, bad[:10]
    # what the rule promises: powers of two in range or 0, unsegmented at np 2
    for coll, name, fan, p, n, s in rows:
        assert s == 0 or (segsize.MIN <= s <= segsize.MAX and s & (s - 1) == 0 and s < n)
        if p <= 2:
            assert s == 0


def test_rule_values():
    r = segsize.resolve
    assert r("chain", "bcast", 1 << 20, 2, 4) == 0           # no pipeline at np 2
    assert r("chain", "bcast", 1 << 20, 5, 4) == 0           # 4 chains of one rank
    assert r("pipeline", "bcast", 8, 64) == 0                # below the smallest segment
    assert r("pipeline", "bcast", 1 << 20, 8) == 32768       # sqrt(2^20 * 2^13 / 6) ~ 2^15.2
    assert r("pipeline", "reduce", 1 << 20, 8) == 32768      # sqrt(2^20 * 2^12 / 6) ~ 2^14.7
    assert r("pipeline", "reduce", 1 << 20, 64) == 8192      # sqrt(2^20 * 2^12 / 62) ~ 2^13
    assert r("binary", "bcast", 1 << 20, 3) == 0             # one level
    assert r("split_binary", "bcast", 1 << 20, 8) == 65536   # halves (2^19) down 3 hops: 2^15.5
    assert r(None, "bcast", 1 << 20, 8) == 0


def test_effective_explicit_wins_and_auto_resolves():
    algos = json.loads(colltune("algorithms", "--json").stdout)
    chain = next(a for a in algos if a["collective"] == "bcast" and a["name"] == "chain")
    binom = next(a for a in algos if a["collective"] == "bcast" and a["name"] == "binomial")
    lin = next(a for a in algos if a["collective"] == "bcast" and a["name"] == "linear")
    assert segsize.segsize_param(chain)["default"] == "auto"
    assert segsize.effective(chain, 1 << 20, 8) == segsize.resolve("chain", "bcast", 1 << 20, 8, 4)
    assert segsize.effective(chain, 1 << 20, 8, {"fanout": "1"}) == 32768
    assert segsize.effective(chain, 1 << 20, 8, {"segsize": "8K"}) == 8192
    assert segsize.effective(chain, 1 << 20, 2, {"segsize": "0"}) == 0
    assert segsize.effective(binom, 1 << 20, 8) == 0
    assert segsize.effective(lin, 1 << 20, 8) is None


def test_algorithms_shows_auto():
    res = colltune("algorithms", "--coll", "bcast")
    assert res.returncode == 0, res.stderr
    assert "segsize=auto" in res.stdout and "segsize=0" in res.stdout


def _msgs(coll: str, spec: str, np_: int, size: str) -> int:
    res = colltune("traffic", "--coll", coll, "--algo", spec, "--np", str(np_), "--size", size,
                   "--format", "json")
    assert res.returncode == 0, res.stderr
    (rec,) = json.loads(res.stdout)
    return rec["total"]["intra_msgs"]


def test_the_dispatcher_runs_the_rules_segment_and_an_explicit_one_wins():
    """Messages actually sent (colltune traffic counts every send): auto cuts as the rule
    says, segsize=N as given."""
    mib = 1 << 20
    assert _msgs("bcast", "pipeline", 2, "1M") == 1                    # np 2: one piece
    s = segsize.resolve("pipeline", "bcast", mib, 3)                   # 128 KiB
    assert s and _msgs("bcast", "pipeline", 3, "1M") == 2 * (mib // s)  # 2 hops
    assert _msgs("bcast", "pipeline:segsize=0", 3, "1M") == 2
    assert _msgs("bcast", "pipeline:segsize=8K", 3, "1M") == 2 * 128
    s = segsize.resolve("pipeline", "reduce", mib, 3)
    assert s and _msgs("reduce", "pipeline", 3, "1M") == 2 * (mib // s)
    assert _msgs("reduce", "pipeline:segsize=0", 3, "1M") == 2


def test_cost_model_evaluates_s_by_the_rule():
    from colltune.analysis import costmodel

    algos = json.loads(colltune("algorithms", "--json").stdout)
    pipe = next(a for a in algos if a["collective"] == "reduce" and a["name"] == "pipeline")
    mib = 1 << 20
    env = costmodel.formula_variables(pipe, 8, mib, 4)
    assert env["s"] == segsize.resolve("pipeline", "reduce", mib, 8) == 32768
    assert costmodel.formula_variables(pipe, 2, mib, 4)["s"] == mib  # unsegmented
    assert costmodel.formula_variables(pipe, 8, mib, 4, {"segsize": "8K"})["s"] == 8192
