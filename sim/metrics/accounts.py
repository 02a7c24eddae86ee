"""Per-account figures of a tier's run (scenarios with ``[[accounts]]``).

An attempt belongs to the account of the key it carried (a key of no account: to none;
it got 401). A logical request belongs to the account of its first attempt's key. The
plan's monthly cost is the sum of the accounts' prices, each at its own tier.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np

from ..model import recorder as rc
from ..model.engine import TierResult
from ..results.summary import AccountSummary, DailyAllowance, PlanSummary
from ..workload.demand import Plan

_THROTTLES = np.array(rc.THROTTLES)


def _r(x: float, nd: int = 6) -> float:
    return float(round(float(x), nd))


DAY_S = 86400.0


def allowance_lasts_h(allowance_cu: float | None, daily_used: dict[int, float],
                      duration_s: float) -> float | None:
    """Hours a daily allowance lasts at a run's rate of charged CU: the allowance over the
    CU the allowance counted in the run (every day's) per simulated hour. None for a run
    of a day or more (it saw whole days: ``ran_out_at`` says), without an allowance, or
    when nothing was charged (it would last for ever)."""
    if allowance_cu is None or duration_s >= DAY_S:
        return None
    charged = sum(daily_used.values())
    if charged <= 0.0:
        return None
    return _r(allowance_cu / (charged / (duration_s / 3600.0)), 3)


def request_accounts(result: TierResult, plan: Plan) -> np.ndarray:
    """The account index of each logical request (rows of ``result.requests``)."""
    a, q = result.attempts, result.requests
    first = a["attempt"] == 1
    rids = a["request_id"][first]
    acct = plan.tables.key_account[a["key"][first]]
    order = np.argsort(rids, kind="stable")
    pos = np.searchsorted(rids[order], q["request_id"])
    return acct[order][pos] if len(q["request_id"]) else np.empty(0, dtype=np.int16)


def plan_summary(result: TierResult, plan: Plan) -> PlanSummary | None:
    """The plan's cost and each account's figures; None for a one-``[account]`` scenario."""
    sc = plan.scenario
    if not sc.several_accounts:
        return None
    a, q = result.attempts, result.requests
    att_acct = plan.tables.key_account[a["key"]]
    req_acct = request_accounts(result, plan)
    pricing = plan.loaded.pricing
    ws = result.websockets
    accounts = []
    for i, (spec, res) in enumerate(zip(sc.account_list, result.accounts, strict=True)):
        rows, reqs = att_acct == i, req_acct == i
        outcomes = a["outcome"][rows]
        n_att, n_req = int(rows.sum()), int(reqs.sum())
        throttled = int(np.isin(outcomes, _THROTTLES).sum())
        ok = reqs & (q["outcome"] == rc.OK)
        latency = (q["t_end"][ok] - q["t_first"][ok]) * 1000.0
        used = max(res.daily_used.values(), default=0.0)
        ran_out = min(res.daily_exhausted_at.values(), default=None)
        is_ws = rows & (a["source"] >= len(sc.sources))
        slots = ws.slots_by_account[i]["live"] if ws is not None else []
        accounts.append(AccountSummary(
            account=spec.name, tier=res.tier.name, fixed_tier=spec.tier is not None,
            keys=len(spec.keys), monthly_usd=pricing.for_tier(res.tier).monthly_usd,
            cu_per_window=_r(res.tier.cu_per_window), ws_cap=res.tier.ws_cap,
            requests=n_req, attempts=n_att, throttled=throttled,
            throttle_rate=_r(throttled / n_att if n_att else 0.0),
            failure_rate=_r(1.0 - ok.sum() / n_req if n_req else 0.0),
            latency_p99_ms=_r(np.percentile(latency, 99), 3) if len(latency) else None,
            cu_settled=_r(a["cu_settled"][rows].sum()),
            peak_window_used=_r(max(res.windows.peak_used_cu, default=0.0)),
            windows_with_throttles=int(sum(1 for x in res.windows.throttled if x)),
            daily_allowance=DailyAllowance(
                allowance_cu=res.daily_allowance_cu, used_cu=_r(used),
                ran_out_at=None if ran_out is None else
                (sc.start + timedelta(seconds=ran_out)).isoformat().replace("+00:00", "Z"),
                lasts_h=allowance_lasts_h(res.daily_allowance_cu, res.daily_used,
                                          sc.duration_s)),
            connections_opened=res.connections.opened,
            refused_430=int((outcomes == rc.CONN_430).sum()),
            ws_handshakes_ok=int((a["outcome"][is_ws] == rc.OK).sum()),
            ws_refused_435=int((a["outcome"][is_ws] == rc.WS_435).sum()),
            peak_live_slots=int(max(slots, default=0)),
        ))
    prices = [x.monthly_usd for x in accounts]
    total = None if None in prices else _r(sum(prices), 2)
    return PlanSummary(monthly_usd=total, accounts=tuple(accounts))
