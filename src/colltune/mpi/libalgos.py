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

The variables are process-wide, so each library algorithm runs in a launch of its
own (`native` under the forcing environment); colltune's algorithms and `native`
share one launch and interleave inside the driver. `run_bench` alternates these
launches (A B C A B C ...) one repetition at a time and merges the records.
See docs/library-algorithms.md.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import statistics
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

from colltune.drivers import bench as bench_mod
from colltune.mpi.build import Build
from colltune.mpi.libraries import MPI
from colltune.base.collectives import COLLECTIVES
from colltune.base.specs import format_params, is_lib_spec, parse_lib_spec
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
_O_SEG = Param("segsize", "OMPI_MCA_coll_tuned_{coll}_algorithm_segmentsize", "size", 0,
               help="segment size in bytes, 0 = unsegmented")
_O_FAN = Param("fanout", "OMPI_MCA_coll_tuned_{coll}_algorithm_chain_fanout", "int", 1,
               help="number of chains")
_O_RADIX = Param("radix", "OMPI_MCA_coll_tuned_bcast_algorithm_knomial_radix", "int", 2,
                 help="k-nomial radix")
_O_MAXREQ = Param("max_requests", "OMPI_MCA_coll_tuned_reduce_algorithm_max_requests", "int",
                  0, help="outstanding sends on leaves, 0 = unlimited")


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
}

OMPI_COMMON_ENV = {
    "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
    # coll/han (priority 35) outranks coll/tuned (30) on communicators spanning nodes;
    # on one node han disqualifies itself, but exclude it so the choice always applies.
    "OMPI_MCA_coll": "^han",
}

# MPICH 5.0.x: MPIR_CVAR_<COLL>_INTRA_ALGORITHM values, from the `mpivars` program of
# MPICH 5.0.2 (verified by tests/test_libalgos.py). `auto` is left out.
_M_TREE_TYPES = ("kary", "knomial_1", "knomial_2", "topology_aware", "topology_aware_k",
                 "topology_wave")


def _m_kval(var: str, minimum: int = 2) -> Param:
    return Param("kval", var, "int", minimum, help="tree branching factor / radix")


_M_BCAST_TREE = (
    _m_kval("MPIR_CVAR_BCAST_TREE_KVAL", 1),
    Param("tree_type", "MPIR_CVAR_BCAST_TREE_TYPE", "choice", choices=_M_TREE_TYPES),
)
_M_BCAST_CHUNK = Param("segsize", "MPIR_CVAR_BCAST_TREE_PIPELINE_CHUNK_SIZE", "size", 1,
                       help="pipeline chunk in bytes")
