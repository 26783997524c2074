"""The models: the seed's regression models per collective (fit.py) and the cost model
(costmodel.py: α, β, γ, prediction errors, the model's choice against the fastest)."""

from __future__ import annotations

from functools import partial

from colltune.results import reader
from colltune.analysis import costmodel as cm
from colltune.drivers import gamma as gamma_driver
from colltune.drivers import p2p
from colltune.analysis.fit import FitError, SEED_MODELS, fit_formula, model_frame, resolve_formula
from colltune.base.lazy import LazyModule
from colltune.base.units import fmt_size
from colltune.output import figures as plotmod
from colltune.output.report.page import esc, frame_table, html_table
from colltune.output.report.measurements import _point_info, _surface_algo

pd = LazyModule("pandas")


DROPPED = "dropped"


def _without_dropped(cols: list[str], rows: list[list], terms: dict[int, tuple[str, list[int]]],
                     groups: int) -> tuple[list[str], list[list], list[str]]:
    """The table without the columns of a term dropped (not varying) in every fitted row,
    and one line per term naming the groups it was dropped for. `terms`: column of the
    coefficient -> (term, its other columns)."""
    fitted = [r for r in rows if not str(r[groups]).startswith("not fitted")]
    gone: set[int] = set()
    lines = []
    for i, (term, extra) in terms.items():
        where = [" ".join(str(x) for x in r[:groups]) for r in fitted if r[i] == DROPPED]
        if not where:
            continue
        if len(where) == len(fitted):
            gone |= {i, *extra}
            lines.append(f"The term {term} is in no table: it does not vary in the data, "
                         "every model drops it.")
        else:
            lines.append(f"The term {term} is dropped (it does not vary) for "
                         f"{', '.join(where)}.")
    keep = [i for i in range(len(cols)) if i not in gone]
    return ([cols[i] for i in keep],
            [[r[i] for i in keep] if r in fitted else r[:groups + 1] + [""] * (
                len(keep) - groups - 1) for r in rows], lines)


def _seed_model_rows(df: pd.DataFrame, groups: list[str]) -> tuple[list[list], list[list]]:
    """Rows of the linear and of the log seed model, one per group."""
    lin_rows, log_rows = [], []
    lin_f, _ = resolve_formula(model="seed-linear")
    log_f, _ = resolve_formula(model="seed-log")
    for key, g in df.groupby(groups, sort=True):
        key = list(key) if isinstance(key, tuple) else [key]
        frame = model_frame(g)
        for f, rows in ((lin_f, lin_rows), (log_f, log_rows)):
            try:
                r = fit_formula(frame, f)
            except FitError as exc:
                rows.append(key + [f"not fitted: {exc}"] + [""] * (5 if f == lin_f else 7))
                continue
            c = {x.term: x for x in r.coefs}
            b0 = c.get("processes")
            b1 = c.get("size") or c.get("log2_size")

            def cell(b):
                return f"{b.coef:.4g} ± {b.std_err:.2g}" if b else DROPPED

            row = key + [cell(b0), cell(b1)]
            if f == log_f:
                row += [f"×{2 ** b0.coef:.4f}" if b0 else "—",
                        f"×{2 ** b1.coef:.3f}" if b1 else "—"]
            row += [f"{r.r2:.3f}", f"{r.r2_centered:.3f}", f"{r.aic:.1f}"]
            if f == log_f:
                row += [f"{r.aic_latency_scale:.1f}" if r.aic_latency_scale is not None else ""]
            row += [r.n]
            rows.append(row)
    return lin_rows, log_rows


