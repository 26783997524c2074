"""The workflows below the command line, called from Python as any function: options in,
data out, progress through a callback, ColltuneError for what the user can act on, and
nothing printed."""

from __future__ import annotations

import pytest

from colltune.base.errors import ColltuneError
from colltune.workflows import basic, calibrate, load, p2p, platforms, traffic, verify


def _records(alpha=0.5, beta=4.0):
    """A ping-pong that follows Hockney exactly: alpha µs + size / beta GB/s."""
    return [{"kind": "pingpong", "size": 2 ** k, "min_us": alpha + 2 ** k / (beta * 1e3),
             "median_us": alpha + 2 ** k / (beta * 1e3), "mpi": "test"} for k in range(3, 21)]


def test_calibrate_fits_records_without_building(capsys):
    def no_build():
        raise AssertionError("nothing to measure: no build")

    said = []
    p = calibrate.calibrate(no_build, records=_records(), records_from="pp.json",
                            piecewise=False, compute=False, eager=False, exchange=False,
                            progress=said.append)
    assert p.intra_latency_us == pytest.approx(0.5, rel=1e-3)
    assert p.intra_bandwidth_GBps == pytest.approx(4.0, rel=1e-3)
    assert p.calibration["command"] == "records of pp.json"
    assert calibrate.far_from_fit(p) == []
    assert said == [] and capsys.readouterr() == ("", "")


def test_calibrate_refuses_one_size_before_building():
    with pytest.raises(ColltuneError, match="needs at least two"):
        calibrate.calibrate(lambda: pytest.fail("built"), sizes=[8])


def test_the_checks_raise_what_the_command_prints():
    with pytest.raises(ColltuneError, match=r"unknown collective 'bcats' \(did you mean"):
        basic.check_collectives(["bcats"])
    with pytest.raises(ColltuneError, match="unknown family 'mian'"):
        verify.check_families(["main", "mian"])
    with pytest.raises(ColltuneError, match="give integers"):
        traffic.parse_node_list("0,a")
    with pytest.raises(load.LoadError, match="no generator to run"):
        load.level("none")
    with pytest.raises(load.LoadError, match="named twice"):
        load.check_levels(["light", "light"])
    with pytest.raises(p2p.P2PError, match="at least 2 processes"):
        p2p.pingpong(None, nps=[1], sizes=[8])
    assert load.level(pattern="hot", np=3, window=2, duty=0.5, period_ms=20.0,
                      size=4096).describe().startswith("hot, 3 processes")


def test_platform_files_place_the_ranks():
    f = platforms.files("tapems-16x12", np=40, mapping="node", description=True)
    assert f.hosts.count("\n") + (not f.hosts.endswith("\n")) == 40
    assert f.nodes_used == 16 and "<platform" in f.xml and f.description
    assert platforms.files("flat").hosts is None


def test_pingpong_reports_each_launch(ompi_build):
    seen = []
    recs = p2p.pingpong(ompi_build, nps=[2], sizes=[8, 1024], reps=1, iterations=10,
                        on_launch=lambda np, r, notes: seen.append((np, len(r))))
    assert seen == [(2, 2)]
    assert [r["size"] for r in recs] == [8, 1024] and all(r["min_us"] > 0 for r in recs)
