"""What the commands print on a terminal: the consoles, the tables of measurements
(bench's, OSU's, quick's answer and compact tables, tune's rules and quality) and
the progress bar of long loops. Rich only: no click; the command line renders
through these, the workflows below it report through callbacks."""

from __future__ import annotations

import csv
import io
import json
import math
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from colltune.analysis.evidence import (OVER_MARK, RATIO_LEGEND, SEED, fmt_ratio, paired_note,
                                        ratio_label, ratio_to_baseline)
from colltune.analysis.points import best_table as best_points
from colltune.base.console import stdout_console
from colltune.base.files import write_atomic
from colltune.base.units import fmt_size
from colltune.mpi import libalgos
from colltune.tuning import tune as tune_mod

out = stdout_console()
err = Console(stderr=True, soft_wrap=True)  # messages stay one line each (grep, logs)


# ----------------------------------------------------------------- bench's tables

def _bench_cell(r: dict | None, base: dict | None, is_base: bool) -> str:
    if not r:
        return ""
    if r.get("median_us") is None:
        return "no valid sample"
    cell = f"{r['median_us']:.2f}"
    if not is_base and r.get("ratio") is not None:
        # the ratio of the medians (the paired estimate labelled where it differs):
        # quick's and the report's number (evidence.ratio_label)
        mr = ratio_to_baseline(r["median_us"], base["median_us"]) if (
            base and base.get("median_us")) else None
        cell += " " + ratio_label(mr, r["ratio"], bool(r.get("paired")))
        cell += VERDICT_MARKS.get(r.get("verdict"), "")
    if r.get("fallback"):
        cell += " *"
    return cell


def spec_labels(records: list[dict]) -> dict[str, str]:
    """Each record's spec -> the label tables show: the algorithm and its effective
    parameters (libalgos.param_label), `chain (segsize 8 KiB, fanout 4)` beside
    `ompi:chain (unsegmented, fanout 4)`."""
    labels: dict[str, str] = {}
    for r in records:
        if r["spec"] not in labels:
            labels[r["spec"]] = libalgos.param_label(r["collective"], r["spec"], r.get("params"))
    return labels


def _bench_table(records: list[dict], title: str) -> Table:
    """One row per algorithm and a column per size when that fits, else the transpose;
    beside each latency its ratio to native (with_ratios)."""
    records = with_ratios(records)
    algos = list(dict.fromkeys(r["spec"] for r in records))
    label = spec_labels(records)
    sizes = sorted({r["size"] for r in records})
    by = {(r["spec"], r["size"]): r for r in records}
    native = "native" if "native" in algos else None
    t = Table(title=title, title_justify="left")
    if len(sizes) <= 6 or len(sizes) < len(algos):
        t.add_column("algorithm", overflow="fold")
        for s in sizes:
            t.add_column(fmt_size(s), justify="right", no_wrap=True)
        for a in algos:
            t.add_row(label[a], *(_bench_cell(by.get((a, s)), by.get((native, s)), a == native)
                           for s in sizes))
    else:
        t.add_column("size", justify="right")
        for a in algos:
            t.add_column(label[a], justify="right", overflow="fold")
        for s in sizes:
            t.add_row(fmt_size(s), *(_bench_cell(by.get((a, s)), by.get((native, s)),
                                                 a == native) for a in algos))
    return t


def _us(v) -> str:
    return "" if v is None else f"{v:.2f}"


def osu_table(records: list[dict], title: str) -> Table:
    """OSU's table (osu_bcast -f ...): size, Avg/Min/Max Latency(us), Iterations, with
    OSU's meanings (mean, smallest and largest over processes of each process's mean
    call time over all its timed calls), then the spread over repetitions, which OSU
    does not have, under a name of its own. One block of rows per algorithm."""
    algos = list(dict.fromkeys(r["spec"] for r in records))
    label = spec_labels(records)
    t = Table(title=title, title_justify="left")
    if len(algos) > 1:
        t.add_column("algorithm", overflow="fold")
    for col in ("# Size", "Avg Latency(us)", "Min Latency(us)", "Max Latency(us)",
                "Iterations", "reps: median (min–max) µs"):
        t.add_column(col, justify="right", no_wrap=col != "reps: median (min–max) µs")
    for a in algos:
        for r in sorted((r for r in records if r["spec"] == a), key=lambda r: r["size"]):
            calls = (r.get("iterations") or 0) * (r.get("valid_reps") or 0)
            reps = (f"{_us(r.get('median_us'))} ({_us(r.get('rep_min_us'))}–"
                    f"{_us(r.get('rep_max_us'))})" if r.get("median_us") is not None else "")
            row = [str(r["size"]), _us(r.get("mean_us")), _us(r.get("rank_min_us")),
                   _us(r.get("rank_max_us")), str(calls), reps + (" *" if r.get("fallback")
                                                                    else "")]
            t.add_row(*([label[a]] if len(algos) > 1 else []), *row)
    return t


