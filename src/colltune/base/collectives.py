"""The collectives colltune implements, measures and tunes (the one list)."""

from __future__ import annotations

COLLECTIVES = ("bcast", "reduce", "gather", "allgather", "allreduce")

# collectives whose size is per process: the message of the whole call is size x processes
PER_PROCESS = ("gather", "allgather")


def per_process(collective: str) -> bool:
    """True when `collective`'s size counts bytes per process (gather, allgather)."""
    return collective in PER_PROCESS
