"""Output files: whole or not at all, with the permissions of a plain open()."""

import os
import stat

import pytest

from colltune.base.files import atomic_path, write_atomic


def _mode(p):
    return stat.S_IMODE(p.stat().st_mode)


def test_write_atomic_replaces_whole_and_honours_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        p = tmp_path / "sub" / "out.json"
        write_atomic(p, "first")
        write_atomic(p, b"second")
        assert p.read_text() == "second"
        assert _mode(p) == 0o644  # not mkstemp's private 0600
        s = tmp_path / "job.sh"
        write_atomic(s, "#!/bin/sh\n", executable=True)
        assert _mode(s) == 0o755
    finally:
        os.umask(old)
    assert sorted(x.name for x in (tmp_path / "sub").iterdir()) == ["out.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    p = tmp_path / "out.csv"
    p.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_path(p) as tmp:
            tmp.write_text("half")
            raise RuntimeError("crash in the middle")
    assert p.read_text() == "old"
    assert [x.name for x in tmp_path.iterdir()] == ["out.csv"]


def test_check_writable_refuses_a_missing_or_unwritable_folder(tmp_path):
    from colltune.base.errors import ColltuneError
    from colltune.base.files import check_writable

    ok = tmp_path / "x.csv"
    assert check_writable(ok, "-o") == ok and not ok.exists()  # creates nothing
    missing = tmp_path / "no" / "dir" / "x.csv"
    with pytest.raises(ColltuneError) as exc:
        check_writable(missing, "-o")
    assert str(exc.value) == f"-o {missing}: directory {missing.parent} does not exist"
    assert not (tmp_path / "no").exists()
    # colltune's own places (the cache) may make their folders
    assert check_writable(missing, "the calibration file", create_folders=True) == missing
    assert not (tmp_path / "no").exists()
    with pytest.raises(ColltuneError, match=r"^-o /proc/x\.csv: directory /proc is not writable"):
        check_writable("/proc/x.csv", "-o")
    with pytest.raises(ColltuneError, match="is a directory"):
        check_writable(tmp_path, "-o")
    ok.write_text("a file")
    with pytest.raises(ColltuneError, match=f"^-o {ok}/y.csv: {ok} is not a directory$"):
        check_writable(ok / "y.csv", "-o")
