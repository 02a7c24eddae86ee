"""The recorded decisions as linear systems over the prices, and the linear programs over
them (the building blocks of :mod:`.identify` and :mod:`.trim`).

With the window phase and the refund rule fixed, every recorded CU decision is a linear
inequality in the price vector ``theta`` (:mod:`.costs`): reservations and settlements are
linear in the prices, so the CU a window holds just before a request is ``C @ theta + c``
(its admitted reservations so far, minus the refunds it received) and

* a request recorded admitted says ``(C + R) @ theta + c <= budget``;
* a request recorded throttled says ``(C + R) @ theta + c > budget``, taken as
  ``>= budget * (1 + THROTTLE_MARGIN)``: an LP cannot hold a strict inequality, and a
  margin of 1e-6 of the budget (0.0084 CU on an 8,400 CU window) is far below any price
  step a trace could resolve, so it excludes no price a trace can tell apart.

Settling never refunds more than was reserved (the reservation is the maximum the spec
allows), so every sizing request with a recorded gas figure also says ``S @ theta <=
R @ theta``. The set of prices meeting all of them is a polyhedron; each price's interval
is its projection (:func:`solve` minimises and maximises the price over it: two LPs per
price, scipy's HiGHS), so no interval excludes a value consistent with the data. A gas
cap is a ratio of two unknowns (cap CU / CU per gas); its interval comes from the
Charnes-Cooper transform of the linear-fractional program, exact as well.

The phase enters only through which window each event falls in, and that assignment
changes only where the phase crosses the UTC time (mod 12 s) of an event (a request or a
settlement): the candidates are the midpoints between those breakpoints
(:func:`breakpoints`). The refund rule (``origin-window`` or ``current-window``) decides
where a refund lands. Under ``current-window`` a refund that lands in a later window can
take that window's counter below zero, and the counter is clipped at zero: which refunds
clip is a *pattern* fixed per LP (each choice adds its own linear condition), found by
iterating from "no clipping unless the window held nothing" to a pattern that is
consistent at the LP's own solution (:func:`feasible`). The identified set is then exact
for that pattern; another clipping pattern could in principle add a disjoint piece.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from ..core.vocabulary import WINDOW_S
from .costs import CostModel
from .recorded import KIND_SIZE, Recorded

RULES = ("origin-window", "current-window")
Predict = Callable[[np.ndarray, float, str], np.ndarray]
"""``predict(theta, phase, rule)``: the replay's predicted class of every trace row."""
THROTTLE_MARGIN = 1e-6
"""A throttled request's window plus its reservation exceeds the budget by at least this
fraction of the budget (see the module doc)."""
_FEAS_TOL = 1e-9
@dataclass(frozen=True)
class Uncertain:
    """When each row's decision and settlement happened is known only within bounds (a
    client-side log: send times, network delays): per trace row, the decision lies in
    ``[t_s, t_s + width]`` (``t_s`` the earliest: send time plus the least delay), the
    settlement in ``[settle_lo, settle_hi]``. :func:`build_system` then imposes only
    what holds for every such timing (:func:`_build_system_uncertain`)."""

    width: np.ndarray
    settle_lo: np.ndarray
    settle_hi: np.ndarray


@dataclass(frozen=True)
class Events:
    """The phase-independent pieces of a trace's decisions (rows in time order).

    ``dec``: rows whose recorded outcome is a CU decision (admitted or throttled, billed,
    compared); ``res``: admitted billed rows (they hold their reservation);
    ``ref``: admitted rows whose settlement refunds part of the reservation, with the
    refund as ``ref_vec @ theta + ref_const`` at time ``ref_t``.
    """

    n_prices: int
    utc0: float                  # seconds after 00:00 UTC at t = 0
    dec: np.ndarray
    dec_t: np.ndarray
    dec_admitted: np.ndarray
    dec_R: np.ndarray
    dec_type: np.ndarray         # equal ids: identical reservations
    res: np.ndarray
    res_t: np.ndarray
    res_R: np.ndarray
    ref: np.ndarray
    ref_t: np.ndarray            # settlement time
    ref_origin_t: np.ndarray     # reservation time
    ref_vec: np.ndarray
    ref_const: np.ndarray
    hard_A: np.ndarray           # phase-independent rows: hard_A @ theta <= hard_b
    hard_b: np.ndarray
    rec: Recorded | None = None
    model: CostModel | None = None
    row_budget: np.ndarray | None = None   # each trace row's account budget (None: one)
    unc: Uncertain | None = None           # client-side timing bounds (None: exact times)

    def dec_budget(self, budget: float) -> np.ndarray | float:
        """Each decision's window budget: its account's, or ``budget`` for one account."""
        return budget if self.row_budget is None else self.row_budget[self.dec]


