"""Algorithm specs, the one parser and formatter.

colltune's algorithms are written `NAME[:key=value,key=value]` (`chain:segsize=8192,fanout=4`),
the MPI library's own `ompi:NAME[:key=value,...]` and `mpich:NAME[:key=value,...]`. The
parameters alone (`segsize=8192,fanout=4`) are what the benchmark records; the database
stores them as a JSON object. `remap=none|seq|rr|auto` is the parameter that runs an
algorithm as if the ranks were placed in another order (docs/remapping.md).

The value of an inner-algorithm parameter (`inter`, `intra`, `bcast`, `reduce`, `gather`
of the composite and hierarchical algorithms) is `ALG` or `ALG:key=value`, several of its
own parameters joined by `+` (`hier_ml:inter=pipeline:segsize=8192+fanout=2,leaders=4`):
`,` already separates the outer parameters and the specs of a list, `|` a grid's
alternatives, `..` a range; `+` means nothing else in a spec, a study, a rules file's
PARAMS or the shell.

Checking names and parameter names against an algorithm table is the caller's business
(drivers.registry, studies.study, mpi.libalgos); this module only splits and joins.
"""

from __future__ import annotations

import itertools
import json
import math
from typing import Any, Iterable, Iterator

from colltune.base.errors import ColltuneError
from colltune.base.units import parse_sizes

LIBRARIES = ("ompi", "mpich")  # prefixes of the MPI library's own algorithms
REMAPS = ("none", "seq", "rr", "auto")  # values of the remap parameter


class SpecError(ColltuneError, ValueError):
    """A spec that cannot be split into a name and key=value parameters."""


# --------------------------------------------------------------------------- specs


def split_spec(spec: str) -> tuple[str, str]:
    """'chain:segsize=8192,fanout=4' -> ('chain', 'segsize=8192,fanout=4'); 'ring' -> ('ring', '')."""
    name, _, params = str(spec).partition(":")
    return name, params


def algorithm_of(spec: str) -> str:
    """The algorithm of a spec, without parameters: 'chain:fanout=2' -> 'chain'; library
    specs keep their prefix: 'ompi:binomial:segsize=8192' -> 'ompi:binomial'."""
    text = str(spec)
    if text.startswith(tuple(f"{lib}:" for lib in LIBRARIES)):
        return ":".join(text.split(":")[:2])
    return split_spec(text)[0]


def param_pairs(text: str, where: str) -> Iterator[tuple[str, str]]:
    """'segsize=8192, fanout=4' -> ('segsize', '8192'), ('fanout', '4') in order (keys and
    values stripped, empty items skipped); an item that is not key=value raises
    SpecError("WHERE: parameter 'ITEM' is not key=value") when the iteration reaches it."""
    for item in filter(None, (x.strip() for x in str(text).split(","))):
        k, eq, v = item.partition("=")
        if not eq or not k.strip() or not v.strip():
            raise SpecError(f"{where}: parameter '{item}' is not key=value")
        yield k.strip(), v.strip()


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """'chain:segsize=8192,fanout=4' -> ('chain', {'segsize': '8192', 'fanout': '4'});
    raises SpecError for a parameter that is not key=value or is given twice."""
    name, text = split_spec(spec)
    return name, _unique(param_pairs(text, str(spec)), str(spec))


def format_params(params: dict | Iterable[tuple[str, Any]] | None) -> str:
    """{'segsize': 8192, 'fanout': 4} (or pairs) -> 'segsize=8192,fanout=4'."""
    items = params.items() if isinstance(params, dict) else (params or ())
    return ",".join(f"{k}={v}" for k, v in items)


def format_spec(name: str, params: dict | Iterable[tuple[str, Any]] | None = None) -> str:
    """('chain', {'segsize': 8192}) -> 'chain:segsize=8192'; no parameters: the name."""
    text = format_params(params)
    return f"{name}:{text}" if text else name


INNER_JOIN = "+"  # joins an inner algorithm's own parameters (module doc)


def split_inner(value: Any) -> tuple[str, str]:
    """An inner algorithm's value -> its name and its parameters as a spec writes them:
    'pipeline:segsize=8192+fanout=2' -> ('pipeline', 'segsize=8192,fanout=2');
    'binomial' -> ('binomial', '')."""
    name, _, params = str(value).partition(":")
    return name.strip(), params.replace(INNER_JOIN, ",")


