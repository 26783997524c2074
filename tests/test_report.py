"""colltune report: one self-contained HTML file; rendered by headless Chromium."""

import base64
import html
import io
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from colltune.analysis import costmodel as cm
from colltune.analysis.fit import load_measurements
from colltune.output import figures as pl
from colltune.output import series
from colltune.output import report as rp
from colltune.cli.report import report as report_cmd
from colltune.base.files import write_atomic

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts" / "report"
KINDS_EXPECTED = set(pl.KINDS)

BCAST_LINEAR = {"name": "linear", "collective": "bcast", "cost": "(p-1)*(a + n*b)",
                "params": []}
BCAST_BINOMIAL = {"name": "binomial", "collective": "bcast",
                  "cost": "ceil(log2(p))*ceil(n/s)*(a + s*b)",
                  "params": [{"name": "segsize", "default": 0}]}
REDUCE_BINOMIAL = {"name": "binomial", "collective": "reduce",
                   "cost": "ceil(log2(p))*ceil(n/s)*(a + s*b + s*g)",
                   "params": [{"name": "segsize", "default": 0}]}
REDUCE_LINEAR = {"name": "linear", "collective": "reduce", "cost": "(p-1)*(a + n*b + n*g)",
                 "params": []}
ALGOS = {(a["collective"], a["name"]): a for a in
         (BCAST_LINEAR, BCAST_BINOMIAL, REDUCE_BINOMIAL, REDUCE_LINEAR)}