def build_events(rec: Recorded, model: CostModel, use: np.ndarray | None = None,
                 budgets: np.ndarray | None = None, unc: Uncertain | None = None) -> Events:
    """The decisions and the CU events of ``rec`` under ``model`` (``use``: the rows
    allowed as decisions; default every compared one; ``budgets``: each row's account
    budget when the trace holds several accounts, their times kept apart by
    :func:`~.accounts.separated_times`; ``unc``: bounds on when each row was decided and
    settled, for a client-side log)."""
    k = len(model.names)
    billed = (model.R != 0).any(axis=1) if k else np.zeros(len(rec), bool)
    compared = rec.compared if use is None else use
    observed = rec.observed
    # a handshake refused at the slot cap (435) or a daily refusal (402) holds nothing and
    # is no CU decision
    is_dec = compared & billed & ((observed == "ok") | (observed == "throttled"))
    dec = np.flatnonzero(is_dec)
    res = np.flatnonzero(billed & (observed == "ok"))
    lat = np.nan_to_num(rec.latency_s, nan=0.0)
    cu_known = ~np.isnan(rec.cu) & (observed == "ok")
    # refund = R theta - settle; settle = S theta, or the recorded cu (a constant)
    ref_vec = model.R - np.where(cu_known[:, None], 0.0, model.S)
    ref_const = np.where(cu_known, -np.nan_to_num(rec.cu), 0.0)
    # only a sizing request settles to something else than it reserved
    sizing = rec.kind == KIND_SIZE
    refunds = res[sizing[res] & ~((model.R[res] == model.S[res]).all(axis=1) &
                                  ~cu_known[res])]
    # physical limits: a settlement never exceeds its reservation
    sizing_gas = np.flatnonzero((model.S != model.R).any(axis=1))
    rows_A = [model.S[sizing_gas] - model.R[sizing_gas]]
    rows_b = [np.zeros(len(sizing_gas))]
    known = res[cu_known[res] & sizing[res]]
    rows_A.append(-model.R[known])
    rows_b.append(-rec.cu[known])
    return Events(
        n_prices=k, utc0=rec.utc_day_offset_s,
        dec=dec, dec_t=rec.t_s[dec], dec_admitted=observed[dec] == "ok", dec_R=model.R[dec],
        dec_type=(np.unique(model.R[dec], axis=0, return_inverse=True)[1].ravel()
                  if len(dec) and k else np.zeros(len(dec), np.int64)),
        res=res, res_t=rec.t_s[res], res_R=model.R[res],
        ref=refunds, ref_t=(rec.t_s[refunds] + lat[refunds] if unc is None
                            else unc.settle_lo[refunds]),
        ref_origin_t=rec.t_s[refunds],
        ref_vec=ref_vec[refunds], ref_const=ref_const[refunds],
        hard_A=np.vstack(rows_A) if k else np.zeros((0, 0)),
        hard_b=np.concatenate(rows_b), rec=rec, model=model, row_budget=budgets, unc=unc)


def breakpoints(ev: Events) -> np.ndarray:
    """Sorted phases (s in [0, 12)) where some event changes window."""
    t = np.concatenate([ev.dec_t, ev.res_t, ev.ref_t])
    if ev.unc is not None:  # where an interval's end crosses a window start
        t = np.concatenate([t, ev.dec_t + ev.unc.width[ev.dec], ev.res_t + ev.unc.width[ev.res],
                            ev.unc.settle_hi[ev.ref]])
    return np.unique(np.round((ev.utc0 + t) % WINDOW_S, 9))


def candidate_phases(ev: Events, low: float = 0.0, high: float = WINDOW_S) -> np.ndarray:
    """Midpoints between consecutive breakpoints (on the circle) within ``[low, high]``
    (``high`` may exceed 12 for an arc that wraps); one phase per distinct assignment."""
    bp = breakpoints(ev)
    if bp.size == 0:
        return np.array([0.5 * (low + high)])
    nxt = np.append(bp[1:], bp[0] + WINDOW_S)
    mids = 0.5 * (bp + nxt)
    mids = np.concatenate([mids - WINDOW_S, mids, mids + WINDOW_S])
    sel = mids[(mids >= low) & (mids <= high)]
    return np.unique(sel % WINDOW_S) if sel.size else np.array([(0.5 * (low + high)) % 12])


