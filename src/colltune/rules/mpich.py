"""MPICH collective-selection JSON files (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE):
write one from a RuleSet, read one back, and check one.

The file replaces MPICH's whole MPIR-level selection tree: a collective missing from
it aborts when it is called (MPI_Init calls some itself). So the file written here
starts from the installed library's own built-in tree (read from libmpi's strings,
never a copy that can go stale), replaces the `comm_type=intra` branch of each
collective the rule set covers, and keeps every other collective as MPICH has it.
A `native` range gets MPICH's own branch for that collective nested under the size
test, which is exactly what MPICH would have done without the file.

Keys written (SIZE_TESTS, one row per collective): `comm_size<=N` (then
`comm_size=any`), `avg_msg_size<=N` for bcast, reduce, allreduce and alltoall (for
alltoall the bytes per destination, colltune's size as it is; MPICH aborts on the key
for allgather), `total_msg_size<=N` for gather, allgather, alltoallv and scatter
(colltune's per-process size x the communicator size, written per communicator size),
no size test for barrier, each list ended by its `=any` catch-all. Leaves
`"algorithm=MPIR_<Coll>_intra_<name>": {}`, names checked against the library; the
k of k_brucks, k_dissemination and recexch goes inside the leaf (`"k=2": {}`).
Where MPICH's own branch first tests `is_sendbuf_inplace` (alltoall: only
pairwise_sendrecv_replace runs in place), the in-place branch is kept as MPICH has it
and the rules go under `is_sendbuf_inplace=no`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from colltune.mpi import libalgos
from colltune.rules.openmpi import NODE_AWARE, comm_blocks, inexact_note
from colltune.rules.ruleset import RulesError, RuleSet

AVG_OK = ("bcast", "reduce", "allreduce", "alltoall")  # avg_msg_size allowed
ENV_FILE = "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"
INPLACE_YES, INPLACE_NO = "is_sendbuf_inplace=yes", "is_sendbuf_inplace=no"

# One row per collective the exporter writes: the size test of its rules and whether
# that test counts colltune's size x the communicator size (MPICH's csel.c:
# avg_msg_size is type size x count, total_msg_size the bytes of all processes;
# alltoallv's total is the sum of the send counts, scatter's the receive count x
# processes). None: no size test (barrier; a size key there makes MPICH abort).
# A new collective is a row here (and one in openmpi.COLLS).
SIZE_TESTS: dict[str, tuple[str | None, bool]] = {
    "bcast": ("avg_msg_size", False),
    "reduce": ("avg_msg_size", False),
    "allreduce": ("avg_msg_size", False),
    "alltoall": ("avg_msg_size", False),  # per destination: colltune's size as it is
    "gather": ("total_msg_size", True),
    "allgather": ("total_msg_size", True),  # avg_msg_size aborts here
    "alltoallv": ("total_msg_size", True),
    "scatter": ("total_msg_size", True),
    "barrier": (None, False),
    # total_msg_size of these three: type size x the counts' sum (reduce_scatter,
    # allgatherv) or x count x comm size (reduce_scatter_block); avg_msg_size aborts
    "reduce_scatter_block": ("total_msg_size", True),
    "reduce_scatter": ("total_msg_size", True),
    "allgatherv": ("total_msg_size", True),
}

# Parameters MPICH's selection file carries inside a leaf ("k=N": {}): csel_container.c
# reads them into an uninitialised container, so the leaf always names them (the spec's
# value, else the parameter's default). (collective, MPICH name) -> {spec key: file key}
LEAF_PARAMS = {
    ("allgather", "k_brucks"): {"kval": "k"},
    ("alltoall", "k_brucks"): {"kval": "k"},
    ("barrier", "k_dissemination"): {"kval": "k"},
    ("barrier", "recexch"): {"kval": "k"},
}


def scales_with_np(coll: str) -> bool:
    """Whether the file's byte thresholds for `coll` are colltune's size x the
    communicator size (total_msg_size of a per-process collective); alltoall's
    avg_msg_size is the bytes per destination, colltune's size itself."""
    return SIZE_TESTS[coll][1]

