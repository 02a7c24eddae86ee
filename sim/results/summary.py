"""The typed run summary: what ``summary.json`` holds, as frozen pydantic models.

Built once (:mod:`sim.metrics.figures`), read by the reports, the CLI and anything comparing
runs. The JSON keys are the field names in declaration order; :data:`SCHEMA_VERSION`
is written into every file so a reader can refuse one it does not understand.

    summary = sim.load_summary("reports/default")
    [t.tier for t in summary.tiers if t.meets_slo]

Imports only pydantic: reading a summary never pulls in SimPy, numpy or pandas.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError, model_serializer

from ..core.errors import CapsimError, read_user_text
from .replications import ReplicationsSummary

SCHEMA_VERSION = 1
"""Version of the ``summary.json`` layout; bumped when a key changes meaning or goes.

Additions do not bump it: a key added later is optional, and absent from the files of
runs that do not use it (``plan`` in a tier entry appears only with ``[[accounts]]``),
so older summaries still read and older readers ignore nothing they knew."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class LatencyMs(_Frozen):
    """End-to-end latency of successful logical requests, milliseconds (None: none)."""

    p50: float | None
    p95: float | None
    p99: float | None
    mean: float | None


class CuSummary(_Frozen):
    """CU totals and per-window peaks of one tier."""

    reserved: float
    settled: float
    peak_window_reserved: float
    peak_window_settled: float
    peak_window_used: float
    limit: float
    windows: int
    windows_with_throttles: int


class DailyAllowance(_Frozen):
    """The (assumed) daily CU allowance, the most used in a day, and when it ran out."""

    allowance_cu: float | None
    used_cu: float
    ran_out_at: str | None
    lasts_h: float | None = None
    """Runs shorter than a day: hours the allowance lasts at the run's rate of charged CU
    (allowance / charged CU per hour; with several accounts, the account whose allowance
    lasts least). None for runs of a day or more (``ran_out_at`` says), without an
    allowance, or when nothing was charged."""


class StreamWaitMs(_Frozen):
    """Time attempts waited for a free HTTP/2 stream, milliseconds."""

    mean: float | None
    p99: float | None
    max: float | None
    total_s: float


class ConnectionsSummary(_Frozen):
    """HTTP/2 connections: opened, peak active, refusals, stream waits."""

    opened: int
    peak_active: int
    refused_430: int
    refused_421: int
    attempts_waiting_for_stream: int
    stream_wait_ms: StreamWaitMs


class WebsocketsSummary(_Frozen):
    """Websocket handshakes, connected time, events and CU of one tier."""

    handshakes: dict[str, int]
    wanted_s: float
    connected_s: float
    connected_fraction: float | None  # None when no connection was wanted (0 clients)
    events_published: dict[str, int]
    events_delivered: int
    events_lost: int
    cu_connect: float
    cu_publish: float
    cu_requests: float
    sessions: int
    peak_live_slots: int


class MethodSummary(_Frozen):
    """Attempts, successes, throttles and settled CU of one method."""

    attempts: int
    ok: int
    throttled: int
    cu_settled: float


class AccountSummary(_Frozen):
    """One account's share of a tier's run (``[[accounts]]`` scenarios).

    Requests and attempts are counted by the key they carried; attempts with a key of
    no account (401) belong to no account. ``tier`` is the account's own: its fixed tier,
    or the tier under study.
    """

    account: str
    tier: str
    fixed_tier: bool
    keys: int
    monthly_usd: float | None
    cu_per_window: float
    ws_cap: int
    requests: int
    attempts: int
    throttled: int
    throttle_rate: float
    failure_rate: float
    latency_p99_ms: float | None
    cu_settled: float
    peak_window_used: float
    windows_with_throttles: int
    daily_allowance: DailyAllowance
    connections_opened: int
    refused_430: int
    ws_handshakes_ok: int
    ws_refused_435: int
    peak_live_slots: int


class PlanSummary(_Frozen):
    """The plan of several accounts under one tier study: the total monthly cost (each
    account at its own tier's price; None if one price is unknown) and each account."""

    monthly_usd: float | None
    accounts: tuple[AccountSummary, ...]


class DecidingCause(_Frozen):
    """One thing that made a tier fail its SLO (:func:`sim.metrics.decided.decide`).

    ``cause``: one of :data:`DECIDING_CAUSES`; ``assumption``: True when the cause is a
    number the spec does not show (the daily allowance); ``breaks``: the SLO criteria it
    broke (``throttle_rate``, ``failure_rate``, ``p99_latency``, ``daily_allowance``);
    ``detail``: the figures, in words."""

    cause: str
    assumption: bool
    breaks: tuple[str, ...]
    detail: str


