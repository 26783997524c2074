"""`colltune traffic`: the bytes and messages one call of an algorithm sends inside and
between (virtual) nodes, counted from its actual sends (drivers/traffic.py)."""

from __future__ import annotations

from colltune.base.errors import ColltuneError
from colltune.base.specs import with_remap
from colltune.drivers import registry
from colltune.drivers import traffic as traffic_mod
from colltune.mpi.build import Build

__all__ = ["count"]


def parse_node_list(text: str) -> list[int]:
    """--node-list '0,0,1,1,2': the node of each rank."""
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ColltuneError(f"--node-list '{text}': give integers, e.g. 0,0,1,1,2") from None


def count(build: Build, collective: str, spec: str, nps: list[int], sizes: list[int], *,
          remap: str | None = None, nodes: int | None = None, order: str = "seq",
          node_list: list[int] | None = None, root: int = 0, timeout: float = 600
          ) -> list[list]:
    """One launch per process count of `spec` (with remap=... added when `remap` is
    given), checked against the build's table first; per count, the Traffic record of
    each size."""
    full = with_remap(spec, remap)
    registry.check_specs(build, collective, [full])
    return [traffic_mod.count(build, collective, full, np_, sizes, nodes=nodes, order=order,
                              node_list=node_list, root=root, timeout=timeout)
            for np_ in nps]
