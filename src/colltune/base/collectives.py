"""The collectives colltune implements, measures and tunes (the one list)."""

from __future__ import annotations

COLLECTIVES = ("bcast", "reduce", "gather", "allgather", "allreduce", "alltoall", "alltoallv",
               "scatter", "barrier", "allgatherv")

# collectives whose size is per process: the message of the whole call is size x processes
# (Alltoall(v): bytes per process per destination, as osu_alltoall; each process sends
# size x processes; Allgatherv: bytes per process on average, the whole result / processes,
# as osu_allgatherv)
PER_PROCESS = ("gather", "allgather", "alltoall", "alltoallv", "scatter", "allgatherv")


def per_process(collective: str) -> bool:
    """True when `collective`'s size counts bytes per process (gather, allgather,
    scatter; alltoall, alltoallv: per destination; allgatherv: on average). Barrier moves
    no data: size 0."""
    return collective in PER_PROCESS
