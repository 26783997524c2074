"""Consoles for colltune's tables.

On a terminal, rich fits tables to its width. Into a file or a pipe rich would
assume 80 columns and fold every wide table into unreadable slivers, so there the
width is 200 unless COLUMNS says otherwise.
"""

from __future__ import annotations

import os

from rich.console import Console

PIPE_WIDTH = 200


def stdout_console() -> Console:
    c = Console()
    if not c.is_terminal and "COLUMNS" not in os.environ:
        c = Console(width=PIPE_WIDTH)
    return c
