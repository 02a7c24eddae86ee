"""The scenario format: frozen, validated configuration objects.

A scenario file (TOML) is parsed into :class:`Scenario`. Every model forbids unknown
keys; :mod:`sim.config.loader` turns validation errors into one clear message with the
file, line, key path and expectation. Units: times in seconds unless a field says
``_ms``; rates per second; CU in compute units.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..core.vocabulary import (
    APIS,
    LIMIT_REFUSALS,
    OUTCOMES,
    SIZE_METHOD,
    WINDOW_S,
)
from .arrivals import ArrivalProcess, HourlyWeights
from .check import CheckSettings
from .distributions import Beta, Distribution, IntUniform, LogNormal
from .strict_types import STRICT_CONFIG, FiniteFloat, StrictBool, StrictInt
from .websockets import StreamClient, WebsocketSettings

METHOD_ALIASES = {"size": SIZE_METHOD, "/v1/size": SIZE_METHOD}
_NAME_RE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*")
RETRYABLE_DEFAULT = tuple(OUTCOMES[o] for o in LIMIT_REFUSALS)


class Strict(BaseModel):
    """Base: frozen, unknown keys are errors, numbers are finite numbers (never booleans)."""

    model_config = STRICT_CONFIG


def parse_duration(value: float | int | str) -> float:
    """Seconds from a number or a string such as ``"90s"``, ``"15m"``, ``"1h"``, ``"2d"``."""
    if isinstance(value, bool):
        raise ValueError("expected seconds or a duration such as '90s', '15m', '1h', '2d', "
                         "not a boolean")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise ValueError("expected a finite number of seconds")
        return float(value)
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ms|s|m|h|d)?\s*", str(value))
    if not match:
        raise ValueError("expected seconds or a duration such as '90s', '15m', '1h', '2d'")
    unit = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2) or "s"]
    return float(match.group(1)) * unit


class Region(Strict):
    """A regional hostname with its own round-trip time."""

    name: str = Field(min_length=1)
    rtt_ms: FiniteFloat = Field(default=20.0, ge=0)


class CustomTier(Strict):
    """A tier a user adds to the catalog (for a negotiated contract, say)."""

    name: str = Field(min_length=1)
    apis: list[Literal["rpc", "search", "streams"]] = Field(default_factory=lambda: list(APIS))
    cu_per_window: FiniteFloat = Field(gt=0)
    ws_cap: StrictInt = Field(default=0, ge=0)
    daily_allowance_cu: FiniteFloat | None = Field(default=None, ge=0)
    monthly_usd: FiniteFloat | None = Field(default=None, ge=0)


class Account(Strict):
    """The account: its API keys (which share every limit)."""

    keys: list[str] = Field(min_length=1)


class NamedAccount(Account):
    """One of several accounts (``[[accounts]]``): its own limiter, daily allowance,
    websocket slots and connection limits; ``tier`` fixes its tier across the tier
    study (None: the tier under study)."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    tier: str | None = Field(default=None, min_length=1)


DEFAULT_ACCOUNT_NAME = "account"
"""The name the single ``[account]`` goes by inside the model (it never reaches the
summary: a one-``[account]`` scenario reports no per-account part)."""


class RetryPolicy(Strict):
    """How a client retries a refused attempt.

    ``exponential`` waits uniformly in [0, min(cap_s, base_s * 2**(n-1))] before retry n
    (full jitter); ``retry-after`` waits the header's seconds plus up to ``jitter_s``,
    and falls back to ``exponential`` when there is no header (JSON-RPC ``-32005``).
    ``budget_ratio`` caps retries at that fraction of the client's logical requests so far
    (plus ``budget_min_retries``), as retry budgets in service meshes do.
    """

    policy: Literal["none", "fixed", "exponential", "retry-after"] = "retry-after"
    max_attempts: StrictInt = Field(default=4, ge=1, le=100)
    delay_s: FiniteFloat = Field(default=1.0, ge=0)
    base_s: FiniteFloat = Field(default=0.5, ge=0)
    cap_s: FiniteFloat = Field(default=30.0, ge=0)
    jitter_s: FiniteFloat = Field(default=0.5, ge=0)
    budget_ratio: FiniteFloat | None = Field(default=None, ge=0)
    budget_min_retries: StrictInt = Field(default=10, ge=0)
    retry_on: list[str] = Field(default_factory=lambda: list(RETRYABLE_DEFAULT))


