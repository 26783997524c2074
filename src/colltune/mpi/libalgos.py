"""The MPI library's own algorithms as benchmark candidates.

A spec `ompi:NAME[:k=v,...]` or `mpich:NAME[:k=v,...]` names one algorithm of the
MPI library's own collective and forces it through the library's environment
variables:

  Open MPI 5.0.x (coll/tuned)
      OMPI_MCA_coll_tuned_use_dynamic_rules=1
      OMPI_MCA_coll_tuned_<coll>_algorithm=<number>        (from ompi_info)
      OMPI_MCA_coll_tuned_<coll>_algorithm_segmentsize / _chain_fanout /
      _max_requests, OMPI_MCA_coll_tuned_bcast_algorithm_knomial_radix
      OMPI_MCA_coll=^han   (han, priority 35, would otherwise win over tuned,
                            priority 30, on communicators that span nodes)
  MPICH 5.0.x
      MPIR_CVAR_DEVICE_COLLECTIVES=none   (so the ch4 device cannot override the
                                           MPIR-level algorithm)
      MPIR_CVAR_<COLL>_INTRA_ALGORITHM=<name>
      MPIR_CVAR_<COLL>_TREE_KVAL / _TREE_TYPE / _TREE_PIPELINE_CHUNK_SIZE, ...

Open MPI's coll/tuned reads its forced algorithm (and the parameters) when a
communicator is made, and the variables are MPI_T control variables that stay
writable after MPI_Init (scope "all", no binding; verified with the observer
observers/ompi_algos.c, tests/test_libalgos.py). So under Open MPI each library
algorithm runs in the same launch as `native` and colltune's algorithms, on a
communicator of its own (`lib_cvars`: colltune-bench --lib LABEL --cvars ...: write,
MPI_Comm_dup, write the old values back), with only
OMPI_MCA_coll_tuned_use_dynamic_rules=1 in the launch's environment (without rules or
a forced algorithm tuned then takes its fixed decision: native is unchanged) and
coll/han's priority written to 0 for that communicator instead of excluding han from
the launch. Its repetitions are then paired in time with native's.

MPICH keeps MPIR_CVAR_<COLL>_INTRA_ALGORITHM process-wide (scope "all, equal"; no
communicator keeps its own choice), and forcing an algorithm needs
MPIR_CVAR_DEVICE_COLLECTIVES=none for the whole launch (which changes native's path
too): MPICH's algorithms run in launches of their own (`native` under the forcing
environment), alternated with the launch of ours and native (A B C A B C ...) one
repetition at a time by drivers.bench.run_bench; a study interleaves them in its
shuffled order. See docs/library-algorithms.md.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from colltune.mpi.libraries import MPI
from colltune.base.collectives import COLLECTIVES
from typing import Any

from colltune.base.specs import (algorithm_of, format_params, is_lib_spec, parse_lib_spec,
                                 parse_params, split_spec)
from colltune.base.units import parse_size

LIBRARIES = {"ompi": "openmpi", "mpich": "mpich"}
LIBRARY_NAMES = {"ompi": "Open MPI", "mpich": "MPICH"}


# --------------------------------------------------------------------------- tables


@dataclass(frozen=True)
class Param:
    """A parameter of a library algorithm: spec key -> environment variable."""

    key: str
    var: str  # environment variable ({coll} and {COLL} are filled in)
    kind: str = "int"  # "int", "size" (accepts 64K) or "choice"
    min: int = 0
    choices: tuple[str, ...] = ()
    help: str = ""
    default: int | str | None = None  # the library's value when the spec does not set it


    def env_name(self, collective: str) -> str:
        return self.var.format(coll=collective, COLL=collective.upper())


@dataclass(frozen=True)
class LibAlgo:
    library: str  # "ompi" or "mpich"
    collective: str
    name: str  # colltune's name where it is the same algorithm
    selector: str  # the value written to the selecting variable
    lib_name: str  # the library's own name (ompi_info enumerator / MPICH CVAR value)
    params: tuple[Param, ...] = ()
    aliases: tuple[str, ...] = ()
    np_exact: int | None = None  # runs only at this process count (else the library errors)
    in_all: bool = True  # part of `--algo all`
    note: str = ""

    @property
    def spec(self) -> str:
        return f"{self.library}:{self.name}"


# Open MPI coll/tuned parameters, as the 5.0.x forced-algorithm path reads them:
# every segmented algorithm gets coll_tuned_<coll>_algorithm_segmentsize, chain
# gets _chain_fanout as its number of chains (coll_tuned passes chain_fanout, not
# tree_fanout, as "faninout"), knomial bcast reads coll_tuned_bcast_algorithm_knomial_radix,
# the segmented reduce trees read _max_requests.
# The defaults are Open MPI 5.0.x's values of the MCA parameters (checked against
# ompi_info by table_problems): a forced algorithm without segsize runs unsegmented.
_O_SEG = Param("segsize", "OMPI_MCA_coll_tuned_{coll}_algorithm_segmentsize", "size", 0,
               help="segment size in bytes, 0 = unsegmented", default=0)
_O_FAN = Param("fanout", "OMPI_MCA_coll_tuned_{coll}_algorithm_chain_fanout", "int", 1,
               help="number of chains", default=4)
_O_RADIX = Param("radix", "OMPI_MCA_coll_tuned_bcast_algorithm_knomial_radix", "int", 2,
                 help="k-nomial radix", default=4)
_O_MAXREQ = Param("max_requests", "OMPI_MCA_coll_tuned_reduce_algorithm_max_requests", "int",
                  0, help="outstanding sends on leaves, 0 = unlimited", default=0)
_O_A2A_MAXREQ = Param("max_requests", "OMPI_MCA_coll_tuned_alltoall_algorithm_max_requests",
                      "int", 0, help="outstanding sends and receives, 0 = all at once",
                      default=0)


def _o(coll: str, number: int, lib_name: str, name: str, params=(), aliases=(), **kw) -> LibAlgo:
    aliases = tuple(a for a in (lib_name, *aliases) if a != name)
    return LibAlgo("ompi", coll, name, str(number), lib_name, tuple(params), aliases, **kw)


# Verified against `ompi_info --param coll tuned --level 9 --parsable` of Open MPI
# 5.0.11 by tests/test_libalgos.py (enumerator numbers and names, 0 = ignore left out).
OMPI_VERSION_SERIES = "5.0"
OMPI: dict[str, tuple[LibAlgo, ...]] = {
    "bcast": (
        _o("bcast", 1, "basic_linear", "linear"),
        _o("bcast", 2, "chain", "chain", (_O_SEG, _O_FAN)),
        _o("bcast", 3, "pipeline", "pipeline", (_O_SEG,)),
        _o("bcast", 4, "split_binary_tree", "split_binary", (_O_SEG,)),
        _o("bcast", 5, "binary_tree", "binary", (_O_SEG,)),
        _o("bcast", 6, "binomial", "binomial", (_O_SEG,)),
        _o("bcast", 7, "knomial", "knomial", (_O_SEG, _O_RADIX)),
        _o("bcast", 8, "scatter_allgather", "scatter_allgather", (_O_SEG,)),
        _o("bcast", 9, "scatter_allgather_ring", "scatter_ring_allgather", (_O_SEG,)),
    ),
    "reduce": (
        _o("reduce", 1, "linear", "linear", aliases=("basic_linear",)),
        _o("reduce", 2, "chain", "chain", (_O_SEG, _O_FAN, _O_MAXREQ)),
        _o("reduce", 3, "pipeline", "pipeline", (_O_SEG, _O_MAXREQ)),
        _o("reduce", 4, "binary", "binary", (_O_SEG, _O_MAXREQ)),
        _o("reduce", 5, "binomial", "binomial", (_O_SEG, _O_MAXREQ)),
        _o("reduce", 6, "in-order_binary", "in_order_binary", (_O_SEG, _O_MAXREQ)),
        _o("reduce", 7, "rabenseifner", "rabenseifner", aliases=("redscat_gather",),
           note="reduce-scatter + binomial gather; Open MPI falls back to linear when "
                "count < 2^floor(log2 p) or the op is not commutative"),
    ),
    "gather": (
        _o("gather", 1, "basic_linear", "linear"),
        _o("gather", 2, "binomial", "binomial"),
        _o("gather", 3, "linear_sync", "linear_sync", (_O_SEG,),
           note="segsize is the size of the first segment each rank sends"),
    ),
    "allgather": (
        _o("allgather", 1, "linear", "linear", aliases=("basic_linear", "gather_bcast"),
           note="Open MPI's linear allgather is a gather to rank 0 followed by a bcast "
                "(colltune's gather_bcast), not colltune's all-to-all linear"),
        _o("allgather", 2, "bruck", "bruck"),
        _o("allgather", 3, "recursive_doubling", "recursive_doubling"),
        _o("allgather", 4, "ring", "ring"),
        _o("allgather", 5, "neighbor", "neighbor_exchange"),
        _o("allgather", 6, "two_proc", "two_proc", np_exact=2,
           note="Open MPI returns an error unless there are exactly 2 processes"),
        _o("allgather", 7, "sparbit", "sparbit"),
    ),
    "allreduce": (
        _o("allreduce", 1, "basic_linear", "basic_linear", aliases=("linear",)),
        _o("allreduce", 2, "nonoverlapping", "reduce_bcast",
           note="tuned's own Reduce then Bcast, each with its fixed decision rules"),
        _o("allreduce", 3, "recursive_doubling", "recursive_doubling"),
        _o("allreduce", 4, "ring", "ring"),
        _o("allreduce", 5, "segmented_ring", "segmented_ring", (_O_SEG,),
           note="segsize 0 (the default) runs the plain ring"),
        _o("allreduce", 6, "rabenseifner", "rabenseifner", aliases=("redscat_allgather",)),
    ),
    "alltoall": (
        _o("alltoall", 1, "linear", "linear", aliases=("basic_linear",)),
        _o("alltoall", 2, "pairwise", "pairwise"),
        _o("alltoall", 3, "modified_bruck", "bruck"),
        _o("alltoall", 4, "linear_sync", "linear_sync", (_O_A2A_MAXREQ,)),
        _o("alltoall", 5, "two_proc", "two_proc", np_exact=2,
           note="Open MPI returns an error unless there are exactly 2 processes"),
    ),
    "alltoallv": (
        _o("alltoallv", 1, "basic_linear", "linear"),
        _o("alltoallv", 2, "pairwise", "pairwise"),
    ),
    "scatter": (
        _o("scatter", 1, "basic_linear", "linear"),
        _o("scatter", 2, "binomial", "binomial"),
        _o("scatter", 3, "linear_nb", "linear_nb"),
    ),
    "allgatherv": (
        _o("allgatherv", 1, "default", "gatherv_bcast",
           note="Open MPI's default allgatherv: a gatherv to rank 0, then a bcast of all "
                "blocks as one indexed type"),
        _o("allgatherv", 2, "bruck", "bruck"),
        _o("allgatherv", 3, "ring", "ring"),
        _o("allgatherv", 4, "neighbor", "neighbor_exchange"),
        _o("allgatherv", 5, "two_proc", "two_proc", np_exact=2,
           note="Open MPI returns an error unless there are exactly 2 processes"),
        _o("allgatherv", 6, "sparbit", "sparbit"),
    ),
    # coll/tuned 5.0 has no gatherv or scatterv algorithms (ompi_info lists no
    # coll_tuned_gatherv_algorithm): no ompi: candidates; table_problems would notice some
    "gatherv": (),
    "scatterv": (),
    "barrier": (
        _o("barrier", 1, "linear", "linear"),
        _o("barrier", 2, "double_ring", "double_ring"),
        _o("barrier", 3, "recursive_doubling", "recursive_doubling"),
        _o("barrier", 4, "bruck", "bruck"),
        _o("barrier", 5, "two_proc", "two_proc", np_exact=2,
           note="Open MPI returns an error unless there are exactly 2 processes"),
        _o("barrier", 6, "tree", "tree"),
    ),
    "reduce_scatter_block": (
        _o("reduce_scatter_block", 1, "basic_linear", "basic_linear"),
        _o("reduce_scatter_block", 2, "recursive_doubling", "recursive_doubling"),
        _o("reduce_scatter_block", 3, "recursive_halving", "recursive_halving",
           note="commutative ops only"),
        _o("reduce_scatter_block", 4, "butterfly", "butterfly"),
    ),
    "reduce_scatter": (
        _o("reduce_scatter", 1, "non-overlapping", "nonoverlapping",
           note="tuned's own Reduce to rank 0, then Scatterv"),
        _o("reduce_scatter", 2, "recursive_halving", "recursive_halving",
           note="commutative ops only"),
        _o("reduce_scatter", 3, "ring", "ring", note="commutative ops only"),
        _o("reduce_scatter", 4, "butterfly", "butterfly"),
    ),
}

OMPI_COMMON_ENV = {
    "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
    # coll/han (priority 35) outranks coll/tuned (30) on communicators spanning nodes;
    # on one node han disqualifies itself, but exclude it so the choice always applies.
    "OMPI_MCA_coll": "^han",
}

# In a launch shared with native (lib_cvars): what the launch's environment needs.
SHARED_LAUNCH_ENV = {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1"}


# Open MPI 5.0.11 registers coll_tuned_allgatherv_algorithm read-only (ompi_info --param
# coll tuned --level 9 --parsable: "status:read-only"; every other *_algorithm is
# writeable): its algorithms keep launches of their own.
OMPI_READ_ONLY = frozenset({"allgatherv"})


def lib_cvars(mpi: MPI | str, collective: str, spec: str) -> dict[str, str] | None:
    """The MPI_T control variables that make a communicator created after writing
    them run `spec` (Open MPI: coll_tuned_<coll>_algorithm and its parameters, and
    coll_han_priority 0 so that han does not take the communicator), for
    colltune-bench --lib/--cvars; None where the library's algorithm needs a launch of
    its own (MPICH)."""
    algo, _ = resolve(mpi, collective, spec)
    if algo.library != "ompi" or (isinstance(mpi, MPI) and mpi.simulated):
        return None
    if collective in OMPI_READ_ONLY:
        return None
    cvars = {"coll_han_priority": "0"}
    for k, v in lib_env(mpi, collective, spec).items():
        if k not in OMPI_COMMON_ENV:
            cvars[k.removeprefix("OMPI_MCA_")] = v
    return cvars


# MPICH 5.0.x: MPIR_CVAR_<COLL>_INTRA_ALGORITHM values, from the `mpivars` program of
# MPICH 5.0.2 (verified by tests/test_libalgos.py). `auto` is left out.
_M_TREE_TYPES = ("kary", "knomial_1", "knomial_2", "topology_aware", "topology_aware_k",
                 "topology_wave")


def _m_kval(var: str, minimum: int = 2) -> Param:
    return Param("kval", var, "int", minimum, help="tree branching factor / radix", default=2)


# Defaults: MPICH 5.0.x's values of the control variables (checked against mpivars).
_M_BCAST_TREE = (
    _m_kval("MPIR_CVAR_BCAST_TREE_KVAL", 1),
    Param("tree_type", "MPIR_CVAR_BCAST_TREE_TYPE", "choice", choices=_M_TREE_TYPES,
          default="kary"),
)
_M_BCAST_CHUNK = Param("segsize", "MPIR_CVAR_BCAST_TREE_PIPELINE_CHUNK_SIZE", "size", 1,
                       help="pipeline chunk in bytes", default=8192)
_M_ALLRED_TREE = (
    _m_kval("MPIR_CVAR_ALLREDUCE_TREE_KVAL", 1),
    Param("tree_type", "MPIR_CVAR_ALLREDUCE_TREE_TYPE", "choice", choices=_M_TREE_TYPES,
          default="knomial_1"),
    Param("segsize", "MPIR_CVAR_ALLREDUCE_TREE_PIPELINE_CHUNK_SIZE", "size", 0,
          help="pipeline chunk in bytes, 0 = no pipelining", default=0),
)


def _m(coll: str, lib_name: str, name: str | None = None, params=(), **kw) -> LibAlgo:
    name = name or lib_name
    aliases = (lib_name,) if lib_name != name else ()
    return LibAlgo("mpich", coll, name, lib_name, lib_name, tuple(params), aliases, **kw)


MPICH: dict[str, tuple[LibAlgo, ...]] = {
    "bcast": (
        _m("bcast", "binomial"),
        _m("bcast", "nb", note="built on the nonblocking Ibcast"),
        _m("bcast", "smp", note="node-aware: intra-node then inter-node"),
        _m("bcast", "scatter_recursive_doubling_allgather", "scatter_allgather"),
        _m("bcast", "scatter_ring_allgather"),
        _m("bcast", "pipelined_tree", params=(*_M_BCAST_TREE, _M_BCAST_CHUNK)),
        _m("bcast", "tree", params=_M_BCAST_TREE),
    ),
    "reduce": (
        _m("reduce", "binomial"),
        _m("reduce", "nb"),
        _m("reduce", "smp"),
        _m("reduce", "reduce_scatter_gather", "rabenseifner"),
    ),
    "gather": (
        _m("gather", "binomial"),
        _m("gather", "nb"),
    ),
    "allgather": (
        _m("allgather", "brucks", "bruck"),
        _m("allgather", "k_brucks", "k_bruck",
           params=(_m_kval("MPIR_CVAR_ALLGATHER_BRUCKS_KVAL"),)),
        _m("allgather", "nb"),
        _m("allgather", "recursive_doubling"),
        _m("allgather", "ring"),
        _m("allgather", "recexch_doubling",
           params=(_m_kval("MPIR_CVAR_ALLGATHER_RECEXCH_KVAL"),)),
        _m("allgather", "recexch_halving",
           params=(_m_kval("MPIR_CVAR_ALLGATHER_RECEXCH_KVAL"),)),
    ),
    "allreduce": (
        _m("allreduce", "nb"),
        _m("allreduce", "smp"),
        _m("allreduce", "recursive_doubling"),
        _m("allreduce", "recursive_multiplying",
           params=(_m_kval("MPIR_CVAR_ALLREDUCE_RECURSIVE_MULTIPLYING_KVAL"),)),
        _m("allreduce", "reduce_scatter_allgather", "rabenseifner"),
        _m("allreduce", "tree", params=_M_ALLRED_TREE),
        _m("allreduce", "recexch", params=(_m_kval("MPIR_CVAR_ALLREDUCE_RECEXCH_KVAL"),)),
        _m("allreduce", "ring"),
        _m("allreduce", "k_reduce_scatter_allgather"),
        _m("allreduce", "ccl", in_all=False, note="needs a CCL library (NCCL/RCCL/oneCCL)"),
    ),
    "alltoall": (
        _m("alltoall", "brucks", "bruck"),
        _m("alltoall", "k_brucks", "k_bruck",
           params=(_m_kval("MPIR_CVAR_ALLTOALL_BRUCKS_KVAL"),)),
        _m("alltoall", "nb"),
        _m("alltoall", "pairwise"),
        _m("alltoall", "pairwise_sendrecv_replace", in_all=False,
           note="MPI_IN_PLACE only: MPICH runs its own choice on other calls"),
        _m("alltoall", "scattered",
           params=(Param("max_requests", "MPIR_CVAR_ALLTOALL_THROTTLE", "int", 0,
                         help="irecvs/isends posted at a time, 0 = all at once",
                         default=32),)),
    ),
    "scatter": (
        _m("scatter", "binomial"),
        _m("scatter", "nb"),
    ),
    "barrier": (
        _m("barrier", "nb"),
        _m("barrier", "smp", note="node-aware: intra-node then inter-node"),
        _m("barrier", "k_dissemination", "k_bruck",
           params=(_m_kval("MPIR_CVAR_BARRIER_DISSEM_KVAL"),)),
        _m("barrier", "recexch", params=(_m_kval("MPIR_CVAR_BARRIER_RECEXCH_KVAL"),)),
    ),
    "alltoallv": (
        _m("alltoallv", "nb"),
        _m("alltoallv", "pairwise_sendrecv_replace", in_all=False,
           note="MPI_IN_PLACE only: MPICH runs its own choice on other calls"),
        _m("alltoallv", "scattered"),
    ),
    "reduce_scatter_block": (
        _m("reduce_scatter_block", "noncommutative",
           note="MPICH's butterfly for non-commutative ops (power-of-two p); "
                "MPICH runs its own choice elsewhere"),
        _m("reduce_scatter_block", "recursive_doubling"),
        _m("reduce_scatter_block", "pairwise", note="commutative ops only"),
        _m("reduce_scatter_block", "recursive_halving", note="commutative ops only"),
        _m("reduce_scatter_block", "nb"),
    ),
    "reduce_scatter": (
        _m("reduce_scatter", "nb"),
        _m("reduce_scatter", "noncommutative",
           note="MPICH's butterfly for non-commutative ops (power-of-two p, equal counts); "
                "MPICH runs its own choice elsewhere"),
        _m("reduce_scatter", "pairwise", note="commutative ops only"),
        _m("reduce_scatter", "recursive_doubling"),
        _m("reduce_scatter", "recursive_halving", note="commutative ops only"),
    ),
    "allgatherv": (
        _m("allgatherv", "brucks", "bruck"),
        _m("allgatherv", "nb"),
        _m("allgatherv", "recursive_doubling"),
        _m("allgatherv", "ring"),
    ),
    "gatherv": (
        _m("gatherv", "linear", "linear_nb",
           note="the root posts every receive at once: colltune's linear_nb"),
        _m("gatherv", "nb", note="built on the nonblocking Igatherv"),
    ),
    "scatterv": (
        _m("scatterv", "linear", "linear_nb",
           note="the root posts every send at once: colltune's linear_nb"),
        _m("scatterv", "nb", note="built on the nonblocking Iscatterv"),
    ),
}

MPICH_COMMON_ENV = {"MPIR_CVAR_DEVICE_COLLECTIVES": "none"}

TABLES = {"ompi": OMPI, "mpich": MPICH}


# --------------------------------------------------------------------------- specs


def _kind_and_label(mpi: MPI | str) -> tuple[str, str]:
    if isinstance(mpi, MPI):
        return mpi.kind, f"{mpi.name} {mpi.version}"
    return mpi, {"openmpi": "Open MPI", "mpich": "MPICH"}.get(mpi, mpi)


def algorithms(library: str, collective: str) -> tuple[LibAlgo, ...]:
    if library not in TABLES:
        raise ValueError(f"unknown MPI library '{library}'; valid: {', '.join(TABLES)}")
    if collective not in COLLECTIVES:
        raise ValueError(f"unknown collective '{collective}'; valid: {', '.join(COLLECTIVES)}")
    return TABLES[library].get(collective, ())


def find(library: str, collective: str, name: str) -> LibAlgo:
    """The table entry for a name or alias; ValueError listing the valid names."""
    table = algorithms(library, collective)
    for a in table:
        if name == a.name or name in a.aliases:
            return a
    raise ValueError(
        f"unknown {LIBRARY_NAMES[library]} {collective} algorithm '{library}:{name}'; valid: "
        + ", ".join(a.spec for a in table))


def resolve(mpi: MPI | str, collective: str, spec: str) -> tuple[LibAlgo, dict[str, str]]:
    """Check a library spec against the MPI library of the build.

    Returns the table entry and the parameters as canonical strings (sizes in bytes),
    in the entry's parameter order. Raises ValueError with a message for the user.
    """
    library, name, given = parse_lib_spec(spec)
    kind, label = _kind_and_label(mpi)
    if kind != LIBRARIES[library]:
        raise ValueError(f"{library}:{name} needs {LIBRARY_NAMES[library]}; "
                         f"this build uses {label}")
    algo = find(library, collective, name)
    known = {p.key: p for p in algo.params}
    for key in given:
        if key not in known:
            valid = ", ".join(known) if known else "none"
            raise ValueError(f"{spec}: unknown parameter '{key}' for {algo.spec} "
                             f"({collective}); valid: {valid}")
    values: dict[str, str] = {}
    for p in algo.params:
        if p.key not in given:
            continue
        raw = given[p.key]
        if p.kind == "choice":
            if raw not in p.choices:
                raise ValueError(f"{spec}: {p.key}={raw} is not one of {', '.join(p.choices)}")
            values[p.key] = raw
            continue
        try:
            v = parse_size(raw) if p.kind == "size" else int(raw)
        except ValueError:
            raise ValueError(f"{spec}: {p.key}={raw} is not a whole number"
                             + (" of bytes (e.g. 8192, 16K)" if p.kind == "size" else ""))
        if v < p.min or v > 2**31 - 1:
            raise ValueError(f"{spec}: {p.key}={raw} must be in [{p.min}, {2**31 - 1}]")
        values[p.key] = str(v)
    return algo, values


def lib_env(mpi: MPI | str, collective: str, spec: str) -> dict[str, str]:
    """Environment variables that force `spec` in the MPI library of `mpi`.

    `mpi` is the build's MPI (preferred: errors then name its version) or its kind
    ("openmpi", "mpich").
    """
    algo, values = resolve(mpi, collective, spec)
    if algo.library == "ompi":
        env = dict(OMPI_COMMON_ENV)
        env[f"OMPI_MCA_coll_tuned_{collective}_algorithm"] = algo.selector
    else:
        env = dict(MPICH_COMMON_ENV)
        env[f"MPIR_CVAR_{collective.upper()}_INTRA_ALGORITHM"] = algo.selector
    for p in algo.params:
        if p.key in values:
            env[p.env_name(collective)] = values[p.key]
    return env


def canonical_params(mpi: MPI | str, collective: str, spec: str) -> str:
    algo, values = resolve(mpi, collective, spec)
    return format_params(values)


def all_names(mpi: MPI | str, collective: str) -> list[str]:
    """The library's algorithm specs for `--algo all` (empty for an unknown MPI)."""
    kind, _ = _kind_and_label(mpi)
    for library, k in LIBRARIES.items():
        if k == kind:
            return [a.spec for a in algorithms(library, collective) if a.in_all]
    return []