def phase_cell(ev: Events, phase: float) -> tuple[float, float]:
    """The breakpoints either side of ``phase``: every phase between them assigns every
    event to the same window."""
    bp = breakpoints(ev)
    if bp.size == 0:
        return 0.0, WINDOW_S
    p = phase % WINDOW_S
    i = np.searchsorted(bp, p)
    lo = bp[i - 1] if i > 0 else bp[-1] - WINDOW_S
    hi = bp[i] if i < bp.size else bp[0] + WINDOW_S
    return float(lo), float(hi)


@dataclass
class System:
    """``A @ theta <= b`` for one phase, refund rule and clipping pattern: the first
    ``n_dec`` rows are the decisions (in ``Events.dec`` order), the rest hard conditions."""

    A: np.ndarray
    b: np.ndarray
    n_dec: int
    cross: np.ndarray          # sorted-event positions of refunds landing in a later window
    clipped: np.ndarray        # bool per cross refund


def _window(ev: Events, t: np.ndarray, phase: float) -> np.ndarray:
    return np.floor((ev.utc0 + t - phase) / WINDOW_S).astype(np.int64)


def build_system(ev: Events, budget: float, phase: float, rule: str,
                 clipped: np.ndarray | None = None, drop: np.ndarray | None = None
                 ) -> System:
    """The linear system of the decisions at ``phase`` under ``rule`` (module doc);
    ``clipped``: which cross-window refunds clip the counter at zero (current-window);
    ``drop``: decisions (positions in ``ev.dec``) trimmed: not imposed, and their own
    outcome taken as unknown (:func:`trimmed_readings`), so that a mislabelled row
    among them cannot exclude the truth."""
    if drop is None or not len(drop):
        return _system(ev, budget, phase, rule, clipped)
    ev_lo, ev_hi = trimmed_readings(ev, drop)
    m_lo = _n_cross(ev_lo, phase, rule)
    c_lo, c_hi = (None, None) if clipped is None else (clipped[:m_lo], clipped[m_lo:])
    s_lo = _system(ev_lo, budget, phase, rule, c_lo)
    s_hi = _system(ev_hi, budget, phase, rule, c_hi)
    n, h = len(ev.dec), len(ev.hard_b)
    keep = np.ones(n, bool)
    keep[drop] = False
    adm = ev.dec_admitted
    A = np.where(adm[:, None], s_lo.A[:n], s_hi.A[:n])[keep]
    b = np.where(adm, s_lo.b[:n], s_hi.b[:n])[keep]
    return System(np.vstack([A, ev.hard_A, s_lo.A[n + h:], s_hi.A[n + h:]]),
                  np.concatenate([b, ev.hard_b, s_lo.b[n + h:], s_hi.b[n + h:]]), len(A),
                  np.concatenate([s_lo.cross, s_hi.cross]),
                  np.concatenate([s_lo.clipped, s_hi.clipped]))


def trimmed_readings(ev: Events, trim: np.ndarray) -> tuple[Events, Events]:
    """The two readings of ``ev`` that bound every window's counter whatever the true
    outcome of the trimmed decisions ``trim`` (positions in ``ev.dec``): the *low*
    reading, for admitted decisions, holds none of their reservations but keeps their
    refunds (an admitted row adds its reservation less a refund, at least minus the
    refund, in every window; a throttled one nothing); the *high* reading, for
    throttled decisions, holds every one's reservation and none of their refunds (at
    most the reservation in its window, nothing elsewhere). Clipping at zero only
    raises a counter, so both stay bounds under either refund rule."""
    rows = ev.dec[trim]
    held = np.isin(ev.res, rows)
    ev_lo = replace(ev, res=ev.res[~held], res_t=ev.res_t[~held], res_R=ev.res_R[~held])
    extra = np.asarray(trim)[~np.isin(rows, ev.res)]   # recorded throttled
    keep_ref = ~np.isin(ev.ref, rows)
    ev_hi = replace(
        ev, res=np.concatenate([ev.res, ev.dec[extra]]),
        res_t=np.concatenate([ev.res_t, ev.dec_t[extra]]),
        res_R=np.vstack([ev.res_R, ev.dec_R[extra]]) if ev.n_prices else ev.res_R,
        ref=ev.ref[keep_ref], ref_t=ev.ref_t[keep_ref],
        ref_origin_t=ev.ref_origin_t[keep_ref], ref_vec=ev.ref_vec[keep_ref],
        ref_const=ev.ref_const[keep_ref])
    return ev_lo, ev_hi