_NUMERIC = re.compile(r"^(comm_size|avg_msg_size|total_msg_size|count|comm_avg_ppn)(<=|<)(\d+)$")
_ANY = re.compile(r"^(\w+)=any$")
_FLAGS = {"comm_type": ("intra", "inter"), "is_commutative": ("yes", "no"),
          "is_op_built_in": ("yes", "no"), "is_sendbuf_inplace": ("yes", "no"),
          "is_block_regular": ("yes", "no"), "is_node_consecutive": ("yes", "no"),
          "comm_hierarchy": ("parent", "child", "node", "node_roots", "flat"),
          "comm_size": ("pow2", "node_comm_size"), "count": ("pow2",)}


def _cap(coll: str) -> str:
    return coll[:1].upper() + coll[1:]


# ------------------------------------------------------------------------ the library


def _libmpi(mpi) -> Path:
    lib = Path(mpi.bindir).parent / "lib"
    cands = sorted(p for p in lib.glob("libmpi.so*") if p.is_file() and p.stat().st_size > 4096)
    if not cands:
        raise RulesError(f"cannot find MPICH's libmpi.so under {lib}")
    return cands[0]


@lru_cache(maxsize=4)
def _strings(path: str) -> tuple[str, ...]:
    data = Path(path).read_bytes()
    return tuple(m.decode("ascii", "replace") for m in re.findall(rb"[\x20-\x7e]{6,}", data))


@dataclass(frozen=True)
class Installed:
    """What the installed MPICH says about itself (from its library's strings)."""

    version: str
    functions: frozenset[str]  # MPIR_<Coll>_(intra|inter|allcomm)_<name>
    tree: dict  # the built-in MPIR-level selection tree

    @classmethod
    def of(cls, mpi) -> "Installed":
        if getattr(mpi, "kind", None) != "mpich":
            raise RulesError(f"the MPICH selection file needs MPICH; --mpi gives "
                             f"{getattr(mpi, 'name', mpi)} (colltune build --mpi mpich)")
        strings = _strings(str(_libmpi(mpi)))
        names = set()
        for s in strings:  # function names, and the names the selection parser compares
            m = re.fullmatch(r"(?:algorithm=)?(MPIR_[A-Z][a-z_]+_(?:intra|inter|allcomm)_\w+)", s)
            if m:
                names.add(m.group(1))
        funcs = frozenset(names)
        tree = None
        for s in strings:
            if not s.startswith('{"collective='):
                continue
            try:
                d = json.loads(s)
            except ValueError:
                continue
            algs = re.findall(r'"algorithm=(\w+)"', s)
            if algs and all(a.startswith("MPIR_") for a in algs) and (tree is None or len(d) > len(tree)):
                tree = d
        if tree is None:
            raise RulesError(f"cannot find the built-in selection tree in MPICH {mpi.version}'s "
                             f"library: a file could not be complete")
        return cls(mpi.version, funcs, tree)

    def valid(self, coll: str) -> list[str]:
        return sorted(f for f in self.functions if f.startswith(f"MPIR_{_cap(coll)}_"))


def _default(algo, key: str):
    for p in algo.params:
        if p.key == key:
            return p.default
    raise RulesError(f"{algo.spec}: no parameter {key}")  # a table mistake of ours


def function_name(coll: str, lib_name: str) -> str:
    if lib_name == "nb":
        return f"MPIR_{_cap(coll)}_allcomm_nb"
    return f"MPIR_{_cap(coll)}_intra_{lib_name}"


# ----------------------------------------------------------------------------- writing


@dataclass
class Export:
    text: str
    env: dict[str, str]
    notes: list[str]


def _breakpoints(rules, lo, hi, start):
    pts = {start}
    for r in rules:
        pts.add(getattr(r, lo))
        if getattr(r, hi) is not None:
            pts.add(getattr(r, hi) + 1)
    return sorted(p for p in pts if p >= start)