def library_all(mpi: MPI | str, collective: str, spec: str) -> list[str]:
    """`ompi:all` or `mpich:all`: the library's algorithm specs for `--algo all`;
    ValueError when the build's MPI is another library."""
    library = spec.split(":", 1)[0]
    lib_kind, label = _kind_and_label(mpi)
    if LIBRARIES[library] != lib_kind:
        raise ValueError(f"{spec} needs {LIBRARY_NAMES[library]}; this build uses {label}")
    return [a.spec for a in algorithms(library, collective) if a.in_all]


def skip_reason(mpi: MPI | str, collective: str, spec: str, np: int) -> str | None:
    """Why a library spec cannot run at `np` processes (the library would fail), or None."""
    algo, _ = resolve(mpi, collective, spec)
    if algo.np_exact is not None and np != algo.np_exact:
        return (f"{spec} skipped at np={np}: {LIBRARY_NAMES[algo.library]}'s {algo.lib_name} "
                f"needs exactly {algo.np_exact} processes")
    return None


# ------------------------------------------------------- effective parameters

# Parameters that change what an algorithm does with the same name on both sides, in
# the order a label names them; MATCHED: those colltune's and the library's algorithms
# both have under the same name and meaning (study token `library-matched`).
LABEL_KEYS = ("segsize", "fanout", "radix", "kval", "tree_type", "max_requests", "remap")
MATCHED_KEYS = ("segsize", "fanout", "radix")


