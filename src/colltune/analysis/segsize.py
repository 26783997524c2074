"""segsize=auto: the segment size the dispatcher gives the segmented Bcast and Reduce
trees for one call -- the same rule as native/lib/registry.c `ct_segsize_resolve`
(tests/test_segsize.py compares both over a grid). docs/algorithms/bcast.md,
"Segment size default", derives it:

a pipeline of d hops moving n bytes in segments of s bytes takes about
(d + n/s - 1)(α + sβ') (β' = β for Bcast, β + γ for Reduce), least at
s* = sqrt(n·L/(d-1)), L = α/β' bytes. The segment is s* rounded to the nearest power of
two in log scale, 2^((m+1)//2) with m = floor(log2(n·L // (d-1))) (integers only),
clamped to [MIN, MAX]; 0 (unsegmented) when d <= 1 or when it would hold the whole
message.
"""

from __future__ import annotations

from colltune.base.units import parse_size

AUTO = "auto"
MIN = 1024                 # CT_SEG_AUTO_MIN
MAX = 1024 * 1024          # CT_SEG_AUTO_MAX
L_BCAST = 8192             # CT_SEG_AUTO_L: α/β in bytes
L_REDUCE = 4096            # CT_SEG_AUTO_L_REDUCE: α/(β+γ), γ taken equal to β
RULES = ("chain", "pipeline", "binary", "split_binary")


def depth(rule: str, p: int, fanout: int = 1) -> tuple[int, float]:
    """(hops of the pipeline, share of the message it carries) for `rule` on p processes."""
    if rule == "chain":
        k = max(1, min(fanout, p - 1))
        return -(-(p - 1) // k), 1.0
    if rule == "pipeline":
        return p - 1, 1.0
    if rule == "binary":
        return p.bit_length() - 1, 1.0
    if rule == "split_binary":
        return 1 + (p // 2).bit_length() - 1, 0.5
    raise ValueError(f"unknown segsize rule {rule!r}; valid: {', '.join(RULES)}")


def resolve(rule: str | None, collective: str, nbytes: int, p: int, fanout: int = 1) -> int:
    """The segment (bytes; 0 = unsegmented) segsize=auto gives an algorithm whose
    registry segsize parameter has auto_rule `rule` (None: no rule, 0)."""
    if rule is None or p < 3 or nbytes <= MIN:
        return 0
    d, _ = depth(rule, p, fanout)
    n = nbytes - nbytes // 2 if rule == "split_binary" else nbytes
    if d <= 1:
        return 0
    n = min(n, 1 << 40)
    lam = L_REDUCE if collective == "reduce" else L_BCAST
    x = n * lam // (d - 1)
    s = 1 << (((x.bit_length() - 1) + 1) >> 1)
    s = min(MAX, max(MIN, s))
    return 0 if s >= n else s


def segsize_param(algo) -> dict | None:
    """The registry's segsize parameter of `algo` (a drivers.registry.Algorithm or its
    JSON dict), None when it has none."""
    params = algo.params if hasattr(algo, "params") else algo.get("params", [])
    for q in params:
        if q["name"] == "segsize":
            return q
    return None


def is_auto(value) -> bool:
    return isinstance(value, str) and value.strip().lower() == AUTO


def effective(algo, nbytes: int, p: int, params: dict | None = None) -> int | None:
    """The segment (bytes; 0 = unsegmented) `algo` runs with for an nbytes message on p
    processes under `params` (strings or numbers, as recorded; missing: the default):
    explicit values as given, auto by the rule. None when the algorithm has no segsize."""
    q = segsize_param(algo)
    if q is None:
        return None
    params = params or {}
    value = params.get("segsize", q.get("default"))
    if is_auto(value):
        collective = algo.collective if hasattr(algo, "collective") else algo["collective"]
        fan = params.get("fanout")
        if fan is None:
            fan = next((x.get("default") for x in (algo.params if hasattr(algo, "params")
                                                      else algo.get("params", []))
                        if x["name"] == "fanout"), 1)
        return resolve(q.get("auto_rule"), collective, int(nbytes), int(p), int(fan))
    return int(parse_size(str(value))) if isinstance(value, str) else int(value)
