"""The cost model as a linear map: every attempt's reserved and settled CU as
``R @ theta`` and ``S @ theta`` for one vector ``theta`` of unknown prices.

The unknowns (:class:`CostModel` ``names``):

* ``rpc.method_cu.<m>`` for each billed RPC method seen (``svc_call``, ...);
* ``sizing.item_base_cu`` and ``sizing.cu_per_gas``;
* ``sizing.profile_cap_cu.<p>``: the CU a ``p`` item reserves beyond its base, i.e.
  ``profile_gas_cap[p] * cu_per_gas`` -- linear where the product is not, and turned back
  into a gas cap by :meth:`CostModel.to_pricing_table`;
* ``websocket.connect_cu``.

A sizing request reserves ``items * base + sum(cap_cu[p])`` and settles to
``items * base + gas_used * cu_per_gas``; an RPC call and a handshake reserve and settle
their price. Unbilled methods (a price of 0 in the pricing) stay out of ``theta``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config.pricing import Pricing
from .recorded import KIND_RPC, KIND_SIZE, KIND_WS, Recorded

BASE, PER_GAS, CONNECT = "sizing.item_base_cu", "sizing.cu_per_gas", "websocket.connect_cu"
METHOD_PREFIX, CAP_PREFIX = "rpc.method_cu.", "sizing.profile_cap_cu."


@dataclass(frozen=True)
class CostModel:
    """Design matrices of one trace: ``reserve = R @ theta``, ``settle = S @ theta``."""

    names: tuple[str, ...]
    R: np.ndarray
    S: np.ndarray

    def index(self, name: str) -> int:
        """Position of ``name`` in ``theta``."""
        return self.names.index(name)

    def theta_of(self, pricing: Pricing) -> np.ndarray:
        """``theta`` holding the prices of ``pricing`` (caps it does not list: NaN)."""
        out = np.empty(len(self.names))
        for i, name in enumerate(self.names):
            out[i] = _price(pricing, name)
        return out

    def to_pricing_table(self, theta: np.ndarray) -> dict[str, Any]:
        """A ``[pricing]`` table (as nested dicts) with the values of ``theta``."""
        table: dict[str, Any] = {}
        values = dict(zip(self.names, theta, strict=True))
        per_gas = values.get(PER_GAS)
        for name, v in values.items():
            if name.startswith(METHOD_PREFIX):
                table.setdefault("rpc", {}).setdefault("method_cu", {})[
                    name.removeprefix(METHOD_PREFIX)] = float(v)
            elif name == BASE:
                table.setdefault("sizing", {})["item_base_cu"] = float(v)
            elif name == PER_GAS:
                table.setdefault("sizing", {})["cu_per_gas"] = float(v)
            elif name.startswith(CAP_PREFIX) and per_gas:
                table.setdefault("sizing", {}).setdefault("profile_gas_cap", {})[
                    name.removeprefix(CAP_PREFIX)] = float(v / per_gas)
            elif name == CONNECT:
                table.setdefault("websocket", {})["connect_cu"] = float(v)
        return table


def _price(pricing: Pricing, name: str) -> float:
    if name.startswith(METHOD_PREFIX):
        return pricing.rpc.cost(name.removeprefix(METHOD_PREFIX))
    if name == BASE:
        return pricing.sizing.item_base_cu
    if name == PER_GAS:
        return pricing.sizing.cu_per_gas
    if name.startswith(CAP_PREFIX):
        cap = pricing.sizing.profile_gas_cap.get(name.removeprefix(CAP_PREFIX))
        return np.nan if cap is None else cap * pricing.sizing.cu_per_gas
    if name == CONNECT:
        return pricing.websocket.connect_cu
    raise KeyError(name)


def build_cost_model(rec: Recorded, pricing: Pricing) -> CostModel:
    """The unknowns a trace touches and its design matrices.

    An RPC method the pricing leaves unbilled (price 0) is taken as unbilled: the spec
    names ``svc_call`` billed and ``svc_pendingBlock`` not; other methods follow the
    pricing's ``default_method_cu``.
    """
    n = len(rec)
    names: list[str] = []
    rpc_methods = sorted({m for m, k in zip(rec.method, rec.kind, strict=True)
                          if k == KIND_RPC and pricing.rpc.cost(m) > 0})
    names += [METHOD_PREFIX + m for m in rpc_methods]
    sizing = rec.kind == KIND_SIZE
    if sizing.any():
        profiles = sorted({p for i in np.flatnonzero(sizing) for p in rec.profiles[i]})
        names += [BASE, PER_GAS] + [CAP_PREFIX + p for p in profiles]
    if (rec.kind == KIND_WS).any():
        names.append(CONNECT)
    col = {name: i for i, name in enumerate(names)}
    R = np.zeros((n, len(names)))
    S = np.zeros((n, len(names)))
    for i in range(n):
        k = rec.kind[i]
        if k == KIND_RPC:
            j = col.get(METHOD_PREFIX + rec.method[i])
            if j is not None:
                R[i, j] = S[i, j] = 1.0
        elif k == KIND_SIZE:
            items = len(rec.profiles[i]) or (rec.items[i] if rec.items[i] == rec.items[i] else 0)
            R[i, col[BASE]] = S[i, col[BASE]] = items
            for p in rec.profiles[i]:
                R[i, col[CAP_PREFIX + p]] += 1.0
            gas = rec.gas_used[i]
            # without a recorded gas figure the request settles to what it reserved
            if gas == gas:
                S[i, col[PER_GAS]] = gas
            else:
                S[i] = R[i]
        elif k == KIND_WS:
            R[i, col[CONNECT]] = S[i, col[CONNECT]] = 1.0
    return CostModel(tuple(names), R, S)
