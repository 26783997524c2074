"""Build the native part against one MPI library, into a cache keyed by its identity."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from colltune.base.errors import ColltuneError
from colltune.mpi.libraries import MPI
from colltune.base.paths import cache_dir, cache_lock, native_dir
from colltune.mpi import libraries as mpi_mod

PROGRAMS = ("colltune-verify", "colltune-bench", "colltune-selftest", "colltune-pingpong",
            "colltune-probe", "colltune-load", "colltune-heat", "colltune-stream", "colltune-which",
            "libcolltune-pmpi.so", "colltune-plaincolls", "colltune-heat-plain",
            "colltune-callcost", "colltune-osu-latency", "colltune-phases",
            "colltune-traffic-count", "colltune-gamma", "colltune-observecolls")
# SimGrid's SMPI (--mpi smpi): the programs simulated studies run; the others (preloaded
# libraries, the applications) are not built for the simulator
SMPI_PROGRAMS = ("colltune-verify", "colltune-bench", "colltune-pingpong")


def programs(mpi: MPI) -> tuple[str, ...]:
    """The programs a build for `mpi` has."""
    return SMPI_PROGRAMS if mpi.simulated else PROGRAMS


class BuildError(ColltuneError, RuntimeError):
    """The native part did not build; the message carries the compiler output."""


@dataclass(frozen=True)
class Build:
    mpi: MPI
    dir: Path

    def program(self, name: str) -> Path:
        if self.mpi.simulated and name not in SMPI_PROGRAMS:
            raise BuildError(f"{name} is not built for SimGrid's SMPI (--mpi smpi builds "
                             f"{', '.join(SMPI_PROGRAMS)})")
        return self.dir / name


def build_dir(mpi: MPI) -> Path:
    """One build per (MPI library, source tree): two checkouts never share a build."""
    src = hashlib.sha1(str(native_dir().resolve()).encode()).hexdigest()[:8]
    return cache_dir() / "build" / f"{mpi.identity}-src{src}"


def _sources_stamp(src: Path) -> float:
    return max(p.stat().st_mtime for p in src.rglob("*") if p.is_file())


def build(mpi: MPI, force: bool = False, verbose: bool = False) -> Build:
    """Configure (once) and build (incrementally) the native part for `mpi`."""
    out = build_dir(mpi)
    with cache_lock(f"build-{out.name}", f"building into {out}"):
        return _build_locked(mpi, out, force, verbose)


def _build_locked(mpi: MPI, out: Path, force: bool, verbose: bool) -> Build:
    src = native_dir()
    stamp = out / "colltune-build.json"
    if force:
        shutil.rmtree(out, ignore_errors=True)
    if not force and stamp.exists() and all((out / p).exists() for p in programs(mpi)):
        meta = json.loads(stamp.read_text())
        if (meta.get("sources") == str(src)
                and meta.get("sources_mtime", 0) >= _sources_stamp(src)):
            return Build(mpi, out)
    out.mkdir(parents=True, exist_ok=True)
    env = mpi.env()
    configure_env = dict(env)
    if mpi.simulated:
        # smpicc makes shared objects for smpirun; CMake's compiler checks need real
        # executables while configuring (SimGrid's documented SMPI_PRETEND_CC)
        configure_env["SMPI_PRETEND_CC"] = "1"
    cmake = shutil.which("cmake")
    if not cmake:
        raise BuildError("cmake is not installed (Debian: apt-get install cmake)")
    steps = []
    cache = out / "CMakeCache.txt"
    if cache.exists() and f"CMAKE_HOME_DIRECTORY:INTERNAL={src}" not in cache.read_text():
        shutil.rmtree(out)  # configured from another source tree: start again
        out.mkdir(parents=True)
    if not cache.exists():
        steps.append([cmake, "-S", str(src), "-B", str(out), f"-DCMAKE_C_COMPILER={mpi.mpicc}",
                      "-DCMAKE_BUILD_TYPE=Release"])
    steps.append([cmake, "--build", str(out), "-j", str(os.cpu_count() or 2)])
    if mpi.simulated:
        steps[-1] += ["--target", *SMPI_PROGRAMS]
    for cmd in steps:
        res = subprocess.run(cmd, capture_output=not verbose, text=True,
                             env=configure_env if "-S" in cmd else env)
        if res.returncode != 0:
            log = ((res.stdout or "") + (res.stderr or "")).strip()
            raise BuildError(f"native build failed ({' '.join(cmd)}):\n{log[-6000:]}")
    stamp.write_text(json.dumps({
        "mpi": mpi.banner, "mpicc": str(mpi.mpicc), "sources": str(src),
        "sources_mtime": _sources_stamp(src),
    }))
    return Build(mpi, out)


def build_for(mpi_spec: str | None = None, force: bool = False, verbose: bool = False,
              auto_install: bool = True) -> Build:
    """Find the MPI library an `--mpi` value names (installing it if needed) and build the
    native part against it: what every command that runs MPI does first. Raises MPIError
    or BuildError (both ColltuneError) with a message for the user."""

    mpi = mpi_mod.find(mpi_spec, auto_install=auto_install)
    try:
        return build(mpi, force=force, verbose=verbose)
    except FileNotFoundError as exc:
        raise BuildError(str(exc)) from exc