def _swap(tree: dict, old, new) -> None:
    """Replace every subtree equal to `old` below `tree` by a copy of `new`."""
    for k, v in list(tree.items()):
        if v == old:
            tree[k] = json.loads(json.dumps(new))
        elif isinstance(v, dict):
            _swap(v, old, new)


def to_json(rs: RuleSet, installed: Installed) -> Export:
    """The selection file for `rs` (target mpich) and the environment that uses it.
    Raises RulesError (naming the rule) for anything MPICH would reject."""
    node_aware = next((r for r in rs.rules if r.algorithm in NODE_AWARE), None)
    if node_aware:
        raise RulesError(f"{node_aware.collective} rule {node_aware.spec}: colltune's "
                         f"node-aware {node_aware.algorithm} runs only under `colltune run`; "
                         f"MPICH cannot run it")
    if rs.target != "mpich":
        raise RulesError(f"this rule set targets {rs.target}; an MPICH selection file needs "
                         f"target mpich (algorithms mpich:NAME or native)")
    notes: list[str] = []
    if any(r.mapping for r in rs.rules):
        notes.append("rules that differ by mapping are written as the first rule of each range")
    leaf: dict[int, dict | None] = {}
    for r in rs.rules:
        if r.algorithm == "native":
            leaf[id(r)] = None
            continue
        if not r.algorithm.startswith("mpich:"):
            raise RulesError(f"{r.collective} rule {r.spec}: not an MPICH algorithm "
                             f"(mpich:NAME or native)")
        try:
            algo, values = libalgos.resolve("mpich", r.collective, r.spec)
        except ValueError as exc:
            raise RulesError(f"{r.collective} rule {r.spec}: {exc}") from None
        carried = LEAF_PARAMS.get((r.collective, algo.lib_name), {})
        if set(values) - set(carried):
            raise RulesError(f"{r.collective} rule {r.spec}: parameters ({', '.join(values)}) "
                             f"cannot be carried by colltune's MPICH selection file yet; "
                             f"name the algorithm without them")
        if algo.lib_name == "pairwise_sendrecv_replace":
            raise RulesError(f"{r.collective} rule {r.spec}: MPICH runs it on MPI_IN_PLACE "
                             f"calls only, which the file leaves to MPICH; name another "
                             f"algorithm")
        fn = function_name(r.collective, algo.lib_name)
        if fn not in installed.functions:
            raise RulesError(f"{r.collective} rule {r.spec}: MPICH {installed.version} has no "
                             f"selectable {fn}; valid: {', '.join(installed.valid(r.collective))}")
        inner = {f"{fk}={values.get(pk, _default(algo, pk))}": {} for pk, fk in carried.items()}
        leaf[id(r)] = {f"algorithm={fn}": inner}
    tree = json.loads(json.dumps(installed.tree))  # a copy, in MPICH's order
    for coll in rs.collectives():
        key = f"collective={coll}"
        builtin = installed.tree.get(key, {}).get("comm_type=intra")
        if builtin is None:
            raise RulesError(f"MPICH {installed.version}'s built-in tree has no intra branch for "
                             f"{coll}")
        crules = [r for r in rs.rules if r.collective == coll]
        nps = _breakpoints(crules, "np_min", "np_max", 1)
        blocks: list[tuple[int, int, int]] = []  # (first np, last np or 0 = open, exact np)
        inexact = False
        for i, b in enumerate(nps):
            end = nps[i + 1] - 1 if i + 1 < len(nps) else None
            bl, inx = comm_blocks(b, end, scales_with_np(coll))
            blocks += [(first, last or 0, first) for first, last in bl]
            inexact |= inx
        noted = False
        size_key = SIZE_TESTS[coll][0]
        branch: dict = {}
        for first, last, exact in blocks:
            here = [r for r in crules if r.np_min <= first and (r.np_max is None or first <= r.np_max)]
            sizes = _breakpoints(here, "size_min", "size_max", 0)
            if size_key is None:  # no size test: the rule of size 0 (barrier's only size)
                sizes = sizes[:1]
            mult = exact if scales_with_np(coll) else 1

            def size_sub(ppn):
                ranges: list[list] = []  # [lo, hi or None, leaf]
                for j, s in enumerate(sizes):
                    hi = sizes[j + 1] - 1 if j + 1 < len(sizes) else None
                    r = rs.lookup(coll, first, s, ppn=ppn)
                    lf = leaf[id(r)] if r is not None else None
                    if ranges and ranges[-1][2] == lf:
                        ranges[-1][1] = hi
                        continue
                    ranges.append([s, hi, lf])
                sub: dict = {}
                for lo, hi, lf in ranges:
                    here_leaf = lf if lf is not None else json.loads(json.dumps(builtin))
                    if size_key is None:
                        return here_leaf, len(ranges)
                    k = f"{size_key}=any" if hi is None else f"{size_key}<={hi * mult}"
                    sub[k] = here_leaf
                return sub, len(ranges)

            # processes per node (ppn= rules): MPICH's comm_avg_ppn tests, then the sizes
            ppns = sorted({1} | {b for r in here if r.ppn for b in
                                 (r.ppn[0], None if r.ppn[1] is None else r.ppn[1] + 1)
                                 if b is not None})
            subs = []
            for j, p_lo in enumerate(ppns):
                p_hi = ppns[j + 1] - 1 if j + 1 < len(ppns) else None
                sub, nranges = size_sub(p_lo if len(ppns) > 1 else None)
                if subs and subs[-1][2] == sub:
                    subs[-1][1] = p_hi
                    continue
                subs.append([p_lo, p_hi, sub])
                if inexact and nranges > 1 and not noted:
                    notes.append(inexact_note(coll, "MPICH"))
                    noted = True
            if len(subs) == 1:
                sub = subs[0][2]
            else:
                sub = {("comm_avg_ppn=any" if p_hi is None else f"comm_avg_ppn<={p_hi}"): v
                       for _lo, p_hi, v in subs}
            ck = "comm_size=any" if not last else f"comm_size<={last}"
            branch[ck] = sub
        if "comm_size=any" not in branch:
            branch["comm_size=any"] = json.loads(json.dumps(builtin))
        if isinstance(builtin, dict) and INPLACE_YES in builtin:
            # MPICH's in-place calls keep MPICH's in-place algorithm (the others refuse
            # MPI_IN_PLACE); the rules decide the calls that are not in place
            _swap(branch, builtin, builtin[INPLACE_NO])
            if branch["comm_size=any"] == builtin:
                branch["comm_size=any"] = json.loads(json.dumps(builtin[INPLACE_NO]))
            branch = {INPLACE_YES: json.loads(json.dumps(builtin[INPLACE_YES])),
                      INPLACE_NO: branch}
        tree[key]["comm_type=intra"] = branch
    text = json.dumps(tree, indent=1) + "\n"
    problems = check(text, installed)
    if problems:
        raise RulesError("refusing to write an MPICH selection file MPICH would reject: "
                         + "; ".join(f"line {ln}: {p}" for ln, p in problems))
    return Export(text, {}, notes)


