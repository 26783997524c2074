"""The one run-and-parse loop of the native programs: launch a program, check how it
ended, and parse the JSON lines it printed.

Every native program of colltune prints its results as JSON objects, one a line
(lines that start with `{`), and its problems as `error: ...` lines on standard
error. `run_program` launches one (through mpi/launch: placement, supervision,
retries) and returns a `Parsed`: the records, the output and the launcher's notes.
Failures raise the caller's exception class with the message of
`launch.failure_message` (the program's own `error:` lines, else the tail of its
error output, plus hints for known launcher errors).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from colltune.base.errors import ColltuneError
from colltune.mpi import launch
from colltune.mpi.build import Build


@dataclass
class Parsed:
    """What one run of a native program gave."""

    records: list[dict]
    stdout: str
    stderr: str
    notes: list[str]
    command: str
    returncode: int
    timed_out: bool
    result: launch.Result  # for launch.failure_message and the like
    launch: launch.Launch | None = None  # nodes, ppn, the shell command

    @property
    def ok(self) -> bool:
        return not self.timed_out and self.returncode == 0

    def failure_message(self, name: str) -> str:
        """What to tell the user of a run that failed (launch.failure_message)."""
        return launch.failure_message(name, self.result)


def program_path(build: Build, program: str, error: type[Exception] = ColltuneError) -> str:
    """The path of the native program `program` (a name such as "colltune-bench", or a
    path) in `build`; `error` when this build has no such file."""
    path = Path(program) if os.sep in program else build.program(program)
    if not path.exists():
        raise error(f"{path} is missing: this build predates it; run `colltune build --force`")
    return str(path)


def parse_records(text: str, *, name: str = "the program",
                  error: type[Exception] | None = None) -> list[dict]:
    """The JSON objects of `text`, one a line (lines starting with '{'). A line that
    does not parse raises `error` ("NAME printed a malformed record") when given, else
    is skipped (a record cut short by a crash, say)."""
    out = []
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            if error is not None:
                raise error(f"{name} printed a malformed record: {line!r} ({exc})") from exc
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def parse_document(text: str, *, name: str = "the program",
                   error: type[Exception] = ColltuneError):
    """The one JSON document a program printed (from its first '{' to the end)."""
    start = text.find("{")
    if start < 0:
        raise error(f"{name} printed no JSON document")
    try:
        return json.loads(text[start:])
    except json.JSONDecodeError as exc:
        raise error(f"{name} printed malformed JSON ({exc})") from exc


def prepare(build: Build, program: str, np: int, args: list[str] | tuple[str, ...] = (), *,
            error: type[Exception] = ColltuneError, extra_env: dict[str, str] | None = None,
            prepare_options: dict | None = None) -> launch.Launch:
    """The launch of the native `program` (a name in `build`, or a path) with `args` on
    `np` processes (launch.prepare; `prepare_options` such as load_np), for
    `run_launch`: for a caller that needs the launch before its records come."""
    path = program_path(build, program, error)
    return launch.prepare(build.mpi, np, [path, *args], extra_env, **(prepare_options or {}))


def run_program(build: Build, program: str, np: int, args: list[str] | tuple[str, ...] = (),
                *, error: type[Exception] = ColltuneError, name: str | None = None,
                timeout: float = 600, extra_env: dict[str, str] | None = None,
                prepare_options: dict | None = None,
                on_record: Callable[[dict], None] | None = None, check: bool = True,
                strict: bool = True, require_records: bool = False,
                stamp: bool = False, timeout_message: str | None = None) -> Parsed:
    """Launch the native `program` (a name in `build`, or a path) with `args` on `np`
    processes and parse its JSON lines.

    - `extra_env`, `prepare_options`: passed to launch.prepare (forced variables;
      e.g. load_np).
    - `name`: the program in messages (default: its file name).
    - `on_record`: called with each record as the program prints it.
    - `check`: a timeout ("NAME timed out after S s: COMMAND", or `timeout_message`)
      or a non-zero exit (launch.failure_message) raises `error`; without it the caller looks at
      `timed_out` and `returncode` and gets the records printed before the end.
    - `strict`: a malformed record of a program that exited 0 raises `error`, else it
      is skipped (as are the records cut short by a program that failed).
    - `require_records`: no record at all raises `error`.
    - `stamp`: each record gets the machine ("host") and the command line ("command").
    """
    ln = prepare(build, program, np, args, error=error, extra_env=extra_env,
                 prepare_options=prepare_options)
    return run_launch(ln, name=name or Path(program).name, error=error, timeout=timeout,
                      on_record=on_record, check=check, strict=strict,
                      require_records=require_records, stamp=stamp,
                      timeout_message=timeout_message)


def run_records(build: Build, program: str, np: int, args: list[str] | tuple[str, ...] = (),
                *, error: type[Exception] = ColltuneError,
                timeout: float = 600) -> tuple[list[dict], list[str]]:
    """The usual case of `run_program`: checked, strict, at least one record, each
    stamped with the machine and the command line; (records, the launcher's notes)."""
    res = run_program(build, program, np, args, error=error, timeout=timeout,
                      require_records=True, stamp=True)
    return res.records, res.notes


def run_argv(argv: list[str], *, error: type[Exception] = ColltuneError,
             name: str | None = None, timeout: float = 120,
             env: dict[str, str] | None = None, check: bool = True) -> Parsed:
    """Run `argv` as it is, without a launcher (a program on one process that needs
    none, or a command line already made), with the same supervision and checks as
    `run_program`. Not one of the launches of the current launch session."""
    ln = launch.Launch(list(argv), dict(os.environ) if env is None else env)
    with launch.session(None):
        return run_launch(ln, name=name or Path(argv[0]).name, error=error, timeout=timeout,
                          check=check, strict=False)


def run_launch(ln: launch.Launch, *, name: str,
               error: type[Exception] = ColltuneError, timeout: float = 600,
               on_record: Callable[[dict], None] | None = None, check: bool = True,
               strict: bool = True, require_records: bool = False,
               stamp: bool = False, timeout_message: str | None = None) -> Parsed:
    """Run a prepared launch (`prepare`) to its end and parse it, as `run_program` does;
    `name`: the program in messages."""
    def line(text: str) -> None:
        for rec in parse_records(text):
            on_record(rec)

    res = launch.run(ln, timeout=timeout, on_stdout=line if on_record is not None else None)
    if check and res.timed_out:
        raise error(timeout_message or f"{name} timed out after {timeout:.0f} s: {res.command}")
    if check and res.returncode != 0:
        raise error(launch.failure_message(name, res))
    clean = not res.timed_out and res.returncode == 0
    records = parse_records(res.stdout, name=name, error=error if strict and clean else None)
    if require_records and not records:
        raise error(f"{name} printed no records: {res.command}\n{res.stderr.strip()[-2000:]}")
    if stamp:
        host = os.uname().nodename
        for rec in records:
            rec["host"] = host
            rec["command"] = res.command
    return Parsed(records, res.stdout, res.stderr, list(res.notes), res.command,
                  res.returncode, res.timed_out, res, ln)
