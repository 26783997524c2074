"""Regression models over benchmark measurements: `colltune fit`.

Everything here works on a pandas DataFrame of measurements, one row per
measured point (and repetition), with at least the columns `collective`,
`algorithm`, `np`, `size` and `median_us`. Optional columns (`mapping`,
`repetition`, `rep_min_us`, `rep_max_us`, `params`, `nodes`, `ppn`, ...) are used when
present. `load_measurements` reads such a frame from a results database.

The models are ordinary least squares through the statsmodels formula API
(patsy syntax). The model frame names the columns as people read them:

| column          | meaning                                           |
|-----------------|---------------------------------------------------|
| `latency`       | the chosen statistic in µs (default `median_us`)  |
| `processes`     | `np`, the process count                           |
| `size`          | bytes, as recorded (per process for (all)gather)  |
| `log2_latency`, `log2_size` | their base-2 logarithms               |

plus `nodes`, `ppn`, `mapping`, `algorithm`, `collective`, `dtype`, `root`,
`repetition` where the data have them. `np` (numpy) and `log2`, `log`, `log10`,
`sqrt`, `exp` are available in formulas: `np.log2(latency) ~ 0 + processes +
np.log2(size)` is the same model as the built-in `seed-log`.

The two built-in models are the seed 000 report's (see docs/models.md):

- `seed-linear`: `latency ~ 0 + processes + size`
- `seed-log`:    `log2_latency ~ 0 + processes + log2_size`
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from colltune.results.db import DBError, default_path
from colltune.results import reader
from colltune.results.reader import read_measurements
from colltune.base.errors import ColltuneError
from colltune.base.specs import params_text
from colltune.base.lazy import LazyModule
from colltune.base.units import parse_size

numpy = LazyModule("numpy")
pd = LazyModule("pandas")

SEED_MODELS: dict[str, tuple[str, str]] = {
    "seed-linear": ("latency ~ 0 + processes + size",
                    "Latency = β0·Processes + β1·Size, no intercept (seed 000, Table 1)"),
    "seed-log": ("log2_latency ~ 0 + processes + log2_size",
                 "log2 Latency = β0·Processes + β1·log2 Size, no intercept (seed 000, Table 2)"),
}
STATS = ("median_us", "mean_us", "rep_min_us", "rep_max_us", "p90_us", "p99_us")
# columns copied into the model frame when the measurements have them
EXTRA_COLUMNS = ("collective", "algorithm", "params", "mapping", "order", "nodes", "ppn",
                 "dtype", "op", "root", "timing", "repetition", "run_id", "study")


def formula_env() -> dict:
    """Names a formula may use besides the data columns."""
    import numpy as np

    return {"np": np, "log2": np.log2, "log": np.log, "log10": np.log10, "sqrt": np.sqrt,
            "exp": np.exp}


class FitError(ColltuneError, RuntimeError):
    """The data or the formula do not allow a fit; the message says why."""


# ---------------------------------------------------------------------------- loading

def load_measurements(db_path: str | Path, study: str | None = None, *,
                      include_simulated: bool = False, only_simulated: bool = False,
                      **filters) -> pd.DataFrame:
    """The `measurements` table of a results database as a DataFrame
    (results.reader.read_measurements: any schema with a `measurements` table, joined
    with `runs` and `studies` where the file has them), ready for the models.

    `study` selects one study by name (or id); every other keyword is an equality
    filter on a column (a list/tuple/set means "any of"); `None` values are ignored.
    Raises FitError when the file, the table or a filtered column is missing.
    Simulated points (SimGrid SMPI, column `simulated`) are left out unless
    `include_simulated`; `only_simulated` keeps them alone.
    """
    try:
        df = read_measurements(db_path, study, include_simulated=include_simulated,
                               only_simulated=only_simulated)
    except DBError as exc:
        raise FitError(str(exc)) from exc
    df = filter_eq(df, **filters)
    return normalise(df.reset_index(drop=True))


def normalise(df: pd.DataFrame) -> pd.DataFrame:
    """Numeric types for the columns the models use; checks the minimal columns."""
    missing = [c for c in ("collective", "algorithm", "np", "size", "median_us")
               if c not in df.columns]
    if missing:
        raise FitError(f"the measurements lack the column(s) {', '.join(missing)}")
    df = df.copy()
    for c in ("np", "size", "nodes", "ppn", "root", "repetition"):
        if c in df.columns:
            df[c] = pd.to_numeric(df[c], errors="coerce")
    for c in STATS + ("stddev_us",):
        if c in df.columns:
            df[c] = pd.to_numeric(df[c], errors="coerce").astype(float)
    if "params" in df.columns:
        df["params"] = df["params"].map(params_text)  # as the benchmark writes them
    if "rank_order" in df.columns and "order" not in df.columns:
        df["order"] = df["rank_order"]
    return df


def filter_eq(df: pd.DataFrame, **filters) -> pd.DataFrame:
    for col, val in filters.items():
        if val is None:
            continue
        if col not in df.columns:
            raise FitError(f"the measurements have no column '{col}' to filter on")
        if isinstance(val, (list, tuple, set)):
            df = df[df[col].astype(str).isin([str(v) for v in val])]
        else:
            df = df[df[col].astype(str) == str(val)]
    return df


def parse_range(text: str | None, what: str, sizes: bool = False) -> tuple[float, float] | None:
    """'2:16', '1K:1M', '8:' or ':64K' (or with '..') -> (low, high), inclusive; None
    passes. (The commands take lists of these: units.parse_selection.)"""
    if text is None or text == "":
        return None
    conv = parse_size if sizes else (lambda t: int(t.strip()))
    try:
        if ".." in text or ":" in text:
            lo_s, hi_s = re.split(r"\.\.|:", text, maxsplit=1)
            lo = conv(lo_s) if lo_s.strip() else -math.inf
            hi = conv(hi_s) if hi_s.strip() else math.inf
        else:
            lo = hi = conv(text)
    except ValueError as exc:
        raise FitError(f"{what} '{text}': {exc}; write a..b (either end may be left out)") from exc
    if lo > hi:
        raise FitError(f"{what} '{text}': the low end is above the high end")
    return lo, hi


def select(df: pd.DataFrame, collective=None, algorithm=None, mapping=None,
           np_range: tuple[float, float] | None = None,
           size_range: tuple[float, float] | None = None,
           nps: list[tuple[float, float]] | None = None,
           sizes: list[tuple[float, float]] | None = None) -> pd.DataFrame:
    """The rows of a selection. collective/algorithm/mapping: a name, a comma-separated
    list or a list; np_range/size_range: one inclusive range; nps/sizes: inclusive
    ranges (units.parse_selection), a row is kept when it is in any of them."""
    def names(v):
        if v is None or isinstance(v, (list, tuple, set)):
            return v
        return [x.strip() for x in str(v).split(",") if x.strip()]

    df = filter_eq(df, collective=names(collective), algorithm=names(algorithm),
                   mapping=names(mapping))
    if np_range:
        df = df[(df["np"] >= np_range[0]) & (df["np"] <= np_range[1])]
    if size_range:
        df = df[(df["size"] >= size_range[0]) & (df["size"] <= size_range[1])]
    for col, sel in (("np", nps), ("size", sizes)):
        if sel:
            keep = pd.Series(False, index=df.index)
            for lo, hi in sel:
                keep |= (df[col] >= lo) & (df[col] <= hi)
            df = df[keep]
    return df


# ---------------------------------------------------------------------------- models

def model_frame(df: pd.DataFrame, stat: str = "median_us") -> pd.DataFrame:
    """The columns formulas use: latency (µs), processes, size, their log2, extras."""
    if stat not in df.columns:
        raise FitError(f"the measurements have no '{stat}' column")
    lat = pd.to_numeric(df[stat], errors="coerce").astype(float)
    size = pd.to_numeric(df["size"], errors="coerce").astype(float)
    frame = pd.DataFrame({"processes": pd.to_numeric(df["np"], errors="coerce").astype(float),
                          "size": size, "latency": lat}, index=df.index)
    with numpy.errstate(divide="ignore", invalid="ignore"):
        frame["log2_latency"] = numpy.where(lat > 0, numpy.log2(lat.where(lat > 0)), numpy.nan)
        frame["log2_size"] = numpy.where(size > 0, numpy.log2(size.where(size > 0)), numpy.nan)
    for c in EXTRA_COLUMNS:
        if c in df.columns:
            frame[c] = df[c].values
    return frame


_LOG_CALL = re.compile(r"\b(?:np\.|numpy\.)?(log2|log10|log)\(\s*([A-Za-z_]\w*)\s*\)")
_LOG_COL = re.compile(r"\blog2_(latency|size)\b")


def _logged_variables(formula: str) -> set[str]:
    out = {m.group(2) for m in _LOG_CALL.finditer(formula)}
    out |= {m.group(1) for m in _LOG_COL.finditer(formula)}
    return out


def _response_kind(name: str) -> tuple[str, str]:
    """(kind, variable) of a response: kind linear, log2, ln, log10 or other."""
    n = name.replace(" ", "")
    if n == "latency":
        return "linear", "latency"
    if n == "log2_latency":
        return "log2", "latency"
    m = re.fullmatch(r"(?:np\.|numpy\.)?(log2|log10|log)\((\w+)\)", n)
    if m:
        return {"log2": "log2", "log10": "log10", "log": "ln"}[m.group(1)], m.group(2)
    return "other", name


_BASE = {"log2": 2.0, "ln": math.e, "log10": 10.0}
_BASE_TEXT = {"log2": "2", "ln": "e", "log10": "10"}


def _term_kind(term: str) -> tuple[str, str]:
    t = term.replace(" ", "")
    if t == "Intercept":
        return "intercept", ""
    if t == "processes":
        return "processes", ""
    if t == "size":
        return "size", ""
    if t in ("log2_size", "np.log2(size)", "log2(size)", "numpy.log2(size)"):
        return "log2_size", ""
    m = re.fullmatch(r"(?:C\()?(\w+)\)?(?:,[^\]]*)?\[T\.(.+)\]", t)
    if m:
        return "level", f"{m.group(1)} = {m.group(2)}"
    return "other", term


def explain(term: str, coef: float, response: str,
            pvalue: float | None = None) -> tuple[str, float | None]:
    """What a coefficient means, in words, and the multiplicative factor it stands for
    (log responses) or None."""
    rkind, _ = _response_kind(response)
    tkind, label = _term_kind(term)
    factor = None
    if rkind in _BASE:
        base, btxt = _BASE[rkind], _BASE_TEXT[rkind]
        try:
            factor = base ** coef
        except OverflowError:
            factor = math.inf
        fx = f"{btxt}^{coef:.4g} = ×{factor:.4g}"
        if tkind == "intercept":
            text = (f"baseline: the model's latency at processes = 0 and size = 1 B is "
                    f"{btxt}^{coef:.4g} = {factor:.4g} µs")
        elif tkind == "processes":
            pct = (factor - 1) * 100
            text = f"one more process multiplies latency by {fx} ({pct:+.2f}% per process)"
        elif tkind == "log2_size":
            if rkind == "log2":
                text = (f"doubling the size multiplies latency by {fx}: latency grows like "
                        f"size^{coef:.3g}")
            else:
                text = f"doubling the size multiplies latency by {fx}"
        elif tkind == "size":
            try:
                per_mib = base ** (coef * 2**20)
            except OverflowError:
                per_mib = math.inf
            text = (f"each extra byte multiplies latency by {fx} "
                    f"(×{per_mib:.4g} per MiB)")
        elif tkind == "level":
            text = f"{label} multiplies latency by {fx} against the baseline level"
        else:
            text = f"one unit more of {label} multiplies latency by {fx}"
    elif rkind == "linear":
        verb = "adds" if coef >= 0 else "removes"
        mag = abs(coef)
        if tkind == "intercept":
            text = f"fixed part: {coef:.4g} µs whatever the processes and size"
        elif tkind == "processes":
            text = f"each extra process {verb} {mag:.4g} µs"
        elif tkind == "size":
            bw = f"; effective bandwidth 1/β = {1 / coef:.4g} MB/s" if coef > 0 else ""
            text = (f"each extra byte {verb} {mag:.4g} µs ({mag * 1024:.4g} µs per KiB, "
                    f"{mag * 2**20:.4g} µs per MiB{bw})")
        elif tkind == "log2_size":
            text = f"doubling the size {verb} {mag:.4g} µs"
        elif tkind == "level":
            text = f"{label} {verb} {mag:.4g} µs against the baseline level"
        else:
            text = f"one unit more of {label} {verb} {mag:.4g} µs"
    else:
        text = f"one unit more of {term} changes {response} by {coef:.4g}"
    if pvalue is not None and not (pvalue < 0.05):
        text += " (not significant at the 5% level)"
    return text, factor


@dataclass
class Coef:
    term: str
    coef: float
    std_err: float
    t: float
    p: float
    ci_low: float
    ci_high: float
    meaning: str
    factor: float | None = None


@dataclass
class FitResult:
    formula: str
    response: str
    label: str
    n: int
    r2: float
    r2_adj: float
    r2_centered: float
    intercept: bool
    aic: float
    bic: float
    llf: float
    df_resid: float
    aic_latency_scale: float | None
    coefs: list[Coef]
    notes: list[str] = field(default_factory=list)
    group: dict = field(default_factory=dict)
    dropped: list[dict] = field(default_factory=list)  # terms left out: term, reason
    model: object = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("model", None)
        return _json_clean(d)

    def predict(self, frame: pd.DataFrame) -> numpy.ndarray:
        """The model's latency in µs (back-transformed for log responses)."""
        pred = numpy.asarray(self.model.predict(frame), dtype=float)
        rkind, _ = _response_kind(self.response)
        if rkind in _BASE:
            return _BASE[rkind] ** pred
        return pred


