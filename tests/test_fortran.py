"""Fortran programs under the interposition library, with the distribution's MPI libraries
(Debian's Open MPI 4.1 and MPICH 4.0, `colltune build --mpi /usr/bin/mpicc.openmpi`), and
a program of one MPI library under a build for the other (docs/interposition.md,
"Fortran" and "Another MPI library").

native/tests/fortcolls.F90 calls every intercepted collective (in place too, MPI_BOTTOM,
a sub-communicator) through mpif.h, `use mpi` and `use mpi_f08` and checks its results.
Skipped, with the reason, where gfortran or the Debian MPI packages are not installed
(.ci/run installs them when it runs as root)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from colltune.drivers import registry
from colltune.mpi import launch
from colltune.mpi import libraries as mpi_mod
from colltune.mpi.build import build as build_native
from colltune.rules import interpose
from conftest import ROOT, colltune

SOURCE = ROOT / "native" / "tests" / "fortcolls.F90"
DEBIAN = {  # kind: (C wrapper, Fortran wrapper, Debian packages)
    "openmpi": ("/usr/bin/mpicc.openmpi", "/usr/bin/mpifort.openmpi",
                "openmpi-bin libopenmpi-dev"),
    "mpich": ("/usr/bin/mpicc.mpich", "/usr/bin/mpifort.mpich", "mpich libmpich-dev"),
}
# mpif.h has no interfaces: gfortran >= 10 needs the flag every such program uses
IFACES = {"mpifh": ["-DIFACE_MPIFH", "-fallow-argument-mismatch"], "mpi": ["-DIFACE_MPI"],
          "f08": ["-DIFACE_F08"]}
NP = 3  # odd; the program's sub-communicators have 2 and 1 processes
# what fortcolls calls: the collectives the interposition library intercepts
CALLED = ("bcast", "reduce", "gather", "allgather", "allreduce", "alltoall", "alltoallv",
          "scatter", "barrier", "reduce_scatter_block", "reduce_scatter", "allgatherv")
# pmpi_fortran_table.h: every line's function (Gatherv, Scatterv: the C MPI_ name, the
# library's own or colltune's)
TABLE = (*CALLED, "gatherv", "scatterv")


def _debian(kind: str, tmp_path_factory):
    cc, fc, pkgs = DEBIAN[kind]
    if not Path(cc).exists() or not Path(fc).exists():
        pytest.skip(f"Debian's {kind} is not installed ({cc}, {fc}: apt-get install {pkgs})")
    if shutil.which("gfortran") is None:
        pytest.skip("gfortran is not installed (apt-get install gfortran)")
    build = build_native(mpi_mod.find(cc))
    out = tmp_path_factory.mktemp(f"fortcolls-{kind}")
    programs = {}
    for iface, flags in IFACES.items():
        exe = out / f"fortcolls-{iface}"
        res = subprocess.run([fc, "-O1", *flags, str(SOURCE), "-o", str(exe)],
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, f"{fc} {iface}:\n{res.stdout}{res.stderr}"
        programs[iface] = exe
    return build, programs


@pytest.fixture(scope="module")
def deb_openmpi(tmp_path_factory):
    return _debian("openmpi", tmp_path_factory)


@pytest.fixture(scope="module")
def deb_mpich(tmp_path_factory):
    return _debian("mpich", tmp_path_factory)


def _pair(request, kind):
    return request.getfixturevalue("deb_openmpi" if kind == "openmpi" else "deb_mpich")


def _nm(path: Path, *opts: str) -> set[str]:
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed")
    res = subprocess.run([nm, "-D", "-P", *opts, str(path)], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    return {ln.split()[0] for ln in res.stdout.splitlines() if ln.strip()}


def _launch_argv(build, program, np=NP, env=None) -> list[str]:
    return launch.prepare(build.mpi, np, [str(program)], env or {}).argv


# ---- the names ------------------------------------------------------------------


def test_fortran_names_from_the_library_openmpi(deb_openmpi):
    """Open MPI's bindings call PMPI_<Coll>: every Fortran name of every intercepted
    collective it exports is defined (mpif.h manglings, mpi_f08, its internal ompi_*_f),
    and MPI_Init/_thread/Finalize; the profiling names stay the library's."""
    build, _ = deb_openmpi
    syms = _nm(build.program("libcolltune-pmpi.so"), "--defined-only")
    for c in [*TABLE, "init", "init_thread", "finalize"]:
        for sym in (f"mpi_{c}_", f"mpi_{c}__", f"mpi_{c}", f"MPI_{c.upper()}",
                    f"mpi_{c}_f08_", f"ompi_{c}_f"):
            assert sym in syms, sym
        assert f"pmpi_{c}_" not in syms and f"PMPI_{c.upper()}" not in syms


