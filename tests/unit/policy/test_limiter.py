"""The CU limiter (sim/policy/limiter.py): every rule of its docstring, by hand and by property.

The first half works small timelines out by hand (budget 100 CU unless a test says
otherwise). The second half drives random, time-ordered reserve/settle sequences through
the limiter and holds it against invariants tracked independently in the test, and
against a reference model (``RefLimiter``) that restates the docstring's rules in exact
arithmetic. Sequences use integer CU and times on a quarter-second grid, so float sums
are exact and every decision can be compared with the reference model exactly; the
Retry-After properties also use arbitrary float times.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.policy.limiter import (
    DAY_S,
    NO_ALLOWANCE,
    OK,
    OVERSIZED,
    THROTTLED,
    CULimiter,
    Reservation,
)

W = 12.0
ALIGNMENTS = ("epoch", "first-hit")
REFUNDS = ("origin-window", "current-window")


def lim(budget=100.0, **kw) -> CULimiter:
    return CULimiter(budget, **kw)


def clone(limiter: CULimiter) -> CULimiter:
    """An independent copy to try a reservation on (cheaper than a deep copy)."""
    twin = copy.copy(limiter)
    for name, value in vars(limiter).items():
        if isinstance(value, list | dict):
            setattr(twin, name, value.copy())
    return twin


def stats(limiter: CULimiter) -> dict[str, list]:
    s = limiter.window_stats()
    return {"start": s.start_s, "reserved": s.reserved_cu, "settled": s.settled_cu,
            "peak": s.peak_used_cu, "admitted": s.admitted, "throttled": s.throttled,
            "phantom": s.phantom}


# -- the docstring's timeline -------------------------------------------------------------

def test_docstring_timeline():
    li = lim(100)
    first = li.reserve(0.0, 60, actual=20)
    assert first == OK
    assert first.window == 0
    assert li.available(0.5) == 40
    second = li.reserve(1.0, 60, actual=60)
    assert second == THROTTLED
    assert second.phantom  # 60 - 40 + 60 = 80 <= 100 once the first one settles
    assert li.retry_after(1.0) == 11  # ceil(12 - 1)
    li.settle(2.0, first, 60, 20)
    assert li.available(2.0) == 80
    assert li.reserve(3.0, 60, actual=60) == OK
    assert li.available(3.0) == 20
    assert li.available(12.0) == 100  # a new window
    s = stats(li)
    assert s["start"] == [0.0, 12.0]
    assert s["reserved"] == [120.0, 0.0]
    assert s["settled"] == [20.0, 0.0]
    assert s["peak"] == [80.0, 0.0]
    assert s["admitted"] == [2, 0]
    assert s["throttled"] == [1, 0]
    assert s["phantom"] == [1, 0]


# -- window alignment ---------------------------------------------------------------------

def test_epoch_windows_start_at_multiples_of_12s_from_time_zero():
    li = lim(100)
    assert li.reserve(5.0, 100) == OK
    assert li.wid == 0
    assert li.reserve(11.999, 1) == THROTTLED  # still window [0, 12)
    assert li.reserve(12.0, 100) == OK  # window [12, 24) starts exactly at 12
    assert li.wid == 1
    assert li.reserve(40.0, 30) == OK  # window [36, 48); the idle [24, 36) has no row
    assert li.wid == 2
    s = stats(li)
    assert s["start"] == [0.0, 12.0, 36.0]
    assert s["reserved"] == [100.0, 100.0, 30.0]
    assert s["admitted"] == [1, 1, 1]
    assert s["throttled"] == [1, 0, 0]


def test_idle_windows_are_not_stored():
    """A month of silence between two requests costs no rows (windows are sparse), and a
    reservation made before the silence still settles into its own row."""
    li = lim(100, refund_to="current-window")
    first = li.reserve(5.0, 60, actual=10)
    month = 30 * 86400.0
    assert li.reserve(month + 1.0, 80) == OK
    li.settle(month + 2.0, first, 60, 10)  # current-window: 50 back to [month, month + 12)
    assert li.reserve(month + 3.0, 60) == OK  # 80 - 50 + 60 <= 100
    s = stats(li)
    assert s["start"] == [0.0, month]
    assert s["settled"] == [10.0, 0.0]
    assert s["reserved"] == [60.0, 140.0]
    assert s["admitted"] == [1, 2]


def test_first_hit_windows_start_at_the_first_billed_request_after_expiry():
    li = lim(100, alignment="first-hit")
    assert li.available(0.0) == 100  # no window open, none opened by asking
    assert stats(li)["start"] == []
    assert li.reserve(5.0, 100) == OK  # window [5, 17)
    assert li.reserve(16.9, 1) == THROTTLED
    assert li.retry_after(16.9) == 1  # ceil(17 - 16.9)
    assert li.retry_after(6.0) == 11
    assert li.reserve(17.0, 100) == OK  # expired at 17: window [17, 29)
    assert li.reserve(30.5, 0) == OK  # unbilled: opens nothing
    assert li.reserve(31.25, 40) == OK  # idle gap: window [31.25, 43.25), no empty rows
    assert li.reserve(43.0, 61) == THROTTLED
    assert li.retry_after(43.0) == 1  # ceil(0.25)
    assert li.reserve(43.25, 100) == OK
    s = stats(li)
    assert s["start"] == [5.0, 17.0, 31.25, 43.25]
    assert s["reserved"] == [100.0, 100.0, 40.0, 100.0]
    assert s["throttled"] == [1, 0, 1, 0]


# -- refunds --------------------------------------------------------------------------------

@pytest.mark.parametrize("alignment", ALIGNMENTS)
@pytest.mark.parametrize("refund_to", REFUNDS)
def test_refund_within_its_own_window_helps_under_both_policies(alignment, refund_to):
    li = lim(100, alignment=alignment, refund_to=refund_to)
    first = li.reserve(0.0, 80, actual=10)
    assert first == OK
    assert li.reserve(1.0, 30) == THROTTLED
    li.settle(2.0, first, 80, 10)  # refund 70 to the current (= origin) window
    assert li.available(2.0) == 90
    assert li.reserve(3.0, 90) == OK
    assert li.available(3.0) == 0


@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_origin_window_refund_is_lost_once_its_window_has_passed(alignment):
    li = lim(100, alignment=alignment, refund_to="origin-window")
    first = li.reserve(0.0, 80, actual=10)
    assert first == OK
    w0 = first.window
    assert li.reserve(13.0, 90) == OK  # next window: used 90
    li.settle(14.0, first, 80, 10)
    assert li.available(14.0) == 10
    assert li.reserve(15.0, 20) == THROTTLED
    assert stats(li)["settled"][w0] == 10.0  # settled CU is still booked to its window


@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_current_window_refund_goes_to_whichever_window_is_current(alignment):
    li = lim(100, alignment=alignment, refund_to="current-window")
    first = li.reserve(0.0, 80, actual=10)
    assert first == OK
    w0 = first.window
    assert li.reserve(13.0, 90) == OK
    li.settle(14.0, first, 80, 10)  # 70 credited to the window current at 14
    assert li.available(14.0) == 80
    assert li.reserve(15.0, 80) == OK
    s = stats(li)
    assert s["settled"][w0] == 10.0
    assert s["reserved"][li.wid] == 170.0
    assert s["peak"][li.wid] == 100.0


def test_current_window_refund_never_drives_the_counter_below_zero():
    li = lim(100, refund_to="current-window")
    first = li.reserve(0.0, 100, actual=0)
    assert first == OK
    assert li.reserve(12.5, 10) == OK
    li.settle(13.0, first, 100, 0)  # 10 - 100 -> 0, not -90
    assert li.available(13.0) == 100
    assert li.reserve(13.5, 100) == OK
    assert li.reserve(13.5, 1) == THROTTLED


def test_same_window_refund_after_a_carried_refund_never_drives_counter_negative():
    li = lim(100, refund_to="current-window")
    old = li.reserve(0.0, 100, actual=0)  # window 0, refund 100 in flight
    assert old == OK
    mine = li.reserve(12.5, 50, actual=0)  # window 1: used 50, refund 50 in flight
    assert mine == OK
    li.settle(13.0, old, 100, 0)  # carried into window 1: 50 - 100 -> 0
    li.settle(13.5, mine, 50, 0)  # its own window: 0 - 50 -> 0, not -50
    assert li.available(13.5) == 100
    assert li.reserve(14.0, 100) == OK
    assert li.reserve(14.0, 1) == THROTTLED


def test_first_hit_refund_with_no_window_open_is_lost():
    li = lim(100, alignment="first-hit", refund_to="current-window")
    first = li.reserve(0.0, 100, actual=0)
    assert first == OK
    li.settle(12.5, first, 100, 0)  # window [0, 12) expired, none open
    assert li.reserve(13.0, 100) == OK  # a fresh window, nothing carried over
    assert li.reserve(13.0, 1) == THROTTLED


# -- oversized and unbilled -----------------------------------------------------------------

@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_oversized_cost_can_never_fit_and_holds_nothing(alignment):
    li = lim(100, alignment=alignment, daily_allowance_cu=1000)
    assert li.reserve(0.0, 100.5) == OVERSIZED
    assert li.reserve(0.0, 1e9) == OVERSIZED
    assert li.available(0.0) == 100
    assert li.daily_used == {}
    s = stats(li)
    assert sum(s["throttled"]) == 0 and sum(s["admitted"]) == 0
    if alignment == "first-hit":
        assert s["start"] == []  # an oversized request does not open a window
    assert li.reserve(0.0, 100) == OK  # exactly the budget fits an empty window


def test_cost_equal_to_budget_plus_rounding_noise_is_not_oversized():
    li = lim(0.3)
    # 0.1 + 0.2 > 0.3 in floating point; on paper they are equal.
    assert li.reserve(0.0, 0.1 + 0.2) == OK
    li2 = lim(0.3)
    assert li2.reserve(0.0, 0.1) == OK
    assert li2.reserve(0.0, 0.2) == OK


@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_unbilled_cost_zero_never_opens_a_window_nor_throttles(alignment):
    li = lim(100, alignment=alignment, daily_allowance_cu=100)
    assert li.reserve(3.0, 0.0) == OK
    assert stats(li)["start"] == []
    assert li.daily_used == {}
    assert li.reserve(4.0, 100) == OK  # fills the window and the day
    unbilled = li.reserve(4.5, 0.0)
    assert unbilled == OK  # still admitted: full window, empty allowance
    assert not unbilled.phantom
    s = stats(li)
    assert len(s["start"]) == 1
    assert s["admitted"] == [1] and s["throttled"] == [0]
    if alignment == "first-hit":
        assert li.reserve(20.0, 0.0) == OK
        assert len(stats(li)["start"]) == 1  # past expiry, an unbilled one opens nothing
    li.settle(5.0, unbilled, 0.0, 0.0)  # settling an unbilled action is a no-op
    assert sum(stats(li)["settled"]) == 0


# -- daily allowance ------------------------------------------------------------------------

def test_daily_allowance_resets_at_utc_midnight_with_day_offset():
    offset = 14 * 3600.0  # simulation starts at 14:00 UTC: midnight is at t = 36000
    li = lim(1000, daily_allowance_cu=100, day_offset_s=offset)
    assert li.reserve(0.0, 60) == OK
    assert li.day == 0
    assert li.reserve(10.0, 50) == NO_ALLOWANCE  # 60 + 50 > 100
    assert li.daily_exhausted_at == {0: 10.0}
    assert li.available(10.0) == 940  # a refused action holds nothing in the window
    assert li.reserve(20.0, 40) == OK  # exactly the allowance
    assert li.reserve(35_999.75, 1) == NO_ALLOWANCE
    assert li.daily_exhausted_at == {0: 10.0}  # the first time only
    assert li.reserve(36_000.0, 100) == OK  # 00:00 UTC: a new day
    assert li.day == 1
    assert li.daily_used == {0: 100.0, 1: 100.0}
    assert li.reserve(36_000.0 + DAY_S - 0.25, 1) == NO_ALLOWANCE
    assert li.reserve(36_000.0 + DAY_S, 1) == OK
    assert li.day == 2
    assert li.daily_exhausted_at == {0: 10.0, 1: 36_000.0 + DAY_S - 0.25}


def test_one_action_larger_than_the_whole_allowance_gets_402():
    li = lim(1000, daily_allowance_cu=50)
    assert li.reserve(0.0, 51) == NO_ALLOWANCE
    assert li.reserve(0.0, 50) == OK


def test_no_daily_allowance_means_no_daily_limit():
    li = lim(100)
    for day in range(3):
        for k in range(5):
            assert li.reserve(day * DAY_S + k * W, 100) == OK
    assert li.daily_used == {}


def test_daily_refund_goes_to_the_day_of_the_reservation_while_it_is_current():
    li = lim(1000, daily_allowance_cu=100)
    first = li.reserve(0.0, 60, actual=20)
    assert first == OK
    li.settle(1.0, first, 60, 20)
    assert li.daily_used == {0: 20.0}
    assert li.reserve(2.0, 80) == OK  # 20 + 80 = 100
    assert li.reserve(3.0, 1) == NO_ALLOWANCE
    li2 = lim(1000, daily_allowance_cu=100)
    day0 = li2.reserve(DAY_S - 6.0, 100, actual=0)  # reserved on day 0
    assert day0 == OK
    assert li2.reserve(DAY_S + 1.0, 100) == OK  # day 1 is full
    li2.settle(DAY_S + 2.0, day0, 100, 0)  # day 0 has passed: no refund anywhere
    assert li2.daily_used == {0: 100.0, 1: 100.0}
    assert li2.reserve(DAY_S + 3.0, 1) == NO_ALLOWANCE


# -- Retry-After ----------------------------------------------------------------------------

@pytest.mark.parametrize(("now", "expected"), [
    (0.0, 12), (1.0, 11), (11.5, 1), (11.999, 1), (12.0, 12), (12.0000001, 12),
    (23.0, 1), (6.25, 6), (100.0, 8),
])
def test_retry_after_epoch_is_ceil_seconds_to_next_window_at_least_one(now, expected):
    assert lim(100).retry_after(now) == expected


def test_retry_after_first_hit_counts_from_the_window_start():
    li = lim(100, alignment="first-hit")
    assert li.reserve(5.5, 100) == OK  # window [5.5, 17.5)
    assert li.reserve(6.0, 1) == THROTTLED
    assert li.retry_after(6.0) == 12  # ceil(11.5)
    assert li.retry_after(17.0) == 1  # ceil(0.5)
    assert li.retry_after(10.5) == 7


# -- phantom throttles ----------------------------------------------------------------------

def test_real_throttle_is_not_phantom():
    li = lim(100)
    assert li.reserve(0.0, 60, actual=60) == OK
    got = li.reserve(1.0, 60, actual=60)
    assert got == THROTTLED
    assert not got.phantom  # nothing in flight to refund
    got = li.reserve(2.0, 60, actual=10)
    assert got == THROTTLED
    assert not got.phantom
    assert li.reserve(3.0, 40, actual=40) == OK
    assert stats(li)["phantom"] == [0]


def test_phantom_flag_belongs_to_each_reservation():
    li = lim(100)
    assert li.reserve(0.0, 90, actual=0) == OK
    first = li.reserve(0.5, 20)
    assert first == THROTTLED and first.phantom
    admitted = li.reserve(0.6, 10)
    assert admitted == OK and not admitted.phantom
    assert first.phantom  # a later call leaves an earlier answer alone
    again = li.reserve(0.7, 20)
    assert again == THROTTLED and again.phantom
    unbilled = li.reserve(0.8, 0)
    assert unbilled == OK and not unbilled.phantom


def test_phantom_counts_only_refunds_that_would_reach_the_current_window():
    # 60 reserved in window 0 will settle to 0; window 1 is full of real usage.
    for refund_to, phantom in (("origin-window", False), ("current-window", True)):
        li = lim(100, refund_to=refund_to)
        assert li.reserve(0.0, 60, actual=0) == OK
        assert li.reserve(12.5, 60, actual=60) == OK
        got = li.reserve(13.0, 60, actual=60)
        assert got == THROTTLED
        # origin: 60 + 60 > 100 whatever settles; current: 60 - 60 + 60 <= 100.
        assert got.phantom is phantom
        assert stats(li)["phantom"] == [0, int(phantom)]


def test_settled_reservation_no_longer_counts_as_phantom_potential():
    li = lim(100)
    first = li.reserve(0.0, 60, actual=20)
    assert first == OK
    li.settle(1.0, first, 60, 20)  # used 20, nothing in flight
    assert li.reserve(2.0, 80, actual=80) == OK
    third = li.reserve(3.0, 10)
    assert third == THROTTLED
    assert not third.phantom


def test_constructor_rejects_unknown_policies_and_non_positive_budget():
    with pytest.raises(ValueError, match="alignment"):
        CULimiter(100, alignment="sliding")
    with pytest.raises(ValueError, match="refund_to"):
        CULimiter(100, refund_to="next-window")
    with pytest.raises(ValueError):
        CULimiter(0)
    with pytest.raises(ValueError):
        CULimiter(100, window_s=0)


# =========================================================================================
# Properties over random, time-ordered reserve/settle sequences
# =========================================================================================


@dataclass
class Case:
    budget: int
    alignment: str
    refund_to: str
    allowance: int | None
    day_offset: float
    ops: list = field(default_factory=list)

    def limiter(self) -> CULimiter:
        return CULimiter(self.budget, alignment=self.alignment, refund_to=self.refund_to,
                         daily_allowance_cu=self.allowance, day_offset_s=self.day_offset)


# Gaps between operations: mostly within a window, sometimes across several windows,
# always on a quarter-second grid (exact floats). Days roll because the simulated clock
# often starts a little before 00:00 UTC (``day_offset``).
_gap = st.one_of(
    st.integers(0, 8).map(lambda q: q / 4),
    st.integers(0, 20).map(lambda q: q / 4),
    st.integers(0, 100).map(lambda q: q / 4),
    st.sampled_from([12.0, 24.0]),
)
_day_offset = st.one_of(
    st.integers(0, 95).map(lambda q: q * 900.0),
    st.integers(1, 240).map(lambda q: DAY_S - q / 4),
)


@st.composite
def cases(draw, daily: bool | None = None, grid: bool = True):
    budget = draw(st.integers(5, 200))
    if daily is None:
        daily = draw(st.booleans())
    allowance = draw(st.integers(0, 12 * budget)) if daily else None
    case = Case(budget, draw(st.sampled_from(ALIGNMENTS)), draw(st.sampled_from(REFUNDS)),
                allowance, draw(_day_offset))
    gap = _gap if grid else st.floats(0.0, 30.0, allow_nan=False, allow_infinity=False)
    for _ in range(draw(st.integers(1, 40))):
        dt = draw(gap)
        if draw(st.integers(0, 2)) == 0:
            case.ops.append(("settle", dt, draw(st.integers(0, 10_000))))
        else:
            cost = draw(st.one_of(st.just(0), st.integers(1, budget),
                                  st.integers(budget // 3, budget), st.integers(1, budget + 20)))
            actual = draw(st.integers(0, cost)) if draw(st.booleans()) else cost
            case.ops.append(("reserve", dt, cost, actual))
    return case


@dataclass
class Held:
    """An admitted reservation the test has not settled yet."""

    t: float
    booked: Reservation  # what reserve() returned: settle() takes it back
    cost: int
    actual: int
    window: object  # the test's own name for the window (see WindowTracker)


class WindowTracker:
    """The window rules restated from the docstring, driven by the limiter's decisions.

    ``counter[w]`` is the CU reserved in window ``w`` minus the refunds credited to it,
    never below zero; the test computes it from what the limiter admitted, not from the
    limiter's own counter.
    """

    def __init__(self, case: Case) -> None:
        self.epoch = case.alignment == "epoch"
        self.origin = case.refund_to == "origin-window"
        self.start: float | None = None  # first-hit: the open window's start
        self.counter: dict[object, float] = {}

    def current(self, t: float):
        """The window current at ``t`` (None when first-hit has none open)."""
        if self.epoch:
            return math.floor(Fraction(t) / 12)
        if self.start is not None and t < self.start + W:
            return self.start
        return None

    def window_for_billed(self, t: float):
        """The window a billed reservation at ``t`` lands in (opening one if needed)."""
        w = self.current(t)
        if w is None:
            self.start = t
            w = t
        return w

    def admit(self, w, cost: float) -> None:
        self.counter[w] = self.counter.get(w, 0.0) + cost

    def refund(self, t: float, held: Held) -> None:
        refund = held.cost - held.actual
        if refund <= 0:
            return
        w = self.current(t)
        if w is None or (self.origin and w != held.window):
            return
        self.counter[w] = max(0.0, self.counter.get(w, 0.0) - refund)

    def used(self, t: float) -> float:
        w = self.current(t)
        return 0.0 if w is None else self.counter.get(w, 0.0)


def drive(case: Case, on_reserve=None, on_step=None):
    """Run ``case`` against a fresh limiter, tracking windows, days and settlements.

    ``on_reserve(li, t, cost, actual, result, tracker, day_used)`` is called after each
    reserve with the state *before* it (``tracker.used(t)``, ``day_used``) still
    unchanged; ``on_step(li, t, tracker)`` after every operation.
    """
    li = case.limiter()
    tr = WindowTracker(case)
    held: list[Held] = []
    day_used: dict[int, float] = {}
    settled_actual = 0.0
    t = 0.0
    for op in case.ops:
        t += op[1]
        if op[0] == "reserve":
            _, _, cost, actual = op
            # The window and day this reservation would land in, per the rules.
            before = tr.used(t)
            day = int((t + case.day_offset) // DAY_S)
            result = li.reserve(t, cost, actual)
            if on_reserve is not None:
                on_reserve(li, t, cost, actual, result, before,
                           day_used.get(day, 0.0), day)
            if result == OK and cost > 0:
                w = tr.window_for_billed(t)
                tr.admit(w, cost)
                if case.allowance is not None:
                    day_used[day] = day_used.get(day, 0.0) + cost
                held.append(Held(t, result, cost, actual, w))
            elif result == THROTTLED:
                tr.window_for_billed(t)  # a throttled reservation found a window open
        else:
            if not held:
                continue
            h = held.pop(op[2] % len(held))
            li.settle(t, h.booked, h.cost, h.actual)
            settled_actual += h.actual
            tr.refund(t, h)
            day = int((t + case.day_offset) // DAY_S)
            if case.allowance is not None and day == int((h.t + case.day_offset) // DAY_S):
                day_used[day] = max(0.0, day_used[day] - (h.cost - h.actual))
        if on_step is not None:
            on_step(li, t, tr)
    return li, tr, held, day_used, settled_actual


_SETTINGS = settings(max_examples=100, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(cases())
def test_property_a_window_counter_never_exceeds_budget(case):
    """(a) CU reserved in the current window minus refunds credited to it <= budget."""

    def step(li, t, tr):
        for w, used in tr.counter.items():
            assert used <= case.budget, f"window {w} holds {used} > {case.budget}"
        # ... and the limiter's own view of the current window agrees with the tracker.
        assert li.available(t) == pytest.approx(case.budget - tr.used(t), abs=1e-9)

    drive(case, on_step=step)


@_SETTINGS
@given(cases())
def test_property_b_settled_cu_is_conserved(case):
    li, _, held, _, settled_actual = drive(case)
    assert sum(li.window_stats().settled_cu) == settled_actual
    # Reserved CU is conserved too: every admitted cost is booked once.
    li2 = case.limiter()
    total, t = 0.0, 0.0
    for op in case.ops:
        t += op[1]
        if op[0] == "reserve" and li2.reserve(t, op[2], op[3]) == OK:
            total += op[2]
    assert sum(li2.window_stats().reserved_cu) == total


@_SETTINGS
@given(cases())
def test_property_c_refunds_never_push_anything_negative(case):
    def step(li, t, tr):
        avail = li.available(t)
        assert 0.0 <= avail <= case.budget
        assert all(v >= 0.0 for v in li.daily_used.values())
        s = li.window_stats()
        for col in (s.reserved_cu, s.settled_cu, s.peak_used_cu, s.admitted, s.throttled,
                    s.phantom):
            assert all(v >= 0 for v in col)
        assert all(p <= a for p, a in zip(s.phantom, s.throttled, strict=True))
        assert all(pk <= case.budget for pk in s.peak_used_cu)

    drive(case, on_step=step)


@_SETTINGS
@given(cases(daily=False))
def test_property_d_available_capacity_can_be_reserved(case):
    """(d) available(now) >= c  <=>  reserve(now, c) is OK, for 0 < c <= budget."""
    def step(li, t, tr):
        avail = li.available(t)
        for c in {1, case.budget, max(1, int(avail)), int(avail) + 1}:
            if c > case.budget:
                continue
            trial = clone(li)
            got = trial.reserve(t, c)
            assert (got == OK) == (avail >= c), (t, c, avail, got)

    drive(case, on_step=step)


def _next_window_start(li: CULimiter, t: float) -> Fraction:
    if li.alignment == "epoch":
        return (math.floor(Fraction(t) / 12) + 1) * 12
    # first-hit: the window ends where the limiter's float arithmetic puts it
    return Fraction(li.window_stats().start_s[li.wid] + li.window_s)


def _check_retry_after(li: CULimiter, t: float, budget: int, cost: int, exact_times: bool
                       ) -> None:
    ra = li.retry_after(t)
    nxt = _next_window_start(li, t)
    exact = max(1, math.ceil(nxt - Fraction(t)))
    assert isinstance(ra, int) and ra >= 1
    assert t + ra >= nxt, (t, ra)  # the retry lands in the next window (float clock)
    if exact_times:
        assert ra == exact, (t, ra, exact)
    else:  # whole seconds: the ceil of the distance, give or take a float rounding
        assert abs(ra - exact) <= 1, (t, ra, exact)
    for c in {budget, cost if cost <= budget else budget, 1}:
        trial = clone(li)
        assert trial.reserve(t + ra, c) == OK, (t, ra, c)


@_SETTINGS
@given(cases(daily=False))
def test_property_e_retry_after_lands_in_a_window_with_room(case):
    """(e) after THROTTLED at t, any cost <= budget fits at t + retry_after(t)."""

    def on_reserve(li, t, cost, actual, result, used_before, day_before, day):
        if result == THROTTLED:
            _check_retry_after(li, t, case.budget, cost, exact_times=True)

    drive(case, on_reserve=on_reserve)


@_SETTINGS
@given(cases(daily=False, grid=False))
def test_property_e_retry_after_with_arbitrary_float_times(case):
    def on_reserve(li, t, cost, actual, result, used_before, day_before, day):
        if result == THROTTLED:
            _check_retry_after(li, t, case.budget, cost, exact_times=False)

    drive(case, on_reserve=on_reserve)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.floats(0.0, 2e4, allow_nan=False), st.floats(0.0, 1e8, allow_nan=False)),
       st.sampled_from(ALIGNMENTS))
def test_property_e_single_throttle_at_any_time(t, alignment):
    if alignment == "epoch":
        t = t % 2e4  # epoch keeps one (empty) row per idle window since time 0
    li = lim(100, alignment=alignment)
    assert li.reserve(t, 100) == OK
    assert li.reserve(t, 1) == THROTTLED
    _check_retry_after(li, t, 100, 1, exact_times=False)


@_SETTINGS
@given(cases(daily=True))
def test_property_f_402_exactly_when_the_days_allowance_cannot_cover(case):
    """(f) NO_ALLOWANCE never while the day's used CU + cost fits, and always otherwise."""

    def on_reserve(li, t, cost, actual, result, used_before, day_before, day):
        if cost <= 0 or cost > case.budget:
            assert result != NO_ALLOWANCE
            return
        fits = day_before + cost <= case.allowance
        assert (result == NO_ALLOWANCE) == (not fits), (t, cost, day_before, result)
        if result == NO_ALLOWANCE:
            assert day in li.daily_exhausted_at

    li, _, _, day_used, _ = drive(case, on_reserve=on_reserve)
    for day, used in li.daily_used.items():
        assert used == day_used.get(day, 0.0)