def usage(path: str) -> list[str]:
    return [f"export {ENV_FILE}={path}",
            "export MPIR_CVAR_DEVICE_COLLECTIVES=none   # else the ch4 device's own selection "
            "can bypass the file",
            f"mpiexec -genv {ENV_FILE} {path} -genv MPIR_CVAR_DEVICE_COLLECTIVES none ..."]


# ----------------------------------------------------------------------------- reading


def _key_lines(text: str) -> list[int]:
    """Line of every object key, in document order."""
    out = []
    for m in re.finditer(r'"((?:[^"\\]|\\.)*)"\s*:', text):
        out.append(text.count("\n", 0, m.start()) + 1)
    return out


@dataclass
class Node:
    key: str
    line: int
    children: list["Node"]
    bad_value: bool = False


def parse(text: str) -> tuple[list[Node], list[tuple[int, str]]]:
    """The tree with the line of every key; problems (line, text) of the syntax."""
    try:
        raw = json.loads(text, object_pairs_hook=lambda pairs: ("obj", pairs))
    except json.JSONDecodeError as exc:
        return [], [(exc.lineno, f"not valid JSON: {exc.msg} (MPICH aborts in MPI_Init)")]
    lines = iter(_key_lines(text))

    def build(pairs) -> list[Node]:
        nodes = []
        for k, v in pairs:
            ln = next(lines, 0)
            if isinstance(v, tuple) and v and v[0] == "obj":
                nodes.append(Node(k, ln, build(v[1])))
            else:
                nodes.append(Node(k, ln, [], bad_value=True))
        return nodes

    if not (isinstance(raw, tuple) and raw[0] == "obj"):
        return [], [(1, "the file must be one JSON object of \"collective=NAME\" keys")]
    return build(raw[1]), []


