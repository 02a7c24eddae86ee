"""Replay a recorded trace as it happened and predict each attempt's outcome.

Every attempt is replayed at its recorded time, the recorded retries as they were sent
(the client's real behaviour, not a simulated retry policy), through the service's
admission itself (:class:`~sim.policy.admission.Admission`: the limiter ``[limiter]
kind`` names, the websocket slot pool; no SimPy), each decision the shared
:func:`~sim.calibration.replay_core.decide`'s; this module builds its inputs at the
prices of one fit and scores them:

* an attempt on an API the tier lacks is refused ``402`` before the window is asked;
* an RPC call reserves its price; a sizing request reserves its items' base plus their
  profiles' gas caps and settles, at its recorded time + latency, to its recorded ``cu``
  (else ``items * base + gas_used * cu_per_gas``);
* a websocket handshake is refused ``435`` when every slot of the tier is held, else
  spends ``connect_cu`` (a CU refusal, or a connect cost above the window, is
  ``throttled``); an admitted handshake holds its slot until its recorded time +
  latency (the connection's life, as a HAR records a websocket), or to the end of the
  trace when no latency is recorded;
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
from collections import Counter
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..config.pricing import Pricing
from ..config.scenario import LimiterSettings
from ..config.tiers import Tier
from ..core.vocabulary import OUTCOMES, WINDOW_S
from ..policy.admission import Admission
from .costs import CONNECT, CostModel
from .recorded import CLASSES, KIND_SIZE, Recorded, class_of
from .replay_core import Attempts, decide

_CLASS_OF = np.array([class_of(o) for o in range(len(OUTCOMES))] + [""], dtype=object)
"""Outcome code -> class; the last entry, at :data:`~.replay_core.NOT_REPLAYED` (-1), is
``""`` (not replayed)."""


class Costs(NamedTuple):
    """Each row's reserved and settled CU, and a handshake's connect cost (None: the
    pricing's; the trace has no handshake)."""

    reserve: np.ndarray
    settle: np.ndarray
    connect_cu: float | None


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
        """Observed and predicted throttles per window, in time order: each window with
        any attempt, and after each one that the next such window does not follow at
        once, one idle window of zeros, standing for the whole gap up to the next row
        (a step plot draws the gap at zero). Rows grow with the attempts, never with the
        time the trace spans: two rows ten years apart give three windows, not 26
        million."""
        frame = pd.DataFrame({
            "window_start_s": self.window_start_s,
            "observed_throttles": (self.observed == "throttled") & self.compared,
            "predicted_throttles": (self.predicted == "throttled") & self.compared,
            "attempts": self.compared})
        frame = frame[~np.isnan(frame["window_start_s"])]
        sums = frame.groupby("window_start_s").sum()
        if len(sums) > 1:
            starts = sums.index.to_numpy()
            gap = np.round(np.diff(starts) / WINDOW_S) > 1
            idle = pd.DataFrame(0, index=starts[:-1][gap] + WINDOW_S, columns=sums.columns)
            sums = pd.concat([sums, idle]).sort_index()
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


def replay(rec: Recorded, costs: Costs, tier: Tier, pricing: Pricing,
           settings: LimiterSettings) -> np.ndarray:
    """The predicted class of every row (``""`` for rows not replayed).

    ``costs`` are each row's CU (a NaN reserve: a price the pricing lacks, the row is not
    replayed). The account is a fresh :class:`~sim.policy.admission.Admission` of
    ``tier`` under ``pricing``, its windows per ``settings``, its connect cost the trial
    one; the walk and each decision are the shared
    :func:`~sim.calibration.replay_core.decide`'s. Only rows the CU window decided are
    replayed, every key valid and on HTTP/2 with SNI; an admitted handshake holds its
    slot until its recorded time + latency (to the end of the trace when none).
    """
    adm = Admission.for_tier(tier, pricing, settings, day_offset_s=rec.utc_day_offset_s,
                             connect_cu=costs.connect_cu)
    replayed = (rec.observed != "other") & ~np.isnan(costs.reserve)
    attempts = Attempts(rec.t_s, rec.method, rec.api, costs.reserve, costs.settle,
                        rec.latency_s, replayed=replayed, slot_end_s=rec.t_s + rec.latency_s)
    return _CLASS_OF[decide(adm, attempts)]


def costs_of(rec: Recorded, model: CostModel, theta: np.ndarray) -> Costs:
    """Each row's reserved and settled CU under ``theta``, and the connect cost; a
    recorded ``cu`` is what an admitted sizing request settled to."""
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
    connect = float(theta[model.index(CONNECT)]) if CONNECT in model.names else None
    return Costs(reserve, settle, connect)


def window_starts(rec: Recorded, settings: LimiterSettings) -> np.ndarray:
    """The start (s after the first request) of each row's window; NaN for first-hit."""
    shift = window_shift(rec, settings)
    if shift is None:
        return np.full(len(rec), np.nan)
    return np.floor((rec.t_s + shift) / WINDOW_S) * WINDOW_S - shift
