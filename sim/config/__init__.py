"""The configuration, in one place: every scenario model (sources, clients, retry, HTTP
and websocket settings, arrival processes' and distributions' specs, limiter, SLO) and
the loader with ``--set`` overrides.

Frozen pydantic models; unknown keys are errors. Nothing here imports the policies, the
generators or the model: this is the bottom of the layers above the vocabulary.

    raw, label, lines = sim.config.loader.read("workloads/searcher.toml", ["duration=600"])
    scenario = sim.config.loader.validate_scenario(raw, label, lines)

The names below are imported on first use (:mod:`sim.core.lazy`), so a module that needs only
``sim.config.strict_types`` (the pricing table) does not build every scenario model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy import exports

_WHERE = {
    "apply_override": ".loader", "read": ".loader", "validate_scenario": ".loader",
    "LimiterSettings": ".scenario", "Scenario": ".scenario", "Slo": ".scenario",
    "Pricing": ".pricing", "default_pricing_table": ".pricing",
    "LoadedScenario": ".resolved", "load": ".resolved", "validate": ".resolved",
    "CATALOG": ".tiers", "Tier": ".tiers", "find_tier": ".tiers", "smallest_tier_for": ".tiers",
}

__all__ = ["CATALOG", "LimiterSettings", "LoadedScenario", "Pricing", "Scenario", "Slo", "Tier",
           "apply_override", "default_pricing_table", "find_tier", "load", "read",
           "smallest_tier_for", "validate", "validate_scenario"]

__getattr__, __dir__ = exports(globals(), _WHERE)

if TYPE_CHECKING:  # pragma: no cover
    from .loader import apply_override, read, validate_scenario
    from .pricing import Pricing, default_pricing_table
    from .resolved import LoadedScenario, load, validate
    from .scenario import LimiterSettings, Scenario, Slo
    from .tiers import CATALOG, Tier, find_tier, smallest_tier_for
