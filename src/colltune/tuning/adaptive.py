"""Adaptive measurement for `colltune tune --measure`: rules from a fraction of the
measurements an exhaustive sweep would take.

The grid
    One collective, one process count (with its processes per node), a list of
    sizes and a list of candidates (colltune's algorithm specs and `native`). The
    exhaustive design measures every candidate at every size in R separate launches
    (R repetitions, one launch per repetition covering the whole grid).

The cost unit: a cell
    A cell is one (candidate, size, repetition): one stored measurement (the median
    of the driver's timed calls at one size for one algorithm in one launch). The
    exhaustive design costs candidates x sizes x R cells. A budget of N % allows
    floor(N/100 x that) cells; the loop never measures more. Launches (one mpirun of
    colltune-bench) are counted and reported too: a launch measures the product of a
    set of candidates and a set of sizes, once each (driver repetitions 1), plus one
    untimed warm-up call set of `native` first; the exhaustive design needs only R
    launches but every one of them is as long as the whole grid.

The loop (`run`)
    1. Initial design: every candidate at a few sizes spread over the grid (the
       first, the last and evenly between on the list), `initial_reps` launches.
    2. Model (`fit_predict`): Gaussian processes (scikit-learn) over the features
       log2(size), log2(processes) and processes per node: one of native's log
       latency and, per other candidate, one of its log latency relative to native
       (per launch), with a zero prior mean (unknown = as native). Each is fitted to
       the mean of every measured (candidate, size) with its noise variance (the
       pooled within-cell variance / repetitions); the prediction at every grid size
       is a mean and a standard deviation of the *latent* log latency.
    3. Where the decision is least certain: at every grid size, the expected loss of
       choosing the predicted best (Monte Carlo over the independent normal
       predictions: E[f(chosen) - min_c f(c)], a log regret). The `batch` sizes with
       the largest expected loss are measured next, each with the candidates that
       could be best there (probability of being best >= 10 %, at least the two
       best predicted) and `native` (so that the evidence test compares paired),
       one repetition, in as few launches as the candidate sets allow. No (candidate,
       size) is measured more than R times (the exhaustive design's repetitions).
    4. Repeat until the budget is spent (a launch that does not fit is shrunk to the
       cells left, down to two) or no cell is left to measure.

The final choice (`final_rules`), per grid size: conclusions come from measurements only
    A size is *tested* once the evidence test of `colltune tune` has settled it
    (evidence.best_of_point over the candidates measured there): a candidate faster
    than native beyond the spread of the repetitions, or native once native and its
    closest rival were both measured R times. A size between two tested sizes of the
    same choice takes that choice (*between*; not where its own measurements favour
    native); every other size is native (*untested*). So no rule names a candidate that
    the repetitions do not support: with 2 repetitions nothing beats native (the test
    cannot conclude from 2). The choices then go through tune.build_rules (the same
    interpolation between sizes as `colltune tune`).
    The model never concludes: it picks what to measure. After the initial design,
    sizes are measured first where deciding them is worth most per cell
    (`testing_value`: the drop of the rules' expected loss over every size, under the
    model's draws, if the size were settled on its predicted best, one decided size
    carrying those between it and a decided neighbour), then where the model is least
    sure (step 3).

Nothing here launches MPI by itself: `run` gets a `measure` callback (one launch ->
its records); `bench_measure` makes the real one.
"""

from __future__ import annotations

import math
import re
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable

from colltune.base.errors import ColltuneError
from colltune.base.specs import is_lib_spec
from colltune.base.lazy import LazyModule
from colltune.tuning import tune
from colltune.drivers import bench as bench_mod

np = LazyModule("numpy")
pd = LazyModule("pandas")

BASELINE = "native"
MIN_REPS = 2  # repetitions of native and of the best at a size before it counts as tested
P_PLAUSIBLE = 0.10  # a candidate with this probability of being best is measured
MC_SAMPLES = 512


class AdaptiveError(ColltuneError, ValueError):
    """A bad grid, budget or option: the message says what to change."""


