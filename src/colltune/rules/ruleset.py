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

Load classes (docs/workload.md): rules made from a study with a load dimension carry
a last field `load=CLASS`, and the file defines each class by a range of the load
index (the probe's median exchange time of 4 KB between random pairs, in µs):

    # load-class: quiet 0 12.5          (NAME MIN MAX: MIN <= index < MAX, '-' no bound)
    # load-class: busy 12.5 -
    bcast 2 - 0 - binomial - load=quiet
    bcast 2 - 0 - linear - load=busy

A rule without `load=` applies under every load, so files without load classes read
as before; a reader that finds `load=` needs the class defined above it.

Processes per node (node-aware rules): a last field `ppn=A-B` (or `ppn=A-`, no upper
bound; `ppn=A` alone: exactly A) makes a rule hold only on communicators whose
processes per node lie in that range: the number of processes of the communicator
that share this process's node (MPI_Comm_split_type MPI_COMM_TYPE_SHARED), the
largest over the nodes, which the interposition library computes once per
communicator. `load=` and `ppn=` may both be given, in either order, after MAPPING:

    bcast 16 - 0 - binomial - ppn=1-1      (one process per node)
    bcast 16 - 0 - linear - ppn=2-         (two or more per node)

A rule without `ppn=` holds at every ppn.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from colltune.base.collectives import COLLECTIVES
from colltune.base.files import read_text
from colltune.base.errors import ColltuneError, did_you_mean
from colltune.base.specs import format_spec
from colltune.mpi.placement import MAPPINGS

FORMAT_TAG = "colltune-rules 1"
TARGETS = ("colltune", "openmpi", "mpich")
# the C reader's limits (native/pmpi/pmpi_rules.c): a line, the bounds, a class name
MAX_LINE = 1023
MAX_NP = 1 << 30
MAX_SIZE = 1 << 62
MAX_CLASS_NAME = 62


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
    load: str | None = None  # load class (LoadClass.name); None: under every load
    line: int = field(default=0, compare=False, repr=False)  # of the file it was read from
    ppn: tuple[int, int | None] | None = None  # processes per node, inclusive; None: any
    # why the rule says what it says where it rests on no measured cell (written as a
    # comment line above it: '# np above 2 not measured (measured 2) so native')
    note: str = field(default="", compare=False, repr=False)

    def matches(self, collective: str, np: int, size: int, mapping: str | None = None,
                load: str | None = None, ppn: int | None = None) -> bool:
        return (self.collective == collective
                and self.np_min <= np and (self.np_max is None or np <= self.np_max)
                and self.size_min <= size and (self.size_max is None or size <= self.size_max)
                and (self.mapping is None or mapping is None or self.mapping == mapping)
                and (self.load is None or load is None or self.load == load)
                and (self.ppn is None or ppn is None
                     or (self.ppn[0] <= ppn and (self.ppn[1] is None or ppn <= self.ppn[1]))))

    @property
    def params_dict(self) -> dict[str, int | str]:
        return dict(self.params)

    @property
    def spec(self) -> str:
        """The algorithm as colltune writes a spec: `pipeline:segsize=8192`."""
        return format_spec(self.algorithm, self.params)


def make_params(d: dict | None) -> tuple[tuple[str, int | str], ...]:
    return tuple(sorted((str(k), v) for k, v in (d or {}).items()))


@dataclass(frozen=True)
class LoadClass:
    """A range of the load index (probe µs): lo <= index < hi (hi None: no bound)."""

    name: str
    lo: float
    hi: float | None = None

    def holds(self, index: float) -> bool:
        return self.lo <= index and (self.hi is None or index < self.hi)


@dataclass
class RuleSet:
    target: str  # one of TARGETS
    rules: list[Rule]
    meta: dict[str, str] = field(default_factory=dict)  # study, created, mpi, policy, ...
    load_classes: list[LoadClass] = field(default_factory=list)  # quietest first

    def lookup(self, collective: str, np: int, size: int, mapping: str | None = None,
               load: str | None = None, ppn: int | None = None) -> Rule | None:
        for r in self.rules:
            if r.matches(collective, np, size, mapping, load, ppn):
                return r
        return None

    def load_class(self, index: float) -> str | None:
        """The class whose range holds a load index (None without classes)."""
        for c in self.load_classes:
            if c.holds(index):
                return c.name
        if not self.load_classes:
            return None
        # below the lowest class: the quietest; in a gap or above: the last (as the C reader)
        return (self.load_classes[0] if index < self.load_classes[0].lo
                else self.load_classes[-1]).name

    def for_load(self, name: str) -> "RuleSet":
        """The rules that apply under one load class, without load fields (for a library
        that has no load dimension)."""
        names = [c.name for c in self.load_classes]
        if name not in names:
            raise RulesError(f"no load class '{name}' (classes: {', '.join(names) or 'none'})")
        rules = [Rule(r.collective, r.np_min, r.np_max, r.size_min, r.size_max, r.algorithm,
                      r.params, r.mapping, ppn=r.ppn)
                 for r in self.rules if r.load in (None, name)]
        return RuleSet(self.target, rules, {**self.meta, "load class": name})

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
    for c in rs.load_classes:
        lines.append(f"# load-class: {c.name} {_num(c.lo)} "
                     f"{'-' if c.hi is None else _num(c.hi)}")
    lines.append("# COLLECTIVE NP_MIN NP_MAX SIZE_MIN SIZE_MAX ALGORITHM PARAMS [MAPPING]"
                 + (" [load=CLASS]" if rs.load_classes else "")
                 + (" [ppn=MIN-MAX]" if any(r.ppn for r in rs.rules) else ""))
    for r in rs.rules:
        if r.note:  # no ':' in it: a '# key: value' line would read as metadata
            lines.append("# " + " ".join(r.note.replace(":", " ").split()))
        params = ",".join(f"{k}={v}" for k, v in r.params) or "-"
        row = [r.collective, str(r.np_min), _bound(r.np_max), str(r.size_min), _bound(r.size_max),
               r.algorithm, params]
        if r.mapping is not None:
            row.append(r.mapping)
        if r.load is not None:
            row.append(f"load={r.load}")
        if r.ppn is not None:
            row.append(ppn_text(r.ppn))
        lines.append(" ".join(row))
    return "\n".join(lines) + "\n"


def ppn_text(ppn: tuple[int, int | None]) -> str:
    """(1, 1) -> 'ppn=1-1', (2, None) -> 'ppn=2-'."""
    return f"ppn={ppn[0]}-{'' if ppn[1] is None else ppn[1]}"


_PPN_RE = re.compile(r"^(\d+)(?:-(\d*))?$")


def parse_ppn(text: str, where: str) -> tuple[int, int | None]:
    """'1-1', '2-' (no bound), '4' (exactly 4) -> (min, max or None)."""
    m = _PPN_RE.match(text) if text.isascii() else None
    if not m:
        raise RulesError(f"{where}: ppn={text}: write ppn=MIN-MAX, ppn=MIN- (no upper bound) "
                         "or ppn=N, with whole numbers")
    lo = int(m.group(1))
    hi = lo if m.group(2) is None else (None if m.group(2) == "" else int(m.group(2)))
    if lo < 1 or lo > MAX_NP or (hi is not None and (hi < lo or hi > MAX_NP)):
        raise RulesError(f"{where}: ppn={text}: needs 1 <= MIN <= MAX <= {MAX_NP}")
    return lo, hi


def _num(v: float) -> str:
    return f"{v:.6g}"


_CLASS_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_\-]*)\s+(\S+)\s+(\S+)$")


