"""A cluster on one machine: nodes made of Linux network namespaces (`colltune cluster`).

`up(N)` makes N nodes `ctn1..ctnN`: one network namespace each with loopback and one
veth link (`eth0` inside) to a bridge `ctbr0` in the machine's own namespace (the
switch), addresses from a private subnet (default 10.77.0.0/24; node i is host i, the
bridge, where mpirun runs, the subnet's last host). Nothing routes the subnet
anywhere: the nodes have no default route. With a bandwidth, both ends of every link
get a token bucket (`tc qdisc ... tbf`): each node sends and receives at most that
rate (shaping only; `netem` is not used, so no delay is added).

What MPI needs to start its daemons inside the nodes, written under the cluster's
folder (`cluster_dir()`):

- `hostfile`: the nodes by address, with their slots (`10.77.0.1 slots=1`);
- `agent`: a remote shell as Open MPI's `plm_rsh_agent` and MPICH hydra's
  `-launcher ssh -launcher-exec` call it (`AGENT [-options] HOST COMMAND...`): it runs
  the command in the host's namespace (`ip netns exec`), in a UTS namespace of its own
  with the node's host name (`unshare --uts`), on the node's share of the machine's
  cores (`taskset`), in the caller's directory and environment (the machine's file
  system is every node's shared file system);
- `/etc/netns/ctnI/hosts`: the names of the nodes and of the machine, which `ip netns
  exec` binds over /etc/hosts for the processes of that node only (the machine's own
  /etc/hosts is not touched).

`launch_env()` are the settings that make Open MPI and MPICH use them (the agent, the
subnet and TCP between nodes, no binding); `placement()` is the hostfile placement of
colltune's launches on the cluster (the same launch code as on a real cluster's
hostfile).

Nothing is left behind: the state file (`state.json`, written before anything is made)
lists what `up` makes; `down` stops every process inside the nodes and removes the
namespaces, links, bridge and files; an interrupted `up` (Ctrl-C, SIGTERM, an error)
removes what it made; a later `up` first removes what a killed one left.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from colltune.base.errors import ColltuneError
from colltune.base.files import write_atomic
from colltune.base.paths import cache_dir, cache_lock
from colltune.mpi.launch import Terminated
from colltune.mpi.placement import Placement, cores

NS_PREFIX = "ctn"  # namespaces and host names: ctn1, ctn2, ...
VETH_PREFIX = "ctv"  # the switch side of node i's link: ctv1, ...
BRIDGE = "ctbr0"
NODE_IF = "eth0"  # the node side of its link
DEFAULT_SUBNET = "10.77.0.0/24"
MAX_NODES = 64
ETC_NETNS = Path("/etc/netns")

_RATE_RE = re.compile(r"^(\d+(?:\.\d+)?)(kbit|mbit|gbit)$", re.I)
_RATE_BITS = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}


class ClusterError(ColltuneError):
    """The cluster cannot be made, used or removed as asked."""


def cluster_dir() -> Path:
    return cache_dir() / "cluster"


def state_path() -> Path:
    return cluster_dir() / "state.json"


@dataclass
class Cluster:
    """What `up` made (or is making): the state file's content."""

    nodes: int
    subnet: str = DEFAULT_SUBNET
    bandwidth: str | None = None  # tc rate, e.g. "100mbit"; None: not shaped
    slots: int = 1  # processes a node takes without oversubscription
    complete: bool = False  # every step of `up` done
    created: float = field(default_factory=time.time)
    made_etc_netns: bool = False  # /etc/netns was made by `up` (removed again by `down`)

    @property
    def names(self) -> list[str]:
        return [f"{NS_PREFIX}{i}" for i in range(1, self.nodes + 1)]

    @property
    def links(self) -> list[str]:
        return [f"{VETH_PREFIX}{i}" for i in range(1, self.nodes + 1)]

    @property
    def addresses(self) -> list[str]:
        hosts = ipaddress.ip_network(self.subnet).hosts()
        return [str(next(hosts)) for _ in range(self.nodes)]

    @property
    def cpus(self) -> list[str]:
        """The cores of each node (taskset lists): this machine's cores in blocks, one
        block a node; with more nodes than cores, nodes share them in turn."""
        have = sorted(os.sched_getaffinity(0))
        if self.nodes >= len(have):
            return [str(have[i % len(have)]) for i in range(self.nodes)]
        per = len(have) // self.nodes
        return [",".join(map(str, have[i * per:(i + 1) * per])) for i in range(self.nodes)]

    @property
    def head_address(self) -> str:
        """The bridge's address: the machine itself on the subnet (mpirun runs there)."""
        net = ipaddress.ip_network(self.subnet)
        return str(net.broadcast_address - 1)

    @property
    def prefixlen(self) -> int:
        return ipaddress.ip_network(self.subnet).prefixlen

    @property
    def hostfile(self) -> Path:
        return cluster_dir() / "hostfile"

    @property
    def hostfile_mpich(self) -> Path:
        return cluster_dir() / "hosts.mpich"

    @property
    def agent(self) -> Path:
        return cluster_dir() / "agent"


