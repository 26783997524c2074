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
Errors name the key and the problem: "study.sizes[2]: '12Q' is not a size; ...".
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from colltune.base.collectives import COLLECTIVES
from colltune.base.files import read_text
from colltune.base.errors import ColltuneError, did_you_mean
from colltune.base.specs import is_lib_spec, parse_params, split_spec
from colltune.mpi.placement import LAUNCHERS, MAPPINGS, ORDERS
from colltune.base.units import parse_size, parse_sizes
from colltune.drivers import loadgen as workload
from colltune.drivers import bench as bench_mod
from colltune.drivers import registry

TIMINGS = ("osu", "window")
DTYPES = ("char", "int", "float", "double")
OPS = ("sum", "max", "min", "prod")
ALGO_GROUPS = ("ours", "all", "library", "library-matched")  # plus ompi:all / mpich:all

SIZE_HINT = "use bytes like 4096, 4K or a range 1..1M"
PROC_HINT = "use whole numbers like 4, or ranges '2..48 step 2', '2..64 x2'"

# key: (type description, default); None default = not set
KEYS: dict[str, tuple[str, Any]] = {
    "name": ("string (required)", None),
    "description": ("string", ""),
    "collectives": ("list of collectives (required)", None),
    "algorithms": ("list of algorithm specs, or a table collective -> list (required)", None),
    "sizes": ("list of sizes in bytes, or a range string (required)", None),
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
    "nodes": ("whole number >= 1: nodes to spread over (hostfile, slurm; the simulated "
              "platform's nodes under mpi = 'smpi')", None),
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
    """A study file is wrong; the message names the key and the problem."""


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
    nodes: int | None = None
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
    source: str = ""  # file path or preset:NAME
    text: str = ""  # the TOML as written

    def definition(self) -> dict:
        """The study as JSON-able data (what the database keeps)."""
        d = asdict(self)
        d.pop("text")
        return d

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
    """[2, 4, 6, 8, 16] -> '2..8 step 2, 16' (short, for messages)."""
    if len(values) <= 4:
        return ", ".join(map(str, values))
    parts, i = [], 0
    while i < len(values):
        j = i
        step = values[i + 1] - values[i] if i + 1 < len(values) else 0
        while j + 1 < len(values) and values[j + 1] - values[j] == step and step > 0:
            j += 1
        if j - i >= 2:
            parts.append(f"{values[i]}..{values[j]}" + (f" step {step}" if step != 1 else ""))
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
    out = [_choice(f"{key}[{i}]", x, choices) for i, x in enumerate(items)]
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
        out = [s for i, x in enumerate(v) for s in parse_size_item(f"{key}[{i}]", x)]
    else:
        out = parse_size_item(key, v)
    return sorted(set(out))


_RANGE_RE = re.compile(r"^\s*(\d+)\s*\.\.\s*(\d+)\s*(?:(step)\s*(\d+)|x\s*(\d+))?\s*$")


def parse_proc_item(key: str, v: Any) -> list[int]:
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise StudyError(f"{key}: {v!r} is not a process count; {PROC_HINT}")
    if isinstance(v, int):
        if v < 1:
            raise StudyError(f"{key}: {v} is not a process count (at least 1)")
        return [v]
    out: list[int] = []
    for part in v.split(","):
        part = part.strip()
        if part.isdigit():
            out.append(int(part))
            continue
        m = _RANGE_RE.match(part)
        if not m:
            raise StudyError(f"{key}: '{part}' is not a process count; {PROC_HINT}")
        lo, hi = int(m.group(1)), int(m.group(2))
        if lo < 1 or hi < lo:
            raise StudyError(f"{key}: '{part}': needs 1 <= from <= to")
        if m.group(5):
            factor = int(m.group(5))
            if factor < 2:
                raise StudyError(f"{key}: '{part}': the factor must be at least 2")
            p = lo
            while p <= hi:
                out.append(p)
                p *= factor
        else:
            step = int(m.group(4) or 1)
            if step < 1:
                raise StudyError(f"{key}: '{part}': the step must be at least 1")
            out += list(range(lo, hi + 1, step))
    if any(p < 1 for p in out):
        raise StudyError(f"{key}: process counts must be at least 1")
    return out


def parse_study_processes(key: str, v: Any) -> list[int]:
    if isinstance(v, list):
        if not v:
            raise StudyError(f"{key}: empty list; {PROC_HINT}")
        out = [p for i, x in enumerate(v) for p in parse_proc_item(f"{key}[{i}]", x)]
    else:
        out = parse_proc_item(key, v)
    return sorted(set(out))


def _spec_list(key: str, v: Any) -> list[str]:
    items = [v] if isinstance(v, str) else v
    _want(key, items, list, "a list of algorithm specs like [\"binomial\", \"native\"]")
    if not items:
        raise StudyError(f"{key}: empty list")
    out = []
    for i, x in enumerate(items):
        _want(f"{key}[{i}]", x, str, "an algorithm spec (string)")
        x = x.strip()
        if not x:
            raise StudyError(f"{key}[{i}]: empty algorithm spec")
        out.append(x)
    return out


# -------------------------------------------------------------------- loading


def loads(text: str, source: str = "<string>", base_dir: Path | None = None) -> Study:
    """Parse and check a study from TOML text."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise StudyError(f"{source}: not valid TOML: {exc}") from None
    for k in data:
        if k not in TOP_LEVEL:
            raise StudyError(f"{k}: unknown table or key at the top level"
                             f"{did_you_mean(k, TOP_LEVEL)}; "
                             "a study file has [study] (and optionally [sbatch])")
    if "study" not in data:
        raise StudyError("study: missing the [study] table")
    st = data["study"]
    _want("study", st, dict, "a table")
    for k in st:
        if k not in KEYS:
            raise StudyError(f"study.{k}: unknown key{did_you_mean(k, KEYS)}; valid keys: "
                             f"{', '.join(KEYS)}")
    heat_only = st.get("collectives") == [HEAT]
    for k in REQUIRED:
        if k not in st and not (heat_only and k == "sizes"):
            raise StudyError(f"study.{k}: missing; it is required ({KEYS[k][0]})")

    name = _want("study.name", st["name"], str, "a string")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]*", name):
        raise StudyError(f"study.name: '{name}' should be letters, digits, '_', '-' or '.'")
    colls = _choices("study.collectives", st["collectives"], tuple(COLLECTIVES) + (HEAT,))

    algos_raw = st["algorithms"]
    algorithms: dict[str, list[str]] = {}
    if isinstance(algos_raw, dict):
        for c in algos_raw:
            if c not in colls:
                hint = (f"; it is not in study.collectives ({', '.join(colls)})"
                        if c in COLLECTIVES
                        else f"; valid: {', '.join(colls)}{did_you_mean(c, colls)}")
                raise StudyError(f"study.algorithms.{c}: not a collective of this study{hint}")
        for c in colls:
            if c not in algos_raw:
                raise StudyError(f"study.algorithms.{c}: missing; give the algorithms of every "
                                 "collective, or one list for all")
            algorithms[c] = _spec_list(f"study.algorithms.{c}", algos_raw[c])
    else:
        specs = _spec_list("study.algorithms", algos_raw)
        algorithms = {c: list(specs) for c in colls}

    s = Study(name=name, collectives=colls, algorithms=algorithms,
              sizes=parse_study_sizes("study.sizes", st["sizes"]) if "sizes" in st else [],
              processes=parse_study_processes("study.processes", st["processes"]),
              source=source, text=text)
    if HEAT in colls:
        s.heat = _parse_heat(st.get("heat", {}), algorithms[HEAT])
    elif "heat" in st:
        raise StudyError("study.heat: applies to the collective 'heat', which is not in "
                         "study.collectives")
    if "description" in st:
        s.description = _want("study.description", st["description"], str, "a string")
    if "load_levels" in st and "load" not in st:
        raise StudyError("study.load_levels: defines levels, but study.load names none to use")
    if "load" in st:
        s.load, s.load_levels = _parse_load(st["load"], st.get("load_levels", {}))
        if HEAT in colls:
            raise StudyError("study.load: not available with the collective 'heat'")
    if "probe_iterations" in st:
        s.probe_iterations = _int("study.probe_iterations", st["probe_iterations"], 1)
    if "probe_size" in st:
        v = st["probe_size"]
        if isinstance(v, str):

            try:
                v = parse_size(v)
            except ValueError as exc:
                raise StudyError(f"study.probe_size: {exc}") from None
        s.probe_size = _int("study.probe_size", v, 0)
    if "repetitions" in st:
        s.repetitions = _int("study.repetitions", st["repetitions"], 1)
    if "mapping" in st:
        s.mapping = _choices("study.mapping", st["mapping"], MAPPINGS)
    if "order" in st:
        s.order = _choices("study.order", st["order"], ORDERS)
    if "iterations" in st:
        s.iterations = _int("study.iterations", st["iterations"], 1)
    if "warmup" in st:
        s.warmup = _int("study.warmup", st["warmup"], 0)
    if "timing" in st:
        s.timing = _choice("study.timing", st["timing"], TIMINGS)
    if "reps_per_launch" in st:
        s.reps_per_launch = _int("study.reps_per_launch", st["reps_per_launch"], 1)
    if "sleep_us" in st:
        s.sleep_us = _num("study.sleep_us", st["sleep_us"], 0)
    if "time_budget" in st:
        s.time_budget = _num("study.time_budget", st["time_budget"], 0, strict=True)
        if "iterations" in st:
            raise StudyError("study.time_budget: excludes study.iterations; give one")
    for k in ("raw", "validate", "bind", "shuffle"):
        if k in st:
            setattr(s, k, _want(f"study.{k}", st[k], bool, "true or false"))
    if "mpi" in st:
        s.mpi = _want("study.mpi", st["mpi"], str, "'openmpi', 'mpich' or a path")
    if "platform" in st:
        s.platform = _want("study.platform", st["platform"], str,
                           "a platform preset name or a description file")
    if "launcher" in st:
        s.launcher = _choice("study.launcher", st["launcher"], LAUNCHERS)
    if "hostfile" in st:
        hf = _want("study.hostfile", st["hostfile"], str, "a path")
        p = Path(hf).expanduser()
        if not p.is_absolute() and base_dir is not None:
            p = base_dir / p
        s.hostfile = str(p)
    if s.launcher == "hostfile" and not s.hostfile:
        raise StudyError("study.hostfile: missing; launcher = 'hostfile' needs a hostfile path")
    if s.hostfile and s.launcher != "hostfile":
        raise StudyError(f"study.hostfile: only used with launcher = 'hostfile' "
                         f"(launcher is '{s.launcher}')")
    if "nodes" in st:
        s.nodes = _int("study.nodes", st["nodes"], 1)
    if "root" in st:
        s.root = _int("study.root", st["root"], 0)
    if "dtype" in st:
        s.dtype = _choice("study.dtype", st["dtype"], DTYPES)
    if "op" in st:
        s.op = _choice("study.op", st["op"], OPS)
    if "seed" in st:
        s.seed = _int("study.seed", st["seed"], 0)
    if "timeout" in st:
        s.timeout = _num("study.timeout", st["timeout"], 0, strict=True)
    if "max_processes" in st:
        v = st["max_processes"]
        if isinstance(v, int) and not isinstance(v, bool):
            s.max_processes = _int("study.max_processes", v, 1)
        else:
            _want("study.max_processes", v, str, "a whole number or 'N*cores'")
            eval_max_processes(v, 1)  # checks the form
            s.max_processes = v
    if "env" in st:
        env = _want("study.env", st["env"], dict, "a table of NAME = \"value\"")
        for k, v in env.items():
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
                raise StudyError(f"study.env.{k}: not an environment variable name")
            if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                raise StudyError(f"study.env.{k}: expected a string, got {_type_name(v)}")
            s.env[k] = str(v)
    if "sbatch" in data:
        sb = _want("sbatch", data["sbatch"], dict, "a table")
        for k, v in sb.items():
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
        s.sbatch = dict(sb)
    return s


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
    for k in h:
        if k not in HEAT_KEYS:
            raise StudyError(f"study.heat.{k}: unknown key{did_you_mean(k, HEAT_KEYS)}; valid: "
                             f"{', '.join(HEAT_KEYS)}")
    if "grids" not in h:
        raise StudyError(f"study.heat.grids: missing; it is required ({HEAT_KEYS['grids']})")
    raw = h["grids"] if isinstance(h["grids"], list) else [h["grids"]]
    grids = [_grid(f"study.heat.grids[{i}]", g) for i, g in enumerate(raw)]
    decomps = _choices("study.heat.decomps", h.get("decomps", ["rows"]), HEAT_DECOMPS)
    for i, v in enumerate(variants):
        if v not in HEAT_VARIANTS:
            raise StudyError(f"study.algorithms.heat[{i}]: '{v}' is not a heat variant; valid: "
                             f"{', '.join(HEAT_VARIANTS)}{did_you_mean(v, HEAT_VARIANTS)}")
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
        for i, spec in enumerate(study.algorithms[coll]):
            key = f"study.algorithms.{coll}[{i}]" if per_coll else f"study.algorithms[{i}]"
            if spec == "ours":
                specs += ours
            elif spec == "all":
                specs += ours + ["native"]
                if lib is not None:
                    specs += lib.all_names(build.mpi, coll)
            elif spec == "library":
                if lib is not None:
                    specs += lib.all_names(build.mpi, coll)
            elif spec == "library-matched":
                if lib is not None:
                    specs += bench_mod.library_matched(build, coll)
            elif is_lib_spec(spec):
                if lib is None:
                    raise StudyError(f"{key}: '{spec}': the MPI library's own algorithms need "
                                     "colltune.libalgos, which this colltune does not have")
                library, rest = split_spec(spec)
                if rest == "all":
                    try:
                        specs += bench_mod.expand_algos(build, coll, [spec])
                    except ValueError as exc:
                        raise StudyError(f"{key}: {exc}") from None
                    continue
                try:
                    lib.lib_env(build.mpi, coll, spec)
                except ValueError as exc:
                    raise StudyError(f"{key}: {exc}") from None
                specs.append(spec)
            else:
                registry.check_spec(key, spec, coll, reg,
                                    also=", or ours, all, ompi:NAME, mpich:NAME",
                                    error=StudyError)
                specs.append(spec)
        out[coll] = list(dict.fromkeys(specs))
    return out
