"""Output files written whole or not at all.

Every file colltune writes for the user (CSV/JSON records, figures, reports, batch
scripts, exports) goes through here: the data goes to a temporary file next to the
target, which is then renamed over it, so a crash or Ctrl-C never leaves a
half-written file. The result gets the permissions a plain `open(path, "w")` would
give (0666 less the umask, 0777 for scripts), not mkstemp's private 0600.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: str | Path, executable: bool = False) -> Iterator[Path]:
    """`with atomic_path(p) as tmp:` write tmp (by any means); on success it replaces p
    (made executable for whoever may read it with `executable`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, (0o777 if executable else 0o666) & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: str | Path, data: bytes | str, executable: bool = False) -> None:
    """Write text or bytes to path, whole or not at all."""
    with atomic_path(path, executable) as tmp:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