# ------------------------------------------------------------------ checks


def require_root() -> None:
    if os.geteuid() != 0:
        raise ClusterError("colltune cluster needs root (network namespaces, links and tc): "
                           "run it as root")
    missing = [t for t in ("ip", "tc", "unshare", "taskset") if shutil.which(t) is None]
    if missing:
        raise ClusterError(f"colltune cluster needs {', '.join(missing)} (iproute2, util-linux)")


def parse_rate(text: str) -> tuple[str, float]:
    """'100mbit' -> ('100mbit', bytes per second); kbit, mbit, gbit (bits per second)."""
    m = _RATE_RE.match(text.strip())
    if not m or float(m.group(1)) <= 0:
        raise ClusterError(f"--bandwidth '{text}': give bits per second as a number and "
                           "kbit, mbit or gbit, e.g. 100mbit or 1gbit")
    unit = m.group(2).lower()
    return f"{m.group(1)}{unit}", float(m.group(1)) * _RATE_BITS[unit] / 8


def check_subnet(subnet: str, nodes: int) -> str:
    try:
        net = ipaddress.ip_network(subnet, strict=True)
    except ValueError as exc:
        raise ClusterError(f"--subnet '{subnet}': {exc}") from None
    if net.version != 4 or not net.is_private:
        raise ClusterError(f"--subnet {subnet}: give a private IPv4 subnet, e.g. "
                           f"{DEFAULT_SUBNET}")
    if net.num_addresses - 3 < nodes:  # network, broadcast and the bridge
        raise ClusterError(f"--subnet {subnet}: too small for {nodes} nodes and the bridge")
    routes = _run(["ip", "-4", "route", "show"], check=False).stdout
    for line in routes.splitlines():
        dest = line.split()[0] if line.split() else ""
        if dest == "default" or f"dev {BRIDGE}" in line:
            continue
        try:
            other = ipaddress.ip_network(dest, strict=False)
        except ValueError:
            continue
        if other.overlaps(net):
            raise ClusterError(f"--subnet {subnet} overlaps a network this machine already "
                               f"uses ({line.strip()}): choose another with --subnet")
    return str(net)


# ------------------------------------------------------------------ commands


def _run(argv: list[str], check: bool = True) -> subprocess.CompletedProcess:
    res = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    _step_done()
    if check and res.returncode != 0:
        raise ClusterError(f"{' '.join(argv)}: {res.stderr.strip() or res.returncode}")
    return res


def namespaces() -> list[str]:
    """The network namespaces of this machine (`ip netns list`)."""
    out = _run(["ip", "netns", "list"], check=False).stdout
    return [ln.split()[0] for ln in out.splitlines() if ln.strip()]


def link_exists(name: str) -> bool:
    return _run(["ip", "link", "show", "dev", name], check=False).returncode == 0


def node_pids(ns: str) -> list[int]:
    """Processes whose network namespace is node `ns`."""
    out = _run(["ip", "netns", "pids", ns], check=False).stdout
    return [int(p) for p in out.split() if p.isdigit() and int(p) != os.getpid()]


