"""The lab apart from the product (issue 51): docs/ pages stay short, the lab's index
lists everything the lab holds, and every link between docs/ and lab/ pages lands on a
page and a heading that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "lab"
INDEX = LAB / "README.md"
MAX_LINES = 500
EXEMPT: set[str] = set()

LINK = re.compile(r"\]\(([^()\s]+?\.md)(?:#([^()\s]*))?\)|\]\(#([^()\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    fence = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fence = not fence
        if fence or not re.match(r"#{1,6} ", line):
            continue
        base = _slug(line.lstrip("#"))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def _index_rows() -> list[list[str]]:
    """The rows of the index's first table, the experiments (its header left out)."""
    rows, started = [], False
    for line in INDEX.read_text().splitlines():
        if not line.startswith("|"):
            if started:
                break
            continue
        started = True
        if not re.match(r"\|\s*-", line):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows[1:]


def test_every_user_page_is_under_the_limit():
    long = [f"{p.relative_to(ROOT)}: {n} lines"
            for p in sorted((ROOT / "docs").rglob("*.md"))
            if p.name not in EXEMPT and (n := len(p.read_text().splitlines())) >= MAX_LINES]
    assert not long, f"docs pages of {MAX_LINES} lines or more (move dated experiments " \
        "to lab/):\n" + "\n".join(long)


def test_the_index_lists_every_file_of_the_lab():
    text = INDEX.read_text()
    named = set(re.findall(r"`?((?:scripts|data)/[\w./-]+|[\w-]+\.md)`?", text))
    missing = []
    for p in sorted(LAB.rglob("*")):
        rel = p.relative_to(LAB).as_posix()
        if p == INDEX or (rel.startswith("data/") and rel.count("/") > 1):
            continue  # a data folder is listed as a whole, its files and subfolders with it
        if p.is_dir() and rel in {"scripts", "data"}:
            continue
        if rel not in named and f"{rel}/" not in named:
            missing.append(rel)
    assert not missing, "lab/README.md does not list: " + ", ".join(missing)


def test_each_row_names_a_page_script_and_data_that_exist():
    rows = _index_rows()
    assert len(rows) >= 10
    bad = []
    for row in rows:
        for cell in row:
            for target in re.findall(r"\]\(([^)#]+)", cell) + \
                    re.findall(r"`((?:scripts|data|\.\./[\w./-]+)/[\w./-]*)`", cell):
                if not (LAB / target).exists():
                    bad.append(f"{row[0][:40]}: {target}")
        assert re.search(r"20\d\d-\d\d-\d\d", " ".join(row)), f"no date: {row}"
    assert not bad, "index rows naming nothing:\n" + "\n".join(bad)


def test_links_between_docs_and_lab_land_on_a_heading():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")),
             *sorted(LAB.rglob("*.md"))]
    dead = []
    for page in pages:
        for lineno, line in enumerate(page.read_text().splitlines(), 1):
            for m in LINK.finditer(line):
                target, anchor, local = m.groups()
                if target and "://" in target:
                    continue
                dest = (page.parent / target).resolve() if target else page
                where = f"{page.relative_to(ROOT)}:{lineno}"
                if not dest.exists():
                    dead.append(f"{where}: no page {target}")
                elif (anchor or local) and (anchor or local) not in _anchors(dest):
                    dead.append(f"{where}: no heading #{anchor or local} in {dest.name}")
    assert not dead, "dead links:\n" + "\n".join(dead)


def test_the_slug_is_githubs():
    assert _slug("Accuracy against measurements") == "accuracy-against-measurements"
    assert _slug("On a quiet machine (2026-11-27)") == "on-a-quiet-machine-2026-11-27"
    assert _slug("Launching (`mpi/launch.py`)") == "launching-mpilaunchpy"
    assert _slug("A tapered network: the best algorithm changes with the load") == \
        "a-tapered-network-the-best-algorithm-changes-with-the-load"
