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
    no conclusion at oversubscribed points), the runner-up by median, and the choice's
    `ratio` (time / the baseline's time, evidence.ratio_to_baseline) with its interval."""
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


def median_repetition(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """One row per point (`by`): the repetition (launch) whose median is the median of
    the point's repetitions (the lower one of an even count), with its own OSU columns
    (mean_us, rank_min_us, rank_max_us, iterations: what OSU prints for one run), and
    over all repetitions: median_us (their median), rep_min_us and rep_max_us (their
    smallest and largest median) and `repetitions`."""
    d = df[pd.to_numeric(df["median_us"], errors="coerce").notna()]
    if d.empty:
        return d.assign(repetitions=pd.Series(dtype=int))
    d = d.sort_values([*by, "median_us"], kind="stable")
    g = d.groupby(by, sort=False)
    rank = g.cumcount()
    n = g["median_us"].transform("size")
    rep = d[rank == (n - 1) // 2].set_index(by)
    spread = g["median_us"].agg(["median", "min", "max", "size"]).rename(columns={
        "median": "median_us", "min": "rep_min_us", "max": "rep_max_us",
        "size": "repetitions"})
    out = rep.drop(columns=[c for c in spread.columns if c in rep.columns]).join(spread)
    order = df[by].drop_duplicates()
    return order.merge(out.reset_index(), on=by, how="inner")
