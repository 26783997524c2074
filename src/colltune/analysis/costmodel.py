"""Cost models: Hockney α, β, γ (and what LogGP allows) fitted on this machine, and
every algorithm's latency predicted from its registry cost formula: `colltune model`.

- α (s) and β (s/byte): a weighted least-squares line through ping-pong one-way
  times, t(m) = α + β·m (`fit_hockney`). Weights 1/t² make the fit minimise the
  relative error, so that the small messages fix α and the large ones β.
- γ (s/byte): the time of one local reduction (`MPI_Reduce_local`) per byte. It is
  fitted on the times of colltune-gamma on one process (`gamma_from_timer`; the
  program is native/tools/gamma.c, launched by drivers/gamma.py), or, without a
  build, estimated from the database (`gamma_from_measurements`): at p = 2 a binomial
  Reduce and a binomial Bcast exchange the same single message, so
  T_reduce − T_bcast = n·γ.
- LogGP: the ping-pong gives L + 2·o (= α) and G (= β) only. L and o separately need
  an overhead benchmark, g a message-rate benchmark; neither is run, so they are
  reported as not measured.

The formulas are the registry's strings (`colltune algorithms --json`, one source of
truth, see docs/cost-model.md). `evaluate` interprets them through Python's `ast`
with only + - * / **, numbers, the variables a b g p n s k (and q m al bl of the
hierarchical algorithms' two levels) and the functions ceil, floor, log2, min, max: nothing else is accepted, nothing is `eval`ed.

Nothing here launches a program: measurements made now (ping-pong, the local-reduction
timer) come in through the callables `resolve_params` is given (drivers/p2p.py,
drivers/gamma.py); the tables are printed by output/model_tables.py.
"""

from __future__ import annotations

import ast
import json
import math
import operator
import os
import re
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from colltune.results import reader
from colltune.base.collectives import per_process
from colltune.base.errors import ColltuneError
from colltune.base.specs import parse_params
from colltune.analysis.fit import _json_clean
from colltune.analysis import segsize as segsize_rule
from colltune.base.lazy import LazyModule
from colltune.base.units import fmt_size
from colltune.base.units import parse_size
from colltune.analysis.evidence import oversubscribed as over

# a b g p n s k, and for the hierarchical algorithms (two levels): q processes per node,
# m nodes, al and bl the alpha and beta inside a node (a and b: between nodes)
VARIABLES = frozenset(["a", "b", "g", "p", "n", "s", "k", "q", "m", "al", "bl"])
ELEM_SIZE = {"char": 1, "byte": 1, "int": 4, "float": 4, "double": 8}
# relative tolerance of ceil/floor: ratios such as log2(243)/log2(3) come out a hair
# above the integer in floating point (docs/cost-model.md, pitfalls)
_ROUND_TOL = 1e-12
MAX_FORMULA_CHARS = 2000
numpy = LazyModule("numpy")
pd = LazyModule("pandas")


class FormulaError(ValueError):
    """A cost formula is not in the allowed language or cannot be evaluated."""


class CostModelError(ColltuneError, RuntimeError):
    """Not enough data or no way to measure a parameter; the message says which."""


# ---------------------------------------------------------------------------- formulas

def _ceil(x: float) -> float:
    return float(math.ceil(x - _ROUND_TOL * max(1.0, abs(x))))


def _floor(x: float) -> float:
    return float(math.floor(x + _ROUND_TOL * max(1.0, abs(x))))


def _log2(x: float) -> float:
    if x <= 0:
        raise FormulaError(f"log2 of {x:g}")
    return math.log2(x)


FUNCTIONS = {"ceil": (_ceil, 1, 1), "floor": (_floor, 1, 1), "log2": (_log2, 1, 1),
             "min": (min, 2, 16), "max": (max, 2, 16)}
_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.Pow: operator.pow}
_UNOPS = {ast.USub: operator.neg, ast.UAdd: operator.pos}


