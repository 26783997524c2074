"""SimGrid's SMPI: install it on first use, describe it.

`--mpi smpi` is SimGrid 4.1's SMPI, built from the PyPI `simgrid` source
distribution into `<cache>/mpi/smpi` (the installation prefix is baked into
`smpicc` and `smpirun`, so it is built straight at that prefix). A complete
install is marked by the stamp file `.colltune-installed` holding the version and
colltune's patch level; a prefix without it is a half-done install, and one with
another patch level an outdated one: either is removed and done again.

colltune's one patch to SimGrid's source (`patch_source`, PATCH): SMPI reads the
calling thread's CPU clock on entry to and exit from every MPI call, to charge the
application's computation between calls, even with `smpi/simulate-computation:no`,
which throws the reading away. On a virtual machine that clock is a system call
(`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`), a quarter of a ring Allreduce's
simulation here. Patched, the clock is read only where the reading is used
(computation simulated, or `smpi/display-timing`); simulated times do not change
(tests/test_smpi.py; docs/simulation.md "Speed").

Why 4.1 and not Debian's `libsimgrid-dev` (3.32): 3.32 is pathologically slow on
many outstanding small messages (a pipelined Bcast at 256 ranks took 195 s there
against 1.5 s with 4.1; issue 16), so the 1024-rank points of the `scale` study
would not be feasible.

Building needs cmake, ninja (or make), a C++17 compiler and the Boost headers
(Debian: apt-get install libboost-dev); 6 minutes on an idle 2-core machine, up to
30 under load.

The memory allocator of a simulation (`allocator`): SimGrid allocates and frees a
few small objects for every simulated message (requests, communications, their
reference counts), and with a thousand ranks these outgrow the caches. Preloaded
mimalloc (Debian: libmimalloc2.0), a 1024-process ring Allreduce point costs about a
fifth less CPU (measured; that it keeps those objects closer together is a guess),
the simulated times unchanged to the digit (docs/simulation.md "Speed"). `allocator()` finds it (else
tcmalloc's minimal library, else none); `COLLTUNE_SIM_MALLOC` overrides: `off` for
the C library's malloc, or the path or name of a library to preload.
"""

from __future__ import annotations

import ctypes.util
import functools
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Callable

from colltune.base.errors import ColltuneError
from colltune.base.paths import cache_dir, cache_lock

VERSION = "4.1"
STAMP = ".colltune-installed"
PATCH = "cpu-timer-1"  # colltune's patch level (patch_source); a new one reinstalls

# (file, text, replacement): each text must occur exactly once in SimGrid VERSION's source
_TIMER_GUARD = """
/* colltune: read the thread's CPU clock only where the reading is used (computation
 * simulated, or smpi/display-timing); on virtual machines it is a system call */
static bool colltune_cpu_timer()
{
  static const bool display = simgrid::config::get_value<bool>("smpi/display-timing");
  return display || smpi_cfg_simulate_computation();
}

void smpi_bench_begin()
"""
_EDITS = (
    ("src/smpi/internals/smpi_bench.cpp", "\nvoid smpi_bench_begin()\n", _TIMER_GUARD),
    ("src/smpi/internals/smpi_bench.cpp",
     "  xbt_os_threadtimer_start(smpi_process()->timer());\n\n  sthread_enable();",
     "  if (colltune_cpu_timer())\n    xbt_os_threadtimer_start(smpi_process()->timer());\n\n"
     "  sthread_enable();"),
    ("src/smpi/internals/smpi_bench.cpp",
     "  xbt_os_timer_t timer = smpi_process()->timer();\n  xbt_os_threadtimer_stop(timer);\n",
     "  xbt_os_timer_t timer = smpi_process()->timer();\n  if (colltune_cpu_timer())\n"
     "    xbt_os_threadtimer_stop(timer);\n"),
    ("src/smpi/internals/smpi_bench.cpp",
     "  simgrid::smpi::utils::add_benched_time(xbt_os_timer_elapsed(timer));",
     "  if (colltune_cpu_timer())\n"
     "    simgrid::smpi::utils::add_benched_time(xbt_os_timer_elapsed(timer));"),
)

CMAKE_FLAGS = (
    "-Denable_python=OFF", "-Denable_model-checking=OFF", "-Denable_lto=OFF",
    "-Denable_fortran=OFF", "-Denable_sthread=OFF", "-Denable_documentation=OFF",
    "-Denable_java=OFF", "-DCMAKE_BUILD_TYPE=Release",
)
# what SMPI needs at run time: the library, the program smpirun starts (smpimain
# loads the MPI program), the replay main and graphicator (both installed by the same
# install script: `cmake --install` fails if they were not built)
TARGETS = ("simgrid", "smpimain", "smpireplaymain", "graphicator")


