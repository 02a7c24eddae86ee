"""Replay a recorded trace as it happened and predict each attempt's outcome.

Every attempt is replayed at its recorded time, the recorded retries as they were sent
(the client's real behaviour, not a simulated retry policy), through the policy objects
themselves (the limiter ``[limiter] kind`` names, :func:`sim.policy.limiters.make_limiter`;
no SimPy):

* an RPC call reserves its price; a sizing request reserves its items' base plus their
  profiles' gas caps and settles, at its recorded time + latency, to its recorded ``cu``
  (else ``items * base + gas_used * cu_per_gas``);
* a websocket handshake is refused ``435`` when every slot of the tier is held, else
  spends ``connect_cu`` (a CU refusal is ``throttled``); an admitted handshake holds its
  slot until its recorded time + latency (the connection's life, as a HAR records a
  websocket), or to the end of the trace when no latency is recorded;
* the daily allowance (``[tiers."..."] daily_allowance_cu`` of the pricing) refuses with
  ``402`` on the UTC day.

Rows whose status was not decided by the CU window (``other``) are neither replayed nor
compared: the service refused them before asking the window. Windows follow
``limiter_settings``: ``alignment = "utc"`` with ``phase_s`` puts them on the service's
clock; ``epoch`` (the simulator's default for a replayed trace) starts them at the
trace's first request.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..config.pricing import Pricing
from ..config.scenario import LimiterSettings
from ..config.tiers import Tier
from ..core.vocabulary import WINDOW_S
from ..policy.limiter import NO_ALLOWANCE, OK, THROTTLED
from ..policy.limiters import make_limiter
from ..policy.slots import SlotPool
from .costs import CostModel, build_cost_model
from .recorded import CLASSES, KIND_SIZE, KIND_WS, Recorded, load_recorded
from .replay_core import Timeline

_CLASS_OF = {OK: "ok", THROTTLED: "throttled", NO_ALLOWANCE: "402"}


@dataclass(frozen=True)
class Account:
    """What the replay needs of a tier and its pricing: budget, slots, daily allowance."""

    budget_cu: float
    ws_cap: int
    daily_allowance_cu: float | None = None

    @classmethod
    def of(cls, tier: Tier, pricing: Pricing) -> Account:
        """The account of ``tier`` under ``pricing``."""
        return cls(tier.cu_per_window, tier.ws_cap, pricing.for_tier(tier).daily_allowance_cu)


@dataclass(frozen=True)
class Prediction:
    """Predicted and observed outcome per attempt (rows in time order; ``order`` maps
    them back to the trace's rows). ``predicted`` is ``""`` for rows not replayed."""

    t_s: np.ndarray
    base_ns: int
    order: np.ndarray
    method: np.ndarray
    predicted: np.ndarray
    observed: np.ndarray
    compared: np.ndarray
    unusable: np.ndarray
    window_start_s: np.ndarray

    def confusion(self) -> dict[str, dict[str, int]]:
        """``observed -> predicted -> count`` over compared rows, every class listed."""
        counts = Counter(zip(self.observed[self.compared], self.predicted[self.compared],
                             strict=True))
        return {o: {p: counts.get((o, p), 0) for p in CLASSES} for o in CLASSES}

    @property
    def agreed(self) -> int:
        """Compared rows whose prediction equals the observation."""
        return int((self.predicted[self.compared] == self.observed[self.compared]).sum())

    @property
    def n_compared(self) -> int:
        """Rows compared."""
        return int(self.compared.sum())

    @property
    def agreement(self) -> float:
        """Fraction of compared rows that agree (NaN when none)."""
        n = self.n_compared
        return self.agreed / n if n else math.nan

    def per_window(self) -> pd.DataFrame:
        """Observed and predicted throttles per window (windows with any attempt)."""
        frame = pd.DataFrame({
            "window_start_s": self.window_start_s,
            "observed_throttles": (self.observed == "throttled") & self.compared,
            "predicted_throttles": (self.predicted == "throttled") & self.compared,
            "attempts": self.compared})
        frame = frame[~np.isnan(frame["window_start_s"])]
        sums = frame.groupby("window_start_s").sum()
        if len(sums):  # every window from the first to the last, idle ones as zeros
            first = sums.index.min()
            k = np.round((sums.index.max() - first) / WINDOW_S).astype(int)
            sums = sums.reindex(first + WINDOW_S * np.arange(k + 1), method="nearest",
                                tolerance=1e-6, fill_value=0)
        return sums.reset_index(names="window_start_s").astype(
            {"observed_throttles": int, "predicted_throttles": int, "attempts": int})


def window_shift(rec: Recorded, settings: LimiterSettings) -> float | None:
    """``s`` such that windows start where ``t_s + s`` is a multiple of 12 s (None for
    ``first-hit``, whose windows follow the traffic)."""
    if settings.alignment == "utc":
        return (rec.utc_day_offset_s - settings.phase_s) % WINDOW_S
    if settings.alignment == "epoch":
        return 0.0
    return None


def replay(rec: Recorded, reserve: np.ndarray, settle: np.ndarray, account: Account,
           settings: LimiterSettings) -> np.ndarray:
    """The predicted class of every row (``""`` for rows not replayed).

    ``reserve`` and ``settle`` are each row's CU (NaN: a price the pricing lacks, the
    row is not replayed). The walk, settles and slot releases are the shared
    :class:`~sim.calibration.replay_core.Timeline`'s; only rows the CU window decided
    are replayed, through the limiter and the slot pool alone.
    """
    n = len(rec)
    limiter = make_limiter(account.budget_cu, settings,
                           daily_allowance_cu=account.daily_allowance_cu,
                           day_offset_s=rec.utc_day_offset_s)
    slots = SlotPool(account.ws_cap)
    timeline = Timeline(limiter, slots)
    out = np.full(n, "", dtype=object)
    skip = (rec.observed == "other") | np.isnan(reserve)
    kind, latency = rec.kind, rec.latency_s
    reserve_l, settle_l = reserve.tolist(), settle.tolist()
    for i, now in timeline.walk(np.flatnonzero(~skip).tolist(), rec.t_s):
        cost = reserve_l[i]
        lat = latency[i]
        if kind[i] == KIND_WS:
            if not slots.acquire(now)[0]:
                out[i] = "435"
                continue
            res = limiter.spend(now, cost)
            out[i] = _CLASS_OF.get(int(res), "other")
            if res == OK:  # held for the connection's recorded life (to the end if none)
                timeline.release_slot_at(now + lat if lat == lat else math.inf)
            else:
                slots.release_clean(now)
            continue
        actual = settle_l[i]
        res = limiter.reserve(now, cost, actual)
        out[i] = _CLASS_OF.get(int(res), "other")
        if res == OK:
            timeline.settle_at(now + (lat if lat == lat else 0.0), res, cost, actual)
    return out


def costs_of(rec: Recorded, model: CostModel, theta: np.ndarray) -> tuple[np.ndarray,
                                                                            np.ndarray]:
    """Each row's reserved and settled CU under ``theta``; a recorded ``cu`` is what an
    admitted sizing request settled to."""
    reserve = model.R @ theta if model.names else np.zeros(len(rec))
    settle = model.S @ theta if model.names else np.zeros(len(rec))
    # a row that touches an unknown (NaN) price cannot be replayed
    if model.names:
        unknown = np.isnan(theta)
        if unknown.any():
            touched = (model.R[:, unknown] != 0).any(axis=1)
            reserve = np.where(touched, np.nan, np.nan_to_num(model.R[:, ~unknown]
                                                              @ theta[~unknown]))
            settle = np.nan_to_num(model.S[:, ~unknown] @ theta[~unknown])
    # only a sizing request settles to other than it reserved: an RPC call or a handshake
    # is billed its price, so a recorded cu there says what the price is, not a refund
    known = ~np.isnan(rec.cu) & (rec.observed == "ok") & (rec.kind == KIND_SIZE)
    settle = np.where(known, rec.cu, settle)
    return reserve, settle


def window_starts(rec: Recorded, settings: LimiterSettings) -> np.ndarray:
    """The start (s after the first request) of each row's window; NaN for first-hit."""
    shift = window_shift(rec, settings)
    if shift is None:
        return np.full(len(rec), np.nan)
    return np.floor((rec.t_s + shift) / WINDOW_S) * WINDOW_S - shift


def predict_recorded(rec: Recorded, model: CostModel, theta: np.ndarray, account: Account,
                     settings: LimiterSettings) -> Prediction:
    """:func:`predict_as_recorded` on an already-loaded trace and cost model."""
    reserve, settle = costs_of(rec, model, theta)
    predicted = replay(rec, reserve, settle, account, settings)
    unusable = rec.unusable.copy()
    unusable[(unusable == "") & np.isnan(reserve)] = "a sizing profile the pricing lacks"
    compared = (unusable == "") & (predicted != "")
    return Prediction(rec.t_s, rec.base_ns, rec.order, rec.method, predicted, rec.observed,
                      compared, unusable, window_starts(rec, settings))


def predict_as_recorded(trace: str | os.PathLike | pd.DataFrame, tier: Tier,
                        pricing: Pricing, limiter_settings: LimiterSettings) -> Prediction:
    """Replay ``trace`` (a canonical trace path or frame) as recorded against ``tier``
    priced by ``pricing``, windows per ``limiter_settings``; predicted and observed
    outcome class per attempt (see the module doc)."""
    rec = load_recorded(trace)
    model = build_cost_model(rec, pricing)
    return predict_recorded(rec, model, model.theta_of(pricing), Account.of(tier, pricing),
                            limiter_settings)
