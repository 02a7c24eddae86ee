"""The service's admission order, written once, and its decisions over the policy objects.

:class:`AdmissionOrder` (one instance, :data:`ORDER`) is the order of the service's checks
and the outcome of each (spec 8): a pure function of what each check found. The SimPy
model (:mod:`sim.model.engine`, which tabulates it per method and client at start-up, and
:mod:`sim.model.websockets.sessions`) and :class:`Admission` all take it from here.

:class:`Admission` holds one account's limiter (:func:`sim.policy.limiters.make_limiter`
for the scenario's ``[limiter]``, or calibration's trial settings), websocket
:class:`~sim.policy.slots.SlotPool` and :class:`~sim.policy.connections.AccountConnections`
-- the very objects the SimPy model builds -- and asks them in the model's order. Time is
passed in as service seconds (``now``); nothing here sleeps or does I/O, so the emulator
and the replay of recorded traces (:mod:`sim.calibration.replay_core`: calibration and
the agreement check) share it.

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
(:mod:`sim.live.app`) and the trace replay (:mod:`sim.calibration.replay_core`) decide
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
from collections.abc import Mapping
from typing import NamedTuple

from ..config.pricing import Pricing
from ..config.resolved import LoadedScenario
from ..config.scenario import LimiterSettings
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
from .limiters import Limiter, make_limiter
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


class Decision(NamedTuple):
    """An attempt's outcome (an index into :data:`~sim.core.vocabulary.OUTCOMES`).

    ``retry_after_s`` is the whole seconds of a ``Retry-After`` header (NaN for none);
    ``ticket`` identifies an admitted reservation for :meth:`Admission.settle`. (A named
    tuple: the replay of a recorded trace makes one per attempt, and it is cheap.)
    """

    outcome: int
    retry_after_s: float = _NAN
    ticket: tuple[Reservation, float, float] | None = None

    @property
    def name(self) -> str:
        """The outcome's name: ``ok``, ``434``, ``-32005``, ..."""
        return OUTCOMES[self.outcome]


_PLAIN = tuple(Decision(o) for o in range(len(OUTCOMES)))
"""Each outcome with no header and no ticket (immutable: shared)."""


