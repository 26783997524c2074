"""Real applications from the distribution under colltune (docs/applications.md): HPCC
(C: HPL, PTRANS, RandomAccess, STREAM, MPI FFT, each with its own check) and Quantum
ESPRESSO's pw.x (Fortran), run as a user would with `colltune run --mpi WRAPPER`, where
WRAPPER is the compiler wrapper of the MPI library the binary links (ldd).

Each application runs once without colltune and once under it with a profile; then, for
every collective colltune can choose that the profile shows, every algorithm of it is
forced (`--force COLL=ALG`). The runs force all those collectives at once: run i takes
algorithm i of each collective's list (cycling through the shorter lists), so every
algorithm of every collective runs in as many runs as the longest list has algorithms.
Each run's result must match the run without colltune (HPCC: every check it makes
passes; pw.x: the same total energy to the printed digits and the same number of SCF
iterations), and its profile must show the forced algorithm ran (or its declared
fallback: the profile says which).

Skips (with the reason) when a package is missing: hpcc, quantum-espresso (pw.x), the
MPI library's development wrapper, or a pseudopotential for pw.x (Si.pz-vbc.UPF from
quantum-espresso-data, or $COLLTUNE_QE_PSEUDO_DIR).
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from colltune.drivers import registry
from colltune.mpi import libraries as mpi_mod
from colltune.mpi.build import build
from colltune.rules import interpose

NP = 3  # not a power of two: the algorithms' odd cases and fallbacks
RUN_TIMEOUT = 180


def _linked_mpi(binary: str) -> tuple[str, str]:
    """(compiler wrapper, launcher) of the MPI library `binary` links, or skip."""
    try:
        libs = subprocess.run(["ldd", binary], capture_output=True, text=True,
                              timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"ldd {binary}: {exc}")
    if "libmpi.so.40" in libs:
        kind = "openmpi"
    elif re.search(r"libmpich\.so", libs):
        kind = "mpich"
    else:
        pytest.skip(f"{binary} links neither Open MPI (libmpi.so.40) nor MPICH (libmpich.so)")
    wrapper, launcher = shutil.which(f"mpicc.{kind}"), shutil.which(f"mpirun.{kind}")
    if not wrapper or not launcher:
        pytest.skip(f"{binary} links {kind}, whose mpicc.{kind}/mpirun.{kind} are not installed "
                    f"(Debian: {'libopenmpi-dev' if kind == 'openmpi' else 'libmpich-dev'})")
    return wrapper, launcher


def _build_for(wrapper: str):
    """colltune's build for the MPI library of `wrapper`, or skip when --mpi WRAPPER finds
    another library (a Debian wrapper beside the other library's alternatives)."""
    b = build(mpi_mod.find(wrapper))
    kind = "openmpi" if wrapper.endswith(".openmpi") else "mpich"
    if b.mpi.kind != kind:
        pytest.skip(f"colltune build --mpi {wrapper} builds against {b.mpi.banner}, not "
                    f"{kind}")
    return b


def _mpirun(launcher: str, np: int) -> list[str]:
    argv = [launcher]
    if launcher.endswith(".openmpi"):
        argv += ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    return argv + ["-np", str(np)]


def _run(argv: list[str], cwd: Path, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess:
    """Run in a session of its own; on a timeout everything it started is killed."""
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"hang (> {timeout} s): {' '.join(argv)}\n{err[-2000:]}")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _colltune_run(wrapper: str, opts: list[str], cmd: list[str], cwd: Path):
    exe = str(Path(sys.executable).parent / "colltune")
    return _run([exe, "run", "--mpi", wrapper, *opts, "--", *cmd], cwd)


def _sweeps(profile: interpose.Profile, build_) -> list[dict[str, str]]:
    """The forced sets that run every algorithm of every collective colltune can choose
    that the profile shows (native excluded: it is the run without forcing)."""
    colls = sorted({e.collective for e in profile.entries})
    algos = {c: [a.name for a in registry.algorithms(build_)
                 if a.collective == c and a.name != "native"] for c in colls}
    n = max((len(v) for v in algos.values()), default=0)
    return [{c: v[i % len(v)] for c, v in algos.items() if v} for i in range(n)]


def _forced_ran(profile: interpose.Profile, forced: dict[str, str], build_) -> list[str]:
    """Problems: a forced collective whose calls did not follow COLLTUNE_<COLL>, or whose
    algorithm never ran although it declares no fallback."""
    fallback = {(a.collective, a.name): a.fallback for a in registry.algorithms(build_)}
    problems = []
    for coll, algo in forced.items():
        mine = [e for e in profile.entries if e.collective == coll]
        if any(e.source != interpose.force_variable(coll) for e in mine):
            problems.append(f"{coll}: calls not decided by the forced {algo}")
        if mine and not any(e.algorithm == algo for e in mine) and not fallback.get((coll, algo)):
            problems.append(f"{coll}: {algo} never ran (ran: "
                            f"{sorted({e.algorithm for e in mine})}) and declares no fallback")
    return problems


# ------------------------------------------------------------------------------ HPCC

# HPL N=200 (which also sizes the other tests' memory), NB=32 on a P x Q grid; the rest is
# Debian's example (/usr/share/doc/hpcc/examples/_hpccinf.txt): seconds per run
HPCCINF = """HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
200          Ns
1            # of NBs
32           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
{p}            Ps
{q}            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                      		Number of additional problem sizes for PTRANS
1200 10000 30000        	values of N
0                       	number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64       	values of NB
"""


def hpcc_problems(out: str) -> list[str]:
    """What HPCC's own checks say failed in hpccoutf.txt (empty: every check passed)."""
    problems = []
    summary = dict(re.findall(r"^(\w+)=(\S+)$", out, re.M))
    if summary.get("Success") != "1":
        problems.append(f"Success={summary.get('Success')}")
    passed = [int(n) for n in re.findall(r"(\d+) tests completed and passed residual", out)]
    failed = [int(n) for n in re.findall(r"(\d+) tests completed and failed residual", out)]
    if len(passed) < 2 or not all(passed):  # HPL and PTRANS
        problems.append(f"residual checks passed: {passed} (HPL, PTRANS)")
    if any(failed):
        problems.append(f"residual checks failed: {failed}")
    found = re.findall(r"Found (\d+) errors in \d+ locations \((\w+)\)", out)
    if len(found) < 4 or any(n != "0" or verdict != "passed" for n, verdict in found):
        problems.append(f"RandomAccess: {found}")
    for key in ("MPIRandomAccess_Errors", "MPIRandomAccess_LCG_Errors", "PTRANS_residual"):
        if summary.get(key) is None or float(summary[key]) != 0:
            problems.append(f"{key}={summary.get(key)}")
    if "Solution Validates" not in out or "Failed Validation" in out:
        problems.append("STREAM did not validate")
    err = float(summary.get("MPIFFT_maxErr", "inf"))
    if not err < 1e-12:
        problems.append(f"MPIFFT_maxErr={err}")
    return problems


@pytest.fixture(scope="module")
def hpcc():
    binary = shutil.which("hpcc")
    if not binary:
        pytest.skip("hpcc is not installed (Debian: apt-get install hpcc)")
    wrapper, launcher = _linked_mpi(binary)
    return binary, wrapper, launcher, _build_for(wrapper)


GRIDS = {2: (1, 2), 3: (1, 3), 4: (2, 2)}  # processes: HPL's P x Q


def _hpcc_run(hpcc, tmp: Path, opts: list[str] | None, np: int = NP):
    """One HPCC run in `tmp` (None: without colltune); its output file's text."""
    binary, wrapper, launcher, _ = hpcc
    tmp.mkdir(parents=True, exist_ok=True)
    p, q = GRIDS[np]
    (tmp / "hpccinf.txt").write_text(HPCCINF.format(p=p, q=q))
    cmd = _mpirun(launcher, np) + [binary]
    res = _run(cmd, tmp) if opts is None else _colltune_run(wrapper, opts, cmd, tmp)
    outf = tmp / "hpccoutf.txt"
    assert res.returncode == 0 and outf.exists(), f"{res.args}\n{res.stderr[-3000:]}"
    return outf.read_text(errors="replace")


def test_hpcc_under_colltune_passes_its_checks_and_profiles(hpcc, tmp_path):
    """HPCC without colltune, then under it with a profile: every check passes both times;
    the profile names the collectives it calls, all of them colltune's to choose."""
    assert hpcc_problems(_hpcc_run(hpcc, tmp_path / "plain", None)) == []
    prof = tmp_path / "hpcc.profile.json"
    out = _hpcc_run(hpcc, tmp_path / "profiled", ["--profile", str(prof)])
    assert hpcc_problems(out) == []
    p = interpose.read_profile(prof)
    calls = {e.collective for e in p.entries}
    assert {"bcast", "reduce", "allreduce", "alltoall", "barrier"} <= calls, calls
    assert p.wall_s and 0 < p.collective_s() < p.wall_s * 1.01
    assert all(s.colltune for s in p.shares()), [s.call for s in p.shares() if not s.colltune]


@pytest.mark.parametrize("np", [3, 4])
def test_hpcc_passes_its_checks_under_every_algorithm(hpcc, np, tmp_path):
    """Every algorithm of every collective HPCC calls, forced (several collectives per
    run, see the module's doc): HPCC's own checks pass in every run, and the profile shows
    the forced algorithms ran. 3 processes (1 x 3: odd counts, fallbacks) and 4 (2 x 2:
    row and column communicators of 2)."""
    prof0 = tmp_path / "p0.json"
    assert hpcc_problems(_hpcc_run(hpcc, tmp_path / "p0", ["--profile", str(prof0)], np)) == []
    b = hpcc[3]
    sweeps = _sweeps(interpose.read_profile(prof0), b)
    assert sweeps
    verdicts = []
    for i, forced in enumerate(sweeps):
        prof = tmp_path / f"f{i}.json"
        opts = ["--profile", str(prof)] + [f"--force={c}={a}" for c, a in forced.items()]
        problems = hpcc_problems(_hpcc_run(hpcc, tmp_path / f"f{i}", opts, np))
        p = interpose.read_profile(prof)
        problems += _forced_ran(p, forced, b)
        verdicts.append((forced, problems))
        for c, a in forced.items():  # the runs, for the record (pytest -s)
            ran = sorted({e.algorithm for e in p.entries if e.collective == c})
            print(f"hpcc np={np} {c} {a}: ran {','.join(ran)}: "
                  f"{'checks pass' if not problems else problems}")
    bad = [(f, p) for f, p in verdicts if p]
    assert not bad, "\n".join(f"{f}: {p}" for f, p in bad)


# ------------------------------------------------------------------------------ pw.x

PW_IN = """&control
  calculation = 'scf'
  prefix = 'si'
  pseudo_dir = './'
  outdir = './out'
  disk_io = 'none'
/
&system
  ibrav = 2, celldm(1) = 10.20, nat = 2, ntyp = 1,
  ecutwfc = 12.0
/
&electrons
  conv_thr = 1.0d-8
/
ATOMIC_SPECIES
 Si 28.086 Si.pz-vbc.UPF
ATOMIC_POSITIONS alat
 Si 0.00 0.00 0.00
 Si 0.25 0.25 0.25
K_POINTS automatic
 2 2 2 0 0 0
"""
UPF = "Si.pz-vbc.UPF"


def _find_upf() -> Path | None:
    """Si.pz-vbc.UPF(.gz): $COLLTUNE_QE_PSEUDO_DIR, else quantum-espresso-data's pseudo
    folder or its examples."""
    roots = [Path(os.environ["COLLTUNE_QE_PSEUDO_DIR"])] if os.environ.get(
        "COLLTUNE_QE_PSEUDO_DIR") else []
    roots += [Path("/usr/share/espresso/pseudo"), Path("/usr/share/doc/quantum-espresso/examples")]
    for root in roots:
        for name in (UPF, UPF + ".gz"):
            hit = next(iter(sorted(root.rglob(name))), None) if root.is_dir() else None
            if hit:
                return hit
    return None


def pw_result(out: str) -> tuple[str, int]:
    """(total energy as printed, SCF iterations) of a pw.x run."""
    energy = re.search(r"^!\s+total energy\s+=\s+(\S+) Ry", out, re.M)
    iters = re.search(r"convergence has been achieved in\s+(\d+) iterations", out)
    assert energy and iters, out[-3000:]
    return energy.group(1), int(iters.group(1))


@pytest.fixture(scope="module")
def pw():
    binary = shutil.which("pw.x")
    if not binary:
        pytest.skip("pw.x is not installed (Debian: apt-get install quantum-espresso)")
    upf = _find_upf()
    if upf is None:
        pytest.skip(f"no {UPF} (Debian: quantum-espresso-data ships it among its examples; "
                    "or set COLLTUNE_QE_PSEUDO_DIR)")
    wrapper, launcher = _linked_mpi(binary)
    return binary, wrapper, launcher, _build_for(wrapper), upf


def _pw_run(pw, tmp: Path, opts: list[str] | None) -> tuple[str, int]:
    binary, wrapper, launcher, _, upf = pw
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "si.in").write_text(PW_IN)
    data = upf.read_bytes()
    (tmp / UPF).write_bytes(gzip.decompress(data) if upf.suffix == ".gz" else data)
    cmd = _mpirun(launcher, NP) + [binary, "-in", "si.in"]
    res = _run(cmd, tmp) if opts is None else _colltune_run(wrapper, opts, cmd, tmp)
    assert res.returncode == 0, f"{res.args}\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}"
    return pw_result(res.stdout)


