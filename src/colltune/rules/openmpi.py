"""Open MPI `coll/tuned` dynamic rules files: write one from a RuleSet, read one back,
and check one for the mistakes Open MPI ignores without a word.

The classic format (every 4.x/5.x reads it; `rule-file-version-2` as the very first
characters of the file adds a MAXREQ column from 5.0.7 on):

    NCOLLECTIVES
      COLL_ID  NCOMMSIZES
        COMMSIZE  NMSGRULES
          MSGBYTES  ALG  FANINOUT  SEGSIZE  [MAXREQ]

Whitespace-separated integers read with C `%li` (`#` starts a comment to the end of
the line, any other non-digit character is skipped silently, so `1K` reads as 1 and
shifts every later number). Lookup: the last comm-size entry with COMMSIZE <= the
communicator size (else the first), then the last message rule with MSGBYTES <= the
byte count; ALG 0 means Open MPI's fixed decision rules. The byte count (COLLS, one
row per collective) is the message for bcast/reduce/allreduce, type size x count x
communicator size for gather/allgather/alltoall/scatter (colltune's per-process sizes,
alltoall: per destination, are multiplied out here, per communicator size) and always 0
for alltoallv and barrier (one message rule per comm size). MAXREQ (version 2) carries
alltoall linear_sync's and the reduce trees' max_requests.

Silent failures (the file is ignored, exit 0): a first MSGBYTES other than 0, a
truncated file, a missing file; an unknown algorithm number aborts the first call.
`check` finds each of them; `to_text` refuses to write a file with any of them.
Algorithm numbers come from the installed library's `ompi_info`, never from a table.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from colltune.mpi import libalgos
from colltune.rules.ruleset import Rule, RulesError, RuleSet

# How coll/tuned's dynamic rules measure a call (coll_tuned_decision_dynamic.c, 5.0.x):
AS_IS = "bytes"  # the message: colltune's size itself
TIMES_NP = "bytes x np"  # type size x count x communicator size: colltune's size x np
ZERO = "0"  # every call is 0 bytes: the first message rule of the comm size decides
# One row per collective the exporter writes: the COLLTYPE id of Open MPI's
# coll_base_functions.h (stable since 1.x) and how the rules measure a call. A new
# collective is a row here (and one in mpich.SIZE_TESTS).
COLLS = {
    "allgather": (0, TIMES_NP),
    "allgatherv": (1, AS_IS),  # the counts' total / comm size: one process's block
    "allreduce": (2, AS_IS),
    "alltoall": (3, TIMES_NP),  # colltune's size is per destination
    "alltoallv": (4, ZERO),  # "no global knowledge of the amount of data"
    "barrier": (6, ZERO),
    "bcast": (7, AS_IS),
    "gather": (9, TIMES_NP),
    "reduce": (11, AS_IS),
    "reduce_scatter": (12, TIMES_NP),  # type size x the sum of the counts
    "reduce_scatter_block": (13, TIMES_NP),  # type size x count x comm size
    "scatter": (15, TIMES_NP),  # the send count: significant at the root only
}
COLL_IDS = {c: v[0] for c, v in COLLS.items()}
ID_COLLS = {v: k for k, v in COLL_IDS.items()}


# colltune's hierarchical and shared-memory algorithms (native/lib/hier.c, shm.c): no
# MPI library has them, so no library's rules file can name them
NODE_AWARE = ("hier", "hier_ml", "shm")


def measure(coll: str) -> str:
    return COLLS[coll][1]


def msg_bytes(coll: str, size: int, np: int) -> int:
    """The byte count Open MPI's rules compare for a call of colltune's `size` at `np`."""
    m = measure(coll)
    return 0 if m == ZERO else size * (np if m == TIMES_NP else 1)


def size_blind_note(coll: str) -> str:
    return (f"{coll}: Open MPI's rules measure every {coll} call as 0 bytes (they choose by "
            f"the communicator size only): the rule of the smallest size is written for each "
            f"process count")
COLLCOUNT = 22  # ids 0..21 are collectives Open MPI knows (ids of ones we do not write pass)
VERSION2_SINCE = (5, 0, 7)
RADIX_MCA = "coll_tuned_bcast_algorithm_knomial_radix"  # knomial's radix: not in the file
EXACT_UP_TO = 64  # gather/allgather: one entry per process count up to here, then
POW2_UP_TO = 1 << 20  # one per power of two (thresholds exact there)


def comm_blocks(b: int, end: int | None, per_process: bool) -> tuple[list[tuple[int, int | None]], bool]:
    """Entries (first np, last np or None = no bound) that stand for the process counts
    [b, end]. A per-process collective's byte thresholds depend on the process count:
    they are written exact for each count up to EXACT_UP_TO (and b+EXACT_UP_TO-1), then
    exact at the entry's first count, one entry per power of two. The flag says whether
    some counts get thresholds that are not exact."""
    if not per_process:
        return [(b, end)], False
    starts = []
    n = b
    exact_to = max(b + EXACT_UP_TO - 1, EXACT_UP_TO)
    while n <= exact_to and (end is None or n <= end):
        starts.append(n)
        n += 1
    inexact = end is None or n <= end
    if inexact:
        starts.append(n)
        p = 1 << n.bit_length()  # the next power of two above n
        while p <= POW2_UP_TO and (end is None or p <= end):
            starts.append(p)
            p <<= 1
    blocks = [(a, starts[i + 1] - 1 if i + 1 < len(starts) else end)
              for i, a in enumerate(starts)]
    return blocks, inexact


def inexact_note(coll: str, lib: str) -> str:
    return (f"{coll}: {lib} compares the bytes of all processes, so colltune's per-process "
            f"thresholds are written exact for each process count up to {EXACT_UP_TO} and at "
            f"the powers of two above; in between they are those of the power of two below")
MAXINT = 2**31 - 1

_NUMBER = re.compile(r"^(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)$")


@dataclass
class MsgRule:
    line: int
    msgbytes: int
    alg: int
    faninout: int
    segsize: int
    maxreq: int | None = None


@dataclass
class CommEntry:
    line: int
    comm_size: int
    rules: list[MsgRule] = field(default_factory=list)


@dataclass
class CollEntry:
    line: int
    coll_id: int
    comms: list[CommEntry] = field(default_factory=list)

    @property
    def name(self) -> str:
        return ID_COLLS.get(self.coll_id, f"collective id {self.coll_id}")


@dataclass
class ParsedFile:
    version: int
    colls: list[CollEntry]
    problems: list[tuple[int, str]]  # (line, problem)
    trailing: list[tuple[int, str]] = field(default_factory=list)  # numbers after the end


def version_tuple(version: str) -> tuple[int, ...]:
    out = []
    for part in version.split("."):
        m = re.match(r"\d+", part)
        out.append(int(m.group()) if m else 0)
    return tuple(out)


def supports_version2(version: str) -> bool:
    return version_tuple(version)[:3] >= VERSION2_SINCE


# ----------------------------------------------------------------------------- reading


def _tokens(text: str) -> tuple[list[tuple[int, str]], list[tuple[int, str]], int]:
    """(line, token) of every token outside comments; problems; the header version."""
    toks: list[tuple[int, str]] = []
    problems: list[tuple[int, str]] = []
    version = 1
    body = text
    m = re.match(r"rule-file-version-(\d+)", text)
    if m:
        version = int(m.group(1))
        body = " " * m.end() + text[m.end():]
        if version not in (1, 2):
            problems.append((1, f"rule-file-version-{version}: Open MPI 5.0.x reads versions 1 "
                                f"and 2 only"))
    for i, line in enumerate(body.splitlines(), start=1):
        line = line.split("#", 1)[0]
        for t in line.split():
            if i > 1 or not m:
                if t.startswith("rule-file-version"):
                    problems.append((i, f"'{t}' must be the very first characters of the file; "
                                        f"here Open MPI skips the letters and reads the number "
                                        f"as a count"))
                    continue
            toks.append((i, t))
    return toks, problems, version


def parse(text: str) -> ParsedFile:
    """Parse a classic (or version 2) rules file the way Open MPI reads it, collecting
    every problem (line, text) instead of stopping at the first."""
    toks, problems, version = _tokens(text)
    pos = 0
    last_line = max((ln for ln, _ in toks), default=1)

    def nxt(what: str) -> int | None:
        nonlocal pos
        if pos >= len(toks):
            problems.append((last_line, f"the file ends where {what} was expected (truncated: "
                                        f"Open MPI ignores the whole file without a word)"))
            return None
        ln, t = toks[pos]
        pos += 1
        if not _NUMBER.match(t):
            lead = re.match(r"\d+", t)
            problems.append((ln, f"{what} '{t}' is not a plain integer"
                                 + (f" (Open MPI reads {int(lead.group())} and silently skips "
                                    f"'{t[lead.end():]}', shifting every later number)"
                                    if lead else " (Open MPI skips it silently)")))
            return None
        if len(t) > 1 and t[0] == "0" and t[1] not in "xX":
            return int(t, 8)  # C %li: a leading zero means octal
        return int(t, 0)

    def line_of_prev() -> int:
        return toks[pos - 1][0] if pos else 1

    colls: list[CollEntry] = []
    ncol = nxt("the number of collectives")
    if ncol is None:
        return ParsedFile(version, colls, problems)
    if ncol > COLLCOUNT:
        problems.append((line_of_prev(), f"{ncol} collectives: Open MPI knows {COLLCOUNT}"))
    seen_ids: dict[int, int] = {}
    for _ in range(ncol):
        cid = nxt("a collective id")
        if cid is None:
            break
        cl = line_of_prev()
        if cid >= COLLCOUNT:
            problems.append((cl, f"collective id {cid} is not one Open MPI knows (0..{COLLCOUNT - 1})"))
        if cid in seen_ids:
            problems.append((cl, f"collective id {cid} already given on line {seen_ids[cid]}"))
        seen_ids[cid] = cl
        ce = CollEntry(cl, cid)
        colls.append(ce)
        ncomm = nxt("the number of comm sizes")
        if ncomm is None:
            break
        prev_cs = -1
        stop = False
        for _c in range(ncomm):
            cs = nxt("a comm size")
            if cs is None:
                stop = True
                break
            csl = line_of_prev()
            if cs <= prev_cs:
                problems.append((csl, f"comm size {cs} does not increase (previous {prev_cs}): "
                                      f"Open MPI takes the last entry <= the communicator size"))
            prev_cs = cs
            entry = CommEntry(csl, cs)
            ce.comms.append(entry)
            nmsg = nxt("the number of message rules")
            if nmsg is None:
                stop = True
                break
            if nmsg < 1:
                problems.append((csl, f"comm size {cs} has {nmsg} message rules (at least 1)"))
            prev_mb = -1
            for k in range(nmsg):
                vals = []
                names = ["MSGBYTES", "ALG", "FANINOUT", "SEGSIZE"] + (["MAXREQ"] if version == 2 else [])
                for nm in names:
                    v = nxt(nm)
                    if v is None:
                        stop = True
                        break
                    vals.append(v)
                if stop:
                    break
                ml = toks[pos - len(names)][0]
                mr = MsgRule(ml, vals[0], vals[1], vals[2], vals[3], vals[4] if version == 2 else None)
                if k == 0 and mr.msgbytes != 0:
                    problems.append((ml, f"the first message rule of comm size {cs} starts at "
                                         f"{mr.msgbytes}, not 0 (Open MPI ignores the whole file "
                                         f"without a word)"))
                if mr.msgbytes <= prev_mb:
                    problems.append((ml, f"MSGBYTES {mr.msgbytes} does not increase (previous "
                                         f"{prev_mb})"))
                prev_mb = mr.msgbytes
                if mr.segsize > MAXINT or mr.faninout > MAXINT:
                    problems.append((ml, "FANINOUT/SEGSIZE above 2^31-1"))
                entry.rules.append(mr)
            if stop:
                break
        if stop:
            break
    trailing = toks[pos:]
    return ParsedFile(version, colls, problems, trailing)


# ------------------------------------------------------------------------ the library


@dataclass(frozen=True)
class Installed:
    """What the installed Open MPI says about itself (from ompi_info)."""

    version: str
    algorithms: dict[str, dict[int, str]]  # collective -> {number: name}, 0 included
    defaults: dict[str, str]  # MCA parameter -> default value

    @classmethod
    def of(cls, mpi) -> "Installed":
        if getattr(mpi, "kind", None) != "openmpi":
            raise RulesError(f"the Open MPI rules file needs Open MPI; --mpi gives "
                             f"{getattr(mpi, 'name', mpi)} (colltune build --mpi openmpi)")
        try:
            enums, _params = libalgos.ompi_info_algorithms(mpi)
            text = libalgos._ompi_info(str(mpi.bindir))
        except (OSError, RuntimeError) as exc:
            raise RulesError(f"cannot ask Open MPI about its algorithms (ompi_info): {exc}") from None
        defaults = {}
        for line in text.splitlines():
            m = re.match(r"^mca:coll:tuned:param:(coll_tuned_\w+):value:(.*)$", line)
            if m:
                defaults[m.group(1)] = m.group(2)
        if not enums:
            raise RulesError(f"ompi_info of Open MPI {mpi.version} lists no coll_tuned "
                             f"algorithms: is coll/tuned built?")
        return cls(mpi.version, enums, defaults)

    def number(self, collective: str, lib_name: str) -> int | None:
        for n, name in self.algorithms.get(collective, {}).items():
            if name == lib_name and n != 0:
                return n
        return None

    def name(self, collective: str, number: int) -> str | None:
        return self.algorithms.get(collective, {}).get(number)

    def valid(self, collective: str) -> str:
        return ", ".join(f"{n} {nm}" for n, nm in sorted(self.algorithms.get(collective, {}).items()))


def check(text: str, installed: Installed | None = None) -> list[tuple[int, str]]:
    """Every problem of a rules file, as (line, problem); empty when Open MPI would read
    it as written. With `installed`, algorithm numbers are checked against it."""
    pf = parse(text)
    problems = list(pf.problems)
    for ln, t in pf.trailing:
        problems.append((ln, f"'{t}' after the last rule the counts announce (a count is wrong; "
                             f"Open MPI ignores the rest)"))
        break
    if pf.version == 2 and installed is not None and not supports_version2(installed.version):
        problems.append((1, f"rule-file-version-2 is read from Open MPI 5.0.7 on; the installed "
                            f"{installed.version} reads the header as numbers"))
    for ce in pf.colls:
        coll = ID_COLLS.get(ce.coll_id)
        for entry in ce.comms:
            for mr in entry.rules:
                if mr.alg < 0:
                    problems.append((mr.line, f"algorithm {mr.alg} is negative"))
                elif installed is not None and coll is not None and mr.alg != 0:
                    if installed.name(coll, mr.alg) is None:
                        problems.append((mr.line, f"{coll} algorithm {mr.alg} does not exist in "
                                                  f"Open MPI {installed.version} (the first call "
                                                  f"aborts with MPI_ERR_ARG); valid: "
                                                  f"{installed.valid(coll)}"))
    return sorted(problems)


# ----------------------------------------------------------------------------- writing


@dataclass
class Export:
    text: str
    mca: dict[str, str]  # MCA parameters the file needs besides itself
    notes: list[str]


DISTS = ("one-per-node", "single-node", "any")  # JSON comm_rank_distribution, tried in order


@dataclass
class Plan:
    version: int  # of the classic file: 2 where max_requests is carried
    mca: dict[str, str]
    notes: list[str]
    # collective -> distribution -> [(first comm size, [(first byte count, choice)])]
    colls: dict[str, dict[str, list[tuple[int, list[tuple[int, tuple]]]]]]


def _holds(r: Rule, dist: str) -> bool:
    """Whether rule r can apply to a communicator of this rank distribution: `any` takes
    the rules without ppn=, the others every rule (_lookup checks its ppn range)."""
    return r.ppn is None if dist == "any" else True


def _lookup(crules: list[Rule], coll: str, cs: int, size: int, dist: str) -> Rule | None:
    """The first rule for (cs, size) on a communicator of that distribution: one process
    per node is ppn 1, a single node is ppn = cs."""
    ppn = {"any": None, "one-per-node": 1, "single-node": cs}[dist]
    for r in crules:
        if r.matches(coll, cs, size, ppn=ppn):
            return r
    return None


def _breakpoints(rules: list[Rule], lo_attr: str, hi_attr: str, start: int) -> list[int]:
    pts = {start}
    for r in rules:
        pts.add(getattr(r, lo_attr))
        hi = getattr(r, hi_attr)
        if hi is not None:
            pts.add(hi + 1)
    return sorted(p for p in pts if p >= start)


def _param(r: Rule, key: str) -> int | None:
    v = r.params_dict.get(key)
    if v is None:
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        raise RulesError(f"{r.collective} rule {r.spec}: {key}={v} is not a whole number") from None


def plan(rs: RuleSet, installed: Installed,
         dists: tuple[str, ...] = ("any",)) -> Plan:
    """What either file format says for `rs` (target openmpi): per collective and rank
    distribution (`any`; with ppn= rules also `one-per-node`, `single-node`), the
    communicator sizes and, for each, the message rules (bytes as Open MPI measures a
    call, the algorithm number, fan-in/out, segment size, max requests), and the MCA
    parameters and notes. Raises RulesError (naming the rule) for anything Open MPI
    would ignore or abort on."""
    node_aware = next((r for r in rs.rules if r.algorithm in NODE_AWARE), None)
    if node_aware:
        raise RulesError(f"{node_aware.collective} rule {node_aware.spec}: colltune's "
                         f"node-aware {node_aware.algorithm} runs only under `colltune run`; "
                         f"Open MPI cannot run it")
    if rs.target not in ("openmpi",):
        raise RulesError(f"this rule set targets {rs.target}; an Open MPI rules file needs "
                         f"target openmpi (algorithms ompi:NAME or native)")
    notes: list[str] = []
    mca: dict[str, str] = {}
    if any(r.mapping for r in rs.rules):
        notes.append("rules that differ by mapping cannot be told apart by Open MPI (it sees "
                     "the communicator size only): the first rule of each range is written")
    want_v2 = False
    resolved: dict[int, tuple[int, int, int, int | None]] = {}  # id(rule) -> alg, fan, seg, maxreq
    for r in rs.rules:
        if r.algorithm == "native":
            resolved[id(r)] = (0, 0, 0, None)
            continue
        if not r.algorithm.startswith("ompi:"):
            raise RulesError(f"{r.collective} rule {r.spec}: not an Open MPI algorithm "
                             f"(ompi:NAME or native)")
        spec = r.spec
        try:
            algo, values = libalgos.resolve("openmpi", r.collective, spec)
        except ValueError as exc:
            raise RulesError(f"{r.collective} rule {spec}: {exc}") from None
        num = installed.number(r.collective, algo.lib_name)
        if num is None:
            raise RulesError(f"{r.collective} rule {spec}: Open MPI {installed.version} has no "
                             f"{r.collective} algorithm '{algo.lib_name}' (ompi_info lists "
                             f"{installed.valid(r.collective)})")
        seg = int(values.get("segsize", installed.defaults.get(
            f"coll_tuned_{r.collective}_algorithm_segmentsize", "0") or 0))
        fan = 0
        if algo.lib_name == "chain":
            fan = int(values.get("fanout", installed.defaults.get(
                f"coll_tuned_{r.collective}_algorithm_chain_fanout", "4") or 4))
        if "radix" in values:
            key = RADIX_MCA
            if mca.get(key, values["radix"]) != values["radix"]:
                raise RulesError(f"knomial rules with radix {mca[key]} and {values['radix']}: the "
                                 f"file cannot carry the radix (Open MPI reads it from {key} for "
                                 f"every knomial call); use one radix")
            mca[key] = values["radix"]
        maxreq = None
        if "max_requests" in values:
            maxreq = int(values["max_requests"])
            want_v2 = True
        resolved[id(r)] = (num, fan, seg, maxreq)
    if want_v2 and not supports_version2(installed.version):
        raise RulesError(f"max_requests in a rules file needs rule-file-version-2 (Open MPI "
                         f"5.0.7 on); the installed version is {installed.version}")
    out: dict[str, dict[str, list]] = {}
    for coll, dist in ((c, d) for c in rs.collectives() for d in dists):
        crules = [r for r in rs.rules if r.collective == coll and _holds(r, dist)]
        if not crules:
            continue
        nps = _breakpoints(crules, "np_min", "np_max", 1)
        if dist == "single-node":  # ppn = comm size: a ppn bound is a comm size bound
            nps = sorted(set(nps) | {b for r in crules if r.ppn for b in
                                     (r.ppn[0], None if r.ppn[1] is None else r.ppn[1] + 1)
                                     if b is not None and b >= nps[0]})
        blocks: list[tuple[int, int]] = []  # (comm size, np the sizes are exact at)
        inexact = False
        for i, b in enumerate(nps):
            end = nps[i + 1] - 1 if i + 1 < len(nps) else None
            bl, inx = comm_blocks(b, end, measure(coll) == TIMES_NP)
            blocks += [(first, first) for first, _last in bl]
            inexact |= inx
        noted = blind_noted = False
        entries = []
        for cs, n_at in blocks:
            here = [r for r in crules if r.np_min <= cs and (r.np_max is None or cs <= r.np_max)]
            sizes = _breakpoints(here, "size_min", "size_max", 0)
            if measure(coll) == ZERO:
                picks = {resolved.get(id(_lookup(crules, coll, cs, s, dist))) for s in sizes}
                if len(picks) > 1 and not blind_noted:
                    notes.append(size_blind_note(coll))
                    blind_noted = True
                sizes = sizes[:1]
            msg: list[tuple[int, tuple]] = []
            for s in sizes:
                r = _lookup(crules, coll, cs, s, dist)
                choice = resolved[id(r)] if r is not None else (0, 0, 0, None)
                nbytes = msg_bytes(coll, s, n_at)
                if msg and msg[-1][1] == choice:
                    continue
                msg.append((nbytes, choice))
            entries.append((cs, msg))
            if inexact and len(msg) > 1 and not noted:
                notes.append(inexact_note(coll, "Open MPI"))
                noted = True
        # merge consecutive comm sizes with the same message rules
        merged: list[tuple[int, list]] = []
        for cs, msg in entries:
            if merged and merged[-1][1] == msg:
                continue
            merged.append((cs, msg))
        out.setdefault(coll, {})[dist] = merged
    return Plan(2 if want_v2 else 1, mca, list(dict.fromkeys(notes)), out)


def to_text(rs: RuleSet, installed: Installed) -> Export:
    """The classic rules file for `rs` (target openmpi), with the MCA parameters it
    needs. Raises RulesError for anything Open MPI would ignore or abort on."""
    pl = plan(rs, installed)
    version, mca, notes = pl.version, pl.mca, pl.notes
    lines: list[str] = []
    if version == 2:
        lines.append("rule-file-version-2")
    lines.append(f"# Open MPI coll/tuned dynamic rules written by colltune for Open MPI "
                 f"{installed.version}")
    for k in ("study", "created", "mpi"):
        if k in rs.meta:
            lines.append(f"# {k}: {' '.join(rs.meta[k].split())}")
    for k, v in mca.items():  # read back by `colltune rules verify` (a comment to Open MPI)
        lines.append(f"# mca: {k} {v}")
    lines.append(f"{len(pl.colls)}  # collectives")
    for coll, by_dist in pl.colls.items():
        merged = by_dist["any"]
        lines.append(f"{COLL_IDS[coll]} {len(merged)}  # {coll}")
        for cs, msg in merged:
            lines.append(f"  {cs} {len(msg)}  # comm size {cs} and up")
            for nbytes, (alg, fan, seg, maxreq) in msg:
                name = installed.name(coll, alg) if alg else "fixed rules"
                row = f"    {nbytes} {alg} {fan} {seg}"
                if version == 2:
                    row += f" {maxreq or 0}"
                lines.append(f"{row}  # from {nbytes} B: {name}")
    text = "\n".join(lines) + "\n"
    problems = check(text, installed)
    if problems:  # a bug of ours, never a file Open MPI would ignore
        raise RulesError("refusing to write an Open MPI rules file Open MPI would not read as "
                         "meant: " + "; ".join(f"line {ln}: {p}" for ln, p in problems))
    return Export(text, mca, notes)


# Open MPI 6's JSON rules (docs/tuning-apps/tuned_dynamic_file_schema.json in Open MPI's
# repository; facts in docs/rules-files.md): the collectives' keys, where they differ
JSON_VERSION = 3
JSON_NAMES = {"reduce_scatter": "reducescatter", "reduce_scatter_block": "reducescatterblock"}


def _as_any(lo: int, hi: int | None, msg: list, anyp: list) -> bool:
    """Whether the `any` plan gives `msg` at every communicator size lo..hi."""
    for i, (cs, m) in enumerate(anyp):
        end = anyp[i + 1][0] - 1 if i + 1 < len(anyp) else None
        overlaps = (end is None or end >= lo) and (hi is None or cs <= hi)
        if overlaps and m != msg:
            return False
    return bool(anyp) and anyp[0][0] <= lo


def _inf(v: int | None) -> int | str:
    return "inf" if v is None else v


def to_json(rs: RuleSet, installed: Installed) -> Export:
    """Open MPI 6's JSON rules file (rule_file_version 3) for `rs`: per collective a list
    of communicator-size rules, first match wins, each with comm_size_min/max,
    comm_rank_distribution (one-per-node and single-node blocks first, where the rules
    have ppn= keys, then any) and its message rules (msg_size_min/max inclusive, alg by
    name, faninout, seg_size, reqs); native is alg 0 ("ignore": the library's own
    decision), written so that a range never falls through to another rule."""
    unnamed = [c for c in rs.collectives() if JSON_NAMES.get(c, c) not in JSON_COLLS]
    if unnamed:  # the published schema has no key for it (allgatherv)
        raise RulesError(f"{', '.join(unnamed)} rules cannot be written in Open MPI's JSON "
                         f"rules: its schema names no {', '.join(unnamed)} key; the classic "
                         f"file (the default --format) takes them")
    ppn = [r for r in rs.rules if r.ppn is not None]
    pl = plan(rs, installed, DISTS if ppn else ("any",))
    notes = list(pl.notes)
    odd = sorted({f"ppn={r.ppn[0]}-{'' if r.ppn[1] is None else r.ppn[1]}" for r in ppn
                  if r.ppn != (1, 1)})
    if odd:
        notes.append(f"rules with {', '.join(odd)}: Open MPI's JSON names three rank "
                     "distributions only (any, one-per-node, single-node); they are written "
                     "where they coincide with one process per node (ppn 1) or a single node "
                     "(ppn = communicator size); elsewhere the rules without ppn= apply")
    colls: dict[str, list] = {}
    for coll, by_dist in pl.colls.items():
        entries = []
        anyp = by_dist.get("any", [])
        for dist in (d for d in DISTS if d in by_dist):
            merged = by_dist[dist]
            for i, (cs, msg) in enumerate(merged):
                hi = merged[i + 1][0] - 1 if i + 1 < len(merged) else None
                if dist != "any" and _as_any(cs, hi, msg, anyp):
                    continue  # what the rules for any distribution say there too
                rules = []
                for j, (nbytes, (alg, fan, seg, maxreq)) in enumerate(msg):
                    rule: dict = {"msg_size_min": nbytes,
                                  "msg_size_max": _inf(msg[j + 1][0] - 1 if j + 1 < len(msg)
                                                       else None),
                                  "alg": installed.name(coll, alg) if alg else 0}
                    if fan:
                        rule["faninout"] = fan
                    if seg:
                        rule["seg_size"] = seg
                    if maxreq:
                        rule["reqs"] = maxreq
                    rules.append(rule)
                entry: dict = {"comm_size_min": cs,
                               "comm_size_max": _inf(merged[i + 1][0] - 1
                                                     if i + 1 < len(merged) else None)}
                if dist != "any":
                    entry["comm_rank_distribution"] = dist
                entry["rules"] = rules
                entries.append(entry)
        colls[JSON_NAMES.get(coll, coll)] = entries
    doc = {"rule_file_version": JSON_VERSION, "module": "tuned", "collectives": colls}
    problems = check_json(doc)
    if problems:  # a bug of ours
        raise RulesError("refusing to write an Open MPI JSON rules file that breaks the "
                         "schema: " + "; ".join(problems))
    return Export(json.dumps(doc, indent=2) + "\n", pl.mca, notes)


JSON_COLLS = ("allgather", "allreduce", "alltoall", "alltoallv", "alltoallw", "barrier",
              "bcast", "exscan", "gather", "gatherv", "reduce", "reducescatter",
              "reducescatterblock", "scan", "scatter", "scatterv", "neighbor_allgather",
              "neighbor_allgatherv", "neighbor_alltoall", "neighbor_alltoallv",
              "neighbor_alltoallw")


def check_json(doc) -> list[str]:
    """The schema's facts (docs/rules-files.md) checked on a parsed JSON rules file: the
    problems, none for a good one."""
    out: list[str] = []

    def int_or_inf(v, where):
        if not ((isinstance(v, int) and not isinstance(v, bool)) or v in ("inf", "INF", "Inf")):
            out.append(f"{where}: {v!r} is neither an integer nor inf")

    if not isinstance(doc, dict):
        return ["the file is not a JSON object"]
    for k in ("rule_file_version", "module", "collectives"):
        if k not in doc:
            out.append(f"'{k}' is missing")
    extra = set(doc) - {"rule_file_version", "module", "collectives", "$schema"}
    if extra:
        out.append(f"unknown keys {sorted(extra)}")
    if not isinstance(doc.get("rule_file_version", 0), (int, float)):
        out.append("rule_file_version is not a number")
    if not isinstance(doc.get("module", ""), str):
        out.append("module is not a string")
    colls = doc.get("collectives", {})
    if not isinstance(colls, dict):
        return out + ["collectives is not an object"]
    for name, entries in colls.items():
        if name not in JSON_COLLS:
            out.append(f"collective '{name}' is not one the schema names")
        if not isinstance(entries, list):
            out.append(f"{name}: not an array")
            continue
        for i, e in enumerate(entries):
            w = f"{name}[{i}]"
            if not isinstance(e, dict) or "rules" not in e:
                out.append(f"{w}: an object with 'rules' is required")
                continue
            extra = set(e) - {"comm_size_min", "comm_size_max", "comm_rank_distribution",
                              "rules"}
            if extra:
                out.append(f"{w}: unknown keys {sorted(extra)}")
            for k in ("comm_size_min", "comm_size_max"):
                if k in e:
                    int_or_inf(e[k], f"{w}.{k}")
            if e.get("comm_rank_distribution", "any") not in ("any", "one-per-node",
                                                              "single-node"):
                out.append(f"{w}: comm_rank_distribution {e['comm_rank_distribution']!r}")
            for j, r in enumerate(e["rules"] if isinstance(e["rules"], list) else []):
                wr = f"{w}.rules[{j}]"
                if not isinstance(r, dict) or "alg" not in r:
                    out.append(f"{wr}: an object with 'alg' is required")
                    continue
                extra = set(r) - {"msg_size_min", "msg_size_max", "alg", "reqs", "faninout",
                                  "seg_size", "bine_imp"}
                if extra:
                    out.append(f"{wr}: unknown keys {sorted(extra)}")
                for k in ("msg_size_min", "msg_size_max"):
                    if k in r:
                        int_or_inf(r[k], f"{wr}.{k}")
                if not isinstance(r["alg"], (str, int)) or isinstance(r["alg"], bool):
                    out.append(f"{wr}.alg: a string or an integer")
                for k in ("reqs", "faninout", "seg_size"):
                    if k in r and (not isinstance(r[k], int) or isinstance(r[k], bool)):
                        out.append(f"{wr}.{k}: an integer")
    return out


def usage(path: str, mca: dict[str, str] | None = None) -> list[str]:
    """The mpirun line that makes Open MPI use the file, and the same as variables."""
    extra = "".join(f" --mca {k} {v}" for k, v in (mca or {}).items())
    return [
        f"mpirun --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename "
        f"{path}{extra} ...",
        "# across nodes add --mca coll ^han (coll/han outranks coll/tuned on communicators "
        "that span nodes, and then the file is not consulted)",
        "# or: export OMPI_MCA_coll_tuned_use_dynamic_rules=1 "
        f"OMPI_MCA_coll_tuned_dynamic_rules_filename={path}"
        + "".join(f" OMPI_MCA_{k}={v}" for k, v in (mca or {}).items()),
    ]


def rows(pf: ParsedFile, installed: Installed | None = None) -> list[dict]:
    """Rows for a readable table: collective, comm sizes, bytes, algorithm."""
    rows = []
    for ce in pf.colls:
        coll = ID_COLLS.get(ce.coll_id, f"id {ce.coll_id}")
        for j, entry in enumerate(ce.comms):
            np_hi = ce.comms[j + 1].comm_size - 1 if j + 1 < len(ce.comms) else None
            for k, mr in enumerate(entry.rules):
                hi = entry.rules[k + 1].msgbytes - 1 if k + 1 < len(entry.rules) else None
                if mr.alg == 0:
                    name = "fixed rules (0)"
                else:
                    nm = installed.name(coll, mr.alg) if installed else None
                    name = f"{nm} ({mr.alg})" if nm else f"algorithm {mr.alg}"
                rows.append({"line": mr.line, "collective": coll, "np_min": entry.comm_size,
                             "np_max": np_hi, "bytes_min": mr.msgbytes, "bytes_max": hi,
                             "algorithm": name, "faninout": mr.faninout, "segsize": mr.segsize,
                             "maxreq": mr.maxreq})
    return rows


def looks_like(text: str) -> bool:
    body = re.sub(r"#[^\n]*", "", text)
    return bool(body.strip()) and (text.startswith("rule-file-version")
                                   or re.fullmatch(r"[\s0-9xXa-fA-F+-]*", body) is not None
                                   or bool(re.match(r"\s*\d", body)))


__all__ = ["COLL_IDS", "Installed", "parse", "check", "to_text", "usage", "rows"]


def mca_lines(text: str) -> dict[str, str]:
    """The MCA parameters a file written by colltune says it needs (`# mca: KEY VALUE`)."""
    out = {}
    for m in re.finditer(r"^# mca: (coll_tuned_\w+) (\S+)$", text, re.M):
        out[m.group(1)] = m.group(2)
    return out
