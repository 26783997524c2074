"""benchmarks/ cannot drift: every script answers --help, speaks the project's vocabulary
(`--size`, repeatable, as the command line: README's Options), and the ones that measure
run once with their smallest arguments against the real MPI library (a few seconds
each). lab/scripts/ take the same `--size`."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from colltune.base.units import add_size_option, parse_sizes

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))
LAB_SCRIPTS = sorted((ROOT / "lab" / "scripts").glob("*.py"))
# another change of issue 51 rewrites hier_sim.py; its --help is checked here, its
# vocabulary once that change lands (then drop it from this set)
VOCABULARY_PENDING: set[str] = set()


def _run(*args, timeout=120):
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def test_every_benchmark_script_answers_help_in_the_projects_vocabulary():
    """One interpreter for all (each script's parser, built as `python script --help`
    builds it), so that the whole check costs one start of Python."""
    code = (
        "import runpy, sys, io, contextlib\n"
        "for path in sys.argv[1:]:\n"
        "    sys.argv = [path, '--help']\n"
        "    out = io.StringIO()\n"
        "    try:\n"
        "        with contextlib.redirect_stdout(out):\n"
        "            runpy.run_path(path, run_name='__main__')\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code in (0, None), (path, exc.code)\n"
        "    print('=== ' + path)\n"
        "    print(out.getvalue())\n")
    res = _run("-c", code, *SCRIPTS)
    assert res.returncode == 0, res.stderr[-3000:]
    helps = {Path(p).name: text for p, text in
             (chunk.split("\n", 1) for chunk in res.stdout.split("=== ")[1:])}
    assert sorted(helps) == sorted(p.name for p in SCRIPTS)
    for name, text in helps.items():
        assert text.lstrip().startswith("usage:"), name
        if name not in VOCABULARY_PENDING:
            assert "--sizes" not in text, f"{name}: the old spelling, not --size"
    sized = [n for n, t in helps.items() if "--size" in t]
    assert {"osu_agreement.py", "ours_vs_library.py", "pmpi_overhead.py",
            "timing_spread.py"} <= set(sized)
    shell = subprocess.run(["bash", "-n", str(ROOT / "benchmarks" / "offline_run.sh")],
                           capture_output=True, text=True)
    assert shell.returncode == 0, shell.stderr


def test_no_script_defines_the_old_sizes_option():
    for path in SCRIPTS + LAB_SCRIPTS:
        if path.name in VOCABULARY_PENDING:
            continue
        text = path.read_text()
        assert 'add_argument("--sizes"' not in text and "add_argument('--sizes'" not in text, \
            path.name
    uses = [p.name for p in SCRIPTS + LAB_SCRIPTS if "parse_sizes(args.sizes" in p.read_text()]
    assert all("add_size_option" in (ROOT / d / n).read_text()
               for n in uses for d in ("benchmarks", "lab/scripts") if (ROOT / d / n).exists())


def test_the_scripts_size_option_reads_as_the_command_lines():
    ap = argparse.ArgumentParser(prog="s")
    add_size_option(ap, default="8,1K")
    assert parse_sizes(ap.parse_args([]).sizes) == [8, 1024]
    args = ap.parse_args(["--size", "8,64K", "--size", "1M"])
    assert parse_sizes(args.sizes) == [8, 65536, 1 << 20]
    assert parse_sizes(ap.parse_args(["--size", "1:8"]).sizes) == [1, 2, 4, 8]
    assert parse_sizes(ap.parse_args(["--sizes", "4K"]).sizes) == [4096]  # dated commands
    none = argparse.ArgumentParser(prog="s")
    add_size_option(none)
    assert none.parse_args([]).sizes is None
    with pytest.raises(SystemExit) as exc:
        ap.parse_args(["--size", "8,lots"])
    assert exc.value.code == 2


def _sizes_of(rows) -> set[tuple[str, int]]:
    return {(r["collective"], int(r["size"])) for r in rows}


# the measuring scripts at their smallest (about 4-10 s each here), and what their output
# must hold: the sizes asked for, of the collective asked for
SMALLEST = {
    "timing_spread.py": (["--np", "1", "--size", "8", "--launches", "1", "--iterations", "5"],
                         lambda d: (_sizes_of(d) == {("bcast", 8), ("allreduce", 8)}
                                    and {r["timing"] for r in d} == {"osu", "window"})),
    "ours_vs_library.py": (["--np", "1", "--colls", "bcast", "--size", "8", "--size", "64",
                            "--reps", "1", "--iterations", "5"],
                           lambda d: (_sizes_of(d) == {("bcast", 8), ("bcast", 64)}
                                      and any(r["spec"].startswith("ompi:") for r in d)
                                      and all(r["median_us"] > 0 for r in d))),
    "osu_agreement.py": (["--np", "2", "--coll", "bcast", "--size", "8", "--launches", "1",
                          "--iterations", "5", "--goal", "1000"],
                         lambda d: (_sizes_of(d["rows"]) == {("bcast", 8)}
                                    and all(r["ratio"] > 0 for r in d["rows"]))),
    "pmpi_overhead.py": (["--np", "1", "--coll", "bcast", "--size", "8", "--launches", "1",
                          "--iterations", "5"],
                         lambda d: (_sizes_of(d["rows"]) == {("bcast", 8)}
                                    and all(r["library_us"] > 0 for r in d["rows"]))),
}


@pytest.mark.parametrize("script", sorted(SMALLEST))
def test_the_measuring_scripts_run_with_their_smallest_arguments(tmp_path, ompi_build, script):
    args, check = SMALLEST[script]
    out = tmp_path / "out.json"
    res = _run(ROOT / "benchmarks" / script, *args, "-o", out, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert check(json.loads(out.read_text())), out.read_text()[:3000]
