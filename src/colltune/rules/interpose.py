"""The interposition library (`libcolltune-pmpi.so`) from Python: the environment that
runs an unmodified MPI program under it, and the profile it writes at MPI_Finalize.

The library reads (docs/interposition.md):

    COLLTUNE_RULES=FILE        colltune's own rules file (rules.py), first matching line
    COLLTUNE_<COLL>=SPEC       one algorithm forced for a collective (BCAST, REDUCE, ...)
    COLLTUNE_VERBOSE=1         each distinct decision once, on rank 0
    COLLTUNE_PROFILE=FILE      calls and times per collective, communicator size, size
                               bucket and algorithm, as JSON (read_profile)
    COLLTUNE_LOAD_INDEX=X      a rules file with load classes: this load index instead of
                               measuring it (docs/workload.md)
    COLLTUNE_LOAD_PROBE=N      iterations of the shortened probe (default 50; 0: never)
    COLLTUNE_LOAD_PCONTROL=L   the MPI_Pcontrol level that measures the load again (17)
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from colltune.rules import ruleset as rules_mod
from colltune.base.collectives import COLLECTIVES, SIZE_BLIND, intercepted, mpi_name
from colltune.base.files import check_writable, read_text
from colltune.base.errors import ColltuneError, did_you_mean
from colltune.base.specs import format_spec, inner_spec, split_inner, split_spec
from colltune.drivers.registry import inner_names

LIBRARY = "libcolltune-pmpi.so"
PROFILE_FORMAT = "colltune-profile 1"
# the profile's `source` of an intercepted collective's call that went to the library's
# own because the algorithms do not take it (native/pmpi/pmpi_call.c WHY_INTER, WHY_ARGS)
PASSTHROUGH = {"intercommunicator: the library's own": "intercommunicator",
               "argument the algorithms do not take: the library's own": "arguments"}


class InterposeError(ColltuneError):
    """A setting of the interposition library or a profile that cannot be used."""


def force_variable(coll: str) -> str:
    """`COLLTUNE_BCAST` for bcast: the variable that forces one algorithm."""
    if coll not in COLLECTIVES:
        raise InterposeError(f"unknown collective '{coll}'{did_you_mean(coll, COLLECTIVES)}; "
                             f"valid: {', '.join(COLLECTIVES)}")
    return f"COLLTUNE_{coll.upper()}"


# ------------------------------------------------------- what the library accepts
# The same checks, in the same order, as the C reader (native/lib/choice.c
# ct_choice_parse, native/pmpi/pmpi_rules.c) against the one table of algorithms
# (drivers.registry.algorithms(build, hidden=True), read from the native library), so
# that a file `colltune rules check` passes is one the interposition library uses.

_INT = re.compile(r"\s*([+-]?\d+)([kKmM]?)")


def spec_problem(coll: str, spec: str, algorithms, test_only: bool = False,
                 nested: bool = False) -> str | None:
    """Why the interposition library would refuse `spec` for `coll` (one line naming the
    closest valid name), or None. `algorithms`: registry entries, hidden ones included;
    test-only algorithms (a leading '_', hidden) are refused unless `test_only`. An inner
    algorithm's value `ALG:key=value+key=value` is checked as its own spec (`nested`: one
    level, no remap)."""
    mine = [a for a in algorithms if a.collective == coll]
    visible = [a.name for a in mine if not a.hidden]
    name, text = split_spec(spec)
    algo = next((a for a in mine if a.name == name), None)
    if algo is None:
        return (f"unknown {coll} algorithm '{name}'{did_you_mean(name, visible)}; valid: "
                f"{', '.join(visible)}")
    if algo.hidden and not test_only:
        return (f"{coll}/{name} is a test-only algorithm (leading '_'); valid: "
                f"{', '.join(visible)}")
    known = {p["name"]: p for p in algo.params}
    for item in filter(None, text.split(",")):  # the C parser skips empty items
        key, eq, val = item.partition("=")
        if not eq:
            return f"{coll}/{name}: parameter '{item}' has no value (use key=value)"
        p = known.get(key)
        if nested and key == "remap":
            return (f"{coll}/{name}: remap does not apply to an inner algorithm (the "
                    "dispatcher remaps the outer call only)")
        if p is None:
            return (f"{coll}/{name} has no parameter '{key}'{did_you_mean(key, list(known))}; "
                    f"valid: {', '.join(known) or '(none)'}")
        if p["kind"] == "algorithm":
            of = p.get("of", key)  # the inner algorithm's collective
            inner = inner_names(algorithms, of)
            iname, iparams = split_inner(val)
            if iname not in inner:
                return (f"{coll}/{name}: unknown {of} algorithm '{iname}'"
                        f"{did_you_mean(iname, inner)}; valid: {', '.join(inner)}")
            if iparams and nested:
                return (f"{coll}/{name}: {key}={val}: an inner algorithm's own inner "
                        f"algorithms take no parameters (name it alone: {key}={iname})")
            why = spec_problem(of, inner_spec(val), algorithms, nested=True)
            if why:
                return f"{coll}/{name}: {key}={val}: {why}"
        elif p["kind"] == "choice":
            if val not in p["values"]:
                return (f"{coll}/{name}: {key}='{val}' is invalid"
                        f"{did_you_mean(val, p['values'])}; valid: {', '.join(p['values'])}")
        elif key == "segsize" and val == "auto":  # segsize=auto: where it is the default
            if p.get("default") != "auto":
                return (f"{coll}/{name}: segsize=auto: this algorithm has no segment-size "
                        f"rule (its default is {p.get('default')}); valid "
                        f"{p['min']}..{p['max']}")
        else:
            m = _INT.fullmatch(val)
            if not m:
                return f"{coll}/{name}: {key}='{val}' is not an integer"
            v = int(m.group(1)) * {"": 1, "k": 1024, "m": 1 << 20}[m.group(2).lower()]
            if not p["min"] <= v <= p["max"]:
                auto = " or auto" if p.get("default") == "auto" else ""
                return (f"{coll}/{name}: {key}={v} is out of range: valid "
                        f"{p['min']}..{p['max']}{auto} ({p.get('help', '')})")
    return None


def rule_problem(rule: rules_mod.Rule, algorithms) -> str | None:
    """Why the interposition library would refuse one rule of a colltune rules file."""
    if rule.collective in SIZE_BLIND and (rule.size_min != 0 or rule.size_max is not None):
        return (f"{rule.collective} rules cannot depend on the size: a rank knows only its "
                "own counts, and every rank must choose alike (write SIZE_MIN 0 and "
                "SIZE_MAX -)")
    if ":" in rule.algorithm:
        return (f"algorithm '{rule.algorithm}' is an MPI library's own algorithm; this file "
                "must name colltune's algorithms or native")
    return spec_problem(rule.collective, format_spec(rule.algorithm, rule.params), algorithms)


def first_problem(text: str, source: str, algorithms) -> tuple[int, str] | None:
    """The first problem of a colltune rules file (target colltune) in line order, as
    (line, message): the one the interposition library names when it drops the file.
    None when the library uses every line. Without `algorithms` (None) only the file's
    form is checked."""
    try:
        rs = rules_mod.from_text(text, source)
        stop = None
    except rules_mod.RulesError as exc:
        msg, line = str(exc), 1
        if msg.startswith(f"{source}:"):
            num, _, tail = msg[len(source) + 1:].partition(":")
            if num.isdigit():
                line, msg = int(num), tail.strip()
        stop = (line, msg)
        try:  # the lines above the problem are read first
            rs = rules_mod.from_text("\n".join(text.splitlines()[:line - 1]), source)
        except rules_mod.RulesError:
            return stop
    if rs.target != "colltune" or algorithms is None:
        return stop
    for r in rs.rules:
        why = rule_problem(r, algorithms)
        if why:
            return (r.line, why)
    return stop


def library(build) -> Path:
    """The interposition library of a native build."""
    lib = build.dir / LIBRARY
    if not lib.exists():
        raise InterposeError(f"{LIBRARY} is missing from the native build in {build.dir}; "
                             "run colltune build")
    return lib


def settings(rules: str | Path | None = None, force: dict[str, str] | None = None,
             verbose: bool = False, profile: str | Path | None = None,
             load_index: float | None = None, load_probe: int | None = None,
             algorithms=None) -> dict[str, str]:
    """The COLLTUNE_* variables for these choices (LD_PRELOAD not included). Everything
    is checked here first, so that a mistake stops `colltune run` before the launch
    instead of a warning at run time: the rules file is read (RulesError naming
    FILE:LINE), the profile's folder must exist (the library creates none); with
    `algorithms` (the registry's table, hidden entries included) each rule and each
    forced spec is checked as the library checks it. Paths are made absolute (the ranks
    may start elsewhere)."""
    env: dict[str, str] = {}
    if rules is not None:
        path = Path(rules).resolve()
        rs = rules_mod.read(path)  # RulesError naming FILE:LINE
        if rs.target != "colltune":
            raise InterposeError(f"{path}: target '{rs.target}': its algorithms are the MPI "
                                 "library's; the interposition library runs colltune's "
                                 "(export this file with colltune rules export instead)")
        if algorithms is not None:
            bad = first_problem(read_text(path, InterposeError,
                                          "{path}: cannot read: {reason}")[1],
                                str(path), algorithms)
            if bad:
                raise rules_mod.RulesError(f"{path}:{bad[0]}: {bad[1]}")
        env["COLLTUNE_RULES"] = str(path)
    for coll, spec in (force or {}).items():
        try:
            var = force_variable(coll)
        except InterposeError as exc:
            raise InterposeError(f"--force {coll}={spec}: {exc}") from None
        if not spec:
            raise InterposeError(f"--force {coll}=: empty algorithm (e.g. {coll}=binomial)")
        if algorithms is not None:
            why = spec_problem(coll, spec, algorithms)
            if why:
                raise InterposeError(f"--force {coll}={spec}: {why}")
        env[var] = spec
    if verbose:
        env["COLLTUNE_VERBOSE"] = "1"
    if profile is not None:
        prof = Path(profile).expanduser().resolve()
        if not prof.parent.is_dir():
            raise InterposeError(f"--profile {profile}: the folder {prof.parent} does not exist "
                                 "(the library writes the profile at MPI_Finalize and creates "
                                 "no folders)")
        check_writable(prof, "profile")
        env["COLLTUNE_PROFILE"] = str(prof)
    if load_index is not None or load_probe is not None:
        if rules is None or not rules_mod.read(Path(rules).resolve()).load_classes:
            raise InterposeError("--load-index/--load-probe: only with a rules file that has "
                                 "load classes (# load-class: lines, docs/workload.md)")
        if load_index is not None:
            if not (load_index >= 0 and math.isfinite(load_index)):
                raise InterposeError(f"load index {load_index}: a number >= 0 (µs per probe "
                                     "iteration)")
            env["COLLTUNE_LOAD_INDEX"] = repr(float(load_index))
        if load_probe is not None:
            if load_probe < 0:
                raise InterposeError(f"load probe {load_probe}: iterations >= 0 (0: never)")
            env["COLLTUNE_LOAD_PROBE"] = str(int(load_probe))
    return env


def preload(build, base: dict[str, str] | None = None) -> dict[str, str]:
    """`LD_PRELOAD` with the interposition library in front of what `base` preloads."""
    lib = str(library(build))
    pre = (base if base is not None else os.environ).get("LD_PRELOAD")
    return {"LD_PRELOAD": f"{lib}:{pre}" if pre else lib}


def launcher_options(mpi_kind: str, names: list[str]) -> list[str]:
    """Launcher options that pass these variables to every rank on every node: Open MPI
    `-x NAME`, MPICH (hydra) `-genvlist a,b`; [] for another library (its launcher's own
    way, or the inherited environment on one node)."""
    if not names:
        return []
    if mpi_kind == "openmpi":
        return [opt for n in names for opt in ("-x", n)]
    if mpi_kind == "mpich":
        return ["-genvlist", ",".join(names)]
    return []


# --------------------------------------------------------------------------- profile


@dataclass(frozen=True)
class ProfileEntry:
    collective: str
    np: int
    size_min: int  # colltune size (bytes; per process for gather/allgather), bucket start
    size_max: int
    algorithm: str  # what ran
    spec: str  # what was asked for
    source: str  # COLLTUNE_<COLL>, FILE:LINE of the rule, or "no rule"
    calls: int
    ranks: int
    total_s: float
    mean_s: float
    max_rank_total_s: float
    # the distinct sizes the calls had (ascending, at most 8; a profile written before
    # the library recorded them: ()), and whether there were more
    sizes: tuple[int, ...] = ()
    sizes_capped: bool = False


@dataclass(frozen=True)
class ObservedEntry:
    """A collective entry point colltune does not run (pmpi_observe.c), per communicator
    size: calls, bytes and the time spent in MPI for it."""
    call: str  # MPI_Iallreduce, MPI_Gatherv_c, MPI_Bcast_init, ...
    collective: str  # its operation, lower case: allreduce, gatherv, neighbor_alltoall
    kind: str  # blocking, nonblocking, persistent
    large_count: bool
    np: int
    calls: int  # calls of the entry point (persistent: of MPI_<Coll>_init)
    starts: int  # operations started (persistent: MPI_Start)
    completions: int  # nonblocking, persistent: completed in a wait or test
    ranks: int
    bytes: float  # over the operations started (the larger of a process's send/receive)
    total_s: float  # in the entry point, MPI_Start and the waits and tests on it
    wait_s: float  # of which in MPI_Wait*/MPI_Test*
    span_s: float  # from each start to its completion, summed (overlaps computation)
    max_rank_total_s: float


@dataclass(frozen=True)
class Share:
    """One MPI entry point's part of the program's collective time (Profile.shares)."""
    call: str
    kind: str
    calls: int
    bytes: float | None  # observed calls; None for colltune's (their sizes: the entries)
    total_s: float
    of_collectives: float  # fraction of the time in collectives
    of_wall: float | None  # fraction of the wall time (None: not recorded)
    colltune: bool  # colltune can choose its algorithm


@dataclass(frozen=True)
class Profile:
    np_world: int
    entries: list[ProfileEntry]
    dropped: int = 0
    observed: list[ObservedEntry] = field(default_factory=list)
    wall_s: float | None = None  # MPI_Init to MPI_Finalize, mean over the ranks
    wall_max_s: float | None = None
    observed_dropped: int = 0
    untracked_requests: int = 0

    def collective_s(self) -> float:
        """Seconds in collectives (a rank's, averaged over the ranks), every entry point."""
        return (sum(e.total_s for e in self.entries) + sum(e.total_s for e in self.observed))

    def shares(self) -> list[Share]:
        """Every collective entry point the program called, largest time first, with its
        share of the collective time and of the wall time, and whether colltune can
        choose its algorithm (collectives.intercepted)."""
        acc: dict[str, list] = {}
        own = set()  # rows of calls the library took (PASSTHROUGH)
        for e in self.entries:
            call = mpi_name(e.collective)
            if e.source in PASSTHROUGH:
                call = f"{call} ({PASSTHROUGH[e.source]})"
                own.add(call)
            # colltune's size (the entries' buckets), not these bytes: none here
            a = acc.setdefault(call, ["blocking", 0, None, 0.0])
            a[1] += e.calls
            a[3] += e.total_s
        for o in self.observed:
            a = acc.setdefault(o.call, [o.kind, 0, 0.0, 0.0])
            a[1] += o.starts
            a[2] += o.bytes
            a[3] += o.total_s
        coll = self.collective_s()
        rows = [Share(call, kind, calls, nbytes, t, t / coll if coll > 0 else 0.0,
                      t / self.wall_s if self.wall_s else None,
                      call not in own and intercepted(call) is not None)
                for call, (kind, calls, nbytes, t) in acc.items()]
        return sorted(rows, key=lambda r: (-r.total_s, r.call))

    def sizes(self, collective: str) -> dict[int, int]:
        """Calls per size bucket (bucket start) of one collective, over every
        communicator: the sizes an application really uses."""
        out: dict[int, int] = {}
        for e in self.entries:
            if e.collective == collective:
                out[e.size_min] = out.get(e.size_min, 0) + e.calls
        return dict(sorted(out.items()))


    def calls(self) -> list[tuple[str, int, int, int]]:
        """(collective, communicator size, size, calls) per entry, the size being the
        geometric centre of the entry's bucket (its start for bucket 0): what
        `colltune tune --profile` weighs its quality figures with."""
        return [(e.collective, e.np,
                 math.isqrt(e.size_min * (e.size_max + 1)) if e.size_min > 0 else e.size_min,
                 e.calls) for e in self.entries]


_FIELDS = {"collective": str, "np": int, "size_min": int, "size_max": int, "algorithm": str,
           "spec": str, "source": str, "calls": int, "ranks": int, "total_s": (int, float),
           "mean_s": (int, float), "max_rank_total_s": (int, float)}


_OBSERVED = {"call": str, "collective": str, "kind": str, "large_count": bool, "np": int,
             "calls": int, "starts": int, "completions": int, "ranks": int,
             "bytes": (int, float), "total_s": (int, float), "wait_s": (int, float),
             "span_s": (int, float), "max_rank_total_s": (int, float)}


def _checked(e, i: int, fields: dict, source: str, what: str) -> dict:
    if not isinstance(e, dict):
        raise InterposeError(f"{source}: {what} {i} is not an object")
    for k, t in fields.items():
        v = e.get(k)
        if not isinstance(v, t) or (isinstance(v, bool) and t is not bool):
            kind = {str: "a string", bool: "true or false"}.get(t, "a number")
            raise InterposeError(f"{source}: {what} {i}: \"{k}\" is missing or not {kind}")
    return {k: float(e[k]) if fields[k] == (int, float) else e[k] for k in fields}


def parse_profile(text: str, source: str = "<profile>") -> Profile:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InterposeError(f"{source}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, dict) or doc.get("format") != PROFILE_FORMAT:
        raise InterposeError(f"{source}: not a colltune profile (no \"format\": "
                             f"\"{PROFILE_FORMAT}\")")
    entries = []
    raw = doc.get("entries")
    if not isinstance(raw, list):
        raise InterposeError(f"{source}: \"entries\" is not a list")
    for i, e in enumerate(raw):
        entry = _checked(e, i, _FIELDS, source, "entry")
        if entry["collective"] not in COLLECTIVES:
            raise InterposeError(f"{source}: entry {i}: unknown collective '{e['collective']}'")
        sizes = e.get("sizes", [])
        if not isinstance(sizes, list) or not all(
                isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in sizes):
            raise InterposeError(f"{source}: entry {i}: \"sizes\" is not a list of sizes")
        entries.append(ProfileEntry(**entry, sizes=tuple(sorted(set(sizes))),
                                    sizes_capped=bool(e.get("sizes_capped", False))))
    entries.sort(key=lambda e: (COLLECTIVES.index(e.collective), e.np, e.size_min, e.algorithm))
    # written by a library that profiles the other collectives too (absent: an older one)
    raw = doc.get("observed", [])
    if not isinstance(raw, list):
        raise InterposeError(f"{source}: \"observed\" is not a list")
    observed = [ObservedEntry(**_checked(e, i, _OBSERVED, source, "observed entry"))
                for i, e in enumerate(raw)]
    wall = {k: doc.get(k) for k in ("wall_s", "wall_max_s")}
    for k, v in wall.items():
        if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool)):
            raise InterposeError(f"{source}: \"{k}\" is not a number")
    return Profile(int(doc.get("np_world", 0)), entries, int(doc.get("dropped", 0)), observed,
                   None if wall["wall_s"] is None else float(wall["wall_s"]),
                   None if wall["wall_max_s"] is None else float(wall["wall_max_s"]),
                   int(doc.get("observed_dropped", 0)), int(doc.get("untracked_requests", 0)))


def read_profile(path: str | Path) -> Profile:
    p, text = read_text(path, InterposeError, "{path}: cannot read: {reason}")
    return parse_profile(text, str(p))
