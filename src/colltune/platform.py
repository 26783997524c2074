"""SimGrid platforms: the simulated machines `--mpi smpi` runs on.

A small placeholder with the interface the platform module has (`Platform`,
`resolve`, `PRESETS`): clusters of identical nodes behind one switch, written as
a SimGrid 4 `<cluster>`. It knows the presets `flat` and `tapems-16x12`; the full
module (descriptions, topologies, every preset) replaces it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import ColltuneError

PRESETS: tuple[str, ...] = ("tapems-16x12", "orfeo-thin", "cloud-8vm", "marconi100",
                            "this-machine", "flat")
MAPPINGS = ("core", "socket", "node")
ORDERS = ("seq", "rr")


class PlatformError(ColltuneError, ValueError):
    """A platform cannot be resolved or used as asked."""


@dataclass(frozen=True)
class Platform:
    name: str
    nodes: int = 1
    sockets: int = 1
    cores: int = 1  # per socket
    lat_s: float = 1e-6  # inter-node latency (per link: node -> switch)
    bw_Bps: float = 1.25e9  # inter-node bandwidth per link
    intra_lat_s: float = 1e-7  # loopback: two ranks of one node
    intra_bw_Bps: float = 1e10
    speed_flops: float = 1e9
    sources: tuple[str, ...] = field(default_factory=tuple)

    @property
    def cores_per_node(self) -> int:
        return self.sockets * self.cores

    def xml(self) -> str:
        """The SimGrid 4 platform file: one cluster, nodes node-0 ... node-(N-1)."""
        return (
            "<?xml version='1.0'?>\n"
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1">\n'
            f'  <cluster id="{self.name}" prefix="node-" suffix="" radical="0-{self.nodes - 1}"'
            f' speed="{self.speed_flops:g}f" core="{self.cores_per_node}"'
            f' bw="{self.bw_Bps:g}Bps" lat="{self.lat_s:g}s"'
            f' loopback_bw="{self.intra_bw_Bps:g}Bps" loopback_lat="{self.intra_lat_s:g}s"/>\n'
            "</platform>\n")

    def describe(self) -> dict:
        return {"name": self.name, "nodes": self.nodes, "sockets": self.sockets,
                "cores_per_socket": self.cores, "topology": "flat",
                "inter_latency_s": self.lat_s, "inter_bandwidth_Bps": self.bw_Bps,
                "intra_latency_s": self.intra_lat_s, "intra_bandwidth_Bps": self.intra_bw_Bps,
                "speed_flops": self.speed_flops, "sources": list(self.sources)}

    def rank_hosts(self, np: int, mapping: str = "core", order: str = "seq") -> list[str]:
        """Host of every rank. core: consecutive ranks fill a node; socket: alternate
        sockets of a node (same host here); node: one rank per node in turn. seq/rr:
        block or round-robin over nodes. More ranks than cores: ranks share cores
        (wrapping around), which the simulation allows (no computation simulated)."""
        if mapping not in MAPPINGS:
            raise PlatformError(f"mapping '{mapping}': valid: {', '.join(MAPPINGS)}")
        if order not in ORDERS:
            raise PlatformError(f"order '{order}': valid: {', '.join(ORDERS)}")
        if np < 1:
            raise PlatformError(f"process count {np}: must be at least 1")
        per = self.cores_per_node
        if mapping == "node" or order == "rr":
            nodes = [r % self.nodes for r in range(np)]
        else:
            nodes = [(r // per) % self.nodes for r in range(np)]
        return [f"node-{n}" for n in nodes]


_PRESETS = {
    "flat": Platform("flat", nodes=64, sockets=1, cores=16, lat_s=1e-6, bw_Bps=1.25e9,
                     intra_lat_s=1e-7, intra_bw_Bps=1e10,
                     sources=("assumed round figures: 1 us, 10 Gb/s per link, one switch",)),
    "tapems-16x12": Platform(
        "tapems-16x12", nodes=16, sockets=2, cores=6, lat_s=1.3e-6, bw_Bps=3.2e9,
        intra_lat_s=3e-7, intra_bw_Bps=5e9,
        sources=("seed 003: 16 nodes x 12 cores, QDR InfiniBand",
                 "QDR 4x: 40 Gb/s signalling, 32 Gb/s data = 4 GB/s; 3.2 GB/s assumed achieved",
                 "latency 1.3 us: typical QDR MPI ping-pong (assumed)")),
}


def resolve(spec: str) -> Platform:
    """A preset by name (a description file is read by the full platform module)."""
    if spec in _PRESETS:
        return _PRESETS[spec]
    raise PlatformError(f"platform '{spec}': this colltune knows the presets "
                        f"{', '.join(sorted(_PRESETS))} (of {', '.join(PRESETS)})")
