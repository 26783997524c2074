"""The collectives colltune implements, measures and tunes (the one list)."""

from __future__ import annotations

COLLECTIVES = ("bcast", "reduce", "gather", "allgather", "allreduce", "alltoall", "alltoallv",
               "scatter", "barrier", "reduce_scatter_block", "reduce_scatter", "allgatherv",
               "gatherv", "scatterv")

# collectives whose size is per process: the message of the whole call is size x processes
# (Alltoall(v): bytes per process per destination, as osu_alltoall; each process sends
# size x processes; Reduce_scatter(_block): bytes each process receives, one block, of a
# vector of size x processes; Reduce_scatter with uneven counts: their average;
# Allgatherv, Gatherv, Scatterv: bytes per process on average, the whole result / processes,
# as osu_allgatherv, osu_gatherv, osu_scatterv)
PER_PROCESS = ("gather", "allgather", "alltoall", "alltoallv", "scatter",
               "reduce_scatter_block", "reduce_scatter", "allgatherv", "gatherv", "scatterv")

# collectives whose size differs from rank to rank: a rank knows only its own counts
# (Alltoallv: what it receives; Gatherv, Scatterv: its own block, the root all of them),
# and every rank must run the same algorithm (two algorithms need not send the same
# messages, empty ones included), so the interposition library chooses for them by the
# process count alone, and a colltune rules file's lines for them cover every size
# (SIZE_MIN 0, SIZE_MAX -); Open MPI's coll/tuned measures every Alltoallv as 0 bytes
# for the same reason
SIZE_BLIND = ("alltoallv", "gatherv", "scatterv")

# What a stored measurement measures (the measurements table's `kind` column): a
# collective (one of COLLECTIVES, or a collective some older colltune measured), the
# cost model's ping-pong, other point-to-point figures, the heat-diffusion application
# (its STREAM bandwidth included), or an application's own run. Readers select by kind,
# never by collective name.
MEASUREMENT_KINDS = ("collective", "pingpong", "p2p", "heat", "app")
# the `collective` names that are not collectives, with their kind
NOT_COLLECTIVES = {"pingpong": "pingpong", "p2p": "p2p", "heat": "heat", "app": "app"}


def per_process(collective: str) -> bool:
    """True when `collective`'s size counts bytes per process (gather, allgather,
    scatter; alltoall, alltoallv: per destination; reduce_scatter(_block): the block each
    process receives; allgatherv, gatherv, scatterv: on average). Barrier moves no data:
    size 0."""
    return collective in PER_PROCESS


def measurement_kind(collective) -> str:
    """The kind of a measurement stored under this `collective` name (MEASUREMENT_KINDS):
    'heat' for the heat study's points, 'pingpong' for the cost model's ping-pong, ...,
    'collective' for every other name."""
    return NOT_COLLECTIVES.get(str(collective), "collective")


def mpi_name(collective: str) -> str:
    """The C entry point of one of colltune's collectives: reduce_scatter_block ->
    MPI_Reduce_scatter_block."""
    return "MPI_" + collective[:1].upper() + collective[1:]


def intercepted(call: str) -> str | None:
    """The collective colltune runs behind the MPI entry point `call` (MPI_Bcast -> bcast),
    or None when the call stays the MPI library's own (MPI_Iallreduce, MPI_Alltoallw,
    MPI_Bcast_c, ...): the interposition library intercepts the blocking C entry points
    of COLLECTIVES. The one place `colltune profile` asks what colltune can choose."""
    coll = call[len("MPI_"):].lower() if call.startswith("MPI_") else ""
    return coll if coll in COLLECTIVES and mpi_name(coll) == call else None
