"""The prices, window phase and refund rule the recorded decisions identify, jointly, by
linear programming over the systems of :mod:`.systems`.

:func:`identify` screens the phase cells (:func:`screen_phase`), finds under each refund
rule the cells whose system is feasible, leaving out the fewest decisions when none is,
and trimming likely mislabelled rows one by one when the rest still contradict
(:func:`.trim.trim_rows`); each price's interval is the union of its projections over
the feasible cells, widened at its ends when many rows were trimmed
(:func:`.trim.widen`). How each decision becomes a linear condition, and why the
identified set is exact, is in :mod:`.systems`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.vocabulary import WINDOW_S
from .systems import (
    RULES,
    Events,
    Predict,
    System,
    candidate_phases,
    centre,
    contradictions_at,
    elastic,
    feasible,
    phase_cell,
    project,
    ratio_range,
    vertex_mean,
)
from .trim import trim_rows, widen

WIDEN_FROM = 0.005
"""The share of the decisions trimmed from which each interval's ends are found again
with the decisions that pin them trimmed too (:func:`.trim.widen`): a log that needed
this many trimmed holds, at each end, a mislabelled row that fits the rest with a
chance no longer negligible (below it, under about 1 in 200 per pinning row)."""


@dataclass
class Fit:
    """One feasible phase cell and refund rule with its system and an interior point."""

    phase: float
    cell: tuple[float, float]
    rule: str
    system: System
    theta: np.ndarray


@dataclass
class Identified:
    """What :func:`identify` found."""

    fits: list[Fit]
    dropped: np.ndarray              # positions in Events.dec left out (fewest found)
    low: np.ndarray
    high: np.ndarray
    ratio: dict[tuple[int, int], tuple[float, float]]
    theta: np.ndarray                # the point estimate (Chebyshev centre)
    system: System                   # the system at the point's phase cell and rule
    phase: float
    phase_low: float
    phase_high: float
    rule: str
    rules: tuple[str, ...]
    candidates_tried: int
    projected_on: int
    notes: list[str]


def _arc_runs(grid: np.ndarray, hit: np.ndarray) -> list[tuple[float, float]]:
    """Runs of ``hit`` on the circular ``grid`` as (low, high) with high possibly > 12."""
    if hit.all():
        return [(0.0, WINDOW_S)]
    n = len(grid)
    start = int(np.flatnonzero(~hit)[0])
    runs, cur = [], None
    for s in range(n):
        i = (start + s) % n
        g = grid[i] + (WINDOW_S if start + s >= n else 0.0)
        if hit[i]:
            cur = (g, g) if cur is None else (cur[0], g)
        elif cur is not None:
            runs.append(cur)
            cur = None
    if cur is not None:
        runs.append(cur)
    return runs


def screen_phase(ev: Events, arc: tuple[float, float] | None, step: float = 0.01
                 ) -> list[tuple[float, float]]:
    """The arcs of phases with the fewest price-free contradictions
    (:func:`contradictions_at`) on a ``step`` grid, within ``arc`` (from Retry-After)
    when given; each widened by one step either side (``high`` may exceed 12)."""
    if arc is None:
        grid = np.arange(0.0, WINDOW_S, step)
    else:
        grid = np.arange(arc[0], arc[1] + step / 2, step)
    score = np.array([contradictions_at(ev, g % WINDOW_S) for g in grid])
    hit = score == score.min()
    if arc is None:
        runs = _arc_runs(grid, hit)
    else:
        runs = [(grid[r[0]], grid[r[-1]]) for r in np.split(
            np.flatnonzero(hit), np.flatnonzero(np.diff(np.flatnonzero(hit)) > 1) + 1)]
    return [(lo - step, hi + step) for lo, hi in runs]


def _trimmed(ev: Events, budget: float, phase: float, rule: str, scale: np.ndarray,
             lo: np.ndarray, hi: np.ndarray, predict: Predict | None
             ) -> np.ndarray | None:
    """The decisions :func:`.trim.trim_rows` trims, or None."""
    return trim_rows(ev, budget, phase, rule, scale, lo, hi, predict)


def identify(ev: Events, budget: float, scale: np.ndarray, lo: np.ndarray, hi: np.ndarray,
             *, arc: tuple[float, float] | None = None, rules: tuple[str, ...] = RULES,
             ratios: tuple[tuple[int, int], ...] = (), fixed_phase: float | None = None,
             prefer: np.ndarray | None = None, max_projections: int = 8,
             max_scan: int = 60, max_arcs: int = 4, predict: Predict | None = None,
             max_gap: int = 8
             ) -> Identified | None:
    """The phase cells and refund rules at which the decisions (all but the fewest
    dropped) fit, and the prices' joint projection over them (module doc).

    The phase is screened first without an LP (:func:`screen_phase`: the arcs of fewest
    price-free contradictions, inside the Retry-After ``arc`` if any; the least violated
    at its centre first, at most ``max_arcs``); the candidate cells in an arc are tried
    from its middle outwards until one fits, then the feasible run
    is grown cell by cell on each side until ``max_gap`` + 1 cells in a row fail (the
    feasible phases are taken to be one run, gaps of at most ``max_gap`` cells
    included). Prices are projected on every feasible cell when there are at most
    ``max_projections``, else on that many spread over the run, both ends included.
    The point estimate is the Chebyshev centre (:func:`centre`) at the run's middle cell,
    or where the set is too flat for one, the mean of its extreme points
    (:func:`vertex_mean`);
    a price the data do not bound above is held there at ``prefer`` (its given value)
    raised to its lower bound."""
    notes: list[str] = []
    if fixed_phase is not None:
        arcs = [(fixed_phase % WINDOW_S, fixed_phase % WINDOW_S)]
    else:
        arcs = screen_phase(ev, arc)
    tried = 0

    def cells_of(a_lo: float, a_hi: float) -> tuple[np.ndarray, np.ndarray, float]:
        centre_ph = 0.5 * (a_lo + a_hi) % WINDOW_S
        if fixed_phase is not None:
            c = np.array([centre_ph])
        else:
            c = candidate_phases(ev, a_lo, a_hi)
            # unwrap relative to the centre and sort
            rel = (c - centre_ph + WINDOW_S / 2) % WINDOW_S - WINDOW_S / 2
            c = centre_ph + np.sort(rel)
        return c, np.argsort(np.abs(c - centre_ph)), centre_ph

    arc_cells = [cells_of(*a) for a in arcs]
    if len(arc_cells) > 1:
        # several arcs free of contradictions: the least violated (at its centre) first
        def violation(ac) -> float:
            c, o, _ = ac
            return min(elastic(ev, budget, c[o[0]] % WINDOW_S, r, scale, lo, hi)[0]
                       for r in rules)
        tried += len(arc_cells) * len(rules)
        arc_cells.sort(key=violation)
    drop = np.zeros(0, np.int64)
    start = None
    fitting_arcs = 0
    for c, o, _centre in arc_cells[:max_arcs]:
        here = None
        for i in o[:max_scan]:
            for rule in rules:
                tried += 1
                if feasible(ev, budget, c[i] % WINDOW_S, rule, scale, lo, hi) is not None:
                    here = int(i)
                    break
            if here is not None:
                break
        if here is not None:
            fitting_arcs += 1
            if start is None:
                cands, order, start = c, o, here
    if fitting_arcs > 1:
        notes.append(f"the decisions fit phases in {fitting_arcs} separate arcs; the least "
                     "violated is reported (a longer trace or Retry-After would tell them "
                     "apart)")
    if start is None:
        # no cell fits every decision: the fewest to drop under each rule, at its cell
        # of least violation (a spread of probes over the arcs); the rule and arc
        # needing fewer win
        best = None
        recorded = np.where(ev.dec_admitted, "ok", "throttled")
        for c, o, _ in arc_cells[:max_arcs]:
            probe = o[:max_scan][:: max(1, len(o[:max_scan]) // 9)]
            for rule in rules:
                here = None
                for i in probe:
                    tried += 1
                    val, _viol, th = elastic(ev, budget, c[i] % WINDOW_S, rule, scale, lo, hi)
                    # the probe whose elastic point the replay agrees with most (a
                    # phase off the truth mispredicts the rows near window starts),
                    # then the least violated
                    score = (0 if predict is None or not math.isfinite(val) else
                             int((predict(th, c[i] % WINDOW_S, rule)[ev.dec] != recorded
                                  ).sum()), val)
                    if here is None or score < here[0]:
                        here = (score, int(i))
                if here is None:
                    continue
                d = _trimmed(ev, budget, c[here[1]] % WINDOW_S, rule, scale, lo, hi,
                             predict)
                if d is not None and (best is None or len(d) < len(best[0])):
                    best = (d, here[1], c, o)
        if best is None:
            return None
        drop, start, cands, order = best

    def grow(drop: np.ndarray, start: int) -> tuple[list[Fit], int]:
        """The feasible run of cells around ``start`` under each rule."""
        fits: list[Fit] = []
        n = 0
        for rule in rules:
            got: dict[int, Fit] = {}

            def at(i: int, rule=rule, got=got) -> Fit | None:
                if i in got:
                    return got[i]
                ph = cands[i] % WINDOW_S
                f = feasible(ev, budget, ph, rule, scale, lo, hi, drop)
                if f is None:
                    return None
                got[i] = Fit(ph, phase_cell(ev, ph), rule, f[0], f[1])
                return got[i]

            first = at(start)
            n += 1
            if first is None:
                # this rule may fit a little further along the run
                for i in order[:max_scan]:
                    n += 1
                    if at(int(i)) is not None:
                        first = got[int(i)]
                        break
            if first is None:
                continue
            s0 = next(i for i, f in got.items() if f is first)
            for step in (-1, 1):
                i, misses = s0 + step, 0
                # a few cells that fail do not end the run: the feasible phases can
                # be split by a cell where a burst straddles the window start, and
                # the interval must not leave out the cells beyond it
                while 0 <= i < len(cands) and misses <= max_gap:
                    n += 1
                    misses = 0 if at(i) is not None else misses + 1
                    i += step
            fits += [got[i] for i in sorted(got)]
        return fits, n

    fits, n = grow(drop, start)
    tried += n
    for _round in range(1 if len(drop) else 0):
        # the rows were trimmed at a probe cell; trimmed again at the middle of the run
        # they allow (nearer the true phase), they may be fewer
        if not fits:
            break
        better = None
        f = fits[len(fits) // 2]
        d = _trimmed(ev, budget, f.phase, f.rule, scale, lo, hi, predict)
        if d is not None and len(d) < len(drop):
            better = (d, int(np.argmin(np.abs(cands % WINDOW_S - f.phase))))
        if better is None:
            break
        drop, i_best = better
        fits, n = grow(drop, i_best)
        tried += n
    if drop.size:
        notes.append(f"no phase, refund rule and prices fit every decision: {len(drop)} "
                     f"of {len(ev.dec):,} ({100 * len(drop) / max(len(ev.dec), 1):.2f} %) "
                     "trimmed, each row alone, its outcome taken as unknown (likely "
                     "mislabelled); the intervals are those of the rest")
    if not fits:
        return None
    fit_rules = tuple(r for r in rules if any(f.rule == r for f in fits))
    # project on (a spread of) the feasible cells of every rule
    chosen: list[Fit] = []
    for r in fit_rules:
        mine = [f for f in fits if f.rule == r]
        if len(mine) > max_projections:
            idx = np.unique(np.round(np.linspace(0, len(mine) - 1, max_projections)).astype(int))
            notes.append(f"{len(mine)} phase cells fit under {r}; prices projected on "
                         f"{len(idx)} of them spread over the run, both ends included")
            mine = [mine[i] for i in idx]
        chosen += mine
    k = len(scale)
    low, high = np.full(k, np.inf), np.full(k, -np.inf)
    ratio: dict[tuple[int, int], tuple[float, float]] = {}
    ends: list[tuple[Fit, Fit]] = []   # per price, the cells of its lowest and highest
    for f in chosen:
        lo_f, hi_f = project(f.system, budget, scale, lo, hi)
        if not ends:
            ends = [(f, f) for _ in range(len(scale))]
        ends = [(f if lo_f[j] < low[j] else a, f if hi_f[j] > high[j] else b)
                for j, (a, b) in enumerate(ends)]
        low, high = np.fmin(low, lo_f), np.fmax(high, hi_f)
        for pair in ratios:
            a, b = ratio_range(f.system, budget, scale, lo, hi, *pair)
            old = ratio.get(pair, (math.inf, -math.inf))
            ratio[pair] = (min(old[0], a), max(old[1], b))
    if drop.size >= WIDEN_FROM * len(ev.dec) and ends:
        low, high, ratio = widen(ev, budget, scale, lo, hi, drop, ends, low, high, ratio,
                                 ratios)
        notes.append("a log with mislabelled rows may hold some no fit can tell apart: "
                     "each interval's ends were found again with the decisions that pin "
                     "them trimmed too, so that such a row cannot exclude the truth")
    # the point: the Chebyshev centre at the middle cell of the preferred rule
    rule = fit_rules[0]
    mine = [f for f in fits if f.rule == rule]
    mid = mine[len(mine) // 2]
    width = high - low
    unbounded = ~np.isfinite(high)
    held = np.where(unbounded, np.fmax(low, np.nan_to_num(
        prefer if prefer is not None else low, nan=0.0)), np.nan)
    c_lo = np.where(unbounded, held, np.maximum(lo, low))
    c_hi = np.where(unbounded, held, high)
    theta = centre(mid.system, budget, scale, c_lo, c_hi, width)
    if theta is None:
        theta = vertex_mean(mid.system, budget, scale, c_lo, c_hi)
    if theta is None:
        theta = mid.theta
    # the phase interval: the cells' union (unwrapped around the middle)
    cells = [f.cell for f in fits]
    ref = mid.phase
    lows = [ref + ((c[0] - ref + WINDOW_S / 2) % WINDOW_S - WINDOW_S / 2) for c in cells]
    highs = [lo_ + (c[1] - c[0]) for lo_, c in zip(lows, cells, strict=True)]
    return Identified(fits, drop, low, high, ratio, theta, mid.system, mid.phase,
                      min(lows), max(highs), rule, fit_rules, tried, len(chosen), notes)
