"""The collectives colltune implements, measures and tunes (the one list)."""

from __future__ import annotations

COLLECTIVES = ("bcast", "reduce", "gather", "allgather", "allreduce", "alltoall", "alltoallv",
               "scatter", "barrier", "reduce_scatter_block", "reduce_scatter", "allgatherv")

# collectives whose size is per process: the message of the whole call is size x processes
# (Alltoall(v): bytes per process per destination, as osu_alltoall; each process sends
# size x processes; Reduce_scatter(_block): bytes each process receives, one block, of a
# vector of size x processes; Reduce_scatter with uneven counts: their average;
# Allgatherv: bytes per process on average, the whole result / processes, as
# osu_allgatherv)
PER_PROCESS = ("gather", "allgather", "alltoall", "alltoallv", "scatter",
               "reduce_scatter_block", "reduce_scatter", "allgatherv")


def per_process(collective: str) -> bool:
    """True when `collective`'s size counts bytes per process (gather, allgather,
    scatter; alltoall, alltoallv: per destination; reduce_scatter(_block): the block each
    process receives; allgatherv: on average). Barrier moves no data: size 0."""
    return collective in PER_PROCESS


def mpi_name(collective: str) -> str:
    """The C entry point of one of colltune's collectives: reduce_scatter_block ->
    MPI_Reduce_scatter_block."""
    return "MPI_" + collective[:1].upper() + collective[1:]


def intercepted(call: str) -> str | None:
    """The collective colltune runs behind the MPI entry point `call` (MPI_Bcast -> bcast),
    or None when the call stays the MPI library's own (MPI_Iallreduce, MPI_Gatherv,
    MPI_Bcast_c, ...): the interposition library intercepts the blocking C entry points
    of COLLECTIVES. The one place `colltune profile` asks what colltune can choose."""
    coll = call[len("MPI_"):].lower() if call.startswith("MPI_") else ""
    return coll if coll in COLLECTIVES and mpi_name(coll) == call else None