def _check(node: ast.AST, text: str) -> None:
    """Raise FormulaError unless every node is in the formula language."""
    if isinstance(node, ast.Expression):
        _check(node.body, text)
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _BINOPS:
            raise FormulaError(f"operator {type(node.op).__name__} is not allowed in '{text}'")
        _check(node.left, text)
        _check(node.right, text)
    elif isinstance(node, ast.UnaryOp):
        if type(node.op) not in _UNOPS:
            raise FormulaError(f"operator {type(node.op).__name__} is not allowed in '{text}'")
        _check(node.operand, text)
    elif isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise FormulaError(f"constant {node.value!r} is not a number in '{text}'")
    elif isinstance(node, ast.Name):
        if node.id not in VARIABLES:
            raise FormulaError(f"unknown name '{node.id}' in '{text}'; variables: "
                               f"{', '.join(sorted(VARIABLES))}")
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            raise FormulaError(f"only {', '.join(FUNCTIONS)} may be called in '{text}'")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise FormulaError(f"{node.func.id}() takes plain arguments in '{text}'")
        _, lo, hi = FUNCTIONS[node.func.id]
        if not lo <= len(node.args) <= hi:
            raise FormulaError(f"{node.func.id}() takes {lo}{'' if lo == hi else f'..{hi}'} "
                               f"argument(s) in '{text}'")
        for a in node.args:
            _check(a, text)
    else:
        raise FormulaError(f"{type(node).__name__} is not allowed in cost formulas: '{text}'")


@lru_cache(maxsize=512)
def compile_formula(text: str) -> ast.Expression:
    """Parse and check a cost formula; FormulaError if it leaves the formula language."""
    if not isinstance(text, str) or not text.strip():
        raise FormulaError("empty cost formula")
    if len(text) > MAX_FORMULA_CHARS:
        raise FormulaError(f"cost formula longer than {MAX_FORMULA_CHARS} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, RecursionError, ValueError) as exc:
        raise FormulaError(f"cannot parse '{text}': {exc}") from exc
    _check(tree, text)
    return tree


def _eval(node: ast.AST, env: dict[str, float]) -> float:
    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.Constant):
        return float(node.value)
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise FormulaError(f"variable '{node.id}' has no value")
        return float(env[node.id])
    if isinstance(node, ast.UnaryOp):
        return _UNOPS[type(node.op)](_eval(node.operand, env))
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, env), _eval(node.right, env)
        if isinstance(node.op, ast.Pow) and abs(right) > 1024:
            raise FormulaError(f"exponent {right:g} is out of range")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.Call):
        fn = FUNCTIONS[node.func.id][0]
        return float(fn(*(_eval(a, env) for a in node.args)))
    raise FormulaError(f"{type(node).__name__} is not allowed")  # unreachable after _check


def evaluate(text: str, **values: float) -> float:
    """The value of a cost formula for the given variables (a b g p n s k)."""
    unknown = set(values) - VARIABLES
    if unknown:
        raise FormulaError(f"unknown variable(s) {', '.join(sorted(unknown))}")
    tree = compile_formula(text)
    try:
        v = _eval(tree, values)
    except ZeroDivisionError as exc:
        raise FormulaError(f"division by zero in '{text}' at {values}") from exc
    except (OverflowError, RecursionError) as exc:
        raise FormulaError(f"'{text}' overflows at {values}") from exc
    except (TypeError, ValueError) as exc:
        if isinstance(exc, FormulaError):
            raise
        raise FormulaError(f"cannot evaluate '{text}' at {values}: {exc}") from exc
    if not math.isfinite(v):
        raise FormulaError(f"'{text}' is not finite at {values}")
    return v


# ---------------------------------------------------------------------------- algorithms

def algorithm_dicts(algos) -> dict[tuple[str, str], dict]:
    """{(collective, name): {name, collective, params, cost, fallback, ...}} from the
    registry's Algorithm objects, `colltune algorithms --json` dicts, or a JSON file."""
    if isinstance(algos, (str, Path)):
        algos = json.loads(Path(algos).read_text())
    out = {}
    for a in algos:
        d = dict(a) if isinstance(a, dict) else dict(a.__dict__)
        d["params"] = [dict(p) for p in d.get("params") or ()]
        out[(d["collective"], d["name"])] = d
    return out




