"""Which prices a run's traffic actually pays: the assumptions ``--robust`` must vary.

A method's price key is :meth:`sim.config.pricing.RpcPricing.cost_key`'s (its own
``rpc.method_cu.<m>``, else ``rpc.default_method_cu``); ``POST /v1/size`` pays
``sizing.item_base_cu``, ``sizing.cu_per_gas`` and the gas caps of the profiles sized;
a websocket stream pays ``websocket.connect_cu`` and its ``websocket.publish_cu.<stream>``;
a tier whose run charged CU pays into its daily allowance; every tier's monthly price
ranks it. A method only replayed rows with a recorded cu send pays nothing: those rows
reserve what they recorded. Everything else the pricing holds is "not used by this traffic".

    used = prices_used_by(summary, loaded, methods_at_recorded_cu(loaded))
"""

from __future__ import annotations

from collections.abc import Iterable

from ..core.vocabulary import SIZE_METHOD, STREAM_NAMES
from ..results.summary import RunSummary
from .price_ranges import allowance_key, monthly_key, rangeable, tier_of
from .pricing import Pricing, flatten
from .resolved import LoadedScenario

SIZING_KEYS = ("sizing.item_base_cu", "sizing.cu_per_gas")
CONNECT_KEY = "websocket.connect_cu"


def method_price_keys(pricing: Pricing, method: str,
                      sizing_profiles: Iterable[str] = ()) -> tuple[str, ...]:
    """The pricing keys one attempted ``method`` (a name of ``by_method``) pays."""
    if method == SIZE_METHOD:
        return (*SIZING_KEYS, *(f"sizing.profile_gas_cap.{p}" for p in sorted(sizing_profiles)))
    if method in STREAM_NAMES:
        return (CONNECT_KEY, f"websocket.publish_cu.{method}")
    return (pricing.rpc.cost_key(method),)


def prices_used(pricing: Pricing, methods: Iterable[str], sizing_profiles: Iterable[str],
                charged_tiers: Iterable[str], ranked_tiers: Iterable[str]) -> set[str]:
    """The pricing keys paid by traffic that attempted ``methods`` (sizing with
    ``sizing_profiles``), charged the daily allowances of ``charged_tiers`` and ranked
    ``ranked_tiers`` by price. Keys the pricing does not hold (a tier without an
    allowance, a stream without a publish price) are left out: nothing to vary."""
    profiles = tuple(sizing_profiles)
    keys = {k for m in methods for k in method_price_keys(pricing, m, profiles)}
    keys |= {allowance_key(t) for t in charged_tiers}
    keys |= {monthly_key(t) for t in ranked_tiers}
    return keys & set(rangeable(pricing))


def sizing_profiles_sent(loaded: LoadedScenario) -> set[str]:
    """The gas-cap profiles the scenario's sizing requests may name: each synthetic
    source's profiles of positive weight; every profile of the pricing when a trace is
    replayed (its recorded profiles are not known before it is read)."""
    sc, caps = loaded.scenario, loaded.pricing.sizing.profile_gas_cap
    if any(s.trace is not None for s in sc.sources):
        return set(caps)
    return {p for s in sc.sources if s.mix.get(SIZE_METHOD, 0) > 0
            for p, w in s.sizing.profiles.items() if w > 0}


def prices_used_by(summary: RunSummary, loaded: LoadedScenario,
                   at_recorded_cu: Iterable[str] = ()) -> set[str]:
    """:func:`prices_used` of a run: the methods attempted on any tier (``by_method``)
    but those of ``at_recorded_cu`` (only sent by replayed rows that carry a recorded cu,
    which they reserve instead of the price:
    :func:`sim.workload.replay_source.methods_at_recorded_cu`), the tiers (an account's
    own, with several accounts) whose daily allowance was charged, and every tier the
    recommendation ranked."""
    methods, charged, ranked = set(), set(), set()
    for t in summary.tiers:
        methods |= set(t.by_method)
        ranked.add(t.tier)
        if t.plan is None:
            if t.daily_allowance.used_cu > 0:
                charged.add(t.tier)
            continue
        for a in t.plan.accounts:
            ranked.add(a.tier)
            if a.daily_allowance.used_cu > 0:
                charged.add(a.tier)
    methods -= set(at_recorded_cu)
    return prices_used(loaded.pricing, methods, sizing_profiles_sent(loaded), charged, ranked)


def priced_in_run(loaded: LoadedScenario) -> dict[str, float]:
    """The prices a range may name that concern this run (key to value): every price
    under ``rpc``, ``sizing`` and ``websocket``, and the allowance and monthly price of
    the tiers it studies and of its accounts' own tiers (not the rest of the catalog)."""
    tiers = {t.name for t in loaded.tiers}
    tiers |= {a.tier for a in loaded.scenario.account_list if a.tier is not None}
    return {k: v for k, v in rangeable(loaded.pricing).items()
            if tier_of(k) is None or tier_of(k) in tiers}


def set_by_scenario(loaded: LoadedScenario) -> set[str]:
    """The pricing keys the scenario gives itself (``[pricing]``, ``--set``, a
    calibration's prices, its ``[[custom_tiers]]``' allowance and price): no default
    range for them, only the ones ``[price_ranges]`` or a calibration gives."""
    keys = set(flatten(loaded.pricing_overrides))
    for t in loaded.scenario.custom_tiers:
        keys |= {allowance_key(t.name), monthly_key(t.name)}
    return keys