@dataclass(frozen=True)
class Grid:
    collective: str
    candidates: tuple[str, ...]
    sizes: tuple[int, ...]
    np: int
    ppn: int | None = None

    def __post_init__(self):
        if not self.candidates:
            raise AdaptiveError("no candidates: name at least two algorithms")
        if len(set(self.candidates)) != len(self.candidates):
            raise AdaptiveError(f"candidates named twice: {', '.join(self.candidates)}")
        if len(self.candidates) < 2:
            raise AdaptiveError(f"one candidate ({self.candidates[0]}) leaves nothing to "
                                "choose: name at least two algorithms")
        if not self.sizes:
            raise AdaptiveError("no sizes")
        if list(self.sizes) != sorted(set(self.sizes)) or self.sizes[0] < 0:
            raise AdaptiveError("sizes must be distinct, ascending and >= 0")
        if self.np < 1:
            raise AdaptiveError(f"process count {self.np}: must be >= 1")

    def exhaustive_cells(self, reps: int) -> int:
        return len(self.candidates) * len(self.sizes) * reps


@dataclass(frozen=True)
class Launch:
    """One mpirun: every candidate of `algos` at every size of `sizes`, once."""

    algos: tuple[str, ...]
    sizes: tuple[int, ...]

    @property
    def cells(self) -> int:
        return len(self.algos) * len(self.sizes)


Measure = Callable[[Launch], list[dict]]


def parse_budget(text) -> float:
    """'20%', '20' or 20 -> 0.20; AdaptiveError unless 0 < N <= 100."""
    s = str(text).strip()
    m = re.fullmatch(r"([0-9]*\.?[0-9]+)\s*%?", s)
    if not m:
        raise AdaptiveError(f"budget '{text}': not a percentage (use e.g. 20%)")
    v = float(m.group(1))
    if not 0 < v <= 100:
        raise AdaptiveError(f"budget {v:g}%: must be above 0 % and at most 100 % of the "
                            "exhaustive design's cells")
    return v / 100


def budget_cells(grid: Grid, reps: int, fraction: float) -> int:
    if reps < 2:
        raise AdaptiveError(f"repetitions {reps}: at least 2 (the evidence test needs them; "
                            "4 or more to tell 3 % apart)")
    if not 0 < fraction <= 1:
        raise AdaptiveError(f"budget fraction {fraction}: must be in (0, 1]")
    return int(math.floor(fraction * grid.exhaustive_cells(reps) + 1e-9))


def check_budget(grid: Grid, reps: int, fraction: float, initial_sizes: int = 3,
                 initial_reps: int = 2) -> int:
    """The number of sizes of the initial design that fits the budget (at least 2, or
    the grid's one); AdaptiveError when even that does not fit."""
    allowed = budget_cells(grid, reps, fraction)
    k = min(initial_sizes, len(grid.sizes))
    while k > 2 and len(grid.candidates) * k * initial_reps > allowed:
        k -= 1
    first = len(grid.candidates) * k * initial_reps
    if first > allowed:
        need = math.ceil(1000 * first / grid.exhaustive_cells(reps)) / 10
        raise AdaptiveError(
            f"--budget {100 * fraction:g}% allows {allowed} of the exhaustive "
            f"{grid.exhaustive_cells(reps)} cells, less than the smallest initial design "
            f"({len(grid.candidates)} candidates x {k} sizes x {initial_reps} repetitions = "
            f"{first} cells): raise the budget to at least {need:g}% or name fewer candidates")
    return k