_M_ALLRED_TREE = (
    _m_kval("MPIR_CVAR_ALLREDUCE_TREE_KVAL", 1),
    Param("tree_type", "MPIR_CVAR_ALLREDUCE_TREE_TYPE", "choice", choices=_M_TREE_TYPES),
    Param("segsize", "MPIR_CVAR_ALLREDUCE_TREE_PIPELINE_CHUNK_SIZE", "size", 0,
          help="pipeline chunk in bytes, 0 = no pipelining"),
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


def expand_algos(build: Build, collective: str, specs: list[str]) -> list[str]:
    """Expand `all` (ours, native and the library's), `ours`, `ompi:all`, `mpich:all`.

    Other specs pass through; duplicates are dropped, order is kept.
    """
    from colltune.drivers import registry  # needs the native build

    out: list[str] = []
    for s in specs:
        if s == "all":
            out += registry.names(build, collective) + all_names(build.mpi, collective)
        elif s == "ours":
            out += [n for n in registry.names(build, collective) if n != "native"]
        elif is_lib_spec(s) and s.split(":", 1)[1] == "all":
            library = s.split(":", 1)[0]
            lib_kind, label = _kind_and_label(build.mpi)
            if LIBRARIES[library] != lib_kind:
                raise ValueError(f"{s} needs {LIBRARY_NAMES[library]}; this build uses {label}")
            out += [a.spec for a in algorithms(library, collective) if a.in_all]
        else:
            out.append(s)
    return list(dict.fromkeys(out))


def skip_reason(mpi: MPI | str, collective: str, spec: str, np: int) -> str | None:
    """Why a library spec cannot run at `np` processes (the library would fail), or None."""
    algo, _ = resolve(mpi, collective, spec)
    if algo.np_exact is not None and np != algo.np_exact:
        return (f"{spec} skipped at np={np}: {LIBRARY_NAMES[algo.library]}'s {algo.lib_name} "
                f"needs exactly {algo.np_exact} processes")
    return None


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
    needed = ("coll_tuned_use_dynamic_rules", *(f"coll_tuned_{c}_algorithm" for c in collectives))
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
    return problems


def table_problems(mpi: MPI, collectives=COLLECTIVES) -> list[str]:
    """Check the table of this library against the library itself."""
    if mpi.kind == "openmpi":
        return ompi_table_problems(mpi, collectives)
    if mpi.kind == "mpich":
        return mpich_table_problems(mpi, collectives)
    return []


# ------------------------------------------------------------------ launch plan


@dataclass(frozen=True)
class PlannedLaunch:
    """One launch: colltune's algorithms (and native) together, or one library spec."""

    algos: tuple[str, ...]  # what the driver runs (--algo)
    library_spec: str | None  # the library spec this launch forces, or None
    rep: int  # repetition this launch belongs to (0-based)


def plan_launches(algos: list[str], reps: int) -> list[PlannedLaunch]:
    """Group ours and `native` into one launch, each library spec into its own, and
    alternate them A B C A B C ... for `reps` rounds of one repetition each.

    Without library specs there is one launch doing all `reps` repetitions itself
    (rep = -1), as plain `colltune bench` does.
    """
    if reps < 1:
        raise ValueError(f"reps {reps}: must be at least 1")
    algos = list(dict.fromkeys(algos))
    ours = tuple(a for a in algos if not is_lib_spec(a))
    lib = [a for a in algos if is_lib_spec(a)]
    if not lib:
        return [PlannedLaunch(ours, None, -1)] if ours else []
    round_: list[tuple[tuple[str, ...], str | None]] = []
    if ours:
        round_.append((ours, None))
    round_ += [(("native",), s) for s in lib]
    return [PlannedLaunch(a, s, r) for r in range(reps) for a, s in round_]


# -------------------------------------------------------------------- statistics


def _quantile(sorted_v: list[float], q: float) -> float:
    """Linear interpolation between sorted values (numpy's default method)."""
    if len(sorted_v) == 1:
        return sorted_v[0]
    pos = q * (len(sorted_v) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_v) - 1)
    return sorted_v[lo] + (pos - lo) * (sorted_v[hi] - sorted_v[lo])


STAT_FIELDS = ("rep_min_us", "mean_us", "median_us", "p90_us", "p99_us", "rep_max_us",
               "stddev_us")


def summarize(samples_us: list[float]) -> dict[str, float | int | None]:
    """min/mean/median/p90/p99/max/stddev (sample, divisor n-1) of per-repetition
    latencies, as colltune-bench defines them; all None (valid_reps 0) without samples."""
    if not samples_us:
        return {**{f: None for f in STAT_FIELDS}, "valid_reps": 0}
    v = sorted(float(x) for x in samples_us)
    r3 = lambda x: round(x, 3)  # noqa: E731 - the driver prints 3 decimals
    return {
        "rep_min_us": r3(v[0]), "mean_us": r3(statistics.fmean(v)),
        "median_us": r3(_quantile(v, 0.5)), "p90_us": r3(_quantile(v, 0.9)),
        "p99_us": r3(_quantile(v, 0.99)), "rep_max_us": r3(v[-1]),
        "stddev_us": r3(statistics.stdev(v) if len(v) > 1 else 0.0), "valid_reps": len(v),
    }


