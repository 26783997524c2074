"""The one place that launches MPI programs.

Adds `--oversubscribe` (Open MPI) when more processes than cores are asked for
and `--allow-run-as-root` (Open MPI) when running as root, only then, and says
so in the notes it returns; under MPICH, oversubscription turns on yielding
progress so that waiting processes give their core away.

Placement (studies, `colltune sweep`): a `Placement` (colltune.mpi.placement) says
which launcher to use, how processes are mapped and how ranks are ordered across nodes.
`prepare` translates it into each launcher's own options:

  Open MPI 5 (prterun):  core: --map-by core, socket: --map-by package,
      node: --map-by node (hosts h:n with even n); seq: --rank-by slot,
      rr: --rank-by node (on more than one node); --bind-to core
  MPICH (hydra):  core/node: -map-by core, socket: -map-by socket, -bind-to core;
      hosts h:n (seq fills them in order), rr: -rankmap 0,1,0,1,... (node of each rank)
  Slurm (srun):  --distribution=<seq: block | rr: cyclic>:<core: block | socket:
      cyclic>, node: -N M --ntasks-per-node=Q; --cpu-bind=cores

`run` starts each launch in a session of its own and stops the whole session (the
launcher and every rank, whatever process group they made) on a timeout, an
exception, Ctrl-C or SIGTERM: no process of a launch outlives it. The policy for
process counts (`placement.check_process_counts`) is applied by the commands before
launching.

SimGrid's SMPI (`--mpi smpi`): the programs run on a simulated platform, one
`smpirun -platform FILE -hostfile FILE -np N` (see `Simulation`): the platform's
SimGrid XML and a hostfile with the host of every rank (`Platform.rank_hosts` of the
mapping and order) are written into the colltune cache, named by their content. The
platform comes from `simulate(...)` (the commands' `--platform`), else the preset
`flat`. Computation is not simulated (`smpi/simulate-computation:no`): the time of a
collective is its communication on the simulated network, plus the local copies and
reductions the platform charges (`platforms.sim_env`: COLLTUNE_SIM_CHARGE, read by
native/lib/simcharge.c), deterministic. `smpirun` runs with a faster memory allocator
preloaded when one is installed (`simgrid.allocator`: the same simulated times, less
CPU).

A sweep runs library code that calls `prepare` without knowing about placement
(bench.run); it sets the placement for a block of code with `session(...)`, which
also collects every Launch prepared and every Result run in it. A sweep of simulated
launches side by side (`colltune sweep --jobs N`) runs them in threads of its own;
`cancel_all()` stops every launch running in any thread (each one's `run` raises
`Cancelled`) and every one started after it, until `clear_cancel()`.
"""

from __future__ import annotations

import contextvars
import hashlib
import os
import queue
import shlex
import shutil
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from colltune.base.files import write_atomic
from colltune.base.paths import cache_dir
from colltune.mpi import simgrid
from colltune.mpi.libraries import MPI
from colltune.mpi.placement import (LaunchError, Placement, allocation, cores, layout,
                                    parse_hostfile, rank_nodes)
from colltune.mpi.platforms import resolve, sim_env, simgrid_cfg


@dataclass
class Launch:
    argv: list[str]
    env: dict[str, str]
    notes: list[str] = field(default_factory=list)
    nodes: int = 1  # nodes the processes are on
    ppn: int | None = None  # processes on the fullest node
    placement: Placement | None = None
    extra_env: dict[str, str] = field(default_factory=dict)  # what the caller added

    @property
    def command_line(self) -> str:
        return " ".join(self.argv)

    @property
    def shell_command(self) -> str:
        """The command as a shell would take it, forced variables first."""
        pre = [f"{k}={shlex.quote(v)}" for k, v in sorted(self.extra_env.items())]
        return " ".join(pre + [shlex.join(self.argv)])


@dataclass
class Result:
    command: str
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    notes: list[str]
    seconds: float = 0.0


# ---------------------------------------------------------------------- sessions


