"""``calibrate``: replay a trace as recorded, estimate the window phase, fit the prices.

Steps, each reported: (1) agreement *before*, with the given pricing and windows;
(2) throttles no price can explain (a throttle with no admitted billed request in the
12 s before it: the window was empty under every phase) are set aside and named;
(3) the exact least-squares fit where the trace records ``cu`` (:mod:`.exact`): what the
bill identifies, held to its standard errors in what follows;
(4) the arc of window phases Retry-After allows (:mod:`.phase`);
(5) the set of prices, window phases and refund rules consistent with every recorded
decision, jointly, by linear programming (:mod:`.identify`): each price's interval is
its projection, the phase an interval, the refund rule ``origin-window``,
``current-window`` or both; when no set fits every decision (mislabelled rows), the
fit is robust: decisions are trimmed row by row (:mod:`.trim`), each taken as of
unknown outcome so the intervals of the rest stay honest, their share bounded by
:data:`MOST_LEFT_OUT`, reported and named (:class:`DroppedRow`); the point estimate is
the set's Chebyshev centre; (6) agreement *after*, replaying at that point.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..config.pricing import Pricing
from ..config.scenario import LimiterSettings
from ..config.tiers import Tier
from ..core.errors import CapsimError
from ..core.vocabulary import WINDOW_S
from .accounts import (
    Account,
    Conflict,
    account_of_rows,
    conflicts_note,
    separated_times,
    shared_budget_conflicts,
)
from .client import client_note, client_timing, timing_open
from .costs import CAP_PREFIX, PER_GAS, CostModel, build_cost_model
from .exact import ExactFit, fit_exact
from .identify import Identified, identify
from .phase import PhaseEstimate, phase_from_retry_after
from .predict import predict_recorded
from .recorded import Recorded, load_recorded
from .replay import Prediction, costs_of, replay
from .search import Interval
from .systems import RULES, Events, Scaled, build_events

FITS = ("phase", "cu", "decisions")
"""What ``--fit`` may name: the window phase and refund rule, the exact fit on billed CU,
the joint identification on decisions."""

CONTRADICTION = "throttled with no admitted billed request in the 12 s before it"

DOES_NOT_FIT_BELOW = 0.99
"""Agreement after the fit, over the compared rows not left out by name, below which
the verdict is ``does not fit``: the fitted prices, phase and refund rule still
mispredict more than 1 attempt in 100 that they were fitted to, which a right tier and a
clean trace do not; a wrong ``--tier`` does (the shipped sample against ``RPC`` instead
of ``All 3 APIs``: 65.5 % after)."""

MOST_LEFT_OUT = 0.05
"""The share of the decisions that may be left out by name (mislabelled, duplicated,
contradicting) before the verdict is ``does not fit``: a noisy log loses a few rows in
a hundred, a log that is not one account's traffic at one tier loses many more."""

DOES_NOT_FIT_CAUSES = (
    "likely causes: a wrong --tier (the account's tier when the trace was recorded); a "
    "log mixing several accounts (each account's keys share its own budget: give "
    "--accounts FILE); many mislabelled or duplicated rows (a proxy's status, not the "
    "service's); other limiter settings")


