"""The house: src/colltune in role folders, imports one-way down the layer order, no
cycle between modules, one owner for the database, a light command line.

Every import counts, those inside functions too: a function-level import is a
dependency all the same, only deferred."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import colltune

PKG = Path(colltune.__file__).resolve().parent
ROOT = PKG.parents[1]

# lowest first: a module imports from its own folder or from folders before it
ORDER = ("base", "mpi", "drivers", "results", "studies", "analysis", "rules", "tuning",
         "output", "workflows", "cli")
HEAVY = ("pandas", "numpy", "matplotlib", "statsmodels", "sklearn", "scipy")
MAX_LINES = 900


def _module_name(path: Path) -> str:
    parts = ("colltune",) + path.relative_to(PKG).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _all_modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


MODULES = _all_modules()


def _imports(path: Path) -> list[tuple[str, int]]:
    """(absolute colltune module, line) for every import in the file, wherever it stands;
    `from pkg import mod` counts as an import of the module pkg.mod."""
    name = _module_name(path)
    pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = pkg[:len(pkg) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            for a in node.names:
                sub = f"{mod}.{a.name}"
                found.append((sub if sub in MODULES else mod, node.lineno))
    return [(m, line) for m, line in found if m == "colltune" or m.startswith("colltune.")]


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ORDER else None


def test_every_module_lives_in_a_role_folder():
    loose = [m for m in MODULES if m not in ("colltune", "colltune.__main__")
             and _layer(m) is None]
    assert loose == [], f"modules outside the role folders {ORDER}: {loose}"


def test_imports_point_down_the_layer_order():
    bad = []
    for mod, path in MODULES.items():
        mine = _layer(mod)
        if mine is None:
            continue
        for dep, line in _imports(path):
            theirs = _layer(dep)
            if theirs is not None and ORDER.index(theirs) > ORDER.index(mine):
                bad.append(f"{path.relative_to(PKG)}:{line} ({mine}) imports {dep} ({theirs})")
    assert bad == [], "imports up the layer order:\n" + "\n".join(bad)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _graph() -> dict[str, set[str]]:
    graph = {}
    for mod, path in MODULES.items():
        if path.name == "__init__.py" and not path.read_text().strip():
            continue
        graph[mod] = {d for d, _ in _imports(path) if d in MODULES and d != mod
                      and not (MODULES[d].name == "__init__.py"
                               and not MODULES[d].read_text().strip())}
    return graph


# what the command line leaves to the workflows: it neither launches nor writes results
CLI_FORBIDDEN = ("colltune.mpi.launch", "colltune.mpi.simgrid", "colltune.results.store",
                 "colltune.studies.sweep")


def _cli_forbidden(dep: str) -> bool:
    if dep.startswith("colltune.drivers.") and dep != "colltune.drivers.registry":
        return True
    return dep == "colltune.drivers" or dep in CLI_FORBIDDEN


def test_the_command_line_neither_launches_nor_writes_results():
    """cli/ parses, calls a workflow and renders: it imports no driver (but the
    algorithm table, drivers/registry), no launcher, no simulator, no writer of
    results and no sweep (workflows/ does that)."""
    bad = []
    for mod, path in MODULES.items():
        if _layer(mod) != "cli":
            continue
        bad += [f"{path.relative_to(PKG)}:{line} imports {dep}"
                for dep, line in _imports(path) if _cli_forbidden(dep)]
    assert bad == [], "the command line launches or writes:\n" + "\n".join(bad)


def test_the_command_line_rule_finds_a_driver_import():
    assert _cli_forbidden("colltune.drivers.bench") and _cli_forbidden("colltune.mpi.launch")
    assert not _cli_forbidden("colltune.drivers.registry")
    assert not _cli_forbidden("colltune.workflows.sweep")


RECORDING = ("upsert_study", "store_unit", "store_failure", "mark_stale_runs",
             "set_launcher_command")


def test_studies_are_recorded_by_the_one_recorder():
    """A study's row, its launches and their failures are written by
    studies/recorder.py alone (sweeps and tune --measure alike), through results/."""
    writers = []
    for mod, path in MODULES.items():
        if _layer(mod) == "results" or mod == "colltune.studies.recorder":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr in RECORDING:
                writers.append(f"{path.relative_to(PKG)}:{node.lineno} {node.attr}")
            elif isinstance(node, ast.ImportFrom) and any(a.name in RECORDING
                                                          for a in node.names):
                writers.append(f"{path.relative_to(PKG)}:{node.lineno} imports a writer")
    assert writers == [], "studies written beside studies/recorder.py:\n" + "\n".join(writers)
    from colltune.studies import recorder, sweep
    from colltune.workflows import tune

    assert recorder.Recorder in (vars(sweep).values()) and recorder.Recorder in (
        vars(tune).values())


def test_no_import_cycle():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_one():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_file_is_longer_than_the_limit():
    sources = list(PKG.rglob("*.py")) + [p for p in (ROOT / "native").rglob("*")
                                           if p.suffix in (".c", ".h")]
    long = {str(p.relative_to(ROOT)): n for p in sources
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}, f"files over {MAX_LINES} lines: {long}"


def test_only_the_results_layer_opens_the_database():
    users = sorted(str(p.relative_to(PKG)) for m, p in MODULES.items()
                   if any(n == "sqlite3" for n in _third_party(p)) and _layer(m) != "results")
    assert users == [], f"sqlite3 imported outside colltune/results: {users}"


def _third_party(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_only_the_command_line_knows_click():
    users = sorted(str(p.relative_to(PKG)) for m, p in MODULES.items()
                   if "click" in _third_party(p) and _layer(m) != "cli")
    assert users == []


def test_no_domain_module_imports_click_even_indirectly():
    """Each module below the command line imported alone, in a fresh interpreter."""
    below = [m for m in MODULES if _layer(m) not in (None, "cli")]
    code = ("import importlib, json, sys\n"
            "bad = []\n"
            f"for m in {json.dumps(below)}:\n"
            "    importlib.import_module(m)\n"
            "    if 'click' in sys.modules:\n"
            "        bad.append(m)\n"
            "        break\n"
            "print(json.dumps(bad))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == []


def test_no_module_is_named_like_a_standard_library_module():
    clash = sorted(m for m in MODULES if m.rsplit(".", 1)[-1] in sys.stdlib_module_names
                   and MODULES[m].name != "__init__.py")
    assert clash == []


def test_the_command_line_is_one_package_with_every_command():
    from colltune.cli import main
    from colltune.cli._common import Command

    assert {"algorithms", "bench", "build", "export", "fit", "heat", "info", "model",
            "pingpong", "plot", "probe", "quick", "report", "results", "stream", "sweep",
            "verify"} <= set(main.commands)
    # every command goes through the one error path
    assert all(isinstance(c, Command) for c in main.commands.values())


def test_the_architecture_doc_and_the_readme_name_every_module_and_command():
    """docs/architecture.md names every module (as folder/file.py) and every command;
    the README's Layout names every role folder."""
    from colltune.cli import main

    arch = (ROOT / "docs" / "architecture.md").read_text()
    readme = (ROOT / "README.md").read_text()
    missing = [str(p.relative_to(PKG)) for m, p in MODULES.items()
               if p.name not in ("__init__.py", "__main__.py")
               and str(p.relative_to(PKG)) not in arch]
    missing += [f"package {p.parent.relative_to(PKG)}/" for m, p in MODULES.items()
                if p.name == "__init__.py" and p.parent != PKG and p.read_text().strip()
                and f"{p.parent.relative_to(PKG)}/" not in arch]
    assert missing == [], f"docs/architecture.md does not name: {missing}"
    commands = [c for c in main.commands if f"`{c}" not in arch and f" {c} " not in arch]
    assert commands == [], f"docs/architecture.md does not name the commands {commands}"
    layout = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    folders = [f"src/colltune/{f}/" for f in ORDER if f"src/colltune/{f}/" not in layout]
    assert folders == [], f"the README's Layout does not name {folders}"
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


def test_colltune_imports_stand_at_the_top_of_files():
    """A colltune module is imported at the top of the file; inside a function only as an
    optional import (in a try block), never to dodge a cycle."""
    late = []
    for mod, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        optional = {id(b) for n in ast.walk(tree) if isinstance(n, ast.Try) for b in n.body}
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and id(node) not in optional and (
                        node.level or (node.module or "").startswith("colltune")):
                    late.append(f"{path.relative_to(PKG)}:{node.lineno}")
    assert sorted(set(late)) == []
