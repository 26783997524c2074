"""Background load and load-aware selection (docs/workload.md).

Seed 004 measured MPI_Bcast on a shared cluster: the same call varied 25x between runs,
the best algorithm changed from run to run, and a probe of the network taken just
before (HP2P-like: 1000 iterations of 4 KB exchanges between random pairs) correlated
92 % with the Bcast latency. This module makes that load something a study can set:

- **Load levels** (`LoadLevel`): a pattern of background traffic (`pairs`: random pairs
  each round, `alltoall`: bursts to every other process, `hot`: everyone sends to one
  node), its message size, messages in flight per partner (`window`), duty cycle
  (fraction of each period spent sending) and the generator's process count. Built-in
  levels: `none`, `light`, `medium`, `heavy` (LEVELS); a study may define its own.
- **The generator** (`generator_launch`, `start_generator`): `colltune-load`
  (native/tools/loadgen.c) as an MPI job of its own, started in the background for the
  duration of a launch (launch.Background) and stopped with it. Locally it runs on
  the same machine as the measured processes: on a 2-core machine it takes CPU time
  from them as much as it loads shared memory, and the numbers say so.
- **The probe index of a launch** (`probe`): colltune-probe run right before the
  measured launch, its median exchange time in µs (`probe_us`, the absolute index the
  rules' thresholds are written in) and its ratio to the quiet median of the same
  study (`load_index`; 1 = as quiet as the quietest level measured).
- **What a level's generator does** (`effect`): the probe, a ping-pong and a Bcast
  under every level.

The analysis of the measurements (correlations, best algorithm per level, load
classes) is analysis/load.py; the held-out regret of load-aware rules is
tuning/regret.py.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Any

from colltune.base.errors import ColltuneError, did_you_mean
from colltune.base.lazy import LazyModule
from colltune.mpi.placement import Placement

from colltune.drivers.run import parse_records, run_launch
from colltune.base.units import parse_size
from colltune.mpi import launch
from colltune.drivers import p2p
from colltune.drivers.bench import SimLoad
from colltune.drivers import bench as bench_mod
from colltune.base.units import fmt_size

np = LazyModule("numpy")
pd = LazyModule("pandas")

PATTERNS = ("pairs", "alltoall", "hot")
NONE = "none"
PROBE_SIZE = 4096
PROBE_ITERATIONS = 300  # per launch of a study (the seed's 1000 take ~1 s per launch here)


class LoadError(ColltuneError, ValueError):
    """A load level or an analysis that cannot be done; the message says why."""


@dataclass(frozen=True)
class LoadLevel:
    """Background traffic of one load level; `np` 0 (level `none`): no generator."""

    name: str
    pattern: str = "pairs"
    np: int = 2
    size: int = 65536
    window: int = 4
    duty: float = 1.0
    period_ms: float = 50.0

    @property
    def quiet(self) -> bool:
        return self.np == 0

    def describe(self) -> str:
        if self.quiet:
            return "no background traffic"

        return (f"{self.pattern}, {self.np} processes, {fmt_size(self.size)} x {self.window} in "
                f"flight, duty {self.duty:g} of {self.period_ms:g} ms")

    def args(self, duration: float = 0.0) -> list[str]:
        return ["--pattern", self.pattern, "--size", str(self.size), "--window", str(self.window),
                "--duty", repr(float(self.duty)), "--period-ms", repr(float(self.period_ms)),
                "--duration", repr(float(duration))]


LEVELS: dict[str, LoadLevel] = {
    NONE: LoadLevel(NONE, np=0),
    "light": LoadLevel("light", "pairs", 2, 4096, 1, 0.25),
    "medium": LoadLevel("medium", "pairs", 2, 65536, 4, 0.6),
    "heavy": LoadLevel("heavy", "alltoall", 2, 1 << 20, 4, 1.0),
}
LEVEL_KEYS = {"pattern": "'pairs', 'alltoall' or 'hot'", "np": "generator processes (>= 2)",
              "size": "bytes per message, e.g. '64K'", "window": "messages in flight (>= 1)",
              "duty": "fraction of each period spent sending, 0 < duty <= 1",
              "period_ms": "length of a duty-cycle period in ms (>= 1)"}


def parse_level(key: str, name: str, table: Any) -> LoadLevel:
    """A level written in a study (`[study.load_levels.NAME]`), checked."""

    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_\-]*", name):
        raise LoadError(f"{key}: level name '{name}' should be letters, digits, '_' or '-'")
    if name == NONE:
        raise LoadError(f"{key}: '{NONE}' is the level without a generator; it cannot be "
                        "redefined")
    if not isinstance(table, dict):
        raise LoadError(f"{key}: expected a table with keys {', '.join(LEVEL_KEYS)}")
    for k in table:
        if k not in LEVEL_KEYS:
            raise LoadError(f"{key}.{k}: unknown key{did_you_mean(k, LEVEL_KEYS)}; valid: "
                            f"{', '.join(LEVEL_KEYS)}")
    base = asdict(LEVELS.get(name, LoadLevel(name)))
    base["name"] = name
    for k, v in table.items():
        where = f"{key}.{k}"
        if k == "pattern":
            if v not in PATTERNS:
                raise LoadError(f"{where}: {v!r} is not one of {', '.join(PATTERNS)}"
                                f"{did_you_mean(v, PATTERNS)}")
        elif k == "size":
            try:
                v = parse_size(str(v)) if not isinstance(v, int) or isinstance(v, bool) else v
            except ValueError as exc:
                raise LoadError(f"{where}: {exc}") from None
            if v < 0:
                raise LoadError(f"{where}: {v} is not a size")
        elif k in ("np", "window"):
            if isinstance(v, bool) or not isinstance(v, int) or v < (2 if k == "np" else 1):
                raise LoadError(f"{where}: {v!r}: {LEVEL_KEYS[k]}")
        elif k in ("duty", "period_ms"):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise LoadError(f"{where}: {v!r}: {LEVEL_KEYS[k]}")
            v = float(v)
            if (k == "duty" and not 0 < v <= 1) or (k == "period_ms" and v < 1):
                raise LoadError(f"{where}: {v!r}: {LEVEL_KEYS[k]}")
        base[k] = v
    return LoadLevel(**base)


def resolve_levels(names: list[str], defined: dict[str, LoadLevel]) -> dict[str, LoadLevel]:
    """The levels a study names, from its own definitions or the built-in ones."""
    out = {}
    known = {**LEVELS, **defined}
    for i, n in enumerate(names):
        if n not in known:
            raise LoadError(f"study.load[{i}]: unknown level '{n}'{did_you_mean(n, known)}; "
                            f"built in: {', '.join(LEVELS)}; others need a "
                            f"[study.load_levels.{n}] table")
        out[n] = known[n]
    return out


# ------------------------------------------------------------------ running


def generator_launch(build, level: LoadLevel, duration: float = 0.0, placement=None,
                     stop_file: str | None = None):
    """The Launch of the generator for `level` (not started). Locally: processes not
    bound to cores (they share the machine with the measured job, which is)."""

    if level.quiet:
        raise LoadError(f"level '{level.name}' has no generator")
    prog = build.program("colltune-load")
    if not prog.exists():
        raise LoadError(f"{prog} is missing: this build predates it; run `colltune build "
                        "--force`")
    if placement is None:
        placement = Placement(mapping="core", bind=False)
    else:
        from dataclasses import replace

        placement = replace(placement, bind=False)
    extra = ["--stop-file", stop_file] if stop_file else []
    return launch.prepare(build.mpi, level.np, [str(prog), *level.args(duration), *extra],
                          placement=placement)


class Generator:
    """The generator of one level running in the background (launch.Background): ends
    cleanly through its stop file (its statistics come back), else is stopped as any
    launch (`stop`)."""

    def __init__(self, build, level: LoadLevel, placement=None, start_timeout: float = 60.0):
        import os
        import tempfile
        import time


        self.level = level
        fd, self.stop_file = tempfile.mkstemp(prefix="colltune-load-stop-")
        os.close(fd)
        os.unlink(self.stop_file)  # its appearance is the signal
        self.stats: dict | None = None
        for attempt in range(launch.LAUNCH_RETRIES + 1):
            self.bg = launch.start_background(generator_launch(build, level, 0.0, placement,
                                                               self.stop_file))
            self.launch = self.bg.launch
            deadline = time.monotonic() + start_timeout
            while not any('"load-ready"' in line for line in list(self.bg._out)):
                if not self.bg.running():
                    res = self.bg.stop()
                    if attempt < launch.LAUNCH_RETRIES and launch.transient_failure(res):
                        break  # the launcher failed to start (launch._TRANSIENT): again
                    raise LoadError("the load generator ended before sending: "
                                    + launch.failure_message("colltune-load", res))
                if time.monotonic() > deadline:
                    self.bg.stop()
                    raise LoadError(f"the load generator sent nothing within "
                                    f"{start_timeout:.0f} s")
                time.sleep(0.02)
            else:
                return

    def running(self) -> bool:
        return self.bg.running()

    def stop(self, grace: float = 10.0) -> dict | None:
        """Ask it to end (the stop file), wait up to `grace` seconds, then stop what is
        left; its statistics (None when it had to be killed)."""
        import os
        import pathlib

        if self.bg.result is None:
            pathlib.Path(self.stop_file).touch()
            res = self.bg.wait(timeout=grace)
            self.stats = parse_generator_output(res.stdout)
        try:
            os.unlink(self.stop_file)
        except OSError:
            pass
        return self.stats


def start_generator(build, level: LoadLevel, placement=None) -> Generator:
    """Start the generator of `level` in the background and return once its traffic
    flows (its first round is done); LoadError if it ends before."""
    return Generator(build, level, placement)


def run_generator(ln, timeout: float | None = None) -> dict:
    """Run the generator's launch (`generator_launch`) in the foreground to its end;
    its statistics (LoadError when it failed or printed none)."""
    res = run_launch(ln, name="colltune-load", error=LoadError, timeout=timeout, strict=False)
    stats = parse_generator_output(res.stdout)
    if stats is None:
        raise LoadError("colltune-load printed no statistics")
    return stats


def parse_generator_output(stdout: str) -> dict | None:
    """The generator's statistics (its "load" record), None when it printed none."""
    return next((r for r in parse_records(stdout) if r.get("kind") == "load"), None)


