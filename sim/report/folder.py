"""Which folder a run may replace, and replacing it safely.

A report folder is replaced whole, so capsim must never take a folder that is not its
own. :class:`ReportFolder` claims the destination before a run simulates anything::

    claim   the folder is missing, empty, or capsim's own output of the same kind and
            nothing else: its marker ``.capsim-report`` names the kind (a run report
            or a calibration) and lists the files capsim wrote, and the folder holds
            only the marker and those files (a report from before markers listed
            files: only the names that kind of report has). Anything else -- a
            summary.json copied into a project folder, a report another command wrote,
            one file the user added -- is a CapsimError naming the folder and what is
            in the way; nothing is touched
    lock    ``.NAME.lock`` beside the folder, held with ``flock`` until the run ends;
            a second run on the same folder fails at once (exit 2) instead of
            silently replacing the first one's report. The lock file holds the
            holder's process id: a lock still held although that process is dead
            (its orphaned workers, from a capsim before workers died with their
            parent) is taken over -- the old lock file is moved aside and a new one
            locked. Taking, checking and taking over happen under a short ``flock``
            of the parent folder, so two runs never both take over. Worker processes
            close their copy of the lock (:mod:`sim.core.workers`).
    tidy    leftovers of a killed run: a report moved aside as ``.NAME.old-*/NAME``
            with no ``NAME`` in place is put back, then every ``.NAME.staging-*`` and
            ``.NAME.old-*`` folder is removed (the lock proves no run is using them)
    swap    the complete staging folder takes the folder's place: the old report is
            moved aside, the staging folder renamed in, the old one deleted; if the
            rename fails the old report is moved back

A symbolic link given as the destination is followed: the folder it points to is the
one claimed, locked and replaced (beside it), and the link is left as it was. A broken
link is refused.

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
import tomllib
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

from ..core.errors import CapsimError
from ..core.outputs import unwritable_reason
from ..core.version import __version__
from ..core.workers import hold_lock_fd, release_lock_fd

MARKER = ".capsim-report"


@dataclass(frozen=True)
class Kind:
    """A kind of output folder: who writes it and the names it may hold (for a folder
    whose marker predates the list of files)."""

    name: str
    title: str  # "a capsim report folder"
    command: str  # the command that writes it
    names: tuple[str, ...]  # glob patterns of the files it writes
    evidence: str  # the file that shows a marker-less folder is of this kind


KINDS: dict[str, Kind] = {
    "run": Kind("run", "a capsim report folder", "capsim run",
                ("summary.json", "requests.parquet", "windows.parquet", "streams.parquet",
                 "report.md", "report.html", "*.png"), "summary.json"),
    "calibration": Kind("calibration", "a capsim calibration folder",
                        "capsim calibrate",
                        ("calibration.json", "pricing.toml", "report.md", "report.html",
                         "*.png"), "calibration.json"),
}
"""The kinds of folder :class:`ReportFolder` replaces whole (a sweep folder is resumed in
place, never replaced: see :mod:`sim.jobs.sweep_store`)."""


def marker_text(kind: str = "run", files: list[str] | None = None) -> str:
    """The marker file's content: the kind and the files written (no time stamp: reruns
    stay byte-identical). TOML."""
    k = KINDS[kind]
    listed = ", ".join(json.dumps(f) for f in sorted(files or []))
    return (f"# This folder is {k.title}: `{k.command}` replaces it whole, and\n"
            "# only while it holds nothing but this marker and the files listed below.\n"
            f"capsim_version = {json.dumps(__version__)}\n"
            f"kind = {json.dumps(kind)}\n"
            f"files = [{listed}]\n")


@dataclass(frozen=True)
class Found:
    """What an existing folder is: its kind (None: not capsim's) and what capsim did not
    write in it."""

    kind: str | None
    foreign: tuple[str, ...] = ()


def _capsim_summary(folder: Path) -> bool:
    try:
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(summary, dict) and "capsim_version" in summary and "tiers" in summary


def inspect(folder: Path) -> Found:
    """The kind of ``folder`` and the entries in it capsim did not write (see the module
    docstring); ``Found(None)`` when nothing says capsim wrote it."""
    marker = folder / MARKER
    kind, files = None, None
    if marker.is_file() and not marker.is_symlink():
        try:
            doc = tomllib.loads(marker.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            doc = {}  # a marker from before markers were TOML: the kind is inferred
        if doc.get("kind") in KINDS:
            kind = doc["kind"]
        if isinstance(doc.get("files"), list) and all(isinstance(f, str) for f in doc["files"]):
            files = set(doc["files"])
        if kind is None:
            kind = next((k.name for k in KINDS.values() if (folder / k.evidence).is_file()),
                        None)
    elif _capsim_summary(folder):
        kind = "run"  # a report from before markers existed
    if kind is None:
        return Found(None)
    patterns = KINDS[kind].names
    foreign = []
    for entry in sorted(folder.iterdir()):
        name = entry.name
        if name == MARKER:
            continue
        ours = name in files if files is not None else any(fnmatch(name, p) for p in patterns)
        if not ours or entry.is_symlink() or not entry.is_file():
            foreign.append(name + ("/" if entry.is_dir() else ""))
    return Found(kind, tuple(foreign))


def is_report(folder: Path, kind: str = "run") -> bool:
    """Whether ``folder`` is capsim's output of ``kind`` and nothing else."""
    found = inspect(folder)
    return found.kind == kind and not found.foreign


def _holder(fd: int) -> int | None:
    """The process id a lock file records (None: none recorded, an old lock file)."""
    try:
        return int(os.pread(fd, 32, 0).decode("ascii").strip())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def _remove_if_unlocked(lock: Path) -> None:
    """Remove a lock file moved aside once nothing holds it any more."""
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.unlink(missing_ok=True)
    except OSError:
        pass  # still held by what outlived its run
    finally:
        os.close(fd)


class ReportFolder:
    """The destination of a run's report, claimed and locked for the run's duration.

    Use as a context manager around the whole run (simulation included), then
    :meth:`replace_with` a complete staging folder made by :meth:`staging`.
    """

    def __init__(self, out_dir: str | Path, kind: str = "run") -> None:
        self.kind = KINDS[kind]
        self.shown = str(out_dir)
        # Lexically absolute (".." folded), then a symbolic link given as --out followed:
        # the folder it points to is the report folder (claimed, locked and replaced
        # beside it), and the link stays a link (it was replaced by a real folder).
        self.path = Path(os.path.abspath(out_dir))
        if self.path.is_symlink() and self.path.exists():
            self.path = Path(os.path.realpath(self.path))
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
            guard = os.open(self.parent, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as err:
            why = unwritable_reason(self.path) or err.strerror
            raise CapsimError(f"cannot write the report folder: {why}; expected a folder "
                              "that can be created and written", file=self.shown) from None
        try:
            fcntl.flock(guard, fcntl.LOCK_EX)  # short: only while taking the lock
            self._lock_fd = self._take_lock()
        finally:
            os.close(guard)
        hold_lock_fd(self._lock_fd)
        try:
            self._check_ours()  # again, now that no other run can change it
            self._tidy()
        except BaseException:
            self._unlock()
            raise
        return self

    def _open_lock(self) -> int:
        try:
            return os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as err:
            raise CapsimError(f"cannot write the report folder: {err.strerror}",
                              file=self.shown) from None

    def _take_lock(self) -> int:
        """The locked descriptor of the lock file, holding this process's id; a lock of a
        dead process is taken over (module docstring). Called under the parent's guard."""
        fd = self._open_lock()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            if holder is None or _alive(holder):
                raise CapsimError("another capsim run is writing this report folder; wait "
                                  "for it to finish or choose another --out",
                                  file=self.shown) from None
            # Held by what outlived process `holder`: move that lock file aside for good.
            os.replace(self.lock_path, self.parent / f".{self.name}.lock.stale-{holder}")
            fd = self._open_lock()
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a new file: nobody else has it
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return fd

    def __exit__(self, *exc) -> None:
        self._unlock()

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            release_lock_fd(self._lock_fd)
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = None

    def check(self) -> None:
        """Raise the CapsimError :meth:`__enter__` would, touching nothing: for a command
        to refuse a folder before hours of work (``__enter__`` checks again)."""
        self._check_ours()

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
        if not any(p.iterdir()):
            return
        found = inspect(p)
        want = self.kind
        if found.kind is None:
            what = ("is a capsim sweep folder" if (p / "sweep-manifest.json").exists()
                    else f"exists and is not {want.title} (no {MARKER} marker)")
            raise CapsimError(
                f"{what}, so `{want.command}` does not replace it; nothing was changed. "
                "Choose another --out, or empty or remove this folder", file=self.shown)
        if found.kind != want.name:
            raise CapsimError(
                f"is {KINDS[found.kind].title}, not {want.title}: `{want.command}` replaces "
                "only its own kind; nothing was changed. Choose another --out",
                file=self.shown)
        if found.foreign:
            shown = ", ".join(found.foreign[:5]) + (", ..." if len(found.foreign) > 5 else "")
            raise CapsimError(
                f"holds files capsim did not write ({shown}), so it is not replaced (that "
                "would delete them); nothing was changed. Move them out or choose another "
                "--out", file=self.shown)

    def _leftovers(self, kind: str) -> list[Path]:
        return sorted(self.parent.glob(f".{glob.escape(self.name)}.{kind}-*"))

    def _tidy(self) -> None:
        """Undo and remove what a killed run left beside the folder (the lock is held)."""
        if not self.path.exists() and not self.path.is_symlink():
            moved = [d / self.name for d in self._leftovers("old")
                     if (d / self.name).is_dir() and is_report(d / self.name, self.kind.name)]
            if moved:
                newest = max(moved, key=lambda d: d.stat().st_mtime)
                os.replace(newest, self.path)
        for leftover in self._leftovers("staging") + self._leftovers("old"):
            if leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover, ignore_errors=True)
        for stale in self.parent.glob(f".{glob.escape(self.name)}.lock.stale-*"):
            _remove_if_unlocked(stale)

    def staging(self) -> Path:
        """A new empty staging folder beside the destination, with the marker in it."""
        self._require_lock()
        folder = Path(tempfile.mkdtemp(prefix=f".{self.name}.staging-", dir=self.parent))
        folder.chmod(0o755)  # mkdtemp makes it private; a report folder is not
        (folder / MARKER).write_text(marker_text(self.kind.name), encoding="utf-8")
        return folder

    def replace_with(self, staging: Path) -> None:
        """Put the complete ``staging`` folder in the destination's place (its marker
        now lists every file in it)."""
        self._require_lock()
        files = [e.name for e in staging.iterdir() if e.name != MARKER]
        (staging / MARKER).write_text(marker_text(self.kind.name, files), encoding="utf-8")
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

