"""`colltune fit`: regression models of latency over a selection of measurements."""

from __future__ import annotations

import json

import click

from colltune.analysis.fit import SEED_MODELS, STATS, FitError, describe_selection, fit_selection, fits_to_json, read_selection, print_result, resolve_formula
from colltune.base.units import fmt_size
from ._common import command, fail, out, select_options


@command()
@select_options
@click.option("--formula", "formulas", multiple=True,
              help="statsmodels/patsy formula, e.g. 'np.log2(latency) ~ processes + "
                   "np.log2(size)'; repeatable. Columns: latency (µs), processes, size, "
                   "log2_latency, log2_size, nodes, ppn, mapping, algorithm, ...")
@click.option("--model", "models", multiple=True,
              type=click.Choice(list(SEED_MODELS) + ["seed"]),
              help="Built-in model (repeatable); 'seed' = both seed models (the default "
                   "without --formula).")
@click.option("--stat", default="median_us", show_default=True, type=click.Choice(STATS),
              help="Statistic used as latency.")
@click.option("--by", help="Fit each model per group of these columns, e.g. algorithm,mapping.")
@click.option("--json", "as_json", is_flag=True, help="Everything machine-readable.")
def fit(db_path, study, coll, algo, mapping, np_range, size_range, include_simulated,
        formulas, models, stat, by, as_json) -> None:
    """Regression models (OLS) of latency over a selection of measurements.

    Without --formula/--model it fits the seed report's two models:
    latency ~ 0 + processes + size, and log2_latency ~ 0 + processes + log2_size.
    """
    try:
        df = read_selection(db_path, study, coll, algo, mapping, np_range, size_range,
                            include_simulated)
        chosen: list[tuple[str, str]] = [resolve_formula(f) for f in formulas]
        names = list(models) or ([] if formulas else ["seed"])
        for name in names:
            for m in (list(SEED_MODELS) if name == "seed" else [name]):
                chosen.append(resolve_formula(model=m))
        by_cols = [c.strip() for c in by.split(",") if c.strip()] if by else None
        results = fit_selection(df, chosen, by_cols, stat)
    except FitError as exc:
        fail(str(exc))
    sel = describe_selection(df)
    cols = {"studies": "study", "collectives": "collective", "algorithms": "algorithm",
            "mappings": "mapping"}
    mixed = [f"{len(sel[k])} {k}" for k, c in cols.items()
             if len(sel[k]) > 1 and c not in (by_cols or [])]
    warn = (f"the selection pools {', '.join(mixed)} into one model: narrow it with "
            "--study/--coll/--algo/--mapping or fit per group with --by") if mixed else None
    if as_json:
        doc = fits_to_json(results, sel, stat)
        if warn:
            doc["warning"] = warn
        click.echo(json.dumps(doc, indent=2))
        return
    out.print(f"selection: {sel['rows']} rows; collectives {', '.join(sel['collectives'])}; "
              f"algorithms {', '.join(sel['algorithms'])}"
              + (f"; mappings {', '.join(sel['mappings'])}" if sel["mappings"] else "")
              + f"; np {sel['np'][0]}..{sel['np'][1]}; size {fmt_size(sel['size'][0])}.."
              f"{fmt_size(sel['size'][1])}; latency = {stat}", highlight=False)
    if warn:
        out.print(f"[yellow]warning:[/] {warn}", highlight=False)
    out.print()
    for r in results:
        print_result(out, r)
