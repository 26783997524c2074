"""The `colltune` command."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from . import __version__
from . import bench as bench_mod
from . import launch
from . import libalgos
from . import mpi as mpi_mod
from . import registry
from . import verify as verify_mod
from .console import stdout_console
from .build import BuildError, build as do_build
from .files import write_atomic
from .units import fmt_size, parse_ints, parse_sizes

out = stdout_console()
err = Console(stderr=True)

MPI_HELP = "MPI library: openmpi (default), mpich, or a path to a prefix/bin dir/mpicc"


def _fail(msg: str) -> None:
    err.print(f"[bold red]error:[/] {msg}", highlight=False)
    sys.exit(2)


def _build(mpi_spec: str | None, force: bool = False, verbose: bool = False):
    try:
        mpi = mpi_mod.find(mpi_spec)
    except mpi_mod.MPIError as exc:
        _fail(str(exc))
    try:
        return do_build(mpi, force=force, verbose=verbose)
    except (BuildError, FileNotFoundError) as exc:
        _fail(str(exc))


def _check_names(build, collective: str, specs: list[str]) -> None:
    valid = registry.names(build, collective)
    for spec in specs:
        name = spec.split(":", 1)[0]
        if name not in valid:
            _fail(f"unknown {collective} algorithm '{name}'; valid: {', '.join(valid)}")


def _split_specs(text: str) -> list[str]:
    """'chain:segsize=8192,fanout=4,binomial' -> ['chain:segsize=8192,fanout=4', 'binomial']."""
    specs: list[str] = []
    for tok in (t.strip() for t in text.split(",")):
        if not tok:
            continue
        if "=" in tok and ":" not in tok and specs:
            specs[-1] += "," + tok
        else:
            specs.append(tok)
    return specs


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="colltune")
def main() -> None:
    """colltune: MPI collective algorithms, verified and benchmarked.

    Algorithms are written on MPI point-to-point in the native library; every
    command builds it on first use against the chosen MPI library.
    """


@main.command()
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
@click.option("--force", is_flag=True, help="Rebuild from scratch.")
@click.option("-v", "--verbose", is_flag=True, help="Show the compiler output.")
def build(mpi_spec: str | None, force: bool, verbose: bool) -> None:
    """Build the native part against an MPI library (cached per library)."""
    b = _build(mpi_spec, force=force, verbose=verbose)
    out.print(f"built against {b.mpi.banner} in {b.dir}", highlight=False)


@main.command()
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
def info(mpi_spec: str | None) -> None:
    """MPI implementation and version, compiler, build location."""
    b = _build(mpi_spec)
    cc = subprocess.run([str(b.mpi.mpicc), "--version"], capture_output=True, text=True,
                        env=b.mpi.env()).stdout.splitlines()
    t = Table(show_header=False, box=None)
    t.add_row("colltune", __version__)
    t.add_row("MPI", f"{b.mpi.name} {b.mpi.version}")
    t.add_row("MPI tools", str(b.mpi.bindir))
    t.add_row("launcher", str(b.mpi.launcher))
    t.add_row("compiler", f"{b.mpi.mpicc} ({cc[0] if cc else 'unknown'})")
    t.add_row("build", str(b.dir))
    t.add_row("cores", str(launch.cores()))
    out.print(t)


@main.command()
@click.option("--coll", "colls", help="Only these collectives (comma-separated).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
def algorithms(colls: str | None, as_json: bool, mpi_spec: str | None) -> None:
    """The table of algorithms: parameters, constraints, fallbacks, cost formulas."""
    b = _build(mpi_spec)
    wanted = colls.split(",") if colls else list(registry.COLLECTIVES)
    for c in wanted:
        if c not in registry.COLLECTIVES:
            _fail(f"unknown collective '{c}'; valid: {', '.join(registry.COLLECTIVES)}")
    algos = [a for a in registry.algorithms(b) if a.collective in wanted]
    if as_json:
        click.echo(json.dumps([a.__dict__ for a in algos], indent=2))
        return
    for c in wanted:
        t = Table(title=f"{c}", title_justify="left", show_lines=False)
        for col in ("algorithm", "parameters", "constraint -> fallback", "Hockney cost",
                    "pattern"):
            t.add_column(col, overflow="fold")
        for a in algos:
            if a.collective != c:
                continue
            cons = ", ".join(a.constraints)
            t.add_row(a.name, a.param_text(), f"{cons} -> {a.fallback}" if cons else "",
                      a.cost or "", a.summary)
        out.print(t)
    out.print("cost: a = alpha (latency, s), b = beta (s/byte), g = gamma (reduction s/byte), "
              "n = bytes, p = processes, s = segment bytes, k = fan-out/radix", highlight=False)


@main.command()
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
@click.option("--np", "nps", default=",".join(map(str, verify_mod.DEFAULT_NPS)),
              show_default=True, help="Process counts, one launch each.")
@click.option("--coll", "colls", default=",".join(registry.COLLECTIVES), show_default=True,
              help="Collectives to verify.")
@click.option("--algo", "algos", help="Only these algorithm names (default: all).")
@click.option("--quick", is_flag=True, help="Skip the large count (2^17+3 elements).")
@click.option("--timeout", default=1200.0, show_default=True,
              help="Seconds per launch before it counts as a hang.")
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON.")
def verify(mpi_spec, nps, colls, algos, quick, timeout, as_json) -> None:
    """Compare every algorithm with the MPI library's own collective.

    Cases: roots first/last/middle, counts 0, 1, 7, 1000, 2^17+3, datatypes
    char/int/double/strided vector, ops sum/max/prod/a non-commutative user op,
    in-place, and each parameter (segment size, fan-out, radix, inner
    algorithms) moved through its edge values. Exits 1 naming every failing case.
    """
    b = _build(mpi_spec)
    try:
        np_list = parse_ints(nps, "--np")
    except ValueError as exc:
        _fail(str(exc))
    coll_list = [c.strip() for c in colls.split(",") if c.strip()]
    for c in coll_list:
        if c not in registry.COLLECTIVES:
            _fail(f"unknown collective '{c}'; valid: {', '.join(registry.COLLECTIVES)}")
    algo_list = [a.strip() for a in algos.split(",")] if algos else None
    if algo_list:
        known = {a.name for a in registry.algorithms(b, hidden=True) if a.collective in coll_list}
        for a in algo_list:
            if a not in known:
                _fail(f"unknown algorithm '{a}' for {', '.join(coll_list)}; valid: "
                      f"{', '.join(sorted(known - {'_broken'}))}")
    err.print(f"verifying on {b.mpi.banner}: np {', '.join(map(str, np_list))}", highlight=False)

    def progress(r: verify_mod.RunOutcome) -> None:
        for note in r.notes:
            err.print(f"  note: {note}", highlight=False)
        status = "ok" if r.ok else "FAILED"
        cases = r.summary["cases"] if r.summary else "?"
        secs = f"{r.summary['seconds']:.1f} s" if r.summary else ""
        err.print(f"  np={r.np:<3} {status:6} {cases} cases {secs}", highlight=False)

    report = verify_mod.run(b, np_list, coll_list, algo_list, quick=quick, timeout=timeout,
                            progress=progress)
    if as_json:
        click.echo(json.dumps({"mpi": b.mpi.banner, "ok": report.ok, "runs": [
            r.__dict__ for r in report.runs]}, indent=2))
    else:
        t = Table(title=f"verify on {b.mpi.banner}", title_justify="left")
        for col in ("collective", "algorithm", "np", "cases", "failed", "fallback"):
            t.add_column(col)
        for r in report.runs:
            for a in r.algos:
                t.add_row(a["collective"], a["algorithm"], str(a["np"]), str(a["cases"]),
                          str(a["failed"]), a["fallback"] or "")
        out.print(t)
    lines = report.failure_lines()
    for line in lines:
        err.print(f"[red]{line}[/]", highlight=False)
    if report.ok:
        err.print(f"[green]verify passed:[/] {report.cases} cases, np "
                  f"{', '.join(map(str, np_list))}", highlight=False)
    else:
        err.print(f"[bold red]verify failed[/]: {len(lines)} problem(s)", highlight=False)
        sys.exit(1)


def _bench_cell(r: dict | None, base: dict | None, is_base: bool) -> str:
    if not r:
        return ""
    if r.get("median_us") is None:
        return "no valid sample"
    cell = f"{r['median_us']:.2f}"
    if base and not is_base and base.get("median_us"):
        cell += f" ×{r['median_us'] / base['median_us']:.2f}"
    if r.get("fallback"):
        cell += " *"
    return cell


def _bench_table(records: list[dict], title: str) -> Table:
    """One row per algorithm and a column per size when that fits, else the transpose."""
    algos = list(dict.fromkeys(r["spec"] for r in records))
    sizes = sorted({r["size"] for r in records})
    by = {(r["spec"], r["size"]): r for r in records}
    native = "native" if "native" in algos else None
    t = Table(title=title, title_justify="left")
    if len(sizes) <= 6 or len(sizes) < len(algos):
        t.add_column("algorithm", overflow="fold")
        for s in sizes:
            t.add_column(fmt_size(s), justify="right", no_wrap=True)
        for a in algos:
            t.add_row(a, *(_bench_cell(by.get((a, s)), by.get((native, s)), a == native)
                           for s in sizes))
    else:
        t.add_column("size", justify="right")
        for a in algos:
            t.add_column(a, justify="right", overflow="fold")
        for s in sizes:
            t.add_row(fmt_size(s), *(_bench_cell(by.get((a, s)), by.get((native, s)),
                                                 a == native) for a in algos))
    return t


CSV_FIELDS = ["collective", "algorithm", "params", "spec", "np", "size", "dtype", "op", "root",
              "iterations", "warmup", "timing", "rep_min_us", "mean_us", "median_us", "p90_us",
              "p99_us", "rep_max_us", "stddev_us", "valid_reps", "invalid", "rank_min_us",
              "rank_max_us", "window_us", "sleep_us", "time_budget_s", "valid", "fallback",
              "library", "launches", "mpi", "host", "command"]


def _emit(records: list[dict], fmt: str, output: str | None, title: str) -> None:
    if fmt == "table":
        groups: dict = {}
        for r in records:
            groups.setdefault((r["collective"], r["np"]), []).append(r)
        for (c, np), recs in groups.items():
            timing = "/".join(sorted({str(r.get("timing", "osu")) for r in recs}))
            checked = [r.get("valid") for r in recs if r.get("valid") is not None]
            note = (f"; validated: {sum(map(bool, checked))}/{len(checked)} pass"
                    if checked else "")
            out.print(_bench_table(recs, f"{c}, {np} processes, median latency in µs "
                                         f"({title}; {timing} timing; ×ratio to native{note})"))
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
            click.echo(text, nl=False)


def _run_bench(b, specs: list[bench_mod.BenchSpec]) -> list[dict]:
    from rich.progress import Progress

    records: list[dict] = []
    host = os.uname().nodename
    seen_np: set[int] = set()
    with Progress(console=err, transient=True) as prog:
        task = prog.add_task("benchmark", total=len(specs))
        for spec in specs:
            prog.update(task, description=f"{spec.collective} np={spec.np}")
            try:
                recs, notes = libalgos.run_bench(b, spec)
            except (bench_mod.BenchError, ValueError) as exc:
                _fail(str(exc))
            for r in recs:
                r["host"] = host
            if notes and spec.np not in seen_np:
                seen_np.add(spec.np)
                prog.console.print("note: " + "; ".join(notes), highlight=False)
            records.extend(recs)
            prog.advance(task)
    return records


@main.command()
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
@click.option("--coll", required=True, type=click.Choice(registry.COLLECTIVES),
              help="Collective to benchmark.")
@click.option("--algo", "algos", default="native", show_default=True,
              help="Algorithms, comma-separated, with parameters: native,binomial,chain:fanout=2; "
                   "the MPI library's own: ompi:NAME[:k=v] (Open MPI coll/tuned), mpich:NAME; "
                   "'all' = ours + native + the library's, 'ours', 'ompi:all', 'mpich:all'.")
@click.option("--np", "nps", default="2", show_default=True, help="Process counts.")
@click.option("--sizes", default="1..1M", show_default=True,
              help="Bytes: list (8,64K,1M) or power-of-two range (1..1M).")
@click.option("--iterations", type=int, help="Timed calls per point (default 1000, 100 > 8K).")
@click.option("--warmup", type=int, help="Untimed calls first (default iterations/10).")
@click.option("--reps", default=3, show_default=True, help="Repetitions, interleaved.")
@click.option("--root", default=0, show_default=True)
@click.option("--dtype", default="char", show_default=True,
              type=click.Choice(["char", "int", "float", "double"]))
@click.option("--op", default="sum", show_default=True,
              type=click.Choice(["sum", "max", "min", "prod"]))
@click.option("--timing", default="auto", show_default=True,
              type=click.Choice(["auto", "osu", "window"]),
              help="osu: each call timed, barrier between calls; window: synchronised clocks, "
                   "one call per start window, max over ranks (ReproMPI); auto: window when "
                   "every process has its own core, else osu.")
@click.option("--sleep", "sleep_us", default=0.0, show_default=True,
              type=click.FloatRange(min=0), help="Microseconds to sleep between calls (untimed).")
@click.option("--time-budget", "time_budget", type=click.FloatRange(min=0, min_open=True),
              help="Seconds per (size, algorithm), all repetitions; replaces --iterations.")
@click.option("--validate", is_flag=True,
              help="Check each point against the MPI library's collective; exit 1 on a difference.")
@click.option("--raw", is_flag=True, help="Records include samples_us (per repetition/sample).")
@click.option("--format", "fmt", default="table", show_default=True,
              type=click.Choice(["table", "csv", "json"]))
@click.option("-o", "--output", help="Write csv/json here (atomically) instead of stdout.")
@click.option("--db", "db_path", is_flag=False, flag_value="colltune.db", default=None,
              type=click.Path(dir_okay=False),
              help="Also store the records in this results database (--db alone: colltune.db).")
def bench(mpi_spec, coll, algos, nps, sizes, iterations, warmup, reps, root, dtype, op, timing,
          sleep_us, time_budget, validate, raw, fmt, output, db_path) -> None:
    """Latency of algorithms, interleaved in one launch per process count."""
    b = _build(mpi_spec)
    try:
        size_list = parse_sizes(sizes)
        np_list = parse_ints(nps, "--np")
    except ValueError as exc:
        _fail(str(exc))
    if iterations is not None and time_budget is not None:
        _fail("--iterations and --time-budget exclude each other: give one")
    specs_list = _split_specs(algos)
    try:
        specs_list = libalgos.expand_algos(b, coll, specs_list)  # all / ours / ompi:all ...
        for s in specs_list:
            if libalgos.is_lib_spec(s):
                libalgos.lib_env(b.mpi, coll, s)  # validates: library, name, parameters
    except ValueError as exc:
        _fail(str(exc))
    _check_names(b, coll, [s for s in specs_list if not libalgos.is_lib_spec(s)])
    specs = [bench_mod.BenchSpec(coll, specs_list, np, size_list, iterations, warmup, reps,
                                 root, dtype, op, timing=timing, sleep_us=sleep_us,
                                 time_budget=time_budget, validate=validate, raw=raw)
             for np in np_list]
    records = _run_bench(b, specs)
    _emit(records, fmt, output, b.mpi.banner)
    if db_path:
        from . import db as db_mod

        run_id = db_mod.store_bench(records, mpi=b.mpi, path=db_path, argv=sys.argv)
        err.print(f"stored as run {run_id} in {db_path}", highlight=False)
    failures = bench_mod.validation_failures(records)
    if failures:
        for r in failures:
            err.print(f"[bold red]validation failed:[/] {r['collective']}/{r['spec']} "
                      f"np={r['np']} size={r['size']}", highlight=False)
        sys.exit(1)


@click.command()
@click.option("--mpi", "mpi_spec", help=MPI_HELP)
@click.option("--db", "db_path", default="colltune.db", show_default=True,
              type=click.Path(dir_okay=False), help="Results database.")
@click.option("-o", "--output", "report_path", default="quick-report.html", show_default=True,
              type=click.Path(dir_okay=False), help="The HTML report.")
@click.option("--new-round", is_flag=True,
              help="Measure again (a new round) even if the study is already stored.")
@click.pass_context
def quick(ctx, mpi_spec, db_path, report_path, new_round) -> None:
    """The main job: the `quick` study (sweep --preset quick) into the results database,
    a table of every algorithm next to native, and the HTML report."""
    from . import db as db_mod

    try:
        ctx.invoke(sweep.sweep, preset="quick", db_path=db_path, mpi_spec=mpi_spec,
                   new_round=new_round)
    except SystemExit as exc:  # failed launches are in the database and the report
        if exc.code not in (0, None):
            err.print("[yellow]some launches failed; they are listed in the report[/]")
    conn = db_mod.open_db(Path(db_path))
    try:
        df = db_mod.measurements_frame(conn, study="quick")
    finally:
        conn.close()
    if df.empty:
        _fail(f"the quick study stored no measurements in {db_path}")
    df = df[df["round"] == df["round"].max()]
    agg = (df.groupby(["collective", "np", "spec", "size"], sort=False)
             .agg(median_us=("median_us", "median"), fallback=("fallback", "first"))
             .reset_index())
    b = _build(mpi_spec)
    order = {c: {n: i for i, n in enumerate(["native"] + registry.names(b, c))}
             for c in set(agg["collective"])}
    records = sorted((dict(r, fallback=r["fallback"] if isinstance(r["fallback"], str)
                           and r["fallback"] else None) for r in agg.to_dict("records")),
                     key=lambda r: order[r["collective"]].get(r["spec"], 999))
    banner = f"{df['mpi_kind'].iloc[0]} {df['mpi_version'].iloc[0]}; median of repetitions"
    _emit(records, "table", None, banner)
    ctx.invoke(report.report, db_path=db_path, study="quick", output=report_path)


# commands defined in their own modules
from . import costmodel, fit, heat, p2p, plot, report, results, sweep  # noqa: E402

main.add_command(p2p.pingpong)
main.add_command(p2p.probe)
main.add_command(heat.heat)
main.add_command(heat.stream)
main.add_command(fit.fit)
main.add_command(costmodel.model)
main.add_command(plot.plot)
main.add_command(report.report)
main.add_command(sweep.sweep)
main.add_command(results.results)
main.add_command(results.export)
main.add_command(quick)


if __name__ == "__main__":  # pragma: no cover
    main()
