"""Simulated platforms: SimGrid 4 platform files from a short description.

A platform is a cluster of identical nodes: `nodes` x `sockets` x `cores_per_socket`,
an intra-node latency/bandwidth (two ranks of one node), a network latency/bandwidth
(two ranks of two nodes) and a topology (`flat` switch, `fat-tree`, `dragonfly`,
`torus`). Descriptions are TOML files (see docs/simulation-platforms.md); the presets
named after the seeds' machines ship in `platforms/*.toml` next to this module, each
figure with the source it comes from.

How it maps onto SimGrid (see docs/simulation-platforms.md for why):

- one SimGrid host per node, named `node-<i>`, with `cores` = sockets x cores per
  socket; every rank on a node runs on that host;
- two ranks of one node communicate through the host's loopback link (SimGrid
  cluster `loopback_lat`/`loopback_bw`, a FATPIPE link: no contention between the
  pairs of a node), unless the description gives the node's memory bandwidth
  (`[intra] shared_bandwidth_GBps`, flat platforms): then all messages inside a node
  also share its memory bus (platform_xml.membus_xml);
- two ranks of two nodes go through the network: each node has its own link (split
  duplex: each direction has the full bandwidth) to the topology's switches. The
  description's network latency is the node-to-node latency of the nearest pair of
  nodes (through one switch: two links, each half of it; on a torus, one link);
  pairs farther apart cross more links and pay each link's latency again.

`simgrid_cfg(platform)` gives the `--cfg` options every simulation on the platform
needs: the plain network model (`raw`: time = latency + size / bandwidth, fair
sharing, no TCP-gamma window, no cross traffic, no SMPI correction factors) unless
the platform carries its own piecewise factors (`this-machine` after calibration),
and the host speed that makes benchmarked computation count 1:1.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from colltune.base.files import read_text
from colltune.base.errors import ColltuneError, did_you_mean
from colltune.mpi.placement import MAPPINGS, ORDERS, Allocation, Placement, layout, rank_nodes
from colltune.mpi.placement import cores as local_cores
from colltune.base.paths import cache_dir
from colltune.base.files import write_atomic
from colltune.mpi.platform_xml import (HOST_PREFIX, HOST_SPEED_FLOPS, MEMBUS_MAX_NODES, _flops,
                                       _xml_id, cluster_xml, membus_xml)

TOPOLOGIES = ("flat", "fat-tree", "dragonfly", "torus")
ALLOCATIONS = ("first", "spread")
# SMPI adds this many bytes (tag, source, communicator) to every message it simulates
# (smpi_request.cpp: payload = size + 16) and looks network factors up by that payload.
SMPI_ENVELOPE_BYTES = 16
THIS_MACHINE = "this-machine"
# what simulation charges (native/lib/simcharge.h); calibrate measures the first two,
# "forward" (sends of data the rank just wrote) is a model tried, written by hand
CALIBRATED_KINDS = ("copy", "reduce")
COMPUTE_KINDS = (*CALIBRATED_KINDS, "forward")
SIM_CHARGE_ENV = "COLLTUNE_SIM_CHARGE"
COMPUTE_MAX_POINTS = 32  # per kind (native/lib/simcharge.c CT_SIM_POINTS)
CALIBRATION_FILE = "this-machine.toml"  # in <colltune cache>/platforms/

PRESETS: tuple[str, ...] = ("orfeo-thin", "cloud-8vm", "tapems-16x12", "tapems-16x12-membus",
                            "marconi100", "marconi100-tapered", "flat",
                            THIS_MACHINE)


class PlatformError(ColltuneError, ValueError):
    """A platform description is wrong, or a placement does not fit the platform."""


def _preset_dir() -> Path:
    return Path(__file__).resolve().parent / "platform_files"


def calibration_path() -> Path:
    """Where `colltune platform calibrate` writes this machine's description."""

    return cache_dir() / "platforms" / CALIBRATION_FILE


