"""Held-out regret of load-aware rules (docs/workload.md, lab/scripts/load_regret.py):
rules tuned on one round of a study with load levels, judged on the launches of
another."""

from __future__ import annotations

import math


from colltune.analysis.load import level_order, with_load
from colltune.tuning import tune as tune_mod
from colltune.base.lazy import LazyModule

np = LazyModule("numpy")
pd = LazyModule("pandas")

REGRET_POLICIES = ("load-aware", "load-aware (true level)", "load-unaware (quiet)", "default")


def held_out_regret(train: pd.DataFrame, test: pd.DataFrame, target: str = "colltune",
                    quiet: str | None = None) -> tuple[pd.DataFrame, dict]:
    """Rules made from `train` judged on the launches of `test` (another round).

    load-aware: tune's rules with load classes, the class of each test launch chosen
    from its own probe value (as the interposition library does); load-aware (true
    level): the same rules given the level the launch really ran under (what a perfect
    probe would give); load-unaware: rules tuned on the quiet level alone (`quiet`,
    default the level with the lowest median probe); default: native (the library's
    own choice). Regret of a launch and size = the chosen algorithm's latency in that
    launch / the fastest latency measured in that launch. Returns one row per test
    launch and size, and the rule sets."""
    levels = level_order(train)
    quiet = quiet or levels[0]
    aware = tune_mod.select(train, target, include_oversubscribed=True)
    unaware = tune_mod.select(train[train["load_level"] == quiet], target,
                              include_oversubscribed=True)
    p = tune_mod.prepare(with_load(test), target, include_oversubscribed=True)
    d = p.frame
    rows = []
    for (unit, coll, np_, size), g in d.groupby(["unit_id", "collective", "np", "size"]):
        meds = dict(zip(g["label"], g["median_us"]))
        fastest = min(meds.values())
        probe_us = float(g["probe_us"].iloc[0])
        level = str(g["load_level"].iloc[0])
        cls = aware.load_class(probe_us)
        picks = {
            "load-aware": aware.lookup(coll, int(np_), int(size), load=cls),
            "load-aware (true level)": aware.lookup(coll, int(np_), int(size), load=level),
            "load-unaware (quiet)": unaware.lookup(coll, int(np_), int(size)),
        }
        row = {"unit_id": unit, "collective": coll, "np": int(np_), "size": int(size),
               "load_level": level, "probe_us": probe_us, "class": cls,
               "fastest": min(meds, key=meds.get)}
        for name, rule in picks.items():
            spec = rule.spec if rule is not None else "native"
            row[f"{name}:pick"] = spec
            row[name] = meds[spec] / fastest if spec in meds else math.nan
        row["default:pick"] = "native"
        row["default"] = meds["native"] / fastest if "native" in meds else math.nan
        rows.append(row)
    return pd.DataFrame(rows), {"aware": aware, "unaware": unaware}


def regret_summary(per: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Geometric mean regret of every policy per group of `by`, with the launches."""
    out = []
    for key, g in per.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key))
        row["launches"] = len(g)
        for pol in REGRET_POLICIES:
            v = g[pol].dropna()
            v = v[v > 0]
            row[pol] = float(np.exp(np.log(v).mean())) if len(v) else math.nan
        out.append(row)
    return pd.DataFrame(out, columns=by + ["launches", *REGRET_POLICIES])