def _bytes(n: int) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def effective_params(collective: str, spec: str, params: Any = None) -> dict[str, str]:
    """The parameters an algorithm ran with, as strings: for a library spec the table's
    defaults (what the library uses when colltune does not force a value) overlaid by the
    spec's and the recorded values; for colltune's, the spec's overlaid by the recorded
    ones (the native library records every parameter, defaults included)."""
    out: dict[str, str] = {}
    if is_lib_spec(spec):
        try:
            library, name, given = parse_lib_spec(str(spec))
            algo = find(library, collective, name)
        except ValueError:
            return {**parse_params(split_spec(str(spec))[1]), **parse_params(params)}
        out = {p.key: str(p.default) for p in algo.params if p.default is not None}
        for key, value in given.items():
            p = next((q for q in algo.params if q.key == key), None)
            out[key] = str(parse_size(value)) if p is not None and p.kind == "size" else value
    else:
        out = parse_params(split_spec(str(spec))[1])
    out.update(parse_params(params))
    return out


def param_label(collective: str, spec: str, params: Any = None) -> str:
    """THE label of an algorithm in a table that puts algorithms side by side: its name
    and the effective values of the parameters that matter (LABEL_KEYS), e.g.
    `chain (segsize 8 KiB, fanout 4)` next to `ompi:chain (unsegmented, fanout 4)`.
    `params`: the record's parameters (any form base.specs.parse_params reads)."""
    values = effective_params(collective, spec, params)
    # an inner algorithm with parameters of its own (`inter=knomial:radix=3+segsize=0`)
    parts = [f"{k} {v}" for k, v in values.items() if ":" in str(v)]
    for key in LABEL_KEYS:
        v = values.get(key)
        if v is None or v == "" or (key in ("max_requests",) and v == "0") or \
                (key == "remap" and v == "none"):
            continue
        if key == "segsize":
            try:
                n = int(v)
            except ValueError:
                parts.append(f"segsize {v}")
                continue
            parts.append("unsegmented" if n == 0 else f"segsize {_bytes(n)}")
        elif key == "tree_type":
            parts.append(f"tree {v}")
        else:
            parts.append(f"{key} {v}")
    name = algorithm_of(spec)
    return f"{name} ({', '.join(parts)})" if parts else name