def _full_model_html(df: pd.DataFrame, title: str) -> str:
    out = [f"<h4>{esc(title)}</h4>"]
    frame = model_frame(df)
    for name in SEED_MODELS:
        f, label = resolve_formula(model=name)
        try:
            r = fit_formula(frame, f, label)
        except FitError as exc:
            out.append(f'<p class="note">{esc(name)}: not fitted: {esc(exc)}</p>')
            continue
        r2 = "R²" if r.intercept else "R² (uncentered)"
        out.append(f"<p><b>{esc(label)}</b><br><code>{esc(r.formula)}</code> — "
                   f"{r2} {r.r2:.4f}, adj. {r.r2_adj:.4f}, AIC {r.aic:.1f}"
                   + (f" (latency scale {r.aic_latency_scale:.1f})"
                      if r.aic_latency_scale is not None else "")
                   + f", BIC {r.bic:.1f}, n = {r.n}, dependent variable {esc(r.response)}</p>")
        rows = [[c.term, f"{c.coef:.4g}", f"{c.std_err:.4g}", f"{c.t:.3f}",
                 "<0.001" if c.p < 0.001 else f"{c.p:.3f}", f"{c.ci_low:.4g}",
                 f"{c.ci_high:.4g}"] for c in r.coefs]
        out.append(html_table(["", "coef", "std err", "t", "P>|t|", "[0.025", "0.975]"], rows,
                              {1, 2, 3, 4, 5, 6}, "coef"))
        out.append('<ul class="meaning">' + "".join(
            f"<li><code>{esc(c.term)}</code>: {esc(c.meaning)}</li>" for c in r.coefs)
            + "".join(f'<li class="note">{esc(n)}</li>' for n in r.notes) + "</ul>")
    return "".join(out)


def models_section(df: pd.DataFrame, coll: str, palette: plotmod.Palette,
                   surface_algo: str | None = None) -> str:
    """The regression models of one collective (seed 000's two forms, full tables)."""
    d = df[df["collective"] == coll]
    d = d[pd.to_numeric(d["median_us"], errors="coerce").notna()]
    out = [f'<h3 id="models-{esc(coll)}">{esc(coll)}: regression models (seed 000)</h3>']
    if d.empty:
        out.append('<p class="note">no valid measurement</p>')
        return "".join(out)
    info = _point_info(d, coll)
    maps = info["maps"]
    default_map = d["mapping"].mode().iloc[0] if maps else None
    mapnote = f", mapping {default_map}" if len(maps) > 1 else ""
    out.append('<p class="note">Per algorithm' + (" and mapping" if len(maps) > 1 else "")
               + ": linear <code>latency ~ 0 + processes + size</code> and log "
               "<code>log2_latency ~ 0 + processes + log2_size</code>, OLS over every "
               "repetition. ×/process = 2^β0 and ×/doubling = 2^β1 of the log model. R² is "
               "uncentered (no intercept). The AICs of the two models are not comparable "
               "(different responses); the log model's AIC on the latency scale is. A term "
               "that does not vary in the data (one process count, one size) is dropped, "
               "not fitted.</p>")
    groups = ["algorithm"] + (["mapping"] if len(maps) > 1 else [])
    lin_rows, log_rows = _seed_model_rows(d, groups)
    for rows in (lin_rows, log_rows):
        rows.sort(key=lambda r: (palette.rank(r[0]), r[0]))
    g = len(groups)
    drop_at = len(out)
    cols = groups + ["β0 processes (µs per process)", "β1 size (µs per byte)", "R² (uncentered)",
                     "R² (centered)", "AIC", "n"]
    cols, lin_rows, lin_lines = _without_dropped(cols, lin_rows, {g: ("processes", []),
                                                                  g + 1: ("size", [])}, g)
    out.append("<p><b>Latency = β0·Processes + β1·Size</b></p>")
    out.append('<div class="scroll">' + html_table(cols, lin_rows,
                                                   set(range(g, len(cols)))) + "</div>")
    cols = groups + ["β0 processes", "β1 log2 size", "×/process", "×/doubling",
                     "R² (uncentered)", "R² (centered)", "AIC", "AIC (latency scale)", "n"]
    cols, log_rows, log_lines = _without_dropped(cols, log_rows, {g: ("processes", [g + 2]),
                                                                  g + 1: ("log2 size", [g + 3])},
                                                 g)
    out.append("<p><b>log2 Latency = β0·Processes + β1·log2 Size</b></p>")
    out.append('<div class="scroll">' + html_table(cols, log_rows,
                                                   set(range(g, len(cols)))) + "</div>")
    out[drop_at:drop_at] = [f'<p class="note">{esc(x)}</p>' for x in dict.fromkeys(
        x.replace("log2 size", "size") for x in lin_lines + log_lines)]
    salgo = _surface_algo(d, surface_algo)
    sd = d[d["algorithm"] == salgo]
    if default_map is not None and len(maps) > 1:
        sd = sd[sd["mapping"].astype(str) == str(default_map)]
    out.append(_full_model_html(sd, f"Full tables: {coll}/{salgo}{mapnote}"))
    return "".join(out)


