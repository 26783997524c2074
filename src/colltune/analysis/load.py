"""Load analysis (docs/workload.md): DataFrames of a study with load levels in, tables
out; no launches (the generator and the probe are drivers/loadgen.py).

- **Analysis** (`correlations`, `best_per_level`, `changes`): Pearson and Spearman
  correlation of the probe with every algorithm's latency (the seed's Fig. 2), the
  best algorithm per load level with evidence (evidence.best_per_point), and how
  often the best algorithm changes with the load.
- **Load classes for rules** (`class_bounds`): one class per level, ordered by
  their median probe, with thresholds at the geometric midpoints between adjacent
  classes' medians (tuning.tune.classes_from_frame makes rules.LoadClass of them).
"""

from __future__ import annotations

import math


from colltune.analysis import evidence
from colltune.base.units import fmt_size
from colltune.drivers.loadgen import LoadError
from colltune.base.lazy import LazyModule

np = LazyModule("numpy")
pd = LazyModule("pandas")

CORR_COLUMNS = ["collective", "np", "size", "algorithm", "launches", "pearson", "spearman",
                "latency_min_us", "latency_max_us", "spread"]


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    rx = pd.Series(x).rank().to_numpy()
    ry = pd.Series(y).rank().to_numpy()
    return _pearson(rx, ry)


def with_load(df: pd.DataFrame) -> pd.DataFrame:
    """Rows that carry a probe value; LoadError when none does."""
    if "probe_us" not in df.columns or df["probe_us"].notna().sum() == 0:
        raise LoadError("the study has no probe values: it has no load dimension (study.load) "
                        "or was measured before colltune stored them")
    return df[df["probe_us"].notna()].copy()


def correlations(df: pd.DataFrame, label: str = "algorithm") -> pd.DataFrame:
    """Per collective, process count, size and algorithm: the Pearson and Spearman
    correlation of the launches' probe_us with the algorithm's median latency (the
    seed's Fig. 2), with the spread of the latency (max/min over launches)."""
    d = with_load(df)
    rows = []
    for (coll, np_, size, algo), g in d.groupby(["collective", "np", "size", label], sort=True):
        x = g["probe_us"].to_numpy(dtype=float)
        y = g["median_us"].to_numpy(dtype=float)
        ok = np.isfinite(x) & np.isfinite(y)
        x, y = x[ok], y[ok]
        rows.append({"collective": coll, "np": int(np_), "size": int(size), "algorithm": algo,
                     "launches": int(len(x)), "pearson": _pearson(x, y),
                     "spearman": _spearman(x, y),
                     "latency_min_us": float(y.min()) if len(y) else math.nan,
                     "latency_max_us": float(y.max()) if len(y) else math.nan,
                     "spread": float(y.max() / y.min()) if len(y) and y.min() > 0 else math.nan})
    return pd.DataFrame(rows, columns=CORR_COLUMNS)


def level_order(df: pd.DataFrame) -> list[str]:
    """The study's load levels from the quietest to the busiest, by median probe."""
    d = with_load(df)
    med = d.groupby("load_level")["probe_us"].median().sort_values()
    return list(med.index)


def best_per_level(df: pd.DataFrame, label: str = "label") -> pd.DataFrame:
    """The best algorithm at every (collective, np, size, load level), with evidence
    (evidence.best_per_point: native unless another is faster beyond the noise), and
    the level's median probe."""
    d = with_load(df)
    if label not in d.columns:
        d = d.assign(**{label: d["algorithm"]})
    best = evidence.best_per_point(d, ["collective", "np", "size", "load_level"], label=label,
                                   exact=evidence.is_exact(d))
    probe_med = d.groupby("load_level")["probe_us"].median()
    best["probe_us"] = best["load_level"].map(probe_med)
    order = {lv: i for i, lv in enumerate(level_order(d))}
    best["_o"] = best["load_level"].map(order)
    return best.sort_values(["collective", "np", "size", "_o"]).drop(columns="_o") \
        .reset_index(drop=True)


def changes(best: pd.DataFrame) -> pd.DataFrame:
    """Per (collective, np, size): the best algorithm at each level (quietest first) and
    whether it changes with the load (by the evidence-backed choice and by the fastest
    median)."""
    rows = []
    for (coll, np_, size), g in best.groupby(["collective", "np", "size"], sort=True):
        rows.append({"collective": coll, "np": int(np_), "size": int(size),
                     "best_by_level": " / ".join(f"{lv}: {b}" for lv, b in
                                                 zip(g["load_level"], g["best"])),
                     "changes": int(g["best"].nunique() > 1),
                     "fastest_changes": int(g["fastest"].nunique() > 1)})
    return pd.DataFrame(rows, columns=["collective", "np", "size", "best_by_level", "changes",
                                       "fastest_changes"])


def class_bounds(df: pd.DataFrame) -> list[tuple[str, float, float | None]]:
    """(level, lo, hi) per level, quietest first: index ranges on probe_us split at the
    geometric midpoints of adjacent levels' median probes (hi None: no bound)."""
    d = with_load(df)
    med = d.groupby("load_level")["probe_us"].median().sort_values()
    names, values = list(med.index), [float(v) for v in med.to_numpy()]
    out = []
    for i, n in enumerate(names):
        lo = 0.0 if i == 0 else round(math.sqrt(values[i - 1] * values[i]), 3)
        hi = None if i == len(names) - 1 else round(math.sqrt(values[i] * values[i + 1]), 3)
        out.append((str(n), lo, hi))
    return out


def summary_text(df: pd.DataFrame) -> str:
    """What `colltune load analyse` prints: correlations, best per level, changes."""
    d = with_load(df)
    lines = []
    levels = level_order(d)
    probe = d.groupby("load_level")["probe_us"].agg(["median", "min", "max", "count"])
    lines.append("probe index (µs per probe iteration: a barrier and an exchange between random "
                 "pairs, 4 KB unless the study's probe_size says otherwise) "
                 "per load level:")
    for lv in levels:
        r = probe.loc[lv]
        lines.append(f"  {lv:<10} median {r['median']:9.2f}  range {r['min']:.2f}..{r['max']:.2f}"
                     f"  ({int(r['count'])} points)")
    corr = correlations(d)
    lines.append("")
    lines.append("correlation of the probe with each algorithm's latency (over launches):")
    lines.append(f"  {'coll':<9} {'np':>3} {'size':>7} {'algorithm':<22} {'n':>3} "
                 f"{'pearson':>8} {'spearman':>8} {'spread':>7}")
    for r in corr.itertuples():
        lines.append(f"  {r.collective:<9} {r.np:>3} {fmt_size(r.size):>7} {r.algorithm:<22} "
                     f"{r.launches:>3} {r.pearson:>8.3f} {r.spearman:>8.3f} {r.spread:>7.2f}")
    best = best_per_level(d)
    lines.append("")
    lines.append("best algorithm per load level (native unless faster beyond the noise):")
    for r in best.itertuples():
        lines.append(f"  {r.collective:<9} np={r.np:<3} {fmt_size(r.size):>7} "
                     f"{r.load_level:<8} best {r.best:<22} fastest {r.fastest:<22} "
                     f"{r.evidence}")
    ch = changes(best)
    lines.append("")
    n = len(ch)
    lines.append(f"the best algorithm changes with the load at {int(ch['changes'].sum())} of {n} "
                 f"points (the fastest median at {int(ch['fastest_changes'].sum())} of {n})")
    for r in ch.itertuples():
        lines.append(f"  {r.collective} np={r.np} {fmt_size(r.size)}: {r.best_by_level}")
    return "\n".join(lines)