def _n_cross(ev: Events, phase: float, rule: str) -> int:
    """How many refunds land in a later window than their reservation's (the clipping
    candidates of :func:`_system`)."""
    if ev.unc is not None or rule != "current-window":
        return 0
    return int((_window(ev, ev.ref_t, phase) != _window(ev, ev.ref_origin_t, phase)).sum())


def _system(ev: Events, budget: float, phase: float, rule: str,
            clipped: np.ndarray | None = None) -> System:
    """:func:`build_system` of every decision, none trimmed."""
    drop = None
    if ev.unc is not None:
        return _build_system_uncertain(ev, budget, phase, rule, drop)
    k = ev.n_prices
    # events: 0 settle (refund), 1 decision, 2 reservation; a settle at the time of a
    # request comes first, a request's decision before its own reservation
    w_ref = _window(ev, ev.ref_t, phase)
    if rule == "origin-window":
        keep = w_ref == _window(ev, ev.ref_origin_t, phase)
    else:
        keep = np.ones(len(ev.ref), bool)
    ref_idx = np.flatnonzero(keep)
    n_r, n_d, n_s = len(ref_idx), len(ev.dec), len(ev.res)
    t = np.concatenate([ev.ref_t[ref_idx], ev.dec_t, ev.res_t])
    typ = np.concatenate([np.zeros(n_r), np.ones(n_d), np.full(n_s, 2)]).astype(np.int8)
    row = np.concatenate([ev.ref[ref_idx], ev.dec, ev.res])
    vec = np.vstack([-ev.ref_vec[ref_idx], np.zeros((n_d, k)), ev.res_R]) if k else \
        np.zeros((n_r + n_d + n_s, 0))
    const = np.concatenate([-ev.ref_const[ref_idx], np.zeros(n_d), np.zeros(n_s)])
    order = np.lexsort((typ, row, typ != 0, t))
    # lexsort: last key primary -> time, then settles first, then row, then type
    t, typ, row, vec, const = t[order], typ[order], row[order], vec[order], const[order]
    win = _window(ev, t, phase)
    full = np.hstack([vec, const[:, None]])
    excl = np.vstack([np.zeros((1, k + 1)), np.cumsum(full, axis=0)])  # excl[e]: before e
    n = len(t)
    first = np.ones(n, bool)
    first[1:] = win[1:] != win[:-1]
    # cross-window refunds (current-window): candidates for clipping
    is_ref = typ == 0
    if rule == "current-window":
        pos_in_ref = np.empty(n, np.int64)
        pos_in_ref[is_ref] = np.arange(n_r)
        origin_w = _window(ev, ev.ref_origin_t[ref_idx], phase)
        cross = np.flatnonzero(is_ref)[(origin_w != w_ref[ref_idx])[
            pos_in_ref[np.flatnonzero(is_ref)]]]
    else:
        cross = np.zeros(0, np.int64)
    if clipped is None:
        # a window that held nothing before the refund clips it whatever the prices
        clipped = np.zeros(len(cross), bool)
        if len(cross):
            seg_start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
            held = np.array([(typ[seg_start[e]:e] == 2).any() for e in cross], bool)
            clipped = ~held
    reset = first.copy()
    reset_base = np.where(first, np.arange(n), -1)  # baseline index into excl
    if len(cross):
        cl = cross[clipped]
        # after a clipped refund the counter is 0: baseline = the sum including it
        nxt = cl + 1
        inside = nxt < n
        nxt = nxt[inside]
        same = win[nxt] == win[cl[inside]]
        reset[nxt[same]] = True
        reset_base[nxt[same]] = nxt[same]
    last = np.maximum.accumulate(np.where(reset, np.arange(n), 0))
    base = excl[reset_base[last]]
    # a clipped refund at e: the counter is 0 from e+1 on; the baseline for later events
    # is excl[e + 1] = excl[reset position], as set above
    counter = excl[:n] - base
    dec_pos = np.empty(n_d, np.int64)
    dec_mask = typ == 1
    # positions in sorted order of each decision, back in ev.dec order
    dec_sorted_rows = row[dec_mask]
    where = np.flatnonzero(dec_mask)
    rank = np.searchsorted(ev.dec, dec_sorted_rows)
    dec_pos[rank] = where
    cnt = counter[dec_pos]
    lhs = cnt[:, :k] + ev.dec_R
    bud = ev.dec_budget(budget)
    rhs = bud - cnt[:, k]
    sign = np.where(ev.dec_admitted, 1.0, -1.0)
    A = lhs * sign[:, None]
    b = np.where(ev.dec_admitted, rhs, -(rhs + bud * THROTTLE_MARGIN))
    if drop is not None and len(drop):
        keep_d = np.ones(n_d, bool)
        keep_d[drop] = False
        A, b = A[keep_d], b[keep_d]
    blocks_A, blocks_b = [A, ev.hard_A], [b, ev.hard_b]
    if len(cross):
        c = counter[cross]
        after = c + full[cross]  # counter minus the refund
        sgn = np.where(clipped, 1.0, -1.0)
        blocks_A.append(after[:, :k] * sgn[:, None])
        blocks_b.append(-after[:, k] * sgn)
    return System(np.vstack(blocks_A), np.concatenate(blocks_b), len(A), cross, clipped)


