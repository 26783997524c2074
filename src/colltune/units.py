"""Parsing and printing of sizes and lists as people write them."""

from __future__ import annotations

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
    """'8,64K,1M' or '1..1M' / '1:1M' (powers of two from..to, OSU's -m a:b) or a mix."""
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


def parse_ints(text: str, what: str) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if ".." in part:
            lo, hi = (int(x) for x in part.split("..", 1))
            out.extend(range(lo, hi + 1))
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
