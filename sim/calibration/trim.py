"""The decisions to trim so that the rest fit: a robust fit for a log with a few per cent
of mislabelled rows (a proxy's status, not the service's).

A trimmed decision is not imposed, and its own outcome is taken as unknown: the
windows' counters are bounded both ways over it (:func:`.systems.trimmed_readings`), so
the set identified from the rest still contains the truth whenever every mislabelled
row is among the trimmed ones; trimming a correct row only widens it. The search is
row by row, never a whole window: the L1-elastic LP (least total violation, robust to
a few large outliers) gives a point; the decisions it violates and those the replay at
that point predicts otherwise than recorded are trimmed; again until the rest fit.
Then the trimmed rows the replay predicts as recorded at the point where it agrees with
the most recorded decisions (a maximum-consensus point: at the true prices only the
mislabelled rows disagree) are tried back, window by window, so that no more are
trimmed than the data need.
"""

from __future__ import annotations

import math

import numpy as np

from .systems import (
    Events,
    Predict,
    System,
    _bounds_x,
    _lp,
    _rows,
    _window,
    elastic,
    feasible,
    ratio_range,
)

VIOLATED = 1e-7
"""A decision the elastic LP misses by more than this share of the budget is trimmed."""


def trim_rows(ev: Events, budget: float, phase: float, rule: str, scale: np.ndarray,
              lo: np.ndarray, hi: np.ndarray, predict: Predict | None = None,
              most: float = 0.25, rounds: int = 12) -> np.ndarray | None:
    """Positions in ``ev.dec`` to trim at ``phase`` under ``rule`` so that the rest fit
    (module doc), or None when more than ``most`` of the decisions would have to go or
    ``rounds`` rounds do not reach a fit."""
    n = len(ev.dec)
    recorded = np.where(ev.dec_admitted, "ok", "throttled")
    out = np.zeros(0, np.int64)
    fit = feasible(ev, budget, phase, rule, scale, lo, hi)
    for _ in range(rounds):
        if fit is not None:
            break
        val, viol, theta = elastic(ev, budget, phase, rule, scale, lo, hi, out)
        if not math.isfinite(val):
            return None
        kept = np.setdiff1d(np.arange(n), out)
        new = kept[viol > VIOLATED]
        if predict is not None:
            pred = predict(theta, phase, rule)[ev.dec]
            new = np.union1d(new, kept[pred[kept] != recorded[kept]])
        if not new.size:
            return None
        out = np.union1d(out, new)
        if len(out) > most * n:
            return None
        fit = feasible(ev, budget, phase, rule, scale, lo, hi, out)
    if fit is None:
        return None
    return _restore(ev, budget, phase, rule, scale, lo, hi, predict, out, fit)


def consensus_point(theta: np.ndarray, phase: float, rule: str, predict: Predict,
                    rows: np.ndarray, recorded: np.ndarray,
                    low: np.ndarray | None = None, high: np.ndarray | None = None,
                    steps: tuple[float, ...] = (0.02, 0.005, 0.00125)
                    ) -> np.ndarray:
    """``theta`` moved, one price at a time by the relative ``steps``, to where the
    replay agrees with most of the recorded outcomes ``recorded`` of the trace rows
    ``rows`` (a maximum-consensus point; ties keep the nearer one), each price held
    within ``[low, high]`` when given."""
    def score(th: np.ndarray) -> int:
        return int((predict(th, phase, rule)[rows] == recorded).sum())

    best, best_score = theta.copy(), score(theta)
    for step in steps:
        for j in range(len(best)):
            if best[j] <= 0:
                continue
            for sign in (1.0, -1.0):
                while True:
                    trial = best.copy()
                    trial[j] *= 1.0 + sign * step
                    if low is not None and not low[j] <= trial[j] <= high[j]:
                        break
                    got = score(trial)
                    if got <= best_score:
                        break
                    best, best_score = trial, got
    return best


