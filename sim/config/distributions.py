"""Distributions that know their own mean and variance.

Scenario files describe every random quantity (service times, think times, item counts,
gas used as a fraction of the profile cap) with one of these. Each is a frozen pydantic
model, selected by its ``dist`` field, with ``sample(rng, n)`` (vectorised) and the
closed-form ``mean`` and ``variance`` so that one test helper can check them all.

Units are whatever the field that holds the distribution says (seconds for times).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .strict_types import STRICT_CONFIG, FiniteFloat, StrictInt

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


class _Dist(BaseModel):
    model_config = STRICT_CONFIG

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    @property
    def mean(self) -> float:  # pragma: no cover
        raise NotImplementedError

    @property
    def variance(self) -> float:  # pragma: no cover
        raise NotImplementedError


class Constant(_Dist):
    """Always ``value``."""

    dist: Literal["constant"] = "constant"
    value: FiniteFloat = Field(ge=0)

    def sample(self, rng, n):
        import numpy as np  # the models load without numpy (capsim validate)

        return np.full(n, self.value, dtype=float)

    @property
    def mean(self):
        return self.value

    @property
    def variance(self):
        return 0.0


class Exponential(_Dist):
    """Exponential with the given ``mean``."""

    dist: Literal["exponential"] = "exponential"
    mean_value: FiniteFloat = Field(gt=0, alias="mean")

    model_config = ConfigDict(**STRICT_CONFIG, populate_by_name=True)

    def sample(self, rng, n):
        return rng.exponential(self.mean_value, n)

    @property
    def mean(self):
        return self.mean_value

    @property
    def variance(self):
        return self.mean_value**2


class _Range(_Dist):
    """A distribution on ``[low, high]`` (its subclass declares the two fields' types)."""

    @model_validator(mode="after")
    def _ordered(self):
        if self.high < self.low:
            raise ValueError("expected high >= low")
        return self

    @property
    def mean(self):
        return (self.low + self.high) / 2


class Uniform(_Range):
    """Uniform on ``[low, high]``."""

    dist: Literal["uniform"] = "uniform"
    low: FiniteFloat = Field(ge=0)
    high: FiniteFloat = Field(ge=0)

    def sample(self, rng, n):
        return rng.uniform(self.low, self.high, n)

    @property
    def variance(self):
        return (self.high - self.low) ** 2 / 12


class LogNormal(_Dist):
    """Log-normal given by its ``median`` and the ``sigma`` of the underlying normal."""

    dist: Literal["lognormal"] = "lognormal"
    median: FiniteFloat = Field(gt=0)
    sigma: FiniteFloat = Field(ge=0, le=5)

    def sample(self, rng, n):
        return rng.lognormal(math.log(self.median), self.sigma, n)

    @property
    def mean(self):
        return self.median * math.exp(self.sigma**2 / 2)

    @property
    def variance(self):
        s2 = self.sigma**2
        return (math.exp(s2) - 1) * self.median**2 * math.exp(s2)


class Beta(_Dist):
    """Beta(a, b) on [0, 1]; used for gas used as a fraction of a profile's cap."""

    dist: Literal["beta"] = "beta"
    a: FiniteFloat = Field(gt=0)
    b: FiniteFloat = Field(gt=0)

    def sample(self, rng, n):
        return rng.beta(self.a, self.b, n)

    @property
    def mean(self):
        return self.a / (self.a + self.b)

    @property
    def variance(self):
        s = self.a + self.b
        return self.a * self.b / (s * s * (s + 1))


class IntUniform(_Range):
    """Integers uniform on ``low..high`` inclusive; used for item counts."""

    dist: Literal["int_uniform"] = "int_uniform"
    low: StrictInt = Field(ge=0)
    high: StrictInt = Field(ge=0)

    def sample(self, rng, n):
        return rng.integers(self.low, self.high + 1, n).astype(float)

    @property
    def variance(self):
        k = self.high - self.low + 1
        return (k * k - 1) / 12


class ShiftedPoisson(_Dist):
    """``shift`` plus a Poisson(``lam``) count; item counts of at least ``shift``."""

    dist: Literal["poisson"] = "poisson"
    lam: FiniteFloat = Field(ge=0)
    shift: StrictInt = Field(default=0, ge=0)

    def sample(self, rng, n):
        return (self.shift + rng.poisson(self.lam, n)).astype(float)

    @property
    def mean(self):
        return self.shift + self.lam

    @property
    def variance(self):
        return self.lam


Distribution = Annotated[
    Constant | Exponential | Uniform | LogNormal | Beta | IntUniform | ShiftedPoisson,
    Field(discriminator="dist"),
]
"""Any distribution, chosen by its ``dist`` field."""
