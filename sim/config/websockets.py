"""Websocket configuration: stream clients (``[[streams]]``) and service settings (``[ws]``).

Frozen pydantic models; unknown keys are errors. Times in seconds, rates per second.
The behaviour they configure is described in :mod:`sim.model.websockets`.

A closed-loop client holds ``connections`` connections (for the whole run, or for
sessions of length ``session`` separated by ``gap``) and reconnects per ``reconnect``
after a disconnect or a refused handshake. An open-loop client (``arrival``) gets
sessions from an arrival process; each needs one connection for ``session`` seconds,
is lost if its handshake is refused, and never reconnects (the Erlang-B set-up).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, model_validator

from ..core.vocabulary import STREAM_API, STREAM_NAMES
from .arrivals import ArrivalProcess
from .distributions import Constant, Distribution
from .strict_types import STRICT_CONFIG, FiniteFloat, StrictBool, StrictInt

StreamName = Literal[STREAM_NAMES]  # type: ignore[valid-type]
"""The three Streams API paths and the Search API's monitoring websocket."""

_NonNegative = Annotated[FiniteFloat, Field(ge=0)]


class _Strict(BaseModel):
    model_config = STRICT_CONFIG


class ReconnectPolicy(_Strict):
    """How long a client waits before reconnect attempt ``n`` (1 = first after a drop).

    ``immediate``: 0. ``fixed``: ``delay_s``. ``exponential``: full jitter,
    U[0, min(cap_s, base_s * 2**(n-1))]. ``retry-after``: the refusal's Retry-After plus
    U[0, jitter_s); without a header (after a disconnect, a 401 or a 402) it falls back
    to ``exponential``. After a *refused* handshake the wait is at least
    ``WebsocketSettings.min_retry_s``. ``max_attempts``: give up after that many
    consecutive refused handshakes (``None``: never give up).
    """

    policy: Literal["immediate", "fixed", "exponential", "retry-after"] = "retry-after"
    delay_s: FiniteFloat = Field(default=1.0, ge=0)
    base_s: FiniteFloat = Field(default=1.0, ge=0)
    cap_s: FiniteFloat = Field(default=60.0, ge=0)
    jitter_s: FiniteFloat = Field(default=1.0, ge=0)
    max_attempts: StrictInt | None = Field(default=None, ge=1)


class Faults(_Strict):
    """Disconnects of live connections.

    Each live connection drops after an exponential time with mean
    ``mean_time_between_drops_s`` (``None``: never). ``drop_all_at_s`` lists times at
    which every live connection of the client drops at once (a network blip, a deploy).
    A drop is a clean close with probability ``clean_close_fraction`` (slot freed at
    once), else unclean (slot stale for ``[ws] stale_expiry_s``).
    """

    mean_time_between_drops_s: FiniteFloat | None = Field(default=None, gt=0)
    clean_close_fraction: FiniteFloat = Field(default=0.0, ge=0, le=1)
    drop_all_at_s: tuple[_NonNegative, ...] = ()


class StreamClient(_Strict):
    """One ``[[streams]]`` entry: a client subscribing to one stream with one key.

    ``key`` is a key label (not one of the account's keys: every handshake gets 401).
    ``region`` is for attribution only: the cap and the budget are global (spec 8.3).
    Closed loop (no ``arrival``): ``connections`` connections, each held for the whole
    run (``session`` absent) or for sessions drawn from ``session`` with ``gap`` between
    them; a session's clock starts at its first successful handshake and keeps running
    through drops and reconnects. Open loop (``arrival``): each arrival is a session of
    one connection lasting ``session`` seconds from its arrival; ``connections`` must be
    1 and ``gap`` / ``reconnect`` do not apply.
    """

    name: str = Field(min_length=1)
    key: str = Field(min_length=1)
    region: str | None = None
    stream: StreamName
    connections: StrictInt = Field(default=1, ge=1, le=100_000)
    session: Distribution | None = None
    gap: Distribution = Field(default_factory=lambda: Constant(value=0.0))
    arrival: ArrivalProcess | None = None
    reconnect: ReconnectPolicy = Field(default_factory=ReconnectPolicy)
    faults: Faults = Field(default_factory=Faults)

    @model_validator(mode="after")
    def _open_or_closed(self) -> StreamClient:
        if self.arrival is None:
            if self.session is not None and self.session.mean == 0 and self.gap.mean == 0:
                raise ValueError("'session' and 'gap' are both always 0: a client would "
                                 "reconnect forever at one instant")
            return self
        if self.session is None:
            raise ValueError("with 'arrival' (open-loop sessions), 'session' (a session "
                             "length distribution) is required")
        if self.connections != 1:
            raise ValueError("with 'arrival', each arrival is one connection: expected "
                             "connections = 1")
        given = {"gap", "reconnect"} & self.model_fields_set
        if given:
            raise ValueError(f"{sorted(given)} do not apply to open-loop sessions "
                             "('arrival'): they are lost when refused and never reconnect")
        return self

    @property
    def api(self) -> str:
        """The API the client's stream belongs to (``streams`` or ``search``)."""
        return STREAM_API[self.stream]