def _samples(rec: dict) -> list[float]:
    """Per-repetition samples of one launch's record: the driver's raw samples when it
    gives them, else its median (exact when the launch ran one repetition)."""
    raw = rec.get("samples_us")
    if raw is not None:
        return [float(x) for x in raw]
    if rec.get("median_us") is None:  # no valid sample in this launch
        return []
    return [float(rec["median_us"])]


def merge_records(records: list[dict], order: list[str] | None = None) -> list[dict]:
    """Merge records of several launches per (collective, spec, np, size).

    Statistics are recomputed over all repetitions; rank extremes (OSU's Min/Max
    Latency) are averaged over launches, weighted by timed calls; the
    first launch's other fields are kept. Output is ordered by np, size, then `order`
    (specs) or first appearance.
    """
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["collective"], r["spec"], r["np"], r["size"]), []).append(r)
    rank = {s: i for i, s in enumerate(order or [])}
    first_seen = {}
    for key in groups:
        first_seen.setdefault(key[1], len(first_seen))
    merged = []
    for key, recs in groups.items():
        out = dict(recs[0])
        samples = [x for r in recs for x in _samples(r)]
        out.update(summarize(samples))
        if any("samples_us" in r for r in recs):
            out["samples_us"] = samples
        # OSU's Min/Max Latency (a process's mean call time, smallest and largest over
        # processes) of the launches together: the launches' figures averaged, weighted
        # by their timed calls (the per-process means themselves are not in the records)
        for f in ("rank_min_us", "rank_max_us"):
            pairs = [(r[f], (r.get("iterations") or 1) * max(r.get("valid_reps") or 1, 1))
                     for r in recs if r.get(f) is not None]
            if pairs:
                out[f] = round(sum(v * w for v, w in pairs) / sum(w for _, w in pairs), 3)
        fb = [r["fallback"] for r in recs if r.get("fallback")]
        out["fallback"] = fb[0] if fb else out.get("fallback")
        if any("invalid" in r for r in recs):  # window timing: discarded samples
            out["invalid"] = sum(r.get("invalid") or 0 for r in recs)
        checked = [r["valid"] for r in recs if r.get("valid") is not None]
        if checked:  # --validate
            out["valid"] = all(checked)
        out["launches"] = len(recs)
        merged.append(out)
    merged.sort(key=lambda r: (r["np"], r["size"],
                               rank.get(r["spec"], len(rank) + first_seen[r["spec"]])))
    return merged


# ---------------------------------------------------------------------- running


def _relabel(rec: dict, mpi: MPI, collective: str, spec: str, env: dict[str, str]) -> dict:
    algo, values = resolve(mpi, collective, spec)
    rec = dict(rec)
    rec["algorithm"] = algo.spec  # e.g. "ompi:binomial"
    rec["params"] = ",".join(f"{k}={v}" for k, v in values.items())
    rec["spec"] = spec
    rec["library"] = algo.library
    rec["library_algorithm"] = algo.lib_name
    rec["library_env"] = dict(env)
    return rec


def _one_rep_spec(spec: bench_mod.BenchSpec, algos: tuple[str, ...]) -> bench_mod.BenchSpec:
    changes: dict = {"algos": list(algos), "reps": 1}
    fields = {f.name for f in dataclasses.fields(spec)}
    if "raw" in fields:
        changes["raw"] = True  # per-repetition samples, where the driver offers them
    if "time_budget" in fields and getattr(spec, "time_budget", None):
        changes["time_budget"] = spec.time_budget / spec.reps  # the budget covers all reps
    return dataclasses.replace(spec, **changes)


Runner = Callable[..., tuple[list[dict], list[str]]]

# Candidate run first in every launch of an alternating plan, its records dropped: the
# first point of a fresh process pays for connection set-up and first touches (about
# 4x at 8 B with few warm-up calls), which would otherwise fall on the library's
# algorithm in every library launch. In a library launch it is the forced algorithm
# itself, in the launch of ours the library's default.
WARMUP_CANDIDATE = "native"


