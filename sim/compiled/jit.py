"""numba, imported here only: ``njit`` with the on-disk cache in a folder the user owns.

numba caches compiled functions next to their source by default, which an installed
package's folder may not allow; the cache
(:func:`~sim.compiled.cache_dir.numba_cache_dir`) is ``$NUMBA_CACHE_DIR`` if set, else
``capsim/numba`` under the user's cache folder (``$XDG_CACHE_HOME`` or ``~/.cache``), set
before numba is imported so that every worker process of a run shares it.
"""

from __future__ import annotations

import os

from .cache_dir import numba_cache_dir

os.environ.setdefault("NUMBA_CACHE_DIR", numba_cache_dir())

import numba  # noqa: E402

#: Compile once per machine: every function is cached; no fastmath (the rows must be
#: the SimPy model's, bit for bit), no parallelism (a run is one sequential loop).
njit = numba.njit(cache=True, nogil=True, fastmath=False, boundscheck=False,
                  error_model="numpy")
#: For the loop's helpers: inlined where they are called (numba's IR inlining), so a call
#: passes no arrays (a call that does costs reference counting on each).
njit_inline = numba.njit(cache=True, nogil=True, fastmath=False, boundscheck=False,
                         error_model="numpy", inline="always")
#: For the event loop: no reference counting (it allocates nothing; every array it
#: touches is the caller's, alive for the call), which would otherwise cost two atomic
#: operations per array view or tuple element it takes, a quarter of its time.
njit_norc = numba.njit(cache=True, nogil=True, fastmath=False, boundscheck=False,
                       error_model="numpy", _nrt=False)
