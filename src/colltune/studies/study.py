"""Study files: a parameter sweep written down (TOML), checked, with defaults.

The smallest study file:

    [study]
    name = "example"
    collectives = ["bcast"]
    algorithms = ["binomial", "linear", "native"]
    sizes = [8, 4096]
    processes = [2, 3]
    repetitions = 2

Every other key has a default (see KEYS and docs/studies.md). `load` checks
everything that can be checked without the native build; `resolve_algorithms`
checks algorithm names against the build's registry (and `ompi:`/`mpich:` specs
against colltune.libalgos) and expands `ours`, `all` and `ompi:all`.
Errors name the key and the problem: "study.sizes[2]: '12Q' is not a size; ...", and
a file with several mistakes gets all of them at once (StudyError.errors, one a line).
Ranges are written as on the command line (base.units): sizes "1:1M" (powers of two),
processes "2:8", "2:48 step 2", "2:512 x2"; "1..1M" and "2..8" are read the same.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from colltune.base.collectives import COLLECTIVES
from colltune.base.files import read_text
from colltune.base.errors import ColltuneError, did_you_mean
from colltune.base.specs import SpecError, expand_grid, is_lib_spec, parse_params, split_spec
from colltune.mpi.placement import LAUNCHERS, MAPPINGS, ORDERS
from colltune.base.units import parse_ints, parse_size, parse_sizes
from colltune.drivers import loadgen as workload
from colltune.drivers import bench as bench_mod
from colltune.drivers import registry

TIMINGS = ("osu", "window")
DTYPES = ("char", "int", "float", "double")
OPS = ("sum", "max", "min", "prod")
ALGO_GROUPS = ("ours", "all", "library", "library-matched")  # plus ompi:all / mpich:all

SIZE_HINT = "use bytes like 4096, 4K or a range 1:1M"
PROC_HINT = "use whole numbers like 4, or ranges '2:8', '2:48 step 2', '2:64 x2'"

# key: (type description, default); None default = not set
KEYS: dict[str, tuple[str, Any]] = {
    "name": ("string (required)", None),
    "description": ("string", ""),
    "collectives": ("list of collectives (required)", None),
    "algorithms": ("list of algorithm specs, or a table collective -> list (required)", None),
    "sizes": ("sizes in bytes: a list, a range, or a table collective -> sizes (required)", None),
    "processes": ("list of process counts, or a range string (required)", None),
    "repetitions": ("whole number >= 1: separate launches of every configuration", 5),
    "mapping": ("'core', 'socket', 'node' or a list of them", ["core"]),
    "order": ("'seq', 'rr' or a list of them (rank order across nodes)", ["seq"]),
    "iterations": ("whole number >= 1 (timed calls per point; default: the driver's)", None),
    "warmup": ("whole number >= 0 (untimed calls first; default: the driver's)", None),
    "timing": ("'osu' or 'window'", "osu"),
    "reps_per_launch": ("whole number >= 1: the driver's own repetitions in one launch", 1),
    "sleep_us": ("number >= 0: microseconds between calls, untimed", 0.0),
    "time_budget": ("seconds > 0 per point and algorithm (replaces iterations)", None),
    "raw": ("true/false: store per-repetition samples", False),
    "validate": ("true/false: check each point against the library's collective", False),
    "mpi": ("'openmpi', 'mpich', 'smpi' (SimGrid simulation) or a path to an MPI library",
            "openmpi"),
    "platform": ("simulated platform for mpi = 'smpi': a preset name or a description "
                 "file (colltune.platform); default 'flat'", None),
    "launcher": ("'local', 'hostfile' or 'slurm'", "local"),
    "hostfile": ("path of a hostfile (launcher = 'hostfile'), relative to the study file", None),
    "nodes": ("whole number >= 1, or a list of them: nodes to spread over (hostfile, "
              "slurm; the simulated platform's nodes under mpi = 'smpi'); a list measures "
              "every process count in each layout (nodes x processes per node), for "
              "node-aware rules", None),
    "bind": ("true/false: bind processes to cores when mapping", True),
    "root": ("whole number >= 0", 0),
    "dtype": ("'char', 'int', 'float' or 'double'", "char"),
    "op": ("'sum', 'max', 'min' or 'prod'", "sum"),
    "seed": ("whole number: seed of the launch order shuffle (default: new each run)", None),
    "shuffle": ("true/false: shuffle the launch order", True),
    "timeout": ("seconds > 0 per launch", 900.0),
    "max_processes": ("whole number or 'cores', '2*cores': drop larger process counts", None),
    "env": ("table of environment variables for every launch", {}),
    "load": ("list of load levels, e.g. [\"none\", \"light\", \"heavy\"]: background traffic "
             "(colltune-load) during each launch, the probe before it (docs/workload.md)", []),
    "load_levels": ("table NAME -> {pattern, np, size, window, duty, period_ms}: levels of "
                    "study.load beyond the built-in none, light, medium, heavy", {}),
    "probe_size": ("bytes each probe partner sends per iteration (default 4096, the seed's "
                   "4 KB; a simulation's flow model has no queueing delay, so a simulated "
                   "probe needs enough bytes to feel shared bandwidth)", 4096),
    "probe_iterations": ("whole number >= 1: iterations of the probe before each launch of a "
                         "study with study.load", 300),
    "from_profile": ("table: the profile it came from (study from-profile): file, sha256, ...", {}),
    "heat": ("table for the collective 'heat' (the heat-diffusion application): grids "
             "['RxC', ...], decomps ['rows', '2d'], iterations (number, or table 'RxC' -> "
             "number)", {}),
}
REQUIRED = ("name", "collectives", "algorithms", "sizes", "processes")
SBATCH_KEYS = {
    "partition": "string", "time": "string like '02:00:00'", "account": "string",
    "qos": "string", "nodes": "whole number", "ntasks_per_node": "whole number",
    "exclusive": "true/false (default true)", "options": "list of extra #SBATCH options",
}
TOP_LEVEL = ("study", "sbatch")


class StudyError(ColltuneError, ValueError):
    """A study file is wrong; the message names the key and the problem. One error may
    carry several (`errors`, the message has one a line); `study` is what could be read
    of a file with errors (None when nothing could), for the checks that come later."""

    def __init__(self, *messages: Any, study: "Study | None" = None):
        self.errors = [m for msg in messages
                       for m in (msg.errors if isinstance(msg, StudyError) else [str(msg)])]
        self.study = study
        super().__init__("\n".join(self.errors))


def combine(*excs: StudyError) -> StudyError:
    """The errors of several StudyErrors as one, in the order of the file's lines."""
    errors = [e for exc in excs for e in exc.errors]

    def line(msg: str) -> int:
        m = re.match(r".*?:(\d+): ", msg)
        return int(m.group(1)) if m else 1 << 30
    return StudyError(*sorted(errors, key=line), study=excs[0].study if excs else None)