def matched_spec(mpi: MPI | str, collective: str, spec: str, ours: dict[str, Any] | None) -> str:
    """`spec` (a library spec) forced with colltune's effective values `ours` ({key:
    value} of the same-named colltune algorithm) for every parameter of MATCHED_KEYS
    both have: `ompi:chain` + {segsize: 8192, fanout: 4} -> `ompi:chain:segsize=8192,fanout=4`.
    Values the spec sets itself win; without a shared parameter the spec is returned as is.
    A segsize of `auto` (colltune's per-call rule, analysis.segsize) is not forced: one
    launch of the library has one segment size for every message size, so the library
    keeps its own there (benchmarks/ours_vs_library.py forces the rule's value per size)."""
    algo, values = resolve(mpi, collective, spec)
    if not ours:
        return spec
    forced = dict(values)
    for p in algo.params:
        if p.key in MATCHED_KEYS and p.key in ours and p.key not in forced and \
                str(ours[p.key]) != "auto":
            forced[p.key] = str(ours[p.key])
    if forced == values:
        return spec
    ordered = {p.key: forced[p.key] for p in algo.params if p.key in forced}
    return f"{algo.spec}:{format_params(ordered)}"


# ------------------------------------------------------- checks against the library


_ENUM_RE = re.compile(r"^mca:coll:tuned:param:coll_tuned_(\w+?)_algorithm:enumerator:value:"
                      r"(\d+):(.+)$")
