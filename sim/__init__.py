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

from .core.lazy import exports
from .core.version import __version__

_WHERE = {
    "run": ".api", "RunResult": ".api", "advise": ".advisor",
    "load_summary": ".results.summary", "RunSummary": ".results.summary",
    "TierSummary": ".results.summary",
    "CapsimError": ".core.errors",
}

__all__ = ["CapsimError", "RunResult", "RunSummary", "TierSummary", "__version__",
           "advise", "load_summary", "run"]

if TYPE_CHECKING:  # pragma: no cover
    from .advisor import advise
    from .api import RunResult, run
    from .core.errors import CapsimError
    from .results.summary import RunSummary, TierSummary, load_summary

__getattr__, __dir__ = exports(globals(), _WHERE)
