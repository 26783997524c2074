"""`colltune platform list|show|write`: simulated platforms from their descriptions
(mpi/platforms.py); `platform calibrate` is workflows/calibrate.py."""

from __future__ import annotations

from dataclasses import dataclass

from colltune.mpi import platforms as plat

__all__ = ["presets", "PlatformFiles", "files"]


def presets() -> list[plat.Platform]:
    """Every preset, resolved (the this-machine one from its calibration when there is
    one)."""
    return [plat.resolve(name) for name in plat.PRESETS]


@dataclass
class PlatformFiles:
    """What `platform write` writes: the SimGrid platform file (XML), the host file of
    a process count (one host a rank) and the description (TOML), when asked."""

    platform: plat.Platform
    xml: str
    hosts: str | None = None
    description: str | None = None

    @property
    def nodes_used(self) -> int:
        return len(set(self.hosts.split())) if self.hosts else 0


def files(name: str, np: int | None = None, mapping: str = "core", order: str = "seq",
          nodes: int | None = None, oversubscribe: bool = False,
          description: bool = False) -> PlatformFiles:
    """The files of platform `name` (a preset, PRESET:nodes=N or a description file):
    with `np`, the host file placing np ranks (mapping, order, nodes, oversubscribe as
    Platform.hostfile takes them)."""
    p = plat.resolve(name)
    hosts = p.hostfile(np, mapping, order, nodes=nodes, oversubscribe=oversubscribe) \
        if np is not None else None
    return PlatformFiles(p, p.xml(), hosts, p.to_toml() if description else None)
