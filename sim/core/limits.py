"""Bounds on what one typo can make capsim spend: processes, replications, precision,
time.

A user who types ``--jobs 1000`` for ``--jobs 10``, ``--tolerance 1e-17`` for ``1e-2``
or ``--time-scale inf`` should get a one-line error naming the option and the bound, not
a machine that stops answering. Each bound is far beyond any useful value:

- :func:`max_jobs`: worker processes. A simulation is CPU-bound, so workers beyond the
  CPUs only share them while each holds its own memory;
- :data:`MAX_REPLICATIONS`: replications of one run (a baseline, a sweep point, a
  headroom step); the 95 % half-width of 100 replications is already a tenth of one;
- :data:`MIN_RELATIVE_TOLERANCE`: the precision of a bisection (``capsim headroom``);
  below 0.1 % the answer is finer than the noise of one run, and below about 1e-16 the
  bisection can never end (``1 + tolerance == 1`` in floating point);
- :data:`MAX_TIME_SCALE`: service seconds per wall second of ``capsim serve`` and
  ``capsim drive``; at 1000 a 12 s window lasts 12 ms, the timer resolution a live
  server can still honour.

Import-free (``capsim --help`` reads them through :mod:`sim.cli.options`).
"""

from __future__ import annotations

import os

JOBS_PER_CPU = 2
"""``--jobs`` may ask for this many worker processes per CPU of the machine ..."""
MIN_MAX_JOBS = 8
"""... and at least this many on any machine (so a script that works on a laptop runs on
a one-CPU CI runner)."""

MAX_REPLICATIONS = 100
"""The most replications a command, a scenario's ``[check]`` or a baseline may ask for."""

MIN_RELATIVE_TOLERANCE = 1e-3
"""The finest relative precision ``capsim headroom --tolerance`` takes."""

MAX_LOAD_MULTIPLE = 1e6
"""The largest ``capsim headroom --max-load`` (a scenario's ``load`` stops there too)."""

MAX_TIME_SCALE = 1000.0
"""The largest ``--time-scale`` of ``capsim serve`` and ``capsim drive``."""


def cpus() -> int:
    """The CPUs this process may run on (1 when unknown)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def max_jobs() -> int:
    """The most worker processes ``--jobs`` may start: :data:`JOBS_PER_CPU` per CPU, and
    never fewer than :data:`MIN_MAX_JOBS`."""
    return max(MIN_MAX_JOBS, JOBS_PER_CPU * cpus())
