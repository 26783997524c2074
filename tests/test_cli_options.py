"""The command line users know, frozen: every command's and option's names, types,
defaults, flags and help as a dump compared with tests/data/cli_options.json.

A refactor below the command line (workflows/, backends) must leave this dump
identical. A deliberate change to the interface regenerates it:
`COLLTUNE_UPDATE_CLI_DUMP=1 .venv/bin/pytest tests/test_cli_options.py` and the
diff goes into the commit for review."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from colltune.cli import main

DUMP = Path(__file__).parent / "data" / "cli_options.json"


def _type(t: click.ParamType) -> object:
    if isinstance(t, click.Choice):
        return {"choice": list(t.choices)}
    if isinstance(t, click.Path):
        return {"path": {"exists": t.exists, "dir_okay": t.dir_okay, "file_okay": t.file_okay}}
    if isinstance(t, (click.IntRange, click.FloatRange)):
        return {t.name: [t.min, t.max]}
    return t.name


def _default(v: object) -> str | None:
    """As written in the code; click's own 'no default' marker (its repr changes between
    click releases) and computed defaults are None."""
    if callable(v) or v is None or type(v).__name__ == "Sentinel":
        return None
    return repr(v)


def _param(p: click.Parameter) -> dict:
    d = {"name": p.name, "kind": type(p).__name__, "opts": list(p.opts),
         "secondary": list(p.secondary_opts), "type": _type(p.type),
         "required": p.required, "nargs": p.nargs, "multiple": p.multiple,
         "default": _default(p.default)}
    if isinstance(p, click.Option):
        d.update(help=p.help, is_flag=p.is_flag, hidden=p.hidden, envvar=p.envvar,
                 count=p.count, show_default=p.show_default)
    return d


def _command(cmd: click.Command, path: str) -> dict:
    d = {"path": path, "help": cmd.help, "short_help": cmd.short_help, "hidden": cmd.hidden,
         "params": [_param(p) for p in cmd.params]}
    if isinstance(cmd, click.Group):
        d["commands"] = [_command(sub, f"{path} {name}")
                         for name, sub in sorted(cmd.commands.items())]
    return d


def dump() -> dict:
    return _command(main, "colltune")


def test_every_command_and_option_is_as_users_know_it():
    now = json.dumps(dump(), indent=1, sort_keys=True)
    if os.environ.get("COLLTUNE_UPDATE_CLI_DUMP") == "1":
        DUMP.write_text(now + "\n")
    want = DUMP.read_text().rstrip("\n")
    if now != want:
        import difflib
        diff = "\n".join(list(difflib.unified_diff(want.splitlines(), now.splitlines(),
                                                   "frozen", "now", lineterm=""))[:80])
        raise AssertionError("the command line changed (regenerate with "
                             "COLLTUNE_UPDATE_CLI_DUMP=1 if deliberate):\n" + diff)