def test_pw_same_energy_and_iterations_under_every_algorithm(pw, tmp_path):
    """pw.x (Fortran) without colltune, then under it: the same total energy to the
    printed digits and the same number of SCF iterations, first with the profile, then
    with every algorithm of every collective the profile shows forced."""
    plain = _pw_run(pw, tmp_path / "plain", None)
    prof = tmp_path / "pw.profile.json"
    assert _pw_run(pw, tmp_path / "profiled", ["--profile", str(prof)]) == plain
    if not prof.exists() or not interpose.read_profile(prof).entries:
        pytest.skip("pw.x's Fortran MPI calls do not reach colltune with this build: the "
                    "MPI library's Fortran bindings call its PMPI_ entry points (Open MPI), "
                    "and this libcolltune-pmpi.so has no Fortran entry points (issue 53)")
    b = pw[3]
    bad = []
    for i, forced in enumerate(_sweeps(interpose.read_profile(prof), b)):
        fp = tmp_path / f"f{i}.json"
        opts = ["--profile", str(fp)] + [f"--force={c}={a}" for c, a in forced.items()]
        got = _pw_run(pw, tmp_path / f"f{i}", opts)
        problems = ([] if got == plain else [f"{got} instead of {plain}"])
        problems += _forced_ran(interpose.read_profile(fp), forced, b)
        if problems:
            bad.append(f"{forced}: {problems}")
    assert not bad, "\n".join(bad)


def test_hpcc_checks_reader_sees_a_failure():
    """hpcc_problems is not blind: a failed residual check and errors are reported."""
    good = ("Success=1\nPTRANS_residual=0\nMPIRandomAccess_Errors=0\n"
            "MPIRandomAccess_LCG_Errors=0\nMPIFFT_maxErr=6e-16\nSolution Validates\n"
            + "5 tests completed and passed residual checks.\n"
            + "0 tests completed and failed residual checks.\n" * 1
            + "1 tests completed and passed residual checks,\n"
            + "Found 0 errors in 8 locations (passed).\n" * 4)
    assert hpcc_problems(good) == []
    assert hpcc_problems(good.replace("0 tests completed and failed",
                                      "1 tests completed and failed"))
    assert hpcc_problems(good.replace("Found 0 errors in 8 locations (passed).",
                                      "Found 3 errors in 8 locations (failed).", 1))
    assert hpcc_problems(good.replace("MPIFFT_maxErr=6e-16", "MPIFFT_maxErr=0.5"))
    assert pw_result("!    total energy              =     -15.61435403 Ry\n"
                     "     convergence has been achieved in   7 iterations\n") == (
        "-15.61435403", 7)