def probe(build, np: int, iterations: int = PROBE_ITERATIONS, size: int = PROBE_SIZE,
          timeout: float = 300) -> dict:
    """colltune-probe on `np` processes (placement: the current launch session's)."""

    rec, _notes = p2p.run_probe(build, p2p.ProbeSpec(np=max(2, np), size=size,
                                                     iterations=iterations, warmup=10),
                                timeout=timeout)
    return rec


# ------------------------------------------------------------------ simulation

# SimGrid settings of a simulated launch with load (added to launch.SMPI_CFG): MPI_Test,
# which the generator's rank 0 calls once a round to see whether the measured ranks are
# done, costs no simulated time (SMPI's default injects 100 µs into every call, which
# would put a pause into every round of the generator)
SIM_CFG = ("smpi/test:0",)


def sim_level(level: LoadLevel) -> LoadLevel:
    """The level as a simulation runs it, checked: its `np` generator ranks run inside
    the measured launch, one a node on other nodes of the platform, continuously (a duty
    cycle would wait on the wall clock, which a simulation without simulated
    computation does not advance: the intensity is the message size and the messages
    in flight)."""
    if not level.quiet and level.duty < 1:
        raise LoadError(f"level '{level.name}': duty {level.duty:g}: a simulated generator "
                        "sends continuously (duty 1); set its intensity with size, window "
                        "and np")
    return level