def _int_param(text: str | None, default):
    if text is None:
        return default
    try:

        return parse_size(str(text))
    except ValueError:
        return default


def formula_variables(algo: dict, p: int, size: int, elem: int = 1,
                      params: dict[str, str] | None = None,
                      ppn: int | None = None) -> dict[str, float]:
    """p, n, s, k for one point, as docs/cost-model.md defines them; for a hierarchical
    algorithm (a vppn parameter) q (processes per node: vppn when set, else `ppn`, else
    p: one node) and m (nodes)."""
    params = params or {}
    defaults = {q["name"]: q.get("default") for q in algo.get("params", [])}
    n = size * p if per_process(algo["collective"]) else size  # size is per process
    env: dict[str, float] = {"p": float(p), "n": float(n)}
    if "vppn" in defaults:  # hierarchical: the two levels
        vppn = _int_param(params.get("vppn"), defaults.get("vppn") or 0) or 0
        env["q"] = float(max(1, min(p, vppn or ppn or p)))
        env["m"] = float(math.ceil(p / env["q"]))
    if "segsize" in defaults:
        raw = params.get("segsize", defaults["segsize"])
        if segsize_rule.is_auto(raw):  # the dispatcher's rule for this call (analysis/segsize)
            q = segsize_rule.segsize_param(algo) or {}
            fan = _int_param(params.get("fanout"), defaults.get("fanout") or 1)
            seg = segsize_rule.resolve(q.get("auto_rule"), algo["collective"], int(n), p,
                                       int(fan))
        else:
            seg = _int_param(raw, 0) or 0
        if algo["collective"] == "bcast":  # bytes of the type signature, cut on
            unit = 1                          # the largest power of two <= 8 dividing n
            while unit < 8 and n % (2 * unit) == 0:
                unit *= 2
            env["s"] = float(n if seg == 0 else min(n, max(unit, seg - seg % unit)))
        else:  # whole elements (Reduce, Allreduce: one datatype on every rank)
            env["s"] = float(n if seg == 0 else min(n, max(1, seg // elem) * elem))
    else:
        env["s"] = float(n)
    if "leaders" in defaults:  # multi-leader hierarchical: slices per node, at most q
        lead = _int_param(params.get("leaders"), defaults["leaders"] or 0) or 0
        env["k"] = float(min(lead, env["q"]) if lead > 0 else env["q"])
    elif "radix" in defaults:
        env["k"] = float(_int_param(params.get("radix"), defaults["radix"]))
    elif "fanout" in defaults:
        env["k"] = float(min(_int_param(params.get("fanout"), defaults["fanout"]), max(1, p - 1)))
    else:
        env["k"] = 0.0
    return env


def predict_seconds(algo: dict, p: int, size: int, alpha: float, beta: float, gamma: float,
                    elem: int = 1, params: dict[str, str] | None = None,
                    ppn: int | None = None, alpha_local: float | None = None,
                    beta_local: float | None = None) -> float:
    """Seconds predicted by the algorithm's registry cost formula; FormulaError when the
    algorithm has none or the point is outside the model (p < 2, size 0). alpha and beta
    are between nodes; alpha_local, beta_local inside a node (default: the same)."""
    if not algo.get("cost"):
        raise FormulaError(f"{algo['collective']}/{algo['name']} has no cost formula")
    if p < 2:
        raise FormulaError("the formulas hold for p >= 2")
    if size <= 0:
        raise FormulaError("size 0: nothing is sent")
    env = formula_variables(algo, p, size, elem, params, ppn)
    return evaluate(algo["cost"], a=alpha, b=beta, g=gamma,
                    al=alpha if alpha_local is None else alpha_local,
                    bl=beta if beta_local is None else beta_local, **env)


# ---------------------------------------------------------------------------- parameters

@dataclass
class Hockney:
    alpha: float            # s
    beta: float             # s/byte
    alpha_se: float
    beta_se: float
    r2: float
    n: int
    sizes: list[int]
    method: str
    source: str
    max_rel_error: float
    notes: list[str] = field(default_factory=list)

    @property
    def bandwidth_MBps(self) -> float:
        return 1e-6 / self.beta if self.beta > 0 else math.inf


def pingpong_frame(records) -> pd.DataFrame:
    """Ping-pong records (list of dicts, a DataFrame or a JSON file) as a DataFrame."""
    if isinstance(records, (str, Path)):
        text = Path(records).read_text()
        try:
            records = json.loads(text)
        except json.JSONDecodeError:
            records = [json.loads(l) for l in text.splitlines() if l.strip().startswith("{")]
        if isinstance(records, dict):
            records = records.get("records") or records.get("pingpong") or [records]
    df = records.copy() if isinstance(records, pd.DataFrame) else pd.DataFrame(list(records))
    if df.empty or "size" not in df.columns:
        raise CostModelError("the ping-pong data have no records with a 'size'")
    if "kind" in df.columns and (df["kind"] == "pingpong").any():
        df = df[df["kind"] == "pingpong"]
    return df


def fit_hockney(records, stat: str = "median_us", weighting: str = "relative",
                min_size: int | None = None, max_size: int | None = None,
                source: str = "ping-pong") -> Hockney:
    """α, β from one-way ping-pong times: t = α + β·size (seconds, bytes)."""
    import statsmodels.api as sm

    df = pingpong_frame(records)
    if stat not in df.columns:
        raise CostModelError(f"the ping-pong records have no '{stat}'")
    df = df[pd.to_numeric(df[stat], errors="coerce") > 0]
    if min_size is not None:
        df = df[df["size"] >= min_size]
    if max_size is not None:
        df = df[df["size"] <= max_size]
    sizes = sorted({int(s) for s in df["size"]})
    if len(sizes) < 2:
        raise CostModelError("α and β need ping-pong times at two sizes or more")
    t = pd.to_numeric(df[stat]).to_numpy(float) * 1e-6
    m = df["size"].to_numpy(float)
    X = numpy.column_stack([numpy.ones_like(m), m])
    if weighting == "relative":
        res = sm.WLS(t, X, weights=1.0 / t**2).fit()
        method = "weighted least squares, weights 1/t² (relative error)"
    elif weighting == "absolute":
        res = sm.OLS(t, X).fit()
        method = "ordinary least squares (absolute error)"
    else:
        raise ValueError(f"weighting '{weighting}': relative or absolute")
    alpha, beta = (float(v) for v in res.params)
    pred = alpha + beta * m
    notes = []
    if alpha <= 0:
        notes.append("the fitted α is not positive: the line does not describe small messages")
    if beta <= 0:
        notes.append("the fitted β is not positive: give sizes large enough to see bandwidth")
    return Hockney(alpha, beta, float(res.bse[0]), float(res.bse[1]), float(res.rsquared),
                   len(t), sizes, method, source, float(numpy.max(numpy.abs(pred - t) / t)),
                   notes)


def loggp_from_hockney(h: Hockney) -> dict:
    """The LogGP quantities one ping-pong can give, and those it cannot."""
    return {
        "L_plus_2o_s": h.alpha,
        "G_s_per_byte": h.beta,
        "L_s": None, "o_s": None, "g_s": None,
        "notes": [
            "one-way time of m bytes in LogGP is L + 2o + (m−1)·G: the ping-pong line gives "
            "L + 2o = α and G = β",
            "L and o are not separable without an overhead benchmark (time of a send call "
            "alone, or a ping-pong with injected computation); not measured",
            "g (gap between consecutive small messages) needs a message-rate benchmark; "
            "not measured",
        ],
    }


@dataclass
class Gamma:
    gamma: float | None     # s/byte
    source: str
    dtype: str | None = None
    op: str | None = None
    points: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    command: str | None = None


def fit_gamma_points(points: list[dict], source: str, dtype: str, op: str) -> Gamma:
    """γ = slope of reduce-local time against bytes (least squares)."""
    df = pd.DataFrame(points)
    if len(df) < 2:
        raise CostModelError("γ needs reduce-local times at two sizes or more")
    t = df["median_us"].to_numpy(float) * 1e-6
    m = df["size"].to_numpy(float)
    slope, _ = numpy.polyfit(m, t, 1)
    notes = []
    if slope <= 0:
        notes.append("the reduce-local times do not grow with the size: γ set from the "
                     "largest size alone")
        slope = float(t[numpy.argmax(m)] / m.max())
    return Gamma(float(slope), source, dtype, op, df.to_dict("records"), notes)


def gamma_from_timer(run) -> Gamma:
    """γ from a run of the local-reduction timer (drivers.gamma.GammaRun: its points,
    sizes, dtype, op and command)."""
    g = fit_gamma_points(run.points, "MPI_Reduce_local timed on 1 process, slope over "
                                     f"{fmt_size(min(run.sizes))}..{fmt_size(max(run.sizes))}",
                         run.dtype, run.op)
    g.command = run.command
    return g


def gamma_from_measurements(df: pd.DataFrame, min_size: int = 65536) -> Gamma:
    """γ ≈ (T_reduce − T_bcast)/n at p = 2 for large n: both binomial (else linear)
    algorithms send one message of n bytes there; the Reduce also reduces n bytes."""
    d = df[(df["np"] == 2) & (df["size"] >= min_size)]
    for algo in ("binomial", "linear"):
        r = d[(d["collective"] == "reduce") & (d["algorithm"] == algo)]
        b = d[(d["collective"] == "bcast") & (d["algorithm"] == algo)]
        if r.empty or b.empty:
            continue
        rm = r.groupby("size")["median_us"].median()
        bm = b.groupby("size")["median_us"].median()
        common = rm.index.intersection(bm.index)
        if len(common) == 0:
            continue
        per_byte = ((rm[common] - bm[common]) * 1e-6 / common.to_numpy(float))
        pts = [{"size": int(s), "reduce_us": float(rm[s]), "bcast_us": float(bm[s]),
                "gamma": float(per_byte[s])} for s in common]
        g = float(per_byte.median())
        notes = [f"γ = median over sizes ≥ {fmt_size(min_size)} of (T_reduce − T_bcast)/n, "
                 f"{algo} algorithms, 2 processes"]
        if g <= 0:
            notes.append("the Reduce was not slower than the Bcast: γ is not measurable "
                         "from these data, set to 0")
            g = 0.0
        dt = None
        if "dtype" in r.columns and r["dtype"].nunique() == 1:
            dt = str(r["dtype"].iloc[0])
        return Gamma(g, f"database: {algo} Reduce − Bcast at np 2", dt,
                     str(r["op"].iloc[0]) if "op" in r.columns else None, pts, notes)
    raise CostModelError("γ from the database needs Reduce and Bcast (binomial or linear) "
                         f"at np 2 and sizes ≥ {fmt_size(min_size)}")


# ---------------------------------------------------------------------------- predictions

@dataclass
class CostParams:
    alpha: float
    beta: float
    gamma: float
    hockney: Hockney | None = None
    gamma_info: Gamma | None = None

    def to_dict(self) -> dict:
        d = {"alpha_s": self.alpha, "beta_s_per_byte": self.beta, "gamma_s_per_byte": self.gamma,
             "alpha_us": self.alpha * 1e6, "beta_ns_per_byte": self.beta * 1e9,
             "gamma_ns_per_byte": self.gamma * 1e9,
             "bandwidth_MBps": (1e-6 / self.beta) if self.beta > 0 else None}
        if self.hockney:
            d["hockney"] = asdict(self.hockney)
            d["loggp"] = loggp_from_hockney(self.hockney)
        if self.gamma_info:
            d["gamma"] = asdict(self.gamma_info)
        return _json_clean(d)


def _fallback_target(text) -> str | None:
    if not isinstance(text, str) or "->" not in text:
        return None
    names = re.findall(r"->\s*([A-Za-z0-9_]+)", text)
    return names[-1] if names else None


def point_keys(df: pd.DataFrame) -> list[str]:
    keys = ["collective", "algorithm", "params", "np", "size"]
    for c in ("mapping", "dtype", "nodes", "ppn"):
        if c in df.columns and df[c].nunique(dropna=False) > 1:
            keys.append(c)
    return [k for k in keys if k in df.columns]


def aggregate_points(df: pd.DataFrame) -> pd.DataFrame:
    """One row per measured point: median over repetitions of median_us."""
    df = df.copy()
    if "params" not in df.columns:
        df["params"] = ""
    df["params"] = df["params"].fillna("").astype(str)
    keys = point_keys(df)
    agg = {"median_us": "median"}
    for c, f in (("dtype", "first"), ("fallback", "first"), ("rep_min_us", "min"),
                 ("rep_max_us", "max")):
        if c in df.columns and c not in keys:
            agg[c] = f
    out = df.groupby(keys, dropna=False, sort=True).agg(agg).reset_index()
    out = out.rename(columns={"median_us": "measured_us"})
    n = df.groupby(keys, dropna=False, sort=True).size().reset_index(name="repetitions")
    out = out.merge(n, on=keys)
    # a label that tells apart several parameter settings of one algorithm
    multi = out.groupby(["collective", "algorithm"])["params"].transform("nunique") > 1
    out["label"] = numpy.where(multi & (out["params"] != ""),
                               out["algorithm"] + ":" + out["params"], out["algorithm"])
    return out


def predict_points(df: pd.DataFrame, algos: dict[tuple[str, str], dict],
                   params: CostParams) -> pd.DataFrame:
    """Measured points with the model's prediction and the relative error."""
    pts = aggregate_points(df)
    pred, used, why = [], [], []
    for r in pts.itertuples(index=False):
        name = r.algorithm
        fb = _fallback_target(getattr(r, "fallback", None))
        if fb:
            name = fb
        algo = algos.get((r.collective, name))
        dt = getattr(r, "dtype", None)
        elem = ELEM_SIZE.get(str(dt), 1) if dt is not None else 1
        if algo is None:
            pred.append(numpy.nan)
            used.append(None)
            why.append("not in the registry (library algorithm)")
            continue
        try:
            ppn = getattr(r, "ppn", None)  # processes per node of the point, when known
            ppn = int(ppn) if isinstance(ppn, (int, float)) and ppn == ppn and ppn > 0 else None
            v = predict_seconds(algo, int(r.np), int(r.size), params.alpha, params.beta,
                                params.gamma, elem, parse_params(r.params) if not fb else None,
                                ppn=ppn)
            pred.append(v * 1e6)
            used.append(name)
            why.append(f"fallback {fb}" if fb else "")
        except FormulaError as exc:
            pred.append(numpy.nan)
            used.append(None)
            why.append(str(exc).split(":")[0] if algo.get("cost") else "no cost formula")
    pts["predicted_us"] = pred
    pts["formula_of"] = used
    pts["note"] = why
    pts["rel_error"] = (pts["predicted_us"] - pts["measured_us"]) / pts["measured_us"]
    return pts


def error_summary(pts: pd.DataFrame, by: str | list[str] = "collective") -> pd.DataFrame:
    """Median |relative error|, median signed error and the number of points per group."""
    d = pts.dropna(subset=["rel_error"])
    if d.empty:
        return pd.DataFrame(columns=([by] if isinstance(by, str) else by)
                            + ["points", "median_abs_rel_error", "median_rel_error",
                               "within_2x"])
    g = d.groupby(by, sort=True)
    out = pd.DataFrame({
        "points": g.size(),
        "median_abs_rel_error": g["rel_error"].apply(lambda s: float(s.abs().median())),
        "median_rel_error": g["rel_error"].median(),
        "within_2x": g.apply(lambda x: float(((x["predicted_us"] / x["measured_us"]).between(
            0.5, 2.0)).mean()), include_groups=False),
    }).reset_index()
    return out


def selection_table(pts: pd.DataFrame, order: list[str] | None = None) -> pd.DataFrame:
    """Per (collective, np, size[, mapping]): the measured best, the fastest of the
    measured algorithms the model can predict, and the model's pick among those.

    Algorithms with the same prediction (linear and linear_nb share a formula; at
    p = 2 many formulas coincide) tie: the pick is then the first of them in registry
    order (`order`), as a selector built on the model would choose, and `ties` names
    the others. `agree`: the pick measured as fast as the fastest modelled one;
    `slowdown`: the pick's measured time over the fastest modelled one's."""
    rank = {n: i for i, n in enumerate(order or [])}
    keys = [k for k in ("collective", "mapping", "dtype", "np", "size") if k in pts.columns
            and (k in ("collective", "np", "size") or pts[k].nunique(dropna=False) > 1)]
    rows = []
    for key, g in pts.groupby(keys, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        g = g.dropna(subset=["measured_us"])
        if g.empty:
            continue
        best = g.loc[g["measured_us"].idxmin()]
        modelled = g.dropna(subset=["predicted_us"])
        row = dict(zip(keys, key))
        row.update(measured_best=best["label"], measured_best_us=float(best["measured_us"]),
                   candidates=int(len(g)), modelled=int(len(modelled)))
        if modelled.empty:
            row.update(model_pick=None, ties=None, model_pick_predicted_us=None,
                       model_pick_measured_us=None, best_modelled=None,
                       best_modelled_us=None, agree=None, slowdown=None)
        else:
            low = modelled["predicted_us"].min()
            tied = modelled[modelled["predicted_us"] <= low * (1 + 1e-9)]
            tied = tied.assign(_r=tied["algorithm"].map(lambda a: rank.get(a, len(rank))))
            tied = tied.sort_values(["_r", "label"])
            pick = tied.iloc[0]
            bm = modelled.loc[modelled["measured_us"].idxmin()]
            row.update(model_pick=pick["label"],
                       ties=", ".join(tied["label"].iloc[1:]) or None,
                       model_pick_predicted_us=float(pick["predicted_us"]),
                       model_pick_measured_us=float(pick["measured_us"]),
                       best_modelled=bm["label"], best_modelled_us=float(bm["measured_us"]),
                       agree=bool(pick["measured_us"] <= bm["measured_us"]),
                       slowdown=float(pick["measured_us"] / bm["measured_us"]))
        rows.append(row)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------- assembling

def dominant(df: pd.DataFrame, col: str, default: str) -> str:
    if col in df.columns and df[col].notna().any():
        return str(df[col].mode().iloc[0])
    return default


def resolve_params(df: pd.DataFrame, *, pingpong=None, alpha=None, beta=None, gamma=None,
                   gamma_mode: str = "auto",
                   measure_pingpong: Callable[[int], list[dict]] | None = None,
                   measure_gamma: Callable[[str, str], Any] | None = None, db_path=None,
                   measure_np: int = 2, notes: list[str] | None = None) -> CostParams:
    """α, β, γ from what is given, in this order: explicit values; ping-pong records
    (a file, records or a DataFrame); the database's ping-pong table; a measurement now
    (`measure_pingpong(np)`: ping-pong records, drivers.p2p.measure_pingpong of a
    build). γ: explicit; `measure` (`measure_gamma(dtype, op)`: a run of the
    local-reduction timer, drivers.gamma.measure_gamma of a build); `db` (Reduce −
    Bcast); `auto` = measure if it can, else db, else 0."""
    notes = notes if notes is not None else []
    h = None
    if alpha is None or beta is None:
        src = "ping-pong file"
        if pingpong is None and db_path is not None:
            pingpong = reader.pingpong_points(db_path)
            src = "ping-pong records in the database"
        if pingpong is None and measure_pingpong is not None:
            pingpong = measure_pingpong(measure_np)
            src = f"ping-pong measured now on this machine (np {measure_np})"
            hosts = sorted({str(h) for h in df.get("host", pd.Series(dtype=str)).dropna()})
            if hosts and os.uname().nodename not in hosts:
                notes.append(f"α, β were measured on {os.uname().nodename}, the "
                             f"measurements come from {', '.join(hosts)}")
        if pingpong is None:
            raise CostModelError("no ping-pong data for α and β: give --pingpong-json FILE "
                                 "(from `colltune pingpong --format json`), --alpha-us/--beta-ns, "
                                 "or let colltune measure (needs MPI)")
        h = fit_hockney(pingpong, source=src)
        alpha = h.alpha if alpha is None else alpha
        beta = h.beta if beta is None else beta
    ginfo = None
    if gamma is None:
        dtype = dominant(df[df["collective"].isin(["reduce", "allreduce"])], "dtype", "char")
        op = dominant(df[df["collective"].isin(["reduce", "allreduce"])], "op", "sum")
        modes = {"auto": ["measure", "db"], "measure": ["measure"], "db": ["db"]}[gamma_mode]
        errors = []
        for m in modes:
            try:
                if m == "measure":
                    if measure_gamma is None:
                        raise CostModelError("measuring γ needs an MPI build")
                    ginfo = gamma_from_timer(measure_gamma(dtype, op))
                else:
                    ginfo = gamma_from_measurements(df)
                break
            except ColltuneError as exc:  # CostModelError, the timer's GammaError, ...
                errors.append(str(exc))
        if ginfo is None:
            if gamma_mode != "auto":
                raise CostModelError("; ".join(errors))
            ginfo = Gamma(0.0, "none", notes=["γ could not be determined (" + "; ".join(errors)
                                              + "): reductions are modelled as free"])
        gamma = ginfo.gamma
    return CostParams(float(alpha), float(beta), float(gamma), h, ginfo)


def oversubscribed(df: pd.DataFrame) -> pd.Series:
    """Rows measured with more processes on a node than cores (evidence.oversubscribed)."""

    return over(df)


def run_model(df: pd.DataFrame, algos, params: CostParams,
              include_oversubscribed: bool = False) -> dict:
    """Everything `colltune model` reports, as DataFrames and dicts.

    Points measured oversubscribed (processes sharing cores, time-sliced by the OS)
    are left out unless asked for: a cost model of processes that each own a core
    does not describe them. When every point is oversubscribed they are kept, and
    the notes say so."""
    notes: list[str] = []
    over = oversubscribed(df)
    if over.any() and not include_oversubscribed:
        if over.all():
            notes.append(f"every point ({int(over.sum())}) was measured with more processes "
                         "than cores: the model is compared with them anyway, read it with care")
        else:
            nps = sorted(int(v) for v in pd.to_numeric(df.loc[over, "np"]).unique())
            notes.append(f"{int(over.sum())} measurements with more processes than cores "
                         f"(np {', '.join(map(str, nps))}) left out: a cost model of processes "
                         "that own a core does not describe time-sliced ones "
                         "(--include-oversubscribed keeps them)")
            df = df[~over]
    pts = predict_points(df, algos, params)
    return {"params": params, "points": pts, "by_collective": error_summary(pts, "collective"),
            "by_algorithm": error_summary(pts, ["collective", "algorithm"]),
            "selection": selection_table(pts, list(dict.fromkeys(n for _, n in algos))),
            "model_notes": notes}


def _frame_json(df: pd.DataFrame) -> list[dict]:
    return _json_clean(df.astype(object).where(df.notna(), None).to_dict("records"))


def model_json(result: dict) -> dict:
    return {"params": result["params"].to_dict(),
            "by_collective": _frame_json(result["by_collective"]),
            "by_algorithm": _frame_json(result["by_algorithm"]),
            "selection": _frame_json(result["selection"]),
            "points": _frame_json(result["points"])}