@dataclass(frozen=True)
class PriceFit:
    """One price: its value, how it was found, and the interval the data allow."""

    name: str
    before: float
    value: float
    how: str            # "exact", "decisions", "bounded", "not identified", "given"
    # low/high: the price's projection of the identified set (None: unbounded that side)
    low: float | None = None
    high: float | None = None
    std_error: float | None = None

    def to_dict(self) -> dict:
        """JSON-ready fields."""
        return {k: v for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class GasCap:
    """A profile's gas cap (cap CU / CU per gas) and its exact interval over the set."""

    profile: str
    value: float
    low: float
    high: float | None


@dataclass(frozen=True)
class DroppedRow:
    """A decision left out of the fit: the trace's row number, time, method, recorded
    outcome and why."""

    row: int
    t_s: float
    method: str
    observed: str
    why: str


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
    rules_fit: tuple[str, ...] = ()
    dropped: list[DroppedRow] = field(default_factory=list)
    gas_caps: dict[str, GasCap] = field(default_factory=dict)
    lp_candidates: int = 0
    client_delay_s: tuple[float, float] | None = None  # client-side: the delays assumed
    client_times: bool = False
    accounts: list[Account] = field(default_factory=list)
    account_rows: list[int] = field(default_factory=list)    # compared rows per account
    account_agreement: list[float] = field(default_factory=list)  # after, per account
    conflicts: list[Conflict] = field(default_factory=list)
    duplicates: list[int] = field(default_factory=list)   # trace rows read once
    trimmed: int = 0        # decisions trimmed by the robust fit (in ``dropped``)

    @property
    def kept_agreement(self) -> float:
        """The replay's agreement at the fit over the compared rows not left out."""
        return kept_agreement(self.after, self.dropped)[0]

    @property
    def trimmed_share(self) -> float:
        """The share of the compared attempts the robust fit trimmed."""
        return self.trimmed / max(self.after.n_compared, 1)

    @property
    def refund_rule(self) -> str:
        """``origin-window``, ``current-window``, ``both fit`` or ``not identified``."""
        if len(self.rules_fit) == 2:
            return "both fit"
        return self.rules_fit[0] if self.rules_fit else "not identified"

    def pricing_table(self) -> dict:
        """The fitted ``[pricing]`` table (only prices the trace touched)."""
        return self.model.to_pricing_table(self.theta)


def _require_compared_rows(rec: Recorded, trace) -> None:
    """A :class:`CapsimError` when no row of the trace can be compared: no agreement can
    be measured and no price fitted, so nothing is written (not "nan %" and the given
    prices presented as a calibration)."""
    if rec.compared.any():
        return
    reasons = Counter(str(r) for r in rec.unusable)
    why = "; ".join(f"{n:,} {'row' if n == 1 else 'rows'}: {r}" for r, n in
                    sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))
    raise CapsimError(
        "no attempt has a status the CU window decided (200 or 101, 434, -32005, 402, "
        "435), so there is nothing to compare or fit" + (f" ({why})" if why else
                                                          " (the trace has no rows)")
        + "; expected a trace whose status column records the service's answers",
        file=None if isinstance(trace, pd.DataFrame) else str(trace), field="status")


def _contradicting(rec: Recorded, model: CostModel, slack: float = 0.0) -> np.ndarray:
    """Observed throttles with no observed-admitted billed request in the 12 s before
    (``slack``: how far a decision may lie after its recorded time, client-side)."""
    billed = (model.R != 0).any(axis=1) if model.names else np.zeros(len(rec), bool)
    admitted_t = np.sort(rec.t_s[billed & (rec.observed == "ok")])
    out = np.zeros(len(rec), dtype=bool)
    thr = np.flatnonzero((rec.observed == "throttled") & rec.compared)
    if thr.size == 0:
        return out
    t = rec.t_s[thr]
    # admitted requests in (t - 12, t)
    k_hi = np.searchsorted(admitted_t, t + slack, side="left")
    k_lo = np.searchsorted(admitted_t, t - WINDOW_S - slack, side="right")
    out[thr] = (k_hi - k_lo) == 0
    return out


def _price_bounds(model: CostModel, exact: ExactFit | None) -> tuple[np.ndarray,
                                                                       np.ndarray]:
    """Prices are >= 0; one the bill identifies (:mod:`.exact`) is held within 4 standard
    errors (at least 1e-6 of its value) of its least-squares value."""
    k = len(model.names)
    lo, hi = np.zeros(k), np.full(k, np.inf)
    if exact is not None:
        for name, v in exact.values.items():
            j = model.index(name)
            tol = max(4.0 * exact.std_errors.get(name, 0.0), 1e-6 * abs(v), 1e-12)
            lo[j], hi[j] = max(0.0, v - tol), v + tol
    return lo, hi


def _dropped_rows(rec: Recorded, ev: Events, drop: np.ndarray) -> list[DroppedRow]:
    out = []
    for d in np.sort(drop):
        i = int(ev.dec[d])
        if rec.observed[i] == "ok":
            why = ("recorded admitted, but its window already held too much for it at "
                   "every price that fits the rest: trimmed as likely mislabelled (its "
                   "outcome taken as unknown)")
        else:
            why = ("recorded throttled, but its window had room for it at every price "
                   "that fits the rest: trimmed as likely mislabelled (its outcome taken "
                   "as unknown)")
        out.append(DroppedRow(int(rec.order[i]), float(rec.t_s[i]), str(rec.method[i]),
                              str(rec.observed[i]), why))
    return out


def _duplicates(rec: Recorded) -> np.ndarray:
    """Rows that repeat an earlier row in every field the calibration reads (time to the
    nanosecond, key, API, method, status, latency, items, profiles, gas, CU,
    Retry-After): a log that wrote one answer twice. True for each repeat."""
    if not len(rec):
        return np.zeros(0, bool)
    frame = pd.DataFrame({
        "t": np.round(rec.t_s * 1e9).astype(np.int64), "m": rec.method, "a": rec.api,
        "k": rec.key if rec.key is not None else "", "s": rec.status, "l": rec.latency_s,
        "i": rec.items, "p": [",".join(p) for p in rec.profiles], "g": rec.gas_used,
        "c": rec.cu, "r": rec.retry_after_s})
    return frame.duplicated(keep="first").to_numpy()


