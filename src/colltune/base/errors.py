"""The one exception the command line turns into an `error: ...` line.

Domain modules (bench, fit, report, sweep, ...) know nothing of the command
line: when the user can act on a problem they raise a `ColltuneError` (or one of
its subclasses: `FitError`, `StudyError`, `DBError`, ...) whose message says
what is wrong and what is valid. The command-line layer (`colltune.cli`)
prints it as one line and exits with `exit_code` (2, as click does for usage
errors). Used from Python, the exception is an ordinary exception.
"""

from __future__ import annotations


class ColltuneError(Exception):
    """A problem the user can act on; the message says what and how."""

    exit_code = 2


def did_you_mean(word: str, choices) -> str:
    """' (did you mean 'x'?)' for the closest of `choices`, else ''."""
    import difflib

    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