def _json_clean(obj):
    if isinstance(obj, dict):
        return {k: _json_clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_clean(v) for v in obj]
    if isinstance(obj, (numpy.floating, float)):
        v = float(obj)
        return v if math.isfinite(v) else None
    if isinstance(obj, numpy.integer):
        return int(obj)
    return obj


def resolve_formula(formula: str | None = None, model: str | None = None) -> tuple[str, str]:
    """(formula, label) for a user formula or a built-in model name."""
    if formula:
        if "~" not in formula:
            raise FitError(f"formula '{formula}' has no '~': write response ~ terms, e.g. "
                           "'latency ~ processes + size'")
        return formula, formula
    name = model or "seed-log"
    if name not in SEED_MODELS:
        raise FitError(f"unknown model '{name}'; built in: {', '.join(SEED_MODELS)}")
    f, desc = SEED_MODELS[name]
    return f, f"{name}: {desc}"


def fit_formula(frame: pd.DataFrame, formula: str, label: str | None = None) -> FitResult:
    """OLS of `formula` over a model frame (see `model_frame`)."""
    import statsmodels.formula.api as smf
    from patsy import PatsyError

    notes: list[str] = []
    data = frame
    logged = _logged_variables(formula)
    for var in sorted(logged):
        if var not in data.columns:
            continue
        bad = ~(pd.to_numeric(data[var], errors="coerce") > 0)
        if bad.any():
            what = "size 0" if var == "size" else f"{var} <= 0 or missing"
            notes.append(f"excluded {int(bad.sum())} row(s) with {what}: log of {var} "
                         "is undefined there")
            data = data[~bad]
    if "latency" in data.columns:
        missing = data["latency"].isna()
        if missing.any():
            notes.append(f"excluded {int(missing.sum())} row(s) without a latency value")
            data = data[~missing]
    if len(data) == 0:
        raise FitError("no measurements left to fit")
    formula, dropped = drop_constant_terms(data, formula)
    for d in dropped:
        notes.append(f"term '{d['term']}' dropped, not fitted: {d['reason']}")
    import warnings

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = smf.ols(formula, data=data, eval_env=formula_env()).fit()
    except (PatsyError, ValueError, KeyError, NameError, SyntaxError, TypeError) as exc:
        raise FitError(f"cannot fit '{formula}': {exc}") from exc
    n = int(res.nobs)
    k = len(res.params)
    if n <= k:
        raise FitError(f"'{formula}': {n} observation(s) for {k} coefficient(s): select more data")
    for w in caught:
        if "rank" in str(w.message).lower() or "singular" in str(w.message).lower():
            notes.append("the design is rank-deficient: the coefficients are not uniquely "
                         "determined (e.g. a single process count or size in the selection)")
            break
    response = res.model.endog_names
    intercept = bool(getattr(res.model, "k_constant", 0))
    y = numpy.asarray(res.model.endog, dtype=float)
    ssr = float(res.ssr)
    tss_c = float(((y - y.mean()) ** 2).sum())
    r2_centered = 1 - ssr / tss_c if tss_c > 0 else float("nan")
    if not intercept:
        notes.append("no intercept: R² and adjusted R² are uncentered (statsmodels' "
                     "convention; measured around 0, not around the mean) and look high; "
                     f"centered R² = {r2_centered:.4f}")
    rkind, rvar = _response_kind(response)
    aic_lat = None
    if rkind in _BASE:
        # the same likelihood on the latency scale (change of variables), so that the
        # AIC can be compared with a model of latency itself
        raw = _BASE[rkind] ** y
        aic_lat = float(res.aic + 2 * numpy.sum(numpy.log(raw * math.log(_BASE[rkind]))))
        notes.append(f"AIC of a {rkind} response is not comparable with a model of latency; "
                     f"on the latency scale it is {aic_lat:.1f}")
    ci = res.conf_int(0.05)
    coefs = []
    for term in res.params.index:
        c = float(res.params[term])
        p = float(res.pvalues[term])
        meaning, factor = explain(term, c, response, p)
        coefs.append(Coef(term, c, float(res.bse[term]), float(res.tvalues[term]), p,
                          float(ci.loc[term, 0]), float(ci.loc[term, 1]), meaning, factor))
    return FitResult(formula, response, label or formula, n, float(res.rsquared),
                     float(res.rsquared_adj), r2_centered, intercept, float(res.aic),
                     float(res.bic), float(res.llf), float(res.df_resid), aic_lat, coefs,
                     notes, {}, dropped, res)