def _restore(ev: Events, budget: float, phase: float, rule: str, scale: np.ndarray,
             lo: np.ndarray, hi: np.ndarray, predict: Predict | None, out: np.ndarray,
             fit: tuple, passes: int = 3) -> np.ndarray:
    """``out`` with the trimmed rows the rest admit back (module doc): candidates are
    those the replay predicts as recorded at the maximum-consensus point
    (:func:`consensus_point`, from the rest's interior point ``fit``), where a correct
    row trimmed next to a mislabelled one at a point a little off is predicted right
    and a mislabelled one is not; each window's candidates are tried back together,
    else each half of them, an LP verifying each."""
    recorded = np.where(ev.dec_admitted, "ok", "throttled")
    win = _window(ev, ev.dec_t, phase)
    theta = fit[1]
    for _ in range(passes):
        if predict is None:
            break
        theta = consensus_point(theta, phase, rule, predict, ev.dec, recorded)
        near = predict(theta, phase, rule)[ev.dec][out] == recorded[out]
        cand = out[near]
        if not cand.size:
            break
        before = len(out)
        for w in np.unique(win[cand]):
            groups = [cand[win[cand] == w]]
            while groups:   # a window's candidates together, else each half
                part = groups.pop()
                trial = np.setdiff1d(out, part)
                f = feasible(ev, budget, phase, rule, scale, lo, hi, trial)
                if f is not None:
                    out, fit = trial, f
                elif len(part) > 1:
                    groups += [part[: len(part) // 2], part[len(part) // 2:]]
        if len(out) == before:
            break
    return out


def _extreme(sys_: System, budget: float, scale: np.ndarray, lo: np.ndarray,
             hi: np.ndarray, j: int, sign: float) -> tuple[float, np.ndarray] | None:
    """Price ``j``'s minimum (``sign`` 1) or maximum (-1) over ``sys_`` and the
    positions, among the system's decision rows, of those that pin it (no slack)."""
    A, b = _rows(sys_, budget, scale)
    c = np.zeros(len(scale))
    c[j] = sign
    r = _lp(c, A, b, _bounds_x(lo, hi, scale))
    if r.status != 0:
        return None
    slack = (b - A @ r.x)[: sys_.n_dec]
    return float(r.x[j] * scale[j]), np.flatnonzero(slack <= 1e-9)


def widen(ev: Events, budget: float, scale: np.ndarray, lo: np.ndarray, hi: np.ndarray,
          drop: np.ndarray, ends: list, low: np.ndarray, high: np.ndarray, ratio: dict,
          ratios: tuple, rounds: int = 2) -> tuple[np.ndarray, np.ndarray, dict]:
    """The intervals ``low``/``high`` (and the gas caps' ``ratio``) of a trimmed fit,
    each end found again, up to ``rounds`` times, with the decisions that pin it
    trimmed too: a log that holds mislabelled rows may hold some that fit the rest (the
    last admission of a window recorded as its first throttle), and one of them at an
    end would move the end past the truth. ``ends``: per price, the phase cells
    (:class:`~.identify.Fit`) of its lowest and highest value."""
    low, high, ratio = low.copy(), high.copy(), dict(ratio)
    n = len(ev.dec)
    more = np.zeros(0, np.int64)
    for j, cells in enumerate(ends):
        for sign, f in ((1.0, cells[0]), (-1.0, cells[1])):
            if sign < 0 and not math.isfinite(high[j]):
                continue
            out, sys_ = drop, f.system
            for _ in range(rounds):
                got = _extreme(sys_, budget, scale, lo, hi, j, sign)
                if got is None or not got[1].size:
                    break
                pinned = np.setdiff1d(np.arange(n), out)[got[1]]
                out = np.union1d(out, pinned)
                again = feasible(ev, budget, f.phase, f.rule, scale, lo, hi, out)
                if again is None:
                    break
                sys_ = again[0]
                got = _extreme(sys_, budget, scale, lo, hi, j, sign)
                if got is None:
                    if sign < 0:
                        high[j] = math.inf
                    break
                low[j], high[j] = (min(low[j], got[0]), high[j]) if sign > 0 else \
                    (low[j], max(high[j], got[0]))
            more = np.union1d(more, np.setdiff1d(out, drop))
    if ratios and more.size:
        cells = {id(c): c for pair in ends for c in pair}.values()
        for f in cells:
            again = feasible(ev, budget, f.phase, f.rule, scale, lo, hi,
                             np.union1d(drop, more))
            if again is None:
                continue
            for pair in ratios:
                a, b = ratio_range(again[0], budget, scale, lo, hi, *pair)
                old = ratio.get(pair, (math.inf, -math.inf))
                ratio[pair] = (min(old[0], a), max(old[1], b))
    return low, high, ratio
