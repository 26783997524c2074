"""The `colltune` command: the only layer that knows click.

Each family of subcommands lives in its own module here and calls the domain
modules below it (bench, sweep, fit, report, ...), which work without click.
Shared pieces (consoles, the one error path, building on demand, the selection
options) are in `_common`.
"""

from __future__ import annotations

import click

from .. import __version__
from . import basic, bench, fit, heat, model, p2p, plot, quick, report, results, sweep, verify


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="colltune")
def main() -> None:
    """colltune: MPI collective algorithms, verified and benchmarked.

    Algorithms are written on MPI point-to-point in the native library; every
    command builds it on first use against the chosen MPI library.
    """


for _cmd in (basic.build, basic.info, basic.algorithms, verify.verify, bench.bench,
             p2p.pingpong, p2p.probe, heat.heat, heat.stream, fit.fit, model.model, plot.plot,
             report.report, sweep.sweep, results.results, results.export, quick.quick):
    main.add_command(_cmd)
del _cmd


if __name__ == "__main__":  # pragma: no cover
    main()