OSU_NOTE = ("Avg/Min/Max Latency as in the OSU benchmarks: mean, smallest and largest over "
            "processes of each process's mean time per call over all its timed calls "
            "(rank_min_us, rank_max_us in csv/json); Iterations = timed calls per process; "
            "the last column is over repetitions (median_us, rep_min_us, rep_max_us).")


CSV_FIELDS = ["collective", "algorithm", "params", "spec", "np", "size", "dtype", "op", "root",
              "iterations", "warmup", "timing", "rep_min_us", "mean_us", "median_us", "p90_us",
              "p99_us", "rep_max_us", "stddev_us", "valid_reps", "invalid", "rank_min_us",
              "rank_max_us", "window_us", "sleep_us", "align", "time_budget_s", "valid",
              "fallback", "library", "launches", "mpi", "host", "simulated", "platform",
              "command", "ratio"]


def with_ratios(records: list[dict], baseline: str = "native") -> list[dict]:
    """Every record with `ratio`: its time / the baseline's time at the same
    (collective, np, size) (evidence.ratio_to_baseline; None where the baseline was not
    measured, and for the baseline itself). A ratio the record already carries (quick:
    the comparison's estimate over the repetitions) is kept."""
    base = {(r["collective"], r["np"], r["size"]): r.get("median_us") for r in records
            if r.get("spec") == baseline}
    out_ = []
    for r in records:
        ratio = r.get("ratio")
        b = base.get((r["collective"], r["np"], r["size"]))
        if ratio is None and r.get("spec") != baseline and b and r.get("median_us"):
            ratio = ratio_to_baseline(r["median_us"], b)
        out_.append(dict(r, ratio=ratio if ratio is None or ratio == ratio else None))
    return out_



# what a ratio is worth, where the records carry a verdict (evidence.py): quick
VERDICT_MARKS = {"tie": " ≈", "insufficient": " ?", "unstable": " !"}
VERDICT_LEGEND = ("≈ within the noise of the repetitions (a tie, after Holm's correction over "
                  "the point's candidates); ? too few repetitions to tell; ! unstable: the "
                  "repetitions scatter (or saw different load): measure again; unmarked "
                  "ratios differ beyond the noise")


def emit_records(records: list[dict], fmt: str, output: str | None, title: str,
                 cores: int | None = None) -> None:
    """Tables (one per collective and process count), CSV or JSON. `cores`: the
    machine's, for marking tables whose processes share cores (oversubscribed). Each
    record gets its `ratio` to native (with_ratios), printed as in the tables."""
    records = with_ratios(records)
    if fmt == "table":
        groups: dict = {}
        for r in records:
            groups.setdefault((r["collective"], r["np"]), []).append(r)
        any_over = False
        osu_shown = False
        for (c, np), recs in groups.items():
            timing = "/".join(sorted({str(r.get("timing", "osu")) for r in recs}))
            checked = [r.get("valid") for r in recs if r.get("valid") is not None]
            note = (f"; validated: {sum(map(bool, checked))}/{len(checked)} pass"
                    if checked else "")
            over = cores is not None and np > cores
            any_over |= over
            mark = (f" {OVER_MARK} OVERSUBSCRIBED: {np} processes on {cores} cores"
                    if over else "")
            if timing == "osu":  # the table an OSU user compares with
                osu_shown = True
                aligns = {r.get("align") for r in recs}
                buf = ("SMPI shared buffers" if all(r.get("shared_buffers") for r in recs) else
                       "plain malloc" if aligns == {1} else
                       f"{aligns.pop()}-byte aligned buffers" if len(aligns) == 1 and
                       None not in aligns else "buffers: see align")
                out.print(osu_table(recs, f"{c}, {np} processes{mark}, OSU table ({title}; osu "
                                          f"timing; {buf}{note})"))
                if len({r["spec"] for r in recs}) == 1:
                    continue
            out.print(_bench_table(recs, f"{c}, {np} processes{mark}, median latency in µs "
                                         f"({title}; {timing} timing; ×: time / native's "
                                         f"time{note})"))
        if osu_shown:
            out.print(OSU_NOTE, highlight=False)
        if any(r.get("ratio") is not None for r in records):
            out.print(RATIO_LEGEND, highlight=False)
        if any(r.get("verdict") for r in records):
            out.print(VERDICT_LEGEND, highlight=False)
        if any_over:
            out.print(f"{OVER_MARK} oversubscribed: processes share cores (time-sliced by the "
                      "OS); the ratios there say nothing about the algorithms", highlight=False)
        if any(r.get("fallback") for r in records):
            out.print("* a declared fallback ran: "
                      + "; ".join(sorted({r["fallback"] for r in records if r.get("fallback")})),
                      highlight=False)
        text = None
    elif fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in records:
            w.writerow(r)
        text = buf.getvalue()
    else:
        text = json.dumps(records, indent=2) + "\n"
    if text is not None:
        if output:
            write_atomic(Path(output), text)
        else:
            sys.stdout.write(text)
            sys.stdout.flush()


