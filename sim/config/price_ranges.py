"""Price ranges: how far each price the spec does not show may lie from its estimate.

A range comes, first found wins, from

1. the scenario's top-level ``[price_ranges]`` table: dotted pricing keys to
   ``[low, high]``, e.g. ``"rpc.method_cu.svc_call" = [10, 40]``;
2. a calibration (``capsim run --calibration DIR``): each price's interval over the
   prices consistent with the recorded decisions (:mod:`sim.calibration`);
3. for a shipped assumption the scenario does not set itself, the documented default
   range :data:`DEFAULT_FACTORS` times the shipped value, for the keys
   :data:`DEFAULT_RANGED` (the spec shows none of these numbers; a factor of 2 either
   way is the uncertainty we assume for them until a calibration narrows it).

A range holds the price's value (``low <= value <= high``: it says how far the price may
lie from it) and reaches at most :data:`MAX_RANGE_FACTOR` times it (:func:`check_range`).
Only keys under ``rpc``, ``sizing`` and ``websocket`` take a range: each is a cost (more
CU per call, per item, per gas, per handshake, per event, or a larger gas cap), so
"the least costly prices" are every range's low end and "the most costly" every high end.
"""

from __future__ import annotations

import math
from typing import Any

from .pricing import Pricing, flatten

RANGED_SECTIONS = ("rpc", "sizing", "websocket")
DEFAULT_FACTORS = (0.5, 2.0)
"""A shipped assumption's default range: this factor of its value at each end."""
DEFAULT_RANGED = ("rpc.method_cu.svc_call", "sizing.item_base_cu", "sizing.cu_per_gas",
                  "sizing.profile_gas_cap.", "websocket.connect_cu")
"""Keys (a trailing dot: every key under it) that get :data:`DEFAULT_FACTORS`."""
MAX_RANGE_FACTOR = 1000.0
"""A range's high end is at most this multiple of the price's value ..."""
MAX_UNPRICED_HIGH = 1e6
"""... or, for a price whose value is 0 (unbilled), at most this many CU: past either a
range is a typo (``1e30`` for ``30``), not an uncertainty, and its products overflow."""
_BOUND_TEXT = (f"{MAX_RANGE_FACTOR:g} times the price's value, or {MAX_UNPRICED_HIGH:g} "
               "for a price of 0")


def rangeable(pricing: Pricing) -> dict[str, float]:
    """Every numeric price a range may name, with its value in ``pricing``."""
    flat = flatten(pricing.model_dump(exclude_none=True))
    return {k: float(v) for k, v in flat.items()
            if k.split(".", 1)[0] in RANGED_SECTIONS and isinstance(v, int | float)
            and not isinstance(v, bool)}


def check_range(key: str, value: Any, known: dict[str, float]) -> tuple[float, float]:
    """``value`` as ``(low, high)`` for ``key``, or a ValueError saying what was expected."""
    if key not in known:
        raise ValueError(f"unknown price {key!r}; expected a dotted key of a price under "
                         "[pricing.rpc], [pricing.sizing] or [pricing.websocket], e.g. "
                         "'rpc.method_cu.svc_call'")
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
    out = {}
    for key, v in rangeable(pricing).items():
        if key in set_by_scenario or v == 0:
            continue
        if any(key == d or (d.endswith(".") and key.startswith(d)) for d in DEFAULT_RANGED):
            out[key] = (v * DEFAULT_FACTORS[0], v * DEFAULT_FACTORS[1])
    return out


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
    """``pricing`` with the dotted keys of ``values`` set."""
    table = pricing.model_dump()
    for key, v in values.items():
        node = table
        *head, last = key.split(".")
        for part in head:
            node = node[part]
        node[last] = v
    return Pricing.model_validate(table)
