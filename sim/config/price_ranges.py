"""Price ranges: how far each price the spec does not show may lie from its estimate.

A range comes, first found wins, from

1. the scenario's top-level ``[price_ranges]`` table: dotted pricing keys to
   ``[low, high]``, e.g. ``"rpc.method_cu.svc_call" = [10, 40]`` or
   ``"tiers.RPC.daily_allowance_cu" = [3_600_000, 14_400_000]``;
2. a calibration (``capsim run --calibration DIR``): each price's interval over the
   prices consistent with the recorded decisions (:mod:`sim.calibration`);
3. for a shipped assumption the scenario does not set itself, the documented default
   range :data:`DEFAULT_FACTORS` times the shipped value (the spec shows none of these
   numbers; a factor of 2 either way is the uncertainty we assume for them until a
   calibration narrows it). Every price under ``rpc``, ``sizing`` and ``websocket`` and
   every tier's ``daily_allowance_cu`` has one; a price of 0 (unbilled) and the monthly
   prices have none (a monthly price is ranged only by ``[price_ranges]``).

Keys under ``rpc``, ``sizing`` and ``websocket`` and each tier's ``daily_allowance_cu``
and ``monthly_usd`` take a range. All but one are costs (more CU per call, per item, per
gas, per handshake, per event, a larger gas cap, more money), so their low end is the
least costly; the daily allowance is the other way round: a larger allowance leaves more
room, so its HIGH end is the least costly (:func:`costly_ends`, the one place that knows).

A range holds the price's value (``low <= value <= high``: it says how far the price may
lie from it) and reaches at most :data:`MAX_RANGE_FACTOR` times it (:func:`check_range`).
"""

from __future__ import annotations

import math
from typing import Any

from .pricing import Pricing, flatten

RANGED_SECTIONS = ("rpc", "sizing", "websocket")
DEFAULT_FACTORS = (0.5, 2.0)
"""A shipped assumption's default range: this factor of its value at each end."""
MAX_RANGE_FACTOR = 1000.0
"""A range's high end is at most this multiple of the price's value ..."""
MAX_UNPRICED_HIGH = 1e6
"""... or, for a price whose value is 0 (unbilled), at most this many CU: past either a
range is a typo (``1e30`` for ``30``), not an uncertainty, and its products overflow."""
_BOUND_TEXT = (f"{MAX_RANGE_FACTOR:g} times the price's value, or {MAX_UNPRICED_HIGH:g} "
               "for a price of 0")
TIERS = "tiers."
ALLOWANCE = ".daily_allowance_cu"
MONTHLY = ".monthly_usd"


def allowance_key(tier: str) -> str:
    """The dotted key of ``tier``'s daily allowance."""
    return f"{TIERS}{tier}{ALLOWANCE}"


def monthly_key(tier: str) -> str:
    """The dotted key of ``tier``'s monthly price."""
    return f"{TIERS}{tier}{MONTHLY}"


def tier_of(key: str) -> str | None:
    """The tier a tier key (allowance or monthly price) belongs to; None for other keys."""
    for suffix in (ALLOWANCE, MONTHLY):
        if key.startswith(TIERS) and key.endswith(suffix):
            return key[len(TIERS):-len(suffix)]
    return None


def is_allowance(key: str) -> bool:
    """Whether ``key`` is a tier's daily allowance."""
    return key.startswith(TIERS) and key.endswith(ALLOWANCE)


def is_monthly(key: str) -> bool:
    """Whether ``key`` is a tier's monthly price (ranks tiers; never simulated)."""
    return key.startswith(TIERS) and key.endswith(MONTHLY)


def costly_ends(key: str, low: float, high: float) -> tuple[float, float]:
    """``(least costly, most costly)`` ends of ``key``'s range ``[low, high]``: every
    price is a cost (low end least costly) but the daily allowance, where more is less
    costly (its high end is the least costly)."""
    return (high, low) if is_allowance(key) else (low, high)


