"""Reading the results database for `colltune results` and `colltune export`: the
filters, the tables, whole-or-nothing CSV/Parquet files."""

from __future__ import annotations

import math
import re
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from colltune.results import db as db_mod
from colltune.base.errors import ColltuneError
from colltune.base.files import atomic_path
from colltune.base.units import parse_ints, parse_selection


def _split(values: tuple[str, ...] | str | None) -> list[str] | None:
    if not values:
        return None
    if isinstance(values, str):
        values = (values,)
    items = [x.strip() for v in values for x in v.split(",") if x.strip()]
    return items or None


def filters(study, coll, algo, nps, sizes, mapping, order, run_id, rnd) -> dict:
    """The command-line filters as `reader.measurements_frame` takes them."""
    try:
        return {
            "study": _split(study), "collective": _split(coll), "algorithm": _split(algo),
            "np": parse_selection(nps, "--np"),
            "size": parse_selection(sizes, "--size", sizes=True),
            "mapping": _split(mapping), "rank_order": _split(order),
            "run_id": parse_ints(run_id, "--run") if run_id else None,
            "round": parse_ints(rnd, "--round") if rnd else None,
        }
    except ValueError as exc:
        raise ColltuneError(str(exc)) from exc


def open_results(db_path: str | None):
    """An existing results database (the default one when None), opened read-only;
    DBError otherwise."""
    return db_mod.open_reader(db_path or db_mod.default_path(), schema=True)


def _cell(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 1e6 else f"{v:.4g}"
    return str(v)


_ISO_TIME = re.compile(r"^(\d{4}-\d\d-\d\d)T(\d\d:\d\d):\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?$")
# free text shortened in tables (csv/json keep it whole)
_ELLIPSIS_COLUMNS = {"description": 40, "error": 60, "command": 60}


def frame_table(df, title: str, columns: list[str], limit: int | None) -> Table:
    t = Table(title=title, title_justify="left")
    for c in columns:
        right = str(df[c].dtype) not in ("object", "str", "string")
        if c in _ELLIPSIS_COLUMNS:
            t.add_column(c, overflow="ellipsis", no_wrap=True, max_width=_ELLIPSIS_COLUMNS[c])
        else:
            t.add_column(c, overflow="fold", justify="right" if right else "left")
    shown = df if not limit else df.head(limit)
    for row in shown[columns].itertuples(index=False):
        cells = []
        for v in row:
            text = _cell(v)
            m = _ISO_TIME.match(text)  # timestamps to the minute, UTC as stored
            cells.append(escape(f"{m.group(1)} {m.group(2)}" if m else text))
        t.add_row(*cells)
    return t


def write_frame_atomic(df, path: Path, fmt: str) -> None:
    """CSV or Parquet, whole or not at all (temporary file + rename)."""
    with atomic_path(path) as tmp:
        if fmt == "csv":
            df.to_csv(tmp, index=False)
        else:
            df.to_parquet(tmp, index=False, engine="pyarrow")
