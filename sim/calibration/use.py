"""A calibration as input to a run (``capsim run --calibration DIR``): its prices, window
phase and refund rule as scenario overrides, and its intervals as price ranges
(:mod:`sim.config.price_ranges`).

A price the decisions bound only above ranges from 0 to that bound; one bounded only
below (a gas cap the data cannot cap) ranges from the bound to its fitted value, and a
price calibrate left at its given value or could not identify gets no range from here.
"""

from __future__ import annotations

import json
import math
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


def _finite(value, file: Path, field: str, *, optional: bool = False):
    """``value`` if it is a finite number (or None, when ``optional``); else a
    CapsimError naming the calibration file and the field (a hand edit, a NaN)."""
    if value is None and optional:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return value
    got = repr(value) if isinstance(value, float) else type(value).__name__
    raise CapsimError(f"expected a finite number, got {got}", file=str(file), field=field)


def _checked(doc: dict, file: Path) -> dict:
    """The parts of a calibration.json a run reads, checked: every number finite, every
    entry where a run expects it. Errors name this file and its field, not the ``--set``
    it would become."""
    if not isinstance(doc["pricing"], dict) or not isinstance(doc["prices"], list):
        raise CapsimError("expected a pricing table and a list of prices", file=str(file),
                          field="pricing" if not isinstance(doc["pricing"], dict) else "prices")
    for k, v in flatten(doc["pricing"]).items():
        if isinstance(v, float):
            _finite(v, file, f"pricing.{k}")
    limiter = doc.get("limiter") or {}
    if not isinstance(limiter, dict):
        raise CapsimError("expected a table", file=str(file), field="limiter")
    if limiter.get("alignment") == "utc":
        _finite(limiter.get("phase_s"), file, "limiter.phase_s")
    for i, price in enumerate(doc["prices"]):
        if not isinstance(price, dict) or not {"name", "how", "value", "low", "high"} <= set(price):
            raise CapsimError("expected a price with name, how, value, low and high",
                              file=str(file), field=f"prices[{i}]")
        if price["how"] in ("given", "not identified"):
            continue
        for part in ("value", "low", "high"):
            _finite(price[part], file, f"prices[{i}].{part}", optional=part != "value")
    gas_caps = doc.get("gas_caps") or {}
    if not isinstance(gas_caps, dict):
        raise CapsimError("expected a table", file=str(file), field="gas_caps")
    for prof, g in gas_caps.items():
        if not isinstance(g, dict):
            raise CapsimError("expected a table", file=str(file), field=f"gas_caps.{prof}")
        for part in ("value", "low", "high"):
            _finite(g.get(part), file, f"gas_caps.{prof}.{part}", optional=True)
    return doc


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
    except OSError as err:
        raise CapsimError(f"cannot read it ({err.strerror or type(err).__name__})",
                          file=str(file), field="--calibration") from None
    if not isinstance(doc, dict) or "prices" not in doc or "pricing" not in doc:
        raise CapsimError("not a calibration.json (no prices / pricing)", file=str(file),
                          field="--calibration")
    doc = _checked(doc, file)
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
