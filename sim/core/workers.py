"""Worker processes that end with their parent, and locks they do not keep alive.

A ``--jobs N`` pool's workers are forked children of the capsim process. Killed with
SIGKILL, the parent cannot stop them itself; before this module its workers ran on as
orphans and, holding a copy of every descriptor the parent had open, kept its report
folder's ``flock`` for good. :func:`process_pool` makes workers that

- ask the kernel to kill them when their parent dies (Linux ``PR_SET_PDEATHSIG``, set
  through ``ctypes`` in the worker's initializer; the worker exits at once if its parent
  is already gone by then), and
- close, first thing, the lock descriptors the parent registered with
  :func:`hold_lock_fd` (closing a copy leaves the parent's lock in place; the lock then
  dies with the parent alone). Each is closed by putting ``/dev/null`` in its place,
  so its number is never reused in the worker.

Elsewhere than Linux the death signal is not available; locks still close in workers.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
from concurrent.futures import ProcessPoolExecutor

PR_SET_PDEATHSIG = 1

_LOCK_FDS: set[int] = set()


def hold_lock_fd(fd: int) -> None:
    """Register ``fd`` as a lock this process holds: workers close their copy."""
    _LOCK_FDS.add(fd)


def release_lock_fd(fd: int) -> None:
    """Forget ``fd`` (before closing it)."""
    _LOCK_FDS.discard(fd)


def _die_with_parent(parent: int) -> None:
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os._exit(1)


def _init_worker(parent: int, lock_fds: tuple[int, ...]) -> None:
    _die_with_parent(parent)
    # Each lock's copy is replaced by /dev/null rather than closed: the number stays
    # taken, so a file this worker opens never gets it, and a close of it by an object
    # inherited from the parent (its spool folder's finalizer, say) closes nothing of
    # the worker's.
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    for fd in lock_fds:
        with contextlib.suppress(OSError):
            os.dup2(null, fd, inheritable=False)
    os.close(null)
    _LOCK_FDS.clear()


def process_pool(jobs: int) -> ProcessPoolExecutor:
    """A pool of ``jobs`` worker processes that end with this process (module docstring)."""
    return ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker,
                               initargs=(os.getpid(), tuple(sorted(_LOCK_FDS))))