_PARAM_RE = re.compile(r"^mca:[^:]+:[^:]+:param:([^:]+):value:")


@lru_cache(maxsize=4)
def _ompi_info(bindir: str) -> str:
    exe = Path(bindir) / "ompi_info"
    res = subprocess.run([str(exe), "--param", "coll", "all", "--level", "9", "--parsable"],
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ,
                                  PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"))
    if res.returncode != 0:
        raise RuntimeError(f"ompi_info failed: {res.stderr.strip()[-500:]}")
    return res.stdout


def ompi_info_algorithms(mpi: MPI) -> tuple[dict[str, dict[int, str]], set[str]]:
    """From `ompi_info --param coll all --level 9 --parsable`: per collective
    {number: name} of coll_tuned_<coll>_algorithm (0 = ignore included), and the
    names of all coll MCA parameters."""
    algos: dict[str, dict[int, str]] = {}
    params: set[str] = set()
    for line in _ompi_info(str(mpi.bindir)).splitlines():
        m = _ENUM_RE.match(line)
        if m:
            algos.setdefault(m.group(1), {})[int(m.group(2))] = m.group(3)
        m = _PARAM_RE.match(line)
        if m:
            params.add(m.group(1))
    return algos, params


def ompi_table_problems(mpi: MPI, collectives=COLLECTIVES) -> list[str]:
    """Differences between the OMPI table and this Open MPI's ompi_info (empty = agree)."""
    enums, params = ompi_info_algorithms(mpi)
    problems = []
    for coll in collectives:
        lib = {n: name for n, name in enums.get(coll, {}).items() if n != 0}
        ours = {int(a.selector): a.lib_name for a in OMPI[coll]}
        if lib != ours:
            problems.append(f"{coll}: ompi_info lists {lib}, colltune's table has {ours}")
        for a in OMPI[coll]:
            for p in a.params:
                mca = p.env_name(coll).removeprefix("OMPI_MCA_")
                if mca not in params:
                    problems.append(f"{coll}: {a.spec} parameter {p.key}: no MCA parameter {mca}")
    current = dict(re.findall(r"^mca:coll:tuned:param:(\w+):value:(.*)$",
                              _ompi_info(str(mpi.bindir)), re.M))
    problems += _default_problems(OMPI, collectives, "OMPI_MCA_", current)
    needed = ("coll_tuned_use_dynamic_rules",
              *(f"coll_tuned_{c}_algorithm" for c in collectives if OMPI[c]))
    for var in needed:
        if var not in params:
            problems.append(f"no MCA parameter {var}")
    return problems


@lru_cache(maxsize=4)
def _mpivars(bindir: str) -> str:
    exe = Path(bindir) / "mpivars"
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    return res.stdout + res.stderr


def mpich_cvars(mpi: MPI) -> tuple[dict[str, list[str]], set[str]]:
    """From MPICH's `mpivars`: per collective the values of MPIR_CVAR_<COLL>_INTRA_ALGORITHM
    (auto included), and the names of all control variables."""
    text = _mpivars(str(mpi.bindir))
    values: dict[str, list[str]] = {}
    names: set[str] = set()
    current = None
    for line in text.splitlines():
        if line.startswith("\t"):
            current = None
            m = re.match(r"\t(MPIR_CVAR_\w+)\s*=", line)
            if m:
                names.add(m.group(1))
                cm = re.fullmatch(r"MPIR_CVAR_([A-Z_]+)_INTRA_ALGORITHM", m.group(1))
                if cm and cm.group(1).lower() in COLLECTIVES:
                    current = cm.group(1).lower()
                    values.setdefault(current, [])
            continue
        if current:
            m = re.match(r"(\w+)\s+-\s", line)
            if m:
                values[current].append(m.group(1))
    return values, names


def mpich_table_problems(mpi: MPI, collectives=COLLECTIVES) -> list[str]:
    values, names = mpich_cvars(mpi)
    problems = []
    for coll in collectives:
        lib = set(values.get(coll, [])) - {"auto"}
        ours = {a.lib_name for a in MPICH[coll]}
        if lib != ours:
            problems.append(f"{coll}: mpivars lists {sorted(lib)}, colltune's table has "
                            f"{sorted(ours)}")
        vars_used = {f"MPIR_CVAR_{coll.upper()}_INTRA_ALGORITHM", *MPICH_COMMON_ENV}
        vars_used |= {p.env_name(coll) for a in MPICH[coll] for p in a.params}
        for var in sorted(vars_used - names):
            problems.append(f"{coll}: MPICH has no control variable {var}")
    current = dict(re.findall(r"^\t(MPIR_CVAR_\w+)\s*=(\S*)", _mpivars(str(mpi.bindir)), re.M))
    problems += _default_problems(MPICH, collectives, "", current)
    return problems


def _default_problems(table, collectives, prefix: str, current: dict[str, str]) -> list[str]:
    """Param defaults that differ from the library's current values of their variables."""
    problems = []
    for coll in collectives:
        for a in table.get(coll, ()):
            for p in a.params:
                name = p.env_name(coll).removeprefix(prefix)
                if p.default is not None and name in current \
                        and current[name] != str(p.default):
                    problems.append(f"{coll}: {a.spec} parameter {p.key}: default "
                                    f"{p.default}, the library's {name} is {current[name]}")
    return problems


def table_problems(mpi: MPI, collectives=COLLECTIVES) -> list[str]:
    """Check the table of this library against the library itself."""
    if mpi.kind == "openmpi":
        return ompi_table_problems(mpi, collectives)
    if mpi.kind == "mpich":
        return mpich_table_problems(mpi, collectives)
    return []
