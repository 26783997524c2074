"""One option vocabulary on every command (issue 29): the README's "Options" table
against every command and subcommand of the `colltune` group, so that the table and
the code cannot drift apart."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from colltune.cli import main
from colltune.cli._common import NpType, SizeType

ROOT = Path(__file__).resolve().parents[1]
UNIT_FORMS = {"µs", "ns/B", "s", "ms"}


def commands(group=main, path=()):
    """(path, command) of every leaf command of the group, subcommands included."""
    for name, cmd in sorted(group.commands.items()):
        if isinstance(cmd, click.Group):
            yield from commands(cmd, path + (name,))
        else:
            yield " ".join(path + (name,)), cmd


COMMANDS = dict(commands())


def options(cmd):
    return [p for p in cmd.params if isinstance(p, click.Option)]


def table() -> list[dict]:
    """The rows of README.md's "Options" table: names, form, commands."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Options\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        rows.append({"names": re.findall(r"`(-[^`]+)`", cells[0]), "form": cells[1],
                     "commands": {c.strip() for c in cells[3].split(",") if c.strip()}})
    return rows


ROWS = table()


def form_of(opt) -> str | None:
    t = opt.type
    if isinstance(t, (NpType, SizeType)):
        return "selection" if t.selection else ("list" if t.many else "one")
    return None


def test_the_walk_and_the_table_are_not_empty():
    assert len(COMMANDS) >= 30 and {"bench", "rules verify", "load effect",
                                    "platform calibrate"} <= set(COMMANDS)
    forms = {r["form"] for r in ROWS}
    assert {"list", "one", "selection", "file", "µs", "s"} <= forms, forms
    for r in ROWS:
        unknown = r["commands"] - set(COMMANDS)
        assert not unknown, f"README's Options table names no such command: {unknown}"


@pytest.mark.parametrize("name", ["--np", "--size"])
def test_np_and_size_use_the_shared_parsing_as_the_table_says(name):
    """Every --np/--size is read by the one parser (NpType/SizeType, base/units.py)
    in the form (list, one value, selection) the README gives for that command."""
    want = {}
    for r in ROWS:
        if name in r["names"]:
            for c in r["commands"]:
                assert c not in want, f"{c} {name} is in two rows of README's table"
                want[c] = r["form"]
    have = {}
    for path, cmd in COMMANDS.items():
        for opt in options(cmd):
            if name in opt.opts:
                assert opt.opts[0] == name, f"{path}: {opt.opts} (primary must be {name})"
                kind = NpType if name == "--np" else SizeType
                assert isinstance(opt.type, kind), f"{path} {name}: not the shared parser"
                have[path] = form_of(opt)
    assert have == want


def test_no_command_calls_the_size_option_sizes():
    for path, cmd in COMMANDS.items():
        for opt in options(cmd):
            assert not opt.opts[0].startswith("--sizes"), f"{path}: {opt.opts}"
            if "--sizes" in opt.opts:  # the old spelling: still read, never shown
                assert isinstance(opt.type, SizeType) and opt.type.many, path
                record = opt.get_help_record(click.Context(cmd))
                assert "--sizes" not in record[0], path


def test_the_parsers_read_one_syntax_everywhere():
    """Each --np/--size converts as its form says: a list, one value (a list refused),
    or a selection text checked and passed on."""
    for path, cmd in COMMANDS.items():
        ctx = click.Context(cmd)
        for opt in options(cmd):
            if not isinstance(opt.type, (NpType, SizeType)):
                continue
            sizes = isinstance(opt.type, SizeType)
            lst, one = ("1K:4K", "64K") if sizes else ("2:4", "4")
            if opt.type.selection:
                assert opt.type.convert("8:", opt, ctx) == "8:", path
                with pytest.raises(click.BadParameter):
                    opt.type.convert("x", opt, ctx)
            elif opt.type.many:
                assert opt.type.convert(lst, opt, ctx) == ([1024, 2048, 4096] if sizes
                                                           else [2, 3, 4]), path
            else:
                assert opt.type.convert(one, opt, ctx) == (65536 if sizes else 4), path
                with pytest.raises(click.BadParameter, match="give one value"):
                    opt.type.convert(lst, opt, ctx)


