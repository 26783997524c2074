"""One choice per process count for the collectives a rank cannot size alone
(base/collectives.SIZE_BLIND: Alltoallv, Gatherv, Scatterv): `tune --target colltune`
writes their rules by the process count only, as the interposition library reads them."""

from __future__ import annotations

import math

from colltune.base.collectives import SIZE_BLIND
from colltune.base.lazy import LazyModule

pd = LazyModule("pandas")


def one_choice_per_np(ch: pd.DataFrame, groups: list[str]) -> pd.DataFrame:
    """Alltoallv, Gatherv and Scatterv (SIZE_BLIND) in a colltune rules file: every rank
    must run the same algorithm and a rank knows only its own counts, so the
    interposition library chooses for them by the process count alone. At each process count (of each
    group), of the labels chosen at some size, the one whose times are the least above
    each size's best (the geometric mean of its regret over the sizes, all of which it
    must have run) becomes the choice at every size. Other collectives' rows unchanged."""
    mine = ch["collective"].isin(SIZE_BLIND)
    if not mine.any():
        return ch
    parts = [ch[~mine]]
    cols = (("best", "algorithm", "params"), ("general", "general_algorithm", "general_params"))
    for _, h in ch[mine].groupby(groups + ["np"], sort=True):
        h = h.copy()
        cands: dict = {}
        for _, r in h.iterrows():
            for lab, a, prm in cols:
                if lab in h.columns:
                    cands.setdefault(r[lab], (r[a], r[prm]))

        def regret(label) -> float:
            logs = [math.log(m[label] / min(m.values())) if m.get(label) else math.inf
                    for m in h["medians"]]
            return sum(logs) / len(logs)

        label = min(cands, key=lambda lab: (regret(lab), str(lab)))
        for lab, a, prm in cols:
            if lab in h.columns:
                h[lab] = [label] * len(h)
                h[a] = [cands[label][0]] * len(h)
                h[prm] = [cands[label][1]] * len(h)
        parts.append(h)
    return pd.concat(parts).sort_index()