def test_fortran_names_from_the_library_mpich(deb_mpich):
    """MPICH's bindings call the C MPI_<Coll> (colltune's, once), but for a few mpi_f08
    ones that call PMPI_: only those functions' names are wrapped, as nm of its Fortran
    library says."""
    build, _ = deb_mpich
    syms = _nm(build.program("libcolltune-pmpi.so"), "--defined-only")
    fort = Path("/usr/lib/x86_64-linux-gnu/libmpichfort.so")
    undefined = _nm(fort, "--undefined-only") if fort.exists() else set()
    for c in [*TABLE, "init", "init_thread", "finalize"]:
        name = c.capitalize()
        bypass = f"PMPI_{name}" in undefined
        assert (f"mpi_{c}_" in syms) == bypass, (c, bypass)
    assert "mpi_barrier_f08_" in syms and "mpi_init_f08_" in syms
    assert "mpi_bcast_" not in syms


# ---- every algorithm, three interfaces -------------------------------------------


def _decisions(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("colltune-pmpi: ")
            and "warning:" not in ln]


def _forced_matrix(build, program):
    """Round k forces the k-th algorithm of every collective at once, through
    `colltune run --force`; every round passes the program's checks and the verbose
    lines name the forced algorithm (or its declared fallback) for every collective."""
    names = {c: registry.names(build, c) for c in CALLED}
    rounds = max(len(v) for v in names.values())
    argv = _launch_argv(build, program)
    for k in range(rounds):
        chosen = {c: names[c][k % len(names[c])] for c in CALLED}
        forces = [a for c, algo in chosen.items() for a in ("--force", f"{c}={algo}")]
        res = colltune("run", "--mpi", str(build.mpi.mpicc), *forces, "--verbose", "--",
                       *argv, timeout=300)
        assert res.returncode == 0, (chosen, res.stdout + res.stderr[-4000:])
        assert re.search(r"fortcolls: \d+ checks passed", res.stdout), res.stdout
        lines = _decisions(res.stderr)
        for coll, algo in chosen.items():
            var = interpose.force_variable(coll)
            mine = [ln for ln in lines if ln.startswith(f"colltune-pmpi: {coll} np={NP} ")
                    and f"({var}" in ln]
            assert mine, f"{coll}/{algo}: no decision printed\n" + "\n".join(lines)
            for ln in mine:
                ran = ln.split(": ", 2)[2].split(" ", 1)[0]
                assert ran == algo or f"{coll}/{algo} ->" in ln, ln
    return rounds


@pytest.mark.parametrize("iface", list(IFACES))
@pytest.mark.parametrize("kind", ["openmpi", "mpich"])
def test_every_algorithm_forced_fortran(kind, iface, request):
    build, programs = _pair(request, kind)
    assert _forced_matrix(build, programs[iface]) >= 8


@pytest.mark.parametrize("kind", ["openmpi", "mpich"])
def test_a_wrong_algorithm_is_caught_fortran(kind, request):
    """The Fortran checks can fail: the corrupting test Bcast, forced, is caught."""
    build, programs = _pair(request, kind)
    env = {**interpose.preload(build, {}), "COLLTUNE_BCAST": "_broken"}
    ln = launch.prepare(build.mpi, NP, [str(programs["f08"])], env)
    res = launch.run(ln, timeout=120)
    assert not res.timed_out
    assert res.returncode != 0 and "FAIL rank" in res.stdout and "bcast" in res.stdout