def has_default_range(key: str) -> bool:
    """Whether a shipped ``key`` gets :data:`DEFAULT_FACTORS` when the scenario leaves it
    (every price but the monthly ones)."""
    return not is_monthly(key)


def rangeable(pricing: Pricing) -> dict[str, float]:
    """Every numeric price a range may name, with its value in ``pricing``."""
    flat = flatten(pricing.model_dump(exclude_none=True))
    return {k: float(v) for k, v in flat.items()
            if (k.split(".", 1)[0] in RANGED_SECTIONS or tier_of(k) is not None)
            and isinstance(v, int | float) and not isinstance(v, bool)}


def check_range(key: str, value: Any, known: dict[str, float]) -> tuple[float, float]:
    """``value`` as ``(low, high)`` for ``key``, or a ValueError saying what was expected."""
    if key not in known:
        raise ValueError(f"unknown price {key!r}; expected a dotted key of a price under "
                         "[pricing.rpc], [pricing.sizing] or [pricing.websocket], e.g. "
                         "'rpc.method_cu.svc_call', or a tier's 'tiers.<tier>."
                         "daily_allowance_cu' or 'tiers.<tier>.monthly_usd'")
    if (not isinstance(value, list | tuple) or len(value) != 2
            or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)):
        raise ValueError("expected [low, high], two numbers")
    lo, hi = float(value[0]), float(value[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 <= lo <= hi):
        raise ValueError(f"expected 0 <= low <= high, finite; got [{value[0]}, {value[1]}]")
    estimate = known[key]
    if not lo <= estimate <= hi:
        raise ValueError(f"expected a range around the price's value {estimate:g} (low <= "
                         f"{estimate:g} <= high); got [{value[0]}, {value[1]}]: a range says "
                         "how far the price may lie from its value, so it holds that value")
    most = largest_high(estimate)
    if hi > most:
        raise ValueError(f"expected high at most {most:g} ({_BOUND_TEXT}); got {value[1]}")
    return lo, hi



def largest_high(estimate: float) -> float:
    """The largest high end a range around ``estimate`` may have (see
    :data:`MAX_RANGE_FACTOR`)."""
    return MAX_RANGE_FACTOR * estimate if estimate > 0 else MAX_UNPRICED_HIGH


def default_ranges(pricing: Pricing, set_by_scenario: set[str]) -> dict[str, tuple[float,
                                                                                  float]]:
    """The documented default ranges of the shipped assumptions the scenario leaves."""
    return {key: (v * DEFAULT_FACTORS[0], v * DEFAULT_FACTORS[1])
            for key, v in rangeable(pricing).items()
            if key not in set_by_scenario and v != 0 and has_default_range(key)}


def effective_ranges(pricing: Pricing, set_by_scenario: set[str],
                     scenario_ranges: dict[str, tuple[float, float]],
                     calibrated: dict[str, tuple[float, float]] | None = None
                     ) -> dict[str, tuple[float, float, str]]:
    """Each ranged price's ``(low, high, source)``: ``scenario``, ``calibration`` or
    ``default`` (module doc). Calibrated prices count as set (no default range)."""
    calibrated = calibrated or {}
    out: dict[str, tuple[float, float, str]] = {}
    for key, (lo, hi) in default_ranges(pricing, set_by_scenario | set(calibrated)).items():
        out[key] = (lo, hi, "default")
    for key, (lo, hi) in calibrated.items():
        out[key] = (lo, hi, "calibration")
    for key, (lo, hi) in scenario_ranges.items():
        out[key] = (lo, hi, "scenario")
    return dict(sorted(out.items()))


def with_prices(pricing: Pricing, values: dict[str, float]) -> Pricing:
    """``pricing`` with the dotted keys of ``values`` set (a tier's name may hold dots)."""
    table = pricing.model_dump()
    for key, v in values.items():
        tier = tier_of(key)
        if tier is not None:
            node, last = table["tiers"][tier], key.rsplit(".", 1)[1]
        else:
            node = table
            *head, last = key.split(".")
            for part in head:
                node = node[part]
        node[last] = v
    return Pricing.model_validate(table)