# -- the reference model --------------------------------------------------------------------

class RefLimiter:
    """The docstring's rules, restated in exact arithmetic for comparison."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self.B = Fraction(case.budget)
        self.tr = WindowTracker(case)
        self.inflight: list[tuple[object, Fraction]] = []  # (window, excess) per held
        self.day_used: dict[int, Fraction] = {}
        self.exhausted: dict[int, float] = {}

    def _day(self, t: float) -> int:
        return math.floor((Fraction(t) + Fraction(self.case.day_offset)) / Fraction(DAY_S))

    def reserve(self, t: float, cost: int, actual: int):
        """(result, phantom, window, day)."""
        if cost <= 0:
            return OK, False, None, None
        if cost > self.B:
            return OVERSIZED, False, None, None
        day = self._day(t)
        if self.case.allowance is not None and \
                self.day_used.get(day, 0) + cost > self.case.allowance:
            self.exhausted.setdefault(day, t)
            return NO_ALLOWANCE, False, None, day
        w = self.tr.window_for_billed(t)
        used = Fraction(self.tr.counter.get(w, 0))
        if used + cost > self.B:
            if self.tr.origin:
                pending = sum((e for ww, e in self.inflight if ww == w), Fraction(0))
            else:
                pending = sum((e for _, e in self.inflight), Fraction(0))
            return THROTTLED, used - pending + cost <= self.B, w, day
        self.tr.admit(w, cost)
        if self.case.allowance is not None:
            self.day_used[day] = self.day_used.get(day, 0) + cost
        return OK, False, w, day


@settings(_SETTINGS, max_examples=200)
@given(cases())
def test_property_limiter_matches_reference_model(case):
    """Every decision, phantom flag, Retry-After and ledger equals the reference model's."""
    li = case.limiter()
    ref = RefLimiter(case)
    held: list[tuple[Held, int]] = []
    t = 0.0
    for op in case.ops:
        t += op[1]
        if op[0] == "reserve":
            _, _, cost, actual = op
            want, phantom, w, day = ref.reserve(t, cost, actual)
            got = li.reserve(t, cost, actual)
            assert got == want, (t, cost, got, want)
            assert got.phantom == phantom
            if got == OK and cost > 0:
                if case.allowance is not None:
                    assert got.day == day
                h = Held(t, got, cost, actual, w)
                held.append((h, len(ref.inflight)))
                ref.inflight.append((w, Fraction(cost - actual)))
        elif held:
            h, _ = held.pop(op[2] % len(held))
            ref.inflight.remove((h.window, Fraction(h.cost - h.actual)))
            li.settle(t, h.booked, h.cost, h.actual)
            ref.tr.refund(t, h)
            day = ref._day(t)
            if case.allowance is not None and day == ref._day(h.t):
                ref.day_used[day] = max(Fraction(0), ref.day_used[day] - (h.cost - h.actual))
        assert li.available(t) == case.budget - ref.tr.used(t)
    assert li.daily_exhausted_at == ref.exhausted
    assert li.daily_used == {d: float(v) for d, v in ref.day_used.items()}


