"""Every `colltune ...` command line in README.md and docs/*.md parses with the
command line as it is: options exist, values have their types and choices. The docs
cannot drift from the CLI without this failing."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from colltune.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
ALT = "\u2016"  # stands for a table's escaped '\|' (alternatives in a synopsis)
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_.]*(:[A-Za-z0-9_=,]*)?$")


def _snippets(text: str):
    """(line number, text, inline?) of code that mentions the colltune command."""
    in_block = False
    block: list[tuple[int, str]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            if in_block:
                joined, start = "", None
                for k, l in block:  # backslash continuations
                    start = start or k
                    if l.rstrip().endswith("\\"):
                        joined += l.rstrip()[:-1] + " "
                        continue
                    yield start, joined + l, False
                    joined, start = "", None
                block = []
            in_block = not in_block
            continue
        if in_block:
            block.append((n, line))
        else:
            for m in re.finditer(r"``?([^`]+)``?", line.replace("\\|", ALT)):
                yield n, m.group(1), True


def command_lines():
    for doc in DOCS:
        for n, code, inline in _snippets(doc.read_text()):
            code = code.replace("\\|", ALT)
            for part in re.split(r"&&|\|\||;|(?<![\\\w])\|(?!\w)", code.split(" #")[0]):
                m = re.search(r"(?:^|[\s/$])(?<!from )(?<!import )colltune\s+([a-z][a-z-]*"
                              r"(?:\s.*)?)$", part.strip())
                if not m or part.strip().startswith(("pip", "python -m pip")):
                    continue
                if re.search(r"\s/\s", m.group(1)):  # a diagram: "colltune verify / bench"
                    continue
                rest = re.split(r"\s[<>]|\s2>", m.group(1))[0]
                try:
                    tokens = shlex.split(rest)
                except ValueError:
                    tokens = rest.split()
                # a synopsis: [optional] parts, a|b alternatives (take each of a standalone
                # alternative, the first of alternative values)
                tokens = [t.strip("[]") for t in tokens if t.strip("[]")]
                alts, cur = [], []
                for t in tokens:
                    if t == ALT:
                        alts.append(cur)
                        cur = [tokens[0]]
                    else:
                        cur.append(t.split(ALT)[0])
                alts.append(cur)
                for args in alts:
                    yield pytest.param(args, inline,
                                       id=f"{doc.relative_to(ROOT)}:{n}:{' '.join(args)}"[:120])


def test_the_docs_show_commands():
    lines = list(command_lines())
    assert len(lines) > 40
    assert {p.values[0][0] for p in lines} >= {"bench", "sweep", "results", "fit", "model",
                                              "plot", "report", "verify", "quick"}


@pytest.mark.parametrize("args, inline", list(command_lines()))
def test_documented_command_parses(args, inline):
    name = args[0]
    if PLACEHOLDER.match(name):  # `colltune COMMAND --help`
        return
    assert name in main.commands, f"no command '{name}'"
    cmd = main.commands[name]
    if "--help" in args or "-h" in args:
        return
    # one vocabulary: --np/--size (not the older --np-range/--size-range), ranges a:b
    old = [a for a in args if a in ("--np-range", "--size-range") or ".." in a]
    assert not old, f"write --np/--size and ranges as 1:1M, not {old}"
    known = {o for p in cmd.params for o in p.opts + p.secondary_opts}
    args = list(args)
    for a in list(args[1:]):
        if a.startswith("--") and "/" in a:  # `--sleep/--time-budget`: options named
            assert set(a.split("/")) <= known, f"unknown option in {a}"
            args.remove(a)
    try:
        cmd.make_context(name, list(args[1:]), parent=click.Context(main, info_name="colltune"))
    except (click.MissingParameter, click.BadOptionUsage) as exc:
        # a mention in the text may leave out what a full command needs, or name an
        # option without its value (`colltune bench --algo`)
        if not inline or (isinstance(exc, click.BadOptionUsage)
                          and "requires an argument" not in exc.format_message()):
            raise
    except click.BadParameter as exc:
        text = exc.format_message()
        placeholders = [a for a in args[1:] if PLACEHOLDER.match(a)]
        if "does not exist" in text or any(f"'{p}'" in text for p in placeholders):
            return  # a file the example assumes, or a value written as a placeholder
        raise
