"""The scenario's ``[check]`` table: how ``capsim check`` judges this scenario.

    [check]
    replications = 3                 # default for `capsim baseline save`
    [check.tolerance]
    throttle_rate = 0.01             # absolute, in rate units
    latency_p99_ms = 0.25            # relative: 25 % of the baseline

The tolerance table has one optional field per metric of the CI gate's catalogue
(:mod:`sim.results.catalogue`, which reads only the typed summary and so sits in the
bottom layer), so an unknown name is refused like any unknown key, with a "did you mean".
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..core.limits import MAX_REPLICATIONS
from ..results.catalogue import METRIC_NAMES
from .strict_types import STRICT_CONFIG, FiniteFloat, StrictInt


class _Strict(BaseModel):
    model_config = ConfigDict(**STRICT_CONFIG)


Tolerances = create_model(
    "Tolerances", __base__=_Strict, __doc__="Per-metric tolerance overrides (None: default).",
    **{name: (FiniteFloat | None, Field(default=None, ge=0)) for name in METRIC_NAMES})


class CheckSettings(_Strict):
    """How ``capsim check`` judges this scenario (tolerances, default replications)."""

    replications: StrictInt | None = Field(default=None, ge=1, le=MAX_REPLICATIONS)
    tolerance: Tolerances = Field(default_factory=Tolerances)  # type: ignore[valid-type]