def inner_spec(value: Any) -> str:
    """An inner algorithm's value as a spec of its own: 'knomial:radix=3+segsize=0' ->
    'knomial:radix=3,segsize=0'."""
    name, params = split_inner(value)
    return f"{name}:{params}" if params else name


def format_inner(name: str, params: dict | Iterable[tuple[str, Any]] | None = None) -> str:
    """('knomial', {'radix': 3, 'segsize': 0}) -> 'knomial:radix=3+segsize=0'."""
    return format_spec(name, params).replace(",", INNER_JOIN)


def split_specs(text: str) -> list[str]:
    """'chain:segsize=8192,fanout=4,binomial' -> ['chain:segsize=8192,fanout=4', 'binomial']:
    a token whose part before any ':' has a '=' (`fanout=4`, `inter=knomial:radix=3`)
    continues the previous spec."""
    specs: list[str] = []
    for tok in (t.strip() for t in text.split(",")):
        if not tok:
            continue
        if "=" in tok.partition(":")[0] and specs:
            specs[-1] += "," + tok
        else:
            specs.append(tok)
    return specs


GRID_MAX = 256  # specs one grid may stand for


def expand_grid(spec: str) -> list[str]:
    """A parameter grid -> one spec per combination, the first parameter varying
    slowest: 'chain:segsize=4K..16K,fanout=2|4' -> 'chain:segsize=4096,fanout=2',
    'chain:segsize=4096,fanout=4', 'chain:segsize=8192,fanout=2', ... A value 'A..B' is
    the powers of two from A to B (sizes as --size takes them: 1K..64K); 'a|b|c' those
    values. Library specs too ('ompi:chain:segsize=1K..8K'). An inner algorithm's value
    with parameters is one alternative as a whole ('inter=pipeline:segsize=8K|binomial'),
    and its own parameters' grids expand within it ('inter=pipeline:segsize=8K..64K',
    'inter=knomial:radix=2|4' -> 'knomial:radix=2', 'knomial:radix=4'). A spec without a
    grid is returned alone, unchanged."""
    text = str(spec).strip()
    if "|" not in text and ".." not in text:
        return [text]
    if is_lib_spec(text):
        library, name, params = parse_lib_spec(text)
        head = f"{library}:{name}"
    else:
        head, params = parse_spec(text)
    axes = []
    for key, value in params.items():
        if ":" in value:  # inner algorithms with parameters of their own
            axes.append([(key, v) for v in _inner_grid(text, key, value)])
            continue
        if "|" in value:
            vals = [v.strip() for v in value.split("|")]
            if not all(vals):
                raise SpecError(f"{text}: parameter '{key}': an empty value in '{value}'")
        elif ".." in value:
            try:
                vals = [str(v) for v in parse_sizes(value)]
            except ValueError as exc:
                raise SpecError(f"{text}: parameter '{key}': {exc}") from None
        else:
            vals = [value]
        axes.append([(key, v) for v in vals])
    count = math.prod(len(a) for a in axes)
    if count > GRID_MAX:
        raise SpecError(f"{text}: a grid of {count} specs, more than {GRID_MAX}: "
                        "narrow its ranges")
    return [format_spec(head, list(combo)) for combo in itertools.product(*axes)]


def _inner_grid(text: str, key: str, value: str) -> list[str]:
    """The inner algorithm values one grid value stands for: alternatives at '|' (a piece
    that starts with a digit, after one with parameters, is another value of its last
    parameter: 'knomial:radix=2|4'; algorithm names never do), each expanded over its
    own grid ('+' joins its parameters)."""
    alts: list[str] = []
    for piece in (v.strip() for v in value.split("|")):
        if not piece:
            raise SpecError(f"{text}: parameter '{key}': an empty value in '{value}'")
        if alts and ":" in alts[-1] and piece[:1].isdigit():
            alts[-1] += "|" + piece  # another value of the last inner parameter
        else:
            alts.append(piece)
    out: list[str] = []
    for alt in alts:
        try:
            grid = expand_grid(inner_spec(alt)) if ":" in alt else [alt]
        except SpecError as exc:
            raise SpecError(f"{text}: parameter '{key}': {exc}") from None
        out += [format_inner(*parse_spec(g)) for g in grid]
    return out


def _unique(pairs: Iterable[tuple[str, str]], where: str) -> dict[str, str]:
    params: dict[str, str] = {}
    for key, value in pairs:
        if key in params:
            raise SpecError(f"{where}: parameter '{key}' given twice")
        params[key] = value
    return params


# ------------------------------------------------------------------ library specs


