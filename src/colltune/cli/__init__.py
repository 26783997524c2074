"""The `colltune` command: the only layer that knows click.

Each family of subcommands lives in its own module here: it parses the options,
calls a workflow (colltune.workflows: quick, sweep, tune, bench, report, app) or a
domain module below it, and renders what comes back (output.terminal); none of it
launches MPI or writes results itself (tests/test_layers.py). Shared pieces (the
one error path, building on demand, the selection options, the Progress the
workflows report through) are in `_common`.
"""

from __future__ import annotations

import sys

import click

from .. import __version__
from ._common import err, fail
from . import (basic, bench, fit, heat, model, p2p, plot, quick, report, results, sweep, tune,
               verify)
from . import traffic as traffic_cli
from . import interpose as interpose_cli
from . import platforms as platform_cli
from . import rules as rules_cli
from . import load as load_cli
from . import cluster as cluster_cli
from . import app as app_cli


class Main(click.Group):
    """The `colltune` group: usage errors (unknown option, bad choice) come out as the
    commands' own errors do, one `error:` line, exit status 2, with where to look."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True,
             **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:  # plain `colltune`: the help
            exc.show()
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            ctx = getattr(exc, "ctx", None)
            hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
            fail(exc.format_message() + hint, exc.exit_code)
        except click.Abort:
            err.print("[yellow]interrupted[/]", highlight=False)
            sys.exit(130)
        sys.exit(rv if isinstance(rv, int) else 0)


@click.group(cls=Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="colltune")
def main() -> None:
    """colltune: MPI collective algorithms, verified and benchmarked.

    Algorithms are written on MPI point-to-point in the native library; every
    command builds it on first use against the chosen MPI library.
    """


for _cmd in (basic.build, basic.info, basic.algorithms, verify.verify, bench.bench,
             p2p.pingpong, p2p.probe, heat.heat, heat.stream, fit.fit, model.model, plot.plot,
             report.report, sweep.sweep, results.results, results.export, quick.quick,
             tune.tune, rules_cli.rules, interpose_cli.run, interpose_cli.profile,
             platform_cli.platform, load_cli.load, traffic_cli.traffic, app_cli.study,
             app_cli.autotune, cluster_cli.cluster):
    main.add_command(_cmd)
del _cmd


if __name__ == "__main__":  # pragma: no cover
    main()