def _stop_pids(pids: list[int], grace: float = 2.0) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@contextmanager
def _steps_not_cut():
    """Inside, Ctrl-C, SIGTERM and SIGHUP wait for the command running (`ip`, `tc`) to
    finish and are raised at the next `_step_done()`: a link or namespace is never left
    half made (a command killed mid-way can leave one no record names)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}

    def _note(signum, frame):
        _PENDING.append(signum)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        previous[sig] = signal.signal(sig, _note)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _PENDING.clear()


_PENDING: list[int] = []  # signals that came during a step
_HOLD: list[bool] = []  # non-empty: removing after an interrupt, nothing is raised


def _step_done() -> None:
    """Raise the interrupt that came during the last step (see `_steps_not_cut`)."""
    if _PENDING and not _HOLD:
        sig = _PENDING[0]
        _PENDING.clear()
        if sig == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(signal.Signals(sig).name)


# ------------------------------------------------------------------ state


def read_state() -> Cluster | None:
    try:
        data = json.loads(state_path().read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ClusterError(f"{state_path()}: unreadable ({exc}); remove it and run "
                           "`colltune cluster down`") from None
    known = set(Cluster.__dataclass_fields__)
    return Cluster(**{k: v for k, v in data.items() if k in known})


def _write_state(c: Cluster) -> None:
    cluster_dir().mkdir(parents=True, exist_ok=True)
    write_atomic(state_path(), json.dumps(asdict(c), indent=1) + "\n")


# ------------------------------------------------------------------ up / down


def _agent_text(c: Cluster) -> str:
    cases = "\n".join(f"  {n}|{a}) ns={n} cpus={cpu} ;;"
                      for n, a, cpu in zip(c.names, c.addresses, c.cpus))
    return f"""#!/bin/sh
# colltune cluster: runs a command on a node as ssh would: AGENT [-options] HOST COMMAND...
# (Open MPI's plm_ssh_agent, MPICH hydra's -launcher-exec), in the node's network
# namespace, with its host name, on its cores. Written by `colltune cluster up`.
while [ $# -gt 0 ]; do case "$1" in -*) shift ;; *) break ;; esac; done
host="$1"; shift
case "$host" in
{cases}
  *) echo "colltune cluster agent: no node '$host' (nodes: {' '.join(c.names)})" >&2
     exit 255 ;;
esac
exec ip netns exec "$ns" unshare --uts taskset -c "$cpus" \\
    /bin/sh -c 'hostname "$0" && exec /bin/sh -c "$*"' "$ns" "$@"
