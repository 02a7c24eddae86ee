"""capsim: a discrete-event capacity simulator for a CU-metered API service.

The import package is ``sim``; the distribution and the console script are ``capsim``.

    import sim
    result = sim.run("workloads/searcher.toml", overrides=["duration=600"])
    result.summary.recommended.tier
    summary = sim.load_summary("reports/default")   # a report folder or a summary.json

``sim.sweep``, ``sim.headroom``, ``sim.check``, ``sim.advise``, ``sim.import_trace`` and
``sim.export_tables`` are what the commands of those names do, returning typed results
(docs/reference/library.md). Every name is imported
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
    "sweep": ".jobs.library", "SweepResult": ".jobs.sweep",
    "headroom": ".jobs.library", "Headroom": ".jobs.headroom",
    "check": ".regression.library", "Comparison": ".regression.compare",
    "import_trace": ".traces.importers", "ImportReport": ".traces.importers",
    "export_tables": ".report.export",
}

__all__ = ["CapsimError", "Comparison", "Headroom", "ImportReport", "RunResult", "RunSummary",
           "SweepResult", "TierSummary", "__version__", "advise", "check", "export_tables",
           "headroom", "import_trace", "load_summary", "run", "sweep"]

if TYPE_CHECKING:  # pragma: no cover
    from .advisor import advise
    from .api import RunResult, run
    from .core.errors import CapsimError
    from .jobs.headroom import Headroom
    from .jobs.library import headroom, sweep
    from .jobs.sweep import SweepResult
    from .regression.compare import Comparison
    from .regression.library import check
    from .report.export import export_tables
    from .results.summary import RunSummary, TierSummary, load_summary
    from .traces.importers import ImportReport, import_trace

__getattr__, __dir__ = exports(globals(), _WHERE)