class HttpSettings(Strict):
    """A client's HTTP/2 connection pool, one per regional hostname (spec 8.4).

    ``connect_rtts`` is what opening a connection costs in round trips (TCP, TLS and the
    HTTP/2 settings exchange); ``reuse = false`` opens a connection per request.
    """

    max_streams_per_conn: StrictInt = Field(default=32, ge=1)
    max_connections: StrictInt = Field(default=16, ge=1)
    connect_rtts: FiniteFloat = Field(default=2.0, ge=0)
    idle_timeout_s: FiniteFloat = Field(default=60.0, ge=0)
    reuse: StrictBool = True


class Pacing(Strict):
    """Optional client-side pacing: a token bucket in CU per second (per source)."""

    rate_cu_per_s: FiniteFloat = Field(gt=0)
    burst_cu: FiniteFloat = Field(default=0.0, ge=0)


class Client(Strict):
    """Client behaviour shared by the sources that name it."""

    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    http_version: Literal["2", "1.1"] = "2"
    sni: StrictBool = True
    http: HttpSettings = Field(default_factory=HttpSettings)
    pacing: Pacing | None = None


class AccountHttpLimits(Strict):
    """The service's per-account connection limits (spec 8.4.3, 8.4.4)."""

    max_active_connections: StrictInt = Field(default=128, ge=1)
    max_new_connections_per_s: StrictInt = Field(default=32, ge=1)


class Workers(Strict):
    """A closed loop: ``count`` workers, each sending one request, waiting, thinking."""

    count: StrictInt = Field(ge=1, le=100_000)
    think: Distribution = Field(default_factory=lambda: LogNormal(median=1.0, sigma=0.5))


class Sizing(Strict):
    """What a ``POST /v1/size`` request of a source carries."""

    items: Distribution = Field(default_factory=lambda: IntUniform(low=1, high=5))
    profiles: dict[str, FiniteFloat] = Field(default_factory=lambda: {"standard": 1.0})
    gas_used: Distribution = Field(default_factory=lambda: Beta(a=2.0, b=3.0))

    @field_validator("profiles")
    @classmethod
    def _weights(cls, value: dict[str, float]) -> dict[str, float]:
        return _check_weights(value)


class Replay(Strict):
    """How a recorded trace is replayed (docs/reference/scenario.md, replay options)."""

    speed: FiniteFloat = Field(default=1.0, gt=0)
    load_multiplier: FiniteFloat = Field(default=1.0, gt=0)
    phase_shift_s: FiniteFloat = 0.0
    time_range_s: tuple[FiniteFloat, FiniteFloat] | None = None
    drop_recorded_retries: StrictBool = True
    # recorded JSON-RPC method -> scenario method; "*" maps every other recorded method
    method_map: dict[str, str] = Field(default_factory=dict)
    # scaling a short recording (sim/traces/tiling.py): loop it over the run, spread the
    # load multiplier's copies over its period, thin the loops by the UTC hour
    repeat: Literal["none", "tile"] = "none"
    period_s: FiniteFloat | None = Field(default=None, gt=0)
    copies_spread: Literal["window", "period"] = "window"
    hourly_weights: HourlyWeights | None = None

    @field_validator("method_map")
    @classmethod
    def _method_map(cls, value: dict[str, str]) -> dict[str, str]:
        for recorded, target in value.items():
            if not recorded.strip() or not target.strip():
                raise ValueError("expected non-empty method names")
        return value

    @model_validator(mode="after")
    def _scaling(self):
        if self.hourly_weights is not None:
            if self.repeat != "tile":
                raise ValueError('hourly_weights thin the loops of repeat = "tile": expected '
                                 'repeat = "tile" with hourly_weights')
            if max(self.hourly_weights) <= 0:
                raise ValueError("expected hourly_weights with at least one positive weight")
        if self.period_s is not None and self.repeat != "tile" and (
                self.copies_spread != "period"):
            raise ValueError('period_s is the loop length of repeat = "tile" and the span of '
                             'copies_spread = "period": expected one of them with period_s')
        return self


