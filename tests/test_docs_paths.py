"""No dead path in the docs: every `src/...`, `native/...`, `benchmarks/...`, `tests/...`,
`docs/...` path and every `colltune.x.y` module name that README.md, docs/ or a
benchmark script mentions exists in this tree."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEXTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")),
         *sorted((ROOT / "benchmarks").glob("*.py"))]

PATH = re.compile(r"(?<![\w/.-])((?:src|native|benchmarks|tests|docs|\.ci)/"
                  r"[A-Za-z0-9_./*-]*[A-Za-z0-9_*/])")
MODULE = re.compile(r"(?<![\w/.-])(colltune(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
# colltune.db, colltune.h, colltune.db.damaged ...: file names, not modules
FILE_SUFFIXES = {"db", "h", "so", "toml", "json", "py", "c", "html", "md", "csv", "rules",
                 "txt", "damaged", "pdf", "png", "log", "profile"}
# paths of other projects' repositories, named as such in the text
FOREIGN = {"docs/tuning-apps/tuned_dynamic_file_schema.json"}


def _mentions():
    for f in TEXTS:
        for lineno, line in enumerate(f.read_text().splitlines(), 1):
            where = f"{f.relative_to(ROOT)}:{lineno}"
            for m in PATH.finditer(line):
                yield where, "path", m.group(1), f
            for m in MODULE.finditer(line):
                name = m.group(1)
                if name.rsplit(".", 1)[-1] not in FILE_SUFFIXES:
                    yield where, "module", name, f


def _path_exists(p: str, text: Path) -> bool:
    if p in FOREIGN:
        return True
    if "*" in p:
        return any(ROOT.glob(p))
    return (ROOT / p).exists() or (text.parent / p).exists()


def _module_exists(name: str) -> bool:
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        for attr in parts[k:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_the_pattern_finds_paths_and_modules():
    found = {(kind, name) for _, kind, name, _ in _mentions()}
    assert ("path", "native/lib/registry.c") in found
    assert ("module", "colltune.results.reader") in found or \
        any(kind == "module" for kind, _ in found)
    assert not _path_exists("src/colltune/presets/", ROOT / "README.md")
    assert not _module_exists("colltune.remap")


def test_no_dead_path_or_module_in_the_docs():
    dead = [f"{where}: {kind} {name}" for where, kind, name, text in _mentions()
            if not (_path_exists(name, text) if kind == "path" else _module_exists(name))]
    assert not dead, "dead references:\n" + "\n".join(dead)