class Admission:
    """One account's admission on tier ``tier``: its limiter, websocket slot pool and
    connection limits, asked in the service's order (:data:`ORDER`).

    Built from its parts, so that a caller with no scenario can build one (calibration's
    replay, per fit, at trial prices): ``connect_cu`` is a handshake's cost (default: the
    pricing's), ``publish_cu`` maps each stream to the CU a delivery spends (default: the
    pricing's; 0: unbilled), ``method_api`` each method to its API (default: none known,
    so only ``POST /v1/size`` needs HTTP/2 unless ``api`` is passed), ``connections`` the
    account's connection limits (default: the spec's). :meth:`for_tier` builds the
    limiter and slot pool a tier's account has; :meth:`for_scenario` everything from a
    loaded scenario, as the emulator and the agreement check do.
    """

    def __init__(self, tier: Tier, pricing: Pricing, limiter: Limiter, slots: SlotPool,
                 connections: AccountConnections | None = None, *,
                 method_api: Mapping[str, str] | None = None,
                 connect_cu: float | None = None,
                 publish_cu: Mapping[str, float] | None = None) -> None:
        self.tier = tier
        self.pricing = pricing
        self.limiter = limiter
        self.slots = slots
        self.connections = connections if connections is not None else AccountConnections()
        self.method_api = dict(method_api or {})
        self.connect_cu = float(pricing.websocket.connect_cu if connect_cu is None
                                else connect_cu)
        self.publish_cu = ({s: float(pricing.websocket.publish_cu.get(s, 0.0))
                            for s in STREAM_API} if publish_cu is None else dict(publish_cu))
        # (method, api, key_ok, h2_sni) -> (refusal before the limiter, limiter status ->
        # outcome): ORDER's answers for this tier, tabulated as each kind of attempt comes
        self._http_rules: dict[tuple, tuple[int | None, tuple[int, ...]]] = {}

    @classmethod
    def for_tier(cls, tier: Tier, pricing: Pricing, settings: LimiterSettings, *,
                 day_offset_s: float = 0.0, slots: SlotPool | None = None,
                 **parts) -> Admission:
        """The account of ``tier`` under ``pricing``: a fresh limiter of ``settings``
        (windows of the tier's budget, the pricing's daily allowance on a UTC day that
        starts ``day_offset_s`` before time 0), ``slots`` (default: a pool of the tier's
        cap); ``parts`` as the constructor's."""
        limiter = make_limiter(tier.cu_per_window, settings,
                               daily_allowance_cu=pricing.for_tier(tier).daily_allowance_cu,
                               day_offset_s=day_offset_s)
        return cls(tier, pricing, limiter, SlotPool(tier.ws_cap) if slots is None else slots,
                   **parts)

    @classmethod
    def for_scenario(cls, loaded: LoadedScenario, tier: Tier) -> Admission:
        """The one account of ``loaded`` on ``tier`` (:meth:`for_account`), for the live
        emulator and the agreement check, which serve one account."""
        if len(loaded.scenario.account_list) > 1:
            raise CapsimError("the live emulator serves one account; expected [account] or "
                              "a single [[accounts]] entry", file=loaded.path, field="accounts")
        return cls.for_account(loaded, tier)

    @classmethod
    def for_account(cls, loaded: LoadedScenario, tier: Tier) -> Admission:
        """An account of ``loaded`` on ``tier``, configured from the scenario (``[limiter]``,
        ``[ws]``, ``[http_limits]``, its methods and billed streams): the one place an
        account's policy objects and prices are assembled, for the SimPy model (one per
        account, :func:`sim.model.accounts.build_accounts`) and the emulator alike."""
        sc, pricing = loaded.scenario, loaded.pricing
        return cls.for_tier(
            tier, pricing, sc.limiter, day_offset_s=sc.day_offset_s,
            slots=SlotPool(tier.ws_cap, sc.ws.retry_after_live_s),
            connections=AccountConnections(sc.http_limits.max_active_connections,
                                           sc.http_limits.max_new_connections_per_s),
            method_api={m: spec.api for m, spec in sc.methods.items()},
            publish_cu={s: (float(pricing.websocket.publish_cu.get(s, 0.0))
                            if sc.ws.source(s).billed else 0.0) for s in STREAM_API})

    # -- HTTP ------------------------------------------------------------------------

    def needs_h2(self, method: str) -> bool:
        """Whether ``method`` requires HTTP/2 with SNI (spec 8.4.1: RPC and sizing)."""
        return ORDER.needs_h2(method, self.method_api.get(method))

    def http_rule(self, method: str, api: str, key_ok: bool,
                  h2_sni: bool) -> tuple[int | None, tuple[int, ...]]:
        """:data:`ORDER`'s answers, on this tier, for an HTTP attempt of ``method`` on
        ``api`` (key valid or not, HTTP/2 with SNI or not): the refusal before the
        limiter (None: ask it) and the outcome of each limiter status. Tabulated once
        per kind of attempt, as the engine tabulates ORDER at start-up."""
        key = (method, api, key_ok, h2_sni)
        rule = self._http_rules.get(key)
        if rule is None:
            rule = self._http_rules[key] = (
                ORDER.http_before_limiter(needs_h2=self.needs_h2(method), h2_sni=h2_sni,
                                          key_ok=key_ok, api_in_tier=self.tier.includes(api)),
                ORDER.http_limiter_table(rpc=api == RPC))
        return rule

    def admit(self, now: float, rule: tuple[int | None, tuple[int, ...]], reserve_cu: float,
              actual_cu: float) -> tuple[int, Reservation | None]:
        """Decide an HTTP attempt of kind ``rule`` (:meth:`http_rule`) reaching the
        service at ``now``: its outcome, and the limiter's reservation (None when the
        limiter was not asked), which an admitted attempt settles. :meth:`request` and
        the replay of recorded traces (:func:`sim.calibration.replay_core.decide`) both
        decide here."""
        refused, outcomes = rule
        if refused is not None:
            return refused, None
        status = self.limiter.reserve(now, reserve_cu, actual_cu)
        return outcomes[status], status

    def request(self, now: float, method: str, *, key_ok: bool, h2_sni: bool,
                reserve_cu: float, actual_cu: float, api: str | None = None) -> Decision:
        """Decide an HTTP attempt reaching the service at ``now`` (:meth:`admit`), with
        its ``Retry-After`` and, when admitted, the ticket :meth:`settle` takes.

        ``api`` defaults to the method's API in the scenario; ``reserve_cu`` and
        ``actual_cu`` are what it reserves and will settle to (0 for unbilled methods).
        """
        api = api or self.method_api.get(method, RPC)
        outcome, status = self.admit(now, self.http_rule(method, api, key_ok, h2_sni),
                                     reserve_cu, actual_cu)
        if outcome == OK:
            return Decision(OK, _NAN, (status, reserve_cu, actual_cu))
        if outcome in ORDER.WINDOW_RETRY_AFTER:
            return Decision(outcome, float(self.limiter.retry_after(now)))
        return _PLAIN[outcome]

    def settle(self, now: float, decision: Decision) -> None:
        """Settle an admitted attempt to its actual CU (after its service time)."""
        if decision.ticket is not None:
            booked, reserve, actual = decision.ticket
            self.limiter.settle(now, booked, reserve, actual)

    @staticmethod
    def refused_connection() -> Decision:
        """The outcome of any request on a connection the account refused."""
        return _PLAIN[CONN_430]

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
            return _PLAIN[refused]
        ok, wait = self.slots.acquire(now)
        if not ok:
            return Decision(WS_435, float(wait))
        outcome = ORDER.handshake_connect(self.limiter.spend(now, self.connect_cu))
        if outcome == OK:
            return _PLAIN[OK]
        self.slots.release_clean(now)
        if outcome in ORDER.WINDOW_RETRY_AFTER:
            return Decision(outcome, float(self.limiter.retry_after(now)))
        return _PLAIN[outcome]

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