def synthetic(seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for c in ("bcast", "reduce"):
        for i, a in enumerate(("native", "linear", "binomial")):
            for m in ("core", "socket"):
                for p in (2, 4, 8):
                    for s in (1, 256, 65536, 1 << 20):
                        for r in range(5):  # enough repetitions for evidence
                            # linear the fastest at small sizes: the maps vary
                            f = 0.6 if a == "linear" and s <= 256 else 1 + 0.3 * i
                            base = (f * (0.5 * np.log2(p) + 0.05 * p)
                                    + s * 1e-4 * (p / 2 if a == "linear" else 1)
                                    * (1.3 if c == "reduce" else 1))
                            lat = base * np.exp(rng.normal(0, 0.05))
                            rows.append(dict(collective=c, algorithm=a, mapping=m, np=p, size=s,
                                             params="", median_us=lat, rep_min_us=lat * 0.95,
                                             rep_max_us=lat * 1.1, repetition=r, dtype="char",
                                             op="sum", run_id=1 if m == "core" else 2))
    return pd.DataFrame(rows)


def make_db(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE studies (id INTEGER PRIMARY KEY, name TEXT)")
    con.execute("INSERT INTO studies VALUES (1, 'quick')")
    con.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, study_id INTEGER, host TEXT, "
                "cpu_model TEXT, mpi TEXT, colltune_version TEXT, git_rev TEXT, command TEXT, "
                "started TEXT, finished TEXT)")
    con.executemany("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?)", [
        (1, 1, "nodeA", "Xeon <Gold> & co", "Open MPI 5.0.11", "0.1.0", "abc123",
         "mpirun -np 8 colltune-bench --coll bcast --map-by core", "2025-01-01T10:00",
         "2025-01-01T10:05"),
        (2, 1, "nodeA", "Xeon <Gold> & co", "Open MPI 5.0.11", "0.1.0", "abc123",
         "mpirun -np 8 colltune-bench --coll bcast --map-by socket", "2025-01-01T10:05",
         "2025-01-01T10:09")])
    synthetic().to_sql("measurements", con, index=False)
    con.commit()
    con.close()
    return path


def pingpong(alpha=1e-6, beta=2e-10):
    return [{"kind": "pingpong", "size": s, "median_us": (alpha + beta * s) * 1e6}
            for s in (1, 64, 4096, 65536, 1 << 20)]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The report of the synthetic study, built without MPI (formulas given here)."""
    d = tmp_path_factory.mktemp("report")
    db = make_db(d / "study.db")
    df = load_measurements(db, study="quick")
    params = cm.resolve_params(df, pingpong=pingpong(), gamma=1e-10)
    model = cm.run_model(df, ALGOS, params)
    text, parts = rp.build_report(df, runs=rp.read_runs(db, "quick", df), db_path=db,
                                  study="quick", palette=pl.Palette(pl.FALLBACK_ORDER),
                                  model=model)
    path = d / "report.html"
    write_atomic(path, text)
    return path, text, parts


def test_report_is_self_contained(built):
    path, text, _ = built
    assert text.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", text, re.I)
    assert not re.search(r"https?://", text)
    assert "<link" not in text and "@import" not in text and "url(" not in text
    for src in re.findall(r"""src\s*=\s*["']([^"']*)""", text):
        assert src.startswith("data:image/png;base64,")
    for href in re.findall(r"""href\s*=\s*["']([^"']*)""", text):
        assert href.startswith("#")
    assert "@media print" in text and "@page" in text
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]


def test_report_contains_every_figure(built):
    _, text, parts = built
    imgs = re.findall(r'<img src="data:image/png;base64,([^"]+)"', text)
    assert len(imgs) == len(parts.figures) >= 2 * len(KINDS_EXPECTED)
    for b64 in imgs:
        data = base64.b64decode(b64)
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
        from PIL import Image

        with Image.open(io.BytesIO(data)) as im:
            assert im.width > 300 and im.height > 200
    for coll in ("bcast", "reduce"):
        kinds = {f.kind for f in parts.figures if f.collective == coll}
        # plot.py's kinds, and the decision map of the tune section
        assert kinds == KINDS_EXPECTED | {"decision-map"}, (coll, KINDS_EXPECTED - kinds)
    for f in parts.figures:
        assert f'id="{f.id}"' in text and f'href="#{f.id}"' in text
    assert f'data-figures="{len(parts.figures)}"' in text


def test_report_sections(built):
    _, text, _ = built
    for section in ('id="provenance"', 'id="coll-bcast"', 'id="coll-reduce"',
                    'id="cost-model"'):
        assert section in text
    # provenance of every run, escaped
    assert "Xeon &lt;Gold&gt; &amp; co" in text and "<Gold>" not in text
    assert "--map-by core" in text and "--map-by socket" in text
    assert "Open MPI 5.0.11" in text and "abc123" in text
    assert "source revision" in text
    # both seed models and full coefficient tables
    assert "Latency = β0·Processes + β1·Size" in text
    assert "log2 Latency = β0·Processes + β1·log2 Size" in text
    for col in ("std err", "P&gt;|t|", "[0.025", "0.975]", "R² (uncentered)", "AIC"):
        assert col in text
    assert "one more process multiplies latency by 2^" in text
    # cost model and best-algorithm table
    assert "α (latency)" in text and "γ (reduction per byte)" in text
    assert "Prediction error per collective" in text and "median |error|" in text
    assert "fastest measured" in text and "model pick" in text
    assert "Best algorithm per (processes, size)" in text


def test_report_tune_section(built):
    """The rules `colltune tune` would write, their quality, after the summary."""
    _, text, parts = built
    assert 'id="tune"' in text and 'id="tune-colltune"' in text
    assert 'id="tune-openmpi"' not in text  # no ompi:* in the study: no such target
    assert text.index('id="summary"') < text.index('id="tune"') < text.index('id="models"')
    assert 'href="#tune"' in text
    for col in ("regret (geo. mean)", "leave-one-size-out", "leave-one-np-out", "in-sample"):
        assert col in text
    # bcast's choice at a size is its neighbours' (linear below 4K, native above): the
    # leave-one-size-out rules choose what in-sample chooses, one row with a note why;
    # reduce's differ, two rows
    flat = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())
    assert "bcast in-sample = leave-one-size-out" in flat
    assert "reduce in-sample 24" in flat and "reduce leave-one-size-out 24" in flat
    assert "in-sample and leave-one-size-out coincide for bcast: the rules built without a " \
        "size choose there what its own measurements chose" in flat
    assert "CV size" not in text and ">worst at<" not in text
    assert "worst regret at" in flat and "worst ×native at" in flat
    maps = [f for f in parts.figures if f.kind == "decision-map"]
    assert {f.collective for f in maps} == {"bcast", "reduce"}


def test_report_model_tables_fit_and_say_what_they_count(built):
    """Counts read as counts; the per-point model table merges each algorithm with its
    µs; a regression term dropped everywhere is a line, not a column of 'dropped'."""
    _, text, _ = built
    assert "points where the pick is the fastest modelled" in text
    assert re.search(r"<td>\d+ of \d+</td>", text)
    assert "model picks the fastest modelled" not in text
    head = re.search(r'<table class="sel"><thead><tr>((?:<th>[^<]*</th>)+)</tr>',
                     text[text.index("points where the pick"):]).group(1)
    assert head.count("<th>") <= 8 and "its µs" not in head
    assert "dropped (no variation)" not in text


