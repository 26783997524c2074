"""Where the processes of a launch go: the placement vocabulary and its arithmetic.

A `Placement` says which launcher to use (`local` mpirun/mpiexec, `hostfile`
mpirun/mpiexec over the hosts of a hostfile, `slurm` srun inside an allocation), how
processes are mapped (`core`: consecutive cores of a node, `socket`: alternating
sockets of a node, `node`: spread over the nodes) and how ranks are ordered across
nodes (`seq`: block, `rr`: round-robin). An `Allocation` is the nodes a launcher may
use (this machine, a hostfile's hosts, a Slurm job's nodes); `layout` says how many
processes each node gets and `rank_nodes` which node each rank is on. colltune.mpi.launch
translates a placement into each launcher's options; colltune.mpi.platforms places the
ranks of a simulation with the same arithmetic.

The policy for process counts (`check_process_counts`: how many processes a core or a
slot may take) is applied by the commands before launching.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from colltune.base.errors import ColltuneError

LAUNCHERS = ("local", "hostfile", "slurm")
MAPPINGS = ("core", "socket", "node")
ORDERS = ("seq", "rr")


class LaunchError(ColltuneError, ValueError):
    """A placement cannot be launched as asked (no allocation, bad hostfile, ...)."""


@dataclass(frozen=True)
class Placement:
    """Where the processes of a launch go; see the module docstring."""

    launcher: str = "local"
    mapping: str | None = None  # None: the library's default placement (no options)
    order: str = "seq"
    hostfile: str | None = None  # launcher "hostfile"
    nodes: int | None = None  # nodes to use; default: fewest that hold np (core, socket),
    #                           as many as there are (node)
    bind: bool = True  # bind each process to a core (not when oversubscribed)
    srun_mpi: str | None = None  # srun --mpi=...; default pmix (Open MPI), pmi2 (MPICH)
    # launcher settings of the allocation, in the environment of every launch (the remote
    # shell and network of `colltune cluster`, mpi/cluster.py): (name, value) pairs
    env: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.launcher not in LAUNCHERS:
            raise LaunchError(f"launcher '{self.launcher}': valid: {', '.join(LAUNCHERS)}")
        if self.mapping is not None and self.mapping not in MAPPINGS:
            raise LaunchError(f"mapping '{self.mapping}': valid: {', '.join(MAPPINGS)}")
        if self.order not in ORDERS:
            raise LaunchError(f"order '{self.order}': valid: {', '.join(ORDERS)}")
        if self.launcher == "hostfile" and not self.hostfile:
            raise LaunchError("launcher 'hostfile' needs a hostfile")
        if self.nodes is not None and self.nodes < 1:
            raise LaunchError(f"nodes {self.nodes}: must be at least 1")


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


# ------------------------------------------------------------ process counts

# More processes than this many per core (or slot) are refused without force: no
# measurement means anything there, and a typo (--np 100000) would start a
# process storm the machine cannot stop quickly.
MAX_PER_CORE = 16
# Simulated processes (SMPI) are threads of one simulation; beyond this many a point
# takes minutes and gigabytes (docs/simulation.md)
MAX_SIMULATED = 8192


def capacity(placement: Placement | None = None) -> tuple[int, str]:
    """(processes that get a core each, what they are called): the local cores, or the
    slots of the hostfile or Slurm allocation of `placement`."""
    if placement is None or placement.launcher == "local":
        return cores(), "cores"
    return allocation(placement).slots, "slots"


def check_process_counts(nps, *, oversubscribe: bool = False, force: bool = False,
                         timing: bool = True, placement: Placement | None = None,
                         oversubscribe_flag: str = "--oversubscribe",
                         force_flag: str = "--force", simulated: bool = False) -> list[str]:
    """The policy for process counts, applied before anything is launched.

    - More than MAX_PER_CORE processes per core (slot) is refused unless `force`.
    - A measurement of time (`timing`) with more processes than cores (slots) is
      refused unless `oversubscribe` (or `force`): processes would share cores and
      the times would measure the scheduler. The points are then recorded as
      oversubscribed (the database knows: ppn > cores).
    - Correctness runs (`timing=False`, verify) may share cores.

    - A count below 1 is refused.
    - Simulated launches (SimGrid SMPI, `simulated`) have no cores to share: every
      count is allowed up to MAX_SIMULATED (more needs `force`).

    Returns notes for the oversubscribed counts; raises LaunchError saying why and
    which flag overrides. A count below 1 is refused whatever the flags."""
    small = sorted({np for np in nps if np < 1})
    if small:
        raise LaunchError(f"--np {small[0]}: a process count must be at least 1")
    if simulated:
        big = [np for np in nps if np > MAX_SIMULATED]
        if big and not force:
            raise LaunchError(f"{max(big)} simulated processes: more than {MAX_SIMULATED} "
                              f"(memory and time of one simulation); add {force_flag} to try")
        return []
    have, unit = capacity(placement)
    notes = []
    for np in sorted(set(nps)):
        if np > MAX_PER_CORE * have and not force:
            raise LaunchError(f"{np} processes on {have} {unit} is more than {MAX_PER_CORE} "
                              f"per {unit[:-1]}: this machine cannot run it honestly; add "
                              f"{force_flag} to launch it anyway")
        if np > have:
            if timing and not (oversubscribe or force):
                raise LaunchError(f"{np} processes on {have} {unit}: processes would share "
                                  f"{unit} and the times would measure the OS scheduler; add "
                                  f"{oversubscribe_flag} to measure anyway (the points are "
                                  "marked oversubscribed)")
            notes.append(f"{np} processes on {have} {unit}: oversubscribed" +
                         (", times not representative" if timing else ""))
    return notes


# ------------------------------------------------------------------ allocations


@dataclass(frozen=True)
class Allocation:
    """The nodes a launcher may use: (host, slots) in order, and where they came from."""

    hosts: tuple[tuple[str, int], ...]
    source: str
    notes: tuple[str, ...] = ()

    @property
    def slots(self) -> int:
        return sum(s for _, s in self.hosts)


_HOST_RE = re.compile(r"^([A-Za-z0-9_.\-\[\]]+)(?::(\d+))?((?:\s+\w+\s*=\s*\d+)*)\s*$")


def parse_hostfile(path: str | Path, default_slots: int | None = None) -> Allocation:
    """Hosts of an Open MPI (`host slots=4`) or MPICH (`host:4`) hostfile.

    A host listed without a slot count gets `default_slots` (this machine's
    cores when not given, noted); a host listed twice adds up.
    """
    p = Path(path).expanduser()
    try:
        text = p.read_text()
    except OSError as exc:
        raise LaunchError(f"hostfile {p}: {exc.strerror or exc}") from exc
    hosts: dict[str, int] = {}
    guessed = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = _HOST_RE.match(line)
        if not m:
            raise LaunchError(f"hostfile {p}, line {lineno}: '{raw.strip()}' is not "
                              "'host', 'host slots=N' or 'host:N'")
        host, colon, rest = m.group(1), m.group(2), m.group(3) or ""
        kv = dict((k.strip(), int(v)) for k, v in re.findall(r"(\w+)\s*=\s*(\d+)", rest))
        unknown = set(kv) - {"slots", "max_slots", "max-slots"}
        if unknown:
            raise LaunchError(f"hostfile {p}, line {lineno}: unknown field(s) "
                              f"{', '.join(sorted(unknown))}; valid: slots, max_slots")
        n = int(colon) if colon else kv.get("slots")
        if n is None:
            n = default_slots or cores()
            guessed.append(host)
        if n < 1:
            raise LaunchError(f"hostfile {p}, line {lineno}: {host} has {n} slots")
        hosts[host] = hosts.get(host, 0) + n
    if not hosts:
        raise LaunchError(f"hostfile {p} lists no hosts")
    notes = ()
    if guessed:
        notes = (f"hostfile {p}: no slot count for {', '.join(guessed)}; assumed "
                 f"{default_slots or cores()} (this machine's cores)",)
    return Allocation(tuple(hosts.items()), f"hostfile {p}", notes)


def _expand_slurm_counts(text: str) -> list[int]:
    """SLURM_JOB_CPUS_PER_NODE '4(x2),2' -> [4, 4, 2]."""
    out: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", part)
        if not m:
            raise LaunchError(f"cannot read SLURM_JOB_CPUS_PER_NODE='{text}'")
        out += [int(m.group(1))] * int(m.group(2) or 1)
    return out


def slurm_allocation(env: dict[str, str] | None = None) -> Allocation:
    """The nodes of the Slurm allocation this process runs in."""
    env = dict(os.environ) if env is None else env
    job = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
    if not job:
        raise LaunchError("launcher 'slurm' runs inside a Slurm allocation (salloc or sbatch); "
                          "outside one, write a batch script with `colltune sweep --emit-sbatch`")
    nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST") or ""
    hosts: list[str] = []
    if nodelist and shutil.which("scontrol"):
        res = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True,
                             text=True, timeout=60, env=env)
        hosts = res.stdout.split() if res.returncode == 0 else []
    nnodes = int(env.get("SLURM_JOB_NUM_NODES") or env.get("SLURM_NNODES") or len(hosts) or 1)
    if not hosts:
        hosts = [f"node{i}" for i in range(nnodes)]
    per = env.get("SLURM_JOB_CPUS_PER_NODE")
    if per:
        counts = _expand_slurm_counts(per)
    else:
        counts = [int(env.get("SLURM_CPUS_ON_NODE") or cores())] * nnodes
    if len(counts) < len(hosts):
        counts += [counts[-1]] * (len(hosts) - len(counts))
    return Allocation(tuple(zip(hosts, counts)), f"slurm job {job}")


def allocation(placement: Placement) -> Allocation:
    if placement.launcher == "hostfile":
        return parse_hostfile(placement.hostfile)  # type: ignore[arg-type]
    if placement.launcher == "slurm":
        return slurm_allocation()
    return Allocation(((socket.gethostname(), cores()),), "local")


def layout(np: int, placement: Placement, alloc: Allocation) -> list[tuple[str, int, int]]:
    """(host, processes, slots) of each node used, in node order.

    core/socket: the fewest nodes that hold np, filled in order, unless `nodes` is
    given; node: spread over `nodes` (default: all, at most np) as evenly as possible.
    """
    hosts = list(alloc.hosts)
    if placement.nodes is not None and placement.nodes > len(hosts):
        raise LaunchError(f"{placement.nodes} nodes asked for; {alloc.source} has {len(hosts)}")
    spread = placement.mapping == "node" or placement.nodes is not None
    if spread:
        m = min(np, placement.nodes or len(hosts))
        base, extra = divmod(np, m)
        return [(h, base + (i < extra), s) for i, (h, s) in enumerate(hosts[:m])]
    out, left = [], np
    for h, s in hosts:
        if left <= 0:
            break
        out.append((h, min(s, left), s))
        left -= s
    if left > 0:  # more processes than slots: spread the rest over all nodes in turn
        out = [(h, n, s) for h, n, s in out]
        i = 0
        while left > 0:
            h, n, s = out[i % len(out)]
            out[i % len(out)] = (h, n + 1, s)
            left -= 1
            i += 1
    return out


def rank_nodes(counts: list[int], order: str) -> list[int]:
    """The node (index) of each rank, for `counts` processes per node: blocks (seq) or
    round-robin over the nodes that still have room (rr)."""
    if order == "seq":
        return [i for i, c in enumerate(counts) for _ in range(c)]
    left = list(counts)
    out: list[int] = []
    i = 0
    while len(out) < sum(counts):
        if left[i % len(left)] > 0:
            out.append(i % len(left))
            left[i % len(left)] -= 1
        i += 1
    return out
