"""Which series a line figure draws, and how each looks (figures.py's line plots).

A latency or speedup figure draws the baseline (native) and the few algorithms that
matter: at some x (size or process count) the fastest of all or the fastest besides the
baseline, then the same-named algorithm of the other side (`chain` beside `ompi:chain`),
at most `MAX_SERIES` lines; `select_series` returns the rest so that the report names
them in a sentence. Colours come from the Okabe-Ito palette (colour-blind safe), one per
algorithm name in the figure, a library's namesake sharing its colour with another line
style; every series has its own marker, so no two series look alike. The baseline is
black, thicker and drawn above the others.
"""

from __future__ import annotations

from colltune.base.lazy import LazyModule
from colltune.base.specs import algorithm_of, is_lib_spec

pd = LazyModule("pandas")

MAX_SERIES = 6
# Okabe & Ito (2008) without black (native's) and with yellow, weak on white, last
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#F0E442")
BASELINE_COLOUR = "#000000"
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">", "p")
BASELINE_ZORDER = 10


def namesake(label: str) -> str:
    """The algorithm's name without its library: 'ompi:chain' and 'chain:segsize=0'
    -> 'chain'."""
    base = algorithm_of(str(label))
    if is_lib_spec(base):
        base = base.split(":", 1)[1]
    return base.split(":", 1)[0]


def select_series(stats: pd.DataFrame, x: str, baseline: str = "native",
                  limit: int | None = MAX_SERIES, must=()) -> tuple[list[str], list[str]]:
    """(labels to draw, labels left out) of `stats` (label, x, center: latency, lower
    is better): the baseline; the labels of `must` present (the algorithms the report
    recommends: always drawn, beyond `limit` if need be); at every x the fastest of all
    and the fastest besides the baseline, most often fastest first; then their
    namesakes of the other library side; at most `limit` in all (None: every series)."""
    labels = list(dict.fromkeys(stats["label"].astype(str)))
    if limit is None or len(labels) <= limit:
        return labels, []
    must = [lab for lab in labels if lab in set(must) and lab != baseline]
    s = stats.assign(label=stats["label"].astype(str)).dropna(subset=["center"])
    wins: dict[str, int] = {}
    for _, g in s.groupby(x):
        g = g.sort_values("center")
        others = g[g["label"] != baseline]
        for lab in [g["label"].iloc[0]] + ([others["label"].iloc[0]] if len(others) else []):
            wins[lab] = wins.get(lab, 0) + 1
    keep = ([baseline] if baseline in labels else []) + must
    order = sorted(wins, key=lambda lab: (-wins[lab], labels.index(lab)))
    keep += [lab for lab in order if lab not in keep]
    for lab in list(keep):
        keep += [o for o in labels if o not in keep and namesake(o) == namesake(lab)
                 and is_lib_spec(o) != is_lib_spec(lab)]
    keep = keep[:max(limit, len(must) + (baseline in labels))]
    return keep, [lab for lab in labels if lab not in keep]


def series_styles(labels: list[str], baseline: str = "native") -> dict[str, dict]:
    """matplotlib keyword arguments per label: the baseline black, thick and on top; one
    Okabe-Ito colour per algorithm name (a library's namesake dashed in the same colour);
    one marker per series."""
    out: dict[str, dict] = {}
    colours: dict[str, str] = {}
    for i, lab in enumerate(labels):
        if lab == baseline:
            out[lab] = {"color": BASELINE_COLOUR, "linestyle": "-", "marker": "o",
                        "linewidth": 2.6, "markersize": 6, "zorder": BASELINE_ZORDER}
            continue
        name = namesake(lab)
        if name not in colours:
            colours[name] = OKABE_ITO[len(colours) % len(OKABE_ITO)]
        lib = is_lib_spec(algorithm_of(lab))
        out[lab] = {"color": colours[name], "linestyle": "--" if lib else "-",
                    "marker": MARKERS[(i + 1) % len(MARKERS)], "linewidth": 1.6,
                    "markersize": 5, "zorder": 3}
    return out


def omitted_text(omitted: list[str]) -> str:
    """The sentence naming what a figure leaves out ('' when nothing)."""
    if not omitted:
        return ""
    return (f"{len(omitted)} more not drawn (at no point the fastest, nor the fastest "
            f"besides native, nor recommended, nor the namesake of one): "
            f"{', '.join(omitted)}.")


__all__ = ["MAX_SERIES", "OKABE_ITO", "namesake", "omitted_text",
           "select_series", "series_styles"]