class SimGridError(ColltuneError, RuntimeError):
    """SimGrid could not be installed or is not usable."""


def prefix() -> Path:
    return cache_dir() / "mpi" / "smpi"


def stamp_text(version: str = VERSION, patch: str = PATCH) -> str:
    """What the stamp of a complete install holds."""
    return f"{version}\npatch: {patch}\n"


def _stamp(where: Path) -> tuple[str, str] | None:
    """(version, patch level) from the stamp at `where`, or None without one."""
    stamp = where / STAMP
    if not stamp.is_file() or not (where / "bin" / "smpicc").exists():
        return None
    lines = stamp.read_text().splitlines()
    if not lines or not lines[0].strip():
        return None
    patch = next((ln.split(":", 1)[1].strip() for ln in lines[1:] if ln.startswith("patch:")),
                 "")
    return lines[0].strip(), patch


def installed_version(where: Path | None = None) -> str | None:
    """The version of the complete install at `where` (default: the cache) with
    colltune's current patch level, or None (none, half done, or outdated)."""
    st = _stamp(where or prefix())
    return st[0] if st is not None and st[1] == PATCH else None


def patch_source(src: Path) -> None:
    """Apply colltune's edits (_EDITS) to the SimGrid source tree at `src`: each must
    apply exactly once, else SimGridError (another SimGrid than VERSION) and nothing
    is written."""
    texts: dict[Path, str] = {}
    for rel, old, new in _EDITS:
        path = src / rel
        if path not in texts:
            texts[path] = path.read_text() if path.is_file() else ""
        n = texts[path].count(old)
        if n != 1:
            raise SimGridError(f"cannot apply colltune's patch {PATCH} to {path}: the text "
                               f"{old.strip()[:60]!r} occurs {n} times there "
                               f"(SimGrid {VERSION} expected)")
        texts[path] = texts[path].replace(old, new)
    for path, text in texts.items():
        path.write_text(text)


