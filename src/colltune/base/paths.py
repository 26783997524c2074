"""Where colltune keeps its sources, builds and installed MPI libraries."""

from __future__ import annotations

import fcntl
import json
import os
import sys
from collections.abc import Callable
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


@contextmanager
def held_lock(name: str, holder: dict, *, wait: bool = True,
              busy: Callable[[dict], None] | None = None):
    """Hold the lock `name` (flock on cache_dir()/locks/NAME.lock; the kernel drops it
    when the process ends, however it ends) for as long as the block runs. `holder`
    (pid, start, what) is written into the file for whoever finds the lock taken.
    Taken by another process: `busy(its holder)` is called (it may raise to refuse),
    then, with `wait`, this one waits for it (Ctrl-C interrupts the wait); without
    `wait`, LockTaken is raised."""
    d = cache_dir() / "locks"
    d.mkdir(exist_ok=True)
    fd = os.open(d / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    with os.fdopen(fd, "r+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = _holder(fh)
            if busy is not None:
                busy(other)
            if not wait:
                raise LockTaken(other) from None
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            fh.seek(0)
            fh.truncate()
            fh.write(json.dumps(holder))
            fh.flush()
            yield
        finally:
            fh.seek(0)
            fh.truncate()
            fcntl.flock(fh, fcntl.LOCK_UN)


class LockTaken(Exception):
    """held_lock(wait=False) found the lock taken; args[0] is its holder (a dict)."""


def _holder(fh) -> dict:
    try:
        fh.seek(0)
        found = json.loads(fh.read() or "{}")
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}
