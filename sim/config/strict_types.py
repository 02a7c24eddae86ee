"""Strict scalar types shared by every model of the scenario format.

Pydantic's default (lax) mode reads ``true`` as 1, ``"2.5"`` as 2.5 and accepts NaN and
infinities. A scenario is typed TOML, so a number must be a number: booleans and
strings are not numbers, numbers are not booleans, and NaN / ±inf are never a rate, a
duration or a price. Every numeric or boolean field of the scenario format uses these
types, and :data:`STRICT_CONFIG` is the shared model configuration.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AllowInfNan, ConfigDict, Strict

FiniteFloat = Annotated[float, Strict(), AllowInfNan(False)]
"""A finite float; an integer is accepted (and widened), a boolean or string is not."""

StrictInt = Annotated[int, Strict()]
"""An integer; not a boolean, a float or a string."""

StrictBool = Annotated[bool, Strict()]
"""``true`` or ``false``; not 0/1 or ``"yes"``."""

STRICT_CONFIG = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
"""Frozen, unknown keys are errors, no NaN or infinities."""
