"""Parsing and printing of sizes and lists as people write them."""

from __future__ import annotations

import math
import re

_SUFFIX = {"": 1, "B": 1, "K": 1024, "KB": 1024, "KIB": 1024, "M": 1024**2, "MB": 1024**2,
           "MIB": 1024**2, "G": 1024**3, "GB": 1024**3, "GIB": 1024**3}


def parse_size(text: str) -> int:
    """'8', '64K', '1MiB' -> bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).upper() not in _SUFFIX:
        raise ValueError(f"'{text}' is not a size (examples: 8, 4096, 64K, 1M)")
    return int(m.group(1)) * _SUFFIX[m.group(2).upper()]


def parse_sizes(text: str) -> list[int]:
    """Sizes to measure: '8,64K,1M' or '1:1M' (powers of two from..to, OSU's -m a:b;
    '1..1M' is read the same) or a mix."""
    sizes: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if ".." in part or ":" in part:
            lo_s, hi_s = part.split("..", 1) if ".." in part else part.split(":", 1)
            lo, hi = parse_size(lo_s), parse_size(hi_s)
            if lo < 1 or hi < lo:
                raise ValueError(f"size range '{part}': needs 1 <= from <= to")
            v = lo
            while v <= hi:
                sizes.append(v)
                v *= 2
        else:
            sizes.append(parse_size(part))
    if not sizes:
        raise ValueError("no sizes given")
    return sorted(set(sizes))



def add_size_option(parser, default: str | None = None, help: str | None = None) -> None:
    """`--size` of the scripts in benchmarks/ and lab/scripts/ (argparse), as the
    command line has it (README, Options): repeatable, each a list, a range or a mix
    (`--size 8,64K --size 1M`, `--size 1:1M`); every value is checked at once (a bad one
    is one error line) and the values, joined by commas, land in `args.sizes` for
    parse_sizes (`default` when none is given). `--sizes`, their older spelling, stays
    (hidden) so that the dated commands of lab/ still run."""
    import argparse

    class SizeList(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            try:
                parse_sizes(values)
            except ValueError as exc:
                parser.error(f"{option_string} {values}: {exc}")
            given = getattr(namespace, "_sizes_given", False)
            old = getattr(namespace, self.dest, None)
            setattr(namespace, self.dest, f"{old},{values}" if given and old else values)
            namespace._sizes_given = True

    text = help or ("message sizes in bytes, K/M/G = 2^10/2^20/2^30: 8,64K,1M or 1:1M "
                    "(powers of two)")
    text += "; repeatable" + (f" (default {default})" if default and not help else "")
    parser.add_argument("--size", dest="sizes", action=SizeList, default=default,
                        metavar="LIST", help=text)
    parser.add_argument("--sizes", dest="sizes", action=SizeList, default=default,
                        help=argparse.SUPPRESS)


_INT_RANGE = re.compile(r"^(\d+)\s*(?::|\.\.)\s*(\d+)\s*(?:step\s*(\d+)|x\s*(\d+))?$")


def parse_ints(text: str, what: str) -> list[int]:
    """Whole numbers to run, as the command line (--np) and study files (processes) take
    them: '2,4' or '2:8' (every number from..to) or a mix; a range may go in steps,
    '2:48 step 2', or grow by a factor, '2:512 x2'. '2..8' is read as '2:8'."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if ".." in part or ":" in part:
            m = _INT_RANGE.match(part)
            if not m:
                raise ValueError(f"{what}: '{part}' is not a range of whole numbers "
                                 "(write 2:8, 2:48 step 2 or 2:512 x2)")
            lo, hi = int(m.group(1)), int(m.group(2))
            if hi < lo:
                raise ValueError(f"{what}: range '{part}': needs from <= to")
            if m.group(4):
                factor = int(m.group(4))
                if factor < 2:
                    raise ValueError(f"{what}: range '{part}': the factor must be at least 2")
                v = lo
                while v <= hi:
                    out.append(v)
                    v = v * factor if v else hi + 1
            else:
                step = int(m.group(3) or 1)
                if step < 1:
                    raise ValueError(f"{what}: range '{part}': the step must be at least 1")
                out.extend(range(lo, hi + 1, step))
        elif part.isdigit():
            out.append(int(part))
        else:
            raise ValueError(f"{what}: '{part}' is not a whole number")
    if not out:
        raise ValueError(f"{what}: empty list")
    return out


def fmt_size(n: int) -> str:
    """Bytes as people write them: 8, 64K, 1M."""
    for unit, scale in (("G", 1024**3), ("M", 1024**2), ("K", 1024)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


Interval = tuple[float, float]


def parse_selection(text: str | None, what: str, sizes: bool = False) -> list[Interval] | None:
    """Which measured values to keep, as the filters of results, export, fit, model,
    plot and report take them: a list of values and inclusive ranges, '2,4', '2:8',
    '8:' (8 and above), ':64K', '8,64K:1M' (sizes with K/M/G suffixes). '2..8' is
    read as '2:8'. Returns inclusive intervals (a value v is (v, v)); None for no
    filter. Raises ValueError saying what is wrong."""
    if text is None or not str(text).strip():
        return None
    conv = parse_size if sizes else _whole
    out: list[Interval] = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        try:
            if ".." in part or ":" in part:
                lo_s, hi_s = re.split(r"\.\.|:", part, maxsplit=1)
                lo = conv(lo_s) if lo_s.strip() else -math.inf
                hi = conv(hi_s) if hi_s.strip() else math.inf
                if lo > hi:
                    raise ValueError("the low end is above the high end")
                out.append((lo, hi))
            else:
                v = conv(part)
                out.append((v, v))
        except ValueError as exc:
            example = "8,64K or 1:1M" if sizes else "2,4 or 2:8"
            raise ValueError(f"{what} '{text}': {exc} (write {example}; an end of a range "
                             "may be left out)") from None
    return out or None


def _whole(text: str) -> int:
    text = text.strip()
    if not text.isdigit():
        raise ValueError(f"'{text}' is not a whole number")
    return int(text)


def selection_text(intervals: list[Interval] | None, sizes: bool = False) -> str:
    """The selection as the options take it (for messages)."""
    if not intervals:
        return "all"
    f = fmt_size if sizes else str

    def one(lo, hi):
        if lo == hi:
            return f(int(lo))
        return (f(int(lo)) if lo != -math.inf else "") + ":" + (f(int(hi)) if hi != math.inf else "")
    return ",".join(one(lo, hi) for lo, hi in intervals)