def check(text: str, installed: Installed | None = None) -> list[tuple[int, str]]:
    """Every problem MPICH would abort on or that would make it abort later."""
    roots, problems = parse(text)
    if problems:
        return problems
    known_colls = ({k.split("=", 1)[1] for k in installed.tree} if installed else None)
    seen = set()
    for n in roots:
        if not n.key.startswith("collective="):
            problems.append((n.line, f"top-level key '{n.key}' is not collective=NAME"))
            continue
        coll = n.key.split("=", 1)[1]
        if known_colls is not None and coll not in known_colls:
            problems.append((n.line, f"unknown collective '{coll}'"))
        seen.add(coll)
        _check_children(n.children, coll, installed, problems, n.line)
    if known_colls is not None:
        missing = sorted(known_colls - seen)
        if missing:
            problems.append((1, f"no entry for {', '.join(missing)}: the file replaces MPICH's "
                                f"whole tree, and a call of a collective missing from it aborts "
                                f"(MPI_Init makes some)"))
    return sorted(problems)


def _check_children(nodes: list[Node], coll: str, installed, problems, parent_line) -> None:
    if not nodes:
        problems.append((parent_line, "a test with nothing under it (no algorithm=...)"))
        return
    anys: set[str] = set()
    numeric_keys: dict[str, int] = {}
    for n in nodes:
        if n.bad_value:
            problems.append((n.line, f"the value of '{n.key}' must be an object"))
            continue
        k = n.key
        if k.startswith("algorithm="):
            fn = k.split("=", 1)[1]
            if installed is not None and fn not in installed.functions:
                problems.append((n.line, f"unknown algorithm {fn} (MPICH aborts); valid for "
                                         f"{coll}: {', '.join(installed.valid(coll)) or 'none'}"))
            if len(nodes) > 1:
                problems.append((n.line, "an algorithm must be the only entry of its object"))
            continue
        if k.startswith("composition="):
            problems.append((n.line, "composition= belongs to the device-level file, not the "
                                     "MPIR-level one"))
            continue
        m = _NUMERIC.match(k)
        a = _ANY.match(k)
        if m:
            name = m.group(1)
            if name in anys:
                problems.append((n.line, f"'{k}' after '{name}=any' is never reached"))
            numeric_keys.setdefault(name, n.line)
            if name == "avg_msg_size" and coll not in AVG_OK and not coll.startswith("i"):
                problems.append((n.line, f"avg_msg_size on {coll} makes MPICH abort; use "
                                         f"total_msg_size"))
        elif a:
            anys.add(a.group(1))
        else:
            if k in ("count<pow2",):
                _check_children(n.children, coll, installed, problems, n.line)
                continue
            name, _, val = k.partition("=")
            name = name.split("<")[0]
            if name not in _FLAGS and name != "k":
                problems.append((n.line, f"unknown key '{k}' (MPICH aborts)"))
            elif name in _FLAGS and val not in _FLAGS[name]:
                problems.append((n.line, f"'{k}': {name} takes {', '.join(_FLAGS[name])}"))
        _check_children(n.children, coll, installed, problems, n.line) if not k.startswith(
            "k=") else None
    for name, line in numeric_keys.items():
        if name not in anys:
            problems.append((line, f"the {name} tests have no '{name}=any' after them: a call "
                                   f"beyond the last bound matches nothing and MPICH aborts"))