def kept_agreement(after: Prediction, dropped: list[DroppedRow]) -> tuple[float, int, int]:
    """Agreement over the compared rows not left out by name: ``(share, agreed,
    compared)`` (share NaN when none)."""
    out = np.isin(after.order, [d.row for d in dropped])
    kept = after.compared & ~out
    agreed = int((after.predicted[kept] == after.observed[kept]).sum())
    n = int(kept.sum())
    return (agreed / n if n else math.nan), agreed, n


def _judge(verdict: str, after: Prediction, dropped: list[DroppedRow],
           notes: list[str], open_rows: np.ndarray | None = None) -> str:
    """``does not fit`` when the fit mispredicts more than 1 % of the rows it kept, or
    had to leave out more than :data:`MOST_LEFT_OUT` of the compared rows; else
    ``verdict`` unchanged. Never ``fitted`` on too little. ``open_rows``: rows whose
    outcome a client-side log's timing leaves open (:func:`.client.timing_open`); a
    misprediction there is not counted against the fit, and the note says how many."""
    if verdict not in ("fitted", "bounded", "not identified"):
        return verdict
    if open_rows is not None:
        missed = after.compared & (after.predicted != after.observed)
        spared = missed & open_rows
        if spared.any():
            notes.append(f"{int(spared.sum()):,} of the {int(missed.sum()):,} attempts the "
                         "replay at the fit mispredicts were decided, within the timing "
                         "bounds, either side of a window start, an attempt answered "
                         "otherwise or a settlement: the log's times leave their outcome "
                         "open, so they do not count against the fit")
            after = replace(after, compared=after.compared & ~spared)
    share, agreed, n = kept_agreement(after, dropped)
    left = len(dropped) / max(after.n_compared, 1)
    why = []
    if not n or share < DOES_NOT_FIT_BELOW:
        why.append(f"the replay at the fit agrees with {agreed:,} of the {n:,} compared "
                   f"attempts not left out ({'n/a' if not n else f'{100 * share:.2f} %'}), "
                   f"below {100 * DOES_NOT_FIT_BELOW:g} %")
    if left > MOST_LEFT_OUT:
        why.append(f"{len(dropped):,} of {after.n_compared:,} compared attempts "
                   f"({100 * left:.1f} %) had to be left out, more than "
                   f"{100 * MOST_LEFT_OUT:g} %")
    if not why:
        return verdict
    notes.append("does not fit: " + "; ".join(why) + ": these prices, window phase and "
                 f"refund rule do not explain the recorded decisions; {DOES_NOT_FIT_CAUSES}")
    return "does not fit"


STEPS = ("reading the trace", "replaying with the given prices", "fitting the bill",
         "fitting the decisions", "replaying with the fitted prices")
"""The steps of :func:`calibrate`, in order (fitting the decisions only with that fit)."""