def test_regression_tables_leave_out_terms_dropped_everywhere():
    from colltune.output.report.model import models_section

    df = synthetic()
    one_np = df[df["np"] == 4]
    html = models_section(one_np, "bcast", pl.Palette(pl.FALLBACK_ORDER))
    assert ">dropped<" not in html and "dropped (no variation)" not in html
    assert html.count("The term processes is in no table") == 1
    assert "<th>β0 processes" not in html and "<th>×/process<" not in html
    assert "<th>β1 size (µs per byte)<" in html and "<th>×/doubling<" in html
    # with process counts that vary, the processes column is there and no such line
    html = models_section(df, "bcast", pl.Palette(pl.FALLBACK_ORDER))
    assert "<th>β0 processes" in html and "in no table" not in html


def test_report_of_a_colltune_database(tmp_path):
    """Provenance from the schema of colltune.db: runs, launches (units), definition."""
    from colltune.results import db
    from colltune.results import store

    conn = db.open_db(tmp_path / "c.db")
    sid = store.upsert_study(conn, "quick", {"collectives": ["bcast", "reduce"], "np": [2, 4, 8]})
    rid = store.store_run(conn, study_id=sid, command_line="colltune sweep --preset quick",
                          round=1)
    recs = synthetic().drop(columns=["run_id"]).to_dict("records")
    store.store_unit(conn, study_id=sid, run_id=rid, round=1, key="all", collective="bcast",
                     np=8, nodes=1, ppn=8, mapping=None, rank_order=None, repetition=None,
                     algorithms=["native", "linear", "binomial"], library_spec=None,
                     command="mpirun -np 8 colltune-bench ...", env=None, notes=None,
                     started_at=db.now(), seconds=1.0, records=recs)
    conn.close()
    df = load_measurements(tmp_path / "c.db", study="quick")
    prov = rp.read_runs(tmp_path / "c.db", "quick", df)
    assert list(prov.runs["run_id"]) == [rid] and prov.runs["study"].iloc[0] == "quick"
    assert prov.launches[rid] == ["mpirun -np 8 colltune-bench ..."]
    text, parts = rp.build_report(df, runs=prov, db_path=tmp_path / "c.db", study="quick",
                                  model=None, model_note="none", dpi=50)
    assert "colltune sweep --preset quick" in text and "mpirun -np 8 colltune-bench" in text
    assert "Definition of study quick" in text and "&quot;np&quot;" in text
    kinds = {f.kind for f in parts.figures}  # a one-colour map is a sentence instead
    assert kinds == KINDS_EXPECTED or (kinds == KINDS_EXPECTED - {"best-map"}
                                       and "no map is drawn" in text)


def test_report_without_cost_model_says_why(tmp_path):
    df = synthetic()
    text, parts = rp.build_report(df, db_path=tmp_path / "x.db", model=None,
                                  model_note="no ping-pong data: give --pingpong-json")
    assert "no ping-pong data: give --pingpong-json" in text
    assert "The database records no runs" in text


def test_report_model_launches_nothing_by_default(tmp_path, monkeypatch):
    """Without --measure the report launches no MPI: α, β from the ping-pong points stored
    in the database, γ from the study's Reduce − Bcast; what they cannot give is shown as
    not measured, with the command that measures it."""
    def launched(*args, **kwargs):
        raise AssertionError("the report launched MPI without --measure")

    from colltune.drivers import gamma as gamma_driver
    from colltune.drivers import p2p
    from colltune.mpi import launch

    monkeypatch.setattr(p2p, "measure_pingpong", launched)
    monkeypatch.setattr(gamma_driver, "measure_gamma", launched)
    monkeypatch.setattr(launch, "run", launched)
    db = make_db(tmp_path / "s.db")
    df = load_measurements(db, study="quick")
    model, note = rp.compute_model(df, db_path=db, algos=ALGOS)
    assert model is None and "not measured" in note and "`colltune model`" in note
    con = sqlite3.connect(db)
    pd.DataFrame([dict(collective="pingpong", algorithm="pingpong", np=2, size=r["size"],
                       median_us=r["median_us"]) for r in pingpong()]).to_sql(
        "measurements", con, if_exists="append", index=False)
    con.commit()
    con.close()
    model, note = rp.compute_model(df, db_path=db, algos=ALGOS)
    assert note is None
    p = model["params"]
    assert p.hockney.source == "ping-pong records in the database"
    assert p.alpha == pytest.approx(1e-6, rel=1e-3) and p.gamma > 0
    assert p.gamma_info.source.startswith("database:")
    text, _ = rp.build_report(df, db_path=db, study="quick", model=model, dpi=50)
    assert "ping-pong records in the database" in text and "Reduce − Bcast" in text
    bcast = df[df["collective"] == "bcast"]
    model, note = rp.compute_model(bcast, db_path=db, algos=ALGOS)
    assert model["params"].gamma == 0 and model["params"].gamma_info.source == "none"
    text, _ = rp.build_report(bcast, db_path=db, study="quick", model=model, dpi=50)
    assert "not measured: run `colltune model`" in text