def _drop_warmup(records: list[dict]) -> list[dict]:
    """Drop, per size, the first record of the warm-up candidate (it runs first)."""
    seen: set = set()
    out = []
    for r in records:
        key = (r["collective"], r["np"], r["size"])
        if r["spec"] == WARMUP_CANDIDATE and key not in seen:
            seen.add(key)
            continue
        out.append(r)
    return out


def run_bench(build: Build, spec: bench_mod.BenchSpec, algos: list[str] | None = None, *,
              timeout: float = 3600,
              progress: Callable[[int, int, PlannedLaunch], None] | None = None,
              runner: Runner | None = None, check_table: bool = True,
              warm_up: bool = True,
              on_record: Callable[[dict], None] | None = None) -> tuple[list[dict], list[str]]:
    """Benchmark colltune's algorithms, `native` and library specs for one BenchSpec.

    `algos` defaults to spec.algos. Without library specs this is one bench.run call.
    With them, launches alternate (see plan_launches), each doing one repetition, and
    the records are merged (merge_records). With `warm_up`, every launch of such a
    plan first runs WARMUP_CANDIDATE, whose records are dropped. Library records carry
    algorithm="ompi:NAME" (or "mpich:NAME"), spec as given, params, library_env.
    Raises ValueError for a bad spec, bench.BenchError when a launch fails.
    `runner` replaces bench.run (tests). `on_record` gets each finished point as it
    comes when the plan is one launch (alternating launches report through `progress`).
    """
    run = runner or bench_mod.run
    algos = list(dict.fromkeys(algos if algos is not None else spec.algos))
    mpi = build.mpi
    notes: list[str] = []
    envs: dict[str, dict[str, str]] = {}
    for a in algos:
        if is_lib_spec(a):
            envs[a] = lib_env(mpi, spec.collective, a)  # ValueError before anything runs
    kept = []
    for a in algos:
        why = skip_reason(mpi, spec.collective, a, spec.np) if a in envs else None
        if why:
            notes.append(why)
        else:
            kept.append(a)
    if envs and check_table and runner is None:
        problems = table_problems(mpi, (spec.collective,))
        if problems:
            raise bench_mod.BenchError(
                f"colltune's {mpi.name} algorithm table does not match this {mpi.name} "
                f"{mpi.version}: " + "; ".join(problems))
    plan = plan_launches(kept, spec.reps)
    if len(plan) == 1 and plan[0].library_spec is None:
        if progress:
            progress(0, 1, plan[0])
        kw = {"on_record": on_record} if on_record is not None and runner is None else {}
        recs, n = run(build, dataclasses.replace(spec, algos=list(plan[0].algos)),
                      timeout=timeout, **kw)
        return recs, notes + [x for x in n if x not in notes]
    records: list[dict] = []
    for i, launch in enumerate(plan):
        if progress:
            progress(i, len(plan), launch)
        sub = _one_rep_spec(spec, ((WARMUP_CANDIDATE,) if warm_up else ()) + launch.algos)
        if launch.library_spec is None:
            recs, n = run(build, sub, timeout=timeout)
        else:
            env = envs[launch.library_spec]
            recs, n = run(build, sub, timeout=timeout, extra_env=env)
        if warm_up:
            recs = _drop_warmup(recs)
        if launch.library_spec is not None:
            recs = [_relabel(r, mpi, spec.collective, launch.library_spec, env) for r in recs]
        notes += [x for x in n if x not in notes]
        records += recs
    merged = merge_records(records, kept)
    for r in merged:
        if not getattr(spec, "raw", False):
            r.pop("samples_us", None)  # asked for by us, not by the caller
        if getattr(spec, "time_budget", None) and "time_budget_s" in r:
            r["time_budget_s"] = spec.time_budget
    return merged, notes