def spread(n: int, k: int) -> list[int]:
    """k indices of 0..n-1 spread evenly, the ends included."""
    k = max(1, min(k, n))
    if k == 1:
        return [n // 2]
    return sorted({int(round(i * (n - 1) / (k - 1))) for i in range(k)})


# ------------------------------------------------------------------ model


def features(sizes, np_: int, ppn: int | None) -> np.ndarray:
    s = np.asarray(list(sizes), dtype=float)
    return np.column_stack([np.log2(np.maximum(s, 0.5)), np.full(len(s), math.log2(max(np_, 1))),
                            np.full(len(s), float(ppn or np_))])


@dataclass
class Prediction:
    """Per grid size and candidate: mean and standard deviation of log latency."""

    candidates: tuple[str, ...]
    sizes: tuple[int, ...]
    mean: np.ndarray  # [size, candidate]
    sd: np.ndarray
    rel_mean: np.ndarray | None = None  # log(candidate / native) where native is one
    rel_sd: np.ndarray | None = None

    def best(self) -> np.ndarray:
        return np.argmin(self.mean, axis=1)

    def decision(self, seed: int = 0,
                 policy: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(probability of being best [size, candidate], expected loss of the
        predicted best [size]) by Monte Carlo over independent normals; with `policy`
        (a candidate index per size) the expected loss is that of the policy's choice."""
        f = self._samples(seed)
        arg = np.argmin(f, axis=2)
        prob = np.stack([(arg == c).mean(axis=0) for c in range(self.mean.shape[1])], axis=1)
        chosen = self.best() if policy is None else np.asarray(policy)
        fc = np.take_along_axis(f, chosen[None, :, None].repeat(MC_SAMPLES, 0), 2)[..., 0]
        loss = (fc - f.min(axis=2)).mean(axis=0)
        return prob, loss

    def _samples(self, seed: int) -> np.ndarray:
        """MC_SAMPLES draws of log latency [draw, size, candidate]."""
        rng = np.random.default_rng(seed)
        z = rng.standard_normal((MC_SAMPLES,) + self.mean.shape)
        if self.rel_mean is not None:  # native's draw shared: candidate = native + relative
            nat = self.candidates.index(BASELINE)
            fn = self.mean[None, :, nat] + self.sd[None, :, nat] * z[:, :, nat]
            f = fn[..., None] + self.rel_mean[None] + self.rel_sd[None] * z
            f[:, :, nat] = fn
        else:
            f = self.mean[None] + self.sd[None] * z  # [m, size, cand]
        return f


def _gp(X, y, alpha, normalize: bool):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    amp = 1.0 if normalize else max(0.05, float(np.mean(y ** 2)))
    kernel = ConstantKernel(amp, (1e-4, 1e2)) * RBF(
        length_scale=[4.0, 1.0, 1.0],
        length_scale_bounds=[(1.0, 64.0), (0.5, 64.0), (0.5, 64.0)])
    gp = GaussianProcessRegressor(kernel=kernel, alpha=alpha, normalize_y=normalize,
                                  n_restarts_optimizer=0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", UserWarning)
        gp.fit(X, y)
    return gp


def _cells(values: pd.DataFrame, col: str) -> tuple[pd.DataFrame, float]:
    """Per (candidate, size): mean, count of `col`; and the pooled within-cell variance."""
    cells = values.groupby(["candidate", "size"])[col].agg(["mean", "var", "count"]).reset_index()
    within = cells[cells["count"] > 1]
    dof = float((within["count"] - 1).sum())
    pooled = float(((within["count"] - 1) * within["var"]).sum() / dof) if dof else 0.01
    return cells, max(pooled, 1e-4)


def _fit_curve(cells: pd.DataFrame, pooled: float, grid: Grid, X_all, normalize: bool,
               unknown_sd: float) -> tuple[np.ndarray, np.ndarray]:
    if cells.empty:
        return np.zeros(len(grid.sizes)), np.full(len(grid.sizes), unknown_sd)
    X = features(cells["size"], grid.np, grid.ppn)
    y = cells["mean"].to_numpy()
    alpha = pooled / cells["count"].to_numpy()
    if len(cells) == 1 and normalize:
        m = np.full(len(grid.sizes), y[0])
        sd = np.where(np.asarray(grid.sizes) == cells["size"].iloc[0], math.sqrt(alpha[0]),
                      unknown_sd)
        return m, sd
    gp = _gp(X, y, alpha, normalize)
    m, sd = gp.predict(X_all, return_std=True)
    return m, np.maximum(sd, 1e-4)


def fit_predict(frame: pd.DataFrame, grid: Grid) -> Prediction:
    """The model (module docstring) at every grid size. `frame`: candidate, size,
    median_us and the launch (unit_id), one row per measurement.

    With native among the candidates: a Gaussian process of native's log latency, and
    per other candidate one of its log latency *relative to native* (the per-launch
    difference where both were measured in the same launch), with a zero prior mean:
    where a candidate is unknown the model says "as native, give or take", so the
    default wins unless measurements say otherwise. Without native: one process per
    candidate of its own log latency."""
    d = frame[frame["median_us"] > 0].assign(y=lambda x: np.log(x["median_us"]))
    X_all = features(grid.sizes, grid.np, grid.ppn)
    n, k = len(grid.sizes), len(grid.candidates)
    mean, sd = np.zeros((n, k)), np.zeros((n, k))
    dmean, dsd = np.zeros((n, k)), np.zeros((n, k))
    cells, pooled = _cells(d, "y")
    spread_y = float(cells["mean"].std()) if len(cells) > 1 else 1.0
    unknown = max(spread_y, 1.0) * 3
    if BASELINE not in grid.candidates:
        for j, c in enumerate(grid.candidates):
            mean[:, j], sd[:, j] = _fit_curve(cells[cells["candidate"] == c], pooled, grid,
                                              X_all, True, unknown)
        return Prediction(tuple(grid.candidates), tuple(grid.sizes), mean, sd)
    nat = grid.candidates.index(BASELINE)
    mean[:, nat], sd[:, nat] = _fit_curve(cells[cells["candidate"] == BASELINE], pooled, grid,
                                          X_all, True, unknown)
    base = d[d["candidate"] == BASELINE][["unit_id", "size", "y"]].rename(columns={"y": "yn"})
    rel = d[d["candidate"] != BASELINE].merge(base, on=["unit_id", "size"], how="inner")
    rel = rel.assign(r=rel["y"] - rel["yn"])
    rcells, rpooled = _cells(rel, "r") if len(rel) else (rel, 0.01)
    for j, c in enumerate(grid.candidates):
        if j == nat:
            continue
        g = rcells[rcells["candidate"] == c] if len(rcells) else rcells
        dm, ds = _fit_curve(g, rpooled, grid, X_all, False, 1.0)
        dmean[:, j], dsd[:, j] = dm, ds
        mean[:, j] = mean[:, nat] + dm
        sd[:, j] = np.hypot(sd[:, nat], ds)
    return Prediction(tuple(grid.candidates), tuple(grid.sizes), mean, sd, dmean, dsd)


# ------------------------------------------------------------------ loop


@dataclass
class Result:
    grid: Grid
    reps: int
    budget: int                      # cells allowed
    frame: pd.DataFrame              # every measurement: candidate, size, median_us, launch ...
    launches: list[Launch] = field(default_factory=list)
    rounds: int = 0
    prediction: Prediction | None = None
    seconds: float = 0.0
    stopped: str = ""                # why the loop ended

    @property
    def cells(self) -> int:
        return sum(x.cells for x in self.launches)


def _counts(frame: pd.DataFrame) -> dict[tuple[str, int], int]:
    if frame.empty:
        return {}
    return {(c, int(s)): int(n) for (c, s), n in
            frame.groupby(["candidate", "size"]).size().items()}


def next_launches(grid: Grid, pred: Prediction, counts: dict, reps: int, left: int,
                  batch: int = 2, seed: int = 0,
                  priority: np.ndarray | None = None) -> list[Launch]:
    """The launches of the next round within `left` cells (module docstring, step 3).
    `priority` (testing_value): sizes with a positive value come first, best first."""
    prob, loss = pred.decision(seed)
    order = list(np.argsort(-loss, kind="stable"))
    if priority is not None:  # sizes worth deciding first, then where the model is unsure
        first = [int(i) for i in np.argsort(-priority, kind="stable") if priority[i] > 0]
        order = first + [i for i in order if i not in first]
    best = pred.best()
    picks: list[tuple[int, tuple[str, ...]]] = []
    for i in order:
        s = grid.sizes[i]
        ranked = sorted(range(len(grid.candidates)), key=lambda j: pred.mean[i, j])
        want = [j for j in ranked if prob[i, j] >= P_PLAUSIBLE]
        for j in ranked[:2]:
            if j not in want:
                want.append(j)
        if BASELINE in grid.candidates:
            nat = grid.candidates.index(BASELINE)
            if nat not in want:
                want.append(nat)
        names = [grid.candidates[j] for j in sorted(want)
                 if counts.get((grid.candidates[j], s), 0) < reps]
        # nothing to learn where the two best predicted are both measured R times
        if not names or (counts.get((grid.candidates[best[i]], s), 0) >= reps
                         and len(names) == 1):
            continue
        if (len(names) == 1 and BASELINE in grid.candidates and names[0] != BASELINE
                and counts.get((BASELINE, s), 0) < reps):
            names = sorted({names[0], BASELINE}, key=grid.candidates.index)
        picks.append((i, tuple(names)))
        if len(picks) >= batch:
            break
    # sizes with the same candidate set share a launch
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, names in picks:
        groups.setdefault(names, []).append(grid.sizes[i])
    out: list[Launch] = []
    for names, sizes in groups.items():
        la = Launch(names, tuple(sorted(sizes)))
        if la.cells <= left:
            out.append(la)
            left -= la.cells
            continue
        # shrink to what is left: fewer sizes, then fewer candidates (the best first)
        sizes_fit = max(1, left // max(1, len(names)))
        sz = tuple(sorted(sizes)[:sizes_fit])
        keep = [n for n in sorted(names, key=lambda n: pred.mean[grid.sizes.index(sz[0]),
                                                                 grid.candidates.index(n)])]
        keep = keep[:max(0, left // len(sz))]
        if len(keep) >= 2 or (len(keep) == 1 and left >= 1 and len(grid.candidates) > 1
                              and left < 2):
            la = Launch(tuple(sorted(keep, key=grid.candidates.index)), sz)
            if 0 < la.cells <= left:
                out.append(la)
                left -= la.cells
        break
    return out


def _records_frame(records: list[dict], launch_no: int, grid: Grid) -> pd.DataFrame:
    rows = []
    for r in records:
        rows.append({**r, "unit_id": launch_no, "run_id": 0, "round": 1,
                     "repetition": launch_no, "candidate": r.get("candidate")})
    return pd.DataFrame(rows)


def run(grid: Grid, measure: Measure, *, reps: int, budget: float, initial_sizes: int = 3,
        initial_reps: int = 2, batch: int = 2, seed: int = 0,
        progress: Callable[[int, int, Launch, int], None] | None = None,
        on_launch: Callable[[int, Launch, list[dict]], None] | None = None) -> Result:
    """The adaptive loop (module docstring). `budget` is a fraction of the exhaustive
    design's cells (parse_budget). `measure(launch)` returns one record per
    (candidate, size) of the launch, each with `candidate` (one of grid.candidates),
    `size` and `median_us` (and whatever else the caller stores). `progress(cells used,
    budget, launch, round)` is called before each launch, `on_launch(number, launch,
    records)` after."""
    if initial_reps < 2:
        raise AdaptiveError("the initial design needs at least 2 repetitions")
    if initial_reps > reps:
        raise AdaptiveError(f"the initial design's {initial_reps} repetitions exceed the "
                            f"{reps} of the exhaustive design")
    allowed = budget_cells(grid, reps, budget)
    n = len(grid.sizes)
    k = check_budget(grid, reps, budget, initial_sizes, initial_reps)
    t0 = time.monotonic()
    res = Result(grid, reps, allowed, pd.DataFrame())
    frames: list[pd.DataFrame] = []

    def do(launch: Launch) -> None:
        assert res.cells + launch.cells <= allowed
        if progress:
            progress(res.cells, allowed, launch, res.rounds)
        recs = measure(launch)
        number = len(res.launches)
        res.launches.append(launch)
        want = {(a, s) for a in launch.algos for s in launch.sizes}
        recs = [r for r in recs if (r.get("candidate"), int(r.get("size", -1))) in want]
        if on_launch:
            on_launch(number, launch, recs)
        frames.append(_records_frame(recs, number, grid))

    idx = spread(n, k)
    for _ in range(initial_reps):
        do(Launch(tuple(grid.candidates), tuple(grid.sizes[i] for i in idx)))
    res.rounds = 1
    while True:
        left = allowed - res.cells
        res.frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        pred = fit_predict(res.frame, grid)
        res.prediction = pred
        if left < 1:
            res.stopped = "budget spent"
            break
        counts = _counts(res.frame)
        value = testing_value(grid, pred, evidence_of(grid, res.frame, reps=reps), counts,
                              reps, seed + res.rounds)
        pending = next_launches(grid, pred, counts, reps, left, batch, seed + res.rounds,
                                value)
        if not pending:
            res.stopped = ("every cell that could change a decision is measured "
                           f"{reps} times" if left >= 2 else "budget spent")
            break
        res.rounds += 1
        for la in pending:
            do(la)
    res.seconds = time.monotonic() - t0
    return res


# ------------------------------------------------------------------ final rules


@dataclass
class Evidence:
    """What the measurements decide: per size, the label the evidence test settled
    (`tested`), and every measured size's medians; the candidates' labels."""

    tested: dict[int, str]
    medians: dict[int, dict[str, float]]
    lab: dict[str, str]       # candidate -> label
    cand_of: dict[str, str]   # label -> candidate
    info: pd.DataFrame        # per label: algorithm, param_key
    nat_label: str | None


def evidence_of(grid: Grid, frame: pd.DataFrame, target: str = "colltune",
                reps: int = 4) -> Evidence:
    """The sizes the evidence test has decided (module docstring)."""
    p = tune.prepare(frame, target)
    d = p.frame
    lab = {c: l for c, l in zip(d["candidate"], d["label"])}
    cand_of = {l: c for c, l in lab.items()}
    chosen = tune.choices(p).to_dict("records")
    medians = {int(r["size"]): r["medians"] for r in chosen}
    counts = _counts(frame)
    nat_label = lab.get(BASELINE) if BASELINE in grid.candidates else None
    tested = {}
    for r in chosen:
        s, best = int(r["size"]), r["best"]
        if best != nat_label:  # concluded: faster than native beyond the spread
            tested[s] = best
            continue
        # native: decided once native and its closest rival had every repetition
        meds = {l: m for l, m in medians[s].items() if l != nat_label}
        rival = min(meds, key=meds.get) if meds else None
        if counts.get((BASELINE, s), 0) >= reps and (
                rival is None or counts.get((cand_of[rival], s), 0) >= reps):
            tested[s] = best
    return Evidence(tested, medians, lab, cand_of, d.drop_duplicates("label").set_index("label"),
                    nat_label)


def fill(sizes, ev: Evidence, tested: dict[int, str] | None = None
         ) -> list[tuple[str | None, str]]:
    """(label, how) per size from the decided ones: tested where decided; between two
    decided sizes of the same label, that label (unless this size was measured and its
    medians favour native); else native (`untested`; None without native)."""
    tested = ev.tested if tested is None else tested
    out = []
    for i, s in enumerate(sizes):
        if s in tested:
            out.append((tested[s], "tested"))
            continue
        left = next((tested[t] for t in reversed(sizes[:i]) if t in tested), None)
        right = next((tested[t] for t in sizes[i + 1:] if t in tested), None)
        meds = ev.medians.get(int(s), {})
        leans_native = (left is not None and ev.nat_label in meds and left in meds
                        and meds[ev.nat_label] <= meds[left])
        if left is not None and left == right and not leans_native:
            out.append((left, "between"))
        elif ev.nat_label is not None:
            out.append((ev.nat_label, "untested"))
        else:
            out.append((left or right, "untested"))
    return out


def policy_choices(grid: Grid, frame: pd.DataFrame, pred: Prediction | None,
                   target: str = "colltune", reps: int = 4) -> pd.DataFrame:
    """Per grid size: the choice the measurements support (module docstring), as
    tune.choices's columns, with `how` (tested, between, untested) and `candidate`."""
    ev = evidence_of(grid, frame, target, reps)
    rows = []
    for i, (best, how) in enumerate(fill(list(grid.sizes), ev)):
        if best is None and pred is not None:  # no native and nothing decided
            best = ev.lab.get(grid.candidates[int(pred.best()[i])])
        if best is None:
            best = next(iter(ev.info.index))
        alg, par = ev.info.loc[best, "algorithm"], ev.info.loc[best, "param_key"]
        rows.append({"collective": grid.collective, "np": grid.np, "size": int(grid.sizes[i]),
                     "best": best, "general": best, "how": how,
                     "candidate": ev.cand_of[best], "algorithm": alg, "params": par,
                     "general_algorithm": alg, "general_params": par})
    return pd.DataFrame(rows)


def testing_value(grid: Grid, pred: Prediction, ev: Evidence, counts: dict, reps: int,
                  seed: int = 0) -> np.ndarray:
    """Per size: what deciding it would gain, per cell it costs. The gain is the drop of
    the rules' expected loss over every size (the model's draws) if the evidence test
    settled this size on its predicted best (times the probability that it is the
    best): one decided size can carry the sizes between it and a decided neighbour.
    The cost: the repetitions of that candidate and native still missing there."""
    sizes = list(grid.sizes)
    n = len(sizes)
    if ev.nat_label is None:
        return np.zeros(n)
    f = pred._samples(seed)
    fmin = f.min(axis=2)
    prob, _ = pred.decision(seed)
    cols = np.arange(n)

    def loss(tested) -> float:
        idx = [grid.candidates.index(ev.cand_of[l]) for l, _ in fill(sizes, ev, tested)]
        return float((f[:, cols, idx] - fmin).mean(axis=0).sum())

    now = loss(ev.tested)
    best = pred.best()
    out = np.zeros(n)
    for i, s in enumerate(sizes):
        c = grid.candidates[int(best[i])]
        if s in ev.tested or c not in ev.lab:
            continue
        gain = now - loss({**ev.tested, s: ev.lab[c]})
        missing = sum(max(0, reps - counts.get((x, s), 0)) for x in {c, BASELINE})
        if gain > 0 and missing > 0:
            out[i] = gain * prob[i, int(best[i])] / missing
    return out


def final_choices(res: Result, target: str = "colltune") -> pd.DataFrame:
    """Per grid size: the choice (module docstring), as tune.choices's columns."""
    return policy_choices(res.grid, res.frame, res.prediction, target, res.reps)


def final_choices_of(results: list[Result], target: str = "colltune") -> pd.DataFrame:
    """final_choices of several process counts' loops, one frame."""
    return pd.concat([final_choices(r, target) for r in results], ignore_index=True)


POLICY = ("adaptive (colltune.adaptive): the evidence test's choice where it settled a size, "
          "between two settled sizes of one choice that choice, elsewhere native (the model "
          "only picks what to measure); " + tune.POLICY)


def final_rules(res: Result, target: str = "colltune", meta: dict | None = None):
    return final_rules_of([res], target, meta)


def final_rules_of(results: list[Result], target: str = "colltune", meta: dict | None = None):
    """The rules of one or more process counts' loops (tune.build_rules: between two
    measured process counts each size switches where the two choices' times cross)."""
    return tune.build_rules(final_choices_of(results, target), target,
                            ["collective", "np", "size"], {"policy": POLICY, **(meta or {})})


# ------------------------------------------------------------------ real launches


def bench_measure(build, grid: Grid, *, iterations: int | None = None,
                  warmup: int | None = None, timing: str = "auto", timeout: float = 900,
                  dtype: str = "char", op: str = "sum") -> Measure:
    """A `measure` that runs colltune-bench: one launch per call, `native` first as an
    untimed warm-up (its first record per size is dropped, as libalgos does), each
    record labelled with its candidate."""

    for c in grid.candidates:
        if is_lib_spec(c):
            raise AdaptiveError(f"candidate '{c}': the MPI library's own algorithms need a "
                                "launch each and are not measured adaptively; use colltune's "
                                "algorithms and native (--target colltune)")

    def measure(launch: Launch) -> list[dict]:
        algos = [bench_mod.WARMUP_CANDIDATE] + list(launch.algos)
        spec = bench_mod.BenchSpec(grid.collective, algos, grid.np, list(launch.sizes),
                                   iterations=iterations, warmup=warmup, reps=1,
                                   timing=timing, dtype=dtype, op=op)
        recs, _ = bench_mod.run(build, spec, timeout=timeout)
        recs = bench_mod._drop_warmup(recs)
        out = []
        left = {s: list(launch.algos) for s in launch.sizes}
        for r in recs:
            pending = left.get(int(r["size"]), [])
            c = _match(r, pending)
            if c is None:
                continue
            pending.remove(c)
            out.append({**r, "candidate": c, "nodes": 1, "ppn": grid.ppn or grid.np})
        return out

    return measure


def _match(rec: dict, pending: list[str]) -> str | None:
    for key in ("spec", "algorithm"):
        if rec.get(key) in pending:
            return rec[key]
    name = str(rec.get("algorithm"))
    same = [c for c in pending if c.split(":", 1)[0] == name]
    return same[0] if same else None


def exhaustive(grid: Grid, measure: Measure, reps: int,
               progress: Callable[[int, int, Launch, int], None] | None = None,
               on_launch: Callable[[int, Launch, list[dict]], None] | None = None
               ) -> tuple[pd.DataFrame, list[Launch]]:
    """Every candidate at every size, `reps` launches."""
    launch = Launch(tuple(grid.candidates), tuple(grid.sizes))
    frames = []
    for i in range(reps):
        if progress:
            progress(i * launch.cells, reps * launch.cells, launch, i)
        recs = measure(launch)
        if on_launch:
            on_launch(i, launch, recs)
        frames.append(_records_frame(recs, i, grid))
    return pd.concat(frames, ignore_index=True), [launch] * reps
