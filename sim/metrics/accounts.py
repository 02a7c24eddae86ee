"""Per-account figures of a tier's run (scenarios with ``[[accounts]]``).

An attempt belongs to the account of the key it carried (a key of no account: to none;
it got 401). A logical request belongs to the account of its key (every attempt of a
request carries the same one), read from the request rows. The plan's monthly cost is
the sum of the accounts' prices, each at its own tier. The figures come from one pass
over each spool, in memory that does not grow with the run.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np

from ..model import recorder as rc
from ..model.engine import TierResult
from ..results.summary import AccountSummary, DailyAllowance, PlanSummary
from ..workload.demand import Plan
from .spool_totals import release_arrow
from .stream_stats import ExactSum, OrderStatistics

_N_OUT = len(rc.OUTCOMES)


def _r(x: float, nd: int = 6) -> float:
    return float(round(float(x), nd))


DAY_S = 86400.0


def allowance_lasts_h(allowance_cu: float | None, daily_used: dict[int, float],
                      duration_s: float, covered_s: float | None = None) -> float | None:
    """Hours a daily allowance lasts at a run's rate of charged CU: the allowance over the
    CU the allowance counted in the run (every day's) per simulated hour. None for a run
    of a day or more (it saw whole days: ``ran_out_at`` says), without an allowance, or
    when nothing was charged (it would last for ever). ``covered_s``: the seconds with
    traffic when a replayed trace ends before the run (the rate is over them)."""
    if allowance_cu is None or duration_s >= DAY_S:
        return None
    charged = sum(daily_used.values())
    if charged <= 0.0:
        return None
    hours = (covered_s if covered_s is not None else duration_s) / 3600.0
    return _r(allowance_cu / (charged / hours), 3)


class _AccountTotals:
    """Per-account totals over a tier's spools, in one pass over each, chunk by chunk.

    Accounts are indexed from 1 (0: a key of no account). An attempt belongs to the
    account of its key, a logical request to the account of its key (every attempt of a
    request carries the same key).
    """

    def __init__(self, result: TierResult, plan: Plan) -> None:
        sc = plan.scenario
        n = len(sc.account_list) + 1
        key_account = plan.tables.key_account.astype(np.int64) + 1
        n_sources = len(sc.sources)
        self.attempts = np.zeros((n, _N_OUT), dtype=np.int64)
        self.handshakes = np.zeros((n, _N_OUT), dtype=np.int64)
        self.settled = [ExactSum() for _ in range(n)]
        for a in result.attempt_sink.chunks(["key", "source", "outcome", "cu_settled"]):
            acct, outcome = key_account[a["key"]], a["outcome"].astype(np.int64)
            self.attempts += _by_account(acct, outcome, n)
            ws = a["source"] >= n_sources
            self.handshakes += _by_account(acct[ws], outcome[ws], n)
            for i in np.unique(acct).tolist():
                self.settled[i].add(a["cu_settled"][acct == i])
        self.requests = np.zeros((n, _N_OUT), dtype=np.int64)
        self.latency_ms = [OrderStatistics() for _ in range(n)]
        for q in result.request_sink.chunks(["key", "outcome", "t_first", "t_end"]):
            acct, outcome = key_account[q["key"]], q["outcome"].astype(np.int64)
            self.requests += _by_account(acct, outcome, n)
            ok = outcome == rc.OK
            latency = (q["t_end"] - q["t_first"]) * 1000.0
            for i in np.unique(acct[ok]).tolist():
                self.latency_ms[i].add(latency[ok & (acct == i)])
        release_arrow()


def _by_account(acct: np.ndarray, outcome: np.ndarray, n: int) -> np.ndarray:
    """Rows per (account, outcome): an ``n`` x outcomes matrix."""
    return np.bincount(acct * _N_OUT + outcome, minlength=n * _N_OUT).reshape(n, _N_OUT)


def plan_summary(result: TierResult, plan: Plan) -> PlanSummary | None:
    """The plan's cost and each account's figures; None for a one-``[account]`` scenario."""
    sc = plan.scenario
    if not sc.several_accounts:
        return None
    totals = _AccountTotals(result, plan)
    pricing = plan.loaded.pricing
    ws = result.websockets
    accounts = []
    for i, (spec, res) in enumerate(zip(sc.account_list, result.accounts, strict=True)):
        outcomes, requests = totals.attempts[i + 1], totals.requests[i + 1]
        latency = totals.latency_ms[i + 1]
        n_att, n_req = int(outcomes.sum()), int(requests.sum())
        throttled = int(outcomes[list(rc.THROTTLES)].sum())
        used = max(res.daily_used.values(), default=0.0)
        ran_out = min(res.daily_exhausted_at.values(), default=None)
        slots = ws.slots_by_account[i]["live"] if ws is not None else []
        accounts.append(AccountSummary(
            account=spec.name, tier=res.tier.name, fixed_tier=spec.tier is not None,
            keys=len(spec.keys), monthly_usd=pricing.for_tier(res.tier).monthly_usd,
            cu_per_window=_r(res.tier.cu_per_window), ws_cap=res.tier.ws_cap,
            requests=n_req, attempts=n_att, throttled=throttled,
            throttle_rate=_r(throttled / n_att if n_att else 0.0),
            failure_rate=_r(1.0 - requests[rc.OK] / n_req if n_req else 0.0),
            latency_p99_ms=_r(latency.percentile([99])[0], 3) if latency.count else None,
            cu_settled=_r(totals.settled[i + 1].value),
            peak_window_used=_r(max(res.windows.peak_used_cu, default=0.0)),
            windows_with_throttles=int(sum(1 for x in res.windows.throttled if x)),
            daily_allowance=DailyAllowance(
                allowance_cu=res.daily_allowance_cu, used_cu=_r(used),
                ran_out_at=None if ran_out is None else
                (sc.start + timedelta(seconds=ran_out)).isoformat().replace("+00:00", "Z"),
                lasts_h=allowance_lasts_h(res.daily_allowance_cu, res.daily_used,
                                          sc.duration_s, plan.covered_s)),
            connections_opened=res.connections.opened,
            refused_430=int(outcomes[rc.CONN_430]),
            ws_handshakes_ok=int(totals.handshakes[i + 1][rc.OK]),
            ws_refused_435=int(totals.handshakes[i + 1][rc.WS_435]),
            peak_live_slots=int(max(slots, default=0)),
        ))
    return PlanSummary(monthly_usd=plan_price([x.monthly_usd for x in accounts]),
                       accounts=tuple(accounts))


def plan_price(prices: list[float | None]) -> float | None:
    """A plan's monthly price: its accounts' prices summed (None if one is unknown)."""
    return None if None in prices else _r(sum(prices), 2)