def cost_section(model: dict | None, note: str | None) -> str:
    out = ['<h2 id="cost-model">Cost model</h2>']
    if model is None:
        out.append(f'<p class="note">{esc(note or "not computed")}</p>')
        return "".join(out)
    p = model["params"]
    h = p.hockney
    g = p.gamma_info
    rows = [["α (latency)", f"{p.alpha * 1e6:.4g} µs",
             f"{h.source}; {h.method}; R² {h.r2:.4f}; {h.n} sizes "
             f"{fmt_size(h.sizes[0])}..{fmt_size(h.sizes[-1])}" if h else "given"],
            ["β (per byte)", f"{p.beta * 1e9:.4g} ns/B"
             + (f" ({1e-6 / p.beta:,.0f} MB/s)" if p.beta > 0 else ""), "same fit" if h else
             "given"],
            ["γ (reduction per byte)", f"{p.gamma * 1e9:.4g} ns/B",
             "given" if g is None else g.source + (f", {g.dtype} {g.op}" if g.dtype else "")]
            if g is None or g.source != "none" else
            ["γ (reduction per byte)", "not measured: run `colltune model`",
             "the study's Reduce measurements do not give it; predictions take 0"]]
    if h:
        rows += [["LogGP L + 2o", f"{h.alpha * 1e6:.4g} µs", "= α; L and o not separable "
                  "without an overhead benchmark"],
                 ["LogGP G", f"{h.beta * 1e9:.4g} ns/B", "= β"],
                 ["LogGP L, o, g", "not measured", "need overhead and message-rate benchmarks"]]
    out.append(html_table(["parameter", "value", "source"], rows, cls="kv"))
    for n in (h.notes if h else []) + (g.notes if g else []) + model.get("notes", []):
        out.append(f'<p class="note">{esc(n)}</p>')
    out.append("<h3>Prediction error per collective</h3>"
               '<p class="note">relative error = (predicted − measured) / measured, per point '
               "(median over repetitions); formulas from the registry with each point's "
               "parameters.</p>")
    names = {"median_abs_rel_error": "median |error|", "median_rel_error": "median error",
             "within_2x": "share within ×2"}
    out.append(frame_table(_percent(model["by_collective"]), "err", names))
    # per algorithm and per point: on screen; in print one line (pages of tables)
    out.append('<p class="print-only note">The errors per algorithm and the model\'s choice '
               "per point are in the HTML file (left out of print).</p>"
               '<section class="screen-only">')
    out.append("<h3>Prediction error per algorithm</h3>")
    out.append(frame_table(_percent(model["by_algorithm"]), "err", names))
    sel = model["selection"]
    out.append("<h3>The model's choice against the fastest measured</h3>"
               '<p class="note">fastest measured: the lowest median, without a test of the '
               "noise (the summary at the top says which differences are real).</p>")
    if sel.empty:
        out.append('<p class="note">nothing to compare</p>')
    else:
        ag = sel.dropna(subset=["agree"]).groupby("collective").agg(
            points=("agree", "size"), model_right=("agree", "sum"),
            median_slowdown=("slowdown", "median"), worst_slowdown=("slowdown", "max"))
        ag = ag.reset_index()
        ag["model_right"] = [f"{int(k)} of {int(n)}" for k, n in zip(ag["model_right"],
                                                                    ag["points"])]
        out.append(frame_table(ag.drop(columns=["points"]), "sel", {
            "model_right": "points where the pick is the fastest modelled",
            "median_slowdown": "median slowdown of the pick",
            "worst_slowdown": "worst slowdown"}))
        out.append(_selection_points(sel))
    out.append("</section>")
    return "".join(out)


