"""colltune-heat and colltune-stream: bitwise reproducibility against a serial reference.

The reference below is plain Python (its floats are IEEE doubles, like C's) and
performs every cell update with the same operations in the same order as
native/apps/heat/heat_kernel.c, so the final grids must agree bit for bit.
"""

import json
from array import array

import pytest
from click.testing import CliRunner

from colltune.drivers import heat
from colltune.drivers import run as runner
from colltune.cli import heat as heat_cmd

MASK = (1 << 64) - 1
T_RANGE, K_RANGE = 100.0, 0.25


# ---------------------------------------------------------------- the reference

def mix64(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def generated(seed: int, stream: int, rows: int, cols: int, rng: float) -> list[list[float]]:
    """heat.c's seeded fields: stream 1 = temperature, 2 = conductivity."""
    key = mix64((mix64(seed) + stream) & MASK)
    return [[rng * ((mix64(key ^ (i * cols + j)) >> 11) * 2.0**-53) for j in range(cols)]
            for i in range(rows)]


def from_pgm(pix: list[list[int]], maxval: int, rng: float) -> list[list[float]]:
    return [[rng * v / maxval for v in row] for row in pix]


def simulate(T, K, iterations, threshold=0.0):
    """Serial heat diffusion: (final grid, iterations done, last max change)."""
    rows, cols = len(T), len(T[0])
    top, bottom = list(T[0]), list(T[-1])  # fixed boundary rows outside the grid
    done, last = 0, None
    for _ in range(iterations):
        new, m = [], 0.0
        for i in range(rows):
            up = T[i - 1] if i > 0 else top
            dn = T[i + 1] if i < rows - 1 else bottom
            row, kr = T[i], K[i]
            out = [0.0] * cols
            for j in range(cols):
                mid = row[j]
                s = ((up[j] + dn[j]) + row[j - 1]) + row[(j + 1) % cols]
                v = mid + kr[j] * (s - 4.0 * mid)
                out[j] = v
                d = abs(v - mid)
                if d > m:
                    m = d
            new.append(out)
        T, done, last = new, done + 1, m
        if threshold > 0 and m < threshold:
            break
    return T, done, last


def raw_bytes(grid) -> bytes:
    return array("d", [v for row in grid for v in row]).tobytes()


_cache: dict = {}


def reference(rows, cols, seed, iterations, threshold=0.0):
    key = (rows, cols, seed, iterations, threshold)
    if key not in _cache:
        T = generated(seed, 1, rows, cols, T_RANGE)
        K = generated(seed, 2, rows, cols, K_RANGE)
        _cache[key] = simulate(T, K, iterations, threshold)
    return _cache[key]


def run(build, tmp_path, np, **kw):
    out = tmp_path / f"grid-{np}-{len(list(tmp_path.iterdir()))}.raw"
    spec = heat.HeatSpec(np=np, output=str(out), **kw)
    rec, reports, _ = heat.run_heat(build, spec, timeout=300)
    return rec, reports, out.read_bytes()


# ---------------------------------------------------------------- bitwise identity

@pytest.mark.parametrize("np", [1, 2, 3, 4])
def test_bitwise_identical_all_decomps_and_variants(ompi_build, tmp_path, np):
    """37 x 23: rows not divisible by 2, 3 or 4; every decomposition and variant."""
    want, _, change = reference(37, 23, 7, 30)
    for decomp in heat.DECOMPS:
        for variant in heat.VARIANTS:
            rec, _, got = run(ompi_build, tmp_path, np, rows=37, cols=23, iterations=30,
                              seed=7, decomp=decomp, variant=variant)
            assert got == raw_bytes(want), (np, decomp, variant)
            assert rec["iterations_done"] == 30 and rec["final_max_change"] == change
            assert rec["np"] == np and rec["decomp"] == decomp and rec["variant"] == variant
            assert rec["pgrid"][0] * rec["pgrid"][1] == np
            if decomp == "rows":
                assert rec["pgrid"] == [np, 1]


@pytest.mark.parametrize("np", [5, 6, 7, 8])
def test_bitwise_identical_oversubscribed(ompi_build, tmp_path, np):
    """np 5..8 (more processes than cores here): every decomposition and variant."""
    want, _, _ = reference(37, 23, 7, 30)
    for decomp in heat.DECOMPS:
        for variant in heat.VARIANTS:
            rec, _, got = run(ompi_build, tmp_path, np, rows=37, cols=23, iterations=30,
                              seed=7, decomp=decomp, variant=variant)
            assert got == raw_bytes(want), (np, decomp, variant)
            if decomp == "2d" and np in (6, 8):
                assert rec["pgrid"][1] > 1  # columns really are split


@pytest.mark.parametrize("pgrid", ["1x2", "1x3", "2x2", "3x1"])
def test_bitwise_identical_given_process_grid(ompi_build, tmp_path, pgrid):
    """64 x 50 on column-split grids: the wrap-around crosses processes (1x2: left == right)."""
    np = int(pgrid[0]) * int(pgrid[2])
    want, _, _ = reference(64, 50, 11, 20)
    for variant in heat.VARIANTS:
        rec, _, got = run(ompi_build, tmp_path, np, rows=64, cols=50, iterations=20, seed=11,
                          decomp="2d", pgrid=pgrid, variant=variant)
        assert got == raw_bytes(want), (pgrid, variant)
        assert rec["pgrid"] == [int(pgrid[0]), int(pgrid[2])]


def test_zero_iterations_write_the_initial_grid(ompi_build, tmp_path):
    rec, _, got = run(ompi_build, tmp_path, 2, rows=5, cols=4, iterations=0, seed=3)
    assert got == raw_bytes(generated(3, 1, 5, 4, T_RANGE))
    assert rec["iterations_done"] == 0 and rec["final_max_change"] is None


def test_single_row_and_column_blocks(ompi_build, tmp_path):
    """Blocks of one row / one column: frame and interior degenerate."""
    want, _, _ = reference(4, 3, 5, 12)
    for pgrid, variant in (("4x1", "overlap"), ("2x2", "persistent"), ("1x3", "blocking")):
        np = int(pgrid[0]) * int(pgrid[2])
        _, _, got = run(ompi_build, tmp_path, np, rows=4, cols=3, iterations=12, seed=5,
                        decomp="2d", pgrid=pgrid, variant=variant)
        assert got == raw_bytes(want), (pgrid, variant)


# ---------------------------------------------------------------- threshold, reports

def test_threshold_stops_at_the_same_iteration(ompi_build, tmp_path):
    cap, threshold = 400, 1.0
    want, n, change = reference(37, 23, 3, cap, threshold)
    assert 5 < n < cap and change < threshold
    cases = [(1, "rows", "blocking", "native"), (3, "rows", "overlap", "recursive_doubling"),
             (4, "2d", "persistent", "ring"), (2, "2d", "blocking", "reduce_bcast")]
    for np, decomp, variant, algo in cases:
        rec, _, got = run(ompi_build, tmp_path, np, rows=37, cols=23, iterations=cap, seed=3,
                          threshold=threshold, decomp=decomp, variant=variant, allreduce=algo)
        assert rec["iterations_done"] == n and rec["converged"] is True, (np, decomp, variant)
        assert rec["final_max_change"] == change
        assert rec["allreduce"] == algo and rec["allreduce_used"]
        assert got == raw_bytes(want)


def test_reports_min_max_exact_average_close(ompi_build, tmp_path):
    grids = {}
    T = generated(9, 1, 37, 23, T_RANGE)
    K = generated(9, 2, 37, 23, K_RANGE)
    for it in (10, 20, 30):
        grids[it] = simulate(T, K, it)[0]
    for np, algo in ((1, "native"), (3, "binomial"), (4, "linear")):
        rec, reports, _ = run(ompi_build, tmp_path, np, rows=37, cols=23, iterations=30, seed=9,
                              report_interval=10, reduce=algo, decomp="2d")
        assert [r["iteration"] for r in reports] == [10, 20, 30]
        assert rec["reports"] == 3 and rec["reduce_used"] == algo
        for r in reports:
            cells = [v for row in grids[r["iteration"]] for v in row]
            assert r["min"] == min(cells) and r["max"] == max(cells)
            assert r["avg"] == pytest.approx(sum(cells) / len(cells), rel=1e-12)
            assert r["max_change"] is None  # no threshold: no Allreduce per iteration


def test_timers_and_rates(ompi_build, tmp_path):
    rec, _, _ = run(ompi_build, tmp_path, 2, rows=64, cols=50, iterations=20, threshold=1e-9)
    assert set(heat.HEAT_FIELDS) <= set(rec), set(heat.HEAT_FIELDS) - set(rec)
    assert rec["flops_per_cell"] == heat.FLOPS_PER_CELL == 8
    assert rec["bytes_per_cell"] == heat.BYTES_PER_CELL == 24
    assert rec["gflops"] == pytest.approx(8 * 64 * 50 * 20 / rec["time_s"] / 1e9, rel=1e-4)
    for part in ("comp", "halo", "coll"):
        assert 0 <= rec[f"{part}_s_mean"] <= rec[f"{part}_s_max"] <= rec["time_s"] * 1.001
    assert rec["comp_s_max"] > 0 and rec["coll_s_max"] > 0  # Allreduce ran every iteration
    assert rec["time_s_mean"] <= rec["time_s"]


# ---------------------------------------------------------------- PGM

def write_pgm(path, pix, maxval, plain):
    rows, cols = len(pix), len(pix[0])
    if plain:
        body = "\n".join(" ".join(map(str, row)) for row in pix)
        path.write_text(f"P2\n# a comment\n{cols} {rows}\n# another\n{maxval}\n{body}\n")
    else:
        data = bytearray()
        for row in pix:
            for v in row:
                data += bytes([v]) if maxval < 256 else v.to_bytes(2, "big")
        path.write_bytes(f"P5 # magic\n{cols}\n{rows} {maxval}\n".encode() + bytes(data))


@pytest.mark.parametrize("tfmt,kfmt", [("p5-8", "p2"), ("p2", "p5-16")])
def test_pgm_input(ompi_build, tmp_path, tfmt, kfmt):
    rows, cols = 29, 17
    tmax = 255 if tfmt == "p5-8" else 999
    kmax = 60000 if kfmt == "p5-16" else 500
    tpix = [[(i * 37 + j * 11) % (tmax + 1) for j in range(cols)] for i in range(rows)]
    kpix = [[(i * 5 + j * 13) % (kmax + 1) for j in range(cols)] for i in range(rows)]
    tfile, kfile = tmp_path / "t.pgm", tmp_path / "k.pgm"
    write_pgm(tfile, tpix, tmax, plain=tfmt == "p2")
    write_pgm(kfile, kpix, kmax, plain=kfmt == "p2")
    want, _, _ = simulate(from_pgm(tpix, tmax, T_RANGE), from_pgm(kpix, kmax, K_RANGE), 25)
    for np, decomp in ((1, "rows"), (3, "rows"), (4, "2d")):
        rec, _, got = run(ompi_build, tmp_path, np, iterations=25, init=str(tfile),
                          conductivity=str(kfile), decomp=decomp)
        assert (rec["rows"], rec["cols"]) == (rows, cols)  # taken from the files
        assert got == raw_bytes(want), (np, decomp)
    # one file only: the other field is generated from the seed
    want, _, _ = simulate(from_pgm(tpix, tmax, T_RANGE), generated(4, 2, rows, cols, K_RANGE), 5)
    _, _, got = run(ompi_build, tmp_path, 2, iterations=5, init=str(tfile), seed=4)
    assert got == raw_bytes(want)


def test_pgm_output(ompi_build, tmp_path):
    out = tmp_path / "final.pgm"
    heat.run_heat(ompi_build, heat.HeatSpec(np=2, rows=9, cols=7, iterations=4, seed=2,
                                            output=str(out), output_format="pgm"), timeout=120)
    want, _, _ = reference(9, 7, 2, 4)
    data = out.read_bytes()
    header_end = data.index(b"65535\n") + len(b"65535\n")
    assert data.startswith(b"P5\n") and b"\n7 9\n" in data[:header_end]
    raster = data[header_end:]
    assert len(raster) == 9 * 7 * 2
    vals = [int.from_bytes(raster[i:i + 2], "big") for i in range(0, len(raster), 2)]
    expect = [min(65535, max(0, round(v / 100 * 65535))) for row in want for v in row]
    assert all(abs(a - b) <= 1 for a, b in zip(vals, expect))  # round-half-even vs Python


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("spec,message", [
    (dict(np=4, rows=3, cols=10), "every process needs at least one row"),
    (dict(np=2, rows=10, cols=1, decomp="2d", pgrid="1x2"), "at least one column"),
    (dict(np=1, allreduce="nosuch"), "valid:"),
    (dict(np=1, reduce="chain:fanout=0"), "out of range"),
])
def test_bad_arguments_from_the_program(ompi_build, spec, message):
    with pytest.raises(heat.HeatError, match=message):
        heat.run_heat(ompi_build, heat.HeatSpec(iterations=1, **spec), timeout=120)


@pytest.mark.parametrize("spec,message", [
    (dict(decomp="cols"), "valid: rows, 2d"),
    (dict(variant="async"), "valid: blocking, overlap, persistent"),
    (dict(np=3, decomp="2d", pgrid="2x2"), "not a grid of --np 3"),
    (dict(pgrid="1x1"), "--decomp 2d only"),
    (dict(rows=0), "at least 1"),
    (dict(init="/nonexistent.pgm"), "no such file"),
])
def test_bad_arguments_checked_before_launch(ompi_build, spec, message):
    with pytest.raises(heat.HeatError, match=message):
        heat.run_heat(ompi_build, heat.HeatSpec(**spec))


def test_bad_program_arguments_and_files(ompi_build, tmp_path):
    prog = str(ompi_build.program("colltune-heat"))
    for argv, message in (([prog, "--variant", "async"], "valid: blocking, overlap, persistent"),
                          ([prog, "--rows", "-3"], "--rows '-3'")):
        with pytest.raises(heat.HeatError, match=message):
            runner.run_records(ompi_build, argv[0], 1, argv[1:], error=heat.HeatError,
                               timeout=60)
    bad = tmp_path / "bad.pgm"
    bad.write_text("P6\n2 2\n255\n")
    with pytest.raises(heat.HeatError, match="not a PGM image"):
        heat.run_heat(ompi_build, heat.HeatSpec(init=str(bad)), timeout=60)
    short = tmp_path / "short.pgm"
    short.write_bytes(b"P5\n4 4\n255\n" + bytes(5))
    with pytest.raises(heat.HeatError, match="truncated"):
        heat.run_heat(ompi_build, heat.HeatSpec(init=str(short)), timeout=60)
    big = tmp_path / "big.pgm"
    write_pgm(big, [[1, 2], [3, 300]], 255, plain=True)
    with pytest.raises(heat.HeatError, match="exceeds maxval"):
        heat.run_heat(ompi_build, heat.HeatSpec(init=str(big)), timeout=60)
    ok = tmp_path / "ok.pgm"
    write_pgm(ok, [[1, 2], [3, 4]], 255, plain=False)
    with pytest.raises(heat.HeatError, match="has 2 rows but --rows is 5"):
        heat.run_heat(ompi_build, heat.HeatSpec(rows=5, init=str(ok)), timeout=60)


def test_cli_rejects_bad_choice():
    res = CliRunner().invoke(heat_cmd.heat, ["--variant", "async"])
    assert res.exit_code == 2 and "async" in res.output


# ---------------------------------------------------------------- stream and the bound

def test_stream_reports_positive_bandwidth(ompi_build):
    for np in (1, 2):
        rec, _ = heat.run_stream(ompi_build, heat.StreamSpec(np=np, elements=1 << 20, reps=3),
                                 timeout=120)
        assert set(heat.STREAM_FIELDS) <= set(rec)
        assert rec["np"] == np and rec["elements"] == 1 << 20 and rec["reps"] == 3
        assert 0 < rec["best_s"] <= rec["avg_s"] <= rec["max_s"]
        assert rec["triad_GBps"] > 0
        assert rec["triad_GBps"] == pytest.approx(np * 24 * (1 << 20) / rec["best_s"] / 1e9,
                                                  rel=1e-4)
        assert rec["triad_GBps_write_allocate"] == pytest.approx(rec["triad_GBps"] * 4 / 3,
                                                                 rel=1e-4)


def test_bandwidth_bound():
    assert heat.bandwidth_bound_gflops(24.0) == pytest.approx(8.0)
    rec = heat.with_bound({"gflops": 2.0, "flops_per_cell": 8, "bytes_per_cell": 24}, 12.0)
    assert rec["bound_gflops"] == pytest.approx(4.0) and rec["bound_fraction"] == 0.5
    with pytest.raises(ValueError):
        heat.bandwidth_bound_gflops(0)


def test_cli_heat_json_with_bound(ompi_build):
    res = CliRunner().invoke(heat_cmd.heat, ["--np", "2", "--rows", "40", "--cols", "30",
                                         "--iterations", "10", "--report-interval", "5",
                                         "--stream-gbs", "12", "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output[res.output.index("{"):])
    assert doc["kind"] == "heat" and doc["np"] == 2 and len(doc["report_records"]) == 2
    assert doc["bound_gflops"] == pytest.approx(12 / 24 * 8)
    assert doc["bound_fraction"] == pytest.approx(doc["gflops"] / doc["bound_gflops"])


def test_cli_heat_and_stream_tables(ompi_build):
    res = CliRunner().invoke(heat_cmd.heat, ["--np", "2", "--rows", "40", "--cols", "30",
                                         "--iterations", "10", "--stream", "--stream-elements", "256K",
                                         "--decomp", "2d"],
                             env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    for text in ("GFLOP/s", "halo exchange", "collectives", "fraction of bound", "STREAM triad"):
        assert text in res.output
    res = CliRunner().invoke(heat_cmd.stream, ["--elements", "256K", "--reps", "2"],
                             env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "GB/s" in res.output


# ---------------------------------------------------------------- MPICH

@pytest.mark.mpich
def test_bitwise_identical_mpich(mpich_build, tmp_path):
    want, n, change = reference(37, 23, 3, 400, 1.0)
    for np, decomp, variant in ((1, "rows", "overlap"), (3, "2d", "persistent"),
                                (4, "2d", "blocking")):
        rec, _, got = run(mpich_build, tmp_path, np, rows=37, cols=23, iterations=400, seed=3,
                          threshold=1.0, decomp=decomp, variant=variant)
        assert got == raw_bytes(want) and rec["iterations_done"] == n
        assert rec["final_max_change"] == change and "MPICH" in rec["mpi"]