def drop_constant_terms(data: pd.DataFrame, formula: str) -> tuple[str, list[dict]]:
    """The formula without the terms that do not vary in `data`, and what was dropped.

    A term whose design columns take one value only (a single process count, a single
    size) cannot be told apart from the intercept, or in a model without one it plays
    the intercept's part: its coefficient would be reported as an effect the data
    cannot show ("one more process multiplies latency by ×0.37" from one process
    count). Such terms are left out; the caller notes it."""
    import patsy
    from patsy import ModelDesc, PatsyError

    try:
        desc = ModelDesc.from_formula(formula)
        _, x = patsy.dmatrices(formula, data, eval_env=patsy.EvalEnvironment([formula_env()]),
                               return_type="dataframe", NA_action="drop")
    except (PatsyError, ValueError, KeyError, NameError, SyntaxError, TypeError) as exc:
        raise FitError(f"cannot fit '{formula}': {exc}") from exc
    if len(x) < 2:
        return formula, []
    dropped, keep = [], []
    for term, sl in x.design_info.term_slices.items():
        if not term.factors:  # the intercept
            keep.append(term)
            continue
        block = x.iloc[:, sl].to_numpy(dtype=float)
        if (numpy.ptp(block, axis=0) == 0).all():
            name = term.name()
            vals = sorted({float(v) for v in block[:, 0]}) if block.shape[1] else []
            shown = ", ".join(f"{v:g}" for v in vals[:3]) or "one level"
            dropped.append({"term": name, "reason": f"it takes one value ({shown}) in the "
                            "selected data, so its effect cannot be estimated"})
        else:
            keep.append(term)
    if not dropped:
        return formula, []
    if not any(t.factors for t in keep):
        raise FitError(f"'{formula}': no term varies in the selected data ("
                       + "; ".join(f"{d['term']}: {d['reason']}" for d in dropped)
                       + "): select data over more process counts or sizes")
    new = ModelDesc(desc.lhs_termlist, keep).describe()
    if not any(not t.factors for t in keep) and " 0 " not in f" {new} " and "- 1" not in new:
        new = new.replace("~ ", "~ 0 + ", 1)
    return new, dropped