def _selection_points(sel: pd.DataFrame) -> str:
    """Per point: the fastest measured, the fastest modelled and the model's pick, each
    with its measured µs in one cell, so the table fits the page; the algorithms
    predicted equal to the pick only where there are any."""
    def us(v) -> str:
        return "" if v is None or v != v else f"{v:.3g}" if abs(v) < 10 else f"{v:,.1f}"

    def named(a, v) -> str:
        return "" if a is None or a != a else f"{a} ({us(v)} µs)"

    maps = "mapping" in sel.columns
    ties = "ties" in sel.columns and sel["ties"].notna().any()
    cols = ["collective"] + (["mapping"] if maps else []) + [
        "point", "fastest measured", "fastest modelled", "model pick (measured)"] + (
        ["predicted equal to the pick"] if ties else []) + ["pick / fastest modelled"]
    rows = []
    for r in sel.astype(object).where(sel.notna(), None).to_dict("records"):
        row = [r["collective"]] + ([r["mapping"] or ""] if maps else []) + [
            f"np={int(r['np'])} {fmt_size(int(r['size']))}",
            named(r["measured_best"], r["measured_best_us"]),
            named(r.get("best_modelled"), r.get("best_modelled_us")),
            named(r.get("model_pick"), r.get("model_pick_measured_us"))]
        if ties:
            row.append(r["ties"] or "")
        row.append("" if r.get("slowdown") is None else f"×{r['slowdown']:.3g}")
        rows.append(row)
    return html_table(cols, rows, {len(cols) - 1}, "sel")


def _percent(df: pd.DataFrame) -> pd.DataFrame:
    d = df.copy()
    for c in ("median_abs_rel_error", "within_2x"):
        if c in d.columns:
            d[c] = d[c].map(lambda v: f"{v:.0%}")
    if "median_rel_error" in d.columns:
        d["median_rel_error"] = d["median_rel_error"].map(lambda v: f"{v:+.0%}")
    return d


def compute_model(df: pd.DataFrame, *, db_path, algos, build=None, pingpong=None,
                  alpha=None, beta=None, gamma=None, gamma_mode="auto", measure=False):
    """(model result or None, note): the cost model when α, β can be had. Nothing is
    launched unless `measure`: α, β come from ping-pong points (given, or stored in the
    database), γ from the study's Reduce measurements, else it is shown as not measured."""
    notes: list[str] = []
    if algos is None:
        return None, "no algorithm registry (no MPI build): the cost model needs the formulas"
    if not measure and pingpong is None and (alpha is None or beta is None):
        if reader.pingpong_points(db_path) is None:
            return None, ("α, β not measured (no ping-pong points in the database): run "
                          "`colltune model`, or `colltune report --measure` on the machine "
                          "that ran the study, or give --pingpong-json FILE (from "
                          "`colltune pingpong --format json`)")
    ginfo = None
    if gamma is None and not measure and gamma_mode == "auto":
        # nothing launched: γ from the study's Reduce measurements, else not measured
        try:
            ginfo = cm.gamma_from_measurements(df)
        except cm.CostModelError as exc:
            ginfo = cm.Gamma(0.0, "none", notes=[
                f"γ not measured ({exc}): run `colltune model` to measure it, or "
                "`colltune report --measure`; the predictions model reductions as free"])
        gamma = ginfo.gamma
    try:
        now = build if measure else None  # measured now: ping-pong and γ on this machine
        params = cm.resolve_params(
            df, pingpong=pingpong, alpha=alpha, beta=beta, gamma=gamma, gamma_mode=gamma_mode,
            measure_pingpong=partial(p2p.measure_pingpong, now) if now else None,
            measure_gamma=partial(gamma_driver.measure_gamma, now) if now else None,
            db_path=db_path, notes=notes)
    except Exception as exc:  # noqa: BLE001 - the report goes on without the model
        return None, f"cost model not computed: {exc}"
    if ginfo is not None:
        params.gamma_info = ginfo
    result = cm.run_model(df, algos, params)
    result["notes"] = notes + result["model_notes"]
    return result, None
