"""``calibrate``: replay a trace as recorded, estimate the window phase, fit the prices.

Steps, each reported: (1) agreement *before*, with the given pricing and windows;
(2) throttles no price can explain (a throttle with no admitted billed request in the
12 s before it: the window was empty under every phase) are set aside and reported;
(3) the exact least-squares fit where the trace records ``cu`` (:mod:`.exact`);
(4) the window phase from Retry-After (:mod:`.phase`), sharpened by the decisions;
(5) the remaining prices searched on the decisions (:mod:`.search`), each as the
interval of values that reach the best agreement; (6) agreement *after*.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..config.pricing import Pricing
from ..config.scenario import LimiterSettings
from ..config.tiers import Tier
from ..core.vocabulary import WINDOW_S
from .costs import CostModel, build_cost_model
from .exact import ExactFit, fit_exact
from .phase import PhaseEstimate, phase_from_retry_after
from .recorded import Recorded, load_recorded
from .replay import Account, Prediction, costs_of, predict_recorded, replay
from .search import Interval, best_interval

FITS = ("phase", "cu", "decisions")
"""What ``--fit`` may name: the window phase, the exact fit on billed CU, the search on
decisions."""

CONTRADICTION = "throttled with no admitted billed request in the 12 s before it"


@dataclass(frozen=True)
class PriceFit:
    """One price: its value, how it was found, and the interval the data allow."""

    name: str
    before: float
    value: float
    how: str            # "exact", "decisions", "bounded", "not identified", "given"
    low: float | None = None
    high: float | None = None
    std_error: float | None = None

    def to_dict(self) -> dict:
        """JSON-ready fields."""
        return {k: v for k, v in self.__dict__.items()}


@dataclass
class Calibration:
    """Everything ``capsim calibrate`` reports."""

    tier: str
    rows: int
    before: Prediction
    after: Prediction
    settings_after: LimiterSettings
    prices: list[PriceFit]
    model: CostModel
    theta: np.ndarray
    exact: ExactFit | None
    phase: PhaseEstimate | None
    phase_interval: Interval | None
    contradictions: int
    throttles_observed: int
    verdict: str
    notes: list[str] = field(default_factory=list)

    def pricing_table(self) -> dict:
        """The fitted ``[pricing]`` table (only prices the trace touched)."""
        return self.model.to_pricing_table(self.theta)


def _contradicting(rec: Recorded, model: CostModel) -> np.ndarray:
    """Observed throttles with no observed-admitted billed request in the 12 s before."""
    billed = (model.R != 0).any(axis=1) if model.names else np.zeros(len(rec), bool)
    admitted_t = rec.t_s[billed & (rec.observed == "ok")]
    out = np.zeros(len(rec), dtype=bool)
    thr = np.flatnonzero((rec.observed == "throttled") & rec.compared)
    if thr.size == 0:
        return out
    t = rec.t_s[thr]
    # admitted requests in (t - 12, t)
    k_hi = np.searchsorted(admitted_t, t, side="left")
    k_lo = np.searchsorted(admitted_t, t - WINDOW_S, side="right")
    out[thr] = (k_hi - k_lo) == 0
    return out


def _search_range(model: CostModel, j: int, budget: float) -> np.ndarray:
    coeff = max(np.abs(model.R[:, j]).max(), np.abs(model.S[:, j]).max(), 1e-300)
    hi = budget / coeff
    return np.concatenate([[0.0], np.geomspace(hi * 1e-4, hi, 48)])


def calibrate(trace: str | os.PathLike | pd.DataFrame, tier: Tier, pricing: Pricing, *,
              limiter_settings: LimiterSettings | None = None,
              fit: tuple[str, ...] = FITS) -> Calibration:
    """Calibrate ``pricing`` and the window phase on ``trace`` for ``tier`` (module doc)."""
    settings = limiter_settings or LimiterSettings()
    rec = load_recorded(trace)
    model = build_cost_model(rec, pricing)
    theta0 = model.theta_of(pricing)
    account = Account.of(tier, pricing)
    before = predict_recorded(rec, model, theta0, account, settings)
    notes: list[str] = []

    bad = _contradicting(rec, model)
    thr_total = int(((rec.observed == "throttled") & rec.compared).sum())
    if bad.any():
        unusable = rec.unusable.copy()
        unusable[bad] = CONTRADICTION
        rec = replace(rec, unusable=unusable)
    verdict = "fitted"
    if thr_total and bad.sum() == thr_total:
        verdict = "contradicted"
        notes.append(f"every observed throttle ({thr_total}) came with no admitted billed "
                     "request in the 12 s before it: no price and no window phase explains "
                     "them, so no price was fitted to them")

    theta = theta0.copy()
    how = {name: "given" for name in model.names}
    errors: dict[str, float] = {}
    exact = fit_exact(rec, model) if "cu" in fit else None
    if exact is not None:
        for name, v in exact.values.items():
            theta[model.index(name)] = v
            how[name] = "exact"
            errors[name] = exact.std_errors[name]

    phase = phase_from_retry_after(rec) if "phase" in fit else None
    if phase is not None:
        settings = LimiterSettings(kind=settings.kind, refund_to=settings.refund_to,
                                   alignment="utc", phase_s=phase.estimate)

    intervals: dict[str, Interval] = {}
    searchable = [j for j, nm in enumerate(model.names) if how[nm] != "exact"]
    mask = rec.compared
    observed = rec.observed

    forced = [True]

    def agreement(th: np.ndarray, st: LimiterSettings) -> int:
        reserve, settle = costs_of(rec, model, th)
        pred = replay(rec, reserve, settle, account, st, forced=forced[0])
        ok = mask & (pred != "")
        return int((pred[ok] == observed[ok]).sum())

    run_decisions = "decisions" in fit and verdict != "contradicted" and searchable
    phase_iv: Interval | None = None
    if run_decisions:
        for _round in range(8):
            start = theta.copy()
            for j in searchable:
                grid = _search_range(model, j, account.budget_cu)
                if _round and theta[j] > 0:  # later rounds look near the last value
                    grid = np.geomspace(theta[j] / 1.5, theta[j] * 1.5, 33)

                def score(v: float, j=j, st=settings) -> int:
                    th = theta.copy()
                    th[j] = v
                    return agreement(th, st)

                iv = best_interval(score, grid, prefer=theta[j] if theta[j] == theta[j]
                                   else None, bisect_steps=10)
                if _round and (iv.at_low or iv.at_high):
                    iv = best_interval(score, _search_range(model, j, account.budget_cu),
                                       prefer=theta[j], bisect_steps=10)
                intervals[model.names[j]] = iv
                theta[j] = iv.mid
            if "phase" in fit and thr_total:
                phase_iv = _phase_search(agreement, theta, settings, phase,
                                         local=phase_iv is not None)
                settings = LimiterSettings(kind=settings.kind, refund_to=settings.refund_to,
                                           alignment="utc", phase_s=phase_iv.mid % WINDOW_S)
            if np.allclose(start, theta, rtol=1e-3, equal_nan=True):
                break
        # Polish on the free-running replay (what "agreement after" measures), near the
        # values the recorded-history score found.
        forced[0] = False
        for j in searchable:
            if not theta[j] > 0 or intervals[model.names[j]].at_low:
                continue

            def free(v: float, j=j, st=settings) -> int:
                th = theta.copy()
                th[j] = v
                return agreement(th, st)

            iv = best_interval(free, np.linspace(theta[j] / 1.08, theta[j] * 1.08, 17),
                               prefer=theta[j], bisect_steps=6)
            if not (iv.at_low or iv.at_high):
                intervals[model.names[j]] = iv
                theta[j] = iv.mid
    elif "phase" in fit and thr_total and verdict != "contradicted":
        phase_iv = _phase_search(agreement, theta, settings, phase)
        settings = LimiterSettings(kind=settings.kind, refund_to=settings.refund_to,
                                   alignment="utc", phase_s=phase_iv.mid % WINDOW_S)

    prices = []
    for j, name in enumerate(model.names):
        iv = intervals.get(name)
        if how[name] == "exact":
            prices.append(PriceFit(name, float(theta0[j]), float(theta[j]), "exact",
                                   std_error=errors[name]))
        elif iv is None:
            prices.append(PriceFit(name, float(theta0[j]), float(theta[j]), "given"))
        elif iv.at_low and iv.at_high:
            theta[j] = theta0[j]
            prices.append(PriceFit(name, float(theta0[j]), float(theta0[j]), "not identified",
                                   iv.low, iv.high))
        elif iv.at_low or iv.at_high:
            # only bounded: keep the given price if it lies inside, else the bound
            keep = float(np.clip(theta0[j], iv.low, iv.high)) if theta0[j] == theta0[j] \
                else iv.mid
            theta[j] = keep
            prices.append(PriceFit(name, float(theta0[j]), keep, "bounded",
                                   None if iv.at_low else iv.low,
                                   None if iv.at_high else iv.high))
        else:
            prices.append(PriceFit(name, float(theta0[j]), float(theta[j]), "decisions",
                                   iv.low, iv.high))
    if verdict != "contradicted" and prices and all(
            p.how in ("bounded", "not identified", "given") for p in prices):
        verdict = "bounded" if any(p.how == "bounded" for p in prices) else "not identified"
    if not thr_total:
        notes.append("no throttle was observed: the decisions only bound the prices from "
                     "above (any price up to the bound fits)")
    after = predict_recorded(rec, model, theta, account, settings)
    return Calibration(tier.name, len(rec), before, after, settings, prices, model, theta,
                       exact, phase, phase_iv, int(bad.sum()), thr_total, verdict, notes)


def _phase_search(agreement, theta: np.ndarray, settings: LimiterSettings,
                  phase: PhaseEstimate | None, local: bool = False) -> Interval:
    """The interval of phases reaching the best agreement, within the Retry-After arc
    when there is one (else, when ``local``, within 0.4 s of the current phase)."""
    if phase is not None:  # the Retry-After arc bounds the search, first and last
        lo, hi = phase.low - 0.05, phase.high + 0.05
        grid = np.linspace(lo, hi, max(5, int((hi - lo) / 0.05) + 1))
    elif local and settings.alignment == "utc":
        grid = settings.phase_s + np.linspace(-0.4, 0.4, 17)
    else:
        grid = np.arange(0.0, WINDOW_S, 0.1)

    def score(p: float) -> int:
        st = LimiterSettings(kind=settings.kind, refund_to=settings.refund_to,
                             alignment="utc", phase_s=p % WINDOW_S)
        return agreement(theta, st)

    prefer = settings.phase_s if settings.alignment == "utc" else None
    return best_interval(score, grid, prefer=prefer, bisect_steps=8)
