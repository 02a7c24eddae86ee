"""The service's decisions, one call per attempt, over the simulator's policy objects.

:class:`Admission` holds one account's limiter (:func:`sim.policy.limiters.make_limiter`
for the scenario's ``[limiter]``), websocket :class:`~sim.policy.slots.SlotPool` and
:class:`~sim.policy.connections.AccountConnections` -- the very objects the SimPy model
builds -- and asks them in the model's order. Time is passed in as service seconds
(``now``); nothing here sleeps or does I/O, so the emulator and the trace comparison
(:mod:`sim.calibration.agreement`) share it.

Along a timeline (tier "RPC", 4,000 CU per 12 s; ``svc_call`` costs 20 CU)::

    t=0.00  connection_opened("rpc.localhost")   -> True      1 active, 1 open this second
    t=0.01  request(svc_call)                    -> ok        window 0 used 20
    ...     199 more svc_call                    -> ok        window 0 used 4,000
    t=5.00  request(svc_call)                    -> -32005    (JSON-RPC: no Retry-After)
    t=5.00  request(POST /v1/size)               -> 402       the tier has no Search API
    t=12.0  request(svc_call)                    -> ok        window 1

Order of the checks (docs/explanation/spec-rules.md; the same as ``sim.model.engine`` and
``sim.model.websockets``): an HTTP request is refused with 430 when its connection was
refused, then 421 (RPC or ``POST /v1/size`` without HTTP/2 and SNI), 401 (unknown key),
402 (API outside the tier), then the limiter (434 / -32005 / 402 for the daily
allowance / oversized). A handshake checks 401, 402, the slot cap (435), then spends
the connect cost (``ws_cu_rejected`` with the window's Retry-After, or 402).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..config.resolved import LoadedScenario
from ..config.tiers import Tier
from ..core.errors import CapsimError
from ..core.vocabulary import (
    AUTH_401,
    CONN_430,
    HTTP_434,
    OK,
    OUTCOMES,
    PAY_402,
    PROTO_421,
    RPC,
    RPC_32005,
    SIZE_METHOD,
    STREAM_API,
    WS_435,
    WS_CU,
)
from ..core.vocabulary import OVERSIZED as OUT_OVERSIZED
from .connections import AccountConnections
from .limiter import NO_ALLOWANCE, OVERSIZED, THROTTLED, Reservation
from .limiter import OK as LIM_OK
from .limiters import make_limiter
from .slots import SlotPool

_NAN = math.nan


@dataclass(frozen=True)
class Decision:
    """An attempt's outcome (an index into :data:`~sim.core.vocabulary.OUTCOMES`).

    ``retry_after_s`` is the whole seconds of a ``Retry-After`` header (NaN for none);
    ``ticket`` identifies an admitted reservation for :meth:`Admission.settle`.
    """

    outcome: int
    retry_after_s: float = _NAN
    ticket: tuple[Reservation, float, float] | None = None

    @property
    def name(self) -> str:
        """The outcome's name: ``ok``, ``434``, ``-32005``, ..."""
        return OUTCOMES[self.outcome]