def test_report_command(tmp_path, ompi_build):
    db = make_db(tmp_path / "study.db")
    pp = tmp_path / "pp.json"
    import json

    pp.write_text(json.dumps(pingpong()))
    out = tmp_path / "out" / "r.html"
    out.parent.mkdir()  # an output's folder must exist
    res = CliRunner().invoke(report_cmd, ["--db", str(db), "--study", "quick", "-o", str(out),
                                         "--pingpong-json", str(pp), "--gamma", "0.1",
                                         "--dpi", "60"])
    assert res.exit_code == 0, res.output
    assert str(out.resolve()) in res.output
    text = out.read_text()
    assert "ping-pong file" in text and "0.1 ns/B" in text
    assert text.count("<img ") >= 12
    res = CliRunner().invoke(report_cmd, ["--db", str(db), "--study", "nope", "-o", str(out)])
    assert res.exit_code == 2


def test_report_of_a_bench_only_database(tmp_path, ompi_build):
    """A database filled by `colltune bench --db` alone (no study, no mapping, one
    repetition per point) gives a report; and the report leads with the answer."""
    from conftest import colltune

    db = tmp_path / "bench.db"
    res = colltune("bench", "--coll", "bcast", "--algo", "native,linear", "--np", "2",
                   "--sizes", "8,1K", "--iterations", "20", "--reps", "2", "--db", str(db))
    assert res.returncode == 0, res.stderr[-3000:]
    res = colltune("bench", "--coll", "allreduce", "--algo", "native,ring", "--np", "2",
                   "--sizes", "64", "--iterations", "20", "--reps", "2", "--db", str(db))
    assert res.returncode == 0, res.stderr[-3000:]
    out = tmp_path / "r.html"
    res = colltune("report", "--db", str(db), "-o", str(out), "--no-measure", "--dpi", "50")
    assert res.returncode == 0, res.stderr[-3000:]
    text = out.read_text()
    order = [text.index(x) for x in ('id="summary"', 'id="coll-bcast"', 'id="models"',
                                     'id="cost-model"', 'id="provenance"')]
    assert order == sorted(order), "summary, figures, models, cost model, provenance"
    assert "Best algorithm per (processes, size): bcast" in text
    assert "Best algorithm per (processes, size): allreduce" in text
    # one repetition per point: no winner, said so; one process count: no vs-processes
    assert "insufficient" in text
    assert 'data-kind="vs-processes"' not in text
    assert "term &#x27;processes&#x27; dropped" in text or "dropped (no variation)" in text
    # the other readers of the database take it too
    for cmd in (["results", "--db", str(db)], ["results", "--db", str(db), "--coll", "bcast"],
                ["fit", "--db", str(db), "--coll", "bcast"],
                ["plot", "--db", str(db), "--coll", "bcast", "--kind", "best-map", "-o",
                 str(tmp_path / "m.png")],
                ["plot", "--db", str(db), "--coll", "bcast", "--kind", "vs-size", "-o",
                 str(tmp_path / "s.png")]):
        res = colltune(*cmd)
        assert res.returncode == 0, (cmd, res.stderr[-3000:])


