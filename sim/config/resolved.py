"""A scenario resolved against the service: its tiers found in the catalog (plus its
custom tiers) and its effective pricing, ready for the demand plan and the model.

    loaded = sim.config.resolved.load("workloads/searcher.toml", ["duration=600"])

Reading, ``--set`` overrides and validation are :mod:`sim.config.loader`'s; this module
adds what needs the catalog and the pricing assumptions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..core.errors import CapsimError
from .loader import Where, read, render_error, validate_scenario
from .price_ranges import check_range, rangeable
from .pricing import Pricing, deep_merge, default_pricing_table
from .scenario import Scenario
from .tiers import CATALOG, Tier, find_tier


@dataclass(frozen=True)
class LoadedScenario:
    """A validated scenario with what was resolved from it."""

    scenario: Scenario
    path: str
    tiers: tuple[Tier, ...]
    pricing: Pricing
    pricing_overrides: dict[str, Any]
    price_ranges: dict[str, tuple[float, float]] = field(default_factory=dict)


def load(path: str | Path | None = None, overrides: list[str] = ()) -> LoadedScenario:
    """Read, override, validate and resolve a scenario; ``None`` is the built-in default."""
    raw, where = read(path, overrides)
    return _resolve(raw, where)


def validate(raw: dict[str, Any], label: str, lines: dict[tuple, int] | None = None,
             overridden: list[tuple] = ()) -> LoadedScenario:
    """Validate a raw table into a :class:`LoadedScenario`.

    ``overridden`` lists the key paths set by ``--set``: an error in one of them names
    the ``--set`` option and the key path, not the file's line.
    """
    return _resolve(raw, Where(label, lines or {}, tuple(overridden)))


def _resolve(raw: dict[str, Any], where: Where) -> LoadedScenario:
    scenario = validate_scenario(raw, where)
    label = where.label
    try:
        pricing = Pricing.model_validate(deep_merge(default_pricing_table(), scenario.pricing))
    except ValidationError as err:
        raise render_error(err, raw.get("pricing", {}), where, Pricing,
                           prefix=("pricing",)) from None
    for name in scenario.sizing_profiles_used():
        if name not in pricing.sizing.profile_gas_cap:
            known = sorted(pricing.sizing.profile_gas_cap)
            raise CapsimError(f"unknown sizing profile {name!r}; expected one of {known} "
                              "or a [pricing.sizing.profile_gas_cap] entry", file=label,
                              field="sources[].sizing.profiles")
    catalog = tier_catalog(scenario)
    for i, custom in enumerate(catalog[len(CATALOG):]):
        j = next(j for j, t in enumerate(catalog) if t.slug == custom.slug)
        if catalog[j] is not custom:  # two tiers one name picks: results that collide
            other = (f"the catalog tier {catalog[j].name!r}" if j < len(CATALOG)
                     else f"custom_tiers[{j - len(CATALOG)}]")
            raise where.error(f"expected a name no other tier has; {other} already has it "
                              "(tier names match ignoring case, spaces and punctuation)",
                              ("custom_tiers", i, "name"))
    if scenario.tiers:
        tiers = []
        for i, name in enumerate(scenario.tiers):
            try:
                tier = find_tier(name, catalog)
            except CapsimError as err:
                message = err.message
                if where.override_of(("tiers", i)) is not None:  # never echo a --set value
                    message = message.replace(f"unknown tier {name!r}", "unknown tier")
                raise where.error(message, ("tiers", i)) from None
            if tier in tiers:  # one tier twice: two results under one name in every table
                raise where.error(f"expected each tier once; tiers[{tiers.index(tier)}] "
                                  "already names this tier", ("tiers", i))
            tiers.append(tier)
    else:
        tiers = list(catalog)
    if scenario.custom_tiers:
        extra = {t.name: {"daily_allowance_cu": t.daily_allowance_cu,
                          "monthly_usd": t.monthly_usd}
                 for t in scenario.custom_tiers}
        pricing = Pricing.model_validate(
            deep_merge(pricing.model_dump(), {"tiers": extra}))
    for i, acct in enumerate(scenario.accounts or ()):
        if acct.tier is None:
            continue
        try:
            find_tier(acct.tier, catalog)
        except CapsimError as err:
            message = err.message
            if where.override_of(("accounts", i, "tier")) is not None:
                message = message.replace(f"unknown tier {acct.tier!r}", "unknown tier")
            raise where.error(message, ("accounts", i, "tier")) from None
    known = rangeable(pricing)
    ranges = {}
    for key, value in scenario.price_ranges.items():
        try:
            ranges[key] = check_range(key, value, known)
        except ValueError as err:
            raise where.error(str(err), ("price_ranges", key)) from None
    return LoadedScenario(scenario, label, tuple(tiers), pricing, scenario.pricing, ranges)


def account_tiers(loaded: LoadedScenario, studied: Tier) -> tuple[Tier, ...]:
    """Each account's tier while ``studied`` is under study: its fixed tier, else ``studied``."""
    sc = loaded.scenario
    catalog = tier_catalog(sc)
    return tuple(studied if a.tier is None else find_tier(a.tier, catalog)
                 for a in sc.account_list)


def tier_catalog(scenario: Scenario) -> tuple[Tier, ...]:
    """Every tier a name in ``scenario`` can pick: the spec's nine, then its
    ``[[custom_tiers]]`` (the one place a custom tier becomes a :class:`Tier`)."""
    return CATALOG + tuple(Tier(t.name, frozenset(t.apis), t.cu_per_window, t.ws_cap,
                                custom=True) for t in scenario.custom_tiers)
