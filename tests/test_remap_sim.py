"""The simulated evaluation of rank remapping (issue 17): the `remap` preset, the domain
function that derives the speedup and overhead of remapping, and its report section."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from colltune.analysis.remap import placement_label, remap_effect
from colltune.base.specs import remap_of, without_remap as base_spec
from colltune.studies.study import read_preset

ALGOS = {"allgather": ["recursive_doubling", "ring", "neighbor_exchange"],
         "bcast": ["binomial"], "allreduce": ["ring"]}


@pytest.mark.parametrize("name, np_, largest", [("remap", 128, 1 << 20),
                                                 ("remap192", 192, 256 << 10)])
def test_the_remap_presets_are_the_seeds_experiment(name, np_, largest):
    s = read_preset(name)
    assert s.name == name and s.mpi == "smpi" and s.platform == "tapems-16x12"
    assert s.processes == [np_]  # 8 and 12 per node on the 16 nodes
    assert list(s.mapping) == ["node"] and list(s.order) == ["seq", "rr"]
    assert s.sizes[0] == 1024 and s.sizes[-1] == largest
    for coll, bases in ALGOS.items():
        specs = s.algorithms[coll]
        assert sorted({base_spec(x) for x in specs}) == sorted(bases)
        for b in bases:  # every algorithm plain and remapped
            assert b in specs
            assert any(base_spec(x) == b and remap_of(x) in ("seq", "rr") for x in specs)
    assert "binomial:remap=seq" in s.algorithms["bcast"]
    assert "binomial:remap=rr" in s.algorithms["bcast"]


def test_the_preset_spreads_8_and_12_processes_over_every_node():
    from colltune.mpi.platforms import resolve

    plat = resolve("tapems-16x12")
    for n, q in ((128, 8), (192, 12)):
        seq = plat.rank_hosts(n, "node", "seq")
        rr = plat.rank_hosts(n, "node", "rr")
        assert len(set(seq)) == 16 and all(seq.count(h) == q for h in set(seq))
        assert seq[0] == seq[q - 1] != seq[q]  # blocks of Q
        assert rr[:16] == sorted(set(rr), key=rr.index) and rr[0] == rr[16]  # round-robin


def test_remap_parameters_are_read_from_specs_and_params():
    assert remap_of("ring:remap=seq") == "seq"
    assert remap_of("chain:segsize=8192,remap=rr") == "rr"
    assert remap_of("ring") == "none"
    assert remap_of("ring", '{"remap": "rr"}') == "rr"
    assert remap_of("ring", "segsize=4,remap=seq") == "seq"
    assert base_spec("chain:segsize=8192,remap=rr") == "chain:segsize=8192"
    assert base_spec("ring:remap=seq") == "ring"
    assert placement_label("seq", "rr") == "seq>rr" and placement_label("rr", "none") == "rr"
    assert placement_label("seq", "seq") is None and placement_label("seq", "auto") is None


def _frame():
    rows = []

    def add(coll, spec, order, us, size=65536, np_=128):
        rows.append(dict(collective=coll, algorithm=spec.split(":")[0], spec=spec, params="",
                         np=np_, rank_order=order, mapping="node", size=size, median_us=us,
                         platform="tapems-16x12", simulator="SimGrid 4.1 (SMPI)"))

    # recursive doubling prefers rr: remapping seq gains 4x, costs 10 % over rr
    add("allgather", "recursive_doubling", "seq", 400.0)
    add("allgather", "recursive_doubling", "rr", 100.0)
    add("allgather", "recursive_doubling:remap=rr", "seq", 110.0)
    add("allgather", "recursive_doubling:remap=rr", "rr", 102.0)  # the identity
    # ring prefers seq; two repetitions of one point reduce to their median
    add("allgather", "ring", "seq", 200.0)
    add("allgather", "ring", "rr", 900.0)
    add("allgather", "ring", "rr", 700.0)
    add("allgather", "ring:remap=seq", "rr", 250.0)
    add("allgather", "ring:remap=seq", "seq", 200.0)
    # a remap towards the unfavourable order only: no speedup to report
    add("bcast", "binomial", "seq", 50.0, size=1024)
    add("bcast", "binomial", "rr", 20.0, size=1024)
    add("bcast", "binomial:remap=seq", "rr", 50.0, size=1024)
    return pd.DataFrame(rows)


def test_remap_effect_derives_speedup_and_overhead():
    eff = remap_effect(_frame()).set_index(["collective", "algorithm"])
    rd = eff.loc[("allgather", "recursive_doubling")]
    assert rd["best"] == "rr" and rd["worst_us"] == 400.0 and rd["remapped_us"] == 110.0
    assert rd["speedup"] == pytest.approx(400 / 110)
    assert rd["overhead"] == pytest.approx(0.10)
    assert rd["identity_overhead"] == pytest.approx(0.02)
    assert rd["bw_rr"] == pytest.approx(65536 / 100) and math.isnan(rd["us_rr>seq"])
    ring = eff.loc[("allgather", "ring")]
    assert ring["best"] == "seq" and ring["us_rr"] == 800.0  # median of 900 and 700
    assert ring["speedup"] == pytest.approx(800 / 250)
    assert ring["overhead"] == pytest.approx(0.25) and ring["identity_overhead"] == 0.0
    b = eff.loc[("bcast", "binomial")]
    assert b["best"] == "rr" and math.isnan(b["speedup"]) and math.isnan(b["overhead"])
    assert b["us_rr>seq"] == 50.0


def test_one_order_alone_decides_nothing():
    eff = remap_effect(_frame().query("rank_order == 'seq'"))
    assert eff["best"].isna().all() and eff["speedup"].isna().all()
    assert eff["identity_overhead"].isna().all()


def test_remap_effect_names_missing_columns():
    with pytest.raises(ValueError, match="rank_order"):
        remap_effect(pd.DataFrame({"collective": ["bcast"], "spec": ["x"], "np": [2],
                                   "size": [8], "median_us": [1.0]}))


def test_the_report_has_a_simulated_remap_section():
    from colltune.output.report import build_report

    sim = _frame()
    measured = sim.iloc[0:0]
    text, parts = build_report(measured, simulated=sim)
    assert 'id="simulated-remap"' in text and "not measurements" in text
    assert "3.64\u00d7 / +10.0%" in text  # recursive doubling at 64 KiB: speedup / overhead
    assert "3.20\u00d7 / +25.0%" in text  # ring
    assert any(f.collective == "remap" and f.kind == "simulated" for f in parts.figures)
    # no remapped points: no section
    plain = sim[~sim["spec"].str.contains("remap")]
    text, _ = build_report(measured, simulated=plain)
    assert 'id="simulated-remap"' not in text


@pytest.mark.parametrize("name, np_, per_node, sizes", [
    ("remap", 128, 8, "1K, 4K, 16K, 64K, 256K, 1M"), ("remap192", 192, 12, "1K, 16K, 64K, 256K")])
def test_the_remap_presets_plan_one_launch_per_collective_and_order(smpi_build, tmp_path, name,
                                                                    np_, per_node, sizes):
    from conftest import colltune

    res = colltune("sweep", "--preset", name, "--mpi", "smpi", "--dry-run", "--db",
                   str(tmp_path / "x.db"))
    assert res.returncode == 0, res.stderr[-2000:]
    out = " ".join(res.stdout.split())
    assert "6 launches" in out  # 3 collectives x 2 orders
    assert f"processes: {np_};" in out and f"sizes: {sizes};" in out
    # every launch on all 16 nodes, per_node processes each
    assert res.stdout.count(f"16x{per_node} ") == 6
