"""Rules files in the three formats colltune reads and writes, and the proof that a
file steers the library.

- colltune's own rules file (rules.py), read by the interposition library;
- Open MPI's coll/tuned dynamic rules file (export_openmpi.py);
- MPICH's collective-selection JSON file (export_mpich.py).

`detect` tells them apart, `table` turns any of them into readable rows, `check`
lists problems by line, `export` converts a colltune rule set and writes the file
(whole or not at all), and `verify` runs the library under a file and reports, per
collective and size, the algorithm that really ran next to the one the file names:

- Open MPI: libcolltune-ompi-algos.so, preloaded, sees every coll/base algorithm
  function coll/tuned calls (and its fan-out and segment size);
- MPICH: libcolltune-traffic.so, preloaded, counts the socket traffic of each call
  per rank (MPIR_CVAR_NOLOCAL=1, TCP only); the run under the file is compared with
  runs forced to each of MPICH's algorithms (MPIR_CVAR_<COLL>_INTRA_ALGORITHM): the
  algorithms whose traffic is identical are what ran.
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from colltune.drivers.run import run_program
from colltune.rules import mpich as em
from colltune.rules import openmpi as eo
from colltune.mpi import libalgos
from colltune.rules import interpose as ipose
from colltune.rules import ruleset as rules_mod
from colltune.base.collectives import COLLECTIVES, per_process
from colltune.base.files import read_text as read_input, write_atomic
from colltune.base.specs import format_lib_spec, is_lib_spec
from colltune.rules.ruleset import RulesError, RuleSet

FORMATS = ("colltune", "openmpi", "mpich")
FORMAT_NAMES = {"colltune": "colltune rules file", "openmpi": "Open MPI coll/tuned rules file",
                "mpich": "MPICH collective-selection JSON file"}


def read_text(path: str | Path) -> str:
    return read_input(path, RulesError, "{path}: cannot read: {reason}")[1]


def detect(text: str, source: str = "<file>") -> str:
    """Which format `text` is in: colltune, openmpi or mpich."""
    if text.startswith(f"# {rules_mod.FORMAT_TAG}"):
        return "colltune"
    if em.looks_like(text):
        return "mpich"
    if eo.looks_like(text):
        return "openmpi"
    raise RulesError(f"{source}: not a rules file colltune knows (a colltune rules file starts "
                     f"with '# {rules_mod.FORMAT_TAG}', an Open MPI one with numbers or "
                     f"rule-file-version-2, an MPICH one is a JSON object of \"collective=\" keys)")


# ------------------------------------------------------------------------------ show


def _b(lo: int, hi: int | None) -> str:
    return f"{lo}-" if hi is None else (f"{lo}" if lo == hi else f"{lo}-{hi}")


def table(text: str, kind: str, mpi=None, every: bool = False
          ) -> tuple[list[str], list[list[str]], list[str]]:
    """(headers, rows, notes) for `colltune rules show`; an MPICH file's other collectives
    (beyond colltune's five) only with `every`."""
    notes: list[str] = []
    if kind == "colltune":
        rs = rules_mod.from_text(text)
        notes.append(f"target: {rs.target}" + "".join(f"; {k}: {v}" for k, v in rs.meta.items()))
        def unit(c: str) -> str:
            return ("B/destination" if c in ("alltoall", "alltoallv")
                    else "B/process" if per_process(c) else "B")

        loaded = any(r.load is not None for r in rs.rules)
        noded = any(r.ppn is not None for r in rs.rules)
        rows = [[r.collective, _b(r.np_min, r.np_max),
                 _b(r.size_min, r.size_max) + f" {unit(r.collective)}", r.spec, r.mapping or ""]
                + ([r.load or "any"] if loaded else [])
                + ([("any" if r.ppn is None else _b(r.ppn[0], r.ppn[1]))] if noded else [])
                for r in rs.rules]
        return (["collective", "processes", "size", "algorithm", "mapping"]
                + (["load"] if loaded else []) + (["per node"] if noded else [])), rows, notes
    if kind == "openmpi":
        installed = None
        if mpi is not None and mpi.kind == "openmpi":
            installed = eo.Installed.of(mpi)
        else:
            notes.append("algorithm names need the installed Open MPI (--mpi openmpi); numbers "
                         "are shown")
        pf = eo.parse(text)
        notes.append(f"rule-file-version-{pf.version}; sizes are bytes of the whole message "
                     f"(gather/allgather/alltoall/scatter: all processes together; "
                     f"alltoallv/barrier: Open MPI counts every call as 0)")
        rows = [[str(r["line"]), r["collective"], _b(r["np_min"], r["np_max"]),
                 _b(r["bytes_min"], r["bytes_max"]), r["algorithm"], str(r["faninout"]),
                 str(r["segsize"])] + ([str(r["maxreq"])] if pf.version == 2 else [])
                for r in eo.rows(pf, installed)]
        return (["line", "collective", "processes", "bytes", "algorithm", "faninout", "segsize"]
                + (["maxreq"] if pf.version == 2 else [])), rows, notes
    leaves = em.rows(text)
    shown = [r for r in leaves if every or r["collective"] in COLLECTIVES]
    if len(shown) < len(leaves):
        others = sorted({r["collective"] for r in leaves} - set(COLLECTIVES))
        notes.append(f"{len(others)} other collectives ({', '.join(others[:4])}, ...) not shown: "
                     f"--all shows them")
    rows = [[str(r["line"]), r["collective"], r["conditions"].replace("comm_type=intra ", ""),
             r["algorithm"]] for r in shown]
    return ["line", "collective", "conditions", "algorithm"], rows, notes


# ----------------------------------------------------------------------------- check


@dataclass
class CheckResult:
    kind: str
    problems: list[tuple[int, str]]
    warnings: list[str] = field(default_factory=list)


def check(text: str, kind: str, mpi=None, source: str = "<file>",
          algorithms=None) -> CheckResult:
    """Problems by line; `mpi` (the installed library of the file's kind) adds the checks
    of algorithm numbers/names against it. A colltune rules file of target colltune is
    checked against `algorithms` (the registry's table, hidden entries included) as the
    interposition library checks it, and its first problem is the one reported (the
    library drops the whole file at it)."""
    warnings: list[str] = []
    if kind == "colltune":
        try:
            rs = rules_mod.from_text(text, source)
        except RulesError:
            rs = None
        if rs is None or (rs.target == "colltune" and algorithms is not None):
            first = ipose.first_problem(text, source, algorithms)
            return CheckResult(kind, [first] if first else [])
        problems = []
        for r in rs.rules:
            line = r.line
            if r.algorithm == "native":
                continue
            if is_lib_spec(r.algorithm):
                lib = r.algorithm.split(":", 1)[0]
                if rs.target != libalgos.LIBRARIES[lib]:
                    problems.append((line, f"{r.collective} {r.spec}: a rule set for target "
                                           f"{rs.target} cannot name {r.algorithm}"))
                    continue
                try:
                    libalgos.resolve(libalgos.LIBRARIES[lib], r.collective, r.spec)
                except ValueError as exc:
                    problems.append((line, str(exc)))
            elif rs.target != "colltune":
                want = "ompi:NAME" if rs.target == "openmpi" else "mpich:NAME"
                problems.append((line, f"{r.collective} {r.spec}: target {rs.target} takes "
                                       f"{want} or native"))
        return CheckResult(kind, problems)
    if kind == "openmpi":
        installed = None
        if mpi is not None and mpi.kind == "openmpi":
            installed = eo.Installed.of(mpi)
        else:
            warnings.append("no Open MPI given (--mpi openmpi): algorithm numbers are not "
                            "checked against a library")
        return CheckResult(kind, eo.check(text, installed), warnings)
    installed = None
    if mpi is not None and mpi.kind == "mpich":
        installed = em.Installed.of(mpi)
    else:
        warnings.append("no MPICH given (--mpi mpich): algorithm names and completeness are "
                        "not checked against a library")
    return CheckResult(kind, em.check(text, installed), warnings)


def written_for(text: str, kind: str) -> str | None:
    """The library version a file written by colltune names in its header, if any."""
    import re

    if kind == "openmpi":
        m = re.search(r"written by colltune for Open MPI (\S+)", text)
        return m.group(1) if m else None
    return None


# ---------------------------------------------------------------------------- export


# the collectives whose library rules files colltune writes (and `rules verify` proves),
# per library: those with a row in its exporter's table (openmpi.COLLS,
# mpich.SIZE_TESTS); EXPORTED: those both libraries take
EXPORTED_TO = {"openmpi": tuple(c for c in COLLECTIVES if c in eo.COLLS),
               "mpich": tuple(c for c in COLLECTIVES if c in em.SIZE_TESTS)}
EXPORTED = tuple(c for c in EXPORTED_TO["openmpi"] if c in EXPORTED_TO["mpich"])
# collectives a library's rules cannot choose for at all, with the reason (MPICH has
# two for each, linear and nb, which send the same messages: rules verify could not
# tell which ran, so they are not exported yet)
NO_LIBRARY_RULES = {"openmpi": {
    "gatherv": "Open MPI 5.0's coll/tuned has no gatherv algorithms to choose between",
    "scatterv": "Open MPI 5.0's coll/tuned has no scatterv algorithms to choose between"}}


def export(ruleset: RuleSet, to: str, path: str | Path, mpi, fmt: str = "classic") -> list[str]:
    """Write `ruleset` as the file library `to` (openmpi | mpich) reads, at `path`
    (whole or not at all), checked against the installed library `mpi`; for Open MPI
    `fmt` "json" writes Open MPI 6's JSON rules instead of the classic file. Returns
    the lines that use it (mpirun options / environment), then notes starting with '#'.
    Raises RulesError, and writes nothing, for a file the library would ignore."""
    path = Path(path)
    if to not in ("openmpi", "mpich"):
        raise RulesError(f"--to {to}: valid: openmpi, mpich")
    if fmt not in ("classic", "json") or (fmt == "json" and to != "openmpi"):
        raise RulesError(f"--format {fmt}: Open MPI's files are classic (default) or json "
                         "(Open MPI 6); MPICH's is JSON already")
    if any(r.load is not None for r in ruleset.rules):
        names = ", ".join(c.name for c in ruleset.load_classes)
        raise RulesError(f"the rules have load classes ({names}), which {to} has no way to "
                         "measure or choose between: export the rules of one class (Python: "
                         "RuleSet.for_load(NAME)), or use the interposition library, which "
                         "measures the load (docs/workload.md)")
    if to == "openmpi" and fmt == "classic" and any(r.ppn is not None for r in ruleset.rules):
        raise RulesError("the rules are keyed by processes per node (ppn=), which Open MPI's "
                         "classic rules file cannot express (Open MPI 6's JSON rules can: "
                         "--format json); the interposition library applies them (colltune "
                         "run --rules FILE)")
    later = [c for c in ruleset.collectives() if c not in EXPORTED_TO[to]]
    if later:
        refused = [c for c in COLLECTIVES if c not in EXPORTED_TO[to]]
        none = [c for c in later if c in NO_LIBRARY_RULES.get(to, ())]
        why = (f" ({NO_LIBRARY_RULES[to][none[0]]})" if len(none) == 1 else
               "".join(f"; {c}: {NO_LIBRARY_RULES[to][c]}" for c in none))
        raise RulesError(f"{', '.join(later)} rules cannot be exported to {to}"
                         f"{'' if none else ' yet'}{why} (not exported: {', '.join(refused)}); "
                         f"the interposition library applies them (colltune run --rules FILE)")
    if mpi is None or mpi.kind != to:
        have = getattr(mpi, "name", "no MPI library")
        raise RulesError(f"exporting for {FORMAT_NAMES[to].split(' ')[0] if to == 'mpich' else 'Open MPI'} "
                         f"needs that library installed to read its algorithm "
                         f"{'numbers' if to == 'openmpi' else 'names'} (found {have}); "
                         f"colltune build --mpi {to} installs it")
    if to == "openmpi":
        if fmt == "json":
            ex = eo.to_json(ruleset, eo.Installed.of(mpi))
            write_atomic(path, ex.text)
            return ([f"mpirun --mca coll_tuned_use_dynamic_rules 1 "
                     f"--mca coll_tuned_dynamic_rules_filename {path.resolve()} ...  "
                     "(Open MPI 6; 5.0.x reads the classic file only)"]
                    + [f"# mca: {k} {v}" for k, v in ex.mca.items()]
                    + [f"# note: {n}" for n in ex.notes])
        ex = eo.to_text(ruleset, eo.Installed.of(mpi))
        write_atomic(path, ex.text)
        return eo.usage(str(path.resolve()), ex.mca) + [f"# note: {n}" for n in ex.notes]
    exm = em.to_json(ruleset, em.Installed.of(mpi))
    write_atomic(path, exm.text)
    return em.usage(str(path.resolve())) + [f"# note: {n}" for n in exm.notes]


# ---------------------------------------------------------------------------- verify


@dataclass
class RanRow:
    collective: str
    np: int
    size: int  # colltune's size
    named: str  # what the file names
    ran: str  # what ran (depth 0), or the matching algorithms (MPICH)
    inside: str = ""  # algorithms run inside it (Open MPI) / other matches (MPICH)
    ok: bool | None = None  # None: the file leaves the choice to the library
    note: str = ""
    unique: bool = True  # MPICH: no other algorithm sends the same traffic


def _rep_size(coll: str, nbytes: int, np: int, times_np: bool) -> int:
    """A colltune size whose byte count (colltune's size x np where `times_np`) is at
    least nbytes (the start of a rule); barrier's is 0, its only size."""
    if coll == "barrier":
        return 0
    s = math.ceil(nbytes / np) if times_np else nbytes
    s = max(s, 4)
    if coll in ("reduce", "allreduce", "reduce_scatter_block", "reduce_scatter"):
        s = (s + 3) // 4 * 4  # colltune-which reduces ints
    return s


def _observe(build, np: int, coll: str, sizes: list[int], env: dict[str, str], lib: str,
             iterations: int, timeout: float) -> dict[str, list[str]]:
    """Run colltune-which under `env` with the observer `lib` preloaded; lines of the
    observer's files per label."""
    program = build.program("colltune-which")
    shim = build.dir / lib
    if not program.exists() or not shim.exists():
        raise RulesError(f"{program.name} or {lib} is missing from the native build in "
                         f"{build.dir}; run colltune build")
    with tempfile.TemporaryDirectory(prefix="colltune-observe-") as d:
        e = dict(env)
        pre = os.environ.get("LD_PRELOAD")
        e["LD_PRELOAD"] = f"{shim}:{pre}" if pre else str(shim)
        e["COLLTUNE_OBSERVE_DIR"] = d
        run_program(build, str(program), np, [coll, ",".join(map(str, sizes)), str(iterations)],
                    error=RulesError, timeout=timeout, extra_env=e, strict=False,
                    timeout_message=f"{coll} at np={np} did not finish in {timeout:.0f} s")
        out: dict[str, list[str]] = {}
        for f in sorted(Path(d).glob("*.txt")):
            for line in f.read_text().splitlines():
                label, _, rest = line.partition("\t")
                out.setdefault(label, []).append(rest)
        return out


def _kv(rest: str) -> dict[str, str]:
    return dict(p.split("=", 1) for p in rest.split() if "=" in p)


def colltune_file_hint(path: str | Path, text: str) -> str:
    """What to do with colltune's own rules file given where a library's file is wanted:
    an export command that works for a file of target openmpi/mpich (an output name next
    to it that does not exist yet), else what the file is for. Never a command that
    fails."""
    import shlex

    try:
        target = rules_mod.from_text(text, str(path)).target
    except RulesError as exc:
        return f"and it does not read as one: {exc}"
    if target in ("openmpi", "mpich"):
        p = Path(path)
        ext = ".conf" if target == "openmpi" else ".json"
        out = p.with_suffix(ext) if p.suffix != ext else p.with_name(p.name + ext)
        n = 1
        while out.exists():
            out = p.with_name(f"{p.stem}-{n}{ext}")
            n += 1
        return (f"export it first: colltune rules export {shlex.quote(str(path))} --to "
                f"{target} -o {shlex.quote(str(out))}")
    return ("its target is colltune: colltune's interposition library reads it (colltune run "
            "--rules, docs/interposition.md), no MPI library does; a file for Open MPI or "
            "MPICH comes from colltune tune with --target openmpi or --target mpich")


def which_ran(path: str | Path, build, np: int = 3, sizes: list[int] | None = None,
              collectives: list[str] | None = None, iterations: int = 2,
              timeout: float = 120) -> tuple[str, list[RanRow], list[str]]:
    """Run the library of `build` under the rules file at `path`; (kind, rows, notes)."""
    path = Path(path).resolve()
    text = read_text(path)
    kind = detect(text, str(path))
    mpi = build.mpi
    if kind == "colltune":
        raise RulesError(f"{path} is colltune's own rules file, which the MPI libraries do not "
                         f"read; {colltune_file_hint(path, text)}")
    if kind != mpi.kind:
        raise RulesError(f"{path} is an {FORMAT_NAMES[kind]}; verifying it needs "
                         f"{'Open MPI' if kind == 'openmpi' else 'MPICH'} "
                         f"(--mpi {kind}), not {mpi.name}")
    res = check(text, kind, mpi, str(path))
    if res.problems:
        raise RulesError(f"{path} has problems (colltune rules check {path}): "
                         + "; ".join(f"line {ln}: {p}" for ln, p in res.problems[:5]))
    if collectives:
        bad = [c for c in collectives if c not in COLLECTIVES]
        if bad:
            raise RulesError(f"unknown collective {bad[0]}; valid: {', '.join(COLLECTIVES)}")
        later = [c for c in collectives if c not in EXPORTED_TO[kind]]
        if later:
            raise RulesError(f"{', '.join(later)}: not verified yet (verified: "
                             f"{', '.join(EXPORTED_TO[kind])})")
    if np < 2:
        raise RulesError("--np must be at least 2")
    if kind == "openmpi":
        return kind, *_which_ran_openmpi(text, path, build, np, sizes, collectives, iterations,
                                      timeout)
    return kind, *_which_ran_mpich(text, path, build, np, sizes, collectives, iterations, timeout)


def _which_ran_openmpi(text, path, build, np, sizes, collectives, iterations, timeout):
    installed = eo.Installed.of(build.mpi)
    pf = eo.parse(text)
    notes: list[str] = []
    mca = eo.mca_lines(text)
    if mca:
        notes.append("with the MCA parameters the file says it needs: "
                     + " ".join(f"--mca {k} {v}" for k, v in mca.items()))
    rows: list[RanRow] = []
    for ce in pf.colls:
        coll = eo.ID_COLLS.get(ce.coll_id)
        if coll is None or (collectives and coll not in collectives) or not ce.comms:
            continue
        entry = ce.comms[0]
        for c in ce.comms:
            if c.comm_size <= np:
                entry = c
        want = sizes or sorted({_rep_size(coll, mr.msgbytes, np, eo.measure(coll) == eo.TIMES_NP)
                                for mr in entry.rules})

        def rule_for(size):
            nbytes = eo.msg_bytes(coll, size, np)
            chosen = entry.rules[0]
            for mr in entry.rules:
                if mr.msgbytes <= nbytes:
                    chosen = mr
            return chosen

        env = {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
               "OMPI_MCA_coll_tuned_dynamic_rules_filename": str(path)}
        env.update({f"OMPI_MCA_{k}": v for k, v in mca.items()})
        seen = _observe(build, np, coll, want, env, "libcolltune-ompi-algos.so", iterations,
                        timeout)
        for size in want:
            mr = rule_for(size)
            recs = [_kv(r) for r in seen.get(f"{coll} {size}", [])]
            top = [r for r in recs if r.get("depth") == "0" and r.get("coll") == coll]
            ran = sorted({r["algo"] for r in top})
            inner = sorted({f"{r['coll']} {r['algo']}" for r in recs if r.get("depth") != "0"})
            params = sorted({(r["faninout"], r["segsize"], r.get("radix", "-1")) for r in top})
            maxreqs = sorted({r.get("maxreq", "-1") for r in top})
            ran_s = ", ".join(ran) or "nothing observed"
            if params and ran:
                fan, seg, radix = params[0]
                extra = []
                if seg not in ("-1", "0"):
                    extra.append(f"segsize={seg}")
                if fan not in ("-1",):
                    extra.append(f"fanout={fan}")
                if radix not in ("-1",):
                    extra.append(f"radix={radix}")
                if maxreqs[0] not in ("-1",) and (maxreqs[0] != "0" or mr.maxreq):
                    extra.append(f"max_requests={maxreqs[0]}")
                if extra:
                    ran_s += " (" + ",".join(extra) + ")"
            if mr.alg == 0:
                named, ok, note = "fixed rules", None, "the file leaves this range to Open MPI"
            else:
                name = installed.name(coll, mr.alg) or f"algorithm {mr.alg}"
                said = ([f"segsize={mr.segsize}"] if mr.segsize else []) + (
                    [f"fanout={mr.faninout}"] if name == "chain" else []) + (
                    [f"radix={mca[eo.RADIX_MCA]}"] if name == "knomial" and eo.RADIX_MCA in mca
                    else []) + ([f"max_requests={mr.maxreq}"] if mr.maxreq else [])
                named = name + (f" ({','.join(said)})" if said else "")
                ok = ran == [name]
                note = ""
                if ok and mr.segsize and params and params[0][1] not in ("-1", str(mr.segsize)):
                    ok, note = False, f"segment size {params[0][1]}, the file says {mr.segsize}"
                if ok and name == "chain" and params and params[0][0] != str(mr.faninout):
                    ok, note = False, f"fan-out {params[0][0]}, the file says {mr.faninout}"
                if (ok and name == "knomial" and eo.RADIX_MCA in mca and params
                        and params[0][2] != mca[eo.RADIX_MCA]):
                    ok, note = False, f"radix {params[0][2]}, the file says {mca[eo.RADIX_MCA]}"
                if ok and mr.maxreq is not None and maxreqs and maxreqs[0] != "-1" \
                        and maxreqs[0] != str(mr.maxreq):
                    ok, note = False, f"max_requests {maxreqs[0]}, the file says {mr.maxreq}"
                if not ran:
                    note = "no coll/base algorithm was called (another coll component ran?)"
            rows.append(RanRow(coll, np, size, named, ran_s, ", ".join(inner), ok, note))
    if not rows:
        notes.append(f"the file has no rules for {', '.join(EXPORTED_TO['openmpi'])}")
    return rows, notes


# MPICH: everything through TCP sockets, every rank its own node
MPICH_OBSERVE_ENV = {"MPIR_CVAR_NOLOCAL": "1", "UCX_TLS": "tcp,self", "FI_PROVIDER": "tcp",
                     "MPIR_CVAR_DEVICE_COLLECTIVES": "none"}


def _fingerprints(seen: dict[str, list[str]]) -> dict[str, tuple]:
    out = {}
    for label, lines in seen.items():
        per = sorted((int(_kv(l).get("rank", -1)), _kv(l).get("bytes"), _kv(l).get("peers"),
                      _kv(l).get("sends")) for l in lines)
        out[label] = tuple(per)
    return out


def _mpich_sizes(text: str, coll: str, np: int) -> list[int] | None:
    """Representative sizes of the size tests the file applies at np (colltune's
    layout: comm_size tests, then avg/total_msg_size tests); None if not that layout."""
    import json
    import re

    node = json.loads(text).get(f"collective={coll}", {}).get("comm_type=intra")
    if isinstance(node, dict) and em.INPLACE_NO in node:  # colltune-which is not in place
        node = node[em.INPLACE_NO]
    if not isinstance(node, dict):
        return None
    block = None
    for k, v in node.items():
        m = re.fullmatch(r"comm_size<=(\d+)", k)
        if (m and np <= int(m.group(1))) or k == "comm_size=any":
            block = v
            break
    if not isinstance(block, dict):
        return None
    if em.SIZE_TESTS[coll][0] is None:  # barrier: no size test, size 0
        return [_rep_size(coll, 0, np, False)]
    out, lo = [], 0
    for k in block:
        m = re.fullmatch(r"(avg_msg_size|total_msg_size)(<=|=any)(\d*)", k)
        if not m:
            return None
        out.append(_rep_size(coll, lo, np, em.scales_with_np(coll)))
        if m.group(3):
            lo = int(m.group(3)) + 1
    return sorted(set(out))


def _mpich_nodes(build, np: int, timeout: float) -> tuple[int, int]:
    """(nodes, processes per node) MPICH sees for a launch of np processes here, with
    its own notion of a node (no MPIR_CVAR_NOLOCAL): colltune-pingpong's placement line."""
    env = {k: v for k, v in MPICH_OBSERVE_ENV.items() if k != "MPIR_CVAR_NOLOCAL"}
    res = run_program(build, "colltune-pingpong", np, ["--sizes", "0", "--reps", "1",
                                                       "--iterations", "1", "--warmup", "0"],
                      error=RulesError, timeout=timeout, extra_env=env)
    seen = next((r for r in res.records if r.get("kind") == "placement"), {})
    return int(seen.get("nodes") or 1), int(seen.get("ppn") or np)


def _which_ran_mpich(text, path, build, np, sizes, collectives, iterations, timeout):
    installed = em.Installed.of(build.mpi)
    import json

    tree = json.loads(text)
    observe_env, ppn = MPICH_OBSERVE_ENV, 1
    nodes, seen_ppn = _mpich_nodes(build, np, timeout)
    if nodes > 1:
        # several nodes (a hostfile, `colltune cluster`): the traffic between nodes goes
        # through sockets anyway; MPICH keeps its nodes, so that ppn= rules apply as
        # they would (its comm_avg_ppn: processes / nodes)
        observe_env = {k: v for k, v in MPICH_OBSERVE_ENV.items() if k != "MPIR_CVAR_NOLOCAL"}
        ppn = np // nodes
        notes = [f"MPICH does not report which algorithm ran: each size's socket traffic per "
                 f"rank between the {nodes} nodes MPICH saw ({seen_ppn} processes on the "
                 f"fullest; TCP; traffic inside a node is not counted) under the file is "
                 f"compared with runs forced to each of MPICH's algorithms; 'ran' lists those "
                 f"with identical traffic; the file is read at {ppn} processes per node"]
    else:
        notes = ["MPICH does not report which algorithm ran: each size's socket traffic per "
                 "rank under the file (MPIR_CVAR_NOLOCAL=1, TCP) is compared with runs forced "
                 "to each of MPICH's algorithms; 'ran' lists those with identical traffic"]
    rows: list[RanRow] = []
    pending = collectives or [c for c in EXPORTED_TO["mpich"]
                           if tree.get(f"collective={c}") != installed.tree.get(f"collective={c}")]
    if not pending:
        notes.append(f"the file selects exactly as MPICH's built-in tree for "
                     f"{', '.join(EXPORTED_TO['mpich'])}: nothing to verify")
    for coll in pending:
        want = sizes or _mpich_sizes(text, coll, np)
        if not want:
            notes.append(f"{coll}: the file's tests are not colltune's layout; give --size")
            continue
        file_env = dict(observe_env, **{em.ENV_FILE: str(path)})
        under = _fingerprints(_observe(build, np, coll, want, file_env,
                                       "libcolltune-traffic.so", iterations, timeout))
        forced: dict[str, dict[str, tuple]] = {}
        carried = em.leaf_params(text, coll, np)  # the file's k= of an algorithm: forced alike
        for algo in libalgos.algorithms("mpich", coll):
            if not algo.in_all or libalgos.skip_reason(build.mpi, coll, algo.spec, np):
                continue
            given = carried.get(em.function_name(coll, algo.lib_name))
            spec = format_lib_spec("mpich", algo.lib_name, given) if given else algo.spec
            env = dict(observe_env, **libalgos.lib_env(build.mpi, coll, spec))
            try:
                forced[em.function_name(coll, algo.lib_name)] = _fingerprints(
                    _observe(build, np, coll, want, env, "libcolltune-traffic.so", iterations,
                             timeout))
            except RulesError as exc:
                notes.append(f"{coll}: forcing {algo.spec} failed at np={np}: "
                             f"{str(exc).splitlines()[0][:160]}")
        for size in want:
            label = f"{coll} {size}"
            fp = under.get(label)
            match = sorted(fn for fn, fps in forced.items() if fp is not None and fps.get(label) == fp)
            expected = em.lookup(text, coll, np, size, ppn=ppn)  # 1 under NOLOCAL: a node a rank
            short = lambda fn: fn.split("_intra_")[-1].split("_allcomm_")[-1]  # noqa: E731
            ran = ", ".join(short(m) for m in match) or "no forced algorithm has this traffic"
            if expected is None:
                named, ok, note = "MPICH's own choice", None, "the file leaves this to MPICH"
            else:
                named = short(expected)
                if expected not in forced:
                    ok, note = None, f"{expected} cannot be forced by a CVAR here: not compared"
                else:
                    ok = expected in match
                    note = "" if len(match) <= 1 else "several algorithms send the same traffic here"
            rows.append(RanRow(coll, np, size, named, ran, "", ok, note, len(match) <= 1))
    return rows, notes