def test_report_marks_oversubscribed_points_and_draws_no_conclusion_from_them(tmp_path):
    rng = np.random.default_rng(5)
    rows = []
    for p in (2, 4):
        for a, f in (("native", 1.0), ("linear", 0.5)):
            for r in range(5):
                lat = f * (1 + p) * np.exp(rng.normal(0, 0.02))
                rows.append(dict(collective="bcast", algorithm=a, np=p, size=8, params="",
                                 median_us=lat, min_us=lat, max_us=lat, repetition=r,
                                 ppn=p, cores=2, nodes=1))
    df = pd.DataFrame(rows)
    text, parts = rp.build_report(df, db_path=tmp_path / "x.db", model=None,
                                  model_note="none", dpi=50)
    summary = text[text.index('id="summary"'):text.index('id="coll-bcast"')]
    assert re.search(r"use <b>linear</b> \(np 2, size 8: ×0\.(49|50|51) of native \(5\d % "
                     r"faster\)\)", summary), summary
    assert "np 4" not in summary.split("</p>")[1]  # the verdict sentence: np 2 only
    assert "1 oversubscribed point(s)" in summary and "4 †" in summary
    assert "no conclusion" in summary and "oversubscribed: more processes than cores" in summary


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed "
                                              "(Debian: apt-get install chromium)")
def test_report_renders_in_headless_chromium(built, tmp_path):
    """Opens the report in Chromium: no console messages or errors, every image decoded
    (the page's own check), a screenshot kept in test-artifacts/report/."""
    path, _, parts = built
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, ARTIFACTS / "report.html")
    shot = ARTIFACTS / "report-screenshot.png"
    shot.unlink(missing_ok=True)
    common = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
              "--no-first-run", "--disable-extensions", f"--user-data-dir={tmp_path / 'prof'}",
              "--enable-logging=stderr", "--v=0"]
    url = (ARTIFACTS / "report.html").resolve().as_uri()
    res = subprocess.run(common + [f"--screenshot={shot}", "--window-size=1280,7000", url],
                         capture_output=True, text=True, timeout=180)
    assert shot.exists(), res.stderr[-3000:]
    dom = subprocess.run(common + ["--dump-dom", url], capture_output=True, text=True,
                         timeout=180)
    logs = res.stderr + dom.stderr
    console = [l for l in logs.splitlines() if ":CONSOLE" in l or "Uncaught" in l
               or "Failed to load resource" in l]
    assert not console, console
    n = len(parts.figures)
    assert f'data-figures-rendered="{n}/{n}"' in dom.stdout, \
        re.findall(r"<body[^>]*>", dom.stdout)
    assert dom.stdout.count("<figure") == n
    from PIL import Image

    with Image.open(shot) as im:
        assert im.size == (1280, 7000)
        px = np.asarray(im.convert("RGB"))
    assert (px.min(axis=2) < 200).mean() > 0.02  # not a blank page: text and figures
    # the line figures' colours are on screen (figures drawn, not just text)
    rgb = [tuple(int(h[i:i + 2], 16) for i in (1, 3, 5)) for h in series.OKABE_ITO[:2]]
    near = sum((np.abs(px.astype(int) - np.array(c)).sum(axis=2) < 40).sum() for c in rgb)
    assert near > 200


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed")
def test_first_screen_shows_the_answer(tmp_path):
    """The first screen (1280×900) of a small study's report holds the summary, what to use
    where, before any figure; the screenshot is not blank."""
    rows = [dict(collective="bcast", algorithm=a, np=2, size=s, params="", repetition=r,
                 median_us=(0.5 if a == "linear" and s == 8 else 1.0) * (1 + s / 1e4)
                 * (1 + 0.01 * r)) for a in ("native", "linear", "binomial")
            for s in (8, 65536) for r in range(5)]
    text, _ = rp.build_report(pd.DataFrame(rows), db_path=tmp_path / "x.db", model=None,
                              model_note="none", dpi=50)
    body = text[text.index("<body"):]
    assert body.index('id="summary"') < body.index("<figure") and "<img" not in \
        body[:body.index('id="coll-bcast"')]
    summary = body[body.index('id="summary"'):body.index('id="coll-bcast"')]
    assert "use <b>linear</b>" in summary
    page = tmp_path / "r.html"
    page.write_text(text, encoding="utf-8")
    shot = tmp_path / "first.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                    "--hide-scrollbars", f"--user-data-dir={tmp_path / 'prof'}",
                    f"--screenshot={shot}", "--window-size=1280,900", page.as_uri()],
                   capture_output=True, text=True, timeout=120)
    from PIL import Image

    with Image.open(shot) as im:
        px = np.asarray(im.convert("RGB"))
    assert px.shape[:2] == (900, 1280)
    dark = (px.min(axis=2) < 128).mean()  # text on the first screen, not a blank page
    assert 0.005 < dark < 0.5, dark
    # the summary's heading is within the first screen: the page puts it near the top
    # (the title, one line of counts and the table of contents come before it)
    assert body.index('id="summary"') < body.index("</nav>") + 200


