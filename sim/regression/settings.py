"""Tolerances: the catalogue's defaults, the scenario's ``[check.tolerance]`` table
(:class:`sim.config.check.CheckSettings`) and the command line's ``--tolerance``.
"""

from __future__ import annotations

import difflib

from ..config.check import CheckSettings
from ..core.errors import CapsimError
from ..results.catalogue import BY_NAME, METRIC_NAMES


def parse_tolerance(item: str) -> tuple[str, float]:
    """``METRIC=VALUE`` from the command line (``VALUE`` may end in ``%``)."""
    name, sep, text = item.partition("=")
    name = name.strip()
    if not sep:
        raise CapsimError("expected METRIC=VALUE", field=f"--tolerance {name}")
    if name not in BY_NAME:
        hint = difflib.get_close_matches(name, METRIC_NAMES, n=1, cutoff=0.6)
        raise CapsimError(f"unknown metric {name!r}"
                          + (f"; did you mean {hint[0]!r}?" if hint else "")
                          + f" (expected one of: {', '.join(METRIC_NAMES)})",
                          field="--tolerance")
    text = text.strip()
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise CapsimError("expected a number (or a percentage such as 10%)",
                          field=f"--tolerance {name}") from None
    if not value >= 0 or value == float("inf"):
        raise CapsimError("expected a finite number >= 0", field=f"--tolerance {name}")
    return name, value


def tolerances(settings: CheckSettings | None = None,
               overrides: dict[str, float] | None = None) -> dict[str, float]:
    """Every metric's tolerance: the catalogue's default, then ``[check.tolerance]``,
    then ``overrides`` (the command line)."""
    out = {m.name: m.tolerance for m in BY_NAME.values()}
    if settings is not None:
        out.update({k: v for k, v in settings.tolerance.model_dump().items() if v is not None})
    out.update(overrides or {})
    return out