def describe_selection(df: pd.DataFrame) -> dict:
    """What a selection holds: collectives, algorithms, mappings, np and size ranges."""
    def uniq(col):
        return sorted(map(str, df[col].dropna().unique())) if col in df.columns else []

    return {"rows": int(len(df)), "studies": uniq("study"), "collectives": uniq("collective"),
            "algorithms": uniq("algorithm"), "mappings": uniq("mapping"),
            "np": [int(df["np"].min()), int(df["np"].max())] if len(df) else [],
            "size": [int(df["size"].min()), int(df["size"].max())] if len(df) else []}


def fit_selection(df: pd.DataFrame, formulas: list[tuple[str, str]], by: list[str] | None = None,
                  stat: str = "median_us") -> list[FitResult]:
    """Every formula over the selection, or over each group of `by` columns."""
    df = df.reset_index(drop=True)
    frame = model_frame(df, stat)
    results = []
    if by:
        for col in by:
            if col not in df.columns:
                raise FitError(f"--by {col}: the measurements have no such column")
        for key, sub in df.groupby(by, dropna=False, sort=True):
            key = key if isinstance(key, tuple) else (key,)
            gkey = {c: _json_clean(v) for c, v in zip(by, key)}
            for f, label in formulas:
                try:
                    r = fit_formula(frame.loc[sub.index], f, label)
                except FitError as exc:
                    r = None
                    note = str(exc)
                if r is None:
                    r = _failed(f, label, note)
                r.group = gkey
                results.append(r)
    else:
        for f, label in formulas:
            results.append(fit_formula(frame, f, label))
    return results