def test_report_of_sparse_records_pingpong_rows_and_no_native(tmp_path):
    """Records as a bare table can hold them: no mapping/params/repetition, size 0,
    ping-pong rows next to collectives, a collective measured without native."""
    rows = [dict(collective="pingpong", algorithm="pingpong", np=2, size=s,
                 median_us=1 + s * 1e-4, min_us=1.0, max_us=2.0) for s in (1, 64, 4096)]
    rows += [dict(collective="bcast", algorithm=a, np=2, size=s, median_us=1 + s * 1e-4 * (i + 1),
                  min_us=1.0, max_us=2.0, mapping=None, params=None, repetition=None)
             for i, a in enumerate(["native", "linear"]) for s in (0, 8, 1024)]
    rows += [dict(collective="reduce", algorithm=a, np=2, size=s, median_us=1 + s * 1e-4 * (i + 1),
                  min_us=1.0, max_us=2.0) for i, a in enumerate(["linear", "binomial"])
             for s in (8, 1024)]
    db = tmp_path / "bare.db"
    con = sqlite3.connect(db)
    pd.DataFrame(rows).to_sql("measurements", con, index=False)
    con.close()
    df = load_measurements(db)
    text, parts = rp.build_report(df, runs=rp.read_runs(db, None, df), db_path=db, model=None,
                                  model_note="none", dpi=50)
    assert 'id="coll-pingpong"' not in text  # point-to-point: the cost model's, not a section
    assert "use <b>native</b> at every measured point" in text
    assert "no baseline measured" in text
    assert "vs-size" in {f.kind for f in parts.figures}
    # one choice per collective: a sentence, not a one-colour map
    assert "best-map" not in {f.kind for f in parts.figures}
    assert text.count("no map is drawn") == 2
    assert "vs-processes" not in {f.kind for f in parts.figures}


def study_db(path: Path, timings=("osu",)) -> Path:
    """A sweep-made database of study 'quick': two rounds (the first of other values),
    5 repetitions; colltune's algorithms interleaved with native in one launch (paired),
    the library's in launches of their own (unpaired, bootstrap); launches stored in a
    shuffled order, as a shuffled sweep stores them. With a second timing method, a
    `colltune bench --db` run (no study) of that timing."""
    from colltune.results import db
    from colltune.results import store

    rng = np.random.default_rng(7)
    conn = db.open_db(path)
    sid = store.upsert_study(conn, "quick", {"collectives": ["allreduce", "reduce"]})
    units = []
    for rnd in (1, 2):
        for c in ("allreduce", "reduce"):
            for rep in range(5):
                for group in (("native", "recursive_doubling"), ("ompi:linear",)):
                    recs = [dict(collective=c, algorithm=a, spec=a, params="", np=2, size=s,
                                 timing=timings[0], iterations=100,
                                 median_us=(1 + 0.05 * i + s * 1e-4) * (3 if rnd == 1 else 1)
                                 * float(np.exp(rng.normal(0, 0.2))))
                            for i, a in enumerate(group) for s in (8, 65536)]
                    units.append((rnd, c, rep, group, recs))
    rng.shuffle(units)
    runs = {rnd: store.store_run(conn, study_id=sid, command_line="colltune quick", round=rnd)
            for rnd in (1, 2)}
    for k, (rnd, c, rep, group, recs) in enumerate(units):
        store.store_unit(conn, study_id=sid, run_id=runs[rnd], round=rnd, key=f"u{k}",
                         collective=c, np=2, nodes=1, ppn=2, mapping="core", rank_order=None,
                         repetition=rep, algorithms=list(group), library_spec=None,
                         command="mpirun -np 2 colltune-bench ...", env=None, notes=None,
                         started_at="2026-01-01T00:00:00+00:00", seconds=1.0, records=recs)
    if len(timings) > 1:
        rid = store.store_run(conn, kind="bench", command_line="colltune bench --db")
        store.store_measurements(conn, rid, [dict(collective="allreduce", algorithm="native",
                                                  spec="native", params="", np=2, size=8,
                                                  timing=timings[1], median_us=0.9)],
                                 nodes=1, ppn=2, repetition=0)
    conn.close()
    return path