@dataclass
class Session:
    """Placement for the launches prepared inside `session(...)`, and what ran."""

    placement: Placement | None
    launches: list[Launch] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)
    background: list["Background"] = field(default_factory=list)  # started inside, stopped at the end


_SESSION: contextvars.ContextVar[Session | None] = contextvars.ContextVar("colltune_launch_session",
                                                                          default=None)


@contextmanager
def session(placement: Placement | None = None):
    """`with session(p) as s:` launches prepared inside use placement p (unless given
    their own) and are collected in s.launches / s.results."""
    s = Session(placement)
    token = _SESSION.set(s)
    try:
        yield s
    finally:
        _SESSION.reset(token)
        for bg in s.background:  # whatever ran beside the launches ends with the session
            bg.stop()


# ------------------------------------------------------------------- simulation

# SimGrid configuration of every simulated launch (docs/simulation.md):
SMPI_CFG = (
    # the time between MPI calls (copies, reductions, the driver's own code) is not
    # charged: results are deterministic and independent of this machine's load
    "smpi/simulate-computation:no",
    # MPI_Wtime itself costs no simulated time (its default cost of 10 ns per call
    # would be charged to the timed loops)
    "smpi/wtime:0",
    # SMPI_SHARED_MALLOC (--shared-buffers) maps one file over a buffer block by block,
    # one mapping per block: with 1 MiB blocks (SimGrid's default) 128 ranks holding
    # 2 x 128 x 2 MiB of Allgather buffers pass Linux's 65 530 mappings per process
    # (vm.max_map_count); 16 MiB blocks take 16 times fewer (the file: 16 MiB)
    "smpi/shared-malloc-blocksize:16777216",
    # the LMM solver's precision (SimGrid's default 1e-5): at 1e-5 and 1e-4, marconi100's
    # 16 nodes (512 ranks on its dragonfly) abort at the first Bcast ("maxmin.cpp:219:
    # Cannot saturate more a constraint that has no active element", a rounding residue
    # of 7.3e-5, 2.8e-4); 1e-3 runs them, and gives the same simulated times to the
    # nanosecond where 1e-5 ran (marconi100 at 256, tapems-16x12 at 192)
    "precision/work-amount:1e-3",
)
SMPI_LOG = ("root.thres:warning",)  # SimGrid's informational lines off (stderr)
DEFAULT_PLATFORM = "flat"


@dataclass(frozen=True)
class Simulation:
    """What a simulated launch runs on: a platform (colltune.platform.Platform) and
    extra SimGrid `--cfg` settings."""

    platform: object
    cfg: tuple[str, ...] = ()


_SIMULATION: contextvars.ContextVar[Simulation | None] = contextvars.ContextVar(
    "colltune_simulation", default=None)


@contextmanager
def simulate(platform, cfg: tuple[str, ...] = ()):
    """Inside, simulated launches (`--mpi smpi`) run on `platform` (a Platform or a
    spec for colltune.mpi.platforms.resolve)."""
    if isinstance(platform, str):
        platform = resolve(platform)
    token = _SIMULATION.set(Simulation(platform, tuple(cfg)))
    try:
        yield
    finally:
        _SIMULATION.reset(token)


def current_simulation() -> Simulation:
    """The simulation launches prepared now would use (the default platform outside
    `simulate`)."""
    sim = _SIMULATION.get()
    if sim is None:
        sim = Simulation(resolve(DEFAULT_PLATFORM))
    return sim


def _content_file(kind: str, suffix: str, text: str) -> Path:
    """A file under the colltune cache named by its content (written once, atomically)."""
    digest = hashlib.sha1(text.encode()).hexdigest()[:16]
    path = cache_dir() / "smpi-files" / f"{kind}-{digest}{suffix}"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
    return path


