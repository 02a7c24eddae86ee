"""Which folder a run may replace, and replacing it safely.

A report folder is replaced whole, so capsim must never take a folder that is not its
own. :class:`ReportFolder` claims the destination before a run simulates anything::

    claim   the folder is missing, empty, or a capsim report (it holds the marker
            ``.capsim-report``, or a ``summary.json`` written by capsim before markers
            existed); anything else is a CapsimError naming the folder, nothing touched
    lock    ``.NAME.lock`` beside the folder, held with ``flock`` until the run ends;
            a second run on the same folder fails at once (exit 2) instead of
            silently replacing the first one's report
    tidy    leftovers of a killed run: a report moved aside as ``.NAME.old-*/NAME``
            with no ``NAME`` in place is put back, then every ``.NAME.staging-*`` and
            ``.NAME.old-*`` folder is removed (the lock proves no run is using them)
    swap    the complete staging folder takes the folder's place: the old report is
            moved aside, the staging folder renamed in, the old one deleted; if the
            rename fails the old report is moved back

The lock file stays in place after the run: deleting it would let two runs lock
different files of the same name.
"""

from __future__ import annotations

import fcntl
import glob
import json
import os
import shutil
import tempfile
from pathlib import Path

from ..core.errors import CapsimError
from ..core.version import __version__

MARKER = ".capsim-report"


def marker_text() -> str:
    """The marker file's content (no time stamp: reruns stay byte-identical)."""
    return (f"capsim_version = {__version__}\n"
            "# This folder is a capsim report: `capsim run` replaces it whole.\n")


def is_report(folder: Path) -> bool:
    """Whether ``folder`` is a capsim report: the marker, or a summary.json of capsim's."""
    if (folder / MARKER).is_file():
        return True
    try:
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(summary, dict) and "capsim_version" in summary and "tiers" in summary


class ReportFolder:
    """The destination of a run's report, claimed and locked for the run's duration.

    Use as a context manager around the whole run (simulation included), then
    :meth:`replace_with` a complete staging folder made by :meth:`staging`.
    """

    def __init__(self, out_dir: str | Path) -> None:
        self.shown = str(out_dir)
        # Lexically absolute (".." folded, symlinks kept): a symlinked --out is replaced
        # as a link, never its target.
        self.path = Path(os.path.abspath(out_dir))
        if not self.path.name:
            raise CapsimError("expected a report folder, not the file system root",
                              file=self.shown)
        self.parent = self.path.parent
        self.name = self.path.name
        self._lock_fd: int | None = None

    @property
    def lock_path(self) -> Path:
        """The lock file beside the folder."""
        return self.parent / f".{self.name}.lock"

    def __enter__(self) -> ReportFolder:
        self._check_ours()  # before creating anything beside a folder that is not ours
        try:
            self.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise CapsimError(f"cannot write the report folder: {err.strerror}",
                              file=self.shown) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise CapsimError("another capsim run is writing this report folder; wait for "
                              "it to finish or choose another --out", file=self.shown) from None
        self._lock_fd = fd
        try:
            self._check_ours()  # again, now that no other run can change it
            self._tidy()
        except BaseException:
            self._unlock()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._unlock()

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = None

    def _check_ours(self) -> None:
        p = self.path
        if p.is_symlink() and not p.exists():
            raise CapsimError("is a broken symbolic link; expected a report folder",
                              file=self.shown)
        if not p.exists():
            return
        if not p.is_dir():
            raise CapsimError("exists and is not a folder; nothing was changed",
                              file=self.shown)
        if any(p.iterdir()) and not is_report(p):
            raise CapsimError(
                "exists and is not a capsim report folder (no .capsim-report marker and no "
                "capsim summary.json), so it is not replaced; nothing was changed. Choose "
                "another --out, or empty or remove this folder", file=self.shown)

    def _leftovers(self, kind: str) -> list[Path]:
        return sorted(self.parent.glob(f".{glob.escape(self.name)}.{kind}-*"))

    def _tidy(self) -> None:
        """Undo and remove what a killed run left beside the folder (the lock is held)."""
        if not self.path.exists() and not self.path.is_symlink():
            moved = [d / self.name for d in self._leftovers("old")
                     if (d / self.name).is_dir() and is_report(d / self.name)]
            if moved:
                newest = max(moved, key=lambda d: d.stat().st_mtime)
                os.replace(newest, self.path)
        for leftover in self._leftovers("staging") + self._leftovers("old"):
            if leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover, ignore_errors=True)

    def staging(self) -> Path:
        """A new empty staging folder beside the destination, with the marker in it."""
        self._require_lock()
        folder = Path(tempfile.mkdtemp(prefix=f".{self.name}.staging-", dir=self.parent))
        folder.chmod(0o755)  # mkdtemp makes it private; a report folder is not
        (folder / MARKER).write_text(marker_text(), encoding="utf-8")
        return folder

    def replace_with(self, staging: Path) -> None:
        """Put the complete ``staging`` folder in the destination's place."""
        self._require_lock()
        old = None
        if self.path.exists() or self.path.is_symlink():
            old = Path(tempfile.mkdtemp(prefix=f".{self.name}.old-", dir=self.parent))
            os.replace(self.path, old / self.name)
        try:
            os.replace(staging, self.path)
        except BaseException:
            if old is not None:
                os.replace(old / self.name, self.path)
                shutil.rmtree(old, ignore_errors=True)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

    def _require_lock(self) -> None:
        if self._lock_fd is None:
            raise RuntimeError("ReportFolder used outside its `with` block")

