"""The workflows: what each command does, as plain functions below the command line.

A workflow takes options (already parsed) and returns data; it reports progress through
a callback (a message, a finished launch) and raises ColltuneError for what the user can
act on. It knows no click and prints nothing: the command line (colltune.cli) parses the
options, calls the workflow and renders what it returns. From Python a workflow is an
ordinary call, e.g.::

    from colltune.workflows import p2p
    records = p2p.pingpong(build, nps=[2], sizes=[8, 1024])

Each module re-exports the driver names its command needs (errors, choices, renderers),
so that the command line imports no driver, store or launcher (tests/test_layers.py).
"""
