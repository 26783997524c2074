"""The cost model's tables on the console (`colltune model`): the parameters α, β, γ and
their sources, the prediction errors per collective and algorithm, the model's
selection against the measured best, and (on request) every predicted point. The
numbers come from analysis/costmodel.py (run_model)."""

from __future__ import annotations

import math

from rich.table import Table

from colltune.analysis.costmodel import CostParams
from colltune.base.units import fmt_size


def _us(v) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    return f"{v:.3g}" if v < 10 else f"{v:.1f}"


def print_params(console, p: CostParams) -> None:
    """The α, β, γ table (with their sources and LogGP's view), then the fits' notes."""
    t = Table(title="model parameters", title_justify="left")
    for c in ("parameter", "value", "source"):
        t.add_column(c)
    h = p.hockney
    hs = (f"{h.source}; {h.method}; {h.n} points {fmt_size(h.sizes[0])}..{fmt_size(h.sizes[-1])},"
          f" R² {h.r2:.4f}, worst point {h.max_rel_error:.0%} off") if h else "given"
    se = f" ± {h.alpha_se * 1e6:.3f}" if h else ""
    t.add_row("α (latency)", f"{p.alpha * 1e6:.3f} µs{se}", hs)
    bw = f" ({1e-6 / p.beta:,.0f} MB/s)" if p.beta > 0 else ""
    t.add_row("β (per byte)", f"{p.beta * 1e9:.4f} ns/B{bw}", "same fit" if h else "given")
    g = p.gamma_info
    gsrc = "given" if g is None else g.source + (f", {g.dtype} {g.op}" if g.dtype else "")
    t.add_row("γ (reduction per byte)", f"{p.gamma * 1e9:.4f} ns/B", gsrc)
    if h:
        t.add_row("LogGP L + 2o", f"{h.alpha * 1e6:.3f} µs", "= α (not separable: no overhead "
                  "benchmark)")
        t.add_row("LogGP G", f"{h.beta * 1e9:.4f} ns/B", "= β")
        t.add_row("LogGP L, o, g", "not measured", "need overhead and message-rate benchmarks")
    console.print(t)
    for note in (h.notes if h else []) + (g.notes if g else []):
        console.print(f"  note: {note}", highlight=False)


def print_model(console, result: dict, points: bool = False) -> None:
    """Everything `colltune model` prints of a costmodel.run_model result."""
    print_params(console, result["params"])
    s = result["by_collective"]
    t = Table(title="prediction error per collective (relative: (predicted − measured) / "
                    "measured)", title_justify="left")
    for c in ("collective", "points", "median |error|", "median error", "within ×2"):
        t.add_column(c, justify="right" if c != "collective" else "left")
    for r in s.itertuples(index=False):
        t.add_row(r.collective, str(r.points), f"{r.median_abs_rel_error:.0%}",
                  f"{r.median_rel_error:+.0%}", f"{r.within_2x:.0%}")
    console.print(t)
    a = result["by_algorithm"]
    t = Table(title="prediction error per algorithm", title_justify="left")
    for c in ("collective", "algorithm", "points", "median |error|", "median error"):
        t.add_column(c, justify="right" if c in ("points",) or "error" in c else "left")
    for r in a.itertuples(index=False):
        t.add_row(r.collective, r.algorithm, str(r.points), f"{r.median_abs_rel_error:.0%}",
                  f"{r.median_rel_error:+.0%}")
    console.print(t)
    sel = result["selection"]
    if not sel.empty:
        t = Table(title="selection: fastest measured (median, no test of the noise), the fastest of the algorithms the model "
                        "can predict, and the model's pick among those (slower × = pick / "
                        "fastest modelled, measured)", title_justify="left")
        cols = [c for c in ("collective", "mapping", "dtype", "np", "size") if c in sel.columns]
        heads = ["fastest measured", "µs", "fastest modelled", "µs ", "model pick", "its µs",
                 "slower ×", "agree"]
        for c in cols + heads:
            t.add_column(c, justify="right" if c in ("np", "size", "µs", "µs ", "its µs",
                                                     "slower ×") else "left")
        # missing values come back as NaN (pandas' string columns), not None
        for r in sel.astype(object).where(sel.notna(), None).to_dict("records"):
            vals = [fmt_size(int(r[c])) if c == "size" else str(r[c]) for c in cols]
            agree = {True: "yes", False: "no", None: ""}[r["agree"]]
            t.add_row(*vals, str(r["measured_best"]), _us(r["measured_best_us"]),
                      str(r["best_modelled"] or ""), _us(r["best_modelled_us"]),
                      str(r["model_pick"] or "") + (f" (= {r['ties']})" if r["ties"] else ""),
                      _us(r["model_pick_measured_us"]),
                      "" if r["slowdown"] is None else f"{r['slowdown']:.2f}", agree)
        console.print(t)
        ag = sel["agree"].dropna()
        if len(ag):
            console.print(f"the model picks the fastest modelled algorithm at {int(ag.sum())} of "
                          f"{len(ag)} points", highlight=False)
    if points:
        p = result["points"]
        t = Table(title="predicted vs measured", title_justify="left")
        for c in ("collective", "algorithm", "np", "size", "measured µs", "predicted µs",
                  "error", "note"):
            t.add_column(c)
        for r in p.astype(object).where(p.notna(), None).to_dict("records"):
            err = "" if r["rel_error"] is None else f"{r['rel_error']:+.0%}"
            t.add_row(r["collective"], r["label"], str(int(r["np"])), fmt_size(int(r["size"])),
                      _us(r["measured_us"]), _us(r["predicted_us"]), err, r["note"] or "")
        console.print(t)