def _missing_tools() -> list[str]:
    missing = []
    if not shutil.which("cmake"):
        missing.append("cmake (Debian: apt-get install cmake)")
    if not (shutil.which("ninja") or shutil.which("make")):
        missing.append("ninja or make (Debian: apt-get install ninja-build)")
    if not (shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")):
        missing.append("a C++17 compiler (Debian: apt-get install g++)")
    return missing


def boost_headers() -> bool:
    """Whether the C++ compiler finds the Boost headers SimGrid needs."""
    cxx = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if not cxx:
        return False
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "b.cpp"
        src.write_text("#include <boost/version.hpp>\n#include <boost/intrusive/list.hpp>\n"
                       "int main() { return BOOST_VERSION > 0 ? 0 : 1; }\n")
        res = subprocess.run([cxx, "-fsyntax-only", str(src)], capture_output=True, text=True)
        return res.returncode == 0


def check_prerequisites() -> None:
    """Raise SimGridError naming everything missing for the build."""
    missing = _missing_tools()
    if not boost_headers():
        missing.append("the Boost C++ headers (Debian: apt-get install libboost-dev)")
    if missing:
        raise SimGridError(f"SimGrid {VERSION} (--mpi smpi) is built from source on first use "
                           "and needs: " + "; ".join(missing))


def _download_sdist(dest: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "-q",
           "--no-deps", "--no-binary", ":all:", "-d", str(dest), f"simgrid=={VERSION}"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    found = sorted(dest.glob(f"simgrid-{VERSION}*.tar.gz"))
    if res.returncode != 0 or not found:
        raise SimGridError(f"pip could not download the simgrid=={VERSION} source distribution: "
                           f"{(res.stderr or res.stdout).strip()[-1500:]}")
    return found[0]


_STEP = re.compile(r"^\[(\d+)/(\d+)\]")


def _run_logged(cmd: list[str], cwd: Path, log: Path,
                progress: Callable[[int, int, str], None] | None) -> None:
    """Run a build step, its output appended to `log`; ninja's [n/N] lines go to
    `progress(n, N, line)`. Raises SimGridError with the log's tail on failure."""
    with open(log, "a") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        fh.flush()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            fh.write(line)
            m = _STEP.match(line)
            if m and progress is not None:
                progress(int(m.group(1)), int(m.group(2)), line.strip())
        rc = proc.wait()
    if rc != 0:
        tail = "".join(log.read_text().splitlines(keepends=True)[-40:])
        raise SimGridError(f"building SimGrid failed ({' '.join(cmd[:2])}..., log {log}):\n{tail}")


def install(progress: Callable[[int, int, str], None] | None = None,
            say: Callable[[str], None] | None = None, jobs: int | None = None) -> Path:
    """Install SimGrid VERSION into prefix() unless complete there; returns its bin dir.

    `progress(n, total, line)` gets ninja's steps; `say` gets one line per phase."""
    where = prefix()
    if installed_version(where) == VERSION:
        return where / "bin"
    check_prerequisites()
    with cache_lock("mpi-smpi", f"installing SimGrid {VERSION}"):
        if installed_version(where) == VERSION:  # installed while we waited
            return where / "bin"
        return _install_locked(where, progress, say or (lambda text: None), jobs)


def _install_locked(where: Path, progress, say, jobs) -> Path:
    if where.exists():
        st = _stamp(where)
        say(f"removing the SimGrid {st[0]} install at {where}: built without colltune's patch "
            f"{PATCH}" if st is not None else
            f"removing an incomplete SimGrid install at {where}")
        shutil.rmtree(where)
    work = cache_dir() / "mpi" / "smpi-build"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    log = work / "build.log"
    say(f"installing SimGrid {VERSION} (SMPI) into {where}: pip download of the source, "
        f"then a build of 6 to 30 minutes on 2 cores, as loaded (log: {log})")
    sdist = _download_sdist(work)
    with tarfile.open(sdist) as tar:
        tar.extractall(work, filter="data")
    src = next(p for p in work.iterdir() if p.is_dir() and p.name.startswith("simgrid-"))
    patch_source(src)
    bdir = src / "build"
    bdir.mkdir()
    ninja = shutil.which("ninja")
    gen = ["-G", "Ninja"] if ninja else []
    jobs = jobs or os.cpu_count() or 2
    say("configuring (cmake)")
    _run_logged(["cmake", *gen, f"-DCMAKE_INSTALL_PREFIX={where}", *CMAKE_FLAGS, ".."],
                bdir, log, None)
    say(f"compiling ({jobs} jobs)")
    tool = [ninja] if ninja else ["make"]
    _run_logged([*tool, f"-j{jobs}", *TARGETS], bdir, log, progress)
    say("installing")
    # not `ninja install`: that builds the default target first (every example)
    _run_logged(["cmake", "--install", "."], bdir, log, None)
    if not (where / "bin" / "smpicc").exists() or not (where / "bin" / "smpirun").exists():
        raise SimGridError(f"SimGrid installed into {where} but smpicc/smpirun are missing "
                           f"(log {log})")
    (where / STAMP).write_text(stamp_text())
    shutil.rmtree(work, ignore_errors=True)
    return where / "bin"


# allocators tried in turn by `allocator()` (their ctypes.util.find_library names)
ALLOCATORS = ("mimalloc", "tcmalloc_minimal")


@functools.lru_cache(maxsize=None)
def _find_allocator() -> str | None:
    for name in ALLOCATORS:
        found = ctypes.util.find_library(name)
        if found:
            return found
    return None


def allocator() -> str | None:
    """The memory allocator to preload into `smpirun` (a library name or path), or None
    for the C library's malloc. `COLLTUNE_SIM_MALLOC`: unset or `auto` (the first of
    ALLOCATORS installed), `off`, or a library (a path that must exist, or a name
    such as libmimalloc.so.2 that the dynamic loader finds)."""
    choice = os.environ.get("COLLTUNE_SIM_MALLOC", "auto").strip()
    if choice in ("", "auto"):
        return _find_allocator()
    if choice in ("off", "none", "glibc", "libc"):
        return None
    if "/" in choice:
        if not Path(choice).is_file():
            raise SimGridError(f"COLLTUNE_SIM_MALLOC={choice}: no such file (a memory "
                               "allocator library to preload into smpirun, or 'off' or "
                               "'auto')")
        return choice
    if not ctypes.util.find_library(choice.removeprefix("lib").split(".so")[0]):
        raise SimGridError(f"COLLTUNE_SIM_MALLOC={choice}: the dynamic loader does not know "
                           "this library (give its path, or 'off' or 'auto')")
    return choice


def preload_env(env: dict[str, str]) -> str | None:
    """Put `allocator()` in front of env's LD_PRELOAD (changed in place); returns it."""
    lib = allocator()
    if lib:
        pre = env.get("LD_PRELOAD")
        env["LD_PRELOAD"] = f"{lib}:{pre}" if pre else lib
    return lib


def version_of(bindir: Path) -> str:
    """SimGrid version of the install whose bin dir is `bindir` (stamp, else smpicc)."""
    v = installed_version(bindir.parent)
    if v:
        return v
    try:
        out = subprocess.run([str(bindir / "smpicc"), "--version"], capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    m = re.search(r"(\d+\.\d+(?:\.\d+)?)", out.stdout + out.stderr)
    return m.group(1) if m else "unknown"
