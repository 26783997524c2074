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
from colltune.base.errors import ColltuneError
from colltune.base.paths import cache_dir


def read_text(path: str | Path, error: type[Exception],
              message: str = "{path}: {reason}") -> tuple[Path, str]:
    """The text of an input file, or `error(message)` saying why it cannot be read
    (`{path}` and `{reason}` are filled in)."""
    p = Path(path).expanduser()
    try:
        return p, p.read_text()
    except UnicodeDecodeError:
        raise error(f"{p}: not a text file") from None
    except OSError as exc:
        raise error(message.format(path=p, reason=exc.strerror or exc)) from None


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


def check_writable(path: str | Path, what: str = "output",
                   create_folders: bool = False) -> Path:
    """Before any work: can `path` be written (as write_atomic writes it: a temporary
    file in the same folder, renamed over it)? Creates nothing. `what` names the option
    ("-o"): "-o /no/dir/x.csv: directory /no/dir does not exist", "-o /proc/x.csv:
    directory /proc is not writable". A folder that does not exist is refused (a typo
    should not make folders) unless `create_folders` (colltune's own places, like the
    cache): then the nearest folder that exists counts. Returns the path; raises
    ColltuneError saying why not."""

    p = Path(path).expanduser()
    where = f"{what} {path}"
    if p.is_dir():
        raise ColltuneError(f"{where} is a directory; give a file name")
    folder = p.parent
    if create_folders:
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
    elif not folder.exists():
        raise ColltuneError(f"{where}: directory {folder} does not exist")
    if not folder.is_dir():
        raise ColltuneError(f"{where}: {folder} is not a directory")
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        read_only = False
    if read_only:
        raise ColltuneError(f"{where}: directory {folder} is not writable (read-only file "
                            "system)")
    if can_create_in(folder):
        raise ColltuneError(f"{where}: directory {folder} is not writable")
    return p  # an existing file is replaced by a rename: the folder is what counts


def can_create_in(folder: Path) -> str | None:
    """None when a file can be created in `folder` (tried: permissions do not stop
    root, /proc and the like refuse anyway), else why not."""
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".colltune-probe-")
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    os.unlink(tmp)
    return None


def save_fallback(name: str, data: bytes | str) -> Path:
    """Keep data that could not be written where asked: in the colltune cache
    (`<cache>/unsaved/`), else the temporary folder. Returns where it went."""
    import time


    stamp = time.strftime("%Y%m%d-%H%M%S")
    for folder in (cache_dir() / "unsaved", Path(tempfile.gettempdir())):
        target = folder / f"{stamp}-{os.getpid()}-{name}"
        try:
            write_atomic(target, data)
            return target
        except OSError:
            continue
    raise OSError(f"no place to save {name}")
