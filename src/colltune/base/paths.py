"""Where colltune keeps its sources, builds and installed MPI libraries."""

from __future__ import annotations

import fcntl
import os
import sys
from contextlib import contextmanager
from pathlib import Path


def repo_root() -> Path:
    """The source tree (colltune is installed in editable mode from it)."""
    return Path(__file__).resolve().parents[3]


def native_dir() -> Path:
    """The C sources (native/), or $COLLTUNE_NATIVE_DIR."""
    env = os.environ.get("COLLTUNE_NATIVE_DIR")
    path = Path(env) if env else repo_root() / "native"
    if not (path / "CMakeLists.txt").is_file():
        raise FileNotFoundError(
            f"colltune's C sources are not at {path}: install colltune in editable mode "
            "from its source tree (pip install -e .) or set COLLTUNE_NATIVE_DIR"
        )
    return path


def cache_dir() -> Path:
    """Builds and side-installed MPI libraries: $COLLTUNE_CACHE, else ~/.cache/colltune."""
    env = os.environ.get("COLLTUNE_CACHE")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "colltune"
    base.mkdir(parents=True, exist_ok=True)
    return base


@contextmanager
def cache_lock(name: str, what: str):
    """Hold the cache's lock `name` (a file under cache_dir()/locks) while installing or
    building into the cache, so that two colltune commands started at once (two sweeps
    on a fresh machine, parallel test runs) do not write the same directory together.
    The second one waits, saying for what, and then finds the work done."""
    d = cache_dir() / "locks"
    d.mkdir(exist_ok=True)
    with open(d / f"{name}.lock", "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"colltune: waiting for another colltune command to finish {what}",
                  file=sys.stderr, flush=True)
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
