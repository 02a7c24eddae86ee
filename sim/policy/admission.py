"""The service's admission order, written once, and its decisions over the policy objects.

:class:`AdmissionOrder` (one instance, :data:`ORDER`) is the order of the service's checks
and the outcome of each (spec 8): a pure function of what each check found. The SimPy
model (:mod:`sim.model.engine`, which tabulates it per method and client at start-up, and
:mod:`sim.model.websockets.sessions`) and :class:`Admission` all take it from here.

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

Order of the checks (:class:`AdmissionOrder`; docs/explanation/spec-rules.md): an HTTP
request is refused with 430 when its connection was refused, then 421 (RPC or ``POST
/v1/size`` without HTTP/2 and SNI), 401 (unknown key), 402 (API outside the tier), then
the limiter (oversized, 402 for the daily allowance, 434 / -32005 for the window). A
connection is the account's from its first request that passes 421 and 401: the emulator
(:mod:`sim.live.app`) and the trace comparison (:mod:`sim.calibration.agreement`) decide
those from the headers before calling :meth:`Admission.connection_opened`, so a connection
that never presents a valid key counts against no limit. The SimPy model opens a
connection before its first request, against the account of the source's key -- the same
outcomes, since a source holds one key -- and a source whose key is no account's opens
its connections against none (:meth:`AccountConnections.unlimited`). A handshake
checks 401, 402, the slot cap (435), then spends the connect cost (``ws_cu_rejected`` with
the window's Retry-After, or 402).
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
LIMITER_STATUSES = (LIM_OK, THROTTLED, NO_ALLOWANCE, OVERSIZED)
"""The limiter's answers, in code order (``LIMITER_STATUSES[s] == s``)."""


class AdmissionOrder:
    """The service's order of checks and the outcome of each, written once (spec 8).

    An HTTP attempt::

        1. its connection          refused by the account's connection limits -> 430
        2. HTTP/2 and SNI          RPC or POST /v1/size without both           -> 421
        3. the key                 no account's key                             -> 401
        4. the API in the tier     the account's tier lacks the method's API   -> 402
        5. the CU limiter          oversized -> oversized, daily allowance -> 402,
                                   the 12-second window -> -32005 (RPC) or 434
                                   (with the window's Retry-After)

    A websocket handshake: the key (401), the stream's API in the tier (402), a slot
    (435, with the slot pool's Retry-After), then the connect cost from the limiter
    (daily allowance -> 402; the window or a cost above it -> ``ws_cu_rejected`` with the
    window's Retry-After; the slot goes back). Steps 1 and the slot are the transport's
    and the slot pool's (:class:`~sim.policy.connections.AccountConnections`,
    :class:`~sim.policy.slots.SlotPool`); the rest are these methods, pure functions of
    what each check found. Outcomes are codes of :data:`~sim.core.vocabulary.OUTCOMES`.
    """

    #: Outcomes answered with the CU window's ``Retry-After`` (the limiter's).
    WINDOW_RETRY_AFTER = frozenset({HTTP_434, WS_CU})

    @staticmethod
    def needs_h2(method: str, api: str) -> bool:
        """Whether ``method`` (of ``api``) requires HTTP/2 with SNI (spec 8.4.1)."""
        return method == SIZE_METHOD or api == RPC

    @staticmethod
    def http_before_limiter(*, needs_h2: bool, h2_sni: bool, key_ok: bool,
                            api_in_tier: bool) -> int | None:
        """Steps 2-4 of an HTTP attempt on an admitted connection: the refusal, or None
        (ask the limiter)."""
        if needs_h2 and not h2_sni:
            return PROTO_421
        if not key_ok:
            return AUTH_401
        if not api_in_tier:
            return PAY_402
        return None

    @staticmethod
    def http_limiter(status: int, *, rpc: bool) -> int:
        """Step 5: the outcome of the limiter's answer ``status`` to an HTTP attempt
        (``rpc``: a JSON-RPC method, refused by the window with -32005 and no header)."""
        if status == LIM_OK:
            return OK
        if status == THROTTLED:
            return RPC_32005 if rpc else HTTP_434
        if status == NO_ALLOWANCE:
            return PAY_402
        assert status == OVERSIZED
        return OUT_OVERSIZED

    @staticmethod
    def handshake_before_slots(*, key_ok: bool, api_in_tier: bool) -> int | None:
        """A handshake's key and API checks: the refusal, or None (ask for a slot)."""
        if not key_ok:
            return AUTH_401
        if not api_in_tier:
            return PAY_402
        return None

    @staticmethod
    def handshake_connect(status: int) -> int:
        """The outcome of the limiter's answer ``status`` to a handshake's connect cost."""
        if status == LIM_OK:
            return OK
        if status == NO_ALLOWANCE:
            return PAY_402
        return WS_CU  # the window, or a connect cost above it (OVERSIZED)

    def http_limiter_table(self, *, rpc: bool) -> tuple[int, ...]:
        """:meth:`http_limiter` for each limiter status, indexed by the status."""
        return tuple(self.http_limiter(s, rpc=rpc) for s in LIMITER_STATUSES)


ORDER = AdmissionOrder()
"""The service's admission order (the one instance)."""


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
        return ORDER.needs_h2(method, self.method_api.get(method))

    def request(self, now: float, method: str, *, key_ok: bool, h2_sni: bool,
                reserve_cu: float, actual_cu: float, api: str | None = None) -> Decision:
        """Decide an HTTP attempt reaching the service at ``now``.

        ``api`` defaults to the method's API in the scenario; ``reserve_cu`` and
        ``actual_cu`` are what it reserves and will settle to (0 for unbilled methods).
        """
        api = api or self.method_api.get(method, RPC)
        refused = ORDER.http_before_limiter(needs_h2=self.needs_h2(method), h2_sni=h2_sni,
                                            key_ok=key_ok, api_in_tier=self.tier.includes(api))
        if refused is not None:
            return Decision(refused)
        lim = self.limiter
        status = lim.reserve(now, reserve_cu, actual_cu)
        outcome = ORDER.http_limiter(status, rpc=api == RPC)
        if outcome == OK:
            return Decision(OK, ticket=(status, reserve_cu, actual_cu))
        if outcome in ORDER.WINDOW_RETRY_AFTER:
            return Decision(outcome, float(lim.retry_after(now)))
        return Decision(outcome)

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
        refused = ORDER.handshake_before_slots(
            key_ok=key_ok, api_in_tier=self.tier.includes(STREAM_API[stream]))
        if refused is not None:
            return Decision(refused)
        ok, wait = self.slots.acquire(now)
        if not ok:
            return Decision(WS_435, float(wait))
        outcome = ORDER.handshake_connect(self.limiter.spend(now, self.connect_cu))
        if outcome == OK:
            return Decision(OK)
        self.slots.release_clean(now)
        if outcome in ORDER.WINDOW_RETRY_AFTER:
            return Decision(outcome, float(self.limiter.retry_after(now)))
        return Decision(outcome)

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
