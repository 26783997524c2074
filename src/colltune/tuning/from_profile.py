"""A study from an application's profile: what to measure so that the rules fit the
program (`colltune study from-profile`, `colltune autotune`).

The profile (rules/interpose.py read_profile, written by the interposition library at
MPI_Finalize) gives the program's calls and times per collective, communicator size,
size bucket and algorithm. `plan` groups them into cells (collective, communicator
size, bucket), orders the cells by the time the program spent in them and takes cells
until a share of the program's collective time is covered. The cells colltune can change
are measured: at the sizes the program really used (the bucket's observed sizes, which
the library records; the bucket's geometric centre for a profile written before it
did), with every colltune algorithm, the library's default (`native`), parameter grids
of the segmented and k-ary ones around those sizes, and optionally the MPI library's own
algorithms. Cells colltune cannot change (a collective it has no algorithms for, a
communicator of one process) are listed, not measured. `study_text` writes the plan as
a study file that loads through the one study parser (studies/study.py), recording the
profile it came from.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from colltune.base.collectives import COLLECTIVES, mpi_name
from colltune.base.errors import ColltuneError
from colltune.base.units import fmt_size
from colltune.drivers import registry
from colltune.rules import interpose
from colltune.studies import study as study_mod

DEFAULT_SHARE = 0.90
SEGSIZES = (1024, 4096, 16384, 65536, 262144)  # the segsize grid, below the largest size
RADICES = (2, 4, 8)
FANOUTS = (2, 4)


class ProfileStudyError(ColltuneError):
    """A profile that gives no study (nothing recorded, a bad share)."""


@dataclass
class Cell:
    collective: str
    np: int
    size_min: int  # the bucket
    size_max: int
    calls: int
    total_s: float
    sizes: list[int]  # the sizes the program used (observed), or the bucket's centre
    observed: bool  # sizes as the library recorded them (else the centre: an old profile)
    capped: bool = False  # more sizes than the library keeps were seen
    share: float = 0.0  # of the program's collective time
    why_not: str = ""  # why it is not measured ("": measured)
    call: str = ""  # an entry point colltune does not run (MPI_Iallreduce, ...)

    @property
    def measured(self) -> bool:
        return not self.why_not

    @property
    def label(self) -> str:
        return self.call or self.collective

    def bucket_text(self) -> str:
        if self.call:
            return ""
        return (fmt_size(self.size_min) if self.size_min == self.size_max
                else f"{fmt_size(self.size_min)}..{fmt_size(self.size_max)}")


@dataclass
class ProfilePlan:
    source: str  # the profile's path
    sha256: str
    share: float  # asked
    total_s: float  # the program's collective time (per rank, averaged)
    cells: list[Cell]  # taken, in order of time
    left: list[Cell] = field(default_factory=list)  # beyond the share
    np_world: int = 0

    @property
    def covered(self) -> float:
        return sum(c.share for c in self.cells)

    @property
    def measured(self) -> list[Cell]:
        return [c for c in self.cells if c.measured]

    @property
    def listed(self) -> list[Cell]:
        return [c for c in self.cells if not c.measured]

    def collectives(self) -> list[str]:
        colls = {c.collective for c in self.measured}
        return [c for c in COLLECTIVES if c in colls]

    def processes(self) -> list[int]:
        return sorted({c.np for c in self.measured})

    def sizes(self) -> dict[str, list[int]]:
        out: dict[str, set[int]] = {}
        for c in self.measured:
            out.setdefault(c.collective, set()).update(c.sizes)
        return {k: sorted(out[k]) for k in self.collectives()}


def _centre(lo: int, hi: int) -> int:
    return math.isqrt(lo * (hi + 1)) if lo > 0 else lo


def cells_of(profile) -> list[Cell]:
    """The profile's entries merged per (collective, communicator size, bucket): calls and
    times summed over the algorithms that ran there, observed sizes united. Calls the
    library took (an intercommunicator, arguments the algorithms do not take) and the
    collectives colltune does not run (the profile's `observed`) are cells of their own,
    not to be measured."""
    by: dict[tuple, Cell] = {}
    for e in profile.entries:
        passthrough = interpose.PASSTHROUGH.get(e.source)
        key = (e.collective, e.np, e.size_min, passthrough)
        c = by.get(key)
        sizes = list(getattr(e, "sizes", ()) or ())
        if c is None:
            c = by[key] = Cell(e.collective, e.np, e.size_min, e.size_max, 0, 0.0, [], True)
            if passthrough:
                c.why_not = f"the library takes these calls ({passthrough})"
                c.call = f"{mpi_name(e.collective)} ({passthrough})"
        c.calls += e.calls
        c.total_s += e.total_s
        if sizes:
            c.sizes = sorted(set(c.sizes) | set(sizes))
        else:
            c.observed = False
        c.capped = c.capped or bool(getattr(e, "sizes_capped", False))
    for o in getattr(profile, "observed", None) or []:
        c = by.setdefault((o.call, o.np, None, None),
                          Cell(o.collective, o.np, 0, 0, 0, 0.0, [], True, call=o.call,
                               why_not="not a call colltune runs: the library's own"))
        c.calls += o.starts
        c.total_s += o.total_s
    for c in by.values():
        if not c.observed:  # written before the library recorded sizes
            c.sizes = sorted(set(c.sizes) | {_centre(c.size_min, c.size_max)})
    return sorted(by.values(), key=lambda c: (-c.total_s, COLLECTIVES.index(c.collective)
                                              if c.collective in COLLECTIVES else 99,
                                              c.np, c.size_min))


def plan(profile, source: str | Path, share: float = DEFAULT_SHARE,
         changeable: set[str] | None = None) -> ProfilePlan:
    """The cells that carry `share` of the program's collective time, in order of time.
    `changeable`: the collectives colltune has algorithms for (default: all it
    implements); the others, and communicators of one process, are listed, not
    measured."""
    if not 0 < share <= 1:
        raise ProfileStudyError(f"share {share:g}: a fraction in (0, 1], e.g. 0.9 (90 %)")
    changeable = set(COLLECTIVES) if changeable is None else set(changeable)
    p = Path(source)
    digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
    cells = cells_of(profile)
    total = sum(c.total_s for c in cells)
    if not cells or total <= 0:
        raise ProfileStudyError(f"{source}: the profile records no collective time: nothing "
                                "to measure (was the program run with colltune run --profile?)")
    taken, left, acc = [], [], 0.0
    for c in cells:
        c.share = c.total_s / total
        if acc >= share - 1e-12:
            left.append(c)
            continue
        acc += c.share
        if c.why_not:
            pass
        elif c.collective not in changeable:
            c.why_not = "colltune has no algorithms for it: the library's own runs"
        elif c.np < 2:
            c.why_not = "a communicator of one process: nothing to choose"
        taken.append(c)
    if not any(c.measured for c in taken):
        why = "; ".join(sorted({c.why_not for c in taken}))
        raise ProfileStudyError(f"{source}: the collectives carrying {100 * share:.0f} % of the "
                                f"time are none colltune can change ({why})")
    return ProfilePlan(str(source), digest, share, total, taken, left,
                       int(getattr(profile, "np_world", 0)))


def grid_specs(algorithms, collective: str, sizes: list[int], nps: list[int]) -> list[str]:
    """Parameter grids (studies: `chain:segsize=4K|16K,fanout=2|4`) of the colltune
    algorithms of `collective` with a segment size, radix or fanout, over the values that
    can matter at these sizes and process counts: segment sizes below the largest size
    (a message no larger than its segment is not cut), radices and fanouts below the
    largest process count. `algorithms`: the registry's entries (drivers.registry)."""
    big, most = max(sizes, default=0), max(nps, default=2)
    segs = [s for s in SEGSIZES if s < big][-4:]
    out = []
    for a in algorithms:
        if a.collective != collective or a.name == "native" or getattr(a, "hidden", False):
            continue
        axes = []
        for p in a.params:
            if p.get("kind") != "int":
                continue
            name = p["name"]
            if name == "segsize":
                vals = [s for s in segs if p["min"] <= s <= p["max"]]
            elif name in ("radix", "fanout"):
                vals = [v for v in (RADICES if name == "radix" else FANOUTS)
                        if p["min"] <= v <= p["max"] and v < most]
            else:
                continue
            if len(vals) > 1 or (vals and name == "segsize"):
                axes.append(f"{name}={'|'.join(map(str, vals))}")
        if axes:
            out.append(f"{a.name}:{','.join(axes)}")
    return out


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _toml_list(items) -> str:
    return "[" + ", ".join(_toml_str(x) if isinstance(x, str) else str(x) for x in items) + "]"


def study_name(source: str | Path) -> str:
    stem = Path(source).name
    for suffix in (".json", ".profile"):
        stem = stem.removesuffix(suffix)
    name = re.sub(r"[^A-Za-z0-9_.\-]+", "-", stem).strip("-.") or "app"
    if not name[0].isalnum():
        name = "app" + name
    return f"{name}-tuning"


def study_text(pl: ProfilePlan, *, name: str | None = None, repetitions: int = 5,
               library: bool = True, algorithms=None, mpi: str | None = None) -> str:
    """The plan as a study file (TOML) that loads through studies.study.loads: the cells
    to measure, the candidates, the profile it came from; the cells listed, not
    measured, and those beyond the share as comments. `algorithms`: the registry's
    entries, for the parameter grids (None: no grids)."""
    name = name or study_name(pl.source)
    colls, nps, sizes = pl.collectives(), pl.processes(), pl.sizes()
    lines = [f"# A study from the profile {pl.source} (colltune study from-profile):",
             f"# the cells carrying {100 * pl.covered:.1f} % of the program's collective time "
             f"({pl.total_s:.6g} s a rank; asked {100 * pl.share:.0f} %), in order of time,",
             "# at the sizes the program used. Edit freely; colltune sweep THIS_FILE measures "
             "it.", "#", "#   collective  np  bucket  sizes measured  calls  time share"]
    for c in pl.cells:
        what = ", ".join(fmt_size(s) for s in c.sizes) + (" (and more)" if c.capped else "")
        if not c.observed:
            what += " (bucket centre: profile without sizes)"
        tail = "" if c.measured else f"  NOT MEASURED: {c.why_not}"
        lines.append(f"#   {c.label:<11} {c.np:>3}  {c.bucket_text():<12} {what}  "
                     f"{c.calls}  {100 * c.share:.1f} %{tail}")
    if pl.left:
        rest = sum(c.share for c in pl.left)
        lines.append(f"#   beyond the share: {len(pl.left)} more cells, {100 * rest:.1f} % of "
                     "the time")
    desc = (f"from the profile {Path(pl.source).name}: {', '.join(colls)} at np "
            f"{study_mod.fmt_ints(nps)}, the sizes the program used, "
            f"{100 * pl.covered:.0f} % of its collective time")
    lines += ["[study]", f"name = {_toml_str(name)}", f"description = {_toml_str(desc)}",
              f"collectives = {_toml_list(colls)}"]
    body = []
    for c in colls:
        specs = ["ours", "native"] + (["library"] if library else [])
        if algorithms is not None:
            specs += grid_specs(algorithms, c, sizes[c], nps)
        body.append(f"{c} = {_toml_list(specs)}")
    lines.append("algorithms = { " + ", ".join(body) + " }")
    lines.append("sizes = { " + ", ".join(f"{c} = {_toml_list(sizes[c])}" for c in colls)
                 + " }")
    lines.append(f"processes = {_toml_list(nps)}")
    lines.append(f"repetitions = {repetitions}")
    if mpi:
        lines.append(f"mpi = {_toml_str(mpi)}")
    lines.append(f"from_profile = {{ file = {_toml_str(str(Path(pl.source).resolve()))}, "
                 f"sha256 = {_toml_str(pl.sha256)}, share = {pl.share:g}, "
                 f"covered = {round(pl.covered, 4):g} }}")
    return "\n".join(lines) + "\n"


def changeable(build) -> set[str]:
    """The collectives colltune has algorithms of its own for (beyond native)."""
    return {a.collective for a in registry.algorithms(build) if a.name != "native"}


def make_study(profile_path: str | Path, share: float, build, *, reps: int = 5,
               library: bool = True, name: str | None = None,
               mpi: str | None = None) -> tuple[ProfilePlan, str]:
    """(plan, study text) of a profile file, the text checked by the one study parser."""
    prof = interpose.read_profile(profile_path)
    pl = plan(prof, profile_path, share, changeable(build))
    text = study_text(pl, name=name, repetitions=reps, library=library,
                      algorithms=registry.algorithms(build), mpi=mpi)
    study_mod.loads(text, source=f"{profile_path} (study from it)")
    return pl, text