def _build_system_uncertain(ev: Events, budget: float, phase: float, rule: str,
                            drop: np.ndarray | None) -> System:
    """:func:`build_system` when decision and settlement times are only bounded
    (:class:`Uncertain`): what every timing within the bounds satisfies.

    A decision whose interval lies in one window W: recorded admitted, the CU W held at
    least (reservations certainly in W and certainly before it, less every refund that
    may have landed in W before it) plus its own reservation fit the budget; recorded
    throttled, the CU W held at most (reservations that may be in W before it, less the
    refunds of W's own reservations certainly settled in W before it) plus its own
    exceed it. Both bounds hold under either refund rule and whatever the clipping at
    zero (clipping only raises a counter, and a window's own refunds never take it below
    zero). A decision that may fall either side of a window start imposes nothing.
    Certainly / possibly are judged with the widest interval of the log (prefix sums
    over time-sorted events), which only loosens the bounds."""
    k = ev.n_prices
    unc = ev.unc
    a = ev.dec_t
    b_ = a + unc.width[ev.dec]
    w_max = float(unc.width.max()) if len(unc.width) else 0.0
    ro = np.argsort(ev.res_t, kind="stable")
    ra = ev.res_t[ro]
    P_R = np.vstack([np.zeros((1, k)), np.cumsum(ev.res_R[ro], axis=0)])
    fo = np.argsort(ev.ref_t, kind="stable")
    sa = ev.ref_t[fo]
    sb = unc.settle_hi[ev.ref[fo]]
    s_w = float(max((sb - sa).max(), w_max)) if len(sa) else w_max
    lag = float((sa - ev.ref_origin_t[fo]).max()) if len(sa) else 0.0
    ref_full = np.hstack([ev.ref_vec[fo], ev.ref_const[fo][:, None]]) if len(sa) else \
        np.zeros((0, k + 1))
    P_F = np.vstack([np.zeros((1, k + 1)), np.cumsum(ref_full, axis=0)])
    w_a, w_b = _window(ev, a, phase), _window(ev, b_, phase)
    start = w_a * WINDOW_S + phase - ev.utc0          # window start, trace seconds

    def span(P, x, lo_t, hi_t):
        i0, i1 = np.searchsorted(x, lo_t, "left"), np.searchsorted(x, hi_t, "left")
        return np.where((i1 > i0)[:, None], P[np.maximum(i1, i0)] - P[i0], 0.0)

    adm = ev.dec_admitted
    # admitted: reservations certainly in W and before (ra >= start, ra + w_max < a),
    # less every refund that may have landed in W before it (sa in [start - s_w, b))
    held_min = span(P_R, ra, start, a - w_max)
    may = span(P_F, sa, start - s_w, b_)
    # throttled: reservations that may be in W before it (ra in [start - w_max, b)),
    # less W's own refunds certainly settled before it (origin >= start: sa >= start +
    # lag; settled before it: sa + s_w < a)
    held_max = span(P_R, ra, start - w_max, b_)
    sure = span(P_F, sa, start + lag, a - s_w)
    lhs = np.where(adm[:, None], held_min - may[:, :k], held_max - sure[:, :k]) + ev.dec_R
    const = np.where(adm, -may[:, k], -sure[:, k])
    bud = np.broadcast_to(np.asarray(ev.dec_budget(budget), float), (len(a),))
    A = np.where(adm[:, None], lhs, -lhs)
    bvec = np.where(adm, bud - const, -(bud * (1 + THROTTLE_MARGIN) - const))
    straddle = w_a != w_b
    A[straddle], bvec[straddle] = 0.0, 1.0     # either side of a window start: nothing
    if drop is not None and len(drop):
        keep_d = np.ones(len(a), bool)
        keep_d[drop] = False
        A, bvec = A[keep_d], bvec[keep_d]
    return System(np.vstack([A, ev.hard_A]), np.concatenate([bvec, ev.hard_b]), len(A),
                  np.zeros(0, np.int64), np.zeros(0, bool))