def is_lib_spec(spec: str) -> bool:
    """True for `ompi:...` and `mpich:...` specs."""
    return str(spec).split(":", 1)[0] in LIBRARIES


def parse_lib_spec(spec: str) -> tuple[str, str, dict[str, str]]:
    """'ompi:binomial:segsize=8192,fanout=4' -> ('ompi', 'binomial', {...}).

    Values stay strings here; `mpi.libalgos.lib_env` checks names, keys and values.
    """
    parts = spec.strip().split(":", 2)
    if len(parts) < 2 or parts[0] not in LIBRARIES or not parts[1]:
        raise SpecError(f"'{spec}' is not a library algorithm spec "
                        "(ompi:NAME[:key=value,...] or mpich:NAME[:key=value,...])")
    library, name = parts[0], parts[1].strip()
    params = _unique(param_pairs(parts[2], spec), spec) if len(parts) == 3 else {}
    return library, name, params


def format_lib_spec(library: str, name: str, params: dict | None = None) -> str:
    """('ompi', 'binomial', {'segsize': 8192}) -> 'ompi:binomial:segsize=8192'."""
    return format_spec(f"{library}:{name}", params)


# ------------------------------------------------------------ recorded parameters


def is_missing(value: Any) -> bool:
    """None or NaN (an empty cell of a DataFrame)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def _json_object(text: str) -> dict | None:
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _number(v: str) -> Any:
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return v


def parse_params(value: Any, *, numbers: bool = False) -> dict:
    """Parameters as recorded -> a dict. `value`: 'segsize=8192,fanout=4', the database's
    JSON object text ('{"segsize": 8192}'), a dict, or None/NaN/'' (none).

    numbers=False: keys and values as strings ({'segsize': '8192'}), for formulas and
    labels. numbers=True: 'k=v' values that read as numbers become int or float
    ({'segsize': 8192}, what the database stores); a dict and a JSON object keep their
    values as they are. Items without '=' and JSON that does not parse are skipped.
    """
    if is_missing(value):
        return {}
    if isinstance(value, dict):
        obj: dict | None = value
    else:
        text = str(value).strip()
        if not text.startswith("{"):
            pairs = []
            for item in filter(None, (x.strip() for x in text.split(","))):
                k, eq, v = item.partition("=")
                if eq:
                    pairs.append((k.strip(), v.strip()))
            return {k: (_number(v) if numbers else v) for k, v in pairs}
        obj = _json_object(text)
        if obj is None:
            return {}
    return dict(obj) if numbers else {str(k): str(v) for k, v in obj.items()}


def params_text(value: Any) -> str:
    """Parameters as the benchmark writes them, 'segsize=8192,fanout=4', from any form
    `parse_params` reads ('' for none); other text passes through stripped."""
    if is_missing(value):
        return ""
    if isinstance(value, dict):
        return format_params(value)
    text = str(value).strip()
    if text.startswith("{"):
        obj = _json_object(text)
        if obj is not None:
            return format_params(obj)
    return text


# ------------------------------------------------------------------------- remap


def remap_of(spec: Any, params: Any = None) -> str:
    """The remap an algorithm spec asks for ("none" when it has none): `ring:remap=seq`
    -> "seq". `params` (the database's JSON object or "k=v,..." text) wins over the spec."""
    value = parse_params(params, numbers=True).get("remap") if params is not None else None
    if value is not None and str(value) != "":
        return str(value)
    name, text = split_spec(spec or "")
    value = parse_params(text).get("remap") if text else None
    return value if value else "none"


def without_remap(spec: Any) -> str:
    """The spec without its remap parameter: `ring:remap=seq` -> `ring`,
    `chain:segsize=8192,remap=rr` -> `chain:segsize=8192`."""
    text = str(spec)
    if ":" not in text:
        return text
    name, params = split_spec(text)
    kept = [p for p in params.split(",") if p and p.partition("=")[0].strip() != "remap"]
    return name + (":" + ",".join(kept) if kept else "")


def with_remap(spec: str, remap: str | None) -> str:
    """`spec` with remap=REMAP added (refused when it already names one)."""
    if not remap:
        return spec
    if remap not in REMAPS:
        raise ColltuneError(f"--remap '{remap}': valid: {', '.join(REMAPS)}")
    name, params = split_spec(spec)
    if any(p.strip().startswith("remap=") for p in params.split(",")):
        raise ColltuneError(f"'{spec}' already sets remap; drop --remap or the parameter")
    return f"{spec},remap={remap}" if params else f"{name}:remap={remap}"