"""


def _hosts_text(c: Cluster) -> str:
    lines = ["127.0.0.1\tlocalhost", f"{c.head_address}\t{socket.gethostname()} ctbr0"]
    lines += [f"{a}\t{n}" for n, a in zip(c.names, c.addresses)]
    return "\n".join(lines) + "\n"


def _shape(c: Cluster, dev: str, ns: str | None) -> None:
    rate, bps = parse_rate(c.bandwidth)  # type: ignore[arg-type]
    # a bucket of 2 ms at the rate (at least 16 KiB: tbf splits larger GSO packets),
    # a queue of at most 50 ms
    burst = max(16384, int(bps * 0.002))
    pre = ["tc"] + (["-n", ns] if ns else [])
    _run(pre + ["qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate, "burst",
                str(burst), "latency", "50ms"])


def _make(c: Cluster, log) -> None:
    _run(["ip", "link", "add", BRIDGE, "type", "bridge"])
    _run(["ip", "addr", "add", f"{c.head_address}/{c.prefixlen}", "dev", BRIDGE])
    _run(["ip", "link", "set", BRIDGE, "up"])
    hosts = _hosts_text(c)
    for name, link, addr in zip(c.names, c.links, c.addresses):
        _run(["ip", "netns", "add", name])
        d = ETC_NETNS / name
        d.mkdir(parents=True, exist_ok=True)
        write_atomic(d / "hosts", hosts)
        _run(["ip", "link", "add", link, "type", "veth", "peer", "name", NODE_IF, "netns",
              name])
        _run(["ip", "link", "set", link, "master", BRIDGE, "up"])
        _run(["ip", "-n", name, "addr", "add", f"{addr}/{c.prefixlen}", "dev", NODE_IF])
        _run(["ip", "-n", name, "link", "set", NODE_IF, "up"])
        _run(["ip", "-n", name, "link", "set", "lo", "up"])
        if c.bandwidth:
            _shape(c, link, None)
            _shape(c, NODE_IF, name)
        log(f"node {name}: {addr}" + (f", {c.bandwidth} each way" if c.bandwidth else ""))
    write_atomic(c.agent, _agent_text(c), executable=True)
    write_atomic(c.hostfile, "".join(f"{a} slots={c.slots}  # {n}\n"
                                     for n, a in zip(c.names, c.addresses)))
    write_atomic(c.hostfile_mpich, "".join(f"{a}:{c.slots}\n" for a in c.addresses))


def _teardown(c: Cluster) -> list[str]:
    """Remove whatever of `c` exists (idempotent); what was removed."""
    removed = []
    present = set(namespaces())
    for name in c.names:
        if name in present:
            pids = node_pids(name)
            if pids:
                _stop_pids(pids)
                removed.append(f"{len(pids)} process(es) in {name}")
            _run(["ip", "netns", "del", name], check=False)
            removed.append(f"namespace {name}")
        d = ETC_NETNS / name
        if d.exists():
            shutil.rmtree(d, ignore_errors=True)
    for link in c.links + [BRIDGE]:
        if link_exists(link):
            _run(["ip", "link", "del", link], check=False)
            removed.append(f"link {link}")
    if c.made_etc_netns:
        try:
            ETC_NETNS.rmdir()  # only if empty: others' files stay
        except OSError:
            pass
    for f in (c.hostfile, c.hostfile_mpich, c.agent):
        f.unlink(missing_ok=True)
    return removed


def up(nodes: int, bandwidth: str | None = None, subnet: str = DEFAULT_SUBNET,
       slots: int | None = None, log=lambda msg: None) -> Cluster:
    """Make the cluster (see the module docstring); what an earlier cluster or a killed
    `up` left is removed first. On any error or interrupt, what was made is removed."""
    require_root()
    if not 1 <= nodes <= MAX_NODES:
        raise ClusterError(f"--nodes {nodes}: between 1 and {MAX_NODES}")
    if bandwidth:
        bandwidth = parse_rate(bandwidth)[0]
    if slots is None:
        slots = max(1, cores() // nodes)
    if slots < 1:
        raise ClusterError(f"--slots {slots}: at least 1")
    with cache_lock("cluster", "making or removing the cluster"), _steps_not_cut():
        old = read_state()
        if old is not None:
            removed = _teardown(old)
            state_path().unlink(missing_ok=True)
            if removed:
                log(f"removed what an earlier cluster left: {', '.join(removed)}")
        left = [n for n in namespaces() if re.fullmatch(rf"{NS_PREFIX}\d+", n)]
        if left or link_exists(BRIDGE):
            raise ClusterError(f"{', '.join(left + ([BRIDGE] if link_exists(BRIDGE) else []))} "
                               "exist(s) but colltune has no record of making them: remove "
                               "them (`ip netns del NAME`, `ip link del NAME`) or check who "
                               "uses them")
        c = Cluster(nodes, check_subnet(subnet, nodes), bandwidth, slots,
                    made_etc_netns=not ETC_NETNS.exists())
        _write_state(c)  # before anything is made: a killed `up` is cleaned from it
        try:
            _make(c, log)
            _check_links(c)
            c.complete = True
            _write_state(c)
        except BaseException:
            _HOLD.append(True)  # a second Ctrl-C waits for the removal
            try:
                _teardown(c)
                state_path().unlink(missing_ok=True)
            finally:
                _HOLD.clear()
                _PENDING.clear()
            raise
    return c


def _check_links(c: Cluster) -> None:
    """Every node's link is up at both ends (the switch side reports the node side's
    carrier); the links take a moment to come up."""
    for link in c.links:
        state = Path(f"/sys/class/net/{link}/operstate")
        for _ in range(100):
            if state.exists() and state.read_text().strip() == "up":
                break
            time.sleep(0.05)
        else:
            raise ClusterError(f"link {link} of the switch {BRIDGE} does not come up "
                               f"({state.read_text().strip() if state.exists() else 'gone'})")


def down(log=lambda msg: None) -> list[str]:
    """Stop every process in the nodes and remove everything `up` made."""
    require_root()
    with cache_lock("cluster", "making or removing the cluster"), _steps_not_cut():
        c = read_state()
        if c is None:
            return []
        removed = _teardown(c)
        state_path().unlink(missing_ok=True)
    return removed


# ------------------------------------------------------------------ using it


def current() -> Cluster:
    """The cluster that is up; an error saying how to make one otherwise."""
    c = read_state()
    if c is None or not c.complete:
        raise ClusterError("no cluster is up: make one with `colltune cluster up --nodes N`")
    missing = sorted(set(c.names) - set(namespaces()))
    if missing:
        raise ClusterError(f"the cluster's node(s) {', '.join(missing)} are gone: run "
                           "`colltune cluster up` again")
    return c


def status() -> dict:
    """The cluster as recorded and as it is: nodes, addresses, processes, shaping."""
    c = read_state()
    if c is None:
        return {"up": False}
    present = set(namespaces())
    nodes = []
    for name, addr, link in zip(c.names, c.addresses, c.links):
        here = name in present
        qdisc = ""
        if here:
            qdisc = _run(["tc", "qdisc", "show", "dev", link], check=False).stdout.strip()
        nodes.append({"name": name, "address": addr, "present": here,
                      "processes": len(node_pids(name)) if here else 0,
                      "shaping": qdisc if "tbf" in qdisc else ""})
    return {"up": c.complete and all(n["present"] for n in nodes), "cluster": c,
            "nodes": nodes, "bridge": link_exists(BRIDGE), "hostfile": str(c.hostfile),
            "agent": str(c.agent), "env": launch_env(c)}


def launch_env(c: Cluster) -> dict[str, str]:
    """Settings that make Open MPI 5 and MPICH (hydra) start their daemons on the nodes
    through the agent and talk over the cluster's subnet only; with the hostfile, any
    mpirun/mpiexec in this environment runs on the cluster."""
    return {
        # Open MPI 5: PRRTE's remote shell, its daemons' connections, the TCP BTL
        "PRTE_MCA_plm_ssh_agent": str(c.agent),
        "PRTE_MCA_oob_tcp_if_include": c.subnet,
        "OMPI_MCA_btl_tcp_if_include": c.subnet,
        "PRTE_MCA_prte_default_hostfile": str(c.hostfile),
        # no binding: a node's processes stay on its cores (the agent's taskset); bound,
        # every node's first process would go to the machine's first core
        "PRTE_MCA_hwloc_default_binding_policy": "none",
        # MPICH hydra: the agent as its ssh, the proxies connect back over the bridge
        "HYDRA_LAUNCHER": "ssh",
        "HYDRA_LAUNCHER_EXEC": str(c.agent),
        "HYDRA_IFACE": BRIDGE,
        "HYDRA_HOST_FILE": str(c.hostfile_mpich),
        # MPICH between nodes over TCP, through UCX or libfabric: their shared-memory
        # transports would reach the other nodes' processes through this machine's
        # memory (one kernel); inside a node MPICH's own shared memory is used
        "UCX_TLS": "tcp,self",
        "FI_PROVIDER": "tcp",
    }


def placement(mapping: str | None = "node", order: str = "seq",
              nodes: int | None = None) -> Placement:
    """colltune's launches on the cluster: the hostfile launcher over its hostfile, with
    the cluster's launch settings (`launch_env`) in the environment of every launch."""
    c = current()
    return Placement(launcher="hostfile", mapping=mapping, order=order,
                     hostfile=str(c.hostfile), nodes=nodes, bind=False,
                     env=tuple(sorted(launch_env(c).items())))