def _cross_after(ev: Events, budget: float, phase: float, rule: str, clipped, theta,
                 drop=None):
    sys_ = build_system(ev, budget, phase, rule, clipped, drop)
    m = len(sys_.cross)
    if not m:
        return sys_, np.zeros(0, bool)
    rows = sys_.A[-m:]
    sgn = np.where(sys_.clipped, 1.0, -1.0)
    val = (rows @ theta - sys_.b[-m:]) * sgn   # counter after the refund, unclipped
    return sys_, val < 0


@dataclass(frozen=True)
class Scaled:
    """Prices in units of one budget's worth of their largest coefficient (conditioning)."""

    scale: np.ndarray

    @classmethod
    def of(cls, model: CostModel, budget: float) -> Scaled:
        k = len(model.names)
        if not k:
            return cls(np.ones(0))
        mx = np.maximum(np.abs(model.R).max(axis=0), np.abs(model.S).max(axis=0))
        return cls(np.where(mx > 0, budget / np.maximum(mx, 1e-300), 1.0))


def _lp(c, A, b, bounds, A_eq=None, b_eq=None):
    res = linprog(c, A_ub=A, b_ub=b, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs")
    return res


def _bounds_x(lo: np.ndarray, hi: np.ndarray, scale: np.ndarray):
    return [(lo[j] / scale[j], None if not math.isfinite(hi[j]) else hi[j] / scale[j])
            for j in range(len(scale))]


def _rows(sys_: System, budget: float, scale: np.ndarray):
    return sys_.A * scale[None, :] / budget, sys_.b / budget


def feasible(ev: Events, budget: float, phase: float, rule: str, scale: np.ndarray,
             lo: np.ndarray, hi: np.ndarray, drop: np.ndarray | None = None,
             clipped: np.ndarray | None = None
             ) -> tuple[System, np.ndarray] | None:
    """A feasible ``(system, theta)`` at ``phase`` under ``rule``, or None. Under
    ``current-window`` the clipping pattern is iterated to one consistent at the LP's own
    point -- the most interior one, or where no point fits, the one of least worst
    violation (at most 6 rounds)."""
    for _ in range(6):
        sys_ = build_system(ev, budget, phase, rule, clipped, drop)
        A, b = _rows(sys_, budget, scale)
        k = len(scale)
        if A.shape[0] == 0:
            return sys_, np.clip(np.nan_to_num(lo), 0, None)
        # the most interior point (largest common slack, capped): a point well inside
        r = _lp(np.append(np.zeros(k), -1.0),
                np.hstack([A, np.ones((len(A), 1))]), b,
                _bounds_x(lo, hi, scale) + [(None, 1.0)])
        if r.status != 0:
            return None
        theta = r.x[:k] * scale
        fits = r.x[-1] >= -_FEAS_TOL
        if not len(sys_.cross):
            return (sys_, theta) if fits else None
        # the pattern at this point (interior if it fits, least worst violation if not)
        _, want = _cross_after(ev, budget, phase, rule, sys_.clipped, theta, drop)
        if np.array_equal(want, sys_.clipped):
            return (sys_, theta) if fits else None
        clipped = want
    return None


def elastic(ev: Events, budget: float, phase: float, rule: str, scale: np.ndarray,
            lo: np.ndarray, hi: np.ndarray, drop: np.ndarray | None = None,
            ) -> tuple[float, np.ndarray, np.ndarray]:
    """The least total violation (L1, in budgets) of the decisions at ``phase``: its value,
    each decision's violation and the prices reaching it."""
    sys_ = build_system(ev, budget, phase, rule, None, drop)
    A, b = _rows(sys_, budget, scale)
    k, nd, m = len(scale), sys_.n_dec, A.shape[0]
    S = sp.vstack([sp.eye(nd, format="csr"), sp.csr_matrix((m - nd, nd))])
    A_full = sp.hstack([sp.csr_matrix(A), -S], format="csr")
    c = np.concatenate([np.zeros(k), np.ones(nd)])
    r = _lp(c, A_full, b, _bounds_x(lo, hi, scale) + [(0, None)] * nd)
    if r.status != 0:
        return math.inf, np.zeros(nd), np.full(k, np.nan)
    return float(r.fun), r.x[k:], r.x[:k] * scale


def project(sys_: System, budget: float, scale: np.ndarray, lo: np.ndarray,
            hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each price's min and max over the system (inf where unbounded above)."""
    A, b = _rows(sys_, budget, scale)
    k = len(scale)
    low, high = np.full(k, np.nan), np.full(k, np.nan)
    bounds = _bounds_x(lo, hi, scale)
    for j in range(k):
        c = np.zeros(k)
        c[j] = 1.0
        r = _lp(c, A, b, bounds)
        low[j] = r.x[j] * scale[j] if r.status == 0 else np.nan
        r = _lp(-c, A, b, bounds)
        high[j] = r.x[j] * scale[j] if r.status == 0 else (math.inf if r.status == 3
                                                            else np.nan)
    return low, high


def ratio_range(sys_: System, budget: float, scale: np.ndarray, lo: np.ndarray,
                hi: np.ndarray, num: int, den: int) -> tuple[float, float]:
    """Min and max of ``theta[num] / theta[den]`` over the system (Charnes-Cooper:
    ``y = tau * x``, ``tau = 1 / x[den]``); inf where unbounded."""
    A, b = _rows(sys_, budget, scale)
    k = len(scale)
    # variables (y_0..y_k-1, tau): A y - b tau <= 0; y_den = 1; lo tau <= y <= hi tau
    rows = [np.hstack([A, -b[:, None]])]
    xl = np.array([bd[0] for bd in _bounds_x(lo, hi, scale)])
    xh = np.array([np.inf if bd[1] is None else bd[1] for bd in _bounds_x(lo, hi, scale)])
    eye = np.eye(k)
    rows.append(np.hstack([-eye, xl[:, None]]))          # -y + lo tau <= 0
    fin = np.isfinite(xh)
    rows.append(np.hstack([eye[fin], -xh[fin][:, None]]))  # y - hi tau <= 0
    A_ub = np.vstack(rows)
    b_ub = np.zeros(len(A_ub))
    A_eq = np.zeros((1, k + 1))
    A_eq[0, den] = 1.0
    bounds = [(None, None)] * k + [(0, None)]
    out = []
    for sgn in (1.0, -1.0):
        c = np.zeros(k + 1)
        c[num] = sgn
        r = _lp(c, A_ub, b_ub, bounds, A_eq, np.array([1.0]))
        if r.status == 0:
            out.append(r.x[num] * scale[num] / scale[den])
        else:
            out.append(math.inf if (r.status == 3 and sgn < 0) else math.nan)
    return out[0], out[1]


def centre(sys_: System, budget: float, scale: np.ndarray, lo: np.ndarray, hi: np.ndarray,
           width: np.ndarray) -> np.ndarray | None:
    """The Chebyshev centre of the system in coordinates scaled by each price's interval
    width (the point of the identified set farthest from every face, so every decision is
    met with the largest margin); prices with an infinite interval are held at ``lo`` /
    ``hi`` by the caller through their bounds."""
    A, b = _rows(sys_, budget, scale)
    k = len(scale)
    w = np.where(np.isfinite(width) & (width > 0), width / scale, 1.0)
    # in z = x / w: A diag(w) z + r ||row|| <= b
    Az = A * w[None, :]
    norms = np.linalg.norm(Az, axis=1)
    A_ub = np.hstack([Az, norms[:, None]])
    xb = _bounds_x(lo, hi, scale)
    bounds = [(None if bd[0] is None else bd[0] / w[j],
               None if bd[1] is None else bd[1] / w[j]) for j, bd in enumerate(xb)]
    # the ball stays inside the price bounds too (held prices excepted)
    extra, rhs = [], []
    for j, (zl, zh) in enumerate(bounds):
        if zl is not None and zh is not None and zh - zl <= 0:
            continue
        e = np.zeros(k + 1)
        if zl is not None:
            e[j], e[k] = -1.0, 1.0
            extra.append(e.copy())
            rhs.append(-zl)
        if zh is not None:
            e[j], e[k] = 1.0, 1.0
            extra.append(e.copy())
            rhs.append(zh)
    if extra:
        A_ub, b = np.vstack([A_ub, np.array(extra)]), np.concatenate([b, rhs])
    r = _lp(np.append(np.zeros(k), -1.0), A_ub, b, bounds + [(0, None)])
    if r.status != 0 or r.x[-1] < 1e-6:
        return None  # no room: the set is flat in some direction (see vertex_mean)
    return r.x[:k] * w * scale


def vertex_mean(sys_: System, budget: float, scale: np.ndarray, lo: np.ndarray,
                hi: np.ndarray) -> np.ndarray | None:
    """The mean of the points where each price reaches its min and its max over the
    system: in the set (a convex combination of its points), central among its extremes;
    the point estimate where the set is too flat for a Chebyshev ball."""
    A, b = _rows(sys_, budget, scale)
    k = len(scale)
    bounds = _bounds_x(lo, hi, scale)
    pts = []
    for j in range(k):
        for sgn in (1.0, -1.0):
            c = np.zeros(k)
            c[j] = sgn
            r = _lp(c, A, b, bounds)
            if r.status == 0:
                pts.append(r.x * scale)
    return np.mean(pts, axis=0) if pts else None


# -- the phase ------------------------------------------------------------------------


def contradictions_at(ev: Events, phase: float) -> int:
    """Decisions no price can explain at ``phase`` (a fast screen, no LP): a throttle in a
    window that held no admitted reservation before it, and an admission after a throttle
    of the identical reservation in the same window with no settlement in between (the
    counter only grew, so if the first did not fit neither could the second)."""
    if not len(ev.dec):
        return 0
    t = ev.dec_t
    w = _window(ev, t, phase)
    start_t = w * WINDOW_S + phase - ev.utc0
    res_t = np.sort(ev.res_t)
    if ev.unc is not None:
        # bounded times: only a throttle certainly in its window with no reservation
        # that may precede it there (a conservative screen: never a false contradiction)
        wd = ev.unc.width[ev.dec]
        w_max = float(ev.unc.width.max()) if len(ev.unc.width) else 0.0
        certain = _window(ev, t + wd, phase) == w
        held = np.searchsorted(res_t, t + wd, "left") - np.searchsorted(
            res_t, start_t - w_max, "left")
        bad = int((~ev.dec_admitted & certain & (held == 0)).sum())
        # an admission certainly after a throttle of the identical reservation, both
        # certainly in one window, no settlement possibly between them
        sl, sh = ev.unc.settle_lo[ev.ref], ev.unc.settle_hi[ev.ref]
        so = np.argsort(sl, kind="stable")
        sl, cm = sl[so], np.maximum.accumulate(sh[so]) if len(so) else sh
        k_s = np.searchsorted(sl, t + wd, "left")
        seg = np.maximum(start_t, np.where(k_s > 0, cm[np.maximum(k_s - 1, 0)], -np.inf)
                         if len(so) else start_t)
        # a throttle read w_max later than its earliest time: an admission within w_max
        # after it may have been decided before it, and is no contradiction
        keep = certain
        return bad + _fewest_relabels(np.where(ev.dec_admitted, t, t + w_max)[keep],
                                      seg[keep], ev.dec_type[keep], ev.dec_admitted[keep])
    held = np.searchsorted(res_t, t, "left") - np.searchsorted(res_t, start_t, "left")
    thr = ~ev.dec_admitted
    bad = int((thr & (held == 0)).sum())
    ref_t = np.concatenate([[-np.inf], np.sort(ev.ref_t)])
    last_ref = ref_t[np.searchsorted(ref_t, t, "right") - 1]
    seg_start = np.maximum(start_t, last_ref)
    # within a window (between settlements) the requests of one reservation must read
    # all admitted, then all throttled: count the fewest rows to relabel so that they
    # do (one mislabelled throttle early in a window weighs one, not once per
    # admission after it: with a few per cent mislabelled the true phase stays least)
    return bad + _fewest_relabels(t, seg_start, ev.dec_type, ev.dec_admitted)


def _fewest_relabels(t: np.ndarray, seg: np.ndarray, typ: np.ndarray, admitted: np.ndarray
                     ) -> int:
    """Over the groups of equal ``(typ, seg)``, each in order of ``t``, the fewest
    outcomes to relabel so that every group reads admitted, then throttled."""
    if not len(t):
        return 0
    o = np.lexsort((t, seg, typ))
    adm = admitted[o].astype(np.int64)
    key_change = np.ones(len(o), bool)
    key_change[1:] = (np.diff(typ[o]) != 0) | (np.diff(seg[o]) != 0)
    starts = np.flatnonzero(key_change)
    grp = np.cumsum(key_change) - 1
    a_pref = np.cumsum(adm)
    t_pref = np.cumsum(1 - adm)
    a0 = np.concatenate([[0], a_pref])[starts][grp]      # admitted before the group
    t0 = np.concatenate([[0], t_pref])[starts][grp]
    a_tot = np.add.reduceat(adm, starts)
    cost = (t_pref - t0) + (a_tot[grp] - (a_pref - a0))  # split after each position
    return int(np.minimum(np.minimum.reduceat(cost, starts), a_tot).sum())