def leaf_params(text: str, coll: str, np: int) -> dict[str, dict[str, str]]:
    """The parameters the file's leaves of `coll` carry at `np` processes, as spec
    parameters: {function name: {"kval": "3"}} (the first leaf of each function in the
    comm_size block that applies at np decides)."""
    spec_key = {fk: pk for (c, _), ps in LEAF_PARAMS.items() if c == coll for pk, fk in ps.items()}
    out: dict[str, dict[str, str]] = {}

    def walk(node):
        for k, v in node.items() if isinstance(node, dict) else ():
            if k.startswith("algorithm="):
                got = {spec_key[pk]: pv for pk, _, pv in (kk.partition("=") for kk in v)
                       if pk in spec_key}
                if got:
                    out.setdefault(k.split("=", 1)[1], got)
            else:
                walk(v)

    node = json.loads(text).get(f"collective={coll}", {}).get("comm_type=intra", {})
    node = node.get(INPLACE_NO, node) if isinstance(node, dict) else {}
    for k, v in node.items():
        m = re.fullmatch(r"comm_size(<=|<)(\d+)", k)
        if k == "comm_size=any" or (m and (np <= int(m.group(2)) if m.group(1) == "<="
                                           else np < int(m.group(2)))):
            node = v
            break
    walk(node)
    return out


def rows(text: str) -> list[dict]:
    """Leaves of the tree as rows: collective, the conditions on the way, algorithm."""
    roots, problems = parse(text)
    out: list[dict] = []

    def walk(nodes, coll, conds):
        for n in nodes:
            if n.key.startswith("algorithm="):
                out.append({"line": n.line, "collective": coll, "conditions": " ".join(conds),
                            "algorithm": n.key.split("=", 1)[1]})
            else:
                walk(n.children, coll, conds + [n.key])

    for n in roots:
        walk(n.children, n.key.split("=", 1)[-1], [])
    return out


def looks_like(text: str) -> bool:
    return text.lstrip().startswith("{") and '"collective=' in text


def lookup(text: str, coll: str, np: int, size: int, comm_type: str = "intra",
           ppn: int | None = None) -> str | None:
    """The algorithm the file names for (collective, np, colltune size), for the tests
    this module writes (comm_size, avg/total_msg_size, =any); None where another test
    decides (MPICH's own branch: the file leaves the choice to MPICH)."""
    tree = json.loads(text)
    node = tree.get(f"collective={coll}")
    if node is None:
        return None
    nbytes = size * (np if scales_with_np(coll) else 1)
    vals = {"comm_size": np, "avg_msg_size": nbytes, "total_msg_size": nbytes,
            "comm_avg_ppn": np if ppn is None else ppn}
    while True:
        for k, v in node.items():
            if k.startswith("algorithm="):
                return k.split("=", 1)[1]
            if k in (f"comm_type={comm_type}", INPLACE_NO) or _ANY.match(k):
                node = v
                break
            m = _NUMERIC.match(k)
            if m and m.group(1) in vals:
                bound = int(m.group(3))
                x = vals[m.group(1)]
                if (x <= bound) if m.group(2) == "<=" else (x < bound):
                    node = v
                    break
                continue
            if m is None and k not in ("comm_type=inter", "comm_type=intra", INPLACE_YES):
                return None  # a test of MPICH's own branch
        else:
            return None
