"""Per-point statistics of measurements, shared by the figures, the report and the
terminal tables: the series label of every row, the median and band over repetitions
per point, and the algorithm to use per point with its evidence (evidence.py).
DataFrames in, DataFrames out."""

from __future__ import annotations

from colltune.analysis.evidence import best_per_point, is_exact, with_oversubscribed
from colltune.base.lazy import LazyModule
from colltune.base.specs import is_lib_spec, params_text
from colltune.mpi import libalgos
from colltune.results.reader import measurement_kinds

np = LazyModule("numpy")
pd = LazyModule("pandas")


def labels(df: pd.DataFrame) -> pd.Series:
    """The series name: the algorithm, with its effective parameters where the same
    algorithm of colltune and of the MPI library stand side by side
    (mpi.libalgos.param_label: `chain (segsize 8 KiB, fanout 4)` beside `ompi:chain
    (unsegmented, fanout 4)`); where several settings of one algorithm differ in other
    parameters than those, the algorithm with all of its parameters (`gather_bcast:bcast=chain`).
    Decided per collective, so that a frame of one collective and a frame of several name
    their series alike."""
    params = df["params"].fillna("").astype(str) if "params" in df.columns else \
        pd.Series("", index=df.index)
    algos = df["algorithm"].astype(str)
    colls = df["collective"].astype(str) if "collective" in df.columns else \
        pd.Series("", index=df.index)
    # effective parameters only where a side-by-side pair is there: colltune's `chain`
    # beside the library's `ompi:chain` in the same collective
    base = algos.map(lambda a: a.split(":", 1)[1] if is_lib_spec(a) else a)
    lib = algos.map(is_lib_spec)
    paired = set(zip(colls[lib], base[lib])) & set(zip(colls[~lib], base[~lib]))
    cache: dict = {}
    named = [cache.setdefault((c, a, p), libalgos.param_label(c, a, p)
                              if c and (c, b) in paired else a)
             for c, a, p, b in zip(colls, algos, params, base)]
    d = df.assign(_p=params, _n=named)
    by = ["collective", "algorithm"] if "collective" in df.columns else ["algorithm"]
    settings = d.groupby(by, dropna=False)["_p"].transform("nunique")
    told = d.groupby(by, dropna=False)["_n"].transform("nunique")
    plain = (settings > told) & (params != "")
    return pd.Series(np.where(plain, algos + ":" + params.map(params_text), named),
                     index=df.index)


def latest_round(df: pd.DataFrame) -> pd.DataFrame:
    """The rows conclusions are drawn from: of every study its latest round (rounds are
    `--new-round` re-measurements, possibly of a changed definition); rows without a
    round (`colltune bench --db`) are all kept. The terminal (`quick`) and the
    report's summary (both through best_table) select rows with this."""
    if "round" not in df.columns or df.empty:
        return df
    rnd = pd.to_numeric(df["round"], errors="coerce")
    study = (df["study"].astype(object).where(df["study"].notna(), "")
             if "study" in df.columns else pd.Series("", index=df.index))
    last = rnd.groupby(study).transform("max")
    return df[rnd.isna() | (rnd == last)]


def rounds_text(df: pd.DataFrame) -> str | None:
    """'round 2 of 2 (study quick)' for every study with several rounds, else None."""
    if "round" not in df.columns or df.empty:
        return None
    rnd = pd.to_numeric(df["round"], errors="coerce")
    study = (df["study"].astype(object).where(df["study"].notna(), "")
             if "study" in df.columns else pd.Series("", index=df.index))
    parts = []
    for name, r in rnd.groupby(study, sort=True):
        n = r.dropna().nunique()
        if n > 1:
            parts.append(f"round {int(r.max())} of {n}" + (f" (study {name})" if name else ""))
    return "; ".join(parts) or None


def timing_groups(df: pd.DataFrame) -> list[tuple[str, str, int]]:
    """(timing method, study, measurements) of every collective measurement that says
    how it was timed, sorted: more than one timing method means pooling different
    quantities (the report refuses unless asked)."""
    if "timing" not in df.columns or df.empty:
        return []
    d = df[df["timing"].notna()]
    d = d[measurement_kinds(d) == "collective"]
    study = (d["study"].astype(object).where(d["study"].notna(), "(bench)")
             if "study" in d.columns else pd.Series("(unknown)", index=d.index))
    counts = d.assign(_s=study.astype(str)).groupby(["timing", "_s"]).size()
    return [(str(t), str(s), int(n)) for (t, s), n in sorted(counts.items())]


def timings_text(groups: list[tuple[str, str, int]]) -> str:
    """'osu: study quick (990 measurements); window: (bench) (9 measurements)'."""
    by: dict[str, list[str]] = {}
    for t, s, n in groups:
        by.setdefault(t, []).append(f"{'study ' + s if s != '(bench)' else s} "
                                    f"({n} measurements)")
    return "; ".join(f"{t}: {', '.join(v)}" for t, v in by.items())


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
    (evidence.best_per_point: the baseline unless another is faster beyond the noise,
    simulated points exactly; no conclusion at oversubscribed points), the runner-up by median, and the choice's
    `ratio` (time / the baseline's time, evidence.ratio_to_baseline) with its interval.
    From the latest round of each study (latest_round): the terminal and the report
    give the same table, digit for digit, for the same database."""
    d = prepare(latest_round(df))
    keys = ["collective"] + (["mapping"] if "mapping" in d.columns
                             and d["mapping"].nunique() > 1 else []) + ["np", "size"]
    if d.empty:
        return pd.DataFrame()
    tab = best_per_point(d, keys, baseline=baseline,
                         include_oversubscribed=include_oversubscribed, exact=is_exact(d))
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
