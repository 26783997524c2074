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
