"""The replay's prediction for a recorded trace: each attempt's outcome class as the
service would decide it at the given prices (:class:`~.replay.Prediction`), on one tier
or, with accounts, each account on its own (:func:`~.accounts.replay_accounts`)."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from ..config.pricing import Pricing
from ..config.scenario import LimiterSettings
from ..config.tiers import Tier
from .accounts import replay_accounts
from .costs import CostModel, build_cost_model
from .recorded import Recorded, load_recorded
from .replay import Prediction, costs_of, replay, window_starts


def predict_recorded(rec: Recorded, model: CostModel, theta: np.ndarray, tier: Tier | None,
                     pricing: Pricing, settings: LimiterSettings, accounts=None,
                     acct: np.ndarray | None = None) -> Prediction:
    """:func:`predict_as_recorded` on an already-loaded trace and cost model;
    ``accounts`` (:class:`~.accounts.Account`) with each row's index ``acct``: each
    account replayed on its own tier instead of ``tier``."""
    costs = costs_of(rec, model, theta)
    if accounts:
        predicted = replay_accounts(rec, costs, accounts, acct, pricing, settings)
    else:
        predicted = replay(rec, costs, tier, pricing, settings)
    unusable = rec.unusable.copy()
    unusable[(unusable == "") & np.isnan(costs.reserve)] = "a sizing profile the pricing lacks"
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
    return predict_recorded(rec, model, model.theta_of(pricing), tier, pricing,
                            limiter_settings)
