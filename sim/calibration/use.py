"""A calibration as input to a run (``capsim run --calibration DIR``): its prices, window
phase and refund rule as scenario overrides, and its intervals as price ranges
(:mod:`sim.config.price_ranges`).

A price the decisions bound only above ranges from 0 to that bound; one bounded only
below (a gas cap the data cannot cap) ranges from the bound to its fitted value, and a
price calibrate left at its given value or could not identify gets no range from here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..config.pricing import flatten
from ..core.errors import CapsimError

CAP_CU = "sizing.profile_cap_cu."


@dataclass(frozen=True)
class CalibrationInput:
    """What a run takes from a calibration."""

    path: str
    overrides: tuple[str, ...]
    ranges: dict[str, tuple[float, float]]


def _toml(v) -> str:
    return json.dumps(v) if isinstance(v, str) else repr(float(v))


def read_calibration(path: str | Path) -> CalibrationInput:
    """Read a calibration folder (its ``calibration.json``) or the file itself."""
    p = Path(path)
    file = p / "calibration.json" if p.is_dir() else p
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CapsimError("no such calibration (a folder written by capsim calibrate, or "
                          "its calibration.json)", file=str(file),
                          field="--calibration") from None
    except ValueError as err:
        raise CapsimError(f"not JSON ({err})", file=str(file), field="--calibration") from None
    if not isinstance(doc, dict) or "prices" not in doc or "pricing" not in doc:
        raise CapsimError("not a calibration.json (no prices / pricing)", file=str(file),
                          field="--calibration")
    overrides = [f"pricing.{k}={_toml(v)}" for k, v in sorted(flatten(doc["pricing"]).items())
                 if v is not None]
    limiter = doc.get("limiter") or {}
    if limiter.get("alignment") == "utc":
        overrides += ['limiter.alignment="utc"', f"limiter.phase_s={_toml(limiter['phase_s'])}"]
    if limiter.get("refund_to"):
        overrides.append(f"limiter.refund_to={_toml(limiter['refund_to'])}")
    ranges: dict[str, tuple[float, float]] = {}
    for price in doc["prices"]:
        name, how = price["name"], price["how"]
        if how in ("given", "not identified") or name.startswith(CAP_CU):
            continue
        value = price["value"]
        lo = price["low"] if price["low"] is not None else 0.0
        hi = price["high"] if price["high"] is not None else value
        ranges[name] = (min(lo, value), max(hi, value))
    for prof, g in (doc.get("gas_caps") or {}).items():
        if g.get("value") is None or g.get("low") is None:
            continue
        hi = g["high"] if g["high"] is not None else g["value"]
        ranges[f"sizing.profile_gas_cap.{prof}"] = (min(g["low"], g["value"]),
                                                    max(hi, g["value"]))
    return CalibrationInput(str(file), tuple(overrides), ranges)
