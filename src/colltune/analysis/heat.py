"""The heat application's scaling: DataFrames of `colltune heat` / heat-study
measurements in, speedup, efficiency and the memory-bandwidth bound out (docs/heat.md)."""

from __future__ import annotations

import json

from colltune.base.lazy import LazyModule
from colltune.drivers.heat import bandwidth_bound_gflops
from colltune.studies.study import STREAM

pd = LazyModule("pandas")


def heat_scaling(df: pd.DataFrame) -> pd.DataFrame:
    """Per (grid, decomp, variant, np): median wall time over repetitions, GFLOP/s,
    speedup S(p) = T(1)/T(p) and efficiency E(p) = S(p)/p (T(1): the same grid,
    decomposition and variant on one process; NaN without it)."""
    d = df[df["algorithm"] != STREAM].copy()
    def _params(v) -> dict:  # "k=v,k=v" as recorded, or the database's JSON object
        if isinstance(v, dict):
            return v
        text = str(v)
        if text.startswith("{"):
            return json.loads(text)
        return dict(p.split("=", 1) for p in text.split(",") if "=" in p)

    kv = [_params(v) for v in d["params"]]
    d["grid"] = [x.get("grid") for x in kv]
    d["decomp"] = [x.get("decomp") for x in kv]
    d["cells"] = d["size"] // 8
    d["time_s"] = d["median_us"] / 1e6
    # FLOPs: 8 per cell per iteration (docs/heat.md)
    d["gflops"] = 8 * d["cells"] * d["iterations"] / d["time_s"] / 1e9
    g = (d.groupby(["grid", "decomp", "algorithm", "np"], sort=True)
          .agg(time_s=("time_s", "median"), gflops=("gflops", "median"),
               runs=("time_s", "size"))
          .reset_index().rename(columns={"algorithm": "variant"}))
    t1 = g[g["np"] == 1].set_index(["grid", "decomp", "variant"])["time_s"]
    g["speedup"] = [t1.get((r.grid, r.decomp, r.variant), float("nan")) / r.time_s
                    for r in g.itertuples()]
    g["efficiency"] = g["speedup"] / g["np"]
    bw = stream_bandwidth(df)
    if not bw.empty:
        g["stream_GBps"] = g["np"].map(bw)
        g["bound_gflops"] = g["stream_GBps"].map(  # NaN where no triad at that np
            lambda v: bandwidth_bound_gflops(v) if pd.notna(v) else float("nan"))
        g["of_bound"] = g["gflops"] / g["bound_gflops"]
    return g


def stream_bandwidth(df: pd.DataFrame) -> pd.Series:
    """Memory bandwidth (GB/s, all processes together) per process count: the median
    over the heat study's STREAM triad launches (bytes moved / best time)."""
    s = df[df["algorithm"] == STREAM]
    if s.empty:
        return pd.Series(dtype=float)
    gbs = s["size"] / s["median_us"] / 1e3
    return gbs.groupby(s["np"]).median()
