"""`colltune tune`: from a study's measurements, the rules (a `rules.RuleSet`) that
say which algorithm to run for every (collective, processes, size[, mapping]), and
how good those rules are.

The choice at a measured point (`choices`)
    Candidates are the target's (`CANDIDATES`): `colltune` picks among colltune's
    algorithms and `native`, `openmpi` among `ompi:*` and `native`, `mpich` among
    `mpich:*` and `native` (`native` there means "the library's own decision": an
    exporter writes the library's default for it). Every setting of an algorithm's
    parameters measured is a candidate of its own. The decision is
    `evidence.best_of_point` over the repetitions (one stored measurement per
    launch): `native` unless a candidate is faster than it beyond the spread of the
    repetitions (paired over launches where they shared them, else unpaired; at
    least a 3 % effect and a 95 % interval clear of 1). A study without `native` has no
    default: the fastest median wins, and the ratio to native is not computed.
    Oversubscribed points (evidence.oversubscribed) are left out unless asked for.

Rules from the choices (`build_rules`): the interpolation policy
    Sizes: at a measured process count, the measured sizes s1 < s2 < ... split at
    their geometric midpoints (floor(sqrt(s_i * s_i+1)); the arithmetic one next to
    size 0): each measured choice covers the sizes closer to its size on a log
    scale; the smallest size's choice extends down to 0 bytes, the largest's to no
    upper bound. Process counts: between two measured counts P1 < P2, each measured
    size keeps P1's choice a up to where P2's choice b overtakes it -- a's and b's
    medians interpolated linearly in log(time) over log(np) through the two counts
    (`np_switch`; where a median is missing, a holds up to P2 - 1) -- and b's from
    there; the largest count's rules extend to no upper bound, counts
    below the smallest take the smallest's rules (NP_MIN 1). Processes per node (a
    study with several layouts of a count): the same between two measured ppn, per
    (np, size) (`_ppn_between`). A library algorithm that
    runs at one process count only (Open MPI's two_proc allgather) is chosen for that
    count alone; the counts around it get the best of the other candidates. Adjacent
    size ranges with the same algorithm and parameters are merged, and so are adjacent
    process ranges whose size rules are the same.

Quality (`quality`, `cross_validate`)
    At every measured point: regret = the rules' choice's median latency / the
    fastest measured median (1 = the rules pick the fastest; 1.10 = 10 % slower than
    what was measurable), and the ratio to native = the choice's median / native's
    (colltune's one ratio, evidence.ratio_to_baseline: < 1, the rules beat the
    library's default). Per collective: the geometric mean and the worst point (largest
    regret, largest ratio to native). Cross-validated: the rules are built again without one
    measured size (every process count), evaluated at the left-out size; the same
    leaving one process count out. The in-sample regret of a point is above 1 only
    where a tie kept native or the fastest's advantage was within the noise; the
    cross-validated regret says how well the interpolation between measured points
    predicts.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from colltune.analysis import evidence
from colltune.analysis import load as load_analysis
from colltune.base.errors import ColltuneError, did_you_mean
from colltune.results import reader
from colltune.base.collectives import COLLECTIVES
from colltune.base.specs import is_lib_spec, parse_params
from colltune.rules.ruleset import TARGETS, LoadClass, Rule, RuleSet, make_params
from colltune.base.lazy import LazyModule
from colltune.base.units import fmt_size
from colltune.tuning.size_blind import one_choice_per_np

np = LazyModule("numpy")
pd = LazyModule("pandas")

BASELINE = "native"
LIBRARY_PREFIX = {"openmpi": "ompi:", "mpich": "mpich:"}
LIBRARY_LABEL = {"colltune": "colltune's algorithms", "openmpi": "Open MPI's algorithms (ompi:*)",
                 "mpich": "MPICH's algorithms (mpich:*)"}
MPI_KIND = {"openmpi": "openmpi", "mpich": "mpich"}
POLICY = ("native unless faster beyond the spread of the repetitions (evidence.py); sizes split "
          "at geometric midpoints, ends extend to 0 and no bound; between two measured process "
          "counts each size switches where the two choices' log-log interpolated times cross; "
          "process counts below the smallest and above the largest measured: native")
EVALUATIONS = ("in-sample", "leave-one-size-out", "leave-one-np-out", "rules file")


class TuneError(ColltuneError):
    """No rules can be made from what was asked; the message says why and what to do."""


def is_candidate(algorithm: str, target: str) -> bool:
    """Whether `algorithm` (a measurement's algorithm name) is a candidate of `target`."""
    a = str(algorithm)
    if a == BASELINE:
        return True
    if target == "colltune":
        return not is_lib_spec(a)
    return a.startswith(LIBRARY_PREFIX[target])


def check_target(target: str) -> str:
    if target not in TARGETS:
        raise TuneError(f"unknown target '{target}'{did_you_mean(target, TARGETS)} "
                        f"(valid: {', '.join(TARGETS)})")
    return target


# ------------------------------------------------------------------ loading


def read_frame(conn, study: str, round: int | None = None,
               include_simulated: bool = False) -> tuple[pd.DataFrame, int]:
    """The measurements of one round of a study (default: the latest), one row per
    stored measurement, with the launch (`unit_id`) each came from. TuneError when
    the study is unknown or has nothing stored."""
    names = reader.study_names(conn)
    if study not in names:
        hint = did_you_mean(study, names)
        raise TuneError(f"no study '{study}' in the database{hint}"
                        + (f" (studies: {', '.join(names)})" if names and not hint
                           else "" if names else " (it holds no study: run colltune sweep)"))
    sid = reader.study_id(conn, study)
    # simulated points (SimGrid) make no rules unless asked: never mixed with measurements
    rounds = reader.measured_rounds(conn, sid, include_simulated)
    if not rounds:
        n_sim = reader.simulated_count(conn, sid)
        if n_sim and not include_simulated:
            raise TuneError(f"study '{study}' has only simulated points ({n_sim}): rules from "
                            "a simulation need --include-simulated")
        raise TuneError(f"study '{study}' has no measurements stored (run colltune sweep "
                        f"first)")
    if round is None:
        round = rounds[-1]
    elif round not in rounds:
        raise TuneError(f"study '{study}' has no round {round} (rounds with measurements: "
                        f"{', '.join(map(str, rounds))})")
    return reader.round_frame(conn, sid, round, include_simulated), round


# ------------------------------------------------------------------ choices


def _label(algorithm: str, params: tuple) -> str:
    return Rule("bcast", 1, None, 0, None, algorithm, params).spec


def classes_from_frame(df: pd.DataFrame) -> list[LoadClass]:
    """rules.LoadClass per level, quietest first: index ranges on probe_us split at the
    geometric midpoints of adjacent levels' median probes (analysis.load.class_bounds)."""
    return [LoadClass(name, lo, hi) for name, lo, hi in load_analysis.class_bounds(df)]


@dataclass
class Prepared:
    """The candidates' rows of a frame, ready for decisions."""

    frame: pd.DataFrame          # one row per measurement: keys, label, median_us, launch keys
    keys: list[str]              # collective, [mapping,] [load_level,] [ppn,] np, size
    target: str
    has_native: bool
    notes: list[str] = field(default_factory=list)  # what the user should know
    excluded_oversubscribed: int = 0                # points left out
    load_classes: list = field(default_factory=list)  # rules.LoadClass, quietest first
    exact: bool = False          # every row simulated: deterministic, compared exactly
    left_out: dict = field(default_factory=dict)  # process count -> why no rule rests on it


def measured_meta(p: "Prepared") -> dict[str, str]:
    """The rules file's header lines on what the rules rest on: the process counts
    measured (those the choices come from) and those left out, with why."""
    nps = sorted({int(x) for x in p.frame["np"]}) if len(p.frame) else []
    meta = {"measured processes": ", ".join(map(str, nps)) or "none"}
    if p.left_out:
        meta["left out"] = "; ".join(f"np {n} ({why})" for n, why in sorted(p.left_out.items()))
    return meta


def prepare(frame: pd.DataFrame, target: str, collectives=None,
            include_oversubscribed: bool = False) -> Prepared:
    """Keep the target's candidates with a valid latency; TuneError when nothing is left."""
    check_target(target)
    if frame is None or frame.empty:
        raise TuneError("the study has no measurements (run colltune sweep first)")
    d = frame.copy()
    if collectives:
        known = sorted(set(d["collective"]))
        for c in collectives:
            if c not in known:
                raise TuneError(f"the study did not measure '{c}'{did_you_mean(c, known)} "
                                f"(it measured: {', '.join(known)})")
        d = d[d["collective"].isin(list(collectives))]
    d = d[d["collective"].isin(COLLECTIVES)]
    if d.empty:
        raise TuneError("the study measured no collective a rules file covers "
                        f"({', '.join(COLLECTIVES)})")
    if target in MPI_KIND and "mpi_kind" in d.columns:
        kinds = sorted({str(k) for k in d["mpi_kind"].dropna()})
        if kinds and MPI_KIND[target] not in kinds:
            raise TuneError(f"--target {target}: the study was measured with "
                            f"{', '.join(kinds)}, not {target}; its rules need a study measured "
                            f"with {target} (colltune sweep --mpi {target} with "
                            f"algorithms = [\"{LIBRARY_PREFIX[target]}all\", \"native\"])")
    lat = pd.to_numeric(d["median_us"], errors="coerce")
    ok = lat.notna() & (lat > 0)
    if "valid" in d.columns:
        ok &= pd.to_numeric(d["valid"], errors="coerce").fillna(1) != 0
    d = d[ok].assign(median_us=lat[ok])
    cand = d["algorithm"].map(lambda a: is_candidate(a, target))
    d = d[cand]
    others = set(d["algorithm"]) - {BASELINE}
    if not others:
        sweep = {"colltune": 'algorithms = ["ours", "native"]',
                 "openmpi": 'algorithms = ["ompi:all", "native"] (under Open MPI)',
                 "mpich": 'algorithms = ["mpich:all", "native"] (under MPICH)'}[target]
        raise TuneError(f"--target {target}: the study has no measurements of "
                        f"{LIBRARY_LABEL[target]}"
                        + (" (only native)" if len(d) else "")
                        + f"; run a sweep with {sweep}")
    d = evidence.with_oversubscribed(d)
    mapping = ("mapping" in d.columns and d["mapping"].fillna("").nunique() > 1)
    noded = False
    if "ppn" in d.columns:  # several layouts (nodes x processes per node) of one count
        ppn = pd.to_numeric(d["ppn"], errors="coerce")
        one_node = (pd.to_numeric(d["nodes"], errors="coerce").fillna(1) == 1
                    if "nodes" in d.columns else True)
        d = d.assign(ppn=ppn.where(ppn.notna() | ~one_node, d["np"]))
        noded = bool(d["ppn"].notna().all()
                     and (d.groupby(["collective", "np"])["ppn"].nunique() > 1).any())
    loaded = ("load_level" in d.columns and d["load_level"].notna().any()
              and d["load_level"].dropna().nunique() > 1)
    notes: list[str] = []
    classes = []
    if loaded:
        unlabelled = d["load_level"].isna() | d["probe_us"].isna()
        if unlabelled.any():
            notes.append(f"{int(unlabelled.sum())} measurement(s) without a load level or probe "
                         "left out: the study's load levels are a decision dimension")
            d = d[~unlabelled]
        classes = classes_from_frame(d)
        notes.append("load classes (probe µs): " + "; ".join(
            f"{c.name} {c.lo:g}..{'' if c.hi is None else f'{c.hi:g}'}" for c in classes))
    keys = (["collective"] + (["mapping"] if mapping else [])
            + (["load_level"] if loaded else []) + (["ppn"] if noded else []) + ["np", "size"])
    if noded:
        notes.append("processes per node: " + ", ".join(
            map(str, sorted({int(x) for x in d["ppn"]}))) + " (rules per ppn range, ppn=)")
    over = d[d["oversubscribed"]]
    n_over = 0
    left_out: dict = {}
    if len(over):
        pts = over.drop_duplicates(keys)
        n_over = len(pts)
        nps = sorted({int(x) for x in pts["np"]})
        if include_oversubscribed:
            notes.append(f"{n_over} oversubscribed point(s) (np {', '.join(map(str, nps))}) "
                         "kept as asked: their choices rest on time-sliced processes")
        else:
            d = d[~d["oversubscribed"]]
            left_out = {n: "oversubscribed, more processes than cores"
                        for n in nps if n not in set(d["np"].astype(int))}
            notes.append(f"{n_over} oversubscribed point(s) (np {', '.join(map(str, nps))}: "
                         "more processes than cores) left out: they drive no choice "
                         "(--include-oversubscribed keeps them)")
            if d.empty:
                raise TuneError("every point of the study is oversubscribed; nothing to tune "
                                "from (--include-oversubscribed uses them anyway)")
    d = d.assign(param_key=d["params"].map(lambda v: make_params(parse_params(v, numbers=True)))
                 if "params" in d.columns
                 else [()] * len(d))
    d["label"] = [_label(a, p) for a, p in zip(d["algorithm"], d["param_key"])]
    for c in ("np", "size") + (("ppn",) if noded else ()):
        d[c] = d[c].astype(int)
    if mapping:
        d["mapping"] = d["mapping"].fillna("").astype(str)
    has_native = bool((d["algorithm"] == BASELINE).any())
    if not has_native:
        notes.append("the study has no native (the library's default): no ratio to native "
                     "to report, regret only; the fastest median wins each point")
    # candidates missing at some points
    per_point = d.groupby(keys)["label"].nunique()
    per_coll = d.groupby("collective")["label"].nunique()
    short = [k for k, n in per_point.items() if n < per_coll[k[0]]]
    if short:
        ex = short[0]
        notes.append(f"at {len(short)} of {len(per_point)} point(s) some candidates were not "
                     f"measured (e.g. {', '.join(map(str, ex))}): chosen among those measured")
    if has_native:
        no_nat = d.groupby(keys)["algorithm"].apply(lambda s: BASELINE not in set(s))
        if no_nat.any():
            notes.append(f"{int(no_nat.sum())} point(s) without native: the fastest median wins "
                         "there and no ratio to native is computed")
    exact = evidence.is_exact(d)
    if exact:
        notes.append("simulated points (deterministic): a candidate is chosen when it is "
                     f"faster than native by at least {100 * evidence.EXACT_TOL:g} % "
                     "(evidence.py, exact comparisons)")
    return Prepared(d, keys, target, has_native, notes, n_over, classes, exact, left_out)


def np_exact(collective: str, algorithm: str) -> int | None:
    """The only process count a library algorithm runs at (Open MPI's two_proc
    allgather: 2), where the library errors at any other; None for the rest."""
    a = str(algorithm)
    if not is_lib_spec(a):
        return None  # colltune's algorithms fall back by themselves (registry)
    try:
        from colltune.mpi import libalgos

        library, name = a.split(":", 1)
        return libalgos.find(library, collective, name).np_exact
    except (ImportError, ValueError):
        return None


def choices(p: Prepared) -> pd.DataFrame:
    """One row per measured point: keys, the chosen label (with algorithm and
    params), the evidence, the median of every candidate (dict label -> µs), and
    `general`: the choice among the candidates that run at every process count (the
    same label unless the choice runs at this count only), for the counts the point's
    rules extend to."""
    d = p.frame
    best = evidence.best_per_point(d, p.keys, label="label", value="median_us",
                                   baseline=BASELINE, include_oversubscribed=True,
                                   exact=p.exact)
    restricted = {lab for lab, c, a in zip(d["label"], d["collective"], d["algorithm"])
                  if np_exact(c, a) is not None}
    if restricted:
        gen = evidence.best_per_point(d[~d["label"].isin(restricted)], p.keys, label="label",
                                      value="median_us", baseline=BASELINE,
                                      include_oversubscribed=True, exact=p.exact)
        best = best.merge(gen[p.keys + ["best"]].rename(columns={"best": "general"}),
                          on=p.keys, how="left")
        best["general"] = best["general"].where(best["general"].notna(), best["best"])
    else:
        best["general"] = best["best"]
    meds = {k if isinstance(k, tuple) else (k,): g.groupby("label")["median_us"].median().to_dict()
            for k, g in d.groupby(p.keys, sort=True)}
    info = d.drop_duplicates("label").set_index("label")
    best = best[best["best"].notna()].copy()
    for col, src in (("algorithm", "best"), ("general_algorithm", "general")):
        best[col] = [info.loc[b, "algorithm"] for b in best[src]]
    for col, src in (("params", "best"), ("general_params", "general")):
        best[col] = [info.loc[b, "param_key"] for b in best[src]]
    best["medians"] = [meds[tuple(r)] for r in best[p.keys].itertuples(index=False, name=None)]
    return best.reset_index(drop=True)


# ------------------------------------------------------------------ rules


def size_split(lo: int, hi: int) -> int:
    """The last size that belongs to `lo`'s choice between measured sizes lo < hi:
    the geometric midpoint (arithmetic next to 0), at least lo, below hi."""
    mid = math.isqrt(lo * hi) if lo > 0 else (lo + hi) // 2
    return max(lo, min(mid, hi - 1))


def _size_rules(rows: list[tuple[int, str, tuple]]) -> list[tuple[int, int | None, str, tuple]]:
    """[(size, algorithm, params)] sorted by size -> merged [(min, max, algorithm, params)]."""
    out: list[list] = []
    for i, (s, a, prm) in enumerate(rows):
        lo = 0 if i == 0 else size_split(rows[i - 1][0], s) + 1
        hi = None if i == len(rows) - 1 else size_split(s, rows[i + 1][0])
        if out and out[-1][2] == a and out[-1][3] == prm:
            out[-1][1] = hi
        else:
            out.append([lo, hi, a, prm])
    return [tuple(x) for x in out]


def np_switch(p1: int, p2: int, a: tuple, b: tuple) -> int:
    """The first process count between measured counts p1 < p2 that takes p2's choice
    b over p1's choice a: where their times, interpolated linearly in log(time) over
    log(np) through the two counts' medians (a = (time at p1, time at p2), b the same),
    cross; p2 itself (a holds up to the next measured count) where a time is missing.
    Within [p1 + 1, p2]."""
    vals = a + b
    if len(vals) != 4 or not all(v is not None and math.isfinite(v) and v > 0 for v in vals):
        return p2
    d1 = math.log(a[0]) - math.log(b[0])   # <= 0 where a is the faster at p1
    d2 = math.log(a[1]) - math.log(b[1])   # >= 0 where b is the faster at p2
    f = min(1.0, max(0.0, d1 / (d1 - d2))) if d1 != d2 else 0.5
    x = math.exp(math.log(p1) + f * (math.log(p2) - math.log(p1)))
    return max(p1 + 1, min(p2, math.ceil(x - 1e-9)))


def _np_between(p1: int, sized1: list, general1: list, p2: int, sized2: list,
                general2: list) -> list:
    """The size rules for the process counts strictly between measured p1 < p2
    [(np_min, np_max, size rules)]: per size measured at either count, p1's choice up
    to the counts' crossover (np_switch), p2's from it. A size one count did not
    measure takes that count's rule for it (and p1's choice up to p2 - 1)."""
    if p2 - p1 < 2:
        return []

    def at(sized, general, size):
        for s, lab, alg, prm, med in sized:
            if s == size:
                return lab, alg, prm, med or {}
        for lo, hi, alg, prm in general:
            if lo <= size and (hi is None or size <= hi):
                return None, alg, prm, {}
        raise AssertionError(f"no rule for size {size}")  # _size_rules covers every size

    rows = []  # (size, a's algorithm and params, b's, first count taking b)
    for size in sorted({s for s, *_ in sized1} | {s for s, *_ in sized2}):
        la, aa, pa, m1 = at(sized1, general1, size)
        lb, ab, pb, m2 = at(sized2, general2, size)
        sw = p2 if (aa, pa) == (ab, pb) else np_switch(
            p1, p2, (m1.get(la), m2.get(la)), (m1.get(lb), m2.get(lb)))
        rows.append((size, (aa, pa), (ab, pb), sw))
    out = []
    edges = sorted({p1 + 1, *(sw for *_, sw in rows if sw < p2)})
    for j, lo in enumerate(edges):
        hi = edges[j + 1] - 1 if j + 1 < len(edges) else p2 - 1
        out.append((lo, hi, _size_rules([(size, *(a if lo < sw else b))
                                         for size, a, b, sw in rows])))
    return out


def _np_size_rules(g: pd.DataFrame) -> list[tuple]:
    """One group's choices (one collective, [mapping, load, ppn]) -> merged
    [(np_min, np_max, size_min, size_max, algorithm, params)] by the module's policy."""
    per_np = []
    for np_, h in g.groupby("np", sort=True):
        h = h.sort_values("size")
        exact = _size_rules(list(zip(h["size"].astype(int), h["algorithm"], h["params"])))
        general = exact
        cols = ("best", "algorithm", "params")
        if "general_algorithm" in h.columns:
            general = _size_rules(list(zip(h["size"].astype(int), h["general_algorithm"],
                                           h["general_params"])))
            cols = ("general", "general_algorithm", "general_params")
        sized = [(int(r["size"]), r.get(cols[0]), r[cols[1]], r[cols[2]], r.get("medians"))
                 for _, r in h.iterrows()]
        per_np.append((int(np_), exact, general, sized))
    spans: list[tuple[int, int | None, list]] = []  # (np_min, np_max, size rules)
    measured = ", ".join(str(n) for n, *_ in per_np)
    for i, (np_, exact, general, sized) in enumerate(per_np):
        if i == 0 and np_ > 1:  # not measured: the library's own decision
            spans.append((1, np_ - 1, [(0, None, BASELINE, (),
                                        f"np below {np_} not measured (measured {measured}) "
                                        "so native")]))
        spans.append((np_, np_, exact))
        if i == len(per_np) - 1:
            spans.append((np_ + 1, None, [(0, None, BASELINE, (),
                                           f"np above {np_} not measured (measured "
                                           f"{measured}) so native")]))
        else:
            nxt = per_np[i + 1]
            spans.extend(_np_between(np_, sized, general, nxt[0], nxt[3], nxt[2]))
    merged: list[list] = []  # [np_min, np_max, size rules]
    for lo, hi, srules in spans:
        if merged and [r[:4] for r in merged[-1][2]] == [r[:4] for r in srules]:
            if [r[4:] for r in merged[-1][2]] != [r[4:] for r in srules]:
                # native measured at a count and beyond it: one rule, resting on that count
                merged[-1][2] = [r[:4] for r in srules]
            merged[-1][1] = hi
        else:
            merged.append([lo, hi, srules])
    return [(lo, hi) + tuple(r) + (("",) if len(r) == 4 else ())
            for lo, hi, srules in merged for r in srules]


def _ppn_between(q1: int, g1: pd.DataFrame, q2: int, g2: pd.DataFrame) -> list:
    """The choices for the ppn strictly between measured layouts q1 < q2
    [(ppn_min, ppn_max, choices)]: per (np, size) measured in both, q1's row up to
    where q2's choice overtakes it (np_switch over log ppn), q2's row from there; a
    point q1 alone measured keeps q1's row, one q2 alone measured waits for q2."""
    if q2 - q1 < 2:
        return []
    lab = "general" if "general" in g1.columns else "best"
    alg = ("general_algorithm", "general_params") if "general_algorithm" in g1.columns \
        else ("algorithm", "params")
    rows2 = {(int(r["np"]), int(r["size"])): r for _, r in g2.iterrows()}
    pts = []  # (row at q1, row at q2 or None, first ppn taking the q2 row)
    for _, r1 in g1.iterrows():
        r2 = rows2.get((int(r1["np"]), int(r1["size"])))
        sw = q2
        if r2 is not None and (r1[alg[0]], r1[alg[1]]) != (r2[alg[0]], r2[alg[1]]):
            m1, m2 = r1.get("medians") or {}, r2.get("medians") or {}
            la, lb = r1.get(lab), r2.get(lab)
            sw = np_switch(q1, q2, (m1.get(la), m2.get(la)), (m1.get(lb), m2.get(lb)))
        pts.append((r1, r2, sw))
    out = []
    edges = sorted({q1 + 1, *(sw for *_, sw in pts if sw < q2)})
    for j, lo in enumerate(edges):
        hi = edges[j + 1] - 1 if j + 1 < len(edges) else q2 - 1
        out.append((lo, hi, pd.DataFrame([r1 if lo < sw else r2 for r1, r2, sw in pts])))
    return out


def build_rules(ch: pd.DataFrame, target: str, keys: list[str],
                meta: dict | None = None, load_classes=None) -> RuleSet:
    """The decision table from per-point choices (`choices`), by the module's policy;
    with a load dimension (`load_level` in keys), one table per load class."""
    rules: list[Rule] = []
    mapped = "mapping" in keys
    loaded = "load_level" in keys
    noded = "ppn" in keys
    groups = (["collective"] + (["mapping"] if mapped else []) + (["load_level"] if loaded else [])
              + (["ppn"] if noded else []))
    order = {c: i for i, c in enumerate(COLLECTIVES)}
    lorder = {c.name: i for i, c in enumerate(load_classes or [])}
    li = groups.index("load_level") if loaded else None
    if target == "colltune":
        ch = one_choice_per_np(ch, groups)

    def sort_key(kv):
        k = kv[0]
        return ((order.get(k[0], 99),) + ((str(k[1]),) if mapped else ())
                + ((lorder.get(k[li], 99), str(k[li])) if loaded else ())
                + ((int(k[-1]),) if noded else ()))

    def emit(nsr: list[tuple], gkey: tuple, ppn) -> None:
        for lo, hi, smin, smax, a, prm, note in nsr:
            rules.append(Rule(gkey[0], lo, hi, smin, smax, a, prm,
                              gkey[1] if mapped else None,
                              str(gkey[li]) if loaded else None, ppn=ppn, note=note))

    groups_sorted = sorted(ch.groupby(groups, sort=True), key=sort_key)
    if not noded:
        for gkey, g in groups_sorted:
            emit(_np_size_rules(g), gkey, None)
    # a measured ppn's rules hold at it (the first from 1, the last with no bound); between
    # two measured ppn each (np, size) switches where the two layouts' choices' times cross
    # (_ppn_between); adjacent ppn ranges with the same rules merge
    by_ppn: dict = {}
    for gkey, g in groups_sorted if noded else ():
        by_ppn.setdefault(tuple(gkey[:-1]), []).append((int(gkey[-1]), g, gkey))
    for layouts in by_ppn.values():
        parts: list[list] = []  # [ppn_min, ppn_max, np/size rules]
        for i, (q, g, _) in enumerate(layouts):
            last = i == len(layouts) - 1
            pieces = [(1 if i == 0 else q, None if last else q, g)]
            if not last:
                pieces += _ppn_between(q, g, *layouts[i + 1][:2])
            for lo, hi, part in pieces:
                nsr = _np_size_rules(part)
                if parts and parts[-1][2] == nsr:
                    parts[-1][1] = hi
                else:
                    parts.append([lo, hi, nsr])
        for lo, hi, nsr in parts:
            emit(nsr, layouts[0][2], (lo, hi))
    return RuleSet(target, rules, dict(meta or {}), list(load_classes or []) if loaded else [])


def select(frame: pd.DataFrame, target: str, collectives=None,
           include_oversubscribed: bool = False, meta: dict | None = None) -> RuleSet:
    """The rules for `target` from a frame of measurements (module docstring)."""
    p = prepare(frame, target, collectives, include_oversubscribed)
    return build_rules(choices(p), target, p.keys,
                       {"policy": POLICY, **measured_meta(p), **(meta or {})}, p.load_classes)


# ------------------------------------------------------------------ quality


def evaluate(ch: pd.DataFrame, rs: RuleSet, keys: list[str]) -> pd.DataFrame:
    """Per point of `ch` (choices with medians): what the rules pick there, its
    regret against the fastest measured median and its ratio to native (the one ratio,
    evidence.ratio_to_baseline: chosen / native, below 1 faster than the default)."""
    rows = []
    for r in ch.to_dict("records"):
        meds = r["medians"]
        rule = rs.lookup(r["collective"], int(r["np"]), int(r["size"]), r.get("mapping"),
                         r.get("load_level"), int(r["ppn"]) if "ppn" in r else None)
        chosen = rule.spec if rule is not None else None
        fastest = min(meds, key=meds.get)
        sel = meds.get(chosen) if chosen is not None else None
        nat = meds.get(BASELINE)
        rows.append({**{k: r[k] for k in keys}, "chosen": chosen, "measured_best": r["best"],
                     "fastest": fastest, "chosen_us": sel, "fastest_us": meds[fastest],
                     "native_us": nat,
                     "regret": sel / meds[fastest] if sel else math.nan,
                     "vs_native": evidence.ratio_to_baseline(sel, nat) if sel and nat else math.nan})
    return pd.DataFrame(rows, columns=keys + ["chosen", "measured_best", "fastest", "chosen_us",
                                              "fastest_us", "native_us", "regret", "vs_native"])


def _gmean(v: pd.Series) -> float:
    v = pd.to_numeric(v, errors="coerce").dropna()
    v = v[v > 0]
    return float(np.exp(np.log(v).mean())) if len(v) else math.nan


def summarize(points: pd.DataFrame, evaluation: str, keys: list[str]) -> pd.DataFrame:
    """Per collective: points, geometric mean and worst of the regret and of the ratio
    to native (worst = largest: the choice that beats native least or loses most)."""
    rows = []
    for coll, g in points.groupby("collective", sort=False):
        ok = g[g["regret"].notna()]
        row = {"collective": coll, "evaluation": evaluation, "points": len(g),
               "unmeasured": int(g["regret"].isna().sum()),
               "regret_gmean": _gmean(ok["regret"]), "regret_worst": math.nan,
               "regret_worst_at": None, "vs_native_gmean": _gmean(ok["vs_native"]),
               "vs_native_worst": math.nan, "vs_native_worst_at": None}
        if len(ok):
            w = ok.loc[ok["regret"].idxmax()]
            row.update(regret_worst=float(w["regret"]), regret_worst_at=_at(w, keys))
        gok = ok[ok["vs_native"].notna()]
        if len(gok):
            w = gok.loc[gok["vs_native"].idxmax()]
            row.update(vs_native_worst=float(w["vs_native"]), vs_native_worst_at=_at(w, keys))
        rows.append(row)
    rows.sort(key=lambda r: COLLECTIVES.index(r["collective"]))
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


SUMMARY_COLUMNS = ["collective", "evaluation", "points", "unmeasured", "regret_gmean",
                   "regret_worst", "regret_worst_at", "vs_native_gmean", "vs_native_worst",
                   "vs_native_worst_at"]


def weighted(points: pd.DataFrame, calls, evaluation: str = "profile-weighted") -> pd.DataFrame:
    """Per collective: the regret and the ratio to native weighted by how often an
    application calls each size (`calls`: (collective, np, size, count) tuples, e.g.
    from the interposition library's profile, `colltune profile`). Each call counts for
    the measured point whose rules cover it (the interpolation policy above: the
    largest measured process count not above it, else the smallest; the measured size
    whose geometric-midpoint range holds it). Calls of a collective the points do not
    have are not counted; `points` is the number of measured points that got calls."""
    rows = []
    ok = points[points["regret"].notna()]
    for coll, g in ok.groupby("collective", sort=False):
        nps, sizes = sorted(set(g["np"])), sorted(set(g["size"]))
        weight: dict[tuple[int, int], float] = {}
        n_calls = 0
        for c, np_, size, count in calls:
            if c != coll or count <= 0:
                continue
            pn = max((n for n in nps if n <= np_), default=nps[0])
            ps = next((a for a, b in zip(sizes, sizes[1:]) if size <= size_split(a, b)),
                      sizes[-1])
            weight[(pn, ps)] = weight.get((pn, ps), 0.0) + count
            n_calls += count
        if not n_calls:
            continue
        w = np.array([weight.get((int(r.np), int(r.size)), 0.0) for r in g.itertuples()])
        # a point measured under several mappings shares its calls among them
        per = g.groupby(["np", "size"])["regret"].transform("size").to_numpy()
        w = w / per
        row = {"collective": coll, "evaluation": evaluation, "points": int((w > 0).sum()),
               "unmeasured": 0, "regret_gmean": _wgmean(g["regret"], w),
               "regret_worst": math.nan, "regret_worst_at": None,
               "vs_native_gmean": _wgmean(g["vs_native"], w), "vs_native_worst": math.nan,
               "vs_native_worst_at": None, "calls": n_calls}
        used = g[w > 0]
        if len(used):
            row.update(regret_worst=float(used["regret"].max()))
            if used["vs_native"].notna().any():
                row.update(vs_native_worst=float(used["vs_native"].max()))
        rows.append(row)
    rows.sort(key=lambda r: COLLECTIVES.index(r["collective"]))
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS + ["calls"])


