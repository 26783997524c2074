"""Rank remapping: what it gains and what it costs, from stored points (issue 17).

A point of the `remap` study is one algorithm at one size and process count, with the
ranks placed in one order across the nodes (`rank_order` seq or rr) and the algorithm
run plain or with `remap=seq|rr` (it behaves as if the ranks were in that order,
docs/remapping.md). `remap_effect` puts, per (collective, algorithm, processes, size),
the four placements side by side:

- `seq`, `rr`: plain, in either order;
- `seq>rr`: placed seq, run with `remap=rr`; `rr>seq`: placed rr, run with `remap=seq`;

and derives from them which order the algorithm prefers (the faster plain one,
`best`), the **speedup** of remapping (the unfavourable placement plain against the
same placement remapped to the favourable order) and its **overhead** (that remapped
time against the favourable placement plain: what the remap costs over being placed
right), plus the overhead of the layer when it has nothing to do (the favourable
placement run with a remap to its own order, an identity). Bandwidths are the size
per process over the time (bytes/µs = MB/s), as in the seed's figures.
"""

from __future__ import annotations

from colltune.base.lazy import LazyModule

pd = LazyModule("pandas")

from colltune.base.specs import remap_of, without_remap
from colltune.mpi.placement import ORDERS

PLACEMENTS = ("seq", "rr", "seq>rr", "rr>seq")


def placement_label(order: str, remap: str) -> str | None:
    """`seq`, `rr` (plain, or a remap to its own order: `None` then, kept apart as the
    identity), `seq>rr`, `rr>seq`; None for what is neither (auto, none placement)."""
    if order not in ORDERS:
        return None
    if remap in ("none", ""):
        return order
    if remap in ORDERS and remap != order:
        return f"{order}>{remap}"
    return None


def remap_effect(points: pd.DataFrame) -> pd.DataFrame:
    """Per (collective, algorithm, np, size) [and platform when the frame has one]:
    latency (µs) and bandwidth (MB/s) of every placement, the favourable order, the
    speedup of remapping and its overhead. `points`: rows with collective, spec (or
    algorithm), np, rank_order, size, median_us (and optionally params); several rows
    of one point (repetitions) are reduced to their median.

    Columns: `us_seq`, `us_rr`, `us_seq>rr`, `us_rr>seq`, `bw_*` the same as bandwidth,
    `best` (seq or rr, the faster plain order; ties: seq; None without both), `worst_us` (the other plain
    order), `remapped_us` (the worst order remapped to the best), `speedup`
    (worst_us / remapped_us), `overhead` (remapped_us / best plain - 1), `identity_us`
    and `identity_overhead` (the best order run with a remap to itself: the layer when
    it has nothing to do). A missing placement gives NaN in what depends on it."""
    need = {"collective", "np", "rank_order", "size", "median_us"}
    missing = need - set(points.columns)
    if missing:
        raise ValueError(f"remap_effect: the points lack {', '.join(sorted(missing))}")
    if "spec" not in points.columns and "algorithm" not in points.columns:
        raise ValueError("remap_effect: the points have neither spec nor algorithm")
    d = points.copy()
    spec = d["spec"] if "spec" in d.columns else d["algorithm"]
    if "algorithm" in d.columns:
        spec = spec.astype(object).where(spec.notna(), d["algorithm"])
    params = d["params"] if "params" in d.columns else pd.Series([None] * len(d), index=d.index)
    d["remap"] = [remap_of(s, p) for s, p in zip(spec, params)]
    d["algorithm"] = [without_remap(s) for s in spec]
    d["median_us"] = pd.to_numeric(d["median_us"], errors="coerce")
    d = d[d["median_us"].notna() & (d["median_us"] > 0)]
    d["placement"] = [placement_label(str(o), r) for o, r in zip(d["rank_order"], d["remap"])]
    d["identity"] = [o in ORDERS and r == o for o, r in zip(d["rank_order"], d["remap"])]
    keys = ["collective", "algorithm", "np", "size"]
    if "platform" in d.columns:
        d["platform"] = d["platform"].astype(object).where(d["platform"].notna(), "")
        keys.insert(0, "platform")
    cols = [f"us_{p}" for p in PLACEMENTS]
    if d.empty:
        return pd.DataFrame(columns=keys + cols)
    main = d[d["placement"].notna()]
    wide = (main.pivot_table(index=keys, columns="placement", values="median_us",
                             aggfunc="median")
            .reindex(columns=list(PLACEMENTS)))
    wide.columns = cols
    ident = (d[d["identity"]].pivot_table(index=keys, columns="rank_order", values="median_us",
                                          aggfunc="median")
             .reindex(columns=list(ORDERS)))
    ident.columns = [f"ident_{o}" for o in ORDERS]
    out = wide.join(ident, how="left").reset_index()
    seq, rr = out["us_seq"], out["us_rr"]
    best_rr = rr < seq  # NaN compares False: seq when rr is missing
    out["best"] = best_rr.map({True: "rr", False: "seq"})
    out.loc[seq.isna() | rr.isna(), "best"] = None  # one order alone decides nothing
    out["worst_us"] = rr.where(~best_rr & seq.notna(), seq)
    out.loc[seq.isna() | rr.isna(), "worst_us"] = float("nan")
    best_us = seq.where(~best_rr & seq.notna(), rr)
    out["remapped_us"] = out["us_rr>seq"].where(~best_rr, out["us_seq>rr"])
    out["speedup"] = out["worst_us"] / out["remapped_us"]
    out["overhead"] = out["remapped_us"] / best_us - 1.0
    out["identity_us"] = out["ident_seq"].where(~best_rr, out["ident_rr"])
    out["identity_overhead"] = out["identity_us"] / best_us - 1.0
    out.loc[out["best"].isna(), ["identity_us", "identity_overhead"]] = float("nan")
    for p in PLACEMENTS:
        out[f"bw_{p}"] = out["size"].astype(float) / out[f"us_{p}"]
    out = out.drop(columns=["ident_seq", "ident_rr"])
    return out.sort_values(keys).reset_index(drop=True)