DECIDING_CAUSES = ("api_not_in_tier", "cu_window", "connection_limits", "websocket_cap",
                   "other_failures", "latency", "daily_allowance")
"""What can decide that a tier fails, in the order outputs list them: the API not in the
tier's selection (402), the 12-second CU window (throttles), the account's connection
limits (430/421), the websocket slot cap (435), other failures (401, oversized), p99
latency, and the daily allowance (an assumed number: lasting under a day, or running out)."""


class TierSummary(_Frozen):
    """One tier's entry of ``summary.json`` (definitions in :mod:`sim.metrics.figures`)."""

    tier: str
    apis: tuple[str, ...]
    cu_per_window: float
    ws_cap: int
    monthly_usd: float | None
    requests: int
    attempts: int
    retries: int
    outcomes: dict[str, int]
    request_outcomes: dict[str, int]
    throttled: int
    throttle_rate: float
    phantom_throttles: int
    failure_rate: float
    latency_ms: LatencyMs
    cu: CuSummary
    daily_allowance: DailyAllowance
    retry_budget_refusals: int
    connections: ConnectionsSummary
    websockets: WebsocketsSummary | None
    by_method: dict[str, MethodSummary]
    meets_slo: bool
    slo_violations: tuple[str, ...]
    decided_by: tuple[DecidingCause, ...] = ()
    """What made the tier fail its SLO, one entry per cause in :data:`DECIDING_CAUSES`
    order; absent from the JSON for a tier that meets it."""
    plan: PlanSummary | None = None
    """Several accounts: the plan's cost and each account; absent from the JSON otherwise."""

    @model_serializer(mode="wrap")
    def _omit_absent_plan(self, handler):
        data = handler(self)
        if not self.decided_by:
            data.pop("decided_by", None)
        if self.plan is None:
            data.pop("plan", None)
        return data


def p99_comparable(requests: int, ok: int) -> bool:
    """Whether a tier's p99 latency (over its successful requests) stands for its requests:
    it does when at least half of them succeeded. A p99 over a few survivors of a tier
    that fails most requests is not comparable with another tier's."""
    return requests > 0 and 2 * ok >= requests


class SloSummary(_Frozen):
    """The SLO the tiers were checked against."""

    max_throttle_rate: float
    max_failure_rate: float
    p99_latency_ms: float
    allowance_must_last_day: bool = True


@dataclass(frozen=True)
class SloCriterion:
    """One criterion of the SLO: a tier's figure, at most the SLO's limit."""

    name: str
    limit_field: str  # the field of SloSummary (and of the scenario's [slo]) holding the limit
    read: Callable[[TierSummary], float | None]  # None: undefined (no successful request)

    def limit(self, slo: SloSummary) -> float:
        """This criterion's limit in ``slo`` (a summary's, or a scenario's ``[slo]``)."""
        return getattr(slo, self.limit_field)


SLO_CRITERIA: tuple[SloCriterion, ...] = (
    SloCriterion("throttle_rate", "max_throttle_rate", lambda t: t.throttle_rate),
    SloCriterion("failure_rate", "max_failure_rate", lambda t: t.failure_rate),
    SloCriterion("p99_latency", "p99_latency_ms", lambda t: t.latency_ms.p99),
)
"""What "meets the SLO" checks, in report order (the limits are :class:`SloSummary`'s)."""


class PriceSensitivity(_Frozen):
    """One price alone across its range (the others at their estimates): the tier
    recommended at each end and whether the range flips the recommendation."""

    price: str
    estimate: float
    low: float
    high: float
    source: str                      # "scenario", "calibration" or "default"
    at_low: str | None
    at_high: str | None
    flips: bool