def _wgmean(v: pd.Series, w: np.ndarray) -> float:
    v = pd.to_numeric(v, errors="coerce").to_numpy(dtype=float)
    keep = np.isfinite(v) & (v > 0) & (w > 0)
    if not keep.any():
        return math.nan
    return float(np.exp(np.average(np.log(v[keep]), weights=w[keep])))


def _at(row, keys: list[str]) -> str:

    parts = [f"np={int(row['np'])}", fmt_size(int(row["size"]))]
    if "mapping" in keys:
        parts.append(str(row["mapping"]))
    if "load_level" in keys:
        parts.append(f"load {row['load_level']}")
    if "ppn" in keys:
        parts.append(f"ppn {int(row['ppn'])}")
    return " ".join(parts)


def cross_validate(ch: pd.DataFrame, target: str, keys: list[str]) -> dict[str, pd.DataFrame]:
    """Leave one size out and leave one process count out (per collective[, mapping]):
    the rules built without the left-out points, evaluated on them. A collective
    measured at one size (or one count) has no such evaluation (no rows)."""
    out = {}
    for evaluation, col in (("leave-one-size-out", "size"), ("leave-one-np-out", "np")):
        parts = []
        for coll, g in ch.groupby("collective", sort=False):
            values = sorted(set(g[col]))
            if len(values) < 2:
                continue
            for v in values:
                train, test = g[g[col] != v], g[g[col] == v]
                rs = build_rules(train, target, keys)
                parts.append(evaluate(test, rs, keys))
        out[evaluation] = (pd.concat(parts, ignore_index=True) if parts
                           else evaluate(ch.iloc[0:0], RuleSet(target, []), keys))
    return out