class Source(Strict):
    """One stream of demand: an open-loop arrival process, closed-loop workers or a trace."""

    name: str = Field(min_length=1)
    key: str = Field(min_length=1)
    region: str | None = None
    client: str = "default"
    arrival: ArrivalProcess | None = None
    workers: Workers | None = None
    trace: str | None = None
    replay: Replay = Field(default_factory=Replay)
    mix: dict[str, FiniteFloat] = Field(default_factory=lambda: {"svc_call": 1.0})
    sizing: Sizing = Field(default_factory=Sizing)
    cache: dict[str, FiniteFloat] = Field(default_factory=dict)
    """Method -> the share (0 to 1) of this source's calls of it that its client answers
    itself (a cache) or drops: never sent, not counted as requests. Open-loop and
    replayed sources only (stream ``source/NAME/cache``, one draw per request)."""

    @field_validator("cache")
    @classmethod
    def _cache(cls, value: dict[str, float]) -> dict[str, float]:
        for method, share in value.items():
            if not 0 <= share <= 1:
                raise ValueError(f"cache.{method}: expected a share from 0 to 1")
        return {METHOD_ALIASES.get(k, k): w for k, w in value.items()}

    @field_validator("mix")
    @classmethod
    def _mix(cls, value: dict[str, float]) -> dict[str, float]:
        return _check_weights({METHOD_ALIASES.get(k, k): w for k, w in value.items()})

    @model_validator(mode="after")
    def _one_driver(self):
        given = [n for n in ("arrival", "workers", "trace") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError("expected exactly one of 'arrival' (open loop), 'workers' "
                             f"(closed loop) or 'trace' (replay); got {given or 'none'}")
        if self.cache and self.workers is not None:
            raise ValueError("cache: expected an open-loop (arrival) or replayed (trace) "
                             "source; a closed-loop worker's calls are not thinned")
        if self.cache and self.trace is None:
            unknown = sorted(set(self.cache) - set(self.mix))
            if unknown:
                raise ValueError(f"cache: {unknown[0]!r} is not in this source's mix; "
                                 f"expected one of {sorted(self.mix)}")
        return self


class Method(Strict):
    """A method's API and service time (seconds, excluding the network round trip)."""

    api: Literal["rpc", "search"] = "rpc"
    service_time: Distribution = Field(default_factory=lambda: LogNormal(median=0.03, sigma=0.5))


def _default_methods() -> dict[str, Method]:
    return {
        "svc_call": Method(api="rpc", service_time=LogNormal(median=0.04, sigma=0.6)),
        "svc_pendingBlock": Method(api="rpc", service_time=LogNormal(median=0.01, sigma=0.4)),
        SIZE_METHOD: Method(api="search", service_time=LogNormal(median=0.15, sigma=0.7)),
    }


class LimiterSettings(Strict):
    """Which limiter policy (``kind``; :data:`sim.policy.limiters.LIMITERS`), its window
    alignment and refund policy.

    ``alignment = "utc"`` puts windows on the service's own clock: they start where the
    UTC clock reads ``phase_s`` plus a multiple of 12 s (``capsim calibrate`` estimates
    ``phase_s`` from a recorded trace); ``phase_s`` is only read with that alignment.
    """

    kind: Literal["fixed-window"] = "fixed-window"
    alignment: Literal["epoch", "first-hit", "utc"] = "epoch"
    refund_to: Literal["origin-window", "current-window"] = "origin-window"
    phase_s: FiniteFloat = Field(default=0.0, ge=0, lt=WINDOW_S)

    @model_validator(mode="after")
    def _phase_needs_utc(self) -> LimiterSettings:
        if self.phase_s and self.alignment != "utc":
            raise ValueError('phase_s needs alignment = "utc"')
        return self


class Slo(Strict):
    """The service-level objective a tier must meet to be recommended."""

    max_throttle_rate: FiniteFloat = Field(default=0.01, ge=0, le=1)
    max_failure_rate: FiniteFloat = Field(default=0.001, ge=0, le=1)
    p99_latency_ms: FiniteFloat = Field(default=2000.0, gt=0)
    allowance_must_last_day: StrictBool = True
    """A run shorter than a day fails a tier whose daily allowance, at the run's rate of
    charged CU, would run out within 24 hours (``daily_allowance.lasts_h`` < 24)."""


class Variant(Strict):
    """A named what-if (``[[variants]]``): overrides a sweep runs beside the base scenario.

    ``set`` maps key paths, as ``--set`` takes them, to values:
    ``set = { "clients.bot.retry.policy" = "retry-after", load = 1.5 }``.
    """

    name: str = Field(min_length=1, pattern=r"^[^/\\]+$")
    description: str = ""
    set: dict[str, Any] = Field(min_length=1)

    @field_validator("set")
    @classmethod
    def _no_nested_variants(cls, value: dict[str, Any]) -> dict[str, Any]:
        if any(k.split(".")[0].split("[")[0] == "variants" for k in value):
            raise ValueError("a variant cannot override 'variants'")
        return value


START_MIN = datetime(1900, 1, 1, tzinfo=UTC)
START_MAX = datetime(2200, 1, 1, tzinfo=UTC)
"""The range of ``start``: the run's times, kept as int64 nanoseconds since 1970, stay
within range (to 2262) for any duration up to 60 years."""


class Scenario(Strict):
    """A whole scenario: who calls what, how, for how long, against which tiers."""

    name: str = "scenario"
    description: str = ""
    seed: StrictInt = Field(default=1, ge=0)
    start: datetime = datetime(2026, 1, 5, 0, 0, tzinfo=UTC)  # in [START_MIN, START_MAX)
    duration_s: FiniteFloat = Field(default=3600.0, gt=0, le=366 * 86400, alias="duration")
    load: FiniteFloat = Field(default=1.0, gt=0, le=1e6)
    max_requests: StrictInt | None = Field(default=None, ge=1)
    tiers: list[str] = Field(default_factory=list)
    custom_tiers: list[CustomTier] = Field(default_factory=list)
    account: Account | None = None
    accounts: list[NamedAccount] | None = None
    regions: list[Region] = Field(default_factory=lambda: [Region(name="default")], min_length=1)
    clients: dict[str, Client] = Field(default_factory=lambda: {"default": Client()})
    sources: list[Source] = Field(default_factory=list)
    streams: list[StreamClient] = Field(default_factory=list)
    ws: WebsocketSettings = Field(default_factory=WebsocketSettings)
    methods: dict[str, Method] = Field(default_factory=dict, validate_default=True)
    limiter: LimiterSettings = Field(default_factory=LimiterSettings)
    http_limits: AccountHttpLimits = Field(default_factory=AccountHttpLimits)
    slo: Slo = Field(default_factory=Slo)
    pricing: dict = Field(default_factory=dict)
    price_ranges: dict[str, Any] = Field(default_factory=dict)
    """Dotted pricing keys to ``[low, high]`` (:mod:`sim.config.price_ranges`)."""
    check: CheckSettings = Field(default_factory=CheckSettings)
    variants: list[Variant] = Field(default_factory=list)

    model_config = ConfigDict(**STRICT_CONFIG, populate_by_name=True)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        # The name is the report folder reports/<name>/: exactly one path component.
        if not _NAME_RE.fullmatch(value):
            raise ValueError("expected a folder name: letters, digits, '_', '-' and '.', "
                             "not starting with '.' (no path separators, not '.' or '..')")
        return value

    @field_validator("duration_s", mode="before")
    @classmethod
    def _duration(cls, value):
        return parse_duration(value)

    @field_validator("start")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        if not START_MIN <= value < START_MAX:
            # Times of the run's tables are nanoseconds since 1970 (int64): far dates overflow.
            raise ValueError(f"expected a start between {START_MIN:%Y-%m-%d} and "
                             f"{START_MAX:%Y-%m-%d} (UTC)")
        return value

    @field_validator("methods")
    @classmethod
    def _methods(cls, value: dict[str, Method]) -> dict[str, Method]:
        merged = _default_methods()
        merged.update({METHOD_ALIASES.get(k, k): m for k, m in value.items()})
        return merged

    @model_validator(mode="after")
    def _accounts(self):
        if (self.account is None) == (self.accounts is None):
            raise ValueError("expected exactly one of [account] (one account) or "
                             "[[accounts]] (several, each with a name and its keys)")
        if self.accounts is None:
            return self
        if not self.accounts:
            raise ValueError("accounts: expected at least one [[accounts]] entry")
        names: dict[str, int] = {}
        owner: dict[str, int] = {}
        for i, acct in enumerate(self.accounts):
            if acct.name in names:
                raise ValueError(f"accounts[{i}].name: expected a name no other account "
                                 f"has; accounts[{names[acct.name]}] is also called that")
            names[acct.name] = i
            for k, key in enumerate(acct.keys):
                if key in owner:  # never echo the key: it may be a real API key
                    j = owner[key]
                    where = ("twice in this account" if j == i
                             else f"also a key of account {self.accounts[j].name!r}")
                    raise ValueError(f"accounts[{i}].keys[{k}]: a key belongs to exactly "
                                     f"one account; this one is {where}")
                owner[key] = i
        return self

    @model_validator(mode="after")
    def _references(self):
        regions = {r.name for r in self.regions}
        if len(regions) != len(self.regions):
            raise ValueError("regions: expected unique region names")
        if not self.sources and not self.streams:
            raise ValueError("sources: expected at least one [[sources]] or [[streams]] entry")
        variant_names = [v.name for v in self.variants]
        if len(set(variant_names)) != len(variant_names) or "base" in variant_names:
            raise ValueError("variants: expected unique names, none of them 'base'")
        names = [s.name for s in self.sources] + [c.name for c in self.streams]
        if len(set(names)) != len(names):
            raise ValueError("sources: expected unique names across [[sources]] and [[streams]]")
        for i, client in enumerate(self.streams):
            if client.region is not None and client.region not in regions:
                raise ValueError(f"streams[{i}].region: expected one of {sorted(regions)}")
        for i, src in enumerate(self.sources):
            if src.region is not None and src.region not in regions:
                raise ValueError(f"sources[{i}].region: expected one of {sorted(regions)}")
            if src.client not in self.clients:
                raise ValueError(f"sources[{i}].client: expected one of {sorted(self.clients)}")
            for method in src.mix:
                if method not in self.methods:
                    raise ValueError(
                        f"sources[{i}].mix: unknown method {method!r}; expected one of "
                        f"{sorted(self.methods)} or a [methods.NAME] table")
        return self

    @property
    def account_list(self) -> tuple[NamedAccount, ...]:
        """The accounts, in file order: ``[[accounts]]``, or the single ``[account]`` as
        one account without a fixed tier."""
        if self.accounts is not None:
            return tuple(self.accounts)
        return (NamedAccount(name=DEFAULT_ACCOUNT_NAME, keys=list(self.account.keys)),)

    @property
    def several_accounts(self) -> bool:
        """Whether the scenario uses ``[[accounts]]`` (reports then show each account)."""
        return self.accounts is not None

    def account_of_key(self, key: str) -> int | None:
        """Index in :attr:`account_list` of the account holding ``key`` (None: no account)."""
        for i, acct in enumerate(self.account_list):
            if key in acct.keys:
                return i
        return None

    @property
    def day_offset_s(self) -> float:
        """Seconds since 00:00 UTC at simulation time 0."""
        midnight = self.start.replace(hour=0, minute=0, second=0, microsecond=0)
        return (self.start - midnight).total_seconds()

    def sizing_profiles_used(self) -> list[str]:
        """Every sizing profile named by a source that sends ``POST /v1/size``."""
        names = {p for s in self.sources if SIZE_METHOD in s.mix for p in s.sizing.profiles}
        return sorted(names)

    def region_of(self, source: Source) -> str:
        """The source's region (the first region when it names none)."""
        return source.region or self.regions[0].name


def _check_weights(value: dict[str, float]) -> dict[str, float]:
    if not value:
        raise ValueError("expected at least one entry")
    if any(w < 0 for w in value.values()) or sum(value.values()) <= 0:
        raise ValueError("expected non-negative weights with a positive sum")
    return value