CI = re.compile(r"95% CI (\d+\.\d\d)–(\d+\.\d\d)")


def test_terminal_and_report_print_the_same_intervals(tmp_path):
    """quick's "what to use" table (terminal) and the report's summary, built from one
    database, print the same intervals digit for digit: one function (evidence.compare,
    its bootstrap with a recorded seed, on values sorted first), the same rows (the latest
    round of the study: points.latest_round) and the same series names."""
    from rich.console import Console

    from colltune.analysis import evidence
    from colltune.cli.quick import best_table as terminal_table
    from colltune.cli.quick import terminal_rows
    from colltune.output.report.summary import summary_section
    from colltune.results import db, reader

    path = study_db(tmp_path / "s.db")
    conn = db.open_reader(path, schema=True)
    try:
        term_df = reader.measurements_frame(conn, study="quick")  # what quick reads
    finally:
        conn.close()
    console = Console(record=True, width=400)
    console.print(terminal_table(terminal_rows(term_df)))
    terminal = CI.findall(console.export_text())
    report_df = load_measurements(path, study="quick")  # what `colltune report` reads
    html = summary_section(report_df, ["allreduce", "reduce"])
    detail = [CI.findall(t)[-1] for t in re.findall(r"<td>((?:native|recursive|ompi)[^<]*)</td>",
                                                  html) if CI.search(t)]
    assert len(terminal) == 4, console.export_text()  # 2 collectives x 2 sizes
    assert detail == terminal
    assert f"seed {evidence.SEED}" in html
    assert "round 2 of 2" in html  # the rows it concluded from, said
    # the unpaired comparisons' intervals do not depend on the order rows were read in
    shuffled = report_df.sample(frac=1, random_state=3)
    assert CI.findall(summary_section(shuffled, ["allreduce", "reduce"])) == CI.findall(html)


def strip_build_time(text: str) -> str:
    return re.sub(r"<tr><td>report generated</td><td>[^<]*</td></tr>", "", text)


def test_report_built_twice_is_the_same_file(tmp_path, monkeypatch):
    """`colltune report` of one database, built twice in two processes (other hash
    seeds: no set-order dependence), gives the same bytes apart from the build time."""
    from conftest import colltune

    path = study_db(tmp_path / "s.db")
    pp = tmp_path / "pp.json"
    import json

    pp.write_text(json.dumps(pingpong()))
    texts = []
    for k, seed in enumerate(("1", "2")):
        out = tmp_path / f"r{k}.html"
        monkeypatch.setenv("PYTHONHASHSEED", seed)
        if k:  # reproducible builds fix the one varying line too
            monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
        res = colltune("report", "--db", str(path), "--study", "quick", "-o", str(out),
                       "--pingpong-json", str(pp), "--gamma", "0.1", "--dpi", "50",
                       "--algorithms-json", str(write_algos(tmp_path)))
        assert res.returncode == 0, res.stderr[-3000:]
        texts.append(out.read_text())
    assert "report generated" in texts[0]
    assert strip_build_time(texts[0]) != texts[0]
    assert "<td>report generated</td><td>1970-01-01T00:00:00+00:00</td>" in texts[1]
    assert strip_build_time(texts[0]) == strip_build_time(texts[1])


def write_algos(tmp_path: Path) -> Path:
    import json

    p = tmp_path / "algos.json"
    p.write_text(json.dumps([{"name": "recursive_doubling", "collective": "allreduce",
                              "cost": "ceil(log2(p))*(a + n*b + n*g)", "params": []},
                             {"name": "linear", "collective": "reduce",
                              "cost": "(p-1)*(a + n*b + n*g)", "params": []}]))
    return p