@dataclass
class Tuning:
    """Everything `colltune tune` computes: the rules, the per-point evaluation of
    each kind, the summary per collective and evaluation, and the notes."""

    rules: RuleSet
    choices: pd.DataFrame
    points: dict[str, pd.DataFrame]  # evaluation -> per point
    summary: pd.DataFrame
    notes: list[str]
    keys: list[str]
    has_native: bool

    def to_dict(self) -> dict:
        def clean(df: pd.DataFrame) -> list[dict]:
            return json.loads(df.to_json(orient="records"))

        return {"target": self.rules.target, "has_native": self.has_native,
                "notes": self.notes, "summary": clean(self.summary),
                "points": {k: clean(v) for k, v in self.points.items()}}


def tune(frame: pd.DataFrame, target: str, collectives=None,
         include_oversubscribed: bool = False, meta: dict | None = None) -> Tuning:
    """select + quality in-sample + cross-validation: what `colltune tune` reports."""
    p = prepare(frame, target, collectives, include_oversubscribed)
    ch = choices(p)
    if ch.empty:
        raise TuneError("no point of the study has a valid measurement to choose from")
    rs = build_rules(ch, target, p.keys, {"policy": POLICY, **measured_meta(p), **(meta or {})},
                     p.load_classes)
    points = {"in-sample": evaluate(ch, rs, p.keys)}
    points.update(cross_validate(ch, target, p.keys))
    summary = pd.concat([summarize(points[e], e, p.keys) for e in EVALUATIONS
                         if e in points and len(points[e])],
                        ignore_index=True)
    summary = summary.sort_values(
        ["collective", "evaluation"], key=lambda s: s.map(
            {**{c: i for i, c in enumerate(COLLECTIVES)},
             **{e: i for i, e in enumerate(EVALUATIONS)}}), kind="stable").reset_index(drop=True)
    notes = list(p.notes)
    missing = [c for c in sorted(set(ch["collective"]), key=COLLECTIVES.index)
               if not len(points["leave-one-size-out"])
               or c not in set(points["leave-one-size-out"]["collective"])]
    if missing:
        notes.append(f"no leave-one-size-out figure for {', '.join(missing)}: one size measured")
    missing = [c for c in sorted(set(ch["collective"]), key=COLLECTIVES.index)
               if not len(points["leave-one-np-out"])
               or c not in set(points["leave-one-np-out"]["collective"])]
    if missing:
        notes.append(f"no leave-one-np-out figure for {', '.join(missing)}: one process count "
                     "measured")
    return Tuning(rs, ch, points, summary, notes, p.keys, p.has_native)