def _load_class(body: str, where: str, classes: list[LoadClass]) -> LoadClass:
    m = _CLASS_RE.match(body)
    if not m:
        raise RulesError(f"{where}: load-class must be 'NAME MIN MAX' (MAX '-' for no bound), "
                         f"found '{body}'")
    name, lo_t, hi_t = m.groups()
    if not all(re.fullmatch(r"[0-9.eE+-]+", t) for t in (lo_t, hi_t) if t != "-"):
        raise RulesError(f"{where}: load-class {name}: '{lo_t} {hi_t}' are not plain decimal "
                         "numbers")
    if len(name) > MAX_CLASS_NAME:
        raise RulesError(f"{where}: load-class name longer than {MAX_CLASS_NAME} characters")
    try:
        lo = float(lo_t)
        hi = None if hi_t == "-" else float(hi_t)
    except ValueError:
        raise RulesError(f"{where}: load-class {name}: '{lo_t} {hi_t}' are not numbers") from None
    if not math.isfinite(lo) or lo < 0 or (hi is not None and (not math.isfinite(hi) or hi <= lo)):
        raise RulesError(f"{where}: load-class {name}: needs 0 <= MIN < MAX")
    if any(c.name == name for c in classes):
        raise RulesError(f"{where}: load-class {name} defined twice")
    return LoadClass(name, lo, hi)


def _int(text: str, what: str, where: str, allow_none: bool = False,
         most: int = MAX_SIZE) -> int | None:
    if allow_none and text == "-":
        return None
    if not (text.isascii() and text.isdigit()):
        raise RulesError(f"{where}: {what} '{text}' is not a non-negative decimal integer"
                         + (" or '-'" if allow_none else ""))
    if int(text) > most:
        raise RulesError(f"{where}: {what} {text} is too large (at most {most})")
    return int(text)


