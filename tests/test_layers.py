"""The layers are one-way: the command line (colltune.cli) on top, the only code that
knows click; the domain modules below it work from Python without click."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import colltune

PKG = Path(colltune.__file__).resolve().parent


def _modules() -> list[str]:
    """Every module of the package outside the command-line layer."""
    names = []
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(PKG)
        if rel.parts[0] == "cli" or rel.name == "__main__.py":
            continue
        parts = ("colltune",) + rel.with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_the_domain_modules_are_found():
    mods = _modules()
    for m in ("colltune.output.report", "colltune.drivers.bench", "colltune.studies.sweep", "colltune.analysis.fit",
              "colltune.base.errors"):
        assert m in mods
    assert not any(m.startswith("colltune.cli") for m in mods)


def test_no_domain_module_imports_click():
    """Each module imported alone, in a fresh interpreter: click stays out."""
    code = ("import importlib, json, sys\n"
            "bad = {}\n"
            f"for m in {json.dumps(_modules())}:\n"
            "    before = set(sys.modules)\n"
            "    importlib.import_module(m)\n"
            "    if 'click' in sys.modules:\n"
            "        bad[m] = sorted(x for x in set(sys.modules) - before if x.startswith('colltune'))\n"
            "        break\n"
            "print(json.dumps(bad))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {}, res.stdout
    res = subprocess.run([sys.executable, "-c", "import sys, colltune.output.report; "
                          "print('click' in sys.modules)"], capture_output=True, text=True,
                         timeout=120)
    assert res.stdout.strip() == "False", res.stderr


def _imports(path: Path) -> set[str]:
    """Absolute names of the colltune modules a file imports (relative imports resolved)."""
    rel = path.relative_to(PKG)
    pkg = ["colltune", *rel.parts[:-1]]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = pkg[:len(pkg) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            found.add(mod)
            found |= {f"{mod}.{a.name}" for a in node.names}
    return found


def test_no_module_below_the_command_line_imports_it():
    offenders = {}
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(PKG)
        if rel.parts[0] == "cli" or rel.name == "__main__.py":
            continue
        bad = sorted(m for m in _imports(p)
                     if m == "colltune.cli" or m.startswith("colltune.cli.") or m == "click"
                     or m.startswith("click."))
        if bad:
            offenders[str(rel)] = bad
    assert offenders == {}


def test_the_command_line_is_one_package_with_every_command():
    from colltune.cli import main

    assert {"algorithms", "bench", "build", "export", "fit", "heat", "info", "model",
            "pingpong", "plot", "probe", "quick", "report", "results", "stream", "sweep",
            "verify"} <= set(main.commands)
    # every command goes through the one error path
    from colltune.cli._common import Command

    assert all(isinstance(c, Command) for c in main.commands.values())


HEAVY = ("pandas", "numpy", "matplotlib", "statsmodels", "sklearn")


def test_the_command_line_starts_without_heavy_modules():
    """`colltune --help`, `colltune algorithms --help` and the like load no pandas, numpy,
    matplotlib, statsmodels or sklearn: the modules that need them get them on first use
    (colltune.base.lazy)."""
    code = ("import contextlib, io, json, sys\n"
            "import colltune.cli\n"
            "for args in (['--help'], ['algorithms', '--help'], ['report', '--help'],\n"
            "             ['tune', '--help'], ['plot', '--help'], ['load', '--help']):\n"
            "    with contextlib.redirect_stdout(io.StringIO()):\n"
            "        try:\n"
            "            colltune.cli.main(args)\n"
            "        except SystemExit as exc:\n"
            "            assert exc.code in (0, None), (args, exc.code)\n"
            f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {list(HEAVY)!r})))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout.strip().splitlines()[-1]) == [], res.stdout