def rules_notes(rs: RuleSet, frame: pd.DataFrame) -> list[str]:
    """What to know before evaluating a rules file against a study: TuneError when its
    target's library is not the study's; notes when the file was made from another
    library version or names algorithms the study did not measure."""
    notes = []
    studied = sorted({f"{k} {v}" for k, v in zip(frame.get("mpi_kind", []),
                                                  frame.get("mpi_version", []))
                      if isinstance(k, str)})
    kinds = sorted({s.split()[0] for s in studied})
    if rs.target in MPI_KIND and kinds and MPI_KIND[rs.target] not in kinds:
        raise TuneError(f"the rules are for {rs.target} (target {rs.target}) but the study was "
                        f"measured with {', '.join(kinds)}: they cannot be evaluated on it")
    made = rs.meta.get("mpi")
    if made and studied and made != "; ".join(studied):
        notes.append(f"the rules were made from measurements with {made}, the study was "
                     f"measured with {'; '.join(studied)}: library algorithms may be numbered "
                     "or named differently in another version")
    measured = set(frame["algorithm"].astype(str)) if len(frame) else set()
    unknown = sorted({r.algorithm for r in rs.rules} - measured)
    if unknown:
        notes.append(f"the rules name algorithms the study did not measure "
                     f"({', '.join(unknown)}): their points count as unmeasured")
    return notes