def from_text(text: str, source: str = "<rules>") -> RuleSet:
    lines = text.splitlines()
    if not lines or lines[0].strip() != f"# {FORMAT_TAG}":
        raise RulesError(f"{source}:1: not a colltune rules file (the first line must be "
                         f"'# {FORMAT_TAG}')")
    meta: dict[str, str] = {}
    rules: list[Rule] = []
    classes: list[LoadClass] = []
    for i, line in enumerate(lines[1:], start=2):
        where = f"{source}:{i}"
        if len(line.encode(errors="replace")) > MAX_LINE:
            raise RulesError(f"{where}: line longer than {MAX_LINE} characters")
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            body = s[1:].strip()
            if body.startswith("load-class:"):
                classes.append(_load_class(body[len("load-class:"):].strip(), where, classes))
                continue
            if ":" in body and not body.startswith("COLLECTIVE"):
                k, v = body.split(":", 1)
                meta[k.strip()] = v.strip()
            continue
        f = s.split()
        load = ppn = None
        keyed = 0
        while len(f) > 7 and f[-1].startswith(("load=", "ppn=")):
            key, _, val = f.pop().partition("=")
            keyed += 1
            if (load if key == "load" else ppn) is not None:
                raise RulesError(f"{where}: {key}= given twice")
            if key == "ppn":
                ppn = parse_ppn(val, where)
                continue
            load = val
            if load not in [c.name for c in classes]:
                raise RulesError(f"{where}: load={load}: no such load class defined above "
                                 f"(a '# load-class: {load} MIN MAX' line; defined: "
                                 f"{', '.join(c.name for c in classes) or 'none'})")
        if len(f) not in (7, 8):
            raise RulesError(f"{where}: expected 7 or 8 fields (COLLECTIVE NP_MIN NP_MAX SIZE_MIN "
                             f"SIZE_MAX ALGORITHM PARAMS [MAPPING]) and optional load=CLASS and "
                             f"ppn=MIN-MAX, found {len(f) + keyed}")
        coll = f[0]
        if coll not in COLLECTIVES:
            raise RulesError(f"{where}: unknown collective '{coll}' (valid: {', '.join(COLLECTIVES)})")
        np_min = _int(f[1], "NP_MIN", where, most=MAX_NP)
        np_max = _int(f[2], "NP_MAX", where, allow_none=True, most=MAX_NP)
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
            if "" in f[6].split(","):
                raise RulesError(f"{where}: PARAMS '{f[6]}' has an empty item "
                                 "(KEY=VALUE,KEY=VALUE or '-')")
            for kv in f[6].split(","):
                if "=" not in kv or not kv.split("=", 1)[0]:
                    raise RulesError(f"{where}: parameter '{kv}' is not KEY=VALUE")
                k, v = kv.split("=", 1)
                if k in params:
                    raise RulesError(f"{where}: parameter '{k}' given twice")
                params[k] = int(v) if v.isascii() and v.isdigit() else v
        mapping = f[7] if len(f) == 8 else None
        if mapping is not None and mapping not in MAPPINGS:
            raise RulesError(f"{where}: MAPPING '{mapping}' is not a mapping"
                             f"{did_you_mean(mapping, MAPPINGS)}; valid: {', '.join(MAPPINGS)}")
        rules.append(Rule(coll, np_min, np_max, size_min, size_max, f[5], make_params(params),
                          mapping, load, line=i, ppn=ppn))
    target = meta.pop("target", "colltune")
    if target not in TARGETS:
        raise RulesError(f"{source}: unknown target '{target}' (valid: {', '.join(TARGETS)})")
    return RuleSet(target, rules, meta, classes)


def read(path: str | Path) -> RuleSet:
    p, text = read_text(path, RulesError, "{path}: cannot read: {reason}")
    return from_text(text, str(p))


def to_json(rs: RuleSet) -> str:
    return json.dumps({"format": FORMAT_TAG, "target": rs.target, "meta": rs.meta,
                       "rules": [{"collective": r.collective, "np_min": r.np_min, "np_max": r.np_max,
                                  "size_min": r.size_min, "size_max": r.size_max,
                                  "algorithm": r.algorithm, "params": r.params_dict,
                                  "mapping": r.mapping, "load": r.load,
                                  "ppn": None if r.ppn is None else
                                  {"min": r.ppn[0], "max": r.ppn[1]}} for r in rs.rules],
                       "load_classes": [{"name": c.name, "min": c.lo, "max": c.hi}
                                        for c in rs.load_classes]}, indent=2)