@pytest.mark.parametrize("kind", ["openmpi", "mpich"])
def test_fortran_profile_counts_each_call_once(kind, request, tmp_path):
    """The profile of a Fortran program: each Bcast counted once (MPICH's binding calls
    the C MPI_Bcast, Open MPI's goes through colltune's Fortran entry point: never both),
    written at the Fortran MPI_Finalize."""
    build, programs = _pair(request, kind)
    for iface in ("mpifh", "f08"):
        path = tmp_path / f"{iface}.json"
        res = colltune("run", "--mpi", str(build.mpi.mpicc), "--force", "bcast=binomial",
                       "--profile", str(path), "--", *_launch_argv(build, programs[iface]))
        assert res.returncode == 0, res.stderr[-3000:]
        prof = interpose.read_profile(path)
        calls = {(e.collective, e.np, e.size_min): e.calls for e in prof.entries
                 if e.collective in ("bcast", "barrier")}
        # per communicator: two Bcasts of 20 B (integers, MPI_BOTTOM), one of 32 B, one
        # Barrier
        assert calls == {("bcast", 3, 16): 2, ("bcast", 3, 32): 1, ("barrier", 3, 0): 1,
                         ("bcast", 2, 16): 2, ("bcast", 2, 32): 1, ("barrier", 2, 0): 1,
                         ("bcast", 1, 16): 2, ("bcast", 1, 32): 1, ("barrier", 1, 0): 1}, calls


# ---- the distribution's wrappers ----------------------------------------------


def test_a_suffixed_wrapper_names_its_own_library(tmp_path):
    """/usr/bin/mpicc.mpich is MPICH even where /usr/bin/mpicc is Open MPI (Debian's
    alternatives); its launcher is the sibling with the same suffix; a wrapper without
    one gets one line saying what is missing."""
    for kind, (cc, _, pkgs) in DEBIAN.items():
        if not Path(cc).exists():
            pytest.skip(f"Debian's {kind} is not installed (apt-get install {pkgs})")
    ompi = mpi_mod.find(DEBIAN["openmpi"][0])
    mpich = mpi_mod.find(DEBIAN["mpich"][0])
    assert (ompi.kind, ompi.launcher.name) == ("openmpi", "mpirun.openmpi")
    assert (mpich.kind, mpich.launcher.name) == ("mpich", "mpiexec.mpich")
    assert ompi.version.startswith("4.") and mpich.version.startswith("4.")
    alone = tmp_path / "mpicc.alone"
    alone.symlink_to(DEBIAN["mpich"][0])
    with pytest.raises(mpi_mod.MPIError) as exc:
        mpi_mod.find(str(alone))
    assert str(exc.value) == (f"--mpi {alone}: no mpiexec.alone or mpirun.alone next to it "
                              "(the launcher of the same library)")


# ---- a program of the other library -------------------------------------------


def _warnings(text: str, prefix: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith(prefix)]


