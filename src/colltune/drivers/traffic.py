"""Traffic accounting: the bytes and messages one call of a colltune algorithm sends
inside nodes and between nodes, counted from the algorithm's own sends.

`count` launches colltune-traffic-count on `np` local processes with virtual nodes
(COLLTUNE_NODES; see docs/remapping.md): every send the algorithm makes through the
library is counted per destination rank, then classified as intra- or inter-node by
the communicator's placement. Nothing is timed, so any process count runs on this
machine (oversubscribed), as long as memory allows.

`loggp_volumes` gives the seed's per-rank volumes (seed 003's LogGP table) for the
comparison: recursive doubling Allgather, P = M*Q, message m per process.
"""

from __future__ import annotations

from dataclasses import dataclass

from colltune.drivers.run import run_program
from colltune.mpi.build import Build
from colltune.mpi.placement import ORDERS
from colltune.base.errors import ColltuneError



@dataclass(frozen=True)
class Traffic:
    """One call: the placement and, per rank, what it sent (bytes, messages)."""

    collective: str
    spec: str
    algorithm: str
    fallback: str | None
    remap_applied: str
    np: int
    nodes: int
    max_per_node: int
    regular: bool
    placement: str
    size: int
    root: int
    node: tuple[int, ...]
    ranks: tuple[tuple[int, int, int, int], ...]  # intra bytes, intra msgs, inter bytes, msgs

    @property
    def total(self) -> dict[str, int]:
        keys = ("intra_bytes", "intra_msgs", "inter_bytes", "inter_msgs")
        return {k: sum(r[i] for r in self.ranks) for i, k in enumerate(keys)}

    def per_rank(self) -> list[dict[str, int]]:
        return [{"rank": i, "node": self.node[i], "intra_bytes": r[0], "intra_msgs": r[1],
                 "inter_bytes": r[2], "inter_msgs": r[3]} for i, r in enumerate(self.ranks)]

    def as_dict(self) -> dict:
        return {"collective": self.collective, "spec": self.spec, "algorithm": self.algorithm,
                "fallback": self.fallback, "remap_applied": self.remap_applied, "np": self.np,
                "nodes": self.nodes, "max_per_node": self.max_per_node,
                "regular": self.regular, "placement": self.placement, "size": self.size,
                "root": self.root, "total": self.total, "per_rank": self.per_rank()}


def node_env(nodes: int | None = None, order: str = "seq",
             node_list: list[int] | None = None) -> dict[str, str]:
    """The COLLTUNE_NODES / COLLTUNE_NODE_ORDER environment of a virtual placement."""
    if node_list is not None:
        if any(n < 0 for n in node_list):
            raise ColltuneError("node list: node numbers must be >= 0")
        return {"COLLTUNE_NODES": ",".join(map(str, node_list)) + ("," if len(node_list) == 1
                                                                   else "")}
    if nodes is None:
        return {}
    if nodes < 1:
        raise ColltuneError(f"--nodes {nodes}: give at least 1 node")
    if order not in ORDERS:
        raise ColltuneError(f"--order '{order}': valid: {', '.join(ORDERS)}")
    return {"COLLTUNE_NODES": str(nodes), "COLLTUNE_NODE_ORDER": order}


def count(build: Build, collective: str, spec: str, np: int, sizes: list[int], *,
          nodes: int | None = None, order: str = "seq", node_list: list[int] | None = None,
          root: int = 0, timeout: float = 600) -> list[Traffic]:
    """Count one call per size; one Traffic per size."""
    if node_list is not None and len(node_list) != np:
        raise ColltuneError(f"node list has {len(node_list)} entries for {np} processes")
    if collective in ("reduce", "allreduce"):
        bad = [s for s in sizes if s % 4]
        if bad:
            raise ColltuneError(f"{collective} sizes are ints summed: {bad[0]} B is not a "
                                "multiple of 4")
    prog = ["--coll", collective, "--algo", spec, "--sizes", ",".join(map(str, sizes)),
            "--root", str(root)]
    res = run_program(build, "colltune-traffic-count", np, prog, timeout=timeout,
                      extra_env=node_env(nodes, order, node_list))
    out = []
    for d in res.records:
        out.append(Traffic(d["collective"], d["spec"], d["algorithm"], d["fallback"],
                           d["remap_applied"], d["np"], d["nodes"], d["max_per_node"],
                           d["regular"], d["placement"], d["size"], d["root"],
                           tuple(d["node"]), tuple(tuple(r) for r in d["ranks"])))
    if len(out) != len(sizes):
        raise ColltuneError(f"colltune-traffic-count printed {len(out)} records for "
                            f"{len(sizes)} sizes")
    return out


def loggp_volumes(algorithm: str, order: str, M: int, Q: int, m: int) -> dict[str, int]:
    """Seed 003's per-rank volumes of recursive doubling Allgather (P = M*Q a power of
    two, m bytes per process): SEQ intra (Q-1)m, inter (M-1)Qm; RR intra (Q-1)Mm,
    inter (M-1)m."""
    if algorithm != "recursive_doubling":
        raise ColltuneError("the seed's table covers recursive_doubling only")
    if order == "seq":
        return {"intra_bytes": (Q - 1) * m, "inter_bytes": (M - 1) * Q * m}
    if order == "rr":
        return {"intra_bytes": (Q - 1) * M * m, "inter_bytes": (M - 1) * m}
    raise ColltuneError(f"order '{order}': valid: seq, rr")
