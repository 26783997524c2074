"""What measurements may conclude: oversubscribed points and "faster" with evidence.

Two questions every table, figure and report asks before it calls something
"best", "faster" or gives a speedup:

1. Was the point measured honestly? `oversubscribed(df)` marks the rows measured
   with more processes on a node than the node has cores (processes time-sliced by
   the OS): they are shown, marked, and kept out of every conclusion by default.
2. Is the difference larger than the noise? `compare(candidate, baseline)` takes
   the per-repetition latencies of two algorithms at one point (repetitions =
   separate launches or rounds, one stored measurement each) and decides
   `faster`, `slower`, `tie` or `insufficient`. Two designs:

   - **paired** (`pairs=True`, the usual case: our algorithms run interleaved in the
     same launch, so each launch gives one ratio baseline/candidate and whatever
     slowed that launch down slowed both): the estimate is the geometric mean of the
     per-launch ratios, with the 95 % t interval of the mean log ratio (the paired
     t-test on log latencies, as bioequivalence studies compare ratios). At least
     `MIN_PAIRS` launches.
   - **unpaired** (separate launches, e.g. the MPI library's algorithms): the ratio of
     medians, with a 95 % percentile bootstrap interval (each side resampled on its
     own, `N_BOOT` resamples, fixed seed `SEED`, each side's values sorted first: the
     same values give the same interval whatever order they were read in) and
     the two-sided Mann–Whitney U test (exact); at least `MIN_REPS` repetitions a side
     (with 3 against 3 no rank test can reach 5 %).

   - **exact** (`exact=True`: a deterministic simulation, where a point's every
     repetition and every launch give the same time to within `EXACT_TOL`): the
     ratio of medians decides alone, one repetition suffices; `faster` is a speedup
     of at least 1 + `EXACT_TOL` (the largest difference seen between launches of
     the same simulated point, docs/simulation.md "Speed", is 0.05 %).

   `faster` needs the interval above 1 (and, unpaired, U below `ALPHA`) and a
   speedup of at least 1 + `MIN_EFFECT`; `slower` is the mirror image; anything else
   is a `tie`; too few repetitions are `insufficient`. (The tests work on the speedup
   baseline / candidate; what colltune prints is its inverse, the one ratio below.)

3. Every ratio colltune prints is one quantity, "time / native's time" (below 1:
   faster), computed by `ratio_to_baseline` (two latencies; the ratio of medians of
   repetitions; paired: the geometric mean of the per-launch ratios: the estimate the
   comparison tests) and written by `fmt_ratio` ('×0.98') and `ratio_text`
   ('×0.98 of native (2 % faster)'), in the terminal, the report, CSV/JSON and docs.
   The ratio shown for a comparison (quick's tables, the report's summary, the
   figures) is the ratio of the two medians (`Verdict.shown`, a best table's
   `median_ratio`); a paired comparison's own estimate, where it prints differently,
   is labelled beside it ('×0.34 (paired ×0.44)', `ratio_label`, `paired_note`).

   Ties go to the default (`native`): `best_per_point` names another algorithm only
   when it is faster than the baseline with evidence.

4. The winner among many (`judge_point`): at one point every candidate is tested
   against the baseline, and the best of twenty would beat it at 5 % by chance alone
   about once in three points. The p-values of the candidates tested at a point are
   corrected together by **Holm's step-down method** (family-wise error at most
   `ALPHA` over the point's candidates): `faster`/`slower` needs the Holm-adjusted p
   below `ALPHA` too; a per-candidate win that does not survive it is a tie ("within
   noise after Holm's correction over m candidates"). Exact (simulated) comparisons
   have no p and are not corrected.

5. Unstable points (`judge_point`): repetitions in separate launches that scatter
   beyond `UNSTABLE_SPREAD` (a side's median repetition over its fastest one, native's
   or the candidate's) are "unstable: measure again", never significant: whatever
   slowed some launches (another program, a compile) and not others decides an
   unpaired comparison. Paired comparisons (the same launches) are exempt: a launch's
   load hits both sides and the paired interval carries what remains. Where the
   launches' load was recorded (load1_before/after: the 1-minute load average), an
   unpaired comparison whose two sides saw load averages more than `LOAD_TOL` apart is
   unstable too.

docs/benchmarking.md ("Conclusions with evidence") describes the method for users.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from colltune.base.lazy import LazyModule

np = LazyModule("numpy")
pd = LazyModule("pandas")

from colltune.results.reader import oversubscribed  # the one rule, from the stored columns

MIN_REPS = 4
MIN_PAIRS = 3
ALPHA = 0.05
MIN_EFFECT = 0.03
EXACT_TOL = 0.001  # exact (simulated) comparisons: differences below this are ties
N_BOOT = 4000
SEED = 20240601
OVER_MARK = "†"
OVER_LEGEND = (f"{OVER_MARK} oversubscribed: more processes than cores on a node (processes "
               "time-sliced by the OS); shown, never used for a conclusion")

UNSTABLE_SPREAD = 2.0  # a side's median repetition / its fastest: above, "unstable"
LOAD_TOL = 1.0         # load averages of an unpaired comparison's two sides: max apart
CORRECTION = "Holm"    # the family-wise correction over a point's candidates
UNSTABLE = "unstable: measure again"

OUTCOMES = ("faster", "slower", "tie", "insufficient", "unstable")


# ------------------------------------------------------------------ the one ratio

RATIO_NAME = "time / native's time"  # the one ratio colltune prints; below 1: faster
RATIO_LEGEND = ("×r: time / native's time (below 1: faster than native, above 1: slower; "
                "×0.80 = 20 % faster): the ratio of the medians; over repetitions measured "
                "in the same launches the comparison's own estimate, the geometric mean of "
                "the per-launch ratios, is labelled 'paired' beside it where it differs")


def ratio_to_baseline(t, base, *, paired: bool = False) -> float:
    """THE ratio colltune prints, everywhere: time / the baseline's (native's) time;
    below 1: faster. `t`, `base`: two latencies (µs); or two lists of repetitions (the
    ratio of their medians); or, paired=True, two aligned lists (the i-th of each
    from the same launch: the geometric mean of the per-launch ratios). NaN when
    either side has no valid value."""
    if not paired and _is_number(t) and _is_number(base):
        t, base = float(t), float(base)
        return t / base if t > 0 and base > 0 and math.isfinite(t / base) else math.nan
    if paired:
        a, b = np.asarray(list(t), dtype=float), np.asarray(list(base), dtype=float)
        ok = np.isfinite(a) & np.isfinite(b) & (a > 0) & (b > 0)
        if not ok.any():
            return math.nan
        return float(math.exp(np.log(a[ok] / b[ok]).mean()))
    a, b = _values(t), _values(base)
    if len(a) == 0 or len(b) == 0:
        return math.nan
    return float(np.median(a) / np.median(b))


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) or (hasattr(x, "dtype") and getattr(x, "ndim", 1) == 0)


def fmt_ratio(r) -> str:
    """'×0.98' (two decimals), '' when there is no ratio."""
    if r is None or not math.isfinite(float(r)):
        return ""
    return f"×{float(r):.2f}"


def paired_note(median_ratio, estimate, paired: bool) -> str:
    """'paired ×0.44' where a paired comparison's own estimate (the geometric mean of
    the per-launch ratios) prints differently from the ratio of the medians, else ''."""
    if not paired or not fmt_ratio(estimate) or fmt_ratio(estimate) == fmt_ratio(median_ratio):
        return ""
    return f"paired {fmt_ratio(estimate)}"


def ratio_label(median_ratio, estimate=None, paired: bool = False) -> str:
    """'×0.34' or '×0.34 (paired ×0.44)': the ratio colltune shows for a comparison
    (terminal, report, figures): the ratio of the two medians, with the paired
    estimate labelled where it differs (paired_note)."""
    if not fmt_ratio(median_ratio):  # no medians to divide: the estimate alone
        return ("paired " if paired and fmt_ratio(estimate) else "") + fmt_ratio(estimate)
    note = paired_note(median_ratio, estimate, paired)
    return fmt_ratio(median_ratio) + (f" ({note})" if note else "")


def ratio_text(r, baseline: str = "native", detail: str = "") -> str:
    """'×0.98 of native (2 % faster)', '×1.20 of native (20 % slower; DETAIL)': the
    ratio (time / the baseline's time) in words, the same everywhere."""
    if r is None or not math.isfinite(float(r)):
        return "no valid measurement" + (f" ({detail})" if detail else "")
    r = float(r)
    pct = round(abs(1 - r) * 100)
    words = ("as fast" if pct == 0 else f"{pct} % faster" if r < 1 else f"{pct} % slower")
    return f"{fmt_ratio(r)} of {baseline} ({words}{'; ' + detail if detail else ''})"


def ratio_ci(ci_low, ci_high) -> tuple[float, float]:
    """An interval of the speedup (baseline / time, as the tests compute it) on the
    scale of the ratio (time / baseline)."""
    lo, hi = (math.nan if v is None else float(v) for v in (ci_low, ci_high))
    return (1 / hi if hi and math.isfinite(hi) else math.nan,
            1 / lo if lo and math.isfinite(lo) else math.nan)


def fmt_ci(lo, hi) -> str:
    """'95% CI 0.70–0.80' of a ratio, '' without one."""
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return ""
    return f"95% CI {lo:.2f}–{hi:.2f}"


# ------------------------------------------------------------------ oversubscription

def with_oversubscribed(df: pd.DataFrame) -> pd.DataFrame:
    """The frame with a boolean `oversubscribed` column (computed when absent)."""
    if "oversubscribed" in df.columns:
        return df
    return df.assign(oversubscribed=oversubscribed(df).to_numpy())


# ------------------------------------------------------------------ comparison

@dataclass(frozen=True)
class Verdict:
    outcome: str            # faster / slower / tie / insufficient (of the candidate)
    ratio: float            # ratio_to_baseline(candidate, baseline): < 1 candidate faster
    ci_low: float           # 95 % interval of the speedup 1 / ratio, as the tests compute
                            # it (nan: insufficient); printed as ratio_ci
    ci_high: float
    p: float                # two-sided p (nan: insufficient)
    n_candidate: int
    n_baseline: int
    paired: bool = False    # per-launch ratios (paired t on logs), else unpaired
    seed: int = SEED        # of the bootstrap (unpaired); recorded with the interval
    exact: bool = False     # a deterministic simulation: the ratio alone decides
    p_holm: float = math.nan  # p adjusted by Holm over the point's candidates (nan: none)
    family: int = 1         # how many candidates were tested at the point (Holm's m)
    note: str = ""          # why: unstable (the spread / load seen) or Holm's tie
    median_ratio: float = math.nan  # paired: the ratio of the two medians (what is shown)

    @property
    def shown(self) -> float:
        """The ratio shown for the comparison: the ratio of the medians (paired: with
        the estimate labelled beside it where it differs, paired_note)."""
        return self.median_ratio if math.isfinite(self.median_ratio) else self.ratio

    def _detail(self, more: str = "") -> str:
        note = paired_note(self.shown, self.ratio, self.paired)
        return "; ".join(x for x in (note, more) if x)

    @property
    def n(self) -> int:
        return min(self.n_candidate, self.n_baseline)

    @property
    def level(self) -> str:
        """The evidence level in words: significant, within noise, insufficient."""
        if self.exact and self.outcome not in ("insufficient", "unstable"):
            return "exact (simulated)"
        return {"faster": "significant", "slower": "significant", "tie": "within noise",
                "insufficient": "insufficient", "unstable": UNSTABLE}[self.outcome]

    @property
    def speedup(self) -> float:
        """1 / ratio (> 1: the candidate faster): the scale the tests work on, never
        printed."""
        return 1 / self.ratio if self.ratio and math.isfinite(self.ratio) else math.nan

    @property
    def ratio_ci(self) -> tuple[float, float]:
        """The 95 % interval of the ratio."""
        return ratio_ci(self.ci_low, self.ci_high)

    def ci_text(self) -> str:
        """The 95 % interval of the ratio (time / the baseline's time)."""
        return fmt_ci(*self.ratio_ci)

    def n_text(self) -> str:
        if self.paired:
            return f"n={self.n} paired"
        return (f"n={self.n_candidate}" if self.n_candidate == self.n_baseline
                else f"n={self.n_candidate}/{self.n_baseline}")

    def stats_text(self) -> str:
        """'95% CI 1.20–1.50, p=0.008, n=5 paired' ('n=2; 4 needed' when insufficient)."""
        if self.outcome == "insufficient":
            need = MIN_PAIRS if self.paired else MIN_REPS
            return f"{self.n_text()}; {need} repetitions needed"
        if self.exact:
            return f"exact: deterministic simulation, {self.n_text()}"
        holm = (f", {CORRECTION} p={self.p_holm:.2g} over {self.family} candidates"
                if self.family > 1 and math.isfinite(self.p_holm) else "")
        return f"{self.ci_text()}, p={self.p:.2g}{holm}, {self.n_text()}"

    def measured_text(self, baseline: str = "native") -> str:
        """'×0.74 of native (26 % faster)' as measured (no claim)."""
        return ratio_text(self.shown, baseline, self._detail())

    def text(self, baseline: str = "native") -> str:
        """'×0.74 of native (26 % faster; 95% CI 0.70–0.80, p=0.008, n=5)',
        'tie: ×0.99 of native (1 % faster; within noise; ...)'."""
        n = self.n_text()
        if self.outcome == "insufficient":
            need = MIN_PAIRS if self.paired else MIN_REPS
            return (f"insufficient evidence ({n}; {need} repetitions needed): measured "
                    + ratio_text(self.shown, baseline, self._detail()))
        stats = self.stats_text()
        if self.outcome == "unstable":
            return (f"{UNSTABLE} ({self.note}): measured "
                    + ratio_text(self.shown, baseline, self._detail(stats)))
        if self.exact and self.outcome == "tie":
            return "tie: " + ratio_text(self.shown, baseline, self._detail(
                f"within {100 * EXACT_TOL:g} %; " + stats))
        if self.outcome in ("faster", "slower"):
            return ratio_text(self.shown, baseline, self._detail(stats))
        why = f"{self.note}; " if self.note else "within noise; "
        return "tie: " + ratio_text(self.shown, baseline, self._detail(why + stats))

    def to_dict(self) -> dict:
        def clean(v):
            return None if isinstance(v, float) and not math.isfinite(v) else v
        lo, hi = self.ratio_ci
        return {"outcome": self.outcome, "level": self.level, "ratio": clean(self.ratio),
                "ci_low": clean(lo), "ci_high": clean(hi),
                "p": clean(self.p), "n_candidate": self.n_candidate,
                "n_baseline": self.n_baseline, "paired": self.paired, "seed": self.seed,
                "p_holm": clean(self.p_holm), "family": self.family,
                "correction": CORRECTION if self.family > 1 else None, "text": self.text()}


def _values(x) -> np.ndarray:
    v = np.asarray(pd.to_numeric(pd.Series(list(x), dtype=object), errors="coerce"),
                   dtype=float)
    return v[np.isfinite(v) & (v > 0)]


def bootstrap_ratio_ci(candidate, baseline, level: float = 0.95, n_boot: int = N_BOOT,
                       seed: int = SEED) -> tuple[float, float]:
    """Percentile bootstrap interval of median(baseline) / median(candidate): THE
    interval of every unpaired comparison (terminal, report, rules). Each side is
    sorted before it is resampled, so that the interval depends on the values and the
    seed only, never on the order the rows were read in (the terminal's reader and the
    report's order rows differently)."""
    a, b = np.sort(_values(candidate)), np.sort(_values(baseline))
    rng = np.random.default_rng(seed)
    ma = np.median(rng.choice(a, size=(n_boot, len(a)), replace=True), axis=1)
    mb = np.median(rng.choice(b, size=(n_boot, len(b)), replace=True), axis=1)
    r = mb / ma
    tail = (1 - level) / 2 * 100
    return float(np.percentile(r, tail)), float(np.percentile(r, 100 - tail))


def compare(candidate, baseline, *, pairs: bool = False, alpha: float = ALPHA,
            min_effect: float = MIN_EFFECT, min_reps: int = MIN_REPS,
            min_pairs: int = MIN_PAIRS, n_boot: int = N_BOOT, seed: int = SEED,
            exact: bool = False) -> Verdict:
    """Is `candidate` faster than `baseline`? Both: per-repetition latencies (µs) at
    one point; with pairs=True, aligned (the i-th of each from the same launch). The
    method is in the module's docstring."""
    if exact:
        return _compare_exact(candidate, baseline, pairs)
    if pairs:
        return _compare_paired(candidate, baseline, alpha, min_effect, min_pairs)
    from scipy.stats import mannwhitneyu

    a, b = _values(candidate), _values(baseline)
    if len(a) == 0 or len(b) == 0:
        return Verdict("insufficient", math.nan, math.nan, math.nan, math.nan, len(a), len(b),
                       seed=seed)
    ratio = ratio_to_baseline(a, b)
    speedup = 1 / ratio
    if min(len(a), len(b)) < min_reps:
        return Verdict("insufficient", ratio, math.nan, math.nan, math.nan, len(a), len(b),
                       seed=seed)
    lo, hi = bootstrap_ratio_ci(a, b, n_boot=n_boot, seed=seed)
    method = "exact" if len(a) + len(b) <= 40 and not _ties(a, b) else "asymptotic"
    p = float(mannwhitneyu(a, b, alternative="two-sided", method=method).pvalue)
    if p < alpha and lo > 1 and speedup >= 1 + min_effect:
        outcome = "faster"
    elif p < alpha and hi < 1 and 1 / speedup >= 1 + min_effect:
        outcome = "slower"
    else:
        outcome = "tie"
    return Verdict(outcome, ratio, lo, hi, p, len(a), len(b), seed=seed)


def _compare_paired(candidate, baseline, alpha: float, min_effect: float,
                    min_pairs: int) -> Verdict:
    from scipy import stats

    a = np.asarray(pd.to_numeric(pd.Series(list(candidate), dtype=object), errors="coerce"),
                   dtype=float)
    b = np.asarray(pd.to_numeric(pd.Series(list(baseline), dtype=object), errors="coerce"),
                   dtype=float)
    ok = np.isfinite(a) & np.isfinite(b) & (a > 0) & (b > 0)
    a, b = a[ok], b[ok]
    n = len(a)
    if n == 0:
        return Verdict("insufficient", math.nan, math.nan, math.nan, math.nan, 0, 0, True)
    d = np.log(b / a)  # > 0: the candidate is faster in that launch
    ratio = ratio_to_baseline(a, b, paired=True)
    mr = ratio_to_baseline(a, b)  # the ratio of the medians, shown beside it
    speedup = 1 / ratio
    if n < min_pairs:
        return Verdict("insufficient", ratio, math.nan, math.nan, math.nan, n, n, True,
                       median_ratio=mr)
    sd = float(d.std(ddof=1))
    if sd == 0:
        lo = hi = speedup
        p = 0.0 if d.mean() != 0 else 1.0
    else:
        se = sd / math.sqrt(n)
        t = stats.t.ppf(1 - alpha / 2, n - 1)
        lo, hi = math.exp(d.mean() - t * se), math.exp(d.mean() + t * se)
        p = float(2 * stats.t.sf(abs(d.mean() / se), n - 1))
    if lo > 1 and speedup >= 1 + min_effect:
        outcome = "faster"
    elif hi < 1 and 1 / speedup >= 1 + min_effect:
        outcome = "slower"
    else:
        outcome = "tie"
    return Verdict(outcome, ratio, lo, hi, p, n, n, True, median_ratio=mr)


def is_exact(df: pd.DataFrame) -> bool:
    """Whether a frame's points are compared exactly: every row simulated (SimGrid is
    deterministic); a frame mixing measurements in is never."""
    return bool(len(df) and "simulated" in df.columns
                and pd.to_numeric(df["simulated"], errors="coerce").fillna(0).astype(bool).all())


def _compare_exact(candidate, baseline, pairs: bool) -> Verdict:
    """A deterministic simulation's values: the ratio of medians decides (EXACT_TOL)."""
    a, b = _values(candidate), _values(baseline)
    if len(a) == 0 or len(b) == 0:
        return Verdict("insufficient", math.nan, math.nan, math.nan, math.nan, len(a), len(b),
                       pairs, exact=True)
    ratio = ratio_to_baseline(a, b)
    speedup = 1 / ratio
    outcome = ("faster" if speedup >= 1 + EXACT_TOL else
               "slower" if ratio >= 1 + EXACT_TOL else "tie")
    return Verdict(outcome, ratio, speedup, speedup, math.nan, len(a), len(b), pairs,
                   exact=True)


def _ties(a: np.ndarray, b: np.ndarray) -> bool:
    allv = np.concatenate([a, b])
    return len(np.unique(allv)) < len(allv)


# ------------------------------------------------------------------ best per point

BEST_COLUMNS = ("best", "evidence", "level", "ratio", "median_ratio", "paired", "ci_low", "ci_high", "p", "n",
                "fastest", "fastest_us", "best_us", "baseline_us", "algorithms",
                "oversubscribed")


def _cmp(cand, base, **kw) -> Verdict:
    """compare() on two series: paired over the launches they share when they are
    keyed by launch (dicts) and share at least MIN_PAIRS, else unpaired."""
    if isinstance(cand, dict) and isinstance(base, dict):
        common = [k for k in cand if k in base]
        whole = bool(common) and len(common) == len(cand) == len(base)
        if whole or len(common) >= kw.get("min_pairs", MIN_PAIRS):
            return compare([cand[k] for k in common], [base[k] for k in common], pairs=True,
                           **kw)
        cand, base = list(cand.values()), list(base.values())
    return compare(cand, base, **kw)


def holm(pvalues: dict) -> dict:
    """Holm's step-down adjusted p-values of a family {key: p}: the i-th smallest
    times (m - i + 1), made monotone, at most 1. Rejecting where the adjusted p is
    below α keeps the family-wise error at most α."""
    items = sorted(pvalues.items(), key=lambda kv: kv[1])
    m, out, running = len(items), {}, 0.0
    for i, (k, p) in enumerate(items):
        running = max(running, min(1.0, (m - i) * float(p)))
        out[k] = running
    return out


def spread(x) -> float:
    """A side's scatter over its repetitions: the median repetition over the fastest."""
    v = _values(x.values() if isinstance(x, dict) else x)
    return float(np.median(v) / v.min()) if len(v) else math.nan


def _median_load(x) -> float:
    v = np.asarray([float(t) for t in (x or []) if t is not None and math.isfinite(float(t))])
    return float(np.median(v)) if len(v) else math.nan


def unstable_reason(cand, base, cand_name: str = "candidate", baseline: str = "native",
                    cand_load=None, base_load=None) -> str:
    """Why an unpaired comparison of two sides measured in separate launches cannot
    conclude ('' when it can): a side scattering beyond UNSTABLE_SPREAD, or the two
    sides' launches under load averages more than LOAD_TOL apart."""
    for name, x in ((baseline, base), (cand_name, cand)):
        s = spread(x)
        if math.isfinite(s) and s > UNSTABLE_SPREAD:
            return (f"{name}'s median repetition {s:.1f}× its fastest, bound "
                    f"{UNSTABLE_SPREAD:g}×")
    lc, lb = _median_load(cand_load), _median_load(base_load)
    if math.isfinite(lc) and math.isfinite(lb) and abs(lc - lb) > LOAD_TOL:
        return (f"load average {lb:.1f} during {baseline}'s launches, {lc:.1f} during "
                f"{cand_name}'s, tolerance {LOAD_TOL:g}")
    return ""


def judge_point(samples: dict, baseline: str = "native", loads: dict | None = None,
                **kw) -> dict:
    """Every candidate at one point against the baseline, as a family: label ->
    Verdict. Unpaired comparisons whose repetitions scatter (unstable_reason) are
    `unstable`; the p-values of the candidates tested are corrected by Holm's method
    (a win that does not survive it is a tie). `loads`: label -> the load averages
    seen during its repetitions' launches (optional)."""
    loads = loads or {}
    verdicts = {k: _cmp(v, samples[baseline], **kw) for k, v in samples.items()
                if k != baseline}
    for k, v in verdicts.items():
        if v.paired or v.exact or v.outcome == "insufficient":
            continue
        why = unstable_reason(samples[k], samples[baseline], k, baseline, loads.get(k),
                              loads.get(baseline))
        if why:
            verdicts[k] = replace(v, outcome="unstable", note=why)
    tested = {k: v.p for k, v in verdicts.items()
              if not v.exact and v.outcome != "insufficient" and math.isfinite(v.p)}
    alpha = kw.get("alpha", ALPHA)
    for k, p_adj in holm(tested).items():
        v = verdicts[k]
        outcome, note = v.outcome, v.note
        if outcome in ("faster", "slower") and p_adj >= alpha:
            outcome = "tie"
            note = (f"within noise after {CORRECTION}'s correction over {len(tested)} "
                    "candidates")
        verdicts[k] = replace(v, outcome=outcome, note=note, p_holm=p_adj,
                              family=len(tested))
    return verdicts


def best_of_point(samples: dict, baseline: str = "native",
                  oversubscribed: bool = False, include_oversubscribed: bool = False,
                  loads: dict | None = None, **kw) -> dict:
    """The algorithm to use at one point, and why.

    `samples`: label -> per-repetition latencies (µs), a list, or a dict launch key ->
    latency (then algorithms measured in the same launches are compared paired).
    The result is the baseline unless an algorithm is faster than it with evidence
    (`judge_point`: `compare`, unstable points, Holm's correction over the point's
    candidates); among those the one with the smallest ratio (ratio_to_baseline).
    `ratio`, `ci_low`, `ci_high`: the choice's ratio to the baseline and its 95 %
    interval (1.0 when the baseline is kept). `fastest` is the algorithm with the
    lowest median latency (`fastest_us`), with no claim attached. Without the baseline
    at the point, the fastest
    median is compared with the runner-up instead. An oversubscribed point gives no
    conclusion (best None) unless include_oversubscribed."""
    samples = {k: v for k, v in samples.items()}
    vals = {k: _values(v.values() if isinstance(v, dict) else v) for k, v in samples.items()}
    meds = {k: float(np.median(v)) for k, v in vals.items() if len(v)}
    row = {c: None for c in BEST_COLUMNS}
    row["algorithms"] = len(meds)
    row["oversubscribed"] = bool(oversubscribed)
    if not meds:
        row["evidence"] = "no valid measurement"
        return row
    order = sorted(meds, key=lambda k: meds[k])
    row["fastest"], row["fastest_us"] = order[0], meds[order[0]]
    row["baseline_us"] = meds.get(baseline)
    if oversubscribed and not include_oversubscribed:
        row["evidence"] = "oversubscribed (processes share cores): no conclusion"
        row["level"] = "oversubscribed"
        return row
    if baseline in meds:
        verdicts = judge_point({k: samples[k] for k in order}, baseline, loads, **kw)
        by_estimate = sorted(verdicts, key=lambda k: verdicts[k].ratio
                             if math.isfinite(verdicts[k].ratio) else math.inf)
        faster = [k for k in by_estimate if verdicts[k].outcome == "faster"]
        if faster:
            best, v = faster[0], verdicts[faster[0]]
            lo, hi = v.ratio_ci
            row.update(best=best, evidence=v.text(baseline), level=v.level, ratio=v.ratio,
                       median_ratio=ratio_to_baseline(meds[best], meds[baseline]),
                       paired=v.paired,
                       ci_low=lo, ci_high=hi, p=v.p, n=v.n)
        else:
            row.update(best=baseline, ratio=1.0, median_ratio=1.0, paired=False)
            # the closest contender by the comparison's own estimate (paired or not)
            top = min(verdicts, key=lambda k: verdicts[k].ratio
                      if math.isfinite(verdicts[k].ratio) else math.inf, default=None)
            if top is None:
                row.update(evidence=f"only {baseline} measured", level="single")
            else:
                v = verdicts[top]
                why = {"tie": f"{v.note or 'within noise'}; ", "insufficient": "",
                       "slower": "significant; ", "faster": "",
                       "unstable": f"{UNSTABLE} ({v.note}); "}[v.outcome]
                detail = f"{why}{v.stats_text()}"
                if v.ratio < 1:
                    row.update(evidence=f"{baseline} kept: {top} measured "
                                        + ratio_text(v.ratio, baseline, detail))
                else:  # nothing measured faster: the closest
                    row.update(evidence=f"{baseline} kept; closest {top} "
                                        + ratio_text(v.ratio, baseline, detail))
                lo, hi = v.ratio_ci
                row.update(level="significant" if v.outcome == "slower" else v.level, n=v.n,
                           ci_low=lo, ci_high=hi, p=v.p)
        row["best_us"] = meds[row["best"]]
        return row
    # no baseline here: the fastest against the runner-up
    best = order[0]
    row.update(best=best, best_us=meds[best])
    if len(order) == 1:
        row.update(evidence="only algorithm measured", level="single")
        return row
    v = _cmp(samples[best], samples[order[1]], **kw)
    lo, hi = v.ratio_ci
    row.update(evidence=f"vs runner-up {order[1]}: {v.text(order[1])}", level=v.level, n=v.n,
               ci_low=lo, ci_high=hi, p=v.p)
    if v.outcome != "faster":
        row["evidence"] = (f"no {baseline} measured; {best} and {order[1]} "
                           f"{'tie' if v.outcome == 'tie' else 'not separable'} "
                           f"({v.text(order[1])})")
    return row


LAUNCH_KEYS = ("run_id", "unit_id", "round", "repetition")  # what identifies a launch


LOAD_COLUMNS = ("load1_before", "load1_after")  # the load average around each launch


def launch_load(df: pd.DataFrame):
    """The load seen during each row's launch: the larger of the 1-minute load
    averages read before and after it (NaN where not recorded)."""
    cols = [c for c in LOAD_COLUMNS if c in df.columns]
    if not cols:
        return pd.Series(math.nan, index=df.index)
    return df[cols].apply(pd.to_numeric, errors="coerce").max(axis=1)


def _points(df: pd.DataFrame, keys: list[str], label: str, value: str):
    """(key, rows, samples, loads) per point: samples maps each label to its
    latencies, keyed by launch (a dict) when the frame says which launch each row
    came from; loads each label to the load seen during its launches (launch_load)."""
    d = with_oversubscribed(df)
    d = d.assign(_load=launch_load(d).to_numpy())
    launch = [c for c in LAUNCH_KEYS if c in d.columns and c not in keys]
    if launch:
        d = d.assign(_launch=list(zip(*(d[c].astype(object).where(d[c].notna(), "")
                                         for c in launch))))
    for key, g in d.groupby(keys, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        samples, loads = {}, {}
        for k, h in g.groupby(label, sort=False):
            if launch and not h["_launch"].duplicated().any():
                samples[str(k)] = dict(zip(h["_launch"], h[value]))
            else:
                samples[str(k)] = list(h[value])
            loads[str(k)] = list(h["_load"])
        yield key, g, samples, loads


def versus_baseline(df: pd.DataFrame, keys: list[str], label: str = "label",
                    value: str = "median_us", baseline: str = "native",
                    include_oversubscribed: bool = False, **kw) -> pd.DataFrame:
    """The verdict of every algorithm against the baseline at every point: keys, label,
    outcome (faster/slower/tie/insufficient/unstable, or 'oversubscribed'; judge_point:
    Holm's correction over the point's candidates), ratio (time / the
    baseline's time, ratio_to_baseline: paired, the geometric mean of the per-launch
    ratios), paired and text."""
    rows = []
    for key, g, samples, loads in _points(df, keys, label, value):
        over = bool(g["oversubscribed"].any())
        if baseline not in samples:
            continue
        for k, verdict in judge_point(samples, baseline, loads, **kw).items():
            outcome = ("oversubscribed" if over and not include_oversubscribed
                       else verdict.outcome)
            rows.append({**dict(zip(keys, key)), label: k, "outcome": outcome,
                         "ratio": verdict.ratio, "paired": verdict.paired,
                         "text": verdict.text(baseline)})
    return pd.DataFrame(rows, columns=list(keys) + [label, "outcome", "ratio", "paired",
                                                    "text"])


def best_per_point(df: pd.DataFrame, keys: list[str], label: str = "label",
                   value: str = "median_us", baseline: str = "native",
                   include_oversubscribed: bool = False, **kw) -> pd.DataFrame:
    """`best_of_point` for every group of `keys` in a frame of repetitions (one row per
    stored measurement, `label` naming the algorithm, `value` its latency). Rows are
    keyed by their launch (LAUNCH_KEYS present in the frame) so that algorithms of the
    same launches are compared paired."""
    rows = []
    for key, g, samples, loads in _points(df, keys, label, value):
        row = dict(zip(keys, key))
        row.update(best_of_point(samples, baseline, bool(g["oversubscribed"].any()),
                                 include_oversubscribed, loads=loads, **kw))
        rows.append(row)
    return pd.DataFrame(rows, columns=list(keys) + list(BEST_COLUMNS))