class BenchProgress:
    """Points measured out of points planned, with the time so far and an estimate of
    the time left: a rich bar on a terminal, else a plain line on stderr at most every
    PLAIN_EVERY seconds (and at each process count's end)."""

    PLAIN_EVERY = 10.0

    def __init__(self, total: int):
        self.total, self.done, self.t0 = total, 0.0, time.monotonic()
        self.label = "benchmark"
        self._last_plain = self.t0
        self._bar = None
        if err.is_terminal:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(),
                                 TextColumn("left"), TimeRemainingColumn(), console=err,
                                 transient=True)
            self._task = self._bar.add_task(self.label, total=total)

    def __enter__(self):
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.stop()

    def note(self, text: str) -> None:
        (self._bar.console if self._bar else err).print(text, highlight=False)

    def set(self, done: float, label: str | None = None, force: bool = False) -> None:
        self.done = min(done, self.total)
        if label:
            self.label = label
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, description=self.label)
            return
        now = time.monotonic()
        if force or now - self._last_plain >= self.PLAIN_EVERY:
            self._last_plain = now
            err.print(f"{self.label}: {self.line()}", highlight=False)

    def line(self) -> str:
        el = time.monotonic() - self.t0
        eta = (f", about {_hms(el / self.done * (self.total - self.done))} left"
               if 0 < self.done < self.total else "")
        return f"{self.done:.0f}/{self.total} points, {_hms(el)} elapsed{eta}"


def _hms(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"



# ------------------------------------------------------------ quick's tables


USE_NOTE = ("use: native unless another algorithm is faster beyond the noise of the "
            "repetitions, after Holm's correction over the candidates of each point; "
            "'unstable: measure again' where repetitions in separate launches scatter or saw "
            "different load (docs/benchmarking.md, 'Conclusions with evidence'; bootstrap seed "
            f"{SEED}: the report prints the same intervals)")
COMPACT_LEGEND = ("×r: the algorithm's median / native's median (the two numbers printed); "
                  "paired ×r: the comparison's own estimate, the geometric mean of the "
                  "per-launch ratios (what the verdict tests), where it differs; "
                  "≈ within noise, ? too few repetitions, ! unstable: measure again, "
                  "unmarked: beyond the noise")


def print_answer(df, records: list[dict], include_oversubscribed: bool = False,
                 cores: int | None = None, reps: int = 0) -> None:
    """quick's terminal output: what to use where first, then one compact table per
    collective (OSU tables only with --osu-tables)."""
    out.print(best_table(df, include_oversubscribed))
    out.print(USE_NOTE, highlight=False)
    for t in compact_tables(records, cores, reps):
        out.print(t)
    out.print(COMPACT_LEGEND, highlight=False)


def _cell(r: dict, base: float | None) -> str:
    med = r.get("median_us")
    if med is None:
        return "—"
    text = f"{med:.2f}"
    if r["spec"] == "native" or not base:
        return text
    mark = {"tie": " ≈", "insufficient": " ?", "unstable": " !"}.get(r.get("verdict") or "", "")
    # the ratio of the two medians printed, the paired estimate labelled where it
    # differs: the report's and the figures' number (evidence.ratio_label)
    mr = ratio_to_baseline(med, base)
    note = paired_note(mr, r.get("ratio"), bool(r.get("paired")))
    return f"{text} {fmt_ratio(mr)}{mark}" + (f" ({note})" if note else "")


def compact_tables(records: list[dict], cores: int | None = None, reps: int = 0) -> list[Table]:
    """One table per collective: a row per algorithm, a column per (np, size), each
    cell the median over repetitions (µs) and its ratio to native's median."""
    tables = []
    for coll in dict.fromkeys(r["collective"] for r in records):
        recs = [r for r in records if r["collective"] == coll]
        points = sorted({(int(r["np"]), int(r["size"])) for r in recs})
        nps = {n for n, _ in points}
        base = {(int(r["np"]), int(r["size"])): r.get("median_us") for r in recs
                if r["spec"] == "native"}
        t = Table(title=f"{coll}: median µs over {reps} repetitions, ×: / native's median",
                  title_justify="left")
        t.add_column("algorithm", overflow="fold")
        for n, size in points:
            over = f" {OVER_MARK}" if cores is not None and n > cores else ""
            head = (f"np {n}{over} " if len(nps) > 1 or over else "") + fmt_size(size)
            t.add_column(head, justify="right")
        cells: dict = {}
        for r in recs:
            cells.setdefault(r["spec"], {})[(int(r["np"]), int(r["size"]))] = _cell(
                r, base.get((int(r["np"]), int(r["size"]))))
        for spec, row in cells.items():
            t.add_row(spec, *[row.get(pt, "") for pt in points])
        tables.append(t)
    return tables


def best_table(df, include_oversubscribed: bool = False) -> Table:
    """What to use per (collective, processes, size), by how much, and the evidence."""
    tab = best_points(df, include_oversubscribed=include_oversubscribed)
    t = Table(title="what to use (native unless another is faster beyond the noise)",
              title_justify="left")
    for c in ("collective", "np", "size", "use", "evidence", "detail"):
        t.add_column(c, justify="right" if c in ("np", "size") else "left",
                     overflow="fold")
    for r in tab.astype(object).where(tab.notna(), None).to_dict("records"):
        np_text = f"{int(r['np'])}" + (f" {OVER_MARK}" if r["oversubscribed"] else "")
        t.add_row(r["collective"], np_text, fmt_size(int(r["size"])), r["best"] or "—",
                  r["level"] or "", r["evidence"] or "")
    return t


# ------------------------------------------------------------- tune's tables


EVAL_SHORT = {"profile-weighted": "by app calls"}
QUALITY_HEADS = {"points": "cells", "regret_gmean": "regret gmean",
                 "regret_worst": "regret worst", "regret_worst_at": "worst regret at",
                 "vs_native_gmean": "×native gmean", "vs_native_worst": "×native worst",
                 "vs_native_worst_at": "worst ×native at"}


def _x(v) -> str:
    if isinstance(v, str):
        return v
    return "—" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:.3f}"


