"""The algorithm table, as the native library describes itself (one source of truth)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from colltune.drivers import run
from colltune.mpi.backend import backend_for
from colltune.mpi.build import Build
from colltune.base.errors import ColltuneError, did_you_mean
from colltune.base.specs import SpecError, inner_spec, param_pairs, split_inner, split_spec
from colltune.mpi import launch


@dataclass(frozen=True)
class Algorithm:
    name: str
    collective: str
    params: tuple[dict, ...]
    constraints: tuple[str, ...]
    fallback: str | None
    cost: str | None
    summary: str
    ompi_name: str | None
    hidden: bool

    def param_text(self) -> str:
        out = []
        for p in self.params:
            if p["kind"] == "algorithm":
                of = p.get("of", p["name"])  # the inner algorithm's collective
                out.append(f"{p['name']}={p['default']} ({self.collective} inner {p['name']}"
                           + (f", a {of} algorithm" if of != p["name"] else "")
                           + f"; ALG or ALG:k=v+k=v)")
            elif p["kind"] == "choice":
                auto = f"; auto = {p['auto']}" if p.get("auto") else ""
                out.append(f"{p['name']}={p['default']} ({'|'.join(p['values'])}{auto})")
            elif p["default"] == "auto":  # segsize=auto: chosen per call (analysis.segsize)
                out.append(f"{p['name']}=auto (per call, {p.get('auto_rule')} depth) "
                           f"[{p['min']}..{p['max']}]")
            else:
                out.append(f"{p['name']}={p['default']} [{p['min']}..{p['max']}]")
        return ", ".join(out)


@lru_cache(maxsize=8)
def _load(program: str, hidden: bool, prefix: tuple[str, ...] = ()) -> tuple[Algorithm, ...]:
    cmd = [*prefix, program, "--list-json"] + (["--hidden"] if hidden else [])
    res = run.run_argv(cmd, name="colltune-verify --list-json", timeout=120)
    data = run.parse_document(res.stdout, name="colltune-verify --list-json")
    return tuple(
        Algorithm(a["name"], a["collective"], tuple(a["params"]), tuple(a["constraints"]),
                  a["fallback"], a["cost"], a["summary"], a["ompi_name"], a["hidden"])
        for a in data["algorithms"]
    )


def algorithms(build: Build, hidden: bool = False) -> tuple[Algorithm, ...]:
    program = str(build.program("colltune-verify"))
    if backend_for(build).programs_via_launcher:
        # SMPI's programs are shared objects that only smpirun can start (one simulated
        # process; the default platform)

        with launch.session(None):
            ln = launch.prepare(build.mpi, 1, [])
        return _load(program, hidden, tuple(ln.argv))
    return _load(program, hidden)


def names(build: Build, collective: str) -> list[str]:
    return [a.name for a in algorithms(build) if a.collective == collective]


def inner_names(table, of: str) -> list[str]:
    """The algorithms an inner-algorithm parameter whose collective is `of` may name
    (`table`: the registry's entries): visible ones, never hierarchical (choice.c)."""
    return [a.name for a in table if a.collective == of and not a.hidden
            and not a.name.startswith("hier")]


def check_specs(build: Build, collective: str, specs: list[str], what: str = "--algo") -> None:
    """Names and parameter names of colltune algorithm specs, before anything runs
    (values and ranges: the native parser). Raises ColltuneError naming the closest
    valid name and every valid one."""
    table = algorithms(build, hidden=True)
    reg = {a.name: a for a in table if a.collective == collective}
    visible = names(build, collective)
    for spec in specs:
        check_spec(what, spec, collective, reg, valid=visible, algorithms=table)


def check_spec(where: str, spec: str, collective: str, table: dict[str, Algorithm | None], *,
               valid: list[str] | None = None, also: str = "",
               error: type[ColltuneError] = ColltuneError, algorithms=None,
               nested: bool = False) -> None:
    """Name and parameter names of one colltune algorithm spec against `table` (name ->
    Algorithm, or None for one without parameters). The message starts with `where`, lists
    `valid` (default: the table's names) and then `also`; raised as `error`. With
    `algorithms` (the registry's entries) the values of inner-algorithm parameters too,
    `ALG` or `ALG:key=value+key=value` (one level: `nested` is the inner spec's check)."""
    name, params = split_spec(spec)
    if name not in table:
        valid = list(table) if valid is None else valid
        raise error(f"{where}: unknown {collective} algorithm '{name}'"
                    f"{did_you_mean(name, valid)}; valid: {', '.join(valid)}{also}")
    algo = table[name]
    known = [p["name"] for p in algo.params] if algo is not None else []
    try:
        for k, v in param_pairs(params, f"{where}: '{spec}'"):
            if nested and k == "remap":
                raise error(f"{where}: {collective}/{name}: remap does not apply to an inner "
                            "algorithm (the dispatcher remaps the outer call only)")
            if k not in known:
                raise error(f"{where}: '{spec}': {collective}/{name} has no parameter "
                            f"'{k}'{did_you_mean(k, known)}; valid: "
                            f"{', '.join(known) or 'none'}")
            p = next(p for p in algo.params if p["name"] == k)
            if algorithms is not None and p["kind"] == "algorithm":
                _check_inner(f"{where}: '{spec}': {collective}/{name}: {k}={v}", v,
                             p.get("of", k), algorithms, error, nested)
    except SpecError as exc:
        raise error(str(exc)) from None


def _check_inner(where: str, value: str, of: str, algorithms, error, nested: bool) -> None:
    """The value of one inner-algorithm parameter (check_spec)."""
    iname, iparams = split_inner(value)
    if iparams and nested:
        raise error(f"{where}: an inner algorithm's own inner algorithms take no parameters "
                    "(name it alone)")
    valid = inner_names(algorithms, of)
    table = {a.name: a for a in algorithms if a.collective == of and a.name in valid}
    check_spec(where, inner_spec(value), of, table, valid=valid, error=error,
               algorithms=algorithms, nested=True)
