"""One policy-object set per account: the service keeps every limit per account.

An account (spec 5, 8.1, 8.3, 8.4) has its own CU limiter and daily allowance, its own
websocket slot cap and its own HTTP/2 connection limits. A run builds one
:class:`AccountPolicies` per account of the scenario (``[account]`` is one account;
``[[accounts]]`` several); requests find theirs through the key they carry.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config.resolved import account_tiers
from ..config.tiers import APIS, Tier
from ..policy.connections import AccountConnections
from ..policy.limiters import Limiter, make_limiter
from ..workload.demand import Plan


@dataclass
class AccountPolicies:
    """An account's tier and the policy objects that enforce it during one run."""

    name: str
    tier: Tier
    limiter: Limiter
    connections: AccountConnections
    method_in_tier: list[bool]  # by method index of the plan's tables


def build_accounts(plan: Plan, studied: Tier) -> list[AccountPolicies]:
    """Fresh policy objects for each account while ``studied`` is the tier under study
    (an account with a fixed tier keeps it)."""
    sc, pricing, tab = plan.scenario, plan.loaded.pricing, plan.tables
    limits = sc.http_limits
    out = []
    for acct, tier in zip(sc.account_list, account_tiers(plan.loaded, studied), strict=True):
        limiter = make_limiter(tier.cu_per_window, sc.limiter,
                               daily_allowance_cu=pricing.for_tier(tier).daily_allowance_cu,
                               day_offset_s=sc.day_offset_s)
        out.append(AccountPolicies(
            acct.name, tier, limiter,
            AccountConnections(limits.max_active_connections, limits.max_new_connections_per_s),
            [tier.includes(APIS[a]) for a in tab.method_api]))
    return out