def rules_table(rs) -> Table:
    t = Table(title=f"rules ({rs.target}): first match wins", title_justify="left")
    mapped = any(r.mapping is not None for r in rs.rules)
    loaded = any(r.load is not None for r in rs.rules)
    noded = any(r.ppn is not None for r in rs.rules)
    cols = (["collective", "processes", "sizes", "algorithm", "params"]
            + (["mapping"] if mapped else []) + (["load"] if loaded else [])
            + (["per node"] if noded else []))
    if loaded:
        t.caption = "load classes (probe µs): " + "; ".join(
            f"{c.name} {c.lo:g}–{'' if c.hi is None else f'{c.hi:g}'}" for c in rs.load_classes)
    for c in cols:
        t.add_column(c, overflow="fold")
    for r in rs.rules:
        nps = f"{r.np_min}–" + ("" if r.np_max is None else str(r.np_max))
        sizes = (f"{fmt_size(r.size_min)}–"
                 + ("" if r.size_max is None else fmt_size(r.size_max)))
        row = [r.collective, nps, sizes, r.algorithm,
               ",".join(f"{k}={v}" for k, v in r.params) or "-"]
        if mapped:
            row.append(r.mapping or "")
        if loaded:
            row.append(r.load or "any")
        if noded:
            row.append("any" if r.ppn is None else
                       f"{r.ppn[0]}–{'' if r.ppn[1] is None else r.ppn[1]}")
        t.add_row(*row)
    return t


def quality_table(summary, has_native: bool, points=None, keys=None) -> Table:
    """The quality per collective and evaluation (tune.quality_view: coinciding
    evaluations one row, no placeholder gains), its notes as the caption."""
    view, notes = tune_mod.quality_view(summary, points, has_native, keys)
    t = Table(title="quality: regret = chosen / fastest measured median (1 is best); ×native "
                    "= chosen / native (the one ratio: <1 beats the default)",
              title_justify="left")
    cols = ["collective", "evaluation", "points"] + [c for c in QUALITY_HEADS if c != "points"
                                                     and c in view.columns]
    for c in cols:
        t.add_column(QUALITY_HEADS.get(c, c), justify="right" if c == "points" or c in (
            "regret_gmean", "regret_worst", "vs_native_gmean", "vs_native_worst") else "left")
    for r in view.to_dict("records"):
        pts = str(r["points"]) + (f" ({r['unmeasured']} unmeasured)"
                                  if r.get("unmeasured") else "")
        if isinstance(r.get("calls"), (int, float)) and r["calls"] == r["calls"]:
            pts += f" ({int(r['calls'])} calls)"
        row = [r["collective"], EVAL_SHORT.get(r["evaluation"], r["evaluation"]), pts]
        for c in cols[3:]:
            v = r[c]
            row.append("" if v is None or (isinstance(v, float) and not math.isfinite(v))
                       else v if isinstance(v, str) else _x(v))
        t.add_row(*row)
    if notes:
        t.caption = "\n".join(notes)
        t.caption_justify = "left"
    return t


