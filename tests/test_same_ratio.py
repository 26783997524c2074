"""Terminal, report and figures show the same number for the same comparison (issue 50):
the ratio of the two medians (evidence.ratio_to_baseline of the medians over the
repetitions), a paired comparison's own estimate (the geometric mean of the per-launch
ratios) labelled 'paired' beside it where it differs. No MPI: a synthetic study."""

from __future__ import annotations

import math
import re

import numpy as np
from rich.console import Console

from colltune.analysis.points import median_repetition
from colltune.cli.quick import best_table as answer_table
from colltune.cli.quick import compact_tables, table_records, terminal_rows
from colltune.output import figures as pl
from colltune.output.report.summary import summary_section
from colltune.tuning import tune
from test_tune import frame

# native 10 µs in every launch; linear measured in the same launches (paired) with
# per-launch factors whose median (0.34) and geometric mean (0.42) differ clearly
LINEAR = (0.30, 0.32, 0.34, 0.60, 0.70)
MEDIAN = float(np.median(LINEAR))
GMEAN = float(math.exp(np.mean(np.log(LINEAR))))
POINT = ("bcast", 2, 1 << 20)


def study():
    return frame({POINT: {"native": 10.0, "linear": 10.0}}, noise=(1.0,),
                 own={"linear": LINEAR})


def test_the_synthetic_comparison_tells_the_two_aggregations_apart():
    assert f"{MEDIAN:.2f}" == "0.34" and f"{GMEAN:.2f}" == "0.42"


def test_terminal_report_and_figures_show_the_ratio_of_the_medians():
    df = study()
    shown = f"×{MEDIAN:.2f}"
    paired = f"paired ×{GMEAN:.2f}"

    # quick's compact table (the terminal)
    rows = terminal_rows(df)
    agg = median_repetition(rows, ["collective", "np", "spec", "size"])
    console = Console(record=True, width=300)
    for t in compact_tables(table_records(rows, agg), cores=64, reps=5):
        console.print(t)
    term = console.export_text()
    cell = re.search(r"linear\s*│\s*([^│\n]*)", term).group(1).strip()
    assert cell == f"3.40 {shown} ({paired})", term
    console = Console(record=True, width=400)
    console.print(answer_table(rows))  # quick's "what to use where", printed first
    answer = console.export_text()
    assert f"{shown} of native (66 % faster; {paired}" in answer, answer
    assert re.search(rf"(?<!paired )×{GMEAN:.2f}", answer) is None

    # the report's summary: the table's "by how much" and the sentence
    html = summary_section(df, ["bcast"])
    assert f"{shown} of native (66 % faster; {paired}; 95% CI" in html, html
    assert f"{shown} of native (66 % faster; {paired})" in html  # the sentence
    assert re.search(rf"(?<!paired )×{GMEAN:.2f}", html) is None  # never unlabelled

    # the figures: the best map's cell text and the speedup figure's data
    palette = pl.Palette(pl.FALLBACK_ORDER)
    fig = pl.fig_best_map(df, palette)
    assert [t.get_text() for t in fig.axes[0].texts] == [shown]
    fig = pl.fig_speedup(df, palette)
    ys = [y for line in fig.axes[0].get_lines() for y in line.get_ydata()
          if line.get_label() == "linear"]
    assert ys and f"{ys[0]:.2f}" == f"{MEDIAN:.2f}"

    # tune's quality (vs_native) and the rules' decision map in the report
    t = tune.tune(df, "colltune")
    ins = t.points["in-sample"]
    assert ins["chosen"].tolist() == ["linear"]
    assert f"{ins['vs_native'].iloc[0]:.2f}" == f"{MEDIAN:.2f}"
    fig = pl.fig_decision_map(ins, palette)
    assert shown in [t.get_text() for t in fig.axes[0].texts]
