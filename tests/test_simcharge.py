"""Charged computation in simulation (issue 28): local copies and reductions of
colltune's algorithms cost simulated time from the platform's table (native/lib/
simcharge.c), measured by `colltune platform calibrate`; the launch passes it on."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from colltune.base.errors import ColltuneError
from colltune.drivers import bench as bench_mod
from colltune.mpi import launch
from colltune.mpi import platforms as P


class FakeMPI:
    """SMPI as mpi.MPI describes it, without an installation behind it."""

    kind, version, banner, simulated = "smpi", "4.1", "SimGrid 4.1 (SMPI)", True
    launcher = Path("/nonexistent/bin/smpirun")

    def env(self) -> dict[str, str]:
        return {}


def _pingpong(alpha=0.5, beta=4.0):
    return [{"kind": "pingpong", "size": m, "min_us": alpha + m / (beta * 1e3),
             "median_us": alpha + m / (beta * 1e3)} for m in (8, 1024, 65536, 1048576)]


def _gamma(us_per_byte, fixed=0.01):
    return [{"size": m, "min_us": fixed + m * us_per_byte, "median_us": 2 * (fixed + m * us_per_byte)}
            for m in (8, 1024, 65536, 1048576)]


def _charged(copy=1e-4, reduce=2e-4, **kw):
    """this-machine calibrated with copy and reduction times (µs per byte)."""
    return P.calibrated(_pingpong(), cores=2, when="2026-01-01T00:00:00Z", **kw,
                        compute={"copy": {"points": _gamma(copy), "command": "gamma copy"},
                                 "reduce": {"points": _gamma(reduce), "command": "gamma sum"}})


def test_calibration_round_trip_and_the_launch_passes_it_on(tmp_path, monkeypatch):
    p = _charged()
    assert p.compute["reduce"][-1] == (1048576, pytest.approx(0.01 + 1048576 * 2e-4))
    assert p.compute["copy"][0] == (8, pytest.approx(0.01 + 8e-4))
    # written and read back: the same table, with where it came from
    back = P.loads(p.to_toml())
    assert back.compute == p.compute
    assert "memcpy" in back.sources["compute_copy"]
    assert back.calibration["reduce_command"] == "gamma sum"
    assert "compute" in json.loads(json.dumps(back.describe()))
    # the cache's calibration is the this-machine preset, and a launch on it carries
    # the table in the environment the ranks read (and in the command it shows)
    monkeypatch.setenv("COLLTUNE_CACHE", str(tmp_path))
    P.calibration_path().parent.mkdir(parents=True)
    P.calibration_path().write_text(p.to_toml())
    with launch.simulate("this-machine"):
        ln = launch.prepare(FakeMPI(), 2, ["prog"])
    env = ln.env[P.SIM_CHARGE_ENV]
    assert env == P.sim_env(p)[P.SIM_CHARGE_ENV]
    assert env.startswith("copy=8:") and ";reduce=8:" in env and ",1048576:" in env
    assert f"{P.SIM_CHARGE_ENV}=" in ln.shell_command
    # a platform without a table: nothing passed, nothing charged
    with launch.simulate("flat"):
        ln = launch.prepare(FakeMPI(), 2, ["prog"])
    assert P.SIM_CHARGE_ENV not in ln.env


def test_statistic_picks_the_table_and_bad_tables_are_refused():
    assert _charged(statistic="median").compute["copy"][0][1] == pytest.approx(2 * (0.01 + 8e-4))
    with pytest.raises(ColltuneError, match="compute kind 'cpy'.*copy"):
        dataclasses.replace(P.resolve("flat"), compute={"cpy": ((8, 1.0),)})
    with pytest.raises(ColltuneError, match="increasing"):
        dataclasses.replace(P.resolve("flat"), compute={"copy": ((64, 1.0), (8, 2.0))})
    with pytest.raises(ColltuneError, match=r"\[compute\] reduce"):
        P.loads(P.resolve("flat").to_toml() + "\n[compute]\nreduce = 3\n")


def _allreduce(build, platform, algos=("ring", "recursive_doubling"), sizes=(8, 1048576)):
    spec = bench_mod.BenchSpec("allreduce", list(algos), 2, list(sizes), reps=1)
    with launch.simulate(platform):
        recs, _ = bench_mod.run(build, spec, timeout=300)
    return {(r["spec"], r["size"]): r["median_us"] for r in recs}


def test_charged_reductions_cost_simulated_time_and_stay_deterministic(smpi_build):
    charged = _charged(copy=1e-4, reduce=2e-4)  # 1 MiB: a copy 105 µs, a reduction 210 µs
    plain = dataclasses.replace(charged, compute={})
    a = _allreduce(smpi_build, charged)
    b = _allreduce(smpi_build, charged)
    c = _allreduce(smpi_build, plain)
    assert a == b  # deterministic: the charge depends on the bytes only
    # ring at 2 processes reduces one half (512 KiB, about 105 µs) per rank; recursive
    # doubling copies the input (1 MiB, 105 µs) and reduces all of it (210 µs)
    ring = a[("ring", 1048576)] - c[("ring", 1048576)]
    rd = a[("recursive_doubling", 1048576)] - c[("recursive_doubling", 1048576)]
    assert 90 < ring < 400, (a, c)
    assert 250 < rd < 700, (a, c)
    # at 8 B the table's 0.01 µs per operation is all that is added
    assert 0 <= a[("ring", 8)] - c[("ring", 8)] < 1.0


def test_timing_only_runs_charge_what_they_skip(smpi_build):
    """Simulated runs with shared buffers (colltune-bench --shared-buffers, the default
    of a simulation) charge the copies and reductions of colltune's algorithms without
    doing them (ct_sim_timing_only): the same simulated times, to the digit, as a run
    with buffers of its own, which does them; with the charge and without it."""
    charged = _charged(copy=1e-4, reduce=2e-4)
    cases = (("allreduce", ["ring", "recursive_doubling", "rabenseifner"]),
             ("reduce", ["binomial", "rabenseifner"]), ("allgather", ["ring", "bruck"]))
    for plat in (charged, dataclasses.replace(charged, compute={})):
        for coll, algos in cases:
            got = {}
            for shared in (True, False):
                spec = bench_mod.BenchSpec(coll, algos, 5, [8, 65536, 1048576], reps=1,
                                           shared_buffers=shared)
                with launch.simulate(plat):
                    recs, _ = bench_mod.run(smpi_build, spec, timeout=300)
                assert all(r["shared_buffers"] is shared for r in recs)
                got[shared] = {(r["spec"], r["size"]): (r["median_us"], r["rank_max_us"])
                               for r in recs}
            assert len(got[True]) == 3 * len(algos) and got[True] == got[False], (coll, got)
            if plat.compute and coll == "allreduce":  # still charged: 1 MiB costs more
                plain = _allreduce(smpi_build, dataclasses.replace(charged, compute={}),
                                   algos=("ring",), sizes=(1048576,))
                assert got[True][("ring", 1048576)][0] > plain[("ring", 1048576)] + 50


def test_a_forward_table_charges_sends_of_data_the_rank_wrote_in_the_call(smpi_build):
    """[compute] forward (a model tried, docs/simulation.md "Data the sender just
    wrote"): Bcast scatter_allgather at 2 processes sends back the half it has just
    received, so its time grows by about the table's time of a half; binomial's root
    sends a buffer it never writes, so its time does not move; the platform file keeps
    the table."""
    fwd = ((256, 0.0), (65536, 50.0))  # 64 KiB: 50 µs, far above any message here
    plain = dataclasses.replace(P.resolve("this-machine"), compute={})
    dirty = dataclasses.replace(plain, compute={"forward": fwd})
    assert P.loads(dirty.to_toml()).compute == {"forward": fwd}
    spec = bench_mod.BenchSpec("bcast", ["scatter_allgather", "binomial"], 2, [131072], reps=1)
    got = {}
    for name, plat in (("plain", plain), ("dirty", dirty)):
        with launch.simulate(plat):
            recs, _ = bench_mod.run(smpi_build, spec, timeout=300)
        got[name] = {r["spec"]: r["median_us"] for r in recs}
    extra = got["dirty"]["scatter_allgather"] - got["plain"]["scatter_allgather"]
    # the exchange waits for rank 1's charged send of its 64 KiB half: about 50 µs on
    # rank 0's clock and rank 1's, the mean over both
    assert 25 < extra < 110, got
    assert got["dirty"]["binomial"] == got["plain"]["binomial"], got


def test_cli_calibrate_times_the_copy_and_the_reduction_here(tmp_path, ompi_build):
    from click.testing import CliRunner

    from colltune.cli import main

    src = tmp_path / "pp.json"
    src.write_text(json.dumps(_pingpong()))
    out = tmp_path / "cal.toml"
    r = CliRunner().invoke(main, ["platform", "calibrate", "--from-json", str(src), "--compute",
                                  "-o", str(out)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "charged in simulation: local copy 8 " in r.output
    p = P.load(out)
    for kind in P.CALIBRATED_KINDS:
        sizes = [m for m, _ in p.compute[kind]]
        assert sizes == [8, 1024, 8192, 65536, 262144, 1048576], kind
        assert all(t > 0 for _, t in p.compute[kind]), kind
        # 1 MiB of memcpy or sums takes longer than 8 bytes of them
        assert p.compute[kind][-1][1] > p.compute[kind][0][1], kind
        assert "colltune-gamma char" in p.calibration[f"{kind}_command"]
    # --from-json alone: the ping-pong only, no table (nothing is measured here)
    out2 = tmp_path / "cal2.toml"
    r = CliRunner().invoke(main, ["platform", "calibrate", "--from-json", str(src), "-o",
                                  str(out2)], catch_exceptions=False)
    assert r.exit_code == 0 and P.load(out2).compute == {}
    assert P.load(out2).eager_limit_bytes is None
    # --eager: the eager limit measured here, stored with its source
    out3 = tmp_path / "cal3.toml"
    r = CliRunner().invoke(main, ["platform", "calibrate", "--from-json", str(src), "--eager",
                                  "-o", str(out3)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    p3 = P.load(out3)
    assert p3.eager_limit_bytes is not None and p3.eager_limit_bytes > 0
    assert f"eager limit: {p3.eager_limit_bytes} B" in r.output
    assert "--mode eager" in p3.calibration["eager_command"]


def test_smpi_charges_the_logp_overheads_on_top_of_the_latency(smpi_build):
    """docs/simulation.md ("Charging the LogGP o"): SMPI adds smpi/os and smpi/or to a
    message's calibrated latency, so a ping-pong-calibrated platform that charged the
    measured o on top would count it twice; eager sends (smpi/async-small-thresh) let
    the message travel before its receive is posted."""
    from colltune.drivers.p2p import PingpongSpec, run_pingpong

    def oneway(cfg=()):
        with launch.simulate("flat", cfg):
            recs, _ = run_pingpong(smpi_build, PingpongSpec(2, (8,), reps=1, iterations=3,
                                                            warmup=1))
        return recs[0]["min_us"]

    base = oneway()
    both = oneway(("smpi/os:0:1e-6:0", "smpi/or:0:5e-7:0"))
    # most of os + or = 1.5 µs lands on the one-way time (flat: 1.33 µs; part of the
    # sender's overhead overlaps the message's start)
    assert 1.1 < both - base <= 1.55, (base, both)

    def bcast_ranks(cfg):
        spec = bench_mod.BenchSpec("bcast", ["linear"], 2, [8], 3, reps=1)
        with launch.simulate("flat", cfg):
            recs, _ = bench_mod.run(smpi_build, spec, timeout=300)
        return recs[0]["rank_min_us"], recs[0]["rank_max_us"]

    # rendezvous-like by default: the receiver waits for the whole latency after it
    # posts; eager: the root's message is there before the receiver leaves the barrier
    _, wait = bcast_ranks(())
    _, wait_eager = bcast_ranks(("smpi/async-small-thresh:4096",))
    assert wait > 0.5 * base and wait_eager < 0.5 * wait, (base, wait, wait_eager)


# ------------------------------------------------------------------- the eager limit

def _eager_record(limit=256):
    return {"kind": "eager", "eager_limit": limit, "rendezvous_from": limit + 1,
            "reps": 5, "delay_us": 1000.0, "command": "colltune-pingpong --mode eager"}


def test_eager_limit_round_trips_and_becomes_smpis_detached_send_threshold():
    p = _charged(eager=_eager_record(256))
    assert p.eager_limit_bytes == 256
    back = P.loads(p.to_toml())
    assert back.eager_limit_bytes == 256
    assert "before the receive was posted" in back.sources["eager_limit_bytes"]
    assert back.calibration["eager_command"] == "colltune-pingpong --mode eager"
    # SMPI detaches a send when size < threshold: 256 B returns at once, 257 B waits
    assert "--cfg=smpi/send-is-detached-thresh:257" in P.simgrid_cfg(back)
    assert back.describe()["eager_limit"]["value"] == 256
    # no measurement, no setting: SMPI's own default stays
    plain = _charged()
    assert plain.eager_limit_bytes is None
    assert not any("detached" in c for c in P.simgrid_cfg(plain))
    assert plain.describe()["eager_limit"] is None
    for bad in (-1, 1.5, "4K", True):
        with pytest.raises(ColltuneError, match="eager_limit_bytes"):
            dataclasses.replace(P.resolve("flat"), eager_limit_bytes=bad)
    with pytest.raises(ColltuneError, match="eager_limit_bytes"):
        P.loads(P.resolve("flat").to_toml().replace("\n[intra]", 'eager_limit_bytes = "4K"\n\n[intra]'))


def test_eager_limit_is_measured_here_and_refused_on_a_simulator(ompi_build):
    import subprocess
    from types import SimpleNamespace

    from colltune.drivers.p2p import P2PError, measure_eager_limit

    rec = measure_eager_limit(ompi_build, max_size=65536, reps=5)
    limit = rec["eager_limit"]
    assert rec["rendezvous_from"] == limit + 1, rec
    # every size tried at or under the limit returned long before the receiver's
    # 1 ms delay was over, every size above it waited for the receiver
    for size, us in rec["tried"]:
        assert (us < 500) == (size <= limit), rec
    # the library sends eagerly at most up to its shared-memory eager limit
    info = subprocess.run([str(ompi_build.mpi.bindir / "ompi_info"), "--param", "btl", "sm",
                           "--level", "9", "--parsable"], capture_output=True, text=True).stdout
    sm_eager = [int(line.rsplit(":", 1)[1]) for line in info.splitlines()
                if line.startswith("mca:btl:sm:param:btl_sm_eager_limit:value:")]
    assert sm_eager and 0 < limit <= sm_eager[0], (limit, sm_eager)
    with pytest.raises(P2PError, match="send-is-detached-thresh"):
        measure_eager_limit(SimpleNamespace(mpi=FakeMPI()))


def test_simulated_sends_above_the_eager_limit_wait_for_the_receiver(smpi_build):
    """A stream of 8 KiB segments: with the measured library's eager limit (256 B) each
    segment's send waits for its transfer, with SMPI's default (64 KiB) none does."""
    eager = _charged(eager=_eager_record(256))
    default = dataclasses.replace(eager, eager_limit_bytes=None)

    def chain(platform):
        spec = bench_mod.BenchSpec("bcast", ["chain:segsize=8192", "binomial"], 2,
                                   [262144], reps=1)
        with launch.simulate(platform):
            recs, _ = bench_mod.run(smpi_build, spec, timeout=300)
        return {r["spec"]: r["median_us"] for r in recs}

    a, b = chain(eager), chain(default)
    assert a["chain:segsize=8192"] > 1.3 * b["chain:segsize=8192"], (a, b)
    # one message of 256 KiB waits for its transfer either way
    assert a["binomial"] == pytest.approx(b["binomial"], rel=0.05), (a, b)


def test_eager_limit_under_mpich_is_its_shared_memory_cell(mpich_build):
    """MPICH sends a message that fits one shared-memory cell (MPIR_CVAR_CH4_SHM_POSIX_
    IQUEUE_CELL_SIZE, a header included) eagerly: the limit found is at least the cell
    less its header (here 8,112 of 8,192 B: above it the single-copy path, CMA, waits
    for the receiver; where CMA is off, several cells may carry a message eagerly, so
    no upper bound is asserted)."""
    import subprocess

    from colltune.drivers.p2p import measure_eager_limit

    rec = measure_eager_limit(mpich_build, max_size=65536, reps=5)
    out = subprocess.run([str(mpich_build.mpi.bindir / "mpivars")], capture_output=True,
                         text=True).stdout
    cell = [int(line.split("=", 1)[1].split()[0]) for line in out.splitlines()
            if line.strip().startswith("MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE")
            and "=" in line]
    assert cell, out[:500]
    assert rec["eager_limit"] > cell[0] - 256, (rec, cell)
    assert rec["rendezvous_from"] in (None, rec["eager_limit"] + 1), rec