def test_spend_reserves_and_settles_at_once():
    from sim.policy.limiter import CULimiter as _L
    lim = _L(100)
    assert lim.spend(1.0, 30) == OK and lim.spend(2.0, 80) == THROTTLED
    assert lim.spend(3.0, 70) == OK
    w = lim.window_stats()
    assert w.reserved_cu[0] == 100 and w.settled_cu[0] == 100 and w.peak_used_cu[0] == 100


def test_reserve_returns_a_reservation_that_settle_takes_back():
    """The value of reserve() carries the window, day and phantom flag settle() needs."""

    li = CULimiter(100, daily_allowance_cu=1000, day_offset_s=86_400 - 6)
    first = li.reserve(0.0, 60, actual=20)
    assert isinstance(first, Reservation) and first == OK
    assert (first.window, first.day, first.phantom) == (0, 0, False)
    refused = li.reserve(1.0, 60, actual=60)
    assert refused == THROTTLED and refused.phantom and refused.window == 0
    # Day 0 ends at t=6 (UTC midnight): a reservation at t=12 is in day 1, window 1.
    later = li.reserve(12.0, 10, actual=10)
    assert (later.window, later.day) == (1, 1)
    li.settle(13.0, first, 60, 20)  # origin window 0 is gone: no refund to window 1
    assert li.available(13.0) == 90
    assert li.window_stats().settled_cu[0] == 20
    assert li.reserve(14.0, 0) == OK and li.reserve(14.0, 101) == OVERSIZED


def test_limiter_kind_selects_the_implementation():
    from sim.config.scenario import LimiterSettings
    from sim.policy.limiters import LIMITERS, make_limiter

    settings = LimiterSettings(alignment="first-hit")
    assert settings.kind == "fixed-window" and set(LIMITERS) == {"fixed-window"}
    li = make_limiter(100, settings, daily_allowance_cu=None)
    assert isinstance(li, CULimiter) and li.alignment == "first-hit"
    with pytest.raises(ValueError):
        LimiterSettings(kind="token-bucket")
