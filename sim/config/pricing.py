"""Pricing assumptions: every cost the interface spec does not show.

The defaults ship in ``sim/data/pricing.toml``; a scenario's ``[pricing]`` table is
deep-merged over them. :class:`Pricing` is pure (no SimPy) and answers "what does this
request reserve, and what does it settle to".
"""

from __future__ import annotations

import tomllib
from importlib import resources
from typing import Annotated, Any

from pydantic import BaseModel, Field

from .strict_types import STRICT_CONFIG, FiniteFloat
from .tiers import Tier

_STRICT = STRICT_CONFIG
DEFAULT_METHOD_KEY = "rpc.default_method_cu"
"""The price of every RPC method ``[pricing.rpc.method_cu]`` does not list."""

Cost = Annotated[FiniteFloat, Field(ge=0)]
"""A price, a gas amount or a CU count: finite and never negative (a negative price
would "refund" CU on every call and make any tier meet any SLO)."""


class RpcPricing(BaseModel):
    """CU per RPC method; 0 means unbilled."""

    model_config = _STRICT
    default_method_cu: FiniteFloat = Field(ge=0)
    method_cu: dict[str, Cost]

    def cost(self, method: str) -> float:
        """CU reserved (and settled) by one call of ``method``."""
        return self.method_cu.get(method, self.default_method_cu)

    def cost_key(self, method: str) -> str:
        """The dotted pricing key :meth:`cost` reads for ``method``: its own
        ``rpc.method_cu.<method>``, else ``rpc.default_method_cu``."""
        return f"rpc.method_cu.{method}" if method in self.method_cu else DEFAULT_METHOD_KEY


class SizingPricing(BaseModel):
    """``POST /v1/size``: per-item base plus gas priced in CU."""

    model_config = _STRICT
    item_base_cu: FiniteFloat = Field(ge=0)
    cu_per_gas: FiniteFloat = Field(ge=0)
    profile_gas_cap: dict[str, Cost]

    def item_reserve(self, profile: str) -> float:
        """CU one item of ``profile`` reserves: base + cap x price."""
        return self.item_base_cu + self.profile_gas_cap[profile] * self.cu_per_gas

    def item_settle(self, gas_used: float) -> float:
        """CU one item settles to: base + gas used x price."""
        return self.item_base_cu + gas_used * self.cu_per_gas


class WebsocketPricing(BaseModel):
    """Websocket connect cost and CU per published event, per stream."""

    model_config = _STRICT
    connect_cu: FiniteFloat = Field(ge=0)
    publish_cu: dict[str, Cost]


class TierPricing(BaseModel):
    """What the spec does not say about a tier: daily allowance and money."""

    model_config = _STRICT
    daily_allowance_cu: FiniteFloat | None = Field(default=None, ge=0)
    monthly_usd: FiniteFloat | None = Field(default=None, ge=0)


class Pricing(BaseModel):
    """All pricing assumptions of a run."""

    model_config = _STRICT
    rpc: RpcPricing
    sizing: SizingPricing
    websocket: WebsocketPricing
    tiers: dict[str, TierPricing]

    def for_tier(self, tier: Tier) -> TierPricing:
        """The tier's allowance and price (both unknown for a tier not listed)."""
        return self.tiers.get(tier.name, TierPricing())


def default_pricing_table() -> dict[str, Any]:
    """The shipped defaults as a plain table (for merging and for reports)."""
    text = resources.files("sim").joinpath("data/pricing.toml").read_text("utf-8")
    return tomllib.loads(text)


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``override`` merged over ``base`` recursively; neither is modified."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def flatten(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; used to list assumptions in reports."""
    flat: dict[str, Any] = {}
    for key, value in table.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, path + "."))
        else:
            flat[path] = value
    return flat