def test_another_libraries_program_runs_untouched(deb_openmpi, deb_mpich):
    """An MPICH program under colltune built for Open MPI: `colltune run` says so in one
    line before the launch and runs it without colltune; preloaded by hand, the library
    says so in one line at MPI_Init and stays off: the C program runs untouched (its
    checks pass). Where untouched is impossible (a Fortran program, whose own library's
    calls the other library takes over; an Open MPI program under the MPICH build, whose
    pointer handles would be cut to MPICH's ints) the line says so and the program stops
    at MPI_Init, with no crash and no hang."""
    ompi, _ = deb_openmpi
    mpich, fprograms = deb_mpich
    plain = mpich.program("colltune-plaincolls")
    argv = _launch_argv(mpich, plain, np=2)
    res = colltune("run", "--mpi", str(ompi.mpi.mpicc), "--force", "bcast=binomial",
                   "--verbose", "--", *argv)
    assert res.returncode == 0, res.stderr[-3000:]
    lines = _warnings(res.stderr, "colltune")
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"colltune: warning: {plain} links MPICH (") and \
        "but colltune's build is for Open MPI v4.1" in lines[0], lines
    assert "checks passed" in res.stdout
    # by hand: the library's own line, once (rank 0), and the program's checks pass
    pre = {**interpose.preload(ompi, {}), "COLLTUNE_BCAST": "binomial", "COLLTUNE_VERBOSE": "1"}
    res = launch.run(launch.prepare(mpich.mpi, 2, [str(plain)], pre), timeout=120)
    lines = _warnings(res.stderr, "colltune-pmpi")
    assert res.returncode == 0 and "checks passed" in res.stdout, res.stderr[-3000:]
    assert len(lines) == 1 and re.match(
        r"colltune-pmpi: warning: this program runs MPICH 4\.\S+ \(\S+libmpich\S*\) but "
        r"colltune's build is for Open MPI v4\.1\.\d+: it stays off, the program runs "
        "untouched", lines[0]), lines
    # a Fortran MPICH program, preloaded by hand: the line, then a clean stop
    res = launch.run(launch.prepare(mpich.mpi, 2, [str(fprograms["f08"])], pre), timeout=120)
    assert not res.timed_out and res.returncode != 0
    assert "the program cannot run with it preloaded, stopping" in res.stderr
    assert "Segmentation" not in res.stdout + res.stderr
    # the MPICH build under an Open MPI C program: handles would not survive, it stops
    pre = interpose.preload(mpich, {})
    res = launch.run(launch.prepare(ompi.mpi, 2, [str(ompi.program("colltune-plaincolls"))],
                                    pre), timeout=120)
    assert not res.timed_out and res.returncode != 0
    assert "Segmentation" not in res.stdout + res.stderr
    assert re.search(r"colltune-pmpi: warning: this program runs Open MPI v4\.1\.\d+ \(\S+\) "
                     r"but colltune's build is for MPICH 4\.\S+: the program cannot run with "
                     "it preloaded, stopping", res.stderr), res.stderr[-3000:]


def test_a_relocated_open_mpi_needs_opal_prefix(tmp_path, monkeypatch):
    """Debian's Open MPI copied under another prefix: its wrapper still compiles with the
    original headers unless OPAL_PREFIX names the new place; colltune says so in one line,
    and with OPAL_PREFIX finds the copy (its headers, its launcher)."""
    cc = Path(DEBIAN["openmpi"][0])
    if not cc.exists():
        pytest.skip(f"Debian's openmpi is not installed (apt-get install {DEBIAN['openmpi'][2]})")
    src = Path("/usr/lib/x86_64-linux-gnu")
    prefix = tmp_path / "usr"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "lib" / "x86_64-linux-gnu").mkdir(parents=True)
    shutil.copytree(src / "openmpi", prefix / "lib" / "x86_64-linux-gnu" / "openmpi",
                    symlinks=True, ignore=shutil.ignore_patterns("openmpi3"))
    shutil.copytree("/usr/share/openmpi", prefix / "share" / "openmpi")
    shutil.copy2(cc.resolve(), prefix / "bin" / "opal_wrapper")
    (prefix / "bin" / "mpicc.openmpi").symlink_to("opal_wrapper")
    (prefix / "bin" / "mpirun.openmpi").symlink_to("/usr/bin/orterun")
    monkeypatch.delenv("OPAL_PREFIX", raising=False)
    with pytest.raises(mpi_mod.MPIError) as exc:
        mpi_mod.find(str(prefix / "bin" / "mpicc.openmpi"))
    assert str(exc.value).endswith(f"outside its own installation {prefix}; a relocated Open "
                                   f"MPI needs OPAL_PREFIX={prefix}"), exc.value
    monkeypatch.setenv("OPAL_PREFIX", str(prefix))
    mpi = mpi_mod.find(str(prefix / "bin" / "mpicc.openmpi"))
    assert (mpi.kind, mpi.bindir, mpi.launcher.name) == ("openmpi", prefix / "bin",
                                                          "mpirun.openmpi")
