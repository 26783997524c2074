#!/usr/bin/env python3
"""colltune's algorithms against the same algorithms in Open MPI's coll/tuned.

For each pair (ours NAME, ompi:NAME) the Open MPI algorithm is forced with our
default parameters (segment size, fan-out, radix) where Open MPI has the same
parameter, so both sides run the same schedule. Everything runs through
colltune.drivers.bench.run_bench: ours and native share one launch, each ompi:
algorithm has its own, and the launches alternate one repetition at a time.

Prints, per collective, the median latency ratio ours / ompi for each size
(< 1: ours is faster) and their geometric mean. A cell where Open MPI's algorithm
switches to another schedule at that count (library_switch) is marked ≠ and left
out of the mean (ours_switch: where ours sends other messages); NOT_PAIRED says why a
registry algorithm with an Open MPI twin has no row. For each cell below 0.7 the ratio
of the two sides' fastest repetitions is printed too, and --control adds an A/A row:
the first pair's Open MPI algorithm against itself in two alternating series of
launches, the noise floor of the cells. docs/performance.md has the table, where the
time went and why each pair below 0.7 is there.

--paired runs each pair in launches of its own, Open MPI's twin forced and ours beside
it in the same process (run_paired): launch-to-launch spread then falls on both sides
alike, which on a small VM is the only way to resolve 10 % (docs/performance.md).

    .venv/bin/python benchmarks/ours_vs_library.py --np 2
    .venv/bin/python benchmarks/ours_vs_library.py --np 2 --reps 5 --inner-reps 3 --paired
    .venv/bin/python benchmarks/ours_vs_library.py --np 4 --size 8,1K,64K,1M --reps 5 -o out.json
    .venv/bin/python benchmarks/ours_vs_library.py --np 2 --colls bcast --reps 3 --control
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from colltune.drivers import bench as bench_mod
from colltune.mpi import libalgos
from colltune.mpi import libraries as mpi_mod
from colltune.drivers import registry
from colltune.analysis import segsize as segsize_rule
from colltune.mpi.build import build as do_build
from colltune.base.specs import parse_lib_spec
from colltune.base.units import fmt_size, add_size_option, parse_sizes

# (ours, Open MPI's) per collective; same name unless noted
PAIRS: dict[str, list[tuple[str, str]]] = {
    # Open MPI's "linear" Bcast posts an Isend to every rank at once: our linear_nb (our
    # linear sends one blocking message after another, a schedule Open MPI does not have)
    "bcast": [(n, n) for n in ("binomial", "knomial", "chain", "pipeline", "binary",
                               "split_binary", "scatter_allgather", "scatter_ring_allgather")]
    + [("linear_nb", "linear")],
    "reduce": [(n, n) for n in ("binomial", "chain", "pipeline", "binary", "in_order_binary",
                                "rabenseifner", "linear")],
    "gather": [(n, n) for n in ("linear", "binomial")],
    # Open MPI's "linear" allgather is a gather + bcast, i.e. our gather_bcast (our
    # linear, every rank sending to every other, has no twin there)
    "allgather": [(n, n) for n in ("ring", "recursive_doubling", "bruck", "neighbor_exchange",
                                   "two_proc", "sparbit")]
    + [("gather_bcast", "linear")],
    "allreduce": [(n, n) for n in ("ring", "segmented_ring", "recursive_doubling",
                                   "rabenseifner", "basic_linear")],
    # issue 30; Open MPI's two_proc runs at 2 processes only (skipped elsewhere)
    "alltoall": [(n, n) for n in ("linear", "pairwise", "bruck", "linear_sync", "two_proc")]
    + [("linear_sync:max_requests=1", "linear_sync")],
    "alltoallv": [(n, n) for n in ("linear", "pairwise")],
    "scatter": [(n, n) for n in ("linear", "linear_nb", "binomial")],
    "barrier": [(n, n) for n in ("linear", "double_ring", "recursive_doubling", "bruck",
                                 "two_proc", "tree")],
    "reduce_scatter_block": [(n, n) for n in ("basic_linear", "recursive_doubling",
                                              "recursive_halving", "butterfly")],
    "reduce_scatter": [(n, n) for n in ("nonoverlapping", "recursive_halving", "ring",
                                        "butterfly")],
    # Open MPI's "default" allgatherv is a gatherv + bcast, i.e. our gatherv_bcast
    "allgatherv": [(n, n) for n in ("ring", "bruck", "neighbor_exchange", "two_proc",
                                    "sparbit")] + [("gatherv_bcast", "default")],
}

SHARED_PARAMS = ("segsize", "fanout", "radix", "max_requests")
DTYPE_SIZE = 1  # the benchmark's datatype is char (colltune-bench's default)
FAR = 0.7  # a cell below this is "far faster" and needs an explanation (docs/performance.md)

# Algorithms with an Open MPI twin in the registry that are not paired, and why.
NOT_PAIRED: dict[tuple[str, str], str] = {
    ("allreduce", "reduce_bcast"): "Open MPI's nonoverlapping runs its own decision rules "
    "for the inner Reduce and Bcast, so no parameter makes the two schedules equal",
    ("allreduce", "allgather_reduce"): "not in Open MPI 5.0's coll/tuned",
}


def _pof2_floor(n: int) -> int:
    return 1 << (n.bit_length() - 1)


# Open MPI 5.0's coll_tuned fixed decision for a commutative Reduce (ompi_coll_tuned_
# reduce_intra_dec_fixed, coll_tuned_decision_fixed.c): per communicator size below
# the bound, (vector bytes below the bound, algorithm) in order; the last has no bound.
_OMPI_REDUCE_FIXED: list[tuple[int, list[tuple[int | None, str]]]] = [
    (4, [(8, "rabenseifner"), (16, "binary"), (32, "pipeline"), (262144, "linear"),
         (524288, "pipeline"), (1048576, "chain"), (None, "pipeline")]),
    (8, [(4096, "binary"), (65536, "chain"), (262144, "binomial"), (524288, "linear"),
         (1048576, "binomial"), (None, "linear")]),
    (16, [(8192, "binary"), (None, "binomial")]),
    (32, [(4096, "binary"), (None, "binomial")]),
]


def _ompi_reduce_fixed(np_: int, nbytes: int) -> str:
    """The Reduce algorithm Open MPI 5.0's fixed decision picks for a commutative op
    (`binomial` from 32 processes on: the table's few other arms there are not
    needed at the sizes this benchmark runs)."""
    for bound, arms in _OMPI_REDUCE_FIXED:
        if np_ < bound:
            return next(a for lim, a in arms if lim is None or nbytes < lim)
    return "binomial"


def _is_pof2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def library_switch(collective: str, theirs: str, count: int, np_: int, segsize: int = 0,
                   type_size: int = 1) -> str | None:
    """The schedule Open MPI's `theirs` runs instead of its own at this count of
    elements, process count, segment size (bytes, 0: none) and datatype size, or None
    when it runs its own. The benchmark's datatype is char (count = bytes; for
    allgather(v) count is the block of one process). Such a cell compares two
    different schedules: it is shown, marked, and left out of the geometric mean and
    the largest ratio.

    Each switch names the Open MPI 5.0 function (ompi/mca/coll/base/coll_base_*.c)
    and its condition. Checked and not listed, because no count, process count,
    segment size or datatype size reaches them: op-dependent switches (rabenseifner
    Reduce/Allreduce and recursive_halving Reduce_scatter(_block) fall back for
    non-commutative ops; the benchmark's op is sum), the trivial count 0
    (reduce_scatter_intra_basic_recursivehalving returns at once), two_proc, which
    refuses np != 2 (libalgos np_exact, the cell is skipped), and reduce_scatter_intra_ring
    and _butterfly, which have no switch."""
    if collective in ("allreduce", "reduce") and theirs == "rabenseifner" \
            and count < _pof2_floor(np_):
        # reduce_intra_redscat_gather: "nprocs_pof2 < 2 || count < nprocs_pof2 ||
        # !commute" -> reduce_intra_basic_linear; allreduce_intra_redscat_allgather:
        # "count < nprocs_pof2" -> allreduce_intra_basic_linear
        return "basic_linear" if collective == "allreduce" else "linear"
    if collective == "allreduce" and theirs in ("ring", "segmented_ring") and count < np_:
        # allreduce_intra_ring: "count < size" -> allreduce_intra_recursivedoubling;
        # allreduce_intra_ring_segmented goes to the ring first when
        # "count < size * segcount" (segcount = segsize / type size), which is the same
        # schedule as our segmented_ring in one phase (not marked), and the ring then
        # to recursive doubling below `size` elements
        return "recursive_doubling"
    if collective == "bcast" and theirs in ("scatter_allgather", "scatter_ring_allgather") \
            and count < np_:
        # bcast_intra_scatter_allgather(_ring): "count < comm_size" ->
        # bcast_intra_basic_linear
        return "linear"
    if collective == "bcast" and theirs == "split_binary" and np_ > 1:
        # bcast_intra_split_bintree ("if the message is too small to be split into
        # segments"): halves counts[0] = ceil(count/2), counts[1] = count - counts[0];
        # "counts[0] == 0 || counts[1] == 0 || segsize > counts[0] * type_size ||
        # segsize > counts[1] * type_size" -> bcast_intra_chain(segsize, fanout 1),
        # i.e. a pipeline (a segsize below one element is first raised to one)
        seg = max(segsize, type_size) if segsize > 0 else 0
        half0 = (count + 1) // 2
        half1 = count - half0
        if half0 == 0 or half1 == 0 or seg > half0 * type_size or seg > half1 * type_size:
            return "chain:fanout=1 (pipeline)"
    if collective == "allgather" and theirs == "recursive_doubling" and not _is_pof2(np_):
        # allgather_intra_recursivedoubling: "pow2size != size" -> allgather_intra_bruck
        return "bruck"
    if collective in ("allgather", "allgatherv") and theirs == "neighbor_exchange" \
            and np_ % 2:
        # allgather(v)_intra_neighborexchange: "size % 2" (odd) -> allgather(v)_intra_ring
        return "ring"
    # Open MPI's basic_linear (Reduce_scatter_block) and non-overlapping
    # (Reduce_scatter) call the communicator's Reduce of the whole vector
    # (count * np bytes), which the benchmark does not force: coll_tuned's fixed
    # decision picks it (ours is always linear). Verified with callgrind on 5.0.11
    # at np 2: ompi_coll_base_reduce_intra_pipeline at 8 B and 1 MiB per process,
    # ompi_coll_base_reduce_intra_basic_linear at 1 KiB and 64 KiB.
    if (collective, theirs) in (("reduce_scatter_block", "basic_linear"),
                                ("reduce_scatter", "nonoverlapping")):
        inner = _ompi_reduce_fixed(np_, count * np_)
        if inner != "linear":
            return f"a {inner} Reduce"
    return None


def _stream_unit(nbytes: int) -> int:
    """bcast.c stream_unit: the largest power of two up to 8 that divides nbytes."""
    u = 1
    while u < 8 and nbytes > 0 and nbytes % (2 * u) == 0:
        u *= 2
    return u


# Pairs whose two sides send other messages, or the same messages in another order or
# flow control, from this many processes on (at 2 they coincide): (collective, ours) ->
# (first np, what differs). From a reading of Open MPI's coll/base sources against
# ours (2026-11-27, docs/performance.md "Twins at more than 2 processes"); such cells
# are marked and left out of the means like the library's own switches.
_BINTREE = ("Open MPI's binary tree gives v the children v+d, v+2d (d = 2^level), ours a "
            "heap (2v+1, 2v+2)")
_SPARBIT = ("Open MPI sends one message per block and tag, ours a step's blocks as one "
            "message of an indexed type")
_BUTTERFLY = ("Open MPI keeps blocks in natural order and ends with a mirror exchange; ours "
              "lays them out bit-reversed")
DIFFERS_FROM: dict[tuple[str, str], tuple[int, str]] = {
    ("alltoallv", "linear"): (3, "Open MPI copies its own block, then receives and sends in "
                              "rank order 0..p-1; ours in relative order"),
    ("reduce", "linear"): (3, "ours keeps two receives posted, Open MPI's one blocking "
                           "receive at a time"),
    ("allreduce", "basic_linear"): (3, "ours keeps two receives posted in the Reduce, Open "
                                    "MPI's one blocking receive at a time"),
    ("allgather", "gather_bcast"): (3, "Open MPI's inner Gather and Bcast are its fixed "
                                    "decisions, ours binomial and binomial"),
    ("allgatherv", "gatherv_bcast"): (3, "Open MPI's Gatherv receives in rank order and its "
                                      "Bcast is its fixed decision; ours posts every receive "
                                      "and broadcasts binomially"),
    ("reduce_scatter_block", "basic_linear"): (3, "Open MPI's Scatter phase is its fixed "
                                               "decision; ours sends the blocks in turn"),
    ("reduce_scatter", "nonoverlapping"): (3, "Open MPI's Scatterv phase is not ours: ours "
                                           "sends the blocks in turn"),
    ("bcast", "split_binary"): (4, "Open MPI splits the ranks by parity and pairs v with "
                                "v+-1; ours splits them in two ranges"),
    ("reduce_scatter", "butterfly"): (4, _BUTTERFLY),
    ("reduce_scatter_block", "recursive_doubling"): (4, "Open MPI sends both ranges as one "
                                                     "indexed message a round and has no "
                                                     "fold; ours up to two messages and a "
                                                     "fold"),
    ("reduce", "rabenseifner"): (3, "Open MPI's extra ranks swap halves and its reduce-"
                                 "scatter goes to partners 1, 2, ... (gather far partner "
                                 "first); ours folds whole vectors and goes far partner "
                                 "first"),
    ("allgather", "sparbit"): (4, _SPARBIT),
    ("allgatherv", "sparbit"): (4, _SPARBIT),
    ("bcast", "binary"): (5, _BINTREE),
    ("reduce", "binary"): (5, _BINTREE),
}


def ours_switch(collective: str, ours: str, count: int, np_: int,
                type_size: int = 1) -> str | None:
    """What our side does differently from Open MPI's twin at this count, where the
    two algorithms of the same name send different messages; None when they send the
    same ones. Such a cell is marked ≠ and left out of the mean, as library_switch's.

    Our scatter_allgather and scatter_ring_allgather Bcast cut the message's bytes in
    units of bcast.c's stream_unit (up to 8 bytes) and give each rank a run of whole
    units; Open MPI's (coll_base_bcast.c, bcast_intra_scatter_allgather(_ring)) give
    each rank ceil(count / p) elements. When that leaves a different set of ranks with
    an empty block, the messages differ: at 8 bytes of char on 2 processes ours is one
    8-byte block (the root's) and the allgather sends it to rank 1 in one message,
    while Open MPI scatters 4 bytes to rank 1 and then both exchange 4 bytes -- two
    dependent messages before the root has its peer's block."""
    name, _, params = ours.partition(":")
    first, why = DIFFERS_FROM.get((collective, name), (0, ""))
    if first and np_ >= first:
        return why
    if collective == "bcast" and name == "knomial":
        radix = int(dict(kv.split("=") for kv in params.split(",") if kv).get("radix", 4))
        if np_ > radix:  # the root alone has every other rank as a child up to radix
            return ("Open MPI's k-nomial tree clears a rank's lowest nonzero base-k digit "
                    "and serves the farthest child first, ours the highest and the nearest")
    if collective == "allreduce" and name in ("rabenseifner", "segmented_ring") \
            and np_ > 2 and not _is_pof2(np_):
        seg = int(dict(kv.split("=") for kv in params.split(",") if kv).get("segsize", 65536))
        if name == "rabenseifner":
            return ("Open MPI's extra ranks swap halves in three messages and the even one "
                    "stays in; ours folds the whole vector into the odd one")
        if count * type_size >= np_ * seg > 0:
            return ("Open MPI cuts each block into count/(p*segcount) near-equal segments, "
                    "ours into segments of exactly segsize and a short last one")
    if collective == "reduce_scatter_block" and name == "butterfly" \
            and not _is_pof2(np_) and _pof2_floor(np_) >= 4:
        return _BUTTERFLY
    if collective == "bcast" and name in ("scatter_allgather", "scatter_ring_allgather") \
            and count >= np_ > 1:
        nbytes = count * type_size
        unit = _stream_unit(nbytes)
        k = nbytes // unit
        mine = [unit * (k // np_ + (1 if i < k % np_ else 0)) for i in range(np_)]
        sc = -(-count // np_)
        theirs = [max(0, min(sc, count - i * sc)) * type_size for i in range(np_)]
        if [b > 0 for b in mine] != [b > 0 for b in theirs]:
            return (f"ours cuts {nbytes} B into {unit}-byte units, {sum(b > 0 for b in mine)} "
                    f"non-empty block(s) against Open MPI's {sum(b > 0 for b in theirs)}")
    return None


def unpaired_twins(build) -> list[tuple[str, str]]:
    """(collective, name) of every registry algorithm with an Open MPI twin in the
    library table that neither PAIRS nor NOT_PAIRED lists."""
    out = []
    for a in registry.algorithms(build):
        if not a.ompi_name or a.hidden or (a.collective, a.name) in NOT_PAIRED:
            continue
        try:
            libalgos.find("ompi", a.collective, a.ompi_name)
        except ValueError:
            continue
        if not any(o.split(":")[0] == a.name for o, _ in PAIRS.get(a.collective, [])):
            out.append((a.collective, a.name))
    return out


def unequal(collective: str, ours: str, theirs_spec: str, size: int, np_: int) -> str | None:
    """Why the cell of `ours` against Open MPI's `theirs_spec` at `size` bytes compares
    two different schedules (library_switch, then ours_switch), or None."""
    _, tname, tparams = parse_lib_spec(theirs_spec)
    other = library_switch(collective, tname, size, np_, int(tparams.get("segsize", 0) or 0),
                           DTYPE_SIZE)
    if other:
        return f"{theirs_spec} runs {other} at {fmt_size(size)}"
    mine = ours_switch(collective, ours, size, np_, DTYPE_SIZE)
    return f"{ours} at {fmt_size(size)}: {mine}" if mine else None


def ompi_spec(build, collective: str, ours: str, theirs: str, size: int = 0,
              np_: int = 2) -> str:
    """ompi:THEIRS with our values (defaults, or those `ours` sets) of the parameters
    both sides have, as ours runs them at `size` bytes on `np_` processes: a segsize
    of auto (the segmented trees' default) is the segment the dispatcher's rule gives
    there (analysis.segsize), so Open MPI gets the same segment at every size."""
    name, _, given = ours.partition(":")
    defaults: dict = {}
    algo = None
    for a in registry.algorithms(build):
        if a.collective == collective and a.name == name:
            algo = a
            defaults = {p["name"]: p["default"] for p in a.params}
    defaults.update(kv.split("=", 1) for kv in given.split(",") if "=" in kv)
    if algo is not None and segsize_rule.is_auto(defaults.get("segsize")):
        defaults["segsize"] = segsize_rule.effective(algo, size, np_, defaults)
    accepted = {p.key for p in libalgos.find("ompi", collective, theirs).params}
    shared = [f"{k}={defaults[k]}" for k in SHARED_PARAMS if k in defaults and k in accepted]
    return f"ompi:{theirs}" + (":" + ",".join(shared) if shared else "")


def size_groups(build, collective: str, sizes: list[int], np_: int
                ) -> list[tuple[list[int], list[tuple[str, str]]]]:
    """The sizes cut into groups at which every pair's Open MPI spec is the same (one
    group unless a segsize=auto default changes with the size): [(sizes, [(ours,
    ompi spec)])], one bench run each, so each spec is launched over the sizes that
    use it."""
    groups: dict[tuple, list[int]] = {}
    for s in sizes:
        pairs = tuple((ours, ompi_spec(build, collective, ours, theirs, s, np_))
                      for ours, theirs in PAIRS[collective])
        groups.setdefault(pairs, []).append(s)
    return [(ss, list(pairs)) for pairs, ss in groups.items()]


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def run_control(build, coll: str, spec_x: str, np_: int, sizes: list[int],
                iterations: int | None, reps: int, progress=None) -> dict:
    """The A/A control: Open MPI's `spec_x` in 2 * reps launches of its own, A B A B ...
    (one repetition each), so that the ratio A / B -- the same algorithm against itself
    -- shows how far two series of launches differ with nothing different in them.
    Returns {"A": {size: [per-launch median µs]}, "B": {...}} and the records
    (tagged control="A"/"B") under "records"."""
    out: dict = {"A": {}, "B": {}, "records": []}
    for rep in range(reps):
        for side in ("A", "B"):
            if progress:
                progress(coll, rep, side)
            spec = bench_mod.BenchSpec(coll, [spec_x], np_, sizes, iterations=iterations, reps=1)
            records, _ = bench_mod.run_bench(build, spec)
            for r in records:
                if r["spec"] == spec_x and r.get("median_us") is not None:
                    out[side].setdefault(r["size"], []).append(r["median_us"])
                    out["records"].append({**r, "control": side, "control_rep": rep})
    return out


def control_row(ctl: dict, sizes: list[int]) -> list[str]:
    """Cells of the A/A row: ratio of the medians over launches, A / B, then the
    (A µs/B µs) as in the table."""
    cells = []
    for s in sizes:
        a, b = ctl["A"].get(s), ctl["B"].get(s)
        if not a or not b:
            cells.append("skipped")
            continue
        ma, mb = _median(a), _median(b)
        cells.append((f"{ma / mb:.2f}" if mb > 0 else "n/a") + f" ({ma:.2f}/{mb:.2f})")
    return cells


def run_paired(build, coll: str, groups, np_: int, reps: int, inner_reps: int,
               iterations: int | None, progress=None) -> dict:
    """The paired design: each pair in launches of its own in which Open MPI's twin is
    forced (libalgos' environment) and `native` -- the library's collective, called
    directly -- therefore runs it, while ours runs beside it in the same process, the
    two interleaved within every repetition and size (colltune-bench's loop). A
    launch gives one ratio per size, ours / theirs of its medians over `inner_reps`;
    `reps` launches per pair alternate between the pairs of the collective, and the
    two sides' order in the launch alternates from launch to launch. Launch-to-launch
    spread (placement, a slow phase of the machine) then falls on both sides alike.
    Returns {"ratios": {(ours, size): [per-launch ratio]}, "us": {(ours, size):
    ([ours µs], [theirs µs])}, "spec_at": {(ours, size): Open MPI spec}, "records":
    [...], "notes": [...]}."""
    out: dict = {"ratios": {}, "us": {}, "spec_at": {}, "records": [], "notes": []}
    mpi = build.mpi
    for gsizes, gpairs in groups:
        for ours, theirs in gpairs:
            for s in gsizes:
                out["spec_at"][(ours, s)] = theirs
        for rep in range(reps):
            for i, (ours, theirs) in enumerate(gpairs):
                why = libalgos.skip_reason(mpi, coll, theirs, np_)
                if why:
                    if why not in out["notes"]:
                        out["notes"].append(why)
                    continue
                if progress:
                    progress(coll, rep, i, len(gpairs), theirs)
                order = [ours, "native"] if rep % 2 == 0 else ["native", ours]
                spec = bench_mod.BenchSpec(coll, order, np_, gsizes, iterations=iterations,
                                           reps=inner_reps)
                env = libalgos.lib_env(mpi, coll, theirs)
                records, notes = bench_mod.run(build, spec, extra_env=env)
                out["notes"] += [n for n in notes if n not in out["notes"]]
                by = {(r["spec"], r["size"]): r for r in records}
                for s in gsizes:
                    a, b = by.get((ours, s)), by.get(("native", s))
                    if not a or not b or not a.get("median_us") or not b.get("median_us"):
                        continue
                    out["ratios"].setdefault((ours, s), []).append(
                        a["median_us"] / b["median_us"])
                    mine, theirs_us = out["us"].setdefault((ours, s), ([], []))
                    mine.append(a["median_us"])
                    theirs_us.append(b["median_us"])
                    if a.get("fallback"):
                        out.setdefault("fallback", {})[(ours, s)] = a["fallback"]
                out["records"] += [{**r, "paired_with": theirs, "paired_rep": rep}
                                   for r in records]
    return out


def paired_cell(ratios: list[float], us: tuple[list[float], list[float]]) -> str:
    """A cell of the paired table: the median of the per-launch ratios, their range,
    and the two sides' median µs over launches."""
    lo, hi = min(ratios), max(ratios)
    rng = f" [{lo:.2f}-{hi:.2f}]" if len(ratios) > 1 else ""
    return f"{_median(ratios):.2f}{rng} ({_median(us[0]):.2f}/{_median(us[1]):.2f})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", type=int, default=2, help="processes (default 2)")
    add_size_option(ap, default="8,1K,64K,1M", help="bytes (default 8,1K,64K,1M)")
    ap.add_argument("--colls", default=",".join(PAIRS), help="collectives (default: all)")
    ap.add_argument("--iterations", type=int, help="timed calls per point (driver default)")
    ap.add_argument("--reps", type=int, default=3, help="alternating repetitions; with --paired, launches per pair (default 3)")
    ap.add_argument("--mpi", default="openmpi", help="Open MPI to use (default: openmpi)")
    ap.add_argument("--control", action="store_true",
                    help="add an A/A row per collective: the first pair's Open MPI algorithm "
                    "in 2 x --reps launches of its own, alternating, A against B (the noise "
                    "floor of comparing two series of launches)")
    ap.add_argument("--paired", action="store_true",
                    help="ours and Open MPI's algorithm in the same launches, interleaved in "
                    "one process (Open MPI's forced through the environment, run as the "
                    "library's collective): --reps launches per pair, each one ratio per size; "
                    "cells are the median of those ratios and their range")
    ap.add_argument("--inner-reps", type=int, default=3,
                    help="with --paired: repetitions inside each launch (default 3)")
    ap.add_argument("-o", "--output", help="also write all records as JSON here")
    args = ap.parse_args(argv)

    err = Console(stderr=True)
    out = Console(width=max(Console().width, 150))  # the table is wide; never fold it
    sizes = parse_sizes(args.sizes)
    colls = [c.strip() for c in args.colls.split(",") if c.strip()]
    for c in colls:
        if c not in PAIRS:
            ap.error(f"unknown collective '{c}'; valid: {', '.join(PAIRS)}")
    build = do_build(mpi_mod.find(args.mpi))
    if build.mpi.kind != "openmpi":
        ap.error(f"this compares with Open MPI's coll/tuned; --mpi gives {build.mpi.banner}")
    err.print(f"ours vs {build.mpi.banner}, np={args.np}, sizes {args.sizes}, "
              f"{args.reps} alternating repetitions", highlight=False)

    all_records: list[dict] = []
    for coll in colls:
        csizes = [0] if coll == "barrier" else sizes  # a barrier moves no data
        # one bench run per group of sizes whose Open MPI specs agree (segsize=auto)
        groups = size_groups(build, coll, csizes, args.np)
        if args.paired:
            all_records += print_paired(build, coll, groups, csizes, args, out, err)
            continue
        records, notes, by = [], [], {}
        spec_at: dict[tuple[str, int], str] = {}  # (ours, size) -> Open MPI spec there
        for gi, (gsizes, gpairs) in enumerate(groups):
            algos = list(dict.fromkeys([o for o, _ in gpairs] + [t for _, t in gpairs]))
            spec = bench_mod.BenchSpec(coll, algos, args.np, gsizes,
                                       iterations=args.iterations, reps=args.reps)

            def progress(i, n, launch, coll=coll, gi=gi):
                part = f" sizes {gi + 1}/{len(groups)}" if len(groups) > 1 else ""
                err.print(f"  {coll}{part}: launch {i + 1}/{n} "
                          f"({launch.library_spec or 'ours'})", highlight=False, end="\r")

            grecords, gnotes = bench_mod.run_bench(build, spec, progress=progress)
            err.print(" " * 60, end="\r")
            records += grecords
            notes += [n for n in gnotes if n not in notes]
            for r in grecords:
                if (r["spec"], r["size"]) not in by:
                    by[(r["spec"], r["size"])] = r
            for ours, theirs in gpairs:
                for s in gsizes:
                    spec_at[(ours, s)] = theirs
        all_records += records
        # a row per pair: its Open MPI spec, or the specs by size when they differ
        pairs = []
        for ours, _ in PAIRS[coll]:
            seen = list(dict.fromkeys(spec_at[(ours, s)] for s in csizes))
            pairs.append((ours, seen[0] if len(seen) == 1 else " | ".join(seen)))
        t = Table(title=f"{coll}, np={args.np}: median latency ours / Open MPI "
                        f"(< 1: ours faster)", title_justify="left")
        t.add_column("ours")
        t.add_column("Open MPI (our default parameters)")
        for s in csizes:
            t.add_column(fmt_size(s), justify="right")
        ratios, switched, fastest = [], set(), []
        for ours, theirs in pairs:
            row = [ours, theirs]
            for s in csizes:
                a, b = by.get((ours, s)), by.get((spec_at[(ours, s)], s))
                if not a or not b:
                    row.append("skipped")
                    continue
                cell = (f"{a['median_us'] / b['median_us']:.2f}" if b["median_us"] > 0
                        else "n/a")
                why = unequal(coll, ours, spec_at[(ours, s)], s, args.np)
                if why:
                    switched.add(why)
                    cell += " ≠"
                elif b["median_us"] > 0 and a["median_us"] > 0:
                    ratios.append(a["median_us"] / b["median_us"])
                    if ratios[-1] < FAR and args.reps > 1 and (a.get("rep_min_us") or 0) > 0 \
                            and (b.get("rep_min_us") or 0) > 0:
                        fastest.append(f"{ours} {fmt_size(s)}: "
                                       f"{a['rep_min_us'] / b['rep_min_us']:.2f}")
                cell += f" ({a['median_us']:.2f}/{b['median_us']:.2f})"
                if a.get("fallback"):
                    cell += " *"
                row.append(cell)
            t.add_row(*row)
        ctl = None
        if args.control:
            spec_x = spec_at[(pairs[0][0], csizes[0])]  # its spec at the first size

            def cprogress(c, rep, side):
                err.print(f"  {c}: control {spec_x} rep {rep + 1}/{args.reps} launch {side}",
                          highlight=False, end="\r")

            ctl = run_control(build, coll, spec_x, args.np, csizes, args.iterations,
                              args.reps, progress=cprogress)
            err.print(" " * 60, end="\r")
            all_records += ctl["records"]
            t.add_row("A/A control", f"{spec_x} (A / B)", *control_row(ctl, csizes),
                      style="dim")
        out.print(t)
        extra = []
        if fastest:
            extra.append(f"  below {FAR}: the fastest repetitions' ratio (near 1: the medians' "
                         f"gap is launch-to-launch spread, see --control): " + "; ".join(fastest))
        if ctl is not None:
            extra.append("  A/A control: the same Open MPI algorithm in two alternating series "
                         "of launches; its distance from 1.00 is the noise floor of a cell "
                         "(not in the mean)")
        print_tail(out, coll, ratios, switched, notes,
                   {r["fallback"] for r in records if r.get("fallback")}, extra)
    if args.paired:
        out.print("cells: median over launches of each launch's ratio ours / Open MPI (its "
                  "medians over the launch's repetitions), \\[range over launches], (ours µs / "
                  "Open MPI µs, medians over launches)", highlight=False)
    else:
        out.print("cells: ratio (ours µs / Open MPI µs), medians over repetitions",
                  highlight=False)
    if args.output:
        Path(args.output).write_text(json.dumps(all_records, indent=2) + "\n")
        err.print(f"records written to {args.output}", highlight=False)
    return 0


def print_tail(out, coll: str, ratios: list[float], switched: set[str], notes: list[str],
               fallbacks: set[str], extra: list[str] = ()) -> None:
    """The lines under a collective's table: geometric mean and largest cell, `extra`,
    the unequal cells, unpaired algorithms, the launcher's notes, our fallbacks."""
    if ratios:
        gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        out.print(f"  {coll}: geometric mean {gm:.2f}, largest {max(ratios):.2f} over "
                  f"{len(ratios)} points", highlight=False)
    for line in extra:
        out.print(line, highlight=False)
    if switched:
        out.print("  ≠ not the same schedule, left out of the mean: "
                  + "; ".join(sorted(switched)), highlight=False)
    for (c, name), why in NOT_PAIRED.items():
        if c == coll:
            out.print(f"  not paired: {name}: {why}", highlight=False)
    for note in notes:
        if not note.startswith("running as root"):
            out.print(f"  note: {note}", highlight=False)
    if fallbacks:
        out.print("  * ours ran a declared fallback: " + "; ".join(sorted(fallbacks)),
                  highlight=False)


def print_paired(build, coll: str, groups, csizes: list[int], args, out, err) -> list[dict]:
    """Run the paired design for one collective and print its table; returns the
    records."""
    def progress(c, rep, i, n, theirs):
        err.print(f"  {c}: launch {rep + 1}/{args.reps}, pair {i + 1}/{n} ({theirs})"
                  + " " * 10, highlight=False, end="\r")

    res = run_paired(build, coll, groups, args.np, args.reps, args.inner_reps,
                     args.iterations, progress=progress)
    err.print(" " * 70, end="\r")
    spec_at = res["spec_at"]
    t = Table(title=f"{coll}, np={args.np}, paired (ours and Open MPI's in the same "
                    f"launches): ratio ours / Open MPI (< 1: ours faster)",
              title_justify="left")
    t.add_column("ours")
    t.add_column("Open MPI (our default parameters)")
    for s in csizes:
        t.add_column(fmt_size(s), justify="right")
    ratios, switched = [], set()
    for ours, _ in PAIRS[coll]:
        seen = list(dict.fromkeys(spec_at[(ours, s)] for s in csizes))
        row = [ours, seen[0] if len(seen) == 1 else " | ".join(seen)]
        for s in csizes:
            r = res["ratios"].get((ours, s))
            if not r:
                row.append("skipped")
                continue
            cell = paired_cell(r, res["us"][(ours, s)])
            why = unequal(coll, ours, spec_at[(ours, s)], s, args.np)
            if why:
                switched.add(why)
                cell = cell.replace(" ", " ≠ ", 1)
            else:
                ratios.append(_median(r))
            if (ours, s) in res.get("fallback", {}):
                cell += " *"
            row.append(cell)
        t.add_row(*row)
    out.print(t)
    print_tail(out, coll, ratios, switched, res["notes"], set(res.get("fallback", {}).values()))
    return res["records"]


if __name__ == "__main__":
    sys.exit(main())