def calibrate(trace: str | os.PathLike | pd.DataFrame, tier: Tier | None, pricing: Pricing,
              *, limiter_settings: LimiterSettings | None = None,
              fit: tuple[str, ...] = FITS, accounts: list[Account] | None = None,
              client_times: bool = False, delay_s: tuple[float, float] | None = None,
              progress: Callable[[str], None] | None = None) -> Calibration:
    """Calibrate ``pricing``, the window phase and the refund rule on ``trace`` for
    ``tier`` (module doc); ``accounts``: the trace mixes these accounts' keys, each
    calibrated on its own budget (its tier's; ``tier`` is then unused) with one price
    list identified from every account's decisions jointly (:mod:`.accounts`);
    ``client_times``: the trace's times are the client's send times (:mod:`.client`),
    the network delay each way within ``delay_s`` (seconds; None: bounded by each row's
    recorded latency). ``progress(step)`` is told each step as it starts (one of
    :data:`STEPS`)."""
    step = progress or (lambda _name: None)
    settings = limiter_settings or LimiterSettings()
    step(STEPS[0])
    rec = load_recorded(trace)
    _require_compared_rows(rec, trace)
    dup = _duplicates(rec)
    duplicates = sorted(int(r) for r in rec.order[dup])
    if dup.any():
        from .accounts import subset

        rec = subset(rec, ~dup)
    if "cu" not in fit:  # decisions alone: the bill is not read, not even as settlements
        rec = replace(rec, cu=np.full(len(rec), np.nan))
    acct = None
    rec_lp = rec  # the rows as the LP reads them: each account's apart from the others'
    if accounts:
        keys = rec.key if rec.key is not None else np.full(len(rec), "(none)", object)
        acct = account_of_rows(keys, accounts, None if isinstance(trace, pd.DataFrame)
                               else str(trace))
        rec_lp = replace(rec, t_s=separated_times(rec, acct))
        tier = max((a.tier for a in accounts), key=lambda t: t.cu_per_window)
    model = build_cost_model(rec, pricing)
    theta0 = model.theta_of(pricing)
    unc, slack, rec_replay = None, 0.0, rec
    if client_times:
        timing = client_timing(rec, rec_lp.t_s, delay_s)
        unc, slack = timing.uncertain, timing.slack
        rec_lp = replace(rec_lp, t_s=timing.earliest)
        rec_replay = timing.replayed(rec)

    def predict_at(th: np.ndarray, st: LimiterSettings) -> Prediction:
        return predict_recorded(rec_replay, model, th, tier, pricing, st, accounts, acct)

    step(STEPS[1])
    before = predict_at(theta0, settings)
    notes: list[str] = []
    if duplicates:
        notes.append(f"{len(duplicates):,} rows repeat an earlier row in every field "
                     "(the same answer logged twice) and were read once; see report.md")
    conflicts = [] if accounts or "decisions" not in fit else \
        shared_budget_conflicts(rec, model)

    bad = _contradicting(rec_lp, model, slack)
    thr_total = int(((rec.observed == "throttled") & rec.compared).sum())
    contradicting = [DroppedRow(int(rec.order[i]), float(rec.t_s[i]), str(rec.method[i]),
                                "throttled", CONTRADICTION) for i in np.flatnonzero(bad)]
    if bad.any():
        unusable = rec.unusable.copy()
        unusable[bad] = CONTRADICTION
        rec = replace(rec, unusable=unusable)
        rec_lp = replace(rec_lp, unusable=unusable)
        rec_replay = replace(rec_replay, unusable=unusable)
    verdict = "fitted"
    if conflicts:
        verdict = "does not fit"
        notes.append(conflicts_note(conflicts))
    if thr_total and bad.sum() == thr_total:
        verdict = "contradicted"
        notes.append(f"every observed throttle ({thr_total}) came with no admitted billed "
                     "request in the 12 s before it: no price and no window phase explains "
                     "them, so no price was fitted to them")

    theta = theta0.copy()
    step(STEPS[2])
    exact = fit_exact(rec, model) if "cu" in fit else None
    phase = phase_from_retry_after(rec) if "phase" in fit else None
    lo, hi = _price_bounds(model, exact)
    ident: Identified | None = None
    dropped: list[DroppedRow] = []
    trimmed = 0
    budget = tier.cu_per_window
    if "decisions" in fit and verdict not in ("contradicted", "does not fit") and model.names:
        budgets = None if acct is None else np.array(
            [a.tier.cu_per_window for a in accounts], float)[acct]
        ev = build_events(rec_lp, model, budgets=budgets, unc=unc)
        scale = Scaled.of(model, budget).scale
        per_gas = model.names.index(PER_GAS) if PER_GAS in model.names else None
        ratios = tuple((j, per_gas) for j, nm in enumerate(model.names)
                       if nm.startswith(CAP_PREFIX) and per_gas is not None)
        fit_phase = "phase" in fit and thr_total > 0
        fixed = None
        if not fit_phase:
            fixed = (settings.phase_s if settings.alignment == "utc"
                     else rec.utc_day_offset_s % WINDOW_S)
        rules = RULES if fit_phase else (settings.refund_to,)
        arc = None if phase is None else (phase.low - 0.05, phase.high + 0.05)

        def predict(th: np.ndarray, ph: float, rule: str) -> np.ndarray:
            st = LimiterSettings(kind=settings.kind, refund_to=rule, alignment="utc",
                                 phase_s=ph % WINDOW_S)
            if accounts:
                return predict_at(th, st).predicted
            return replay(rec_replay, costs_of(rec_replay, model, th), tier, pricing, st)

        kw = dict(arc=arc, rules=rules, ratios=ratios, fixed_phase=fixed, prefer=theta0,
                  predict=predict)
        step(STEPS[3])
        ident = identify(ev, budget, scale, lo, hi, **kw)
        if ident is None and exact is not None:
            notes.append("no price fits the decisions with the bill's least-squares prices "
                         "held to their standard errors; they were set free")
            lo, hi = _price_bounds(model, None)
            ident = identify(ev, budget, scale, lo, hi, **kw)
        if ident is None:
            verdict = "inconsistent"
            notes.append("no window phase, refund rule and prices fit the decisions, even "
                         "leaving some out; the given prices are kept")
        else:
            dropped = _dropped_rows(rec, ev, ident.dropped)
            trimmed = len(dropped)
            notes += ident.notes
            if fit_phase:
                settings = LimiterSettings(kind=settings.kind, refund_to=ident.rule,
                                           alignment="utc", phase_s=ident.phase % WINDOW_S)
            elif settings.alignment != "utc":
                notes.append("no throttle was observed: the window phase and refund rule "
                             "are not identified; the given windows were kept")

    prices: list[PriceFit] = []
    errors = {} if exact is None else exact.std_errors
    for j, name in enumerate(model.names):
        is_exact = exact is not None and name in exact.values
        if ident is None:
            if is_exact:
                theta[j] = exact.values[name]
                prices.append(PriceFit(name, float(theta0[j]), float(theta[j]), "exact",
                                       std_error=errors[name]))
            else:
                prices.append(PriceFit(name, float(theta0[j]), float(theta0[j]), "given"))
            continue
        low, high = float(ident.low[j]), float(ident.high[j])
        has_low, has_high = low > 1e-12 * max(1.0, abs(high) if math.isfinite(high)
                                                else 1.0), math.isfinite(high)
        value = float(ident.theta[j])
        if is_exact:
            value, how = exact.values[name], "exact"
        elif has_low and has_high:
            how = "decisions"
        elif has_low or has_high:
            how = "bounded"
        else:
            how = "not identified"
        theta[j] = value
        prices.append(PriceFit(name, float(theta0[j]), value, how,
                               low if has_low or is_exact else None,
                               high if has_high else None, errors.get(name)))
    if ident is not None:
        # a price the data do not pin down keeps its given value where the decisions
        # still all hold with it (else the centre's value stays)
        loose = [j for j, p in enumerate(prices)
                 if p.how in ("bounded", "not identified") and theta0[j] == theta0[j]]
        if loose:
            trial = theta.copy()
            trial[loose] = theta0[loose]
            sys_ = ident.system
            if (sys_.A @ trial <= sys_.b + 1e-9 * budget).all():
                theta = trial
                prices = [replace(p, value=float(theta0[j])) if j in loose else p
                          for j, p in enumerate(prices)]
    gas_caps: dict[str, GasCap] = {}
    if ident is not None:
        for (j, g), (a, b) in ident.ratio.items():
            prof = model.names[j].removeprefix(CAP_PREFIX)
            gas_caps[prof] = GasCap(prof, float(theta[j] / theta[g]) if theta[g] else math.nan,
                                    float(a), None if not math.isfinite(b) else float(b))
    if verdict == "fitted" and prices and all(
            p.how in ("bounded", "not identified", "given") for p in prices):
        verdict = "bounded" if any(p.how == "bounded" for p in prices) else "not identified"
    if not thr_total:
        notes.append("no throttle was observed: the decisions only bound the prices from "
                     "above (any price up to the bound fits)")
    step(STEPS[4])
    after = predict_at(theta, settings)
    if client_times:
        notes.append(client_note(delay_s))
    open_rows = None
    if client_times and settings.alignment == "utc":
        open_rows = timing_open(rec, timing, settings.phase_s)
    verdict = _judge(verdict, after, contradicting + dropped, notes, open_rows)
    phase_iv = None
    if ident is not None and "phase" in fit and thr_total:
        phase_iv = Interval(ident.phase_low, ident.phase_high, after.agreed, False, False)
    per_acct_rows, per_acct_agree = [], []
    for a in range(len(accounts or ())):
        m = after.compared & (acct == a)
        per_acct_rows.append(int(m.sum()))
        per_acct_agree.append(float((after.predicted[m] == after.observed[m]).mean())
                              if m.any() else math.nan)
    label = tier.name if not accounts else (
        f"{len(accounts)} accounts (" + ", ".join(f"{a.name}: {a.tier.name}"
                                                   for a in accounts) + ")")
    return Calibration(label, len(rec), before, after, settings, prices, model, theta,
                       exact, phase, phase_iv, int(bad.sum()), thr_total, verdict, notes,
                       rules_fit=() if ident is None else ident.rules,
                       dropped=contradicting + dropped, gas_caps=gas_caps,
                       lp_candidates=0 if ident is None else ident.candidates_tried,
                       client_delay_s=delay_s, client_times=client_times,
                       accounts=list(accounts or ()), account_rows=per_acct_rows,
                       account_agreement=per_acct_agree, conflicts=conflicts,
                       duplicates=duplicates, trimmed=trimmed)