def test_every_output_file_option_is_dash_o():
    want = next(r["commands"] for r in ROWS if "--output" in r["names"])
    readme = " ".join((ROOT / "README.md").read_text().split())
    named = readme.split("is named for what it holds:", 1)[1].split(".", 1)[0]
    have = set()
    for path, cmd in COMMANDS.items():
        for opt in options(cmd):
            if "--output" in opt.opts or "-o" in opt.opts:
                assert set(opt.opts) == {"-o", "--output"}, f"{path}: {opt.opts}"
                have.add(path)
            # an option that writes a file is the output, or a second file named for
            # what it holds, as the README lists them
            if re.match(r"(also )?write", opt.help or "", re.I) and "--output" not in opt.opts:
                assert f"`{path} {opt.opts[0]}`" in named or f"`{opt.opts[0]}`" in named, \
                    f"{path} {opt.opts}: an output file without -o"
    assert have == want


def test_times_are_in_the_units_the_table_gives():
    """Times the user types are µs, costs per byte ns/B, wall-clock limits seconds; each
    such option is in the table with its commands, and its help names the unit."""
    unit_words = {"µs": r"µs|microsecond", "ns/B": r"ns per byte", "s": r"second",
                  "ms": r"millisecond"}
    listed = {}
    for r in ROWS:
        if r["form"] in UNIT_FORMS:
            for n in r["names"]:
                listed[n] = r
    have: dict[str, set] = {}
    for path, cmd in COMMANDS.items():
        for opt in options(cmd):
            name = opt.opts[0]
            if opt.hidden:
                continue
            assert not re.fullmatch(r"--(alpha|beta)|--.*-(s|sec|secs|seconds)", name), \
                f"{path} {name}: a time without its unit (or in seconds)"
            if re.search(r"-(us|ns|ms)$", name):
                assert name in listed, f"{path} {name}: a unit option not in README's table"
            if re.search(r"\bseconds?\b", opt.help or "", re.I):
                assert listed.get(name, {}).get("form") == "s", \
                    f"{path} {name}: takes seconds but is not a wall-clock limit of the table"
            if name in listed:
                have.setdefault(name, set()).add(path)
                assert re.search(unit_words[listed[name]["form"]], opt.help or "", re.I), \
                    f"{path} {name}: its help does not say {listed[name]['form']}"
    assert have == {n: r["commands"] for n, r in listed.items()}


@pytest.mark.parametrize("cmd, args, says", [
    ("model", ["--alpha", "2e-6"], "--alpha-us 2 for --alpha 2e-06"),
    ("report", ["-o", "r.html", "--beta", "1e-10"], "--beta-ns 0.1 for --beta 1e-10"),
    ("model", ["--gamma", "1e-10"], "--gamma 0.1"),
])
def test_the_old_seconds_are_refused_not_misread(cmd, args, says, tmp_path):
    res = CliRunner().invoke(main, [cmd, "--db", str(tmp_path / "none.db"), *args])
    assert res.exit_code == 2, res.output
    assert says in res.output and "Traceback" not in res.output


def test_a_list_where_one_value_is_run_is_one_line(tmp_path):
    res = CliRunner().invoke(main, ["heat", "--np", "2,4"])
    assert res.exit_code == 2
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "--np '2,4': give one value" in lines[0], lines


def test_one_name_for_the_size_cross_validation():
    for folder in ("src", "docs"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".md", ".html", ".toml"):
                text = path.read_text(errors="replace")
                assert not re.search(r"CV size|size CV|leave-one-size-out\b.*\bCV\b", text), path
    assert "leave-one-size-out" in (ROOT / "src/colltune/tuning/tune.py").read_text()
