"""Writing a file the user named, atomically, without touching any other file of theirs.

:class:`AtomicFile` writes to a temporary file beside the destination and renames it
over the destination when complete, so a reader never sees half a file and a killed
write leaves the old file in place. The temporary file:

* has a name of its own, ``.NAME.<12 hex>.tmp``, created with ``O_EXCL`` -- never a
  fixed ``NAME.tmp`` that could be the user's file (``baseline save --out bl.json``
  overwrote and then removed a user's ``bl.json.tmp``);
* is ``flock``-ed while it is written, so a write killed before it could remove its
  temporary file leaves one that nothing holds: the next write of the same
  destination removes it (:func:`remove_leftovers`; only files of exactly that name
  pattern, unlocked and untouched for :data:`LEFTOVER_AGE_S`).

A destination that is a symbolic link is followed (the file it points to is written),
never replaced by a file. A destination that cannot be written is a
:class:`~sim.core.errors.CapsimError` naming it and the option it came from, exit 2.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import stat
import time
from pathlib import Path

from .errors import CapsimError

LEFTOVER_AGE_S = 2.0
"""A temporary file this long untouched and unlocked is a killed write's leftover (the
age closes the instant between its creation and its lock)."""


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(r"\." + re.escape(name) + r"\.[0-9a-f]{12}\.tmp")


def destination(path: str | os.PathLike) -> Path:
    """Where writing ``path`` lands: a symbolic link's target (followed), else ``path``."""
    p = Path(path)
    return Path(os.path.realpath(p)) if p.is_symlink() else p


def cannot_write(path: str | os.PathLike, err: OSError, option: str | None = None,
                 ) -> CapsimError:
    """The CapsimError for an output that cannot be written."""
    why = err.strerror or type(err).__name__
    return CapsimError(f"cannot write it ({why}); expected a writable file name",
                       file=str(path), field=option)


def remove_leftovers(target: Path) -> list[Path]:
    """Remove the temporary files killed writes of ``target`` left (module docstring)."""
    parent = target.parent if str(target.parent) else Path(".")
    pattern = _pattern(target.name)
    removed = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        if not pattern.fullmatch(entry.name):
            continue
        path = Path(entry.path)
        try:
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode) or time.time() - info.st_mtime < LEFTOVER_AGE_S:
                continue
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # a live write's
        else:
            path.unlink(missing_ok=True)
            removed.append(path)
        finally:
            os.close(fd)
    return removed


class AtomicFile:
    """A temporary file beside ``path``'s destination, renamed over it by :meth:`commit`.

    Use as a context manager; write to :attr:`tmp` (by name: it exists, empty), then
    :meth:`commit`. Leaving the block without committing removes the temporary file.
    ``option`` names the command-line option in error messages; ``mode``: the file's
    permissions from its creation on (default: the usual ones, or those of the file it
    replaces).
    """

    def __init__(self, path: str | os.PathLike, option: str | None = None,
                 make_parents: bool = True, mode: int | None = None) -> None:
        self.shown = str(path)
        self.option = option
        self.mode = mode
        self.target = destination(path)
        self.make_parents = make_parents
        self.tmp: Path | None = None
        self._fd: int | None = None

    def __enter__(self) -> AtomicFile:
        parent = self.target.parent if str(self.target.parent) else Path(".")
        try:
            if self.make_parents:
                parent.mkdir(parents=True, exist_ok=True)
            remove_leftovers(self.target)
            while True:
                tmp = parent / f".{self.target.name}.{secrets.token_hex(6)}.tmp"
                try:
                    # a plain exclusive create (not mkstemp): the usual permissions
                    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                                 0o666)
                    break
                except FileExistsError:
                    continue
            fcntl.flock(fd, fcntl.LOCK_EX)
            if self.mode is not None:
                os.fchmod(fd, self.mode)
        except OSError as err:
            raise cannot_write(self.shown, err, self.option) from None
        self.tmp, self._fd = tmp, fd
        return self

    def write_bytes(self, data: bytes) -> None:
        """Write ``data`` as the whole file."""
        try:
            self.tmp.write_bytes(data)
        except OSError as err:
            raise cannot_write(self.shown, err, self.option) from None

    def commit(self) -> Path:
        """Rename the complete temporary file over the destination; return it."""
        try:
            if self.mode is None:
                with contextlib.suppress(FileNotFoundError):  # keep a replaced file's mode
                    os.chmod(self.tmp, stat.S_IMODE(os.stat(self.target).st_mode))
            os.replace(self.tmp, self.target)
        except OSError as err:
            raise cannot_write(self.shown, err, self.option) from None
        self._close()
        return self.target

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def discard(self) -> None:
        """Remove the temporary file (nothing is written at the destination)."""
        if self.tmp is not None and self._fd is not None:
            with contextlib.suppress(OSError):
                self.tmp.unlink()
        self._close()

    def __exit__(self, *exc) -> None:
        self.discard()


def write_atomic(path: str | os.PathLike, data: bytes | str, option: str | None = None,
                 ) -> Path:
    """Write ``data`` (text as UTF-8) as the whole file at ``path``, atomically; return
    the file written (a symbolic link's target)."""
    with AtomicFile(path, option) as f:
        f.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        return f.commit()
