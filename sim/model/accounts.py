"""One policy-object set per account: the service keeps every limit per account.

An account (spec 5, 8.1, 8.3, 8.4) has its own CU limiter and daily allowance, its own
websocket slot cap and its own HTTP/2 connection limits. A run builds one
:class:`AccountPolicies` per account of the scenario (``[account]`` is one account;
``[[accounts]]`` several); requests find theirs through the key they carry. Each holds
the account's :class:`~sim.policy.admission.Admission`, assembled in one place
(:meth:`Admission.for_account <sim.policy.admission.Admission.for_account>`, which the
emulator uses too): limiter, slot pool, connection limits, connect and publish prices,
and the handshake decision. The model's tables (which method's API the tier includes)
are derived from it once, here, so nothing calls back into the scenario during a run.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config.resolved import account_tiers
from ..config.tiers import APIS, Tier
from ..policy.admission import Admission
from ..policy.connections import AccountConnections
from ..policy.limiters import Limiter
from ..workload.demand import Plan


@dataclass
class AccountPolicies:
    """An account's tier and the policy objects that enforce it during one run."""

    name: str
    admission: Admission
    method_in_tier: list[bool]  # by method index of the plan's tables

    @property
    def tier(self) -> Tier:
        """The account's tier in this run."""
        return self.admission.tier

    @property
    def limiter(self) -> Limiter:
        """The account's CU limiter (12-second windows, daily allowance)."""
        return self.admission.limiter

    @property
    def connections(self) -> AccountConnections:
        """The account's HTTP/2 connection limits (spec 8.4)."""
        return self.admission.connections


def build_accounts(plan: Plan, studied: Tier) -> list[AccountPolicies]:
    """Fresh policy objects for each account while ``studied`` is the tier under study
    (an account with a fixed tier keeps it)."""
    sc, tab = plan.scenario, plan.tables
    out = []
    for acct, tier in zip(sc.account_list, account_tiers(plan.loaded, studied), strict=True):
        out.append(AccountPolicies(acct.name, Admission.for_account(plan.loaded, tier),
                                   [tier.includes(APIS[a]) for a in tab.method_api]))
    return out
