"""Per-point statistics of measurements, shared by the figures, the report and the
terminal tables: the series label of every row, the median and band over repetitions
per point, and the algorithm to use per point with its evidence (evidence.py).
DataFrames in, DataFrames out."""

from __future__ import annotations

from colltune.analysis.evidence import best_per_point, with_oversubscribed
from colltune.base.lazy import LazyModule

np = LazyModule("numpy")
pd = LazyModule("pandas")


def labels(df: pd.DataFrame) -> pd.Series:
    """The series name: the algorithm, with its parameters where several settings of
    one algorithm were measured."""
    params = df["params"].fillna("").astype(str) if "params" in df.columns else \
        pd.Series("", index=df.index)
    multi = df.assign(_p=params).groupby("algorithm")["_p"].transform("nunique") > 1
    return pd.Series(np.where(multi & (params != ""), df["algorithm"].astype(str) + ":"
                              + params, df["algorithm"].astype(str)), index=df.index)


def prepare(df: pd.DataFrame) -> pd.DataFrame:
    """Rows with a latency, a series `label` and `oversubscribed` (evidence.py)."""
    d = with_oversubscribed(df.copy())
    d["label"] = labels(d)
    d = d[pd.to_numeric(d["median_us"], errors="coerce").notna()]
    return d


def point_stats(df: pd.DataFrame, by: list[str], band: str = "minmax") -> pd.DataFrame:
    """center = median over repetitions of median_us, lo/hi = the band, n = repetitions."""
    g = df.groupby(by, sort=True)["median_us"]
    out = pd.DataFrame({"center": g.median(), "n": g.size()})
    out["over"] = (df.groupby(by, sort=True)["oversubscribed"].any()
                   if "oversubscribed" in df.columns else False)
    if band == "minmax":
        out["lo"], out["hi"] = g.min(), g.max()
    elif band == "quantile":
        out["lo"], out["hi"] = g.quantile(0.25), g.quantile(0.75)
    else:
        out["lo"] = out["hi"] = np.nan
    if band != "none" and {"rep_min_us", "rep_max_us"} <= set(df.columns):
        single = out["n"] <= 1
        if single.any():
            mn = df.groupby(by, sort=True)["rep_min_us"].min()
            mx = df.groupby(by, sort=True)["rep_max_us"].max()
            out.loc[single, "lo"] = mn[single]
            out.loc[single, "hi"] = mx[single]
    return out.reset_index()


def honest_np(d: pd.DataFrame):
    """The largest process count with points that are not oversubscribed (else the
    largest): the default of figures that compare algorithms."""
    if d.empty or "np" not in d.columns:
        return None
    ok = d[~d["oversubscribed"].astype(bool)] if "oversubscribed" in d.columns else d
    return (ok if len(ok) else d)["np"].max()


def best_table(df: pd.DataFrame, baseline: str = "native",
               include_oversubscribed: bool = False) -> pd.DataFrame:
    """The algorithm to use per (collective, [mapping,] np, size) with its evidence
    (evidence.best_per_point: the baseline unless another is faster beyond the noise;
    no conclusion at oversubscribed points), the runner-up by median, and the speedup
    of the choice over the baseline."""
    d = prepare(df)
    keys = ["collective"] + (["mapping"] if "mapping" in d.columns
                             and d["mapping"].nunique() > 1 else []) + ["np", "size"]
    if d.empty:
        return pd.DataFrame()
    tab = best_per_point(d, keys, baseline=baseline,
                         include_oversubscribed=include_oversubscribed)
    tab = tab.rename(columns={"baseline_us": f"{baseline}_us"})
    stats = point_stats(d, keys + ["label"], "none")
    second, second_us = [], []
    for key, g in stats.groupby(keys, sort=True):
        g = g.sort_values("center")
        second.append(g.iloc[1]["label"] if len(g) > 1 else None)
        second_us.append(float(g.iloc[1]["center"]) if len(g) > 1 else None)
    tab["second"], tab["second_us"] = second, second_us
    return tab
