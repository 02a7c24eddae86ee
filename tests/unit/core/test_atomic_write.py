"""One atomic writer for the files a user names (issue 33 item 2): never a fixed
``NAME.tmp`` (``baseline save --out bl.json`` overwrote then removed a user's
``bl.json.tmp``), a symbolic link followed and never replaced, an unwritable destination
a CapsimError naming it, and what a killed write left removed by the next one -- only
that, and only once nothing holds it."""

from __future__ import annotations

import fcntl
import os
import time

import pytest

from sim.core.atomic import LEFTOVER_AGE_S, AtomicFile, remove_leftovers, write_atomic
from sim.core.errors import CapsimError

MINE = b"the user's own file\n"


def _aged(path):
    past = time.time() - LEFTOVER_AGE_S - 60
    os.utime(path, (past, past))


def test_a_users_tmp_file_beside_the_destination_is_never_touched(tmp_path):
    target = tmp_path / "bl.json"
    for name in ("bl.json.tmp", ".bl.json.tmp", ".bl.json.notes.tmp"):
        (tmp_path / name).write_bytes(MINE)
        _aged(tmp_path / name)
    write_atomic(target, "{}\n")
    write_atomic(target, "{}\n")
    assert target.read_text() == "{}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".bl.json.notes.tmp", ".bl.json.tmp", "bl.json", "bl.json.tmp"]
    assert all((tmp_path / n).read_bytes() == MINE
               for n in ("bl.json.tmp", ".bl.json.tmp", ".bl.json.notes.tmp"))


def test_a_symbolic_link_is_followed_not_replaced(tmp_path):
    real = tmp_path / "real.md"
    real.write_text("old")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    written = write_atomic(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new" and written == real


def test_the_mode_of_a_replaced_file_is_kept(tmp_path):
    target = tmp_path / "r.md"
    target.write_text("old")
    target.chmod(0o640)
    write_atomic(target, "new")
    assert target.stat().st_mode & 0o777 == 0o640


def test_an_unwritable_destination_is_a_capsim_error_naming_it(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_bytes(MINE)
    with pytest.raises(CapsimError) as caught:
        write_atomic(blocker / "out.json", "{}", option="--out")
    assert caught.value.file == str(blocker / "out.json") and caught.value.field == "--out"
    assert "cannot write it" in caught.value.message
    assert blocker.read_bytes() == MINE


def test_a_killed_writes_leftover_is_removed_by_the_next_write_a_live_ones_is_kept(tmp_path):
    target = tmp_path / "t.parquet"
    dead = tmp_path / ".t.parquet.0123456789ab.tmp"  # the name pattern of the writer's
    live = tmp_path / ".t.parquet.ba9876543210.tmp"
    fresh = tmp_path / ".t.parquet.aaaaaaaaaaaa.tmp"
    other = tmp_path / ".u.parquet.0123456789ab.tmp"  # another destination's
    for p in (dead, live, fresh, other):
        p.write_bytes(MINE)
    for p in (dead, live, other):
        _aged(p)
    holder = os.open(live, os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)  # a write still going on
    try:
        assert remove_leftovers(target) == [dead]
        assert live.exists() and fresh.exists() and other.exists()
    finally:
        os.close(holder)


def test_leaving_without_commit_removes_the_temporary_file(tmp_path):
    target = tmp_path / "x.json"
    with AtomicFile(target) as f:
        f.write_bytes(b"half")
        tmp = f.tmp
        assert tmp.name.startswith(".x.json.") and tmp.exists()
    assert not tmp.exists() and not target.exists()
    assert list(tmp_path.iterdir()) == []
