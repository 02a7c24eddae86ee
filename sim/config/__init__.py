"""The configuration, in one place: every scenario model (sources, clients, retry, HTTP
and websocket settings, arrival processes' and distributions' specs, limiter, SLO) and
the loader with ``--set`` overrides.

Frozen pydantic models; unknown keys are errors. Nothing here imports the policies, the
generators or the model: this is the bottom of the layers above the vocabulary.

    raw, label, lines = sim.config.loader.read("workloads/searcher.toml", ["duration=600"])
    scenario = sim.config.loader.validate_scenario(raw, label, lines)
"""

from .loader import apply_override, read, validate_scenario
from .scenario import LimiterSettings, Scenario, Slo

__all__ = ["LimiterSettings", "Scenario", "Slo", "apply_override", "read", "validate_scenario"]