@dataclass(frozen=True)
class Platform:
    """A described cluster; see the module docstring. Latencies in microseconds,
    bandwidths in GB/s (10^9 bytes per second)."""

    name: str
    nodes: int = 1
    sockets: int = 1
    cores_per_socket: int = 1
    intra_latency_us: float = 0.5
    intra_bandwidth_GBps: float = 5.0
    # the node's memory bandwidth, shared by all messages inside the node at a time
    # (None: each pair gets intra_bandwidth_GBps however many talk: no contention)
    intra_shared_bandwidth_GBps: float | None = None
    net_latency_us: float = 1.0
    net_bandwidth_GBps: float = 10.0
    topology: str = "flat"
    topo_parameters: str = ""  # SimGrid's own syntax (fat-tree, dragonfly, torus)
    switch_bandwidth_GBps: float | None = None  # flat: shared backbone; None: non-blocking
    allocation: str = "first"  # which nodes a job gets: the first ones, or spread evenly
    # The MPI library's eager limit: the largest message MPI_Send completes before the
    # receiver posts its receive (measured by calibrate); larger sends wait for the
    # receiver in simulation too (smpi/send-is-detached-thresh). None: SMPI's default.
    eager_limit_bytes: int | None = None
    about: str = ""
    origin: str = ""  # the file it was read from
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)
    calibration: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    # Piecewise SimGrid factors [(size, factor), ...]: latency x factor, bandwidth x factor
    # for messages larger than size (up to the next size); empty: plain (1).
    lat_factors: tuple[tuple[int, float], ...] = ()
    bw_factors: tuple[tuple[int, float], ...] = ()
    # Computation charged in simulation (docs/simulation.md "Charged computation"):
    # kind ("copy", "reduce") -> ((size, us), ...): a local copy or reduction of m bytes
    # inside colltune's algorithms costs the time interpolated linearly between the two
    # sizes around m (below the first: its time; above the last: its time per byte).
    # Empty: not charged.
    compute: Mapping[str, tuple[tuple[int, float], ...]] = field(default_factory=dict,
                                                                  hash=False)

    def __post_init__(self) -> None:
        where = f"platform '{self.name}'"
        for key in ("nodes", "sockets", "cores_per_socket"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise PlatformError(f"{where}: {key} = {v!r}: must be an integer >= 1")
        for key in ("intra_latency_us", "net_latency_us"):
            v = getattr(self, key)
            if not _is_number(v) or v < 0 or not math.isfinite(v):
                raise PlatformError(f"{where}: {key} = {v!r}: must be a number >= 0")
        for key in ("intra_bandwidth_GBps", "net_bandwidth_GBps", "switch_bandwidth_GBps",
                    "intra_shared_bandwidth_GBps"):
            v = getattr(self, key)
            if v is None and key in ("switch_bandwidth_GBps", "intra_shared_bandwidth_GBps"):
                continue
            if not _is_number(v) or v <= 0 or not math.isfinite(v):
                raise PlatformError(f"{where}: {key} = {v!r}: must be a number > 0")
        e = self.eager_limit_bytes
        if e is not None and (not isinstance(e, int) or isinstance(e, bool) or e < 0):
            raise PlatformError(f"{where}: eager_limit_bytes = {e!r}: must be a whole number "
                                "of bytes >= 0")
        if self.topology not in TOPOLOGIES:
            raise PlatformError(f"{where}: topology '{self.topology}'{did_you_mean(self.topology, TOPOLOGIES)}; "
                                f"valid: {', '.join(TOPOLOGIES)}")
        if self.allocation not in ALLOCATIONS:
            raise PlatformError(f"{where}: allocation '{self.allocation}': valid: "
                                f"{', '.join(ALLOCATIONS)}")
        if self.intra_shared_bandwidth_GBps is not None and (
                self.topology != "flat" or self.nodes > MEMBUS_MAX_NODES):
            raise PlatformError(f"{where}: [intra] shared_bandwidth_GBps needs a route for every "
                                f"pair of nodes: flat topology, at most {MEMBUS_MAX_NODES} nodes "
                                f"(this one: {self.topology}, {self.nodes} nodes)")
        if self.switch_bandwidth_GBps is not None and self.topology != "flat":
            raise PlatformError(f"{where}: switch_bandwidth_GBps is for the flat topology; "
                                f"{self.topology} links all have the network bandwidth")
        leaves = topology_leaves(self.topology, self.topo_parameters, where)
        if leaves is not None and leaves != self.nodes:
            raise PlatformError(f"{where}: topology {self.topology} '{self.topo_parameters}' has "
                                f"{leaves} nodes, the description says nodes = {self.nodes}")
        for key in ("lat_factors", "bw_factors"):
            fs = getattr(self, key)
            sizes = [s for s, _ in fs]
            if sizes != sorted(set(sizes)) or any(s < 0 for s in sizes):
                raise PlatformError(f"{where}: {key}: sizes must be distinct, >= 0 and increasing")
            if any(not _is_number(f) or f <= 0 for _, f in fs):
                raise PlatformError(f"{where}: {key}: factors must be > 0")
        for kind, pts in self.compute.items():
            if kind not in COMPUTE_KINDS:
                raise PlatformError(f"{where}: compute kind '{kind}'"
                                    f"{did_you_mean(kind, COMPUTE_KINDS)}; valid: "
                                    f"{', '.join(COMPUTE_KINDS)}")
            sizes = [m for m, _ in pts]
            if (not pts or len(pts) > COMPUTE_MAX_POINTS or sizes != sorted(set(sizes))
                    or any(not isinstance(m, int) or m < 1 for m in sizes)
                    or any(not _is_number(t) or t < 0 or not math.isfinite(t) for _, t in pts)):
                raise PlatformError(f"{where}: compute {kind}: [[bytes, us], ...], 1 to "
                                    f"{COMPUTE_MAX_POINTS} points, sizes >= 1 increasing, "
                                    "times >= 0")

    # ------------------------------------------------------------------ figures

    @property
    def cores_per_node(self) -> int:
        return self.sockets * self.cores_per_socket

    @property
    def cores(self) -> int:
        return self.nodes * self.cores_per_node

    @property
    def hosts(self) -> list[str]:
        return [f"{HOST_PREFIX}{i}" for i in range(self.nodes)]

    @property
    def links_nearest(self) -> int:
        """Links on the path between the two nearest nodes."""
        return 1 if self.topology == "torus" else 2

    @property
    def link_latency_us(self) -> float:
        return self.net_latency_us / self.links_nearest

    # ---------------------------------------------------------------------- XML

    def xml(self) -> str:
        """The SimGrid 4 platform file (DTD 4.1): mpi/platform_xml.py."""
        if self.intra_shared_bandwidth_GBps is not None:
            return membus_xml(self)
        return cluster_xml(self)

    # ---------------------------------------------------------------- mapping

    def node_indices(self, used: int) -> list[int]:
        """The platform nodes a job on `used` nodes gets, in order."""
        if used > self.nodes:
            raise PlatformError(f"{used} nodes asked for; platform '{self.name}' has {self.nodes}")
        if self.allocation == "first" or used <= 1:
            return list(range(used))
        return [(i * self.nodes) // used for i in range(used)]

    def rank_hosts(self, np: int, mapping: str = "core", order: str = "seq", *,
                   nodes: int | None = None, oversubscribe: bool = False) -> list[str]:
        """The host of every rank, in rank order (the smpirun hostfile, one line a rank).

        As the local launchers place processes (placement.layout, placement.rank_nodes):
        `core` and `socket` fill the fewest nodes that hold np (socket alternates the
        sockets of a node, which are one host here), `node` spreads the processes
        evenly over `nodes` nodes (default: all, at most np); `seq` gives each node a
        block of consecutive ranks, `rr` deals the ranks round-robin over the nodes.
        More processes than cores is an error unless `oversubscribe`."""
        if mapping not in MAPPINGS:
            raise PlatformError(f"mapping '{mapping}'{did_you_mean(mapping, MAPPINGS)}; "
                                f"valid: {', '.join(MAPPINGS)}")
        if order not in ORDERS:
            raise PlatformError(f"order '{order}'{did_you_mean(order, ORDERS)}; "
                                f"valid: {', '.join(ORDERS)}")
        if not isinstance(np, int) or np < 1:
            raise PlatformError(f"process count {np!r}: must be at least 1")
        if nodes is not None and not 1 <= nodes <= self.nodes:
            raise PlatformError(f"nodes {nodes}: platform '{self.name}' has {self.nodes} "
                                "node(s)")
        have = (nodes or self.nodes) * self.cores_per_node
        if np > have and not oversubscribe:
            where = f"{nodes} of its nodes" if nodes else f"{self.nodes} node(s)"
            raise PlatformError(
                f"{np} processes on platform '{self.name}': {where} x {self.cores_per_node} "
                f"cores = {have} cores; use at most {have} processes, a larger platform, or "
                "oversubscribe explicitly")
        alloc = Allocation(tuple((h, self.cores_per_node) for h in self.hosts),
                           f"platform {self.name}")
        placement = Placement(mapping=mapping, order=order, nodes=nodes)
        used = layout(np, placement, alloc)
        counts = [n for _, n, _ in used]
        phys = self.node_indices(len(used))
        return [f"{HOST_PREFIX}{phys[i]}" for i in rank_nodes(counts, order)]

    def load_hosts(self, measured: list[str], count: int) -> list[str]:
        """Hosts of `count` load-generator ranks beside a job on the hosts `measured`
        (docs/workload.md): one a node, on nodes the job does not use, evenly spaced
        over the rest of the machine (with `spread` allocation, in the same islands and
        on the same leaf switches as the job's nodes; with `first`, the next nodes)."""
        if count < 0:
            raise PlatformError(f"load ranks {count}: must be >= 0")
        used = set(measured)
        free = [h for h in self.hosts if h not in used]
        if count > len(free):
            raise PlatformError(f"{count} load-generator ranks need as many nodes besides the "
                                f"job's {len(used)}; platform '{self.name}' has {len(free)} more")
        if self.allocation == "first" or count <= 1:
            return free[:count]
        return [free[(i * len(free)) // count] for i in range(count)]

    def with_nodes(self, nodes: int) -> "Platform":
        """The same platform with another number of nodes (flat topology only: the
        others' node count is their topology's), named NAME:nodes=N."""
        import dataclasses

        if not isinstance(nodes, int) or nodes < 1:
            raise PlatformError(f"nodes {nodes!r}: must be an integer >= 1")
        if self.topology != "flat":
            raise PlatformError(f"platform '{self.name}' is a {self.topology}: its node count "
                                f"comes from topo_parameters '{self.topo_parameters}'; write a "
                                "description file with other parameters instead")
        src = dict(self.sources)
        src["nodes"] = (f"{nodes} instead of {self.nodes} (NAME:nodes=N); the preset's: "
                        + src.get("nodes", "not stated"))
        base = self.name.split(":nodes=")[0]
        return dataclasses.replace(self, name=f"{base}:nodes={nodes}", nodes=nodes, sources=src)

    def hostfile(self, np: int, mapping: str = "core", order: str = "seq", **kw) -> str:
        """rank_hosts as the text of a hostfile for smpirun -hostfile."""
        return "".join(h + "\n" for h in self.rank_hosts(np, mapping, order, **kw))

    # -------------------------------------------------------------- describe

    def describe(self) -> dict:
        """Every figure and its source, JSON-able (stored with simulated results)."""
        src = dict(self.sources)

        def fig(key: str, value, unit: str | None = None) -> dict:
            d = {"value": value}
            if unit:
                d["unit"] = unit
            d["source"] = src.get(key, "not stated")
            return d

        out = {
            "name": self.name,
            "about": self.about,
            "origin": self.origin,
            "nodes": fig("nodes", self.nodes),
            "sockets": fig("sockets", self.sockets),
            "cores_per_socket": fig("cores_per_socket", self.cores_per_socket),
            "cores_per_node": self.cores_per_node,
            "cores": self.cores,
            "intra_latency": fig("intra_latency_us", self.intra_latency_us, "us"),
            "intra_bandwidth": fig("intra_bandwidth_GBps", self.intra_bandwidth_GBps, "GB/s"),
            "intra_shared_bandwidth": (
                None if self.intra_shared_bandwidth_GBps is None else
                fig("intra_shared_bandwidth_GBps", self.intra_shared_bandwidth_GBps, "GB/s")),
            "net_latency": fig("net_latency_us", self.net_latency_us, "us"),
            "net_bandwidth": fig("net_bandwidth_GBps", self.net_bandwidth_GBps, "GB/s"),
            "topology": fig("topology", self.topology),
            "topo_parameters": self.topo_parameters,
            "switch_bandwidth": (None if self.switch_bandwidth_GBps is None else
                                 fig("switch_bandwidth_GBps", self.switch_bandwidth_GBps, "GB/s")),
            "allocation": fig("allocation", self.allocation),
            "eager_limit": (None if self.eager_limit_bytes is None else
                            fig("eager_limit_bytes", self.eager_limit_bytes, "B")),
            "simgrid": {
                "hosts": f"{HOST_PREFIX}0 .. {HOST_PREFIX}{self.nodes - 1}",
                "host_speed_flops": HOST_SPEED_FLOPS,
                "link_latency_us": self.link_latency_us,
                "links_between_nearest_nodes": self.links_nearest,
                "cfg": simgrid_cfg(self),
            },
        }
        if self.compute:
            out["compute"] = {k: {"points_bytes_us": [list(x) for x in pts],
                                  "source": src.get(f"compute_{k}", "not stated")}
                              for k, pts in self.compute.items()}
            out["simgrid"]["env"] = sim_env(self)
        if self.lat_factors or self.bw_factors:
            out["simgrid"]["lat_factors"] = [list(x) for x in self.lat_factors]
            out["simgrid"]["bw_factors"] = [list(x) for x in self.bw_factors]
        if self.calibration:
            out["calibration"] = json.loads(json.dumps(dict(self.calibration), default=str))
        extra = {k: v for k, v in src.items() if k not in _FIELD_KEYS}
        if extra:
            out["other_sources"] = extra
        return out

    # ------------------------------------------------------------------ TOML

    def to_toml(self) -> str:
        """The description file that reads back as this platform."""
        lines = [f"# colltune platform description (colltune platform show {_toml_str(self.name)})",
                 f"name = {_toml_str(self.name)}"]
        if self.about:
            lines.append(f"about = {_toml_str(self.about)}")
        lines += [f"nodes = {self.nodes}", f"sockets = {self.sockets}",
                  f"cores_per_socket = {self.cores_per_socket}",
                  f"topology = {_toml_str(self.topology)}"]
        if self.topo_parameters:
            lines.append(f"topo_parameters = {_toml_str(self.topo_parameters)}")
        if self.allocation != "first":
            lines.append(f"allocation = {_toml_str(self.allocation)}")
        if self.eager_limit_bytes is not None:
            lines.append(f"eager_limit_bytes = {self.eager_limit_bytes}")
        lines += ["", "[intra]", f"latency_us = {_toml_num(self.intra_latency_us)}",
                  f"bandwidth_GBps = {_toml_num(self.intra_bandwidth_GBps)}"]
        if self.intra_shared_bandwidth_GBps is not None:
            lines.append(f"shared_bandwidth_GBps = {_toml_num(self.intra_shared_bandwidth_GBps)}")
        lines += ["", "[network]", f"latency_us = {_toml_num(self.net_latency_us)}",
                  f"bandwidth_GBps = {_toml_num(self.net_bandwidth_GBps)}"]
        if self.switch_bandwidth_GBps is not None:
            lines.append(f"switch_bandwidth_GBps = {_toml_num(self.switch_bandwidth_GBps)}")
        if self.lat_factors or self.bw_factors:
            lines += ["", "[factors]",
                      f"latency = {_toml_pairs(self.lat_factors)}",
                      f"bandwidth = {_toml_pairs(self.bw_factors)}"]
        if self.compute:
            lines += ["", "[compute]"]
            lines += [f"{k} = {_toml_pairs(pts)}" for k, pts in self.compute.items()]
        if self.sources:
            lines += ["", "[sources]"]
            lines += [f"{_toml_str(k)} = {_toml_str(v)}" for k, v in self.sources.items()]
        if self.calibration:
            lines += ["", "[calibration]"]
            for k, v in self.calibration.items():
                lines.append(f"{_toml_str(k)} = {_toml_value(v)}")
        return "\n".join(lines) + "\n"


_FIELD_KEYS = {"nodes", "sockets", "cores_per_socket", "intra_latency_us", "intra_bandwidth_GBps",
               "net_latency_us", "net_bandwidth_GBps", "topology", "switch_bandwidth_GBps",
               "allocation", "compute_copy", "compute_reduce", "compute_forward", "eager_limit_bytes",
               "intra_shared_bandwidth_GBps"}


# ------------------------------------------------------------------------ topologies


def topology_leaves(topology: str, params: str, where: str = "platform") -> int | None:
    """Nodes (hosts) of a SimGrid topology from its topo_parameters; None for flat.
    Raises PlatformError when the parameters do not read as SimGrid reads them."""
    if topology == "flat":
        if params:
            raise PlatformError(f"{where}: topo_parameters is for fat-tree, dragonfly and "
                                "torus; a flat switch has none")
        return None

    def ints(text: str, what: str) -> list[int]:
        try:
            vals = [int(x) for x in text.split(",")]
        except ValueError:
            raise PlatformError(f"{where}: {topology} topo_parameters '{params}': {what} "
                                f"'{text}' is not a list of integers") from None
        if any(v < 1 for v in vals):
            raise PlatformError(f"{where}: {topology} topo_parameters '{params}': {what} must "
                                "be >= 1")
        return vals

    if not params:
        raise PlatformError(f"{where}: topology {topology} needs topo_parameters; "
                            f"{_TOPO_HELP[topology]}")
    if topology == "torus":
        return math.prod(ints(params, "dimensions"))
    parts = params.split(";")
    if topology == "fat-tree":
        if len(parts) != 4:
            raise PlatformError(f"{where}: fat-tree topo_parameters '{params}': "
                                f"{_TOPO_HELP['fat-tree']}")
        levels = ints(parts[0], "levels")
        if len(levels) != 1:
            raise PlatformError(f"{where}: fat-tree: the first part is the number of levels")
        down, up, count = (ints(p, n) for p, n in zip(parts[1:], ("down", "up", "count")))
        if not len(down) == len(up) == len(count) == levels[0]:
            raise PlatformError(f"{where}: fat-tree topo_parameters '{params}': {levels[0]} "
                                "level(s): the three lists need that many numbers each")
        return math.prod(down)
    if len(parts) != 4:
        raise PlatformError(f"{where}: dragonfly topo_parameters '{params}': "
                            f"{_TOPO_HELP['dragonfly']}")
    g, c, r = (ints(p, n) for p, n in zip(parts[:3], ("groups", "chassis", "routers")))
    if not len(g) == len(c) == len(r) == 2:
        raise PlatformError(f"{where}: dragonfly topo_parameters '{params}': "
                            f"{_TOPO_HELP['dragonfly']}")
    n = ints(parts[3], "nodes per router")
    if len(n) != 1:
        raise PlatformError(f"{where}: dragonfly: the last part is the nodes per router")
    return g[0] * c[0] * r[0] * n[0]


_TOPO_HELP = {
    "fat-tree": "'L;d1,..,dL;u1,..,uL;c1,..,cL' (levels; children per switch, parents per "
                "node/switch, links to each parent, level by level from the nodes up)",
    "dragonfly": "'G,g;C,c;R,r;N' (groups and links between two groups; chassis per group "
                 "and links between two chassis; routers per chassis and links between two "
                 "routers; nodes per router)",
    "torus": "'X,Y,Z,...' (the size of each dimension)",
}


# ----------------------------------------------------------------------- SimGrid cfg


def simgrid_cfg(platform: Platform) -> list[str]:
    """`--cfg=...` options a simulation on `platform` needs, for smpirun.

    network/model:raw  time = latency + size / bandwidth with fair sharing: no TCP-gamma
        window, no cross traffic, no correction factors (the default SMPI model would
        multiply latencies by up to 11.6 and bandwidths by 0.34..1.09, figures
        calibrated on another cluster);
    network/latency-factor, network/bandwidth-factor  only for a platform calibrated
        piecewise (this-machine): the factors that make the simulated ping-pong follow
        the measured one;
    smpi/host-speed  the hosts' speed, so that computation SMPI benchmarks (when
        simulate-computation is on) counts as long as it ran here;
    smpi/send-is-detached-thresh  only for a platform with an eager limit: MPI_Send
        returns at once below the threshold (SMPI's test is size < threshold) and waits
        for the transfer from it on, as the measured library does above its limit."""
    cfg = ["--cfg=network/model:raw", f"--cfg=smpi/host-speed:{_flops(HOST_SPEED_FLOPS)}"]
    if platform.lat_factors:
        cfg.append(f"--cfg=network/latency-factor:{_factor_string(platform.lat_factors)}")
    if platform.bw_factors:
        cfg.append(f"--cfg=network/bandwidth-factor:{_factor_string(platform.bw_factors)}")
    if platform.eager_limit_bytes is not None:
        cfg.append(f"--cfg=smpi/send-is-detached-thresh:{platform.eager_limit_bytes + 1}")
    return cfg


def sim_env(platform: Platform) -> dict[str, str]:
    """Environment of a simulated launch on `platform`: the computation to charge
    (COLLTUNE_SIM_CHARGE="copy=BYTES:US,BYTES:US,...;reduce=...", read once per simulated
    rank by native/lib/simcharge.c); empty when the platform charges none."""
    if not platform.compute:
        return {}
    return {SIM_CHARGE_ENV: ";".join(f"{k}=" + ",".join(f"{m}:{t:.6g}" for m, t in pts)
                                     for k, pts in sorted(platform.compute.items()))}


def _factor_string(fs) -> str:
    return ";".join(f"{s}:{f:.6g}" for s, f in fs)


def smpirun_files(platform: Platform, np: int, directory: str | Path, mapping: str = "core",
                  order: str = "seq", *, nodes: int | None = None,
                  oversubscribe: bool = False) -> list[str]:
    """Write the platform file and the host file of `np` ranks into `directory`
    (atomically) and return the smpirun options that use them:
    ['-platform', XML, '-hostfile', HOSTS, '--cfg=...', ...]."""

    d = Path(directory)
    hosts = platform.hostfile(np, mapping, order, nodes=nodes, oversubscribe=oversubscribe)
    xml_path = d / f"{_xml_id(platform.name)}.xml"
    host_path = d / f"{_xml_id(platform.name)}-{np}-{mapping}-{order}.hosts"
    write_atomic(xml_path, platform.xml())
    write_atomic(host_path, hosts)
    return ["-platform", str(xml_path), "-hostfile", str(host_path), *simgrid_cfg(platform)]


# --------------------------------------------------------------------------- loading


def loads(text: str, source: str = "<string>") -> Platform:
    """A platform from the text of a description file."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PlatformError(f"{source}: not valid TOML: {exc}") from None
    return from_dict(data, source)


_TOP_KEYS = {"name", "about", "nodes", "sockets", "cores_per_socket", "topology",
             "topo_parameters", "allocation", "eager_limit_bytes", "intra", "network", "factors", "sources",
             "calibration", "compute"}
_SECTION_KEYS = {"intra": {"latency_us", "bandwidth_GBps", "shared_bandwidth_GBps"},
                 "network": {"latency_us", "bandwidth_GBps", "switch_bandwidth_GBps"},
                 "factors": {"latency", "bandwidth"},
                 "compute": set(COMPUTE_KINDS)}


def from_dict(data: dict, source: str = "<dict>") -> Platform:
    unknown = set(data) - _TOP_KEYS
    if unknown:
        bad = sorted(unknown)[0]
        raise PlatformError(f"{source}: unknown key '{bad}'{did_you_mean(bad, _TOP_KEYS)}; "
                            f"valid: {', '.join(sorted(_TOP_KEYS))}")
    for sec, keys in _SECTION_KEYS.items():
        if sec in data:
            if not isinstance(data[sec], dict):
                raise PlatformError(f"{source}: [{sec}] must be a table")
            bad = set(data[sec]) - keys
            if bad:
                b = sorted(bad)[0]
                raise PlatformError(f"{source}: [{sec}] unknown key '{b}'"
                                    f"{did_you_mean(b, keys)}; valid: {', '.join(sorted(keys))}")
    for sec in ("intra", "network"):
        missing = {"latency_us", "bandwidth_GBps"} - set(data.get(sec, {}))
        if missing:
            raise PlatformError(f"{source}: [{sec}] needs {', '.join(sorted(missing))}")
    if "name" not in data:
        raise PlatformError(f"{source}: needs a name")
    nodes = data.get("nodes", 1)
    cps = data.get("cores_per_socket", 1)
    sockets = data.get("sockets", 1)
    if cps == "auto":  # this machine's cores
        cps = max(1, local_cores() // (sockets if isinstance(sockets, int) and sockets > 0 else 1))
    sources = data.get("sources", {})
    if not isinstance(sources, dict) or not all(isinstance(v, str) for v in sources.values()):
        raise PlatformError(f"{source}: [sources] maps a figure to the text of its source")
    factors = data.get("factors", {})
    compute = {}
    for k, v in data.get("compute", {}).items():
        try:
            compute[k] = tuple((int(m), float(t)) for m, t in v)
        except (TypeError, ValueError):
            raise PlatformError(f"{source}: [compute] {k} = [[bytes, us], ...]") from None

    def pairs(key: str):
        v = factors.get(key, [])
        try:
            return tuple((int(s), float(f)) for s, f in v)
        except (TypeError, ValueError):
            raise PlatformError(f"{source}: [factors] {key} = [[size, factor], ...]") from None

    return Platform(
        name=str(data["name"]), about=str(data.get("about", "")), origin=source,
        nodes=nodes, sockets=sockets, cores_per_socket=cps,
        intra_latency_us=data["intra"]["latency_us"],
        intra_bandwidth_GBps=data["intra"]["bandwidth_GBps"],
        intra_shared_bandwidth_GBps=data["intra"].get("shared_bandwidth_GBps"),
        net_latency_us=data["network"]["latency_us"],
        net_bandwidth_GBps=data["network"]["bandwidth_GBps"],
        switch_bandwidth_GBps=data["network"].get("switch_bandwidth_GBps"),
        topology=data.get("topology", "flat"), topo_parameters=str(data.get("topo_parameters", "")),
        allocation=data.get("allocation", "first"),
        eager_limit_bytes=data.get("eager_limit_bytes"),
        sources=dict(sources), calibration=dict(data.get("calibration", {})),
        lat_factors=pairs("latency"), bw_factors=pairs("bandwidth"), compute=compute)


def load(path: str | Path) -> Platform:
    p, text = read_text(path, PlatformError, "platform file {path}: {reason}")
    return loads(text, str(p))


def preset_path(name: str) -> Path:
    """The file a preset is read from (this-machine: the calibration, once made)."""
    if name == THIS_MACHINE:
        cal = calibration_path()
        if cal.is_file():
            return cal
    return _preset_dir() / f"{name}.toml"


def resolve(spec: str) -> Platform:
    """A preset name or the path of a description file; NAME:nodes=N: the same with N
    nodes (flat platforms; e.g. tapems-16x12:nodes=86 holds 1024 ranks of 12 a node)."""
    head, sep, tail = spec.rpartition(":nodes=")
    if sep and head:
        try:
            n = int(tail)
        except ValueError:
            raise PlatformError(f"platform '{spec}': ':nodes=' takes a whole number") from None
        return resolve(head).with_nodes(n)
    if spec in PRESETS:
        return load(preset_path(spec))
    p = Path(spec).expanduser()
    if p.is_file():
        return load(p)
    raise PlatformError(f"platform '{spec}': neither a preset nor a description file"
                        f"{did_you_mean(spec, PRESETS)}; presets: {', '.join(PRESETS)}")


# ---------------------------------------------------------------------------- helpers


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _toml_str(s: str) -> str:
    return json.dumps(str(s), ensure_ascii=False)


def _toml_num(x: float) -> str:
    if isinstance(x, int):
        return str(x)
    r = repr(float(x))
    return r if ("." in r or "e" in r or "inf" in r or "nan" in r) else r + ".0"


def _toml_pairs(fs) -> str:
    return "[" + ", ".join(f"[{s}, {_toml_num(float(f))}]" for s, f in fs) + "]"


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return _toml_num(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, (_dt.date, _dt.datetime)):
        return _toml_str(v.isoformat())
    return _toml_str(str(v))


def local_hostname() -> str:
    return os.uname().nodename


# ------------------------------------------------------------------------ calibration


def fit_hockney(sizes, times_us) -> tuple[float, float, dict]:
    """alpha (us) and beta (GB/s) of t = alpha + m / beta fitted to one-way ping-pong
    times, minimising relative errors with Huber weights (so that a few points
    disturbed by other load do not pull the fit): (alpha, beta, figures of the fit)."""
    import numpy as np

    m = np.asarray(sizes, dtype=float)
    t = np.asarray(times_us, dtype=float)
    if m.size < 2 or len(set(m.tolist())) < 2:
        raise PlatformError("fitting latency and bandwidth needs at least two message sizes")
    if np.any(t <= 0) or np.any(m < 0):
        raise PlatformError("ping-pong times must be > 0 and sizes >= 0")
    X = np.column_stack([np.ones_like(m), m])
    w = 1.0 / t  # relative residuals
    coef = np.array([t.min(), 0.0])
    for _ in range(50):
        sol, *_ = np.linalg.lstsq(X * w[:, None], t * w, rcond=None)
        if sol[0] < 0:  # latency cannot be negative: refit the slope alone
            sol = np.array([0.0, float(np.sum(m * t * w * w) / np.sum(m * m * w * w))])
        if sol[1] <= 0:
            raise PlatformError("the ping-pong times do not grow with the message size: "
                                "no bandwidth can be fitted")
        r = (X @ sol - t) / t
        s = 1.4826 * float(np.median(np.abs(r))) or 1e-12
        k = 1.345 * s
        hub = np.where(np.abs(r) <= k, 1.0, k / np.maximum(np.abs(r), 1e-300))
        w_new = hub / t
        if np.allclose(sol, coef, rtol=1e-9, atol=0):
            break
        coef, w = sol, w_new
    alpha, slope = float(coef[0]), float(coef[1])
    pred = alpha + slope * m
    ratio = t / pred
    info = {"points": int(m.size), "median_abs_rel_error": float(np.median(np.abs(ratio - 1))),
            "max_abs_rel_error": float(np.max(np.abs(ratio - 1))),
            "downweighted_points": [int(x) for x, h in zip(m, hub) if h < 1]}
    return alpha, 1e-3 / slope, info  # slope in us per byte -> GB/s = 1e-3 / slope


def piecewise_factors(sizes, times_us, alpha_us: float, beta_GBps: float,
                      envelope: int = SMPI_ENVELOPE_BYTES):
    """SimGrid factors that make a simulated one-way time equal the measured one at
    every measured size. SMPI sends m + `envelope` bytes for an m-byte message and
    looks its factors up by that payload; with r = measured / (alpha + (m + envelope)
    / beta), latency x r and bandwidth x 1/r scale the whole simulated time by r.
    Intervals switch half-way (geometrically) between two measured payloads.
    Returns (lat_factors, bw_factors)."""
    pts = sorted(zip(sizes, times_us))
    lat, bw = [], []
    for i, (m, t) in enumerate(pts):
        r = t / (alpha_us + (m + envelope) / (beta_GBps * 1e3))
        bound = 0 if i == 0 else int(math.sqrt((pts[i - 1][0] + envelope) * (m + envelope)))
        if lat and bound <= lat[-1][0]:
            continue
        lat.append((bound, round(r, 6)))
        bw.append((bound, round(1.0 / r, 6)))
    return tuple(lat), tuple(bw)


def fit_shared_bandwidth(single: Mapping[int, float], pair: Mapping[int, float]):
    """The memory bus of a node (GB/s, `[intra] shared_bandwidth_GBps`) that best explains
    one message and two concurrent ones (colltune-pingpong --mode exchange) at the sizes
    measured both ways: simulated, m bytes alone take m / min(r(m), B) and two at once
    m / min(r(m), B / 2), r(m) = m / single(m) (bandwidth-bound sizes: latency left out).
    Least squares of log(simulated / measured) over both; None when no bus fits better
    than none (two messages at once cost what one does). Returns (B, info)."""
    sizes = sorted(m for m in pair if m in single and m > 0)
    if not sizes:
        raise PlatformError("exchange: no size measured both alone and as an exchange")

    def cost(b: float) -> float:
        err = 0.0
        for m in sizes:
            r = m / single[m]
            err += math.log((m / min(r, b)) / single[m]) ** 2
            err += math.log((m / min(r, b / 2)) / pair[m]) ** 2
        return err

    rates = [m / single[m] for m in sizes]  # bytes/us = MB/s
    grid = [b for b in (min(rates) * 0.5 * 1.01 ** i for i in range(400))
            if b <= 2.5 * max(rates)]
    best = min(grid, key=cost)
    ratios = {m: round(pair[m] / single[m], 3) for m in sizes}
    if cost(best) >= cost(math.inf):
        return None, {"pair_over_single": ratios}
    return best / 1e3, {"pair_over_single": ratios}


def compute_points(points: list[dict], statistic: str = "min") -> tuple[tuple[int, float], ...]:
    """((size, us), ...) of a local operation from colltune-gamma records (one size a
    record: size, min_us, median_us): the table simulation charges a copy or a
    reduction from (Platform.compute)."""
    key = {"min": "min_us", "median": "median_us"}.get(statistic)
    if key is None:
        raise PlatformError(f"statistic '{statistic}': valid: min, median")
    pts = sorted({int(r["size"]): round(float(r[key]), 6) for r in points}.items())
    if not pts:
        raise PlatformError("no local-operation records to calibrate from")
    return tuple(pts)


def _across_nodes(p: Platform, nodes: int, host: str, basis: str) -> Platform:
    """A calibration whose ping-pong crossed `nodes` nodes (MPI saw its processes apart:
    `colltune cluster`, a hostfile): those nodes, one process's share of the cores each,
    the fitted figures as the network's; two messages at once are not a memory bus."""
    per, net, intra = max(1, p.cores_per_socket // nodes), f"of {basis}, between two nodes", \
        "not measured (the ping-pong crossed nodes): as the network"
    src = {k: v for k, v in p.sources.items() if k != "intra_shared_bandwidth_GBps"}
    return replace(
        p, nodes=nodes, cores_per_socket=per, intra_shared_bandwidth_GBps=None,
        about=f"{nodes} nodes as MPI saw them from {host} (a ping-pong process on each), "
              f"calibrated {p.calibration['date']}", calibration={**p.calibration, "nodes": nodes},
        sources={**src, "nodes": f"the nodes MPI saw the ping-pong's processes on: {nodes}",
                 "cores_per_socket": f"{p.cores_per_socket} cores usable on {host} / {nodes}",
                 "net_latency_us": f"Hockney fit (alpha) {net}", "intra_latency_us": intra,
                 "net_bandwidth_GBps": f"Hockney fit (beta) {net}", "intra_bandwidth_GBps": intra})


def calibrated(records: list[dict], *, statistic: str = "min", piecewise: bool = True,
               cores: int | None = None, command: str = "", when: str | None = None,
               compute: Mapping[str, dict] | None = None,
               eager: Mapping[str, Any] | None = None,
               exchange: list[dict] | None = None) -> Platform:
    """`this-machine` from ping-pong records (colltune-pingpong's, 2 processes, one size a
    record): one node with this machine's cores, intra-node latency/bandwidth fitted
    (Hockney), and the piecewise factors (unless `piecewise` is false) that make the
    simulated ping-pong follow the measured one size by size. `statistic`: which
    time of a record (min: the least disturbed by other load; median).
    `compute`: kind ("copy", "reduce") -> {"points": colltune-gamma records,
    "command": how they were measured, "pool_bytes": the pool of buffers they were
    timed on, None for one pair (optional)}: the charged computation (compute_points).
    `eager`: the record of colltune-pingpong --mode eager: the eager limit.
    `exchange`: records of colltune-pingpong --mode exchange (two messages at once): the
    node's memory bus (fit_shared_bandwidth), when one fits; records of that kind among
    `records` count too."""
    key = {"min": "min_us", "median": "median_us"}.get(statistic)
    if key is None:
        raise PlatformError(f"statistic '{statistic}': valid: min, median")
    recs = [r for r in records if r.get("kind", "pingpong") == "pingpong"]
    exchange = list(exchange or []) + [r for r in records if r.get("kind") == "exchange"]
    if not recs:
        raise PlatformError("no ping-pong records to calibrate from")
    sizes = [int(r["size"]) for r in recs]
    times = [float(r[key]) for r in recs]
    alpha, beta, info = fit_hockney(sizes, times)
    lat_f, bw_f = piecewise_factors(sizes, times, alpha, beta) if piecewise else ((), ())
    ncores = cores or local_cores()
    when = when or _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    host = local_hostname()
    mpi = recs[0].get("mpi", "")
    basis = (f"colltune platform calibrate on {host}, {when}: {len(recs)} ping-pong sizes "
             f"({min(sizes)}..{max(sizes)} B), {statistic} one-way time of each")
    cal = {"date": when, "host": host, "mpi": mpi, "command": command, "statistic": statistic,
           "sizes": sizes, "times_us": times, "alpha_us": alpha, "beta_GBps": beta,
           "fit_median_abs_rel_error": info["median_abs_rel_error"],
           "fit_max_abs_rel_error": info["max_abs_rel_error"],
           "fit_downweighted_sizes": info["downweighted_points"],
           "piecewise": bool(piecewise)}
    charge: dict[str, tuple[tuple[int, float], ...]] = {}
    comp_sources = {}
    for kind, m in (compute or {}).items():
        pts = charge[kind] = compute_points(m["points"], statistic)
        what = "memcpy" if kind == "copy" else "MPI_Reduce_local (char, sum)"
        pool = m.get("pool_bytes")
        data = (f", data from memory (buffers taken in turn from a pool of {pool >> 20} MiB)"
                if pool else ", data in the cache (one pair of buffers, reused)"
                if "pool_bytes" in m else "")
        comp_sources[f"compute_{kind}"] = (
            f"{what} on one process, {statistic} time of {len(pts)} sizes "
            f"({pts[0][0]}..{pts[-1][0]} B){data}, colltune platform calibrate on {host}, "
            f"{when}")
        cal[f"{kind}_command"] = m.get("command", "")
    shared = None
    if exchange:
        single = {m: t for m, t in zip(sizes, times)}
        pair = {int(r["size"]): float(r[key]) for r in exchange}
        shared, sinfo = fit_shared_bandwidth(single, pair)
        used = sorted(sinfo["pair_over_single"])  # the sizes measured both ways
        cal["exchange_sizes"] = used
        cal["exchange_times_us"] = [pair[m] for m in used]
        cal["exchange_over_pingpong"] = [sinfo["pair_over_single"][m] for m in used]
        if shared is not None:
            shared = round(shared, 6)
            comp_sources["intra_shared_bandwidth_GBps"] = (
                f"memory bus fitted to one message and two at once (colltune-pingpong "
                f"--mode exchange, {statistic} of each) at {len(used)} sizes "
                f"({used[0]}..{used[-1]} B), colltune platform calibrate on {host}, "
                f"{when}: two concurrent messages took "
                + ", ".join(f"{v:.2f}x" for v in sinfo["pair_over_single"].values())
                + " the time of one")
    if eager:
        comp_sources["eager_limit_bytes"] = (
            f"largest MPI_Send that returned before the receive was posted (median of "
            f"{eager.get('reps')} sends a size, receiver {eager.get('delay_us')} us late), "
            f"colltune platform calibrate on {host}, {when}")
        cal["eager_command"] = eager.get("command", "")
    p = Platform(
        name=THIS_MACHINE, nodes=1, sockets=1, cores_per_socket=ncores,
        about=f"this machine ({host}): one node with its {ncores} cores, calibrated {when}",
        intra_latency_us=round(alpha, 6), intra_bandwidth_GBps=round(beta, 6),
        # one node: the network is never used; the intra-node figures stand in
        net_latency_us=round(alpha, 6), net_bandwidth_GBps=round(beta, 6),
        sources={"nodes": "this machine: one node",
                 "sockets": "shown as one socket (one host: sockets are not told apart)",
                 "cores_per_socket": f"this machine: {ncores} cores usable (sched_getaffinity), "
                                     "shown as one socket",
                 "intra_latency_us": f"Hockney fit (alpha) of {basis}",
                 "intra_bandwidth_GBps": f"Hockney fit (beta) of {basis}",
                 "net_latency_us": "unused (one node); set to the intra-node figure",
                 "net_bandwidth_GBps": "unused (one node); set to the intra-node figure",
                 "factors": ("piecewise SimGrid latency/bandwidth factors: simulated one-way "
                             "time = measured time at each calibrated size" if piecewise
                             else "none: plain Hockney"), **comp_sources},
        calibration=cal, lat_factors=lat_f, bw_factors=bw_f, compute=charge,
        eager_limit_bytes=int(eager["eager_limit"]) if eager else None,
        intra_shared_bandwidth_GBps=shared)
    nodes = max(int(r.get("nodes_seen") or 1) for r in recs)
    return _across_nodes(p, nodes, host, basis) if nodes > 1 else p
