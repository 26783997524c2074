"""Decision tables: which algorithm to run for (collective, processes, size).

A `RuleSet` is what `colltune tune` produces and what every exporter reads
(Open MPI's coll/tuned rules file, MPICH's selection JSON, colltune's own rules
file for the interposition library). It is library-neutral: sizes are
colltune's sizes (bytes of the message for bcast/reduce/allreduce, bytes *per
process* for gather/allgather: docs/database.md), ranges are inclusive, and a
lookup takes the first rule that matches.

colltune's own rules file (read back by `read_text`, and by the interposition
library in C) is line oriented so that a C reader needs no JSON parser:

    # colltune-rules 1
    # target: colltune            (comment lines '# key: value' carry the metadata)
    # COLLECTIVE NP_MIN NP_MAX SIZE_MIN SIZE_MAX ALGORITHM PARAMS
    bcast      2 -  0     8191 binomial  -
    bcast      2 -  8192  -    pipeline  segsize=8192,fanout=1

`-` as NP_MAX or SIZE_MAX means no upper bound, `-` as PARAMS means none.
Numbers are plain decimal integers (no 64K suffixes: C reads them with strtoll).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ColltuneError

FORMAT_TAG = "colltune-rules 1"
COLLECTIVES = ("bcast", "reduce", "gather", "allgather", "allreduce")
TARGETS = ("colltune", "openmpi", "mpich")


class RulesError(ColltuneError):
    """A rules file or rule set that cannot be used; the message names the line."""


@dataclass(frozen=True)
class Rule:
    collective: str
    np_min: int  # inclusive
    np_max: int | None  # inclusive; None: no upper bound
    size_min: int  # bytes, inclusive (colltune's size, see the module doc)
    size_max: int | None  # inclusive; None: no upper bound
    algorithm: str  # 'native', a colltune algorithm, 'ompi:NAME' or 'mpich:NAME'
    params: tuple[tuple[str, int | str], ...] = ()  # sorted (key, value) pairs
    mapping: str | None = None  # only where the study varied the mapping

    def matches(self, collective: str, np: int, size: int, mapping: str | None = None) -> bool:
        return (self.collective == collective
                and self.np_min <= np and (self.np_max is None or np <= self.np_max)
                and self.size_min <= size and (self.size_max is None or size <= self.size_max)
                and (self.mapping is None or mapping is None or self.mapping == mapping))

    @property
    def params_dict(self) -> dict[str, int | str]:
        return dict(self.params)

    @property
    def spec(self) -> str:
        """The algorithm as colltune writes a spec: `pipeline:segsize=8192`."""
        if not self.params:
            return self.algorithm
        return self.algorithm + ":" + ",".join(f"{k}={v}" for k, v in self.params)


def make_params(d: dict | None) -> tuple[tuple[str, int | str], ...]:
    return tuple(sorted((str(k), v) for k, v in (d or {}).items()))


@dataclass
class RuleSet:
    target: str  # one of TARGETS
    rules: list[Rule]
    meta: dict[str, str] = field(default_factory=dict)  # study, created, mpi, policy, ...

    def lookup(self, collective: str, np: int, size: int, mapping: str | None = None) -> Rule | None:
        for r in self.rules:
            if r.matches(collective, np, size, mapping):
                return r
        return None

    def collectives(self) -> list[str]:
        return sorted({r.collective for r in self.rules}, key=COLLECTIVES.index)


# --------------------------------------------------------------------------- own text format


def _bound(v: int | None) -> str:
    return "-" if v is None else str(int(v))


def to_text(rs: RuleSet) -> str:
    lines = [f"# {FORMAT_TAG}"]
    for k, v in rs.meta.items():
        lines.append(f"# {k}: {' '.join(str(v).split())}")
    lines.append(f"# target: {rs.target}")
    lines.append("# COLLECTIVE NP_MIN NP_MAX SIZE_MIN SIZE_MAX ALGORITHM PARAMS [MAPPING]")
    for r in rs.rules:
        params = ",".join(f"{k}={v}" for k, v in r.params) or "-"
        row = [r.collective, str(r.np_min), _bound(r.np_max), str(r.size_min), _bound(r.size_max),
               r.algorithm, params]
        if r.mapping is not None:
            row.append(r.mapping)
        lines.append(" ".join(row))
    return "\n".join(lines) + "\n"


def _int(text: str, what: str, where: str, allow_none: bool = False) -> int | None:
    if allow_none and text == "-":
        return None
    if not text.isdigit():
        raise RulesError(f"{where}: {what} '{text}' is not a non-negative decimal integer"
                         + (" or '-'" if allow_none else ""))
    return int(text)


def from_text(text: str, source: str = "<rules>") -> RuleSet:
    lines = text.splitlines()
    if not lines or lines[0].strip() != f"# {FORMAT_TAG}":
        raise RulesError(f"{source}:1: not a colltune rules file (the first line must be "
                         f"'# {FORMAT_TAG}')")
    meta: dict[str, str] = {}
    rules: list[Rule] = []
    for i, line in enumerate(lines[1:], start=2):
        where = f"{source}:{i}"
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            body = s[1:].strip()
            if ":" in body and not body.startswith("COLLECTIVE"):
                k, v = body.split(":", 1)
                meta[k.strip()] = v.strip()
            continue
        f = s.split()
        if len(f) not in (7, 8):
            raise RulesError(f"{where}: expected 7 or 8 fields (COLLECTIVE NP_MIN NP_MAX SIZE_MIN "
                             f"SIZE_MAX ALGORITHM PARAMS [MAPPING]), found {len(f)}")
        coll = f[0]
        if coll not in COLLECTIVES:
            raise RulesError(f"{where}: unknown collective '{coll}' (valid: {', '.join(COLLECTIVES)})")
        np_min = _int(f[1], "NP_MIN", where)
        np_max = _int(f[2], "NP_MAX", where, allow_none=True)
        size_min = _int(f[3], "SIZE_MIN", where)
        size_max = _int(f[4], "SIZE_MAX", where, allow_none=True)
        if np_min < 1:
            raise RulesError(f"{where}: NP_MIN must be at least 1")
        if np_max is not None and np_max < np_min:
            raise RulesError(f"{where}: NP_MAX {np_max} is below NP_MIN {np_min}")
        if size_max is not None and size_max < size_min:
            raise RulesError(f"{where}: SIZE_MAX {size_max} is below SIZE_MIN {size_min}")
        params: dict[str, int | str] = {}
        if f[6] != "-":
            for kv in f[6].split(","):
                if "=" not in kv or not kv.split("=", 1)[0]:
                    raise RulesError(f"{where}: parameter '{kv}' is not KEY=VALUE")
                k, v = kv.split("=", 1)
                params[k] = int(v) if v.isdigit() else v
        rules.append(Rule(coll, np_min, np_max, size_min, size_max, f[5], make_params(params),
                          f[7] if len(f) == 8 else None))
    target = meta.pop("target", "colltune")
    if target not in TARGETS:
        raise RulesError(f"{source}: unknown target '{target}' (valid: {', '.join(TARGETS)})")
    return RuleSet(target, rules, meta)


def read(path: str | Path) -> RuleSet:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise RulesError(f"{p}: cannot read: {exc.strerror or exc}") from None
    return from_text(text, str(p))


def to_json(rs: RuleSet) -> str:
    return json.dumps({"format": FORMAT_TAG, "target": rs.target, "meta": rs.meta,
                       "rules": [{"collective": r.collective, "np_min": r.np_min, "np_max": r.np_max,
                                  "size_min": r.size_min, "size_max": r.size_max,
                                  "algorithm": r.algorithm, "params": r.params_dict,
                                  "mapping": r.mapping} for r in rs.rules]}, indent=2)