def test_report_refuses_to_pool_timing_methods_unless_asked(tmp_path):
    """A bench run (window timing) and a study (osu) in one database: `report` without
    --study refuses, naming both and how to choose; --study picks one; --pool-timings
    pools them and the report says what it pooled."""
    from conftest import colltune

    path = study_db(tmp_path / "s.db", timings=("osu", "window"))
    out = tmp_path / "r.html"
    base = ["report", "--db", str(path), "-o", str(out), "--dpi", "50",
            "--algorithms-json", str(write_algos(tmp_path))]
    res = colltune(*base)
    assert res.returncode == 2 and not out.exists()
    msg = " ".join(res.stderr.split())
    assert "different timing methods" in msg and "osu: study quick" in msg
    assert "window: (bench) (1 measurements)" in msg
    assert "--study 'quick'" in msg and "--pool-timings" in msg
    res = colltune(*base, "--study", "quick")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Pooled timing methods" not in out.read_text()
    res = colltune(*base, "--pool-timings")
    assert res.returncode == 0, res.stderr[-3000:]
    text = out.read_text()
    assert "Pooled timing methods" in text and "window: (bench) (1 measurements)" in text


def test_seeds_and_counts_print_as_integers_and_recommended_series_are_drawn():
    """A seed read as a float beside NULLs prints as the integer it is; the algorithm the
    report recommends is drawn in every line figure even where it is never fastest."""
    import pandas as pd

    from colltune.output.report.page import _fmt
    from colltune.output.series import select_series

    assert _fmt(2143700000.0, "seed") == "2143700000" and _fmt(3.0, "run_id") == "3"
    assert _fmt(2143700000.0, "bytes") == "2.1437e+09"  # other floats as before
    labels = ["native"] + [f"a{i}" for i in range(9)] + ["linear_nb"]
    stats = pd.DataFrame([{"label": lab, "size": s, "center": 10 + i}
                          for i, lab in enumerate(labels) for s in (8, 1024)])
    keep, omitted = select_series(stats, "size")
    assert "linear_nb" in omitted  # never fastest: left out by default
    keep, omitted = select_series(stats, "size", must={"linear_nb"})
    assert keep == ["native", "linear_nb", "a0"]  # native, the recommended, the fastest


def test_simulated_points_say_their_platform_how_stretched_and_what_native_is():
    import pandas as pd

    from colltune.output.report.simulated import SIM_NOTE, platform_text

    g = pd.DataFrame({"np": [8, 512, 1024], "nodes": [1, 43, 86]})
    text = platform_text("tapems-16x12", g)
    assert text.startswith("platform tapems-16x12: 16 node(s) of 12 cores, flat")
    assert "stretched to 86 nodes of the same kind for np 512..1024" in text
    assert "stretched" not in platform_text("tapems-16x12", g.iloc[:1])
    assert "SimGrid's own implementation" in SIM_NOTE


def test_a_quick_shaped_report_prints_on_fewer_than_ten_a4_pages_answer_first(tmp_path):
    """The quick study's shape (4 collectives, np 2, 3 sizes, 15 algorithms, 5 paired
    launches): the summary's answer (one sentence per collective) comes first, before
    how it was decided and the tables; printed by chromium (A4, the page's @page), it
    takes fewer than 10 pages."""
    import shutil
    import subprocess

    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(3)
    rows = []
    for coll in ("bcast", "reduce", "allgather", "allreduce"):
        for size in (8, 65536, 1 << 20):
            for rep in range(5):
                launch = rng.lognormal(0, 0.3)
                for k in range(15):
                    spec = "native" if k == 0 else f"algo{k}"
                    lat = (1 + size / 1e4) * (1 + 0.1 * k) * launch * rng.lognormal(0, 0.05)
                    rows.append(dict(study="quick", collective=coll, algorithm=spec,
                                     spec=spec, params="", np=2, size=size, median_us=lat,
                                     repetition=rep + 1, run_id=1, unit_id=rep, round=1,
                                     ppn=2, cores=2, nodes=1, mapping="core",
                                     timing="osu"))
    df = pd.DataFrame(rows)
    text, _ = rp.build_report(df, db_path=tmp_path / "x.db", study="quick", model=None,
                              model_note="none", dpi=60)
    i = text.index('id="summary"')
    assert text.index('<ul class="answer">', i) < text.index('class="note">Per point', i)
    assert text.count('<li class="verdict"><b>') == 4
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed")
    html_path, pdf = tmp_path / "r.html", tmp_path / "r.pdf"
    html_path.write_text(text)
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                    "--no-pdf-header-footer", f"--print-to-pdf={pdf}", str(html_path)],
                   capture_output=True, timeout=300)
    pages = len(re.findall(rb"/Type\s*/Page[^s]", pdf.read_bytes()))
    assert 1 <= pages < 10, pages
