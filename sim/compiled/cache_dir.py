"""Where numba caches the compiled engine, known without importing numba (its own module
so that :mod:`sim.compiled.jit`, which imports numba, and :mod:`sim.compiled.choice`,
which must not, both read it without importing each other)."""

from __future__ import annotations

import os
from pathlib import Path


def numba_cache_dir() -> str:
    """Where numba caches the compiled engine: ``$NUMBA_CACHE_DIR`` if set, else
    ``capsim/numba`` in the user's cache folder (``$XDG_CACHE_HOME``, else ``~/.cache``):
    a folder the user can write, shared by every worker process (they inherit it)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return os.environ["NUMBA_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return str(Path(base) / "capsim" / "numba")
