"""The account's CU limiter: 12-second windows, reserve-then-settle, daily allowance.

A plain policy object with no SimPy in it: time is passed in as ``now`` (seconds of
simulated time), and windows are computed lazily from ``now`` -- nothing ticks.

Along a timeline (budget 100 CU, ``epoch`` alignment, ``origin-window`` refunds)::

    t=0.0   reserve(60, actual=20) -> OK        window 0 used 60
    t=1.0   reserve(60, actual=60) -> THROTTLED  60+60 > 100; phantom: 60-40+60 <= 100
    t=2.0   settle(window 0, 60 -> 20)           window 0 used 20 (refund of 40)
    t=3.0   reserve(60, actual=60) -> OK         window 0 used 80
    t=12.0  a new window: used 0; Retry-After at t=1.0 was ceil(12-1) = 11 s

Rules (spec 8.1, 8.2, 7):

* One budget per account; every key, API and region draws on the same limiter.
* ``epoch`` windows start at multiples of ``window_s`` from simulation time 0;
  ``first-hit`` windows start at the first billed reservation after the previous expired;
  ``utc`` windows start where the UTC clock reads ``phase_s`` plus a multiple of
  ``window_s`` (the service's own grid, ``window_s`` dividing a day): at simulation time
  ``t`` the clock reads ``t + day_offset_s`` (mod one day). With ``phase_s = 5`` and
  ``day_offset_s = 0``, windows are ``[-7, 5)``, ``[5, 17)``, ... of simulation time.
* A billed action reserves its cost at admission. It is admitted when the window's
  counter plus the cost fits the budget; otherwise it is throttled and holds nothing.
  A cost that can never fit (> budget) is ``OVERSIZED``.
* Settling refunds ``reserved - actual``: to the window it was reserved in while that
  window is still current (``origin-window``), or to whichever window is current
  (``current-window``). The counter never goes below zero.
* The daily allowance is a separate ledger reset at 00:00 UTC of the simulated clock
  (``day_offset_s`` is the UTC time of day at simulation time 0). A billed action the
  remaining allowance cannot cover is refused (``NO_ALLOWANCE``, HTTP 402). Settling
  refunds the ledger of the day the action was reserved in, if that day is current.
* Unbilled actions (cost 0) are always admitted and never open a window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..core.vocabulary import DAY_S, WINDOW_S

OK, THROTTLED, NO_ALLOWANCE, OVERSIZED = 0, 1, 2, 3
"""Status codes of :meth:`CULimiter.reserve`."""


class Reservation(int):
    """What :meth:`CULimiter.reserve` returns and :meth:`CULimiter.settle` takes back.

    It *is* the status code (``reserve(...) == OK``) and carries where the CU were
    booked: ``window`` (the window's row in :meth:`~CULimiter.window_stats`, -1 if none),
    ``day`` (the UTC day of the daily ledger, -1 if none) and ``phantom`` (a throttle
    that would have fitted had every in-flight reservation already settled).
    """

    window: int
    day: int
    phantom: bool

    def __repr__(self) -> str:
        name = ("OK", "THROTTLED", "NO_ALLOWANCE", "OVERSIZED")[int(self)]
        return f"Reservation({name}, window={self.window}, day={self.day}, phantom={self.phantom})"


def _booked(status: int, window: int, day: int, phantom: bool = False) -> Reservation:
    r = int.__new__(Reservation, status)
    r.window, r.day, r.phantom = window, day, phantom
    return r


_UNBILLED = _booked(OK, -1, -1)
_OVERSIZED = _booked(OVERSIZED, -1, -1)

_EPS = 1e-9  # relative slack so that sums of decimal CU costs compare as on paper


@dataclass(frozen=True)
class WindowStats:
    """Per-window columns (equal-length lists) exported once at the end of a run: one
    row per window opened, in start order; idle windows in between have no row."""

    start_s: list[float]
    reserved_cu: list[float]
    settled_cu: list[float]
    peak_used_cu: list[float]
    admitted: list[int]
    throttled: list[int]
    phantom: list[int]


class CULimiter:
    """Reservation-then-settle limiter for one account.

    Parameters
    ----------
    budget_cu:
        CU per window (the tier's ``cu_per_window``).
    window_s:
        Window length; the spec fixes 12 s.
    alignment:
        ``"epoch"``, ``"first-hit"`` or ``"utc"``.
    refund_to:
        ``"origin-window"`` or ``"current-window"``.
    daily_allowance_cu:
        Included CU per UTC day, or ``None`` for no daily limit.
    day_offset_s:
        Seconds since 00:00 UTC at simulation time 0.
    phase_s:
        With ``"utc"`` alignment: where the windows start on the UTC clock, in
        ``[0, window_s)`` seconds after a multiple of ``window_s`` since 00:00 UTC.
    """

    def __init__(
        self,
        budget_cu: float,
        *,
        window_s: float = WINDOW_S,
        alignment: str = "epoch",
        refund_to: str = "origin-window",
        daily_allowance_cu: float | None = None,
        day_offset_s: float = 0.0,
        phase_s: float = 0.0,
    ) -> None:
        if alignment not in ("epoch", "first-hit", "utc"):
            raise ValueError("alignment must be 'epoch', 'first-hit' or 'utc', "
                             f"not {alignment!r}")
        if refund_to not in ("origin-window", "current-window"):
            raise ValueError("refund_to must be 'origin-window' or 'current-window', "
                             f"not {refund_to!r}")
        if budget_cu <= 0 or window_s <= 0:
            raise ValueError("budget_cu and window_s must be positive")
        self.budget_cu = float(budget_cu)
        self.window_s = float(window_s)
        self.alignment = alignment
        self.refund_to = refund_to
        self.daily_allowance_cu = daily_allowance_cu
        self.day_offset_s = float(day_offset_s)
        self._limit = self.budget_cu * (1 + _EPS)
        self._epoch = alignment in ("epoch", "utc")
        # Simulation time + _shift is a multiple of window_s exactly at a window start.
        self._shift = 0.0
        if alignment == "utc":
            if not 0.0 <= phase_s < window_s:
                raise ValueError("phase_s must be in [0, window_s)")
            if (DAY_S / window_s) % 1:
                raise ValueError("utc alignment needs a window_s that divides a day")
            self._shift = (day_offset_s - phase_s) % window_s
            if self._shift >= window_s:  # a phase below float resolution rounds to w
                self._shift = 0.0
        self.phase_s = float(phase_s)
        self._origin = refund_to == "origin-window"

        # The current window: its id (position in the stats lists), its number on the
        # epoch/utc grid, start and counter.
        self.wid = -1
        self._k = -1
        self._start = -math.inf
        self._end = -math.inf  # for first-hit, no window is open while now >= _end
        self._used = 0.0
        self._pending_excess = 0.0  # in-flight (reserved - actual) of this window
        self._pending_excess_all = 0.0  # same, over every window (current-window refunds)

        self.day = -1
        self._day_end = -math.inf
        self._day_used = 0.0
        self.daily_used: dict[int, float] = {}
        self.daily_exhausted_at: dict[int, float] = {}

        self._w_start: list[float] = []
        self._w_reserved: list[float] = []
        self._w_settled: list[float] = []
        self._w_peak: list[float] = []
        self._w_admitted: list[int] = []
        self._w_throttled: list[int] = []
        self._w_phantom: list[int] = []
        # The Reservations of the current window and day, made on first use and handed to
        # every action of that window (never mutated): admitted, throttled, phantom. A new
        # window or day forgets them (_forget_bookings).
        self._forget_bookings()

    def _forget_bookings(self) -> None:
        self._ok_booked = self._throttled_booked = self._phantom_booked = None

    # -- windows ---------------------------------------------------------------------

    def _open_window(self, start: float, k: int = -1) -> None:
        # Windows are stored sparsely: a row for each window opened (by a billed request,
        # or a settle or query that falls in it), none for idle windows in between.
        wid = len(self._w_start)
        self._append_window(start)
        self.wid = wid
        self._forget_bookings()
        self._k = k
        self._start = start
        self._end = start + self.window_s
        self._used = 0.0
        self._pending_excess = 0.0

    def _append_window(self, start: float) -> None:
        self._w_start.append(start)
        self._w_reserved.append(0.0)
        self._w_settled.append(0.0)
        self._w_peak.append(0.0)
        self._w_admitted.append(0)
        self._w_throttled.append(0)
        self._w_phantom.append(0)

    def _roll(self, now: float) -> bool:
        """Bring the window up to ``now``; False if no window is open (first-hit, idle)."""
        if now < self._end:
            return True
        if self._epoch:
            w = self.window_s
            # now >= _end: a later window, even where rounding puts now + _shift a hair
            # below the boundary the current window's end was computed from
            k = max(math.floor((now + self._shift) / w), self._k + 1)
            self._open_window(k * w - self._shift, k)
            return True
        return False

    def _roll_day(self, now: float) -> None:
        if now >= self._day_end:
            day = int((now + self.day_offset_s) // DAY_S)
            self.day = day
            self._forget_bookings()
            self._day_end = (day + 1) * DAY_S - self.day_offset_s
            self._day_used = 0.0

    # -- verbs -----------------------------------------------------------------------

    def reserve(self, now: float, cost: float, actual: float | None = None) -> Reservation:
        """Try to reserve ``cost`` CU at ``now``: a :class:`Reservation` equal to OK,
        THROTTLED, NO_ALLOWANCE or OVERSIZED, to hand back to :meth:`settle`.

        ``actual`` is what the action will settle to (defaults to ``cost``); it is used
        only to tell *phantom* throttles -- ones that would have fitted had every
        in-flight reservation already settled -- from real ones (``.phantom``).
        :attr:`wid` and :attr:`day` are the current window and day.
        """
        if cost <= 0.0:
            return _UNBILLED
        if cost > self._limit:
            return _OVERSIZED
        allowance = self.daily_allowance_cu
        if allowance is not None:
            if now >= self._day_end:
                self._roll_day(now)
            if self._day_used + cost > allowance * (1 + _EPS):
                self.daily_exhausted_at.setdefault(self.day, now)
                return _booked(NO_ALLOWANCE, -1, self.day)
        if now >= self._end and not self._roll(now):
            self._open_window(now)  # first-hit: this billed request starts a window
        wid = self.wid
        used = self._used + cost
        if used > self._limit:
            self._w_throttled[wid] += 1
            pending = self._pending_excess if self._origin else self._pending_excess_all
            if self._used - pending + cost <= self._limit:
                self._w_phantom[wid] += 1
                booked = self._phantom_booked
                if booked is None:
                    booked = self._phantom_booked = _booked(THROTTLED, wid, self.day, True)
                return booked
            booked = self._throttled_booked
            if booked is None:
                booked = self._throttled_booked = _booked(THROTTLED, wid, self.day)
            return booked
        self._used = used
        if used > self._w_peak[wid]:
            self._w_peak[wid] = used
        self._w_reserved[wid] += cost
        self._w_admitted[wid] += 1
        excess = cost - (cost if actual is None else actual)
        if excess > 0.0:
            self._pending_excess += excess
            self._pending_excess_all += excess
        if allowance is not None:
            self._day_used += cost
            self.daily_used[self.day] = self._day_used
        booked = self._ok_booked
        if booked is None:
            booked = self._ok_booked = _booked(OK, wid, self.day)
        return booked

    def settle(self, now: float, booked: Reservation, reserved: float, actual: float) -> None:
        """Settle the reservation ``booked`` (what :meth:`reserve` returned) from
        ``reserved`` to ``actual`` CU."""
        if reserved <= 0.0:
            return
        wid = booked.window
        self._w_settled[wid] += actual
        refund = reserved - actual
        if refund <= 0.0:
            return
        self._pending_excess_all -= refund
        if now < self._end or self._roll(now):  # a window is current at `now`
            # (``x if x > 0.0 else 0.0`` is max(0.0, x) without the call)
            if wid == self.wid:
                self._pending_excess -= refund
                used = self._used - refund
                self._used = used if used > 0.0 else 0.0
            elif not self._origin:
                used = self._used - refund
                self._used = used if used > 0.0 else 0.0
        if self.daily_allowance_cu is not None:
            if now >= self._day_end:
                self._roll_day(now)
            if booked.day == self.day:
                self._day_used = max(0.0, self._day_used - refund)
                self.daily_used[self.day] = self._day_used

    def spend(self, now: float, cost: float) -> Reservation:
        """Reserve a cost known in advance and settle it at once (websocket connects and
        published events); same results as :meth:`reserve`."""
        status = self.reserve(now, cost, cost)
        if status == OK and cost > 0.0:
            self._w_settled[status.window] += cost
        return status

    def retry_after(self, now: float) -> int:
        """Whole seconds (ceil, at least 1) from ``now`` to the start of the next window."""
        if self._epoch:
            w = self.window_s
            next_start = (math.floor((now + self._shift) / w) + 1) * w - self._shift
        else:
            next_start = self._end if now < self._end else now
        wait = max(1, math.ceil(next_start - now))
        if now + wait < next_start:  # float rounding put us a hair short of the boundary
            wait += 1
        return wait

    def available(self, now: float) -> float:
        """CU a reservation at ``now`` could take from the window (ignores the daily ledger)."""
        if now >= self._end and not self._roll(now):
            return self.budget_cu
        return max(0.0, self.budget_cu - self._used)

    def window_stats(self) -> WindowStats:
        """Per-window columns; windows are rows in order of their start."""
        return WindowStats(
            self._w_start, self._w_reserved, self._w_settled, self._w_peak,
            self._w_admitted, self._w_throttled, self._w_phantom,
        )