def _failed(formula: str, label: str, why: str) -> FitResult:
    nan = float("nan")
    return FitResult(formula, "", label, 0, nan, nan, nan, False, nan, nan, nan, 0, None, [],
                     [f"not fitted: {why}"])


# ---------------------------------------------------------------------------- output

def _num(v: float, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    a = abs(v)
    if a != 0 and (a < 1e-3 or a >= 1e5):
        return f"{v:.{digits}e}"
    return f"{v:.{digits}f}"


def _pval(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def coef_table(r: FitResult, title: str | None = None):
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    t.add_column("")
    for col in ("coef", "std err", "t", "P>|t|", "[0.025", "0.975]"):
        t.add_column(col, justify="right")
    for c in r.coefs:
        t.add_row(c.term, _num(c.coef), _num(c.std_err), f"{c.t:.3f}", _pval(c.p),
                  _num(c.ci_low), _num(c.ci_high))
    return t


def print_result(console, r: FitResult) -> None:
    from rich.table import Table

    from rich.markup import escape

    group = ", ".join(f"{k} {v}" for k, v in r.group.items())
    head = (f"{group}: " if group else "") + f"OLS: {r.label}"
    # escaped: a group such as [algorithm=ring] would otherwise be read as rich markup
    console.print(f"[bold]{escape(head)}[/]", highlight=False)
    if not r.coefs:
        for note in r.notes:
            console.print(f"  {note}", highlight=False)
        return
    s = Table(show_header=False, box=None, pad_edge=False)
    s.add_column(style="dim")
    s.add_column()
    s.add_column(style="dim")
    s.add_column()
    r2name = "R²" if r.intercept else "R² (uncentered)"
    s.add_row("Dep. Variable", r.response, r2name, f"{r.r2:.4f}")
    s.add_row("Formula", r.formula, "Adj. " + r2name, f"{r.r2_adj:.4f}")
    s.add_row("No. Observations", str(r.n), "AIC", f"{r.aic:.1f}")
    s.add_row("Df Residuals", f"{r.df_resid:.0f}", "BIC", f"{r.bic:.1f}")
    if r.aic_latency_scale is not None:
        s.add_row("", "", "AIC (latency scale)", f"{r.aic_latency_scale:.1f}")
    console.print(s)
    console.print(coef_table(r))
    for c in r.coefs:
        console.print(f"  • {c.term}: {c.meaning}", highlight=False)
    for note in r.notes:
        console.print(f"  [dim]note: {note}[/]", highlight=False)
    console.print()


def fits_to_json(results: list[FitResult], selection: dict, stat: str) -> dict:
    return {"selection": selection, "statistic": stat,
            "models": [r.to_dict() for r in results]}


# ---------------------------------------------------------------------------- selection

def default_db() -> Path:
    """The results database the other commands use by default (db.py)."""
    return default_path()


def read_selection(db_path, study, coll, algo, mapping, nps, sizes,
                   include_simulated: bool = False, only_simulated: bool = False,
                   allow_empty: bool = False) -> pd.DataFrame:
    """Measurements of a database selection, as the commands' options give it
    (results.reader.read_selection, the one reader), ready for the models."""
    try:
        df = reader.read_selection(db_path, study, collective=coll, algorithm=algo,
                                   mapping=mapping, nps=nps, sizes=sizes,
                                   include_simulated=include_simulated,
                                   only_simulated=only_simulated, allow_empty=allow_empty)
    except DBError as exc:
        raise FitError(str(exc)) from None
    return normalise(df)
