"""The jobs of the commands as plain functions: options in, data out.

A workflow measures, stores and reads through the layers below it (drivers,
studies, results, analysis, tuning, output); it knows no click and prints nothing
itself. What it has to tell along the way (a note, a line of progress, a bar over
a loop of launches) goes through the `Progress` its caller gives; a problem the
user can act on is a `ColltuneError` (`WorkflowError` where no lower layer has one
of its own). The command line (`colltune.cli`) parses options, calls a workflow
and renders what it returns; the same calls work from Python:

    from colltune.workflows import quick
    result = quick.quick(db_path="colltune.db")

`colltune quick` is the chain sweep.sweep -> quick.pingpong_once -> quick.answer ->
report.report (docs/architecture.md).

Each module re-exports the driver names its command needs (errors, choices, renderers),
so that the command line imports no driver, store or launcher (tests/test_layers.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from colltune.base.errors import ColltuneError
from colltune.base.files import save_fallback, write_atomic
# the command line's one guard against SIGTERM/SIGHUP (as Ctrl-C: launches stopped)
from colltune.mpi.launch import DEFAULT_PLATFORM, Terminated, interrupt_on_term  # noqa: F401


class WorkflowError(ColltuneError):
    """A workflow's refusal of its options: the message says what and how."""


class _NoBar:
    """A progress bar that shows nothing (the default of `Progress.bar`)."""

    def __init__(self, total: int = 0):
        self.total = total

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def set(self, done: float, label: str | None = None, force: bool = False) -> None:
        return None

    def note(self, text: str) -> None:
        return None


def _quiet(text: str, markup: bool = True) -> None:
    return None


@dataclass
class Progress:
    """How a workflow tells its caller what it does.

    say(text, markup=True): one line (notes, steps, outcomes; rich markup allowed); bar(total): a
    context manager with .set(done, label=None, force=False) and .note(text), the
    progress of a loop of measurements; console: where a sweep draws its own progress
    (studies.sweep.execute; None: its default, stderr)."""

    say: Callable[..., None] = _quiet
    bar: Callable[[int], Any] = _NoBar
    console: Any = None
    notes: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        """`note: TEXT`, said and kept."""
        self.notes.append(text)
        self.say(f"note: {text}", markup=False)


def progress_or_quiet(progress: Progress | None) -> Progress:
    return progress if progress is not None else Progress()


def write_or_keep(path, data: str | bytes, name: str) -> None:
    """Write an output atomically; if that fails (the disk filled up, the folder went
    away), keep it in the colltune cache and raise a WorkflowError saying where."""
    try:
        write_atomic(path, data)
    except OSError as exc:
        try:
            where = save_fallback(name, data)
        except OSError:
            raise WorkflowError(f"cannot write {path}: {exc.strerror or exc}; nothing could "
                                "be saved") from None
        raise WorkflowError(f"cannot write {path}: {exc.strerror or exc}; saved in {where} "
                            "instead") from None
