"""Client-side logs: the trace's times are when the client sent each request, on the
client's clock.

The service decided one network delay later, on its own clock, and settled (a sizing
request's refund) one return delay before the reply reached the client. So, on the
log's clock, a request sent at ``t`` whose reply came back ``latency`` later was decided
in ``[t + d_lo, t + d_hi]`` and settled in ``[t + latency - d_hi, t + latency - d_lo]``
(never before its decision), ``[d_lo, d_hi]`` the bounds on one delay: given
(``capsim calibrate --client-times --delay-ms LO,HI``), or, from the data alone,
``[0, latency]`` (the decision came after the request left and before its reply
arrived; so did the settlement).

What such a log can tell:

* the window phase **on the log's clock** only: the client clock's constant offset from
  the service's (its skew) shifts every time alike, so the phase found is the service's
  phase plus that skew, and no log of send times can show the skew itself;
* each decision is imposed only in the form every timing within the bounds satisfies
  (:func:`~.systems._build_system_uncertain`): a decision that may fall on either side
  of a window start imposes nothing, the CU a window held before a decision is bounded
  by what was certainly and what was possibly there; the identified set is wider, never
  narrower than the data allow.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..core.errors import CapsimError
from .recorded import KIND_SIZE, Recorded
from .systems import Uncertain


@dataclass(frozen=True)
class ClientTiming:
    """Per-row bounds on a client-side log's decisions and settlements (module doc)."""

    earliest: np.ndarray        # earliest decision time (the LP's clock)
    uncertain: Uncertain
    shift_s: float              # a constant delay the replay adds (given bounds: the mid)

    @property
    def slack(self) -> float:
        """The most a decision may lie after its earliest time."""
        w = self.uncertain.width
        return float(w.max()) if len(w) else 0.0

    def replayed(self, rec: Recorded) -> Recorded:
        """``rec`` as the replay reads it: each request decided at its send time plus the
        middle of the given delay bounds (the order of the rows kept)."""
        if not self.shift_s:
            return rec
        return replace(rec, t_s=rec.t_s + self.shift_s)


def parse_delay_ms(text: str | None) -> tuple[float, float] | None:
    """``"LO,HI"`` in milliseconds to seconds; a :class:`CapsimError` if malformed."""
    if text is None:
        return None
    try:
        lo, hi = (float(x) for x in text.split(","))
    except ValueError:
        raise CapsimError(f"expected two numbers of milliseconds LO,HI (e.g. 2,60), got "
                          f"{text!r}", field="--delay-ms") from None
    if not (0.0 <= lo <= hi < 60_000.0):
        raise CapsimError(f"expected 0 <= LO <= HI < 60000 ms, got {text!r}",
                          field="--delay-ms")
    return lo / 1e3, hi / 1e3


def client_timing(rec: Recorded, t_lp: np.ndarray, delay_s: tuple[float, float] | None
                  ) -> ClientTiming:
    """The bounds of every row (``t_lp``: the rows' times on the LP's clock, each
    account's apart; ``delay_s``: the bounds on one network delay, else each row's
    recorded latency bounds it)."""
    lat = np.nan_to_num(rec.latency_s, nan=0.0)
    if delay_s is None:
        lo = np.zeros(len(rec))
        hi = lat
        s_lo, s_hi = t_lp.copy(), t_lp + lat
        shift = 0.0
    else:
        lo = np.full(len(rec), delay_s[0])
        hi = np.full(len(rec), delay_s[1])
        s_hi = t_lp + np.maximum(lat - delay_s[0], delay_s[1])
        s_lo = np.maximum(t_lp + lat - delay_s[1], t_lp + delay_s[0])
        shift = 0.5 * (delay_s[0] + delay_s[1])
    earliest = t_lp + lo
    return ClientTiming(earliest, Uncertain(hi - lo, s_lo, s_hi), shift)


def client_note(delay_s: tuple[float, float] | None) -> str:
    """What a client-side log lets the calibration say (the report's note)."""
    bounds = ("each row's recorded latency bounds its delays (between 0 and the "
              "latency)" if delay_s is None else
              f"one network delay taken to be {1e3 * delay_s[0]:g}-{1e3 * delay_s[1]:g} ms")
    return ("client-side times: the window phase is on the log's clock, the service's "
            "phase plus the client clock's constant skew, which no log of send times can "
            f"show; {bounds}, each decision imposed only as every timing within those "
            "bounds allows (one that may fall either side of a window start imposes "
            "nothing)")


def timing_open(rec: Recorded, timing: ClientTiming, phase_s: float) -> np.ndarray:
    """Rows whose outcome the timing bounds leave open, at window phase ``phase_s``: the
    decision may fall either side of a window start, or as early or late as an attempt
    answered otherwise (the two may have been decided in either order), or as a
    settlement. A replay at one timing can mispredict them without any price being
    wrong; the verdict does not count those (:func:`~.calibrate._judge`)."""
    from ..core.vocabulary import WINDOW_S

    unc = timing.uncertain
    a = timing.earliest
    b = a + unc.width
    w_max = float(unc.width.max()) if len(a) else 0.0
    win = np.floor((rec.utc_day_offset_s + a - phase_s) / WINDOW_S)
    straddles = win != np.floor((rec.utc_day_offset_s + b - phase_s) / WINDOW_S)
    dec = np.isin(rec.observed, ("ok", "throttled")) & rec.compared
    idx = np.flatnonzero(dec)
    o = idx[np.argsort(a[idx], kind="stable")]
    near = np.zeros(len(rec), bool)
    if len(o) > 1:
        t, obs = a[o], rec.observed[o]
        change = np.flatnonzero(obs[1:] != obs[:-1])      # between o[c] and o[c + 1]
        # each decision's distance to the nearest attempt answered otherwise
        left = np.full(len(o), np.inf)
        right = np.full(len(o), np.inf)
        if len(change):
            run_id = np.concatenate([[0], np.cumsum(obs[1:] != obs[:-1])])
            last_before = np.concatenate([[-np.inf], t[change]])     # per run id
            first_after = np.concatenate([t[change + 1], [np.inf]])
            left = t - last_before[run_id]
            right = first_after[run_id] - t
        near[o] = np.minimum(left, right) <= 2 * w_max
    refunds = (rec.kind == KIND_SIZE) & (rec.observed == "ok")
    s_lo, s_hi = np.sort(unc.settle_lo[refunds]), np.sort(unc.settle_hi[refunds])
    # settlement intervals meeting [a, b]: those starting by b less those over before a
    settling = np.searchsorted(s_lo, b, "right") - np.searchsorted(s_hi, a, "left") > 0
    return dec & (straddles | near | settling)