class Admission:
    """One account's admission on tier ``tier``, configured from a loaded scenario.

    ``publish_cu`` maps each stream to the CU a delivery spends (0: unbilled),
    ``connect_cu`` is a handshake's cost; both come from the scenario's pricing.
    """

    def __init__(self, loaded: LoadedScenario, tier: Tier) -> None:
        sc, pricing = loaded.scenario, loaded.pricing
        if len(sc.account_list) > 1:
            raise CapsimError("the live emulator serves one account; expected [account] or "
                              "a single [[accounts]] entry", file=loaded.path, field="accounts")
        self.tier = tier
        self.pricing = pricing
        self.limiter = make_limiter(
            tier.cu_per_window, sc.limiter,
            daily_allowance_cu=pricing.for_tier(tier).daily_allowance_cu,
            day_offset_s=sc.day_offset_s)
        self.slots = SlotPool(tier.ws_cap, sc.ws.retry_after_live_s)
        self.connections = AccountConnections(sc.http_limits.max_active_connections,
                                              sc.http_limits.max_new_connections_per_s)
        self.method_api = {m: spec.api for m, spec in sc.methods.items()}
        self.connect_cu = float(pricing.websocket.connect_cu)
        self.publish_cu = {s: (float(pricing.websocket.publish_cu.get(s, 0.0))
                               if sc.ws.source(s).billed else 0.0) for s in STREAM_API}

    # -- HTTP ------------------------------------------------------------------------

    def needs_h2(self, method: str) -> bool:
        """Whether ``method`` requires HTTP/2 with SNI (spec 8.4.1: RPC and sizing)."""
        return method == SIZE_METHOD or self.method_api.get(method) == RPC

    def request(self, now: float, method: str, *, key_ok: bool, h2_sni: bool,
                reserve_cu: float, actual_cu: float, api: str | None = None) -> Decision:
        """Decide an HTTP attempt reaching the service at ``now``.

        ``api`` defaults to the method's API in the scenario; ``reserve_cu`` and
        ``actual_cu`` are what it reserves and will settle to (0 for unbilled methods).
        """
        api = api or self.method_api.get(method, RPC)
        if self.needs_h2(method) and not h2_sni:
            return Decision(PROTO_421)
        if not key_ok:
            return Decision(AUTH_401)
        if not self.tier.includes(api):
            return Decision(PAY_402)
        lim = self.limiter
        status = lim.reserve(now, reserve_cu, actual_cu)
        if status == LIM_OK:
            return Decision(OK, ticket=(status, reserve_cu, actual_cu))
        if status == THROTTLED:
            if api == RPC:
                return Decision(RPC_32005)
            return Decision(HTTP_434, float(lim.retry_after(now)))
        if status == NO_ALLOWANCE:
            return Decision(PAY_402)
        assert status == OVERSIZED
        return Decision(OUT_OVERSIZED)

    def settle(self, now: float, decision: Decision) -> None:
        """Settle an admitted attempt to its actual CU (after its service time)."""
        if decision.ticket is not None:
            booked, reserve, actual = decision.ticket
            self.limiter.settle(now, booked, reserve, actual)

    @staticmethod
    def refused_connection() -> Decision:
        """The outcome of any request on a connection the account refused."""
        return Decision(CONN_430)

    # -- connections -----------------------------------------------------------------

    def connection_opened(self, now: float, hostname: str) -> bool:
        """Admit a new HTTP connection to ``hostname`` (False: refused, 430)."""
        return self.connections.try_open(now, hostname)

    def connection_closed(self, now: float) -> None:
        """An admitted HTTP connection closed."""
        self.connections.release(now)

    # -- websockets ------------------------------------------------------------------

    def handshake(self, now: float, stream: str, *, key_ok: bool) -> Decision:
        """Decide a websocket handshake on ``stream`` (a stream name of the vocabulary)."""
        if not key_ok:
            return Decision(AUTH_401)
        if not self.tier.includes(STREAM_API[stream]):
            return Decision(PAY_402)
        ok, wait = self.slots.acquire(now)
        if not ok:
            return Decision(WS_435, float(wait))
        status = self.limiter.spend(now, self.connect_cu)
        if status == LIM_OK:
            return Decision(OK)
        self.slots.release_clean(now)
        if status == NO_ALLOWANCE:
            return Decision(PAY_402)
        return Decision(WS_CU, float(self.limiter.retry_after(now)))

    def websocket_closed(self, now: float, *, clean: bool, stale_expiry_s: float) -> None:
        """A live websocket ended: a clean close frees its slot at once, an unclean one
        (TCP dropped without a close frame) leaves it stale for ``stale_expiry_s``."""
        if clean:
            self.slots.release_clean(now)
        else:
            self.slots.release_unclean(now, stale_expiry_s)

    def publish(self, now: float, stream: str) -> bool:
        """Spend one delivery of ``stream`` on a live connection (False: CU exhausted)."""
        cost = self.publish_cu.get(stream, 0.0)
        return cost <= 0.0 or self.limiter.spend(now, cost) == LIM_OK
