"""The rules section: what `colltune tune` makes of the study for every target, its
quality in-sample and cross-validated, and a decision map per collective."""

from __future__ import annotations

from colltune.analysis.points import latest_round
from colltune.base.collectives import COLLECTIVES
from colltune.base.lazy import LazyModule
from colltune.base.units import fmt_size
from colltune.output import figures as plotmod
from colltune.output.report.page import ReportParts, _add_figure, esc, frame_table, html_table
from colltune.rules.ruleset import TARGETS
from colltune.tuning import tune as tune_mod

pd = LazyModule("pandas")


def tune_section(df: pd.DataFrame, parts: ReportParts, palette: plotmod.Palette,
                 dpi: int = 100, include_oversubscribed: bool = False) -> str:
    """`colltune tune`'s rules for every target the study has candidates of (its latest
    round), their quality in-sample and cross-validated, and a decision map per
    collective. Empty when the data allow no rules (several studies mixed, or no
    target with a candidate besides native)."""
    if "study" not in df.columns or df["study"].nunique() != 1 or \
            str(df["study"].iloc[0]) == "(bench)":
        return ""
    d = latest_round(df)  # the study's latest round, as the summary concludes from
    results = []
    for target in TARGETS:
        try:
            results.append(tune_mod.tune(d, target,
                                         include_oversubscribed=include_oversubscribed))
        except tune_mod.TuneError:
            continue
    if not results:
        return ""
    out = ['<h2 id="tune">Rules: colltune tune</h2>',
           '<p class="note">What <code>colltune tune --study '
           f'{esc(df["study"].iloc[0])} --target TARGET -o FILE</code> writes for this study, '
           "and how good it is (docs/tuning.md). Per point the choice is native unless a "
           "candidate is faster beyond the noise of the repetitions (as in the summary); "
           "between measured sizes the rules switch at the geometric midpoint, between measured "
           "process counts where the two counts' choices' times, interpolated on log scales, "
           "cross. <i>Regret</i>: the rules' "
           "choice's median latency over the fastest measured median at the point (1 = the "
           "fastest); <i>×native</i>: the choice's median over native's (colltune's one "
           "ratio: below 1, faster than the library's default). Geometric mean and worst point, in-sample and "
           "cross-validated (leave-one-size-out, leave-one-np-out): the rules built without "
           "one size (or one process count), evaluated on it; where that chooses what "
           "in-sample chooses at every point, the two are one row.</p>"]
    rename = {"points": "cells", "regret_gmean": "regret (geo. mean)", "regret_worst": "regret (worst)",
              "regret_worst_at": "worst regret at", "vs_native_gmean": "×native (geo. mean)",
              "vs_native_worst": "×native (worst)", "vs_native_worst_at": "worst ×native at"}
    for t in results:
        target = t.rules.target
        out.append(f'<h3 id="tune-{esc(target)}">target {esc(target)}: '
                   f"{esc(tune_mod.LIBRARY_LABEL[target])} and native</h3>")
        for n in t.notes:
            out.append(f'<p class="note">{esc(n)}</p>')
        summ, view_notes = tune_mod.quality_view(t.summary, t.points, t.has_native, t.keys)
        out.append(f'<div class="scroll">{frame_table(summ, rename=rename)}</div>')
        for n in view_notes:
            out.append(f'<p class="note">{esc(n)}</p>')
        rows = [[r.collective, f"{r.np_min}–" + ("" if r.np_max is None else str(r.np_max)),
                 f"{fmt_size(r.size_min)}–" + ("" if r.size_max is None else
                                               fmt_size(r.size_max)), r.spec]
                + ([r.mapping or ""] if t.rules.rules and "mapping" in t.keys else [])
                for r in t.rules.rules]
        cols = ["collective", "processes", "sizes", "algorithm"] + (
            ["mapping"] if "mapping" in t.keys else [])
        out.append(f"<details><summary>the {len(rows)} rules</summary>"
                   f"{html_table(cols, rows)}</details>")
        pts = t.points["in-sample"]
        grid, one = [], []
        for c in [c for c in COLLECTIVES
                  if c in set(pts["collective"])]:
            chosen = set(pts.loc[pts["collective"] == c, "chosen"].dropna())
            if len(chosen) == 1:  # one colour everywhere: a sentence says it
                one.append(f"{esc(c)}: <b>{esc(chosen.pop())}</b>")
                continue
            _add_figure(parts, grid, "decision-map", c,
                        f"{c}: what the rules for {target} choose, with their time / native's",
                        lambda c=c: plotmod.fig_decision_map(pts[pts["collective"] == c],
                                                             palette, target), dpi)
        if one:
            out.append(f'<p class="note decision">The rules for {esc(target)} choose one '
                       "algorithm at every measured point of " + "; ".join(one)
                       + " (no decision map drawn: it would be one colour).</p>")
        out.append('<div class="grid">' + "".join(grid) + "</div>")
    return "".join(out)