class _Errors:
    """Collects the errors of a study file: `with errs.check(): ...` records a
    StudyError raised in the block and goes on after it."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    @contextmanager
    def check(self):
        try:
            yield
        except StudyError as exc:
            self.errors.extend(exc.errors)

    def add(self, message: str) -> None:
        self.errors.append(message)

    def extend(self, exc: "StudyError") -> None:
        self.errors.extend(exc.errors)

    def located(self, text: str, source: str) -> list[str]:
        """The errors in the order of the file, each with where: 'FILE:LINE: study.x: ...'
        (the line that sets the key the error names, else its table's)."""
        out = []
        for msg in self.errors:
            m = re.match(r"([A-Za-z_][\w\-]*(?:\.[\w\-]+)*)", msg)
            line = _line_of(text, m.group(1).split(".")) if m and not msg.startswith(source) \
                else None
            out.append((line or 1 << 30, f"{source}:{line}: {msg}" if line else msg))
        return [msg for _, msg in sorted(out, key=lambda x: x[0])]


def _line_of(text: str, path: list[str]) -> int | None:
    """The line (from 1) of `text` (TOML) that sets the key `path` (['study', 'algorithms',
    'bcast']): its `key =` in its table or its [table] header; failing that, the line of
    the longest part of the path that is there."""
    table: list[str] = []
    best, depth = None, 0
    for n, line in enumerate(text.splitlines(), 1):
        m = re.match(r"\s*\[\s*([^\[\]]+?)\s*\]", line)
        if m:
            table = [x.strip().strip("\"'") for x in m.group(1).split(".")]
            found = table
        else:
            m = re.match(r"\s*([\w\-]+|\"[^\"]*\"|'[^']*')\s*=", line)
            if not m:
                continue
            found = table + [m.group(1).strip("\"'")]
        if len(found) > depth and found == path[:len(found)]:
            best, depth = n, len(found)
    return best


@dataclass
class Study:
    name: str
    collectives: list[str]
    algorithms: dict[str, list[str]]  # per collective, as written (before expansion)
    sizes: list[int]
    processes: list[int]
    description: str = ""
    repetitions: int = 5
    mapping: list[str] = field(default_factory=lambda: ["core"])
    order: list[str] = field(default_factory=lambda: ["seq"])
    iterations: int | None = None
    warmup: int | None = None
    timing: str = "osu"
    reps_per_launch: int = 1
    sleep_us: float = 0.0
    time_budget: float | None = None
    raw: bool = False
    validate: bool = False
    mpi: str = "openmpi"
    platform: str | None = None
    launcher: str = "local"
    hostfile: str | None = None
    nodes: int | list[int] | None = None
    bind: bool = True
    root: int = 0
    dtype: str = "char"
    op: str = "sum"
    seed: int | None = None
    shuffle: bool = True
    timeout: float = 900.0
    max_processes: int | str | None = None
    env: dict[str, str] = field(default_factory=dict)
    heat: dict[str, Any] = field(default_factory=dict)  # grids, decomps, iterations
    load: list[str] = field(default_factory=list)  # load levels; [] no load dimension
    load_levels: dict[str, dict] = field(default_factory=dict)  # level -> its definition
    probe_iterations: int = 300
    probe_size: int = 4096
    sbatch: dict[str, Any] = field(default_factory=dict)
    sizes_by: dict[str, list[int]] = field(default_factory=dict)  # per collective; {}: sizes
    from_profile: dict[str, Any] = field(default_factory=dict)  # the profile it came from
    source: str = ""  # file path or preset:NAME
    text: str = ""  # the TOML as written

    def definition(self) -> dict:
        """The study as JSON-able data (what the database keeps)."""
        d = asdict(self)
        d.pop("text")
        # sizes_by, from_profile only when used: the digests of older studies stay
        return {k: v for k, v in d.items() if v or k not in ("sizes_by", "from_profile")}

    def sizes_of(self, collective: str) -> list[int]:
        """The sizes of a collective: its own (sizes as a table), else the study's."""
        return list(self.sizes_by.get(collective, self.sizes))

    def digest(self) -> str:
        text = json.dumps(self.definition(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def scaled_processes(self, cores: int) -> tuple[list[int], str | None]:
        """Process counts after the max_processes rule; and a note when it dropped some."""
        if self.max_processes is None:
            return list(self.processes), None
        cap = eval_max_processes(self.max_processes, cores)
        kept = [p for p in self.processes if p <= cap]
        dropped = [p for p in self.processes if p > cap]
        if not kept:
            raise StudyError(f"study.max_processes: {self.max_processes} = {cap} on {cores} cores "
                             f"leaves none of the process counts {fmt_ints(self.processes)}")
        note = None
        if dropped:
            note = (f"scaled to {cores} cores: max_processes = {self.max_processes} = {cap}, "
                    f"processes {fmt_ints(self.processes)} -> {fmt_ints(kept)}")
        return kept, note


def fmt_ints(values: list[int]) -> str:
    """[2, 4, 6, 8, 16] -> '2:8 step 2, 16' (short, for messages; as --np and study
    files take it)."""
    if len(values) <= 4:
        return ", ".join(map(str, values))
    parts, i = [], 0
    while i < len(values):
        j = i
        step = values[i + 1] - values[i] if i + 1 < len(values) else 0
        while j + 1 < len(values) and values[j + 1] - values[j] == step and step > 0:
            j += 1
        if j - i >= 2:
            parts.append(f"{values[i]}:{values[j]}" + (f" step {step}" if step != 1 else ""))
            i = j + 1
        else:
            parts.append(str(values[i]))
            i += 1
    return ", ".join(parts)


def eval_max_processes(value: int | str, cores: int) -> int:
    if isinstance(value, int):
        return value
    m = re.fullmatch(r"\s*(?:(\d+)\s*\*\s*)?cores\s*(?:\*\s*(\d+))?\s*", value)
    if not m:
        raise StudyError(f"study.max_processes: '{value}' is not a whole number, 'cores' or "
                         "'N*cores'")
    return int(m.group(1) or 1) * int(m.group(2) or 1) * cores


# ------------------------------------------------------------------ value checks


def _type_name(v: Any) -> str:
    return {bool: "true/false", int: "a whole number", float: "a number", str: "a string",
            list: "a list", dict: "a table"}.get(type(v), type(v).__name__)


def _want(key: str, v: Any, kind, what: str) -> Any:
    ok = isinstance(v, kind) and not (kind in (int, float, (int, float)) and isinstance(v, bool))
    if not ok:
        raise StudyError(f"{key}: expected {what}, got {_type_name(v)} {v!r}")
    return v


def _nodes(key: str, v: Any) -> int | list[int]:
    """A whole number of nodes, or a list of them (layouts)."""
    if isinstance(v, list):
        if not v:
            raise StudyError(f"{key}: an empty list (a number of nodes, or a list of them)")
        vals = [_int(f"{key}[{i}]", x, 1) for i, x in enumerate(v)]
        if len(set(vals)) < len(vals):
            raise StudyError(f"{key}: {vals} names a layout twice")
        return vals
    return _int(key, v, 1)


def layouts(study: "Study") -> list[int | None]:
    """The node counts a study measures each process count at ([None]: the launcher's
    own spread)."""
    n = study.nodes
    return [None] if n is None else list(n) if isinstance(n, list) else [n]


def _int(key: str, v: Any, minimum: int) -> int:
    _want(key, v, int, "a whole number")
    if v < minimum:
        raise StudyError(f"{key}: {v} must be at least {minimum}")
    return v


def _num(key: str, v: Any, minimum: float, strict: bool = False) -> float:
    _want(key, v, (int, float), "a number")
    if v < minimum or (strict and v == minimum):
        raise StudyError(f"{key}: {v} must be {'greater than' if strict else 'at least'} {minimum}")
    return float(v)


def _choice(key: str, v: Any, choices) -> str:
    _want(key, v, str, f"one of {', '.join(choices)}")
    if v not in choices:
        raise StudyError(f"{key}: '{v}' is not one of {', '.join(choices)}"
                         f"{did_you_mean(v, choices)}")
    return v


def _choices(key: str, v: Any, choices) -> list[str]:
    items = [v] if isinstance(v, str) else v
    _want(key, items, list, f"one of {', '.join(choices)} or a list of them")
    if not items:
        raise StudyError(f"{key}: empty list")
    errs = _Errors()
    out = []
    for i, x in enumerate(items):
        with errs.check():
            out.append(_choice(f"{key}[{i}]", x, choices))
    if errs.errors:
        raise StudyError(*errs.errors)
    return list(dict.fromkeys(out))


def parse_size_item(key: str, v: Any) -> list[int]:
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise StudyError(f"{key}: {v!r} is not a size; {SIZE_HINT}")
    if isinstance(v, int):
        if v < 0:
            raise StudyError(f"{key}: {v} is not a size; {SIZE_HINT}")
        return [v]
    try:
        return parse_sizes(v)
    except ValueError:
        raise StudyError(f"{key}: '{v}' is not a size; {SIZE_HINT}") from None


def parse_study_sizes(key: str, v: Any) -> list[int]:
    if isinstance(v, list):
        if not v:
            raise StudyError(f"{key}: empty list; {SIZE_HINT}")
        out = _each(key, v, parse_size_item)
    else:
        out = parse_size_item(key, v)
    return sorted(set(out))


def _each(key: str, items: list, parse) -> list:
    """`parse(f"{key}[i]", item)` for every item, every error reported."""
    errs, out = _Errors(), []
    for i, x in enumerate(items):
        with errs.check():
            out += parse(f"{key}[{i}]", x)
    if errs.errors:
        raise StudyError(*errs.errors)
    return out


def parse_proc_item(key: str, v: Any) -> list[int]:
    """One item of study.processes: a count or ranges, as --np takes them (units.parse_ints)."""
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise StudyError(f"{key}: {v!r} is not a process count; {PROC_HINT}")
    if isinstance(v, int):
        if v < 1:
            raise StudyError(f"{key}: {v} is not a process count (at least 1)")
        return [v]
    try:
        out = parse_ints(v, key)
    except ValueError as exc:
        if "is not a" in str(exc):  # not a number nor a range (else: the range's problem)
            raise StudyError(f"{key}: '{v}' is not a process count; {PROC_HINT}") from None
        raise StudyError(f"{exc}; {PROC_HINT}") from None
    if any(p < 1 for p in out):
        raise StudyError(f"{key}: '{v}': process counts must be at least 1")
    return out


def parse_study_processes(key: str, v: Any) -> list[int]:
    if isinstance(v, list):
        if not v:
            raise StudyError(f"{key}: empty list; {PROC_HINT}")
        out = _each(key, v, parse_proc_item)
    else:
        out = parse_proc_item(key, v)
    return sorted(set(out))


def _spec_list(key: str, v: Any) -> list[str]:
    items = [v] if isinstance(v, str) else v
    _want(key, items, list, "a list of algorithm specs like [\"binomial\", \"native\"]")
    if not items:
        raise StudyError(f"{key}: empty list")
    errs, out = _Errors(), []
    for i, x in enumerate(items):
        with errs.check():
            _want(f"{key}[{i}]", x, str, "an algorithm spec (string)")
            if not x.strip():
                raise StudyError(f"{key}[{i}]: empty algorithm spec")
            out.append(x.strip())
    if errs.errors:
        raise StudyError(*errs.errors)
    return out


# -------------------------------------------------------------------- loading


def loads(text: str, source: str = "<string>", base_dir: Path | None = None) -> Study:
    """Parse and check a study from TOML text: every error of the text at once."""
    errs = _Errors()
    s = _read(text, source, base_dir, errs)
    if errs.errors:
        raise StudyError(*errs.located(text, source), study=s)
    return s


def _read(text: str, source: str, base_dir: Path | None, errs: _Errors) -> Study | None:
    """The study of `text`, each error added to `errs` (the study then holds what could
    be read); None when not even the [study] table could be read."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        errs.add(f"{source}: not valid TOML: {exc}")
        return None
    for k in data:
        if k not in TOP_LEVEL:
            errs.add(f"{k}: unknown table or key at the top level{did_you_mean(k, TOP_LEVEL)}; "
                     "a study file has [study] (and optionally [sbatch])")
    if "study" not in data:
        errs.add("study: missing the [study] table")
        return None
    st = data["study"]
    if not isinstance(st, dict):
        errs.add(f"study: expected a table, got {_type_name(st)} {st!r}")
        return None
    for k in st:
        if k not in KEYS:
            errs.add(f"study.{k}: unknown key{did_you_mean(k, KEYS)}; valid keys: "
                     f"{', '.join(KEYS)}")
    heat_only = st.get("collectives") == [HEAT]
    for k in REQUIRED:
        if k not in st and not (heat_only and k == "sizes"):
            errs.add(f"study.{k}: missing; it is required ({KEYS[k][0]})")

    name = ""
    if "name" in st:
        with errs.check():
            name = _want("study.name", st["name"], str, "a string")
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]*", name):
                raise StudyError(f"study.name: '{name}' should be letters, digits, '_', '-' "
                                 "or '.'")
    valid_colls = tuple(COLLECTIVES) + (HEAT,)
    colls: list[str] = []
    colls_ok = "collectives" in st
    if colls_ok:
        try:
            colls = _choices("study.collectives", st["collectives"], valid_colls)
        except StudyError as exc:  # go on with the valid ones
            errs.extend(exc)
            colls_ok = False
            raw = st["collectives"]
            colls = list(dict.fromkeys(c for c in (raw if isinstance(raw, list) else [raw])
                                       if isinstance(c, str) and c in valid_colls))

    algos_raw = st.get("algorithms")
    algorithms: dict[str, list[str]] = {}
    if isinstance(algos_raw, dict):
        for c in algos_raw:
            if c not in colls and colls_ok:
                hint = (f"; it is not in study.collectives ({', '.join(colls)})"
                        if c in COLLECTIVES
                        else f"; valid: {', '.join(colls)}{did_you_mean(c, colls)}")
                errs.add(f"study.algorithms.{c}: not a collective of this study{hint}")
        for c in colls:
            if c not in algos_raw:
                errs.add(f"study.algorithms.{c}: missing; give the algorithms of every "
                         "collective, or one list for all")
                continue
            with errs.check():
                algorithms[c] = _spec_list(f"study.algorithms.{c}", algos_raw[c])
    elif algos_raw is not None:
        with errs.check():
            specs = _spec_list("study.algorithms", algos_raw)
            algorithms = {c: list(specs) for c in colls}

    s = Study(name=name, collectives=colls, algorithms=algorithms, sizes=[], processes=[],
              source=source, text=text)
    if "sizes" in st:
        with errs.check():
            if isinstance(st["sizes"], dict):
                s.sizes_by = _sizes_table(st["sizes"], colls, colls_ok)
                s.sizes = sorted({x for v in s.sizes_by.values() for x in v})
            else:
                s.sizes = parse_study_sizes("study.sizes", st["sizes"])
    if "processes" in st:
        with errs.check():
            s.processes = parse_study_processes("study.processes", st["processes"])
    if HEAT in colls:
        with errs.check():
            s.heat = _parse_heat(st.get("heat", {}), algorithms.get(HEAT, []))
    elif "heat" in st and colls_ok:
        errs.add("study.heat: applies to the collective 'heat', which is not in "
                 "study.collectives")
    with errs.check():
        _read_settings(s, st, base_dir, errs)
    if "sbatch" in data:
        with errs.check():
            sb = _want("sbatch", data["sbatch"], dict, "a table")
            for k, v in sb.items():
                with errs.check():
                    _check_sbatch(k, v)
            s.sbatch = dict(sb)
    return s


def _sizes_table(table: dict, colls: list[str], colls_ok: bool) -> dict[str, list[int]]:
    """study.sizes as a table collective -> sizes: each collective of the study has its own."""
    errs, out = _Errors(), {}
    for c in (c for c in table if c not in colls and colls_ok):
        errs.add(f"study.sizes.{c}: not a collective of this study; valid: {', '.join(colls)}"
                 f"{did_you_mean(c, colls)}")
    for c in (c for c in colls if c != HEAT):
        if c not in table:
            errs.add(f"study.sizes.{c}: missing; give every collective's sizes, or one list")
            continue
        with errs.check():
            out[c] = parse_study_sizes(f"study.sizes.{c}", table[c])
    if errs.errors:
        raise StudyError(*errs.errors)
    return out


PROFILE_KEYS = {"file": str, "sha256": str, "share": (int, float), "covered": (int, float)}


def _from_profile(v: Any) -> dict[str, Any]:
    for k, x in _want("study.from_profile", v, dict, "a table (file, sha256, ...)").items():
        if k not in PROFILE_KEYS:
            raise StudyError(f"study.from_profile.{k}: unknown key"
                             f"{did_you_mean(k, PROFILE_KEYS)}; valid: {', '.join(PROFILE_KEYS)}")
        _want(f"study.from_profile.{k}", x, PROFILE_KEYS[k], "a string or a number")
    return dict(v)


def _read_settings(s: Study, st: dict, base_dir: Path | None, errs: _Errors) -> None:
    """The keys of [study] beyond name, collectives, algorithms, sizes and processes."""
    colls = s.collectives
    if "description" in st:
        with errs.check():
            s.description = _want("study.description", st["description"], str, "a string")
    if "from_profile" in st:
        with errs.check():
            s.from_profile = _from_profile(st["from_profile"])
    if "load_levels" in st and "load" not in st:
        errs.add("study.load_levels: defines levels, but study.load names none to use")
    if "load" in st:
        with errs.check():
            s.load, s.load_levels = _parse_load(st["load"], st.get("load_levels", {}))
            if HEAT in colls:
                raise StudyError("study.load: not available with the collective 'heat'")
    if "probe_iterations" in st:
        with errs.check():
            s.probe_iterations = _int("study.probe_iterations", st["probe_iterations"], 1)
    if "probe_size" in st:
        with errs.check():
            v = st["probe_size"]
            if isinstance(v, str):
                try:
                    v = parse_size(v)
                except ValueError as exc:
                    raise StudyError(f"study.probe_size: {exc}") from None
            s.probe_size = _int("study.probe_size", v, 0)
    for key, check in (("repetitions", lambda k, v: _int(k, v, 1)),
                       ("mapping", lambda k, v: _choices(k, v, MAPPINGS)),
                       ("order", lambda k, v: _choices(k, v, ORDERS)),
                       ("iterations", lambda k, v: _int(k, v, 1)),
                       ("warmup", lambda k, v: _int(k, v, 0)),
                       ("timing", lambda k, v: _choice(k, v, TIMINGS)),
                       ("reps_per_launch", lambda k, v: _int(k, v, 1)),
                       ("sleep_us", lambda k, v: _num(k, v, 0)),
                       ("time_budget", lambda k, v: _num(k, v, 0, strict=True)),
                       ("raw", _bool), ("validate", _bool), ("bind", _bool), ("shuffle", _bool),
                       ("mpi", lambda k, v: _want(k, v, str, "'openmpi', 'mpich' or a path")),
                       ("platform", lambda k, v: _want(
                           k, v, str, "a platform preset name or a description file")),
                       ("launcher", lambda k, v: _choice(k, v, LAUNCHERS)),
                       ("nodes", _nodes),
                       ("root", lambda k, v: _int(k, v, 0)),
                       ("dtype", lambda k, v: _choice(k, v, DTYPES)),
                       ("op", lambda k, v: _choice(k, v, OPS)),
                       ("seed", lambda k, v: _int(k, v, 0)),
                       ("timeout", lambda k, v: _num(k, v, 0, strict=True)),
                       ("max_processes", _max_processes)):
        if key in st:
            with errs.check():
                setattr(s, key, check(f"study.{key}", st[key]))
    if "time_budget" in st and "iterations" in st:
        errs.add("study.time_budget: excludes study.iterations; give one")
    if "hostfile" in st:
        with errs.check():
            hf = _want("study.hostfile", st["hostfile"], str, "a path")
            p = Path(hf).expanduser()
            if not p.is_absolute() and base_dir is not None:
                p = base_dir / p
            s.hostfile = str(p)
    if s.launcher == "hostfile" and not s.hostfile and "hostfile" not in st:
        errs.add("study.hostfile: missing; launcher = 'hostfile' needs a hostfile path")
    launcher_ok = "launcher" not in st or st["launcher"] == s.launcher
    if s.hostfile and s.launcher != "hostfile" and launcher_ok:
        errs.add(f"study.hostfile: only used with launcher = 'hostfile' "
                 f"(launcher is '{s.launcher}')")
    if "env" in st:
        with errs.check():
            env = _want("study.env", st["env"], dict, "a table of NAME = \"value\"")
            for k, v in env.items():
                if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
                    errs.add(f"study.env.{k}: not an environment variable name")
                elif isinstance(v, bool) or not isinstance(v, (str, int, float)):
                    errs.add(f"study.env.{k}: expected a string, got {_type_name(v)}")
                else:
                    s.env[k] = str(v)


def _bool(key: str, v: Any) -> bool:
    return _want(key, v, bool, "true or false")


def _max_processes(key: str, v: Any) -> int | str:
    if isinstance(v, int) and not isinstance(v, bool):
        return _int(key, v, 1)
    _want(key, v, str, "a whole number or 'N*cores'")
    eval_max_processes(v, 1)  # checks the form
    return v


def _check_sbatch(k: str, v: Any) -> None:
    if k not in SBATCH_KEYS:
        raise StudyError(f"sbatch.{k}: unknown key{did_you_mean(k, SBATCH_KEYS)}; valid: "
                         f"{', '.join(SBATCH_KEYS)}")
    if k in ("nodes", "ntasks_per_node"):
        _int(f"sbatch.{k}", v, 1)
    elif k == "exclusive":
        _want("sbatch.exclusive", v, bool, "true or false")
    elif k == "options":
        _want("sbatch.options", v, list, "a list of strings")
        for i, x in enumerate(v):
            _want(f"sbatch.options[{i}]", x, str, "a string like '--constraint=ib'")
    else:
        _want(f"sbatch.{k}", v, str, SBATCH_KEYS[k])


def _parse_load(v: Any, levels_raw: Any) -> tuple[list[str], dict[str, dict]]:
    """study.load and study.load_levels, checked: the level names and every level's
    definition (built-in or the study's own), as plain data."""

    names = [v] if isinstance(v, str) else v
    _want("study.load", names, list, "a list of load level names")
    if not names:
        raise StudyError("study.load: empty list; give the levels, e.g. [\"none\", \"heavy\"]")
    for i, n in enumerate(names):
        _want(f"study.load[{i}]", n, str, "a load level name")
    if len(set(names)) != len(names):
        raise StudyError("study.load: a level is named twice")
    _want("study.load_levels", levels_raw, dict, "a table NAME -> level definition")
    try:
        defined = {n: workload.parse_level(f"study.load_levels.{n}", n, t)
                   for n, t in levels_raw.items()}
        unused = sorted(set(defined) - set(names))
        if unused:
            raise StudyError(f"study.load_levels.{unused[0]}: defined but not in study.load")
        levels = workload.resolve_levels(list(names), defined)
    except workload.LoadError as exc:
        raise StudyError(str(exc)) from None
    from dataclasses import asdict as _asdict

    return list(names), {n: _asdict(lv) for n, lv in levels.items()}


def load(path: str | Path) -> Study:
    """Read and check a study file."""
    p, text = read_text(path, StudyError)
    return loads(text, source=str(p.resolve()), base_dir=p.resolve().parent)


def preset_names() -> list[str]:
    d = resources.files("colltune.studies") / "presets"
    return sorted(f.name[:-5] for f in d.iterdir() if f.name.endswith(".toml"))


def read_preset(name: str) -> Study:
    names = preset_names()
    if name not in names:
        raise StudyError(f"no preset '{name}'{did_you_mean(name, names)}; "
                         f"presets: {', '.join(names)}")
    text = (resources.files("colltune.studies") / "presets" / f"{name}.toml").read_text()
    return loads(text, source=f"preset:{name}")


# --------------------------------------------------------------- algorithm names


def _libalgos():
    try:
        from colltune.mpi import libalgos
    except ImportError:
        return None
    return libalgos


HEAT = "heat"  # the heat-diffusion application as a study workload
HEAT_VARIANTS = ("blocking", "overlap", "persistent")
HEAT_DECOMPS = ("rows", "2d")
HEAT_KEYS = {"grids": "list of 'RxC' grid shapes (required)",
             "decomps": "'rows', '2d' or a list of them (default ['rows'])",
             "iterations": "number >= 1, or a table 'RxC' -> number (default 100)",
             "stream": "true or false: also measure the memory bandwidth (STREAM triad) at "
                       "every process count, for the report's bandwidth bound (default true)",
             "stream_elements": "doubles per array per process of that measurement, e.g. "
                                "'16M' (default 16M: 384 MiB per process)"}
STREAM = "stream"  # the pseudo-variant of a heat study that measures memory bandwidth
STREAM_ELEMENTS = 1 << 24


def _grid(key: str, v: Any) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", v) if isinstance(v, str) else None
    if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
        raise StudyError(f"{key}: {v!r} is not a grid shape; use 'ROWSxCOLS' like '1000x1000'")
    return int(m.group(1)), int(m.group(2))


def _parse_heat(h: Any, variants: list[str]) -> dict[str, Any]:
    """study.heat and the variants (study.algorithms for 'heat'), checked."""
    _want("study.heat", h, dict, "a table")
    errs = _Errors()
    for k in h:
        if k not in HEAT_KEYS:
            errs.add(f"study.heat.{k}: unknown key{did_you_mean(k, HEAT_KEYS)}; valid: "
                     f"{', '.join(HEAT_KEYS)}")
    for i, v in enumerate(variants):
        if v not in HEAT_VARIANTS:
            errs.add(f"study.algorithms.heat[{i}]: '{v}' is not a heat variant; valid: "
                     f"{', '.join(HEAT_VARIANTS)}{did_you_mean(v, HEAT_VARIANTS)}")
    if "grids" not in h:
        errs.add(f"study.heat.grids: missing; it is required ({HEAT_KEYS['grids']})")
    with errs.check():
        decomps = _choices("study.heat.decomps", h.get("decomps", ["rows"]), HEAT_DECOMPS)
    if errs.errors:
        raise StudyError(*errs.errors)
    raw = h["grids"] if isinstance(h["grids"], list) else [h["grids"]]
    grids = [_grid(f"study.heat.grids[{i}]", g) for i, g in enumerate(raw)]
    its = h.get("iterations", 100)
    per: dict[str, int] = {}
    if isinstance(its, dict):
        for g, n in its.items():
            r, c = _grid(f"study.heat.iterations.{g}", g)
            per[f"{r}x{c}"] = _int(f"study.heat.iterations.{g}", n, 1)
        missing = [f"{r}x{c}" for r, c in grids if f"{r}x{c}" not in per]
        if missing:
            raise StudyError(f"study.heat.iterations: no count for grid(s) {', '.join(missing)}")
    else:
        n = _int("study.heat.iterations", its, 1)
        per = {f"{r}x{c}": n for r, c in grids}
    stream = h.get("stream", True)
    if not isinstance(stream, bool):
        raise StudyError(f"study.heat.stream: {stream!r} is not true or false")
    elements = h.get("stream_elements", STREAM_ELEMENTS)
    try:
        elements = parse_size(str(elements)) if not isinstance(elements, int) else elements
    except ValueError as exc:
        raise StudyError(f"study.heat.stream_elements: {exc}") from None
    if isinstance(elements, bool) or elements < 1:
        raise StudyError(f"study.heat.stream_elements: {elements!r}: at least 1 element")
    return {"grids": [f"{r}x{c}" for r, c in grids], "decomps": decomps, "iterations": per,
            "stream": stream, "stream_elements": int(elements)}


def heat_specs(study: Study) -> list[str]:
    """The heat configurations of a study, each as 'VARIANT:grid=RxC,decomp=D,iterations=N'."""
    h = study.heat
    specs = [f"{v}:grid={g},decomp={d},iterations={h['iterations'][g]}"
             for g in h["grids"] for d in h["decomps"] for v in study.algorithms[HEAT]]
    if h.get("stream", True):  # one memory-bandwidth launch per process count and repetition
        specs.append(f"{STREAM}:elements={h.get('stream_elements', STREAM_ELEMENTS)}")
    return specs


def parse_heat_spec(spec: str) -> tuple[str, dict[str, str]]:
    variant, rest = split_spec(spec)
    return variant, parse_params(rest)


def resolve_algorithms(study: Study, build) -> dict[str, list[str]]:
    """Expand and check the algorithms of every collective against the build.

    Tokens: a colltune algorithm with optional parameters (`chain:segsize=8K`),
    `native`, `ours` (every colltune algorithm), `all` (ours, native and the MPI
    library's own), `library` (the built MPI library's own: `ompi:all` under Open MPI,
    `mpich:all` under MPICH, nothing under another MPI), `library-matched` (the same, each
    library algorithm with a same-named colltune one forced with colltune's effective
    segsize/fanout/radix: drivers.bench.library_matched), `ompi:NAME[:k=v]`,
    `mpich:NAME[:k=v]`, `ompi:all`, `mpich:all`.
    """

    lib = _libalgos()
    errs = _Errors()
    out: dict[str, list[str]] = {}
    per_coll = len({tuple(v) for v in study.algorithms.values()}) > 1
    for coll in study.collectives:
        if coll == HEAT:
            out[coll] = heat_specs(study)
            continue
        reg = {a.name: a for a in registry.algorithms(build) if a.collective == coll}
        if "native" not in reg:
            reg["native"] = None
        ours = [n for n in registry.names(build, coll) if n != "native"]
        specs: list[str] = []
        for i, spec in enumerate(study.algorithms.get(coll, [])):
            key = f"study.algorithms.{coll}[{i}]" if per_coll else f"study.algorithms[{i}]"
            with errs.check():
                specs += _expand(build, coll, key, spec, reg, ours, lib)
        out[coll] = list(dict.fromkeys(specs))
    if errs.errors:
        raise StudyError(*errs.located(study.text, study.source))
    return out


def _expand(build, coll: str, key: str, spec: str, reg: dict, ours: list[str],
            lib) -> list[str]:
    """The algorithms one token of study.algorithms stands for (checked); a parameter
    grid (`chain:segsize=4K..64K,fanout=2|4`) stands for every combination."""
    try:
        grid = expand_grid(spec)
    except SpecError as exc:
        raise StudyError(f"{key}: {exc}") from None
    if len(grid) > 1 or grid[0] != spec:
        return [a for one in grid for a in _expand(build, coll, key, one, reg, ours, lib)]
    if spec in ("all", "library"):
        library_own = lib.all_names(build.mpi, coll) if lib is not None else []
        return (ours + ["native"] if spec == "all" else []) + library_own
    if spec == "ours":
        return list(ours)
    if spec == "library-matched":
        return bench_mod.library_matched(build, coll) if lib is not None else []
    if is_lib_spec(spec):
        if lib is None:
            raise StudyError(f"{key}: '{spec}': the MPI library's own algorithms need "
                             "colltune.libalgos, which this colltune does not have")
        library, rest = split_spec(spec)
        try:
            if rest == "all":
                return bench_mod.expand_algos(build, coll, [spec])
            lib.lib_env(build.mpi, coll, spec)
        except ValueError as exc:
            raise StudyError(f"{key}: {exc}") from None
        return [spec]
    registry.check_spec(key, spec, coll, reg, also=", or ours, all, ompi:NAME, mpich:NAME",
                        error=StudyError, algorithms=registry.algorithms(build))
    return [spec]