class Recommendation(_Frozen):
    """The recommended tier (None: no tier meets the SLO) and why.

    With ``capsim run --robust`` (or ``--calibration``) also: ``robust`` (every price
    the traffic pays was varied, and the same tier is recommended at the least and the
    most costly prices of the ranges, at the estimate and at each end of each range),
    ``at_low_prices`` / ``at_high_prices`` (the tier recommended there, None when no tier
    meets the SLO), ``sensitivity`` (each price alone), ``used_not_varied``,
    ``used_unbilled`` and ``not_used``; absent from the JSON otherwise.
    """

    tier: str | None
    reason: str
    robust: bool | None = None
    at_low_prices: str | None = None
    at_high_prices: str | None = None
    sensitivity: tuple[PriceSensitivity, ...] | None = None
    used_not_varied: tuple[str, ...] | None = None
    """``--robust``: prices this traffic pays that no range varied (set by the scenario
    without a ``[price_ranges]`` entry, or a calibration could not bound them)."""
    used_unbilled: tuple[str, ...] | None = None
    """``--robust``: prices this traffic pays that are 0 (unbilled) and not ranged."""
    not_used: tuple[str, ...] | None = None
    """``--robust``: prices this traffic never pays (not simulated, never evidence)."""
    headroom: str | None = None
    """``capsim run --headroom``: how far the load may grow before the recommended tier
    stops meeting the SLO, in words; absent from the JSON otherwise."""

    @model_serializer(mode="wrap")
    def _omit_absent_robustness_and_headroom(self, handler):
        data = handler(self)
        if self.robust is None:
            for key in ("robust", "at_low_prices", "at_high_prices", "sensitivity",
                        "used_not_varied", "used_unbilled", "not_used"):
                data.pop(key, None)
        if self.headroom is None:
            data.pop("headroom", None)
        return data


class PricingAssumption(_Frozen):
    """One effective pricing value and where it came from."""

    name: str
    value: JsonValue
    source: str


class Assumptions(_Frozen):
    """The model's assumptions in words and the pricing values used."""

    model: tuple[str, ...]
    pricing: tuple[PricingAssumption, ...]


class RunSummary(_Frozen):
    """The whole ``summary.json``: provenance, settings, tiers, recommendation."""

    schema_version: int = SCHEMA_VERSION
    capsim_version: str
    scenario: str
    description: str
    scenario_file: str
    seed: int
    start: str
    duration_s: float
    pseudonym_secret: str | None = None
    """Which kind of secret keyed the key pseudonyms (never the secret); None: unknown."""
    limiter: dict[str, JsonValue]
    slo: SloSummary
    recommended: Recommendation
    tiers: tuple[TierSummary, ...]
    assumptions: Assumptions
    notes: tuple[str, ...]
    replications: ReplicationsSummary | None = None
    """``capsim run --replications N`` (N > 1): the tiers and the recommendation across
    the replications (:mod:`sim.results.replications`); absent from the JSON otherwise."""
    engine: Literal["compiled"] | None = None
    """The engine that ran, when not the SimPy model (``capsim run --engine``: both give
    the same rows); absent from the JSON for the SimPy model."""

    @model_serializer(mode="wrap")
    def _omit_absent_replications(self, handler):
        data = handler(self)
        if self.replications is None:
            data.pop("replications", None)
        if self.engine is None:
            data.pop("engine", None)
        return data

    def tier(self, name: str) -> TierSummary:
        """The summary of the tier called ``name`` (KeyError if it was not simulated)."""
        for t in self.tiers:
            if t.tier == name:
                return t
        raise KeyError(name)

    def to_dict(self) -> dict:
        """Plain JSON-ready values, keys in ``summary.json`` order."""
        return self.model_dump(mode="json")

    def to_json(self) -> str:
        """The canonical text of ``summary.json`` (stable key order, no wall-clock values)."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=False, ensure_ascii=False,
                          allow_nan=False) + "\n"

    @classmethod
    def from_json(cls, text: str, *, file: str | None = None) -> RunSummary:
        """Parse ``summary.json`` text; a :class:`CapsimError` if it is not one we understand."""
        try:
            data = json.loads(text)
        except ValueError as err:
            raise CapsimError(f"not JSON ({err.msg})", file=file, line=err.lineno) from None
        if not isinstance(data, dict):
            raise CapsimError("expected a JSON object (a capsim summary)", file=file)
        version = data.get("schema_version")
        if version is None:
            raise CapsimError("no schema_version: not a capsim summary, or one written "
                              "before summaries were versioned (rerun it)", file=file,
                              field="schema_version")
        if version != SCHEMA_VERSION:
            raise CapsimError(f"unknown schema version (this capsim reads {SCHEMA_VERSION})",
                              file=file, field="schema_version")
        try:
            return cls.model_validate(data)
        except ValidationError as err:
            raise CapsimError.from_validation(err, file, " (not a valid capsim summary)") \
                from None


def load_summary(path: str | Path) -> RunSummary:
    """Read a run's summary from a report folder or a ``summary.json`` file."""
    p = Path(path)
    if p.is_dir():
        p = p / "summary.json"
    text = read_user_text(p, "no such file (expected a report folder or a summary.json)")
    return RunSummary.from_json(text, file=str(p))