def quality(frame: pd.DataFrame, rs: RuleSet, collectives=None,
            include_oversubscribed: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Any rule set (e.g. one read back from a file) against a frame of measurements:
    per point and per collective (regret, ratio to native)."""
    p = prepare(frame, rs.target, collectives, include_oversubscribed)
    ch = choices(p)
    pts = evaluate(ch, rs, p.keys)
    return pts, summarize(pts, "rules file", p.keys)


CROSS_VALIDATIONS = {"leave-one-size-out": ("size", "a size"),
                     "leave-one-np-out": ("np", "a process count")}
NO_GAIN = "every choice is native: no gain"
VS_NATIVE_COLUMNS = ("vs_native_gmean", "vs_native_worst", "vs_native_worst_at")


def _same_choices(a: pd.DataFrame, b: pd.DataFrame, keys: list[str]) -> bool:
    """Whether two per-point evaluations choose the same at the same points."""
    if len(a) != len(b):
        return False
    k = [c for c in keys if c in a.columns and c in b.columns]
    x = a.sort_values(k)[k + ["chosen"]].astype(str).reset_index(drop=True)
    y = b.sort_values(k)[k + ["chosen"]].astype(str).reset_index(drop=True)
    return x.equals(y)


def quality_view(summary: pd.DataFrame, points: dict[str, pd.DataFrame] | None = None,
                 has_native: bool = True,
                 keys: list[str] | None = None) -> tuple[pd.DataFrame, list[str]]:
    """The quality summary as the terminal and the report show it, and the notes that go
    under it: an evaluation that chooses at every point what in-sample chooses (so its
    numbers are in-sample's) is one row, "in-sample = leave-one-size-out", with a note
    saying why; the ratios to native formatted as everywhere (evidence.fmt_ratio); a
    collective whose every choice is native shows NO_GAIN instead of ratios of 1; the worst regret's point only where it is worse than 1;
    a column with no value in any row is left out (named in a note where it is the
    ratio to native). `points`: evaluation -> per point (Tuning.points, or {"rules file": ...})."""
    points = points or {}
    keys = keys or ["np", "size"]
    base = next((points[e] for e in ("in-sample", "rules file") if e in points), None)
    native_only: set[str] = set()
    if base is not None and len(base) and has_native:
        for coll, g in base.groupby("collective", sort=False):
            if (g["chosen"].astype(str) == BASELINE).all():
                native_only.add(coll)
    d = summary.copy().astype(object)
    merged: dict[str, list[str]] = {}  # evaluation -> collectives that coincide
    drop = []
    if "in-sample" in points:
        ins = points["in-sample"]
        for i, r in d.iterrows():
            e = r["evaluation"]
            if e not in CROSS_VALIDATIONS or e not in points:
                continue
            c = r["collective"]
            cv = points[e]
            if _same_choices(ins[ins["collective"] == c], cv[cv["collective"] == c], keys):
                drop.append(i)
                merged.setdefault(e, []).append(c)
                d.loc[(d["collective"] == c) & (d["evaluation"] == "in-sample"),
                      "evaluation"] = "in-sample = " + e
    d = d.drop(index=drop).reset_index(drop=True)
    notes = []
    for e, colls in merged.items():
        what = CROSS_VALIDATIONS[e][1]
        natives = [c for c in colls if c in native_only]
        others = [c for c in colls if c not in native_only]
        if natives:
            notes.append(f"in-sample and {e} coincide for {', '.join(natives)}: every choice "
                         f"is native, so the rules built without {what} choose native there "
                         "too")
        if others:
            notes.append(f"in-sample and {e} coincide for {', '.join(others)}: the rules "
                         f"built without {what} choose there what its own measurements "
                         "chose (its neighbours have the same choice)")
    for i, r in d.iterrows():
        rw = r["regret_worst"]
        if not (isinstance(rw, float) and math.isfinite(rw) and rw > 1 + 1e-12):
            d.at[i, "regret_worst_at"] = None
        if r["collective"] in native_only:
            d.at[i, "vs_native_gmean"] = NO_GAIN
            d.at[i, "vs_native_worst"] = None
            d.at[i, "vs_native_worst_at"] = None
        else:  # the one ratio, printed the one way (×0.80) in the terminal and the report
            for c in VS_NATIVE_COLUMNS[:2]:
                if c in d.columns and isinstance(d.at[i, c], float):
                    d.at[i, c] = evidence.fmt_ratio(d.at[i, c]) or None
    if not has_native:
        d = d.drop(columns=[c for c in VS_NATIVE_COLUMNS if c in d.columns])
    elif native_only and len(d) and (d["vs_native_gmean"] == NO_GAIN).all():
        d = d.drop(columns=list(VS_NATIVE_COLUMNS))
        notes.append(f"{NO_GAIN} over native (the rules are the library's default)")

    def empty(v):
        return v is None or (isinstance(v, float) and not math.isfinite(v)) or v == 0 \
            and not isinstance(v, bool)

    d = d.drop(columns=[c for c in d.columns if c not in ("collective", "evaluation", "points")
                        and d[c].map(empty).all()])
    return d.infer_objects(), notes