def _prepare_smpi(mpi: MPI, np: int, program: list[str], extra_env: dict[str, str] | None,
                  p: Placement | None, load_np: int = 0) -> Launch:
    sim = current_simulation()
    plat = sim.platform
    mapping = (p.mapping if p is not None and p.mapping else "core")
    order = p.order if p is not None else "seq"
    if p is not None and p.launcher != "local":
        raise LaunchError(f"launcher '{p.launcher}' with --mpi smpi: a simulation runs here, "
                          "on the simulated platform (use launcher 'local')")
    notes = []
    cores = getattr(plat, "cores", None)
    per = getattr(plat, "cores_per_node", None)
    if (cores is not None and per and np > cores and getattr(plat, "topology", "") == "flat"
            and hasattr(plat, "with_nodes")):
        # more ranks than the platform has cores: more nodes of the same kind (a flat
        # cluster grows without changing what a node or a link is)
        grown = plat.with_nodes(-(-np // per))
        notes.append(f"{np} processes on platform '{plat.name}' ({cores} cores): simulated on "
                     f"'{grown.name}', {grown.nodes} nodes of the same kind")
        plat = grown
    nodes = p.nodes if p is not None else None
    hosts = plat.rank_hosts(np - load_np, mapping, order,
                            **({"nodes": nodes} if nodes and nodes <= plat.nodes else {}))
    if load_np:  # the last ranks: a load generator on other nodes (docs/workload.md)
        hosts += plat.load_hosts(hosts, load_np)
        notes.append(f"ranks {np - load_np}..{np - 1}: load generator, one a node on "
                     f"{load_np} other node(s)")
    xml = _content_file("platform", ".xml", plat.xml())
    hostfile = _content_file("hosts", ".txt", "\n".join(hosts) + "\n")
    argv = [str(mpi.launcher), "-np", str(np), "-platform", str(xml), "-hostfile",
            str(hostfile)]
    # the platform's own settings (its network model, host speed), then ours
    argv += simgrid_cfg(plat)
    argv += [f"--cfg={c}" for c in (*SMPI_CFG, *sim.cfg)]
    argv += [f"--log={c}" for c in SMPI_LOG]
    per_node: dict[str, int] = {}
    for h in hosts:
        per_node[h] = per_node.get(h, 0) + 1
    notes.insert(0, f"simulated on platform '{plat.name}' (SimGrid {mpi.version}), mapping "
                    f"{mapping}, order {order}: {len(per_node)} node(s)")
    # the platform's charged computation (copies, reductions: native/lib/simcharge.c),
    # shown in the command like the caller's variables so that it reproduces the run
    forced = {**(sim_env(plat) if hasattr(plat, "compute") else {}), **(extra_env or {})}
    env = mpi.env()
    env.update(forced)
    # SimGrid's allocations by a faster allocator: the same simulated times, less CPU
    lib = simgrid.preload_env(env)
    if lib:
        notes.append(f"SimGrid's memory allocator: {lib} (preloaded; COLLTUNE_SIM_MALLOC=off "
                     "for the C library's malloc)")
    return Launch(argv + program, env, notes, nodes=len(per_node), ppn=max(per_node.values()),
                  placement=p, extra_env=forced)


# ---------------------------------------------------------------------- prepare


def prepare(mpi: MPI, np: int, program: list[str], extra_env: dict[str, str] | None = None, *,
            placement: Placement | None = None, load_np: int = 0) -> Launch:
    """Command line and environment to run `program` on `np` processes.

    Without a placement (and outside a `session` with one), `np` local processes
    with the library's default placement, as always. `load_np` (simulation only): the
    last load_np of the np ranks are a load generator, placed on nodes of the platform
    that the others do not use (Platform.load_hosts).
    """
    if np < 1:
        raise ValueError(f"process count {np} must be at least 1")
    s = _SESSION.get()
    if placement is None and s is not None:
        placement = s.placement
    if getattr(mpi, "simulated", False):
        ln = _prepare_smpi(mpi, np, program, extra_env, placement, load_np)
    elif load_np:
        raise LaunchError("load-generator ranks inside the measured launch are for simulation "
                          "(--mpi smpi); locally colltune-load runs as a job of its own")
    elif placement is None:
        ln = _prepare_default(mpi, np, program, extra_env)
    else:
        ln = _prepare_placed(mpi, np, program, extra_env, placement)
    if s is not None:
        s.launches.append(ln)
    return ln


# Open MPI 5's default hostfile (PRRTE): `colltune cluster env` sets it
OMPI_DEFAULT_HOSTFILE = "PRTE_MCA_prte_default_hostfile"


def _default_capacity(mpi: MPI, env: dict[str, str]) -> tuple[int, str]:
    """(processes a plain launch holds before it oversubscribes, what they are): the
    slots of Open MPI's default hostfile where the environment names one (a plain
    `mpirun` fills its hosts in order; with --oversubscribe PRRTE would put every
    process on the first host), else this machine's cores."""
    path = env.get(OMPI_DEFAULT_HOSTFILE)
    if mpi.kind == "openmpi" and path:
        try:
            return parse_hostfile(path).slots, f"slots of {path}"
        except LaunchError:
            pass  # the launcher says what is wrong with it
    return cores(), "cores"


def _prepare_default(mpi: MPI, np: int, program: list[str],
                     extra_env: dict[str, str] | None) -> Launch:
    env = mpi.env()
    notes: list[str] = []
    over = np > cores()
    if extra_env:
        env.update(extra_env)
    if mpi.kind == "mpich":
        argv = [str(mpi.launcher), "-n", str(np)]
        if over:
            env.setdefault("MPIR_CVAR_CH4_PROGRESS_THROTTLE", "1")
            env.setdefault("MPIR_CVAR_ENABLE_HEAVY_YIELD", "1")
            notes.append(f"{np} processes on {cores()} cores: MPICH progress set to yield")
    else:
        argv = [str(mpi.launcher), "-np", str(np)]
        if mpi.kind == "openmpi":
            if os.geteuid() == 0:
                argv.append("--allow-run-as-root")
                notes.append("running as root: added --allow-run-as-root")
            have, unit = _default_capacity(mpi, env)
            if np > have:
                argv.append("--oversubscribe")
                notes.append(f"{np} processes on {have} {unit}: added --oversubscribe")
    return Launch(argv + program, env, notes, nodes=1, ppn=np, extra_env=dict(extra_env or {}))


def _prepare_placed(mpi: MPI, np: int, program: list[str], extra_env: dict[str, str] | None,
                    p: Placement) -> Launch:
    alloc = allocation(p)
    used = layout(np, p, alloc)
    nodes = len(used)
    ppn = max(n for _, n, _ in used)
    over = any(n > s for _, n, s in used)
    env = mpi.env()
    notes = list(alloc.notes)
    where = "cores" if p.launcher == "local" else "slots"
    over_text = f"{np} processes on {sum(s for _, _, s in used)} {where}"
    bind = p.bind and p.mapping is not None and not over
    if p.mapping is not None and p.bind and over:
        notes.append(f"{over_text}: processes not bound to cores")
    if p.launcher == "slurm":
        argv = _srun(mpi, np, p, used, ppn, bind, over, notes, over_text)
    elif mpi.kind == "mpich":
        argv = _hydra(mpi, np, p, used, bind, over, env, notes, over_text)
    else:
        argv = _mpirun(mpi, np, p, used, bind, over, notes, over_text)
    forced = {**dict(p.env), **(extra_env or {})}  # shown in the command: it reproduces
    env.update(forced)
    return Launch(argv + program, env, notes, nodes=nodes, ppn=ppn, placement=p,
                  extra_env=forced)


def _mpirun(mpi, np, p, used, bind, over, notes, over_text) -> list[str]:
    argv = [str(mpi.launcher), "-np", str(np)]
    if mpi.kind != "openmpi":  # unknown MPI: no options we cannot vouch for
        if p.mapping is not None or p.launcher != "local":
            notes.append(f"{mpi.banner}: mapping options left out (only Open MPI and MPICH "
                         "are translated)")
        return argv
    if os.geteuid() == 0:
        argv.append("--allow-run-as-root")
        notes.append("running as root: added --allow-run-as-root")
    if p.launcher == "hostfile":
        argv += ["--host", ",".join(f"{h}:{n}" for h, n, _ in used)]
    if over:
        argv.append("--oversubscribe")
        notes.append(f"{over_text}: added --oversubscribe")
    if p.mapping is not None:
        argv += ["--map-by", {"core": "core", "socket": "package", "node": "node"}[p.mapping]]
        if len(used) > 1:
            argv += ["--rank-by", {"seq": "slot", "rr": "node"}[p.order]]
        argv += ["--bind-to", "core" if bind else "none"]
    return argv


def _hydra(mpi, np, p, used, bind, over, env, notes, over_text) -> list[str]:
    argv = [str(mpi.launcher), "-n", str(np)]
    if p.launcher == "hostfile":
        argv += ["-hosts", ",".join(f"{h}:{n}" for h, n, _ in used)]
        if len(used) > 1 and p.order == "rr":  # rank r on node r mod M (with room)
            argv += ["-rankmap", ",".join(map(str, rank_nodes([n for _, n, _ in used], "rr")))]
    if over:
        env.setdefault("MPIR_CVAR_CH4_PROGRESS_THROTTLE", "1")
        env.setdefault("MPIR_CVAR_ENABLE_HEAVY_YIELD", "1")
        notes.append(f"{over_text}: MPICH progress set to yield")
    if p.mapping is not None and bind:
        argv += ["-bind-to", "core", "-map-by", "socket" if p.mapping == "socket" else "core"]
    return argv


def _srun(mpi, np, p, used, ppn, bind, over, notes, over_text) -> list[str]:
    srun = shutil.which("srun") or "srun"
    argv = [srun, "-n", str(np), "-N", str(len(used))]
    if p.mapping == "node" or p.nodes is not None:
        argv.append(f"--ntasks-per-node={ppn}")
    kind = p.srun_mpi or {"openmpi": "pmix", "mpich": "pmi2"}.get(mpi.kind)
    if kind:
        argv.append(f"--mpi={kind}")
    first = {"seq": "block", "rr": "cyclic"}[p.order]
    second = "cyclic" if p.mapping == "socket" else "block"
    argv.append(f"--distribution={first}:{second}")
    if p.mapping is not None:
        argv.append(f"--cpu-bind={'cores' if bind else 'none'}")
    if over:
        argv.append("--overcommit")
        notes.append(f"{over_text}: added --overcommit")
    argv.append("--kill-on-bad-exit=1")
    return argv


# -------------------------------------------------------------------------- run

# Launcher errors whose text does not say what to do, and what to do.
_HINTS = (
    ("can not load PMIx library",
     "Slurm's mpi/pmix plugin loads libpmix.so by its unversioned name; install the "
     "PMIx development package (Debian: apt-get install libpmix-dev)"),
    ("There are not enough slots available",
     "more processes than slots: give the hosts more slots or run with fewer processes"),
)


def failure_message(name: str, res: Result) -> str:
    """What to tell the user when a launch exits non-zero: the program's own `error:`
    lines if it wrote any, else the tail of its error output, plus a hint for known
    launcher errors."""
    err = res.stderr.strip()
    msg = "\n".join(l[len("error:"):].strip() for l in err.splitlines()
                    if l.startswith("error:"))
    if not msg:
        msg = f"{name} failed ({res.returncode}): {err[-2000:]}"
    hints = [h for needle, h in _HINTS if needle in err]
    return msg + "".join(f"\nhint: {h}" for h in hints)


# A launch runs in a session of its own (start_new_session): the launcher leads it,
# and everything it starts stays in it, even processes that make a process group of
# their own (Open MPI's prterun puts every rank in its own group) or that outlive
# the launcher. Stopping a launch stops the whole session.

STOP_GRACE_S = 3.0  # after SIGTERM to the launcher, before SIGKILL to everything left


def _session_members(sid: int) -> list[int]:
    """Live (not zombie) processes of session `sid`, from /proc; [] where there is none."""
    pids = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return pids
    for d in entries:
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if len(fields) > 3 and fields[0] != "Z" and int(fields[3]) == sid:
            pids.append(int(d))
    return pids


def _signal_all(pids, sig) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def stop(proc: subprocess.Popen, grace: float = STOP_GRACE_S) -> None:
    """Stop a launch and everything it started: SIGTERM to the launcher (Open MPI and
    MPICH then stop their ranks and clean up), SIGKILL after `grace` seconds to every
    process still in the launch's session, then reap the launcher."""
    sid = proc.pid  # start_new_session: the launcher leads its session
    if proc.poll() is None:
        try:
            os.kill(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc.poll() is not None and not _session_members(sid):
            break
        time.sleep(0.05)
    left = _session_members(sid)
    if proc.poll() is None:
        left.append(proc.pid)
    _signal_all(left, signal.SIGKILL)
    try:
        os.killpg(sid, signal.SIGKILL)  # where /proc is not there
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - unkillable
        pass
    deadline = time.monotonic() + 5  # orphans reparented to init take a moment to go
    while _session_members(sid) and time.monotonic() < deadline:
        _signal_all(_session_members(sid), signal.SIGKILL)
        time.sleep(0.05)


class Cancelled(KeyboardInterrupt):
    """A launch stopped by `cancel_all` (another thread was interrupted)."""


_CANCEL = threading.Event()


def cancel_all() -> None:
    """Stop every launch running now, in whatever thread, and refuse new ones (their
    `run` raises Cancelled) until `clear_cancel`."""
    _CANCEL.set()


def clear_cancel() -> None:
    _CANCEL.clear()


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived (scancel, kill, a closed terminal): handled as Ctrl-C,
    so that every launch is stopped and what is measured is kept."""


@contextmanager
def interrupt_on_term():
    """Inside, SIGTERM and SIGHUP raise Terminated (a KeyboardInterrupt) in the main
    thread instead of ending Python on the spot; elsewhere it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum, frame):
        raise Terminated(signal.Signals(signum).name)

    previous = {}
    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None:
            previous[sig] = signal.signal(sig, _raise)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# Launcher failures that happen before any rank starts and that go away on a second
# try: Open MPI's PMIx server sometimes fails to start its listener thread (seen in CI
# on a quiet machine, also reported by other projects' CI; the launch printed nothing
# else). Such a launch is tried again, at most LAUNCH_RETRIES more times.
_TRANSIENT = (
    "The PMIx server's listener thread failed to start",
)
LAUNCH_RETRIES = 2
_RETRY_PAUSE_S = 1.0


def transient_failure(res: Result) -> bool:
    """Whether `res` is a launcher failure of `_TRANSIENT` before the program wrote a
    line: worth trying again."""
    return (res.returncode != 0 and not res.timed_out and not res.stdout.strip()
            and any(t in res.stderr for t in _TRANSIENT))


def run(launch: Launch, timeout: float | None = None,
        on_stdout: Callable[[str], None] | None = None) -> Result:
    """Run a launch to completion and return its output.

    `on_stdout` is called with each line of standard output as it comes (in this
    thread). On a timeout, an exception, Ctrl-C or SIGTERM the whole launch is
    stopped (see `stop`): no process of it outlives this call. A launch whose
    launcher failed to start in one of the known transient ways (`_TRANSIENT`) is
    tried again, with a note in the result saying so.
    """
    retried: list[str] = []
    for attempt in range(LAUNCH_RETRIES + 1):
        res = _run_once(launch, timeout, on_stdout)
        if attempt == LAUNCH_RETRIES or not transient_failure(res):
            break
        first = next(t for t in _TRANSIENT if t in res.stderr)
        retried.append(f"launch tried again: the launcher failed to start ({first})")
        time.sleep(_RETRY_PAUSE_S)
    if retried:
        res.notes = list(res.notes) + retried
    return res


def _run_once(launch: Launch, timeout: float | None,
              on_stdout: Callable[[str], None] | None) -> Result:
    t0 = time.monotonic()
    if _CANCEL.is_set():
        raise Cancelled("launches cancelled")
    proc = subprocess.Popen(launch.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=launch.env, start_new_session=True)
    lines: queue.Queue = queue.Queue()
    out_lines: list[str] = []
    err_chunks: list[str] = []

    def pump_out():
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def pump_err():
        err_chunks.append(proc.stderr.read())

    readers = [threading.Thread(target=pump_out, daemon=True),
               threading.Thread(target=pump_err, daemon=True)]
    for th in readers:
        th.start()
    timed_out = False
    deadline = None if timeout is None else t0 + timeout
    try:
        with interrupt_on_term():
            eof = False
            while not eof:
                wait = 0.2 if deadline is None else max(0.0, min(0.2, deadline - time.monotonic()))
                if _CANCEL.is_set():
                    raise Cancelled("launch cancelled")
                try:
                    line = lines.get(timeout=wait)
                except queue.Empty:
                    if deadline is not None and time.monotonic() >= deadline:
                        timed_out = True
                        stop(proc)
                        break
                    continue
                if line is None:
                    eof = True
                    continue
                out_lines.append(line)
                if on_stdout is not None:
                    on_stdout(line.rstrip("\n"))
            while proc.poll() is None:
                if _CANCEL.is_set():
                    raise Cancelled("launch cancelled")
                if deadline is not None and time.monotonic() >= deadline:
                    timed_out = True
                    stop(proc)
                    break
                time.sleep(0.05)
    except BaseException:
        stop(proc)
        raise
    finally:
        for th in readers:
            th.join(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            try:
                stream.close()
            except OSError:
                pass
    while True:  # what came after a timeout
        try:
            line = lines.get_nowait()
        except queue.Empty:
            break
        if line is not None:
            out_lines.append(line)
    res = Result(launch.command_line, proc.returncode, "".join(out_lines), "".join(err_chunks),
                 timed_out, launch.notes, time.monotonic() - t0)
    s = _SESSION.get()
    if s is not None:
        s.results.append(res)
    return res


USER_LAUNCHERS = ("mpirun", "mpiexec")  # a bare name in a user's command: the --mpi one's
# the launchers a user's command may start with: these, and the distribution's suffixed
# names (mpirun.openmpi, mpiexec.mpich, ...)
LAUNCHER_NAMES = ("mpirun", "mpiexec", "mpiexec.hydra", "prterun", "orterun")


def is_launcher(path: str) -> bool:
    """Whether a user's command starts with an MPI launcher (`mpirun`, `/opt/x/mpiexec`,
    `mpirun.openmpi`): its options then go to it, the program's after them."""
    name = os.path.basename(path)
    return name in LAUNCHER_NAMES or name.split(".")[0] in LAUNCHER_NAMES


def _np_of(argv: list[str]) -> int | None:
    """The process count of a launcher command line (-np N, -n N, --np N, -np=N)."""
    for i, a in enumerate(argv[1:], start=1):
        name, eq, val = a.partition("=")
        if name in ("-np", "-n", "--np", "--n", "-c"):
            text = val if eq else (argv[i + 1] if i + 1 < len(argv) else "")
            return int(text) if text.isdigit() else None
    return None


def user_command(mpi: MPI, argv: list[str]) -> tuple[list[str], list[str]]:
    """A user's command line as `colltune run` runs it, and what was done to it (one
    line each): a bare `mpirun`/`mpiexec` is the --mpi library's own launcher (the one
    the program was built with, e.g. a virtual environment's, not another on PATH);
    Open MPI's launcher run as root gets --allow-run-as-root; more processes than this
    machine's cores, with no oversubscription option, get a one-line hint (the
    launcher's refusal, "not enough slots", would come without one)."""
    argv = list(argv)
    notes: list[str] = []
    if not argv or not is_launcher(argv[0]):
        return argv, notes
    if "/" not in argv[0] and argv[0] in USER_LAUNCHERS and not mpi.simulated:
        own = mpi.bindir / argv[0]
        if not own.exists():
            own = mpi.launcher
        argv[0] = str(own)
        notes.append(f"{os.path.basename(argv[0])} is {mpi.banner}'s: {argv[0]} (--mpi)")
    # whose launcher it is: a distribution's suffix says (mpiexec.mpich under a build for
    # Open MPI is MPICH's, and takes no Open MPI option), else the --mpi library's
    suffix = os.path.basename(argv[0]).partition(".")[2]
    kind = {"openmpi": "openmpi", "mpich": "mpich", "hydra": "mpich"}.get(suffix, mpi.kind)
    if kind == "openmpi":
        if os.geteuid() == 0 and "--allow-run-as-root" not in argv:
            argv.insert(1, "--allow-run-as-root")
            notes.append("running as root: added --allow-run-as-root")
        n = _np_of(argv)
        if (n is not None and n > cores() and "--oversubscribe" not in argv
                and not any(a.startswith(("--host", "-H", "--hostfile", "--map-by"))
                            for a in argv)):
            notes.append(f"hint: {n} processes on {cores()} cores: Open MPI refuses more "
                         "processes than slots; add --oversubscribe after the launcher "
                         "(the processes then share cores)")
    elif kind == "mpich":
        n = _np_of(argv)
        if n is not None and n > cores():
            notes.append(f"hint: {n} processes on {cores()} cores: they share cores; "
                         "MPICH's progress yields with MPIR_CVAR_CH4_PROGRESS_THROTTLE=1")
    return argv, notes


def run_command(argv: list[str], extra_env: dict[str, str]) -> int:
    """Run a user's command line (`mpirun -np 4 ./app`, `srun ./app`) with `extra_env`
    added to the environment, its output straight to the terminal. It runs in a
    session of its own, stopped as a launch is (see `stop`) on Ctrl-C or SIGTERM.
    Returns its exit status."""
    env = dict(os.environ)
    env.update(extra_env)
    try:
        proc = subprocess.Popen(argv, env=env, start_new_session=True)
    except OSError as exc:
        raise LaunchError(f"{argv[0]}: cannot run: {exc.strerror or exc}") from None
    try:
        with interrupt_on_term():
            return proc.wait()
    except BaseException:
        stop(proc)
        raise


# ------------------------------------------------------------------ background jobs


class Background:
    """A launch running beside others (the load generator of docs/workload.md): started
    in a session of its own like every launch, its output kept in memory by reader
    threads, stopped with `stop` (SIGTERM to the launcher, then SIGKILL to everything
    left of it, as `stop` above). Started inside a `session`, it is stopped when the
    session ends, whatever happens in between; `stop` can be called more than once."""

    def __init__(self, launch: Launch):
        self.launch = launch
        self.t0 = time.monotonic()
        self._out: list[str] = []
        self._err: list[str] = []
        self.result: Result | None = None
        self.proc = subprocess.Popen(launch.argv, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=launch.env,
                                     start_new_session=True)
        self._readers = [threading.Thread(target=self._pump, args=(self.proc.stdout, self._out),
                                          daemon=True),
                         threading.Thread(target=self._pump, args=(self.proc.stderr, self._err),
                                          daemon=True)]
        for th in self._readers:
            th.start()
        s = _SESSION.get()
        if s is not None:
            s.launches.append(launch)
            s.background.append(self)

    @staticmethod
    def _pump(stream, sink: list[str]) -> None:
        for line in stream:
            sink.append(line)

    def running(self) -> bool:
        return self.proc.poll() is None

    def wait(self, timeout: float | None = None) -> Result:
        """Wait for the job to end by itself (a generator given a duration); stopped
        when it has not after `timeout` seconds."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        return self.stop()

    def stop(self, grace: float = STOP_GRACE_S) -> Result:
        if self.result is not None:
            return self.result
        ended = self.proc.poll() is not None
        stop(self.proc, grace)
        for th in self._readers:
            th.join(timeout=10)
        for stream in (self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except OSError:
                pass
        self.result = Result(self.launch.command_line, self.proc.returncode, "".join(self._out),
                             "".join(self._err), not ended, self.launch.notes,
                             time.monotonic() - self.t0)
        return self.result


def start_background(launch: Launch) -> Background:
    """Start `launch` and return at once; see Background."""
    try:
        return Background(launch)
    except OSError as exc:
        raise LaunchError(f"{launch.argv[0]}: cannot run: {exc.strerror or exc}") from None