def sim_seed(key: str, round_: int) -> int:
    """The generator's seed of one launch: from its unit key and round, so that every
    launch, and the same launch in another round, draws other pairings (the load
    changes between runs although the simulation is deterministic)."""
    import hashlib

    return int(hashlib.sha1(f"{key}#{round_}".encode()).hexdigest()[:12], 16)


def sim_load(level: LoadLevel, key: str, round_: int,
             probe_iterations: int = PROBE_ITERATIONS, probe_size: int = PROBE_SIZE):
    """bench.SimLoad of a simulated launch under `level` (np 0 for `none`: the probe
    alone)."""

    sim_level(level)
    if level.quiet:
        return SimLoad(np=0, probe_iterations=probe_iterations, probe_size=probe_size)
    return SimLoad(np=level.np, pattern=level.pattern, size=level.size, window=level.window,
                   seed=sim_seed(key, round_), probe_iterations=probe_iterations,
                   probe_size=probe_size)


# ------------------------------------------------------------------ what the generator does

EFFECT_COLUMNS = ["level", "what", "size", "latency_us", "ratio", "probe_us", "gen_MBps",
                  "gen_busy"]


def effect(build, levels: list[LoadLevel], np: int = 2, sizes=(8, 65536, 1 << 20),
           bcast_algo: str = "native", probe_iterations: int = PROBE_ITERATIONS,
           timeout: float = 600) -> pd.DataFrame:
    """What each level's generator does to a measurement: under every level (the
    generator running in the background), the probe, an osu_latency-style ping-pong and
    an OSU-timed Bcast (`bcast_algo`) at `sizes`, with the generator's own send rate;
    `ratio` is the latency over the first level's (the quiet one, normally)."""
    import pandas as pd


    rows = []
    for level in levels:
        gen = start_generator(build, level) if not level.quiet else None
        try:
            pr = probe(build, np, probe_iterations, timeout=timeout)
            pp, _ = p2p.run_pingpong(build, p2p.PingpongSpec(np=2, sizes=tuple(sizes), reps=3),
                                     timeout=timeout)
            bc, _ = bench_mod.run(build, bench_mod.BenchSpec("bcast", [bcast_algo], np,
                                                             list(sizes)), timeout=timeout)
        finally:
            stats = gen.stop() if gen is not None else None
        common = {"level": level.name, "probe_us": pr.get("iter_wall_us"),
                  "gen_MBps": stats.get("rate_MBps") if stats else None,
                  "gen_busy": stats.get("busy_fraction") if stats else None}
        for r in pp:
            rows.append({**common, "what": "pingpong", "size": int(r["size"]),
                         "latency_us": float(r.get("median_us") or r.get("latency_us"))})
        for r in bc:
            rows.append({**common, "what": f"bcast {bcast_algo} np={np}", "size": int(r["size"]),
                         "latency_us": float(r["median_us"])})
    df = pd.DataFrame(rows)
    base = df[df["level"] == levels[0].name].set_index(["what", "size"])["latency_us"]
    df["ratio"] = [lat / base.get((w, s), math.nan)
                   for w, s, lat in zip(df["what"], df["size"], df["latency_us"])]
    return df[EFFECT_COLUMNS]
