"""Load a scenario with overrides, a seed and a tier selection applied (no SimPy, no
pandas: ``capsim validate`` uses it and starts fast). Re-exported as
:func:`sim.api.load_scenario`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from .resolved import LoadedScenario, load, tier_catalog
from .tiers import find_tier


def load_scenario(scenario: str | Path | LoadedScenario | None = None, *,
                  tiers: Iterable[str] | None = None, seed: int | None = None,
                  overrides: Iterable[str] | None = None) -> LoadedScenario:
    """Load ``scenario`` (a path, None for the built-in default, or already loaded) with
    ``--set``-style ``overrides``, a ``seed`` and a tier selection applied."""
    overrides = [*(overrides or ())]
    if isinstance(scenario, LoadedScenario):
        if overrides:
            raise ValueError("overrides apply to a scenario file: pass its path, "
                             "or override before loading (sim.config.load)")
        loaded = scenario
        if seed is not None:
            sc = loaded.scenario.model_copy(update={"seed": int(seed)})
            loaded = LoadedScenario(sc, loaded.path, loaded.tiers, loaded.pricing,
                                    loaded.pricing_overrides, loaded.price_ranges)
    else:
        extra = [f"seed={seed}"] if seed is not None else []
        loaded = load(scenario, [*overrides, *extra])
    names = [tiers] if isinstance(tiers, str) else list(tiers or ())
    if names:
        catalog = tuple(loaded.tiers) + tuple(t for t in tier_catalog(loaded.scenario)
                                              if t not in loaded.tiers)
        chosen = tuple(dict.fromkeys(find_tier(name, catalog) for name in names))
        loaded = LoadedScenario(loaded.scenario, loaded.path, chosen, loaded.pricing,
                                loaded.pricing_overrides, loaded.price_ranges)
    return loaded
