"""Adaptive tuning where one measurement is exact (a deterministic simulation), over
many process counts and layouts at once.

Under SimGrid SMPI (docs/simulation.md) a point's simulated time is the same in every
launch to within 0.05 %: one measurement of a cell settles it, and the evidence test
compares exactly (evidence.EXACT_TOL). What costs is the number of cells simulated, so
the question is *which* cells to simulate: across every process count and layout of a
collective, not one grid at a time (adaptive.py's loop works per process count and
needs repetitions; here the points of all of them share one model).

The grid
    Points (process count, processes per node, size) and candidates (colltune's
    algorithm specs with their parameter settings, and `native`, which must be one).
    The exhaustive design simulates every candidate at every point once:
    points x candidates cells. A budget of N % allows floor(N/100 x that) cells.

The loop (`run`)
    1. Initial design: every candidate at the sizes `spread` over the grid (the
       smallest, the largest, evenly between) of the corner layouts: the smallest
       and the largest process count, each with its fewest and its most processes
       per node. At most `initial_share` of the budget and, with a prior, no more
       than leaves the loop `reserve` (RESERVE, 2) cells for every point of the grid
       (enough to settle each with native and one guess): fewer sizes when it would
       be more, down to two; then the two extreme layouts at their smallest and
       largest size, at their middle size, the largest layout's middle size alone
       (whatever it leaves). The cost formulas give a prior candidates' shapes, so
       the cells go to settling points; without one the model learns the shapes from
       the initial design, and a larger one pays (docs/tuning.md, "The initial
       design's size").
    2. Model (`fit`): Gaussian processes over log2(size), log2(processes) and
       log2(processes per node), noise-free but for a jitter (EXACT_ALPHA), their
       hyperparameters searched every REFIT rounds and kept fixed between: one of
       native's log time; per other candidate, with a `prior` (cost_prior: the
       registry's cost formula with Hockney α, β, γ), the formula's log time plus a
       process of the residual at the points it was simulated (zero mean: unknown =
       as the formula); without one, its log time relative to native where both were
       simulated (zero mean: unknown = as native). A simulated cell is known exactly.
    3. Where the rules made so far lose most: at every point, the expected loss
       (Monte Carlo over the model's draws, adaptive.Prediction) of the candidate the
       rules built from the points settled so far choose there, against the best;
       the `batch` points with the largest that still have a plausible candidate
       unsimulated are simulated next, each with native and its `most` most probable
       best (probability >= 10 %, at least the two best predicted, `most` of them),
       in one launch per layout and candidate set.
    4. Repeat until the budget is spent or no point has a plausible candidate left.

The final choice (`choices`): conclusions from simulations only
    At every point where native and at least one other candidate were simulated: the
    fastest simulated there unless native is within EXACT_TOL (tune.choices with exact
    comparisons). Points with fewer cells make no choice: the rules
    (tune.build_rules) cover them by the interpolation every study's rules use
    (geometric midpoints between sizes; between two process counts, or two layouts,
    where the two choices' simulated times cross, the lower one's choice up to the
    next where a time was not simulated). The model only picks what to simulate.

`run` launches nothing itself: it gets a `measure` callback (one launch: a layout,
candidates and sizes -> its records); `sim_measure` makes the one that simulates
(colltune-bench under SMPI, np/ppn nodes of the platform, mapping `node`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

from colltune.analysis import costmodel
from colltune.base.lazy import LazyModule
from colltune.drivers import bench as bench_mod
from colltune.drivers import registry
from colltune.mpi import launch as launch_mod
from colltune.mpi.backend import backend_for
from colltune.mpi.placement import Placement
from colltune.base.specs import parse_params
from colltune.rules.ruleset import make_params
from colltune.tuning import adaptive, tune
from colltune.tuning.adaptive import BASELINE, P_PLAUSIBLE, AdaptiveError, Prediction

np = LazyModule("numpy")
pd = LazyModule("pandas")

INITIAL_SHARE = 0.6   # of the budget, at most, for the initial design
RESERVE = 2.0         # with a prior: cells a point the initial design leaves to the loop
EXACT_ALPHA = 1e-6    # the model's noise variance on log time: exact, plus jitter
REFIT = 4             # rounds between two searches of the model's hyperparameters


@dataclass(frozen=True)
class Point:
    np: int
    ppn: int
    size: int


@dataclass(frozen=True)
class Grid:
    collective: str
    candidates: tuple[str, ...]
    points: tuple[Point, ...]

    def __post_init__(self):
        if BASELINE not in self.candidates:
            raise AdaptiveError(f"the candidates must include {BASELINE} (the default the "
                                "rules fall back on)")
        if len(self.candidates) < 2:
            raise AdaptiveError("at least two candidates")
        if len(set(self.candidates)) != len(self.candidates):
            raise AdaptiveError(f"candidates named twice: {', '.join(self.candidates)}")
        if not self.points or len(set(self.points)) != len(self.points):
            raise AdaptiveError("points: at least one, none twice")

    @property
    def layouts(self) -> list[tuple[int, int]]:
        return sorted({(p.np, p.ppn) for p in self.points})

    def sizes_of(self, layout: tuple[int, int]) -> list[int]:
        return sorted(p.size for p in self.points if (p.np, p.ppn) == layout)

    def exhaustive_cells(self) -> int:
        return len(self.candidates) * len(self.points)


@dataclass(frozen=True)
class Launch(adaptive.Launch):
    """One simulation: every candidate of `algos` at every size of `sizes`, on one
    layout (process count `np`, processes per node `ppn`)."""

    np: int = 1
    ppn: int = 1


Measure = Callable[[Launch], list[dict]]


@dataclass
class Result:
    grid: Grid
    budget: int
    values: dict = field(default_factory=dict)   # (candidate, Point) -> µs
    launches: list[Launch] = field(default_factory=list)
    rounds: int = 0
    seconds: float = 0.0
    stopped: str = ""

    @property
    def cells(self) -> int:
        return sum(x.cells for x in self.launches)


def budget_cells(grid: Grid, fraction: float) -> int:
    if not 0 < fraction <= 1:
        raise AdaptiveError(f"budget fraction {fraction}: must be in (0, 1]")
    return int(math.floor(fraction * grid.exhaustive_cells() + 1e-9))


def initial_launches(grid: Grid, allowed: int, share: float = INITIAL_SHARE,
                     reserve: float = 0.0) -> list[Launch]:
    """Step 1 of the loop (module docstring): at most `share` of the `allowed` cells,
    leaving `reserve` cells a point of the grid to the loop."""
    cap = min(share * allowed, allowed - reserve * len(grid.points))
    lays = grid.layouts
    nps = sorted({n for n, _ in lays})
    corners = []
    for n in (nps[0], nps[-1]):
        pp = sorted(p for m, p in lays if m == n)
        corners += [(n, pp[0]), (n, pp[-1])]
    corners = list(dict.fromkeys(corners))
    k_max = max(len(grid.sizes_of(c)) for c in corners)
    for k in range(k_max, 1, -1):
        out = [Launch(grid.candidates, tuple(grid.sizes_of((n, p))[i] for i in
                                             adaptive.spread(len(grid.sizes_of((n, p))), k)),
                      np=n, ppn=p)
               for n, p in corners]
        if sum(x.cells for x in out) <= cap:
            return out
    # less: the extreme layouts at their smallest and largest size, then at their
    # middle size, then the largest layout's middle size alone
    ends = list(dict.fromkeys([corners[0], corners[-1]]))
    mid = [c for c in [corners[-1]]]
    for lays, pick in ((ends, lambda s: sorted({s[0], s[-1]})), (ends, lambda s: [s[len(s) // 2]]),
                       (mid, lambda s: [s[len(s) // 2]])):
        out = [Launch(grid.candidates, tuple(pick(grid.sizes_of((n, p)))), np=n, ppn=p)
               for n, p in lays]
        if sum(x.cells for x in out) <= cap:
            return out
    if out[0].cells > allowed:
        raise AdaptiveError(f"the budget ({allowed} cells) is smaller than the least initial "
                            f"design ({out[0].cells} cells: every candidate at one point)")
    return out


def features(points) -> np.ndarray:
    return np.array([[math.log2(max(p.size, 0.5)), math.log2(max(p.np, 1)),
                      math.log2(max(p.ppn, 1))] for p in points], dtype=float)


def _fit(X, y, X_all, normalize: bool, unknown_sd: float, kernels: dict | None = None,
         key=None):
    """Mean and sd of a Gaussian process at X_all. `kernels` keeps each curve's fitted
    kernel: one found by maximising the marginal likelihood (adaptive._gp) is reused
    with fixed hyperparameters until it is dropped (run refits every REFIT rounds)."""
    if len(y) == 0:
        return np.zeros(len(X_all)), np.full(len(X_all), unknown_sd)
    if len(y) == 1:
        return np.full(len(X_all), y[0]), np.full(len(X_all), unknown_sd)
    y = np.asarray(y, dtype=float)
    kern = kernels.get(key) if kernels is not None else None
    if kern is None:
        gp = adaptive._gp(X, y, EXACT_ALPHA, normalize)
        if kernels is not None:
            kernels[key] = gp.kernel_
    else:
        from sklearn.gaussian_process import GaussianProcessRegressor

        gp = GaussianProcessRegressor(kern, alpha=EXACT_ALPHA, normalize_y=normalize,
                                      optimizer=None)
        gp.fit(X, y)
    m, sd = gp.predict(X_all, return_std=True)
    return m, np.maximum(sd, 1e-4)


def cost_prior(grid: Grid, algos: dict, alpha: float, beta: float,
               gamma: float = 0.0) -> np.ndarray:
    """Per point and candidate: log of the registry cost formula's time (Hockney α, β,
    γ; analysis/costmodel.py) with the candidate's parameters, NaN where there is no
    formula (native) or the point is outside it. `algos`: costmodel.algorithm_dicts."""
    out = np.full((len(grid.points), len(grid.candidates)), np.nan)
    for j, c in enumerate(grid.candidates):
        alg, _, params = c.partition(":")
        a = algos.get((grid.collective, alg))
        if a is None or not a.get("cost"):
            continue
        prm = {k: str(v) for k, v in parse_params(params).items()} if params else {}
        for i, p in enumerate(grid.points):
            try:
                t = costmodel.predict_seconds(a, p.np, p.size, alpha, beta, gamma, params=prm)
            except costmodel.FormulaError:
                continue
            if t > 0:
                out[i, j] = math.log(t * 1e6)
    return out


def platform_prior(grid: Grid, build, plat) -> np.ndarray:
    """cost_prior with the platform's figures: its network latency and bandwidth
    (Hockney α, β) and, where it charges reductions (Platform.compute), γ from its
    largest calibrated reduction; γ = 0 where reductions are not charged (the presets)."""
    algos = costmodel.algorithm_dicts(registry.algorithms(build))
    red = tuple((plat.compute or {}).get("reduce") or ())
    gamma = red[-1][1] * 1e-6 / red[-1][0] if red and red[-1][0] > 0 else 0.0
    return cost_prior(grid, algos, plat.net_latency_us * 1e-6,
                      1 / (plat.net_bandwidth_GBps * 1e9), gamma)


def fit(grid: Grid, values: dict, prior: np.ndarray | None = None,
        kernels: dict | None = None) -> Prediction:
    """The model (module docstring, step 2) at every point of the grid; the
    Prediction's `sizes` are the point indices. With `prior` (cost_prior): a
    candidate with a formula is its formula's log time plus a Gaussian process of the
    residual at the points simulated (zero mean: unknown = as the formula)."""
    pts = list(grid.points)
    X_all = features(pts)
    n, k = len(pts), len(grid.candidates)
    mean, sd = np.zeros((n, k)), np.zeros((n, k))
    nat = grid.candidates.index(BASELINE)
    nat_pts = [p for p in pts if (BASELINE, p) in values]
    ys = [math.log(values[(BASELINE, p)]) for p in nat_pts]
    unknown = max(float(np.std(ys)) if len(ys) > 1 else 1.0, 1.0) * 3
    mean[:, nat], sd[:, nat] = _fit(features(nat_pts), ys, X_all, True, unknown, kernels,
                                    BASELINE)
    index = {p: i for i, p in enumerate(pts)}
    for j, c in enumerate(grid.candidates):
        if j == nat:
            continue
        if prior is not None and np.isfinite(prior[:, j]).all():
            have = [p for p in pts if (c, p) in values]
            r = [math.log(values[(c, p)]) - prior[index[p], j] for p in have]
            dm, ds = _fit(features(have), r, X_all, False, 1.0, kernels, c)
            mean[:, j], sd[:, j] = prior[:, j] + dm, ds
            continue
        both = [p for p in nat_pts if (c, p) in values]
        r = [math.log(values[(c, p)] / values[(BASELINE, p)]) for p in both]
        dm, ds = _fit(features(both), r, X_all, False, 1.0, kernels, c)
        mean[:, j] = mean[:, nat] + dm
        sd[:, j] = np.hypot(sd[:, nat], ds)
    # simulated cells are known: the model's mean there is the value itself
    for i, p in enumerate(pts):
        for j, c in enumerate(grid.candidates):
            if (c, p) in values:
                mean[i, j], sd[i, j] = math.log(values[(c, p)]), 1e-4
    return Prediction(tuple(grid.candidates), tuple(range(n)), mean, sd, None, None)


def _plausible(grid: Grid, pred: Prediction, prob, i: int, most: int) -> list[str]:
    """Native and the candidates that could be best at point i (probability >=
    P_PLAUSIBLE, at least the two best predicted), at most `most` of them besides
    native, the most probable first."""
    ranked = sorted(range(len(grid.candidates)), key=lambda j: pred.mean[i, j])
    want = [j for j in sorted(ranked, key=lambda j: -prob[i, j]) if prob[i, j] >= P_PLAUSIBLE]
    for j in ranked[:2]:
        if j not in want:
            want.append(j)
    nat = grid.candidates.index(BASELINE)
    want = [j for j in want if j != nat][:most] + [nat]
    return [grid.candidates[j] for j in sorted(set(want))]


def rule_picks(grid: Grid, values: dict) -> list[int]:
    """Per point: the candidate index the rules made from `values` choose there
    (native where no point is settled yet)."""
    nat = grid.candidates.index(BASELINE)
    try:
        rs = rules(choices(grid, values))
    except AdaptiveError:
        return [nat] * len(grid.points)
    idx = {label(c): j for j, c in enumerate(grid.candidates)}
    out = []
    for p in grid.points:
        r = rs.lookup(grid.collective, p.np, p.size, ppn=p.ppn)
        out.append(idx.get(r.spec, nat) if r is not None else nat)
    return out


def next_launches(grid: Grid, pred: Prediction, values: dict, left: int, batch: int,
                  seed: int, most: int = 1) -> list[Launch]:
    """Step 3 of the loop: the points where the rules made so far are expected to
    lose most against the best (under the model), their plausible candidates not yet
    simulated, one launch per layout and candidate set."""
    prob, _ = pred.decision(seed)
    f = pred._samples(seed)
    picked = np.asarray(rule_picks(grid, values))
    cols = np.arange(len(grid.points))
    loss = (f[:, cols, picked] - f.min(axis=2)).mean(axis=0)
    picks: list[tuple[Point, tuple[str, ...]]] = []
    for i in np.argsort(-loss, kind="stable"):
        p = grid.points[int(i)]
        wanted = tuple(c for c in _plausible(grid, pred, prob, int(i), most)
                       if (c, p) not in values)
        if not wanted:
            continue
        if len(wanted) > left:
            wanted = tuple(sorted(wanted, key=lambda c: (c != BASELINE,
                                                         pred.mean[int(i),
                                                                   grid.candidates.index(c)]))
                           [:left])
        picks.append((p, wanted))
        left -= len(wanted)
        if len(picks) >= batch or left <= 0:
            break
    groups: dict[tuple, list[int]] = {}
    for p, wanted in picks:
        groups.setdefault((p.np, p.ppn, wanted), []).append(p.size)
    return [Launch(wanted, tuple(sorted(sizes)), np=n, ppn=pp)
            for (n, pp, wanted), sizes in groups.items()]


def run(grid: Grid, measure: Measure, *, budget: float, batch: int = 4, seed: int = 0,
        initial_share: float = INITIAL_SHARE, prior: np.ndarray | None = None,
        most: int = 1, reserve: float | None = None,
        progress: Callable[[int, int, Launch, int], None] | None = None) -> Result:
    """The loop (module docstring). `measure(launch)` returns one record per
    (candidate, size) with `candidate`, `size` and `median_us`."""
    allowed = budget_cells(grid, budget)
    res = Result(grid, allowed)
    t0 = time.monotonic()
    want_points = set(grid.points)
    kernels: dict = {}

    def do(la: Launch) -> None:
        assert res.cells + la.cells <= allowed
        if progress:
            progress(res.cells, allowed, la, res.rounds)
        for r in measure(la):
            p = Point(la.np, la.ppn, int(r["size"]))
            if r.get("candidate") in la.algos and p in want_points and r.get("median_us"):
                res.values[(r["candidate"], p)] = float(r["median_us"])
        res.launches.append(la)

    if reserve is None:
        reserve = RESERVE if prior is not None else 0.0
    for la in initial_launches(grid, allowed, initial_share, reserve):
        do(la)
    res.rounds = 1
    while True:
        left = allowed - res.cells
        if left < 1:
            res.stopped = "budget spent"
            break
        if res.rounds % REFIT == 1:
            kernels.clear()
        pred = fit(grid, res.values, prior, kernels)
        pending = next_launches(grid, pred, res.values, left, batch, seed + res.rounds, most)
        if not pending:
            res.stopped = "every point settled"
            break
        res.rounds += 1
        for la in pending:
            if res.cells + la.cells <= allowed:
                do(la)
    res.seconds = time.monotonic() - t0
    return res


def label(candidate: str) -> str:
    """The candidate as tune labels it (and a rule's spec reads): parameters sorted,
    sizes normalised (`chain:segsize=16384,fanout=2` -> `chain:fanout=2,segsize=16K`)."""
    alg, _, params = candidate.partition(":")
    return tune._label(alg, make_params(parse_params(params, numbers=True)))


def frame_of(grid: Grid, values: dict, extra: dict | None = None) -> pd.DataFrame:
    """The simulated cells as a study frame (one repetition, simulated) for tune."""
    rows = []
    for (c, p), v in values.items():
        alg, _, params = c.partition(":")
        rows.append({"collective": grid.collective, "np": p.np, "ppn": p.ppn,
                     "nodes": -(-p.np // p.ppn), "size": p.size, "algorithm": alg,
                     "params": params, "candidate": c, "median_us": v, "simulated": 1,
                     "unit_id": 0, "run_id": 0, "round": 1, "repetition": 0, **(extra or {})})
    return pd.DataFrame(rows)


def choices(grid: Grid, values: dict, *, pool_layouts: bool = False,
            layouts: list[tuple[int, int]] | None = None) -> pd.DataFrame:
    """tune.choices (exact comparisons) at every point where native and another
    candidate were simulated, per layout (ppn a key of the rules). `pool_layouts`:
    node-unaware, one choice per (np, size) from the layouts' cells taken together
    (the median over the layouts of each candidate's time against native's).
    `layouts`: only these (np, ppn)."""
    f = frame_of(grid, values)
    settled = {p for (c, p) in values if c != BASELINE and (BASELINE, p) in values}
    keep = [Point(a, b, s) in settled and (layouts is None or (a, b) in layouts)
            for a, b, s in zip(f["np"], f["ppn"], f["size"])]
    f = f[keep]
    if f.empty:
        raise AdaptiveError("no point has native and another candidate simulated")
    if pool_layouts or f.groupby("np")["ppn"].nunique().max() < 2:
        f = f.drop(columns=["ppn", "nodes"])
    return tune.choices(tune.prepare(f, "colltune", include_oversubscribed=True))


def rules(ch: pd.DataFrame, meta: dict | None = None):
    """The rules of choices (tune.build_rules; ppn a key where the choices have it)."""
    keys = ["collective"] + (["ppn"] if "ppn" in ch.columns else []) + ["np", "size"]
    return tune.build_rules(ch, "colltune", keys, {"policy": POLICY, **(meta or {})})


POLICY = ("exact (colltune.tuning.exact): the fastest simulated candidate where native and "
          "another were simulated, within evidence.EXACT_TOL native; elsewhere the rules' "
          "interpolation; " + tune.POLICY)


# ------------------------------------------------------------------ simulated launches


def layout_platform(plat, np_: int, ppn: int):
    """(platform, nodes) for np_ processes at ppn a node: a flat platform grows to
    np_/ppn nodes when it has fewer (as launch.py grows one for more ranks than cores)."""
    if ppn < 1 or np_ % ppn:
        raise AdaptiveError(f"np {np_} at {ppn} a node: np must be a multiple of ppn")
    if ppn > plat.cores_per_node:
        raise AdaptiveError(f"{ppn} processes a node on platform '{plat.name}': its nodes have "
                            f"{plat.cores_per_node} cores")
    nodes = np_ // ppn
    if nodes > plat.nodes:
        try:
            plat = plat.with_nodes(nodes)
        except ValueError as exc:  # PlatformError: a topology that does not grow
            raise AdaptiveError(str(exc)) from None
    return plat, nodes


def sim_measure(build, plat, collective: str, timeout: float = 3600) -> Measure:
    """A `measure` that simulates: one smpirun per launch on its layout; each record
    labelled with its candidate (and the nodes and ppn it ran on)."""
    if backend_for(build).tuning_engine != "exact":
        raise AdaptiveError("exact (simulated) tuning needs --mpi smpi")

    def measure(la: Launch) -> list[dict]:
        p, nodes = layout_platform(plat, la.np, la.ppn)
        spec = bench_mod.BenchSpec(collective, list(la.algos), la.np, list(la.sizes), reps=1)
        with launch_mod.simulate(p), launch_mod.session(Placement(mapping="node", nodes=nodes)):
            recs, _ = bench_mod.run(build, spec, timeout=timeout)
        out, left = [], {s: list(la.algos) for s in la.sizes}
        for r in recs:
            pending = left.get(int(r["size"]), [])
            c = adaptive._match(r, pending)
            if c is None:
                continue
            pending.remove(c)
            if r.get("ppn") not in (None, la.ppn):
                raise AdaptiveError(f"np {la.np}: asked for {la.ppn} a node, the launch placed "
                                    f"{r.get('ppn')}")
            out.append({**r, "candidate": c})
        return out

    return measure
