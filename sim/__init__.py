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

from .lazy import exports

__version__ = "0.1.0"

_WHERE = {
    "run": ".api", "RunResult": ".api",
    "load_summary": ".summary", "RunSummary": ".summary", "TierSummary": ".summary",
    "CapsimError": ".errors",
}

__all__ = ["CapsimError", "RunResult", "RunSummary", "TierSummary", "__version__",
           "load_summary", "run"]

if TYPE_CHECKING:  # pragma: no cover
    from .api import RunResult, run
    from .errors import CapsimError
    from .summary import RunSummary, TierSummary, load_summary

__getattr__, __dir__ = exports(globals(), _WHERE)
