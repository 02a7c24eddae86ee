"""capsim: a discrete-event capacity simulator for a CU-metered API service.

The import package is ``sim``; the distribution and the console script are ``capsim``.

    import sim
    result = sim.run("workloads/searcher.toml", overrides=["duration=600"])
    result.summary.recommended.tier
    summary = sim.load_summary("reports/default")   # a report folder or a summary.json

``sim.run``, ``sim.RunResult``, ``sim.load_summary`` and ``sim.RunSummary`` are imported
on first use, so ``import sim`` alone pulls in neither SimPy nor pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

_LAZY = {
    "run": ("sim.api", "run"),
    "RunResult": ("sim.api", "RunResult"),
    "load_summary": ("sim.summary", "load_summary"),
    "RunSummary": ("sim.summary", "RunSummary"),
    "TierSummary": ("sim.summary", "TierSummary"),
    "CapsimError": ("sim.errors", "CapsimError"),
}

__all__ = ["CapsimError", "RunResult", "RunSummary", "TierSummary", "__version__",
           "load_summary", "run"]

if TYPE_CHECKING:  # pragma: no cover
    from .api import RunResult, run
    from .errors import CapsimError
    from .summary import RunSummary, TierSummary, load_summary


def __getattr__(name: str):
    """PEP 562: import the public API on first use."""
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'sim' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
