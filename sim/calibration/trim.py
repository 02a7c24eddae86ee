"""The decisions to trim so that the rest fit: a robust fit for a log with a few per cent
of mislabelled rows (a proxy's status, not the service's).

A trimmed decision is not imposed, and its own outcome is taken as unknown: the
windows' counters are bounded both ways over it (:func:`.identify.trimmed_readings`), so
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

from .identify import Events, Predict, _window, elastic, feasible

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
                    steps: tuple[float, ...] = (0.04, 0.02, 0.01, 0.005, 0.0025)
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
    then one by one, an LP verifying each."""
    recorded = np.where(ev.dec_admitted, "ok", "throttled")
    win = _window(ev, ev.dec_t, phase)
    for _ in range(passes):
        if predict is None:
            break
        theta = consensus_point(fit[1], phase, rule, predict, ev.dec, recorded)
        near = predict(theta, phase, rule)[ev.dec][out] == recorded[out]
        cand = out[near]
        if not cand.size:
            break
        before = len(out)
        for w in np.unique(win[cand]):
            mine = cand[win[cand] == w]
            for part in [mine] + ([np.array([r]) for r in mine] if len(mine) > 1 else []):
                if not np.isin(part, out).all():
                    continue
                trial = np.setdiff1d(out, part)
                f = feasible(ev, budget, phase, rule, scale, lo, hi, trial)
                if f is not None:
                    out, fit = trial, f
                    if len(part) == len(mine):
                        break
        if len(out) == before:
            break
    return out