class ExpiryRange(_Strict):
    """A stale-slot lifetime drawn uniformly from ``[low, high]`` per unclean disconnect."""

    low: FiniteFloat = Field(ge=0)
    high: FiniteFloat = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> ExpiryRange:
        if self.high < self.low:
            raise ValueError("expected high >= low")
        return self


class StreamSource(_Strict):
    """How the service publishes one stream, once per account.

    Built by :meth:`WebsocketSettings.source` from the ``[ws]`` table.

    ``block``: one event at ``slot_s``, ``2 * slot_s``, ... each missed with
    ``miss_probability``. ``poisson``: Poisson events at ``rate`` per second, modulated
    by ``hourly_weights`` (24, rescaled to mean 1, by UTC hour) when given. ``billed``:
    whether each delivery spends ``publish_cu`` from the pricing assumptions.
    """

    stream: StreamName
    kind: Literal["block", "poisson"]
    rate: FiniteFloat = Field(default=0.0, ge=0)
    slot_s: FiniteFloat = Field(default=12.0, gt=0)
    miss_probability: FiniteFloat = Field(default=0.0, ge=0, le=1)
    hourly_weights: tuple[_NonNegative, ...] | None = None
    billed: StrictBool = True

    @property
    def mean_rate(self) -> float:
        """Long-run events per second."""
        if self.kind == "block":
            return (1.0 - self.miss_probability) / self.slot_s
        return self.rate


class WebsocketSettings(_Strict):
    """The ``[ws]`` table: slot expiry, refusals, exhaustion policy and publishing rates.

    ``stale_expiry_s``: how long an unclean disconnect keeps its slot (a number, or
    ``{low, high}`` drawn per disconnect; spec 8.3 says "about 30 s").
    ``retry_after_live_s``: Retry-After of a 435 when every slot is live (not shown by
    the spec). ``on_exhausted``: what a billed stream does when a delivery cannot reserve
    its CU (spec 6.2): ``close`` (error, clean close, the client's reconnect policy
    applies) or ``drop`` (the event is lost, the stream stays open). ``min_retry_s``: the
    least wait after a refused handshake (its round trip), so ``immediate`` cannot loop at
    one instant. ``daily_profile``: 24 hourly weights modulating pending-txs and
    pending-logs. ``monitoring_billed``: whether monitoring deliveries spend
    ``publish_cu.monitoring``.
    """

    stale_expiry_s: _NonNegative | ExpiryRange = 30.0
    retry_after_live_s: FiniteFloat = Field(default=30.0, gt=0)
    on_exhausted: Literal["close", "drop"] = "close"
    min_retry_s: FiniteFloat = Field(default=0.1, gt=0)
    new_blocks_slot_s: FiniteFloat = Field(default=12.0, gt=0)
    new_blocks_miss_probability: FiniteFloat = Field(default=0.0, ge=0, le=1)
    pending_txs_rate: FiniteFloat = Field(default=20.0, ge=0)
    pending_logs_rate: FiniteFloat = Field(default=5.0, ge=0)
    monitoring_rate: FiniteFloat = Field(default=0.2, ge=0)
    daily_profile: tuple[_NonNegative, ...] | None = Field(default=None, min_length=24,
                                                           max_length=24)
    monitoring_billed: StrictBool = False

    @model_validator(mode="after")
    def _profile(self) -> WebsocketSettings:
        if self.daily_profile is not None and sum(self.daily_profile) <= 0:
            raise ValueError("daily_profile: expected at least one positive weight")
        return self

    def source(self, stream: str) -> StreamSource:
        """The publishing process of ``stream`` under these settings."""
        if stream == "new-blocks":
            return StreamSource(stream=stream, kind="block", slot_s=self.new_blocks_slot_s,
                                miss_probability=self.new_blocks_miss_probability)
        if stream == "monitoring":
            return StreamSource(stream=stream, kind="poisson", rate=self.monitoring_rate,
                                billed=self.monitoring_billed)
        rate = self.pending_txs_rate if stream == "pending-txs" else self.pending_logs_rate
        return StreamSource(stream=stream, kind="poisson", rate=rate,
                            hourly_weights=self.daily_profile)
