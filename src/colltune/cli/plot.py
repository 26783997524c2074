"""`colltune plot`: one figure of a study (PNG, PDF or SVG)."""

from __future__ import annotations

import click

from colltune.analysis.fit import FitError, read_selection
from colltune.output.figures import BANDS, KINDS, Palette, PlotError, algorithm_order, fig_mapping, make_figure, save_figure
from colltune.base.files import check_writable
from ._common import command, fail, out, select_options


@command()
@select_options
@click.option("--kind", required=True, type=click.Choice(KINDS), help="Which figure.")
@click.option("-o", "--output", required=True, help="File to write: .png, .pdf or .svg.")
@click.option("--surface-algo", help="Algorithm of the surface (default: native, else the "
                                     "one with most points).")
@click.option("--band", default="minmax", show_default=True, type=click.Choice(BANDS),
              help="Spread drawn around each line: over repetitions, min–max or 25–75 %.")
@click.option("--baseline", default="native", show_default=True,
              help="Algorithm the ratio (speedup figure) and best-map compare with.")
@click.option("--dpi", default=120, show_default=True, type=click.IntRange(50, 600))
@click.option("--mpi", "mpi_spec", help="MPI library whose registry orders the colours.")
def plot(db_path, study, coll, algo, mapping, np_range, size_range, include_simulated,
         kind, output, surface_algo, band, baseline, dpi, mpi_spec) -> None:
    """Draw one figure of a study (PNG, PDF or SVG).

    A figure at one size (vs-processes, mapping) is drawn at the largest size of the
    selection, one at one process count (vs-size, speedup) at the largest count:
    --size 64K or --np 4 choose them."""
    check_writable(output, "-o")
    size = np_ = None
    try:
        mapping_one = mapping if mapping and "," not in mapping else None
        df = read_selection(db_path, study, coll, algo,
                            mapping if kind == "mapping" else mapping_one,
                            np_range, size_range, include_simulated)
        palette = Palette(algorithm_order(mpi_spec))
        mappings = [m.strip() for m in mapping.split(",")] if mapping else None
        if kind == "mapping":
            fig = fig_mapping(df, palette, size, band, mappings)
        else:
            fig = make_figure(kind, df, palette, size=size, np_=np_, mapping=mapping_one,
                              algorithm=surface_algo, band=band, baseline=baseline)
        path = save_figure(fig, output, dpi)
    except (FitError, PlotError) as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}")
    out.print(f"wrote {path}", highlight=False)
