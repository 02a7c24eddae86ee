"""What decided a tier's verdict: the SLO's breaches and, for each, its cause.

The one home of "what decided it": :func:`slo_breaches` compares a tier's figures with
the SLO (``slo_check`` in :mod:`sim.metrics.figures` words them), :func:`decide` names the
cause of each breach and whether that cause is an assumed number. Every output (the
summary's ``decided_by``, the report, the stdout table, the plots, sweeps and headroom)
reads the result from the summary rather than working it out again.

Causes (:data:`sim.results.summary.DECIDING_CAUSES`):

* ``cu_window``: the throttle rate is over its limit, or throttles are a cause of the
  failure rate (requests whose last attempt the 12-second CU window refused);
* ``api_not_in_tier``: 402 for methods of an API the tier does not include;
* ``daily_allowance`` (an assumption: the spec does not show the allowance): it lasts
  under 24 h at the run's rate (``[slo] allowance_must_last_day``), or it ran out and
  402 answered the rest of the day;
* ``connection_limits`` (430, 421), ``websocket_cap`` (435), ``other_failures`` (401,
  oversized): causes of the failure rate;
* ``latency``: the p99 over its limit. A p99 that is undefined because no request
  succeeded is not a cause of its own when the failure rate already says why.

A failure rate over its limit is decided by each cause whose share of requests alone
exceeds the limit; when no cause does alone (they only add up to it), by all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..config.scenario import Slo
from ..core.vocabulary import STREAM_API
from ..results.summary import DECIDING_CAUSES


@dataclass(frozen=True)
class Breach:
    """One SLO criterion a tier's figures break: its name, value (None: undefined) and
    limit."""

    criterion: str  # throttle_rate, failure_rate, p99_latency, daily_allowance, websockets
    value: float | None
    limit: float


def slo_breaches(summary: dict, slo: Slo, ws_outside: Sequence[str] = ()) -> list[Breach]:
    """The SLO criteria the tier's summary (the dict ``tier_summary`` builds) breaks, in
    report order. ``ws_outside``: the scenario's websocket streams whose API the tier does
    not include: their handshakes refused with 402 break ``websockets`` (value: how many),
    as HTTP calls of an API outside the tier count as failures, so that a tier a
    websocket client cannot use at all is never recommended for it."""
    out = []
    if summary["throttle_rate"] > slo.max_throttle_rate:
        out.append(Breach("throttle_rate", summary["throttle_rate"], slo.max_throttle_rate))
    if summary["failure_rate"] > slo.max_failure_rate:
        out.append(Breach("failure_rate", summary["failure_rate"], slo.max_failure_rate))
    p99 = summary["latency_ms"]["p99"]
    if p99 is None or p99 > slo.p99_latency_ms:
        out.append(Breach("p99_latency", p99, slo.p99_latency_ms))
    lasts = summary["daily_allowance"]["lasts_h"]
    if slo.allowance_must_last_day and lasts is not None and lasts < 24:
        out.append(Breach("daily_allowance", lasts, 24.0))
    ws = summary.get("websockets")
    handshakes = (ws if isinstance(ws, dict) else ws.model_dump())["handshakes"] if ws else {}
    refused = handshakes.get("402", 0) if ws_outside else 0
    if refused:
        out.append(Breach("websockets", refused, 0))
    return out


_OUTCOME_CAUSE = {
    "434": "cu_window", "-32005": "cu_window", "ws_cu_rejected": "cu_window",
    "430": "connection_limits", "421": "connection_limits",
    "435": "websocket_cap",
}

_OUTCOME_WORDS = {
    "434": "throttled by the 12-second CU window",
    "-32005": "throttled by the 12-second CU window",
    "ws_cu_rejected": "throttled by the 12-second CU window",
    "430": "430: too many connections or new connections per second",
    "421": "421: sent to a hostname of another API",
    "435": "435: every websocket slot taken",
    "401": "401: a key of no account, or revoked",
    "oversized": "oversized: one request costs more than the window's budget",
}


def outside_methods(summary: dict, methods, tier) -> list[str]:
    """The methods the run called whose API the tier does not include (402 by selection)."""
    return sorted(m for m in summary["by_method"]
                  if m in methods and methods[m].api not in tier.apis)


def outside_streams(streams: Sequence, tier) -> list[str]:
    """The websocket streams of the scenario's ``[[streams]]`` clients whose API the tier
    does not include (every handshake of theirs is refused with 402)."""
    return sorted({c.stream for c in streams if c.api not in tier.apis})


def websockets_words(outside: Sequence[str], tier, refused: float) -> str:
    """The websocket breach in words: which streams, which API, how many handshakes."""
    apis = sorted({STREAM_API[s] for s in outside})
    return (f"402: the API is not in this tier's selection (websockets {', '.join(outside)} "
            f"use {', '.join(apis)}; this tier has {', '.join(sorted(tier.apis))}): "
            f"{int(refused):,} handshakes refused with 402, none of their sessions connected")


def failure_shares(summary: dict, methods, tier) -> dict[str, tuple[int, str]]:
    """Failed requests by cause: ``{cause: (requests, words)}``.

    402 goes to the API not in the tier for the calls of its methods (their attempts
    not ok, at most every 402) and to the daily allowance for the rest, when it ran out."""
    out: dict[str, list] = {}

    def add(cause: str, count: int, words: str) -> None:
        if count > 0:
            entry = out.setdefault(cause, [0, []])
            entry[0] += count
            if words not in entry[1]:
                entry[1].append(words)

    outside = outside_methods(summary, methods, tier)
    for name, count in summary["request_outcomes"].items():
        if name == "ok" or not count:
            continue
        if name == "402":
            ran_out = summary["daily_allowance"]["ran_out_at"]
            by_api = 0
            if outside:
                by_api = count if ran_out is None else min(count, sum(
                    summary["by_method"][m].attempts - summary["by_method"][m].ok
                    for m in outside))
                apis = sorted({methods[m].api for m in outside})
                add("api_not_in_tier", by_api,
                    f"402: the API is not in this tier's selection ({', '.join(outside)} "
                    f"use {', '.join(apis)}; this tier has {', '.join(summary['apis'])})")
            if ran_out is not None:
                add("daily_allowance", count - by_api,
                    f"402: the daily allowance ran out at {ran_out}")
            else:
                add("other_failures", count - by_api, "402: payment required")
        else:
            add(_OUTCOME_CAUSE.get(name, "other_failures"), count,
                _OUTCOME_WORDS.get(name, name))
    return {cause: (count, ", ".join(words)) for cause, (count, words) in out.items()}


def decide(summary: dict, slo: Slo, methods, tier, streams: Sequence = ()) -> list[dict]:
    """What made the tier fail its SLO (the ``decided_by`` entries of its summary; empty
    when it meets the SLO), in :data:`DECIDING_CAUSES` order. ``methods``: the scenario's
    method table (each method's API); ``tier``: the tier simulated; ``streams``: the
    scenario's websocket clients (``[[streams]]``, each with its ``api``)."""
    found: dict[str, dict] = {}

    def add(cause: str, breaks: str, detail: str) -> None:
        entry = found.setdefault(cause, {"cause": cause,
                                         "assumption": cause == "daily_allowance",
                                         "breaks": [], "detail": []})
        if breaks not in entry["breaks"]:
            entry["breaks"].append(breaks)
        entry["detail"].append(detail)

    outside = outside_streams(streams, tier)
    breaches = {b.criterion: b for b in slo_breaches(summary, slo, outside)}
    if (b := breaches.get("websockets")) is not None:
        add("api_not_in_tier", b.criterion, websockets_words(outside, tier, b.value))
    if (b := breaches.get("throttle_rate")) is not None:
        add("cu_window", b.criterion, f"throttle rate {b.value:.2%} > {b.limit:.2%}")
    if (b := breaches.get("failure_rate")) is not None:
        n = summary["requests"]
        shares = failure_shares(summary, methods, tier)
        alone = {c: v for c, v in shares.items() if v[0] / n > b.limit}
        for cause, (count, words) in (alone or shares).items():
            add(cause, b.criterion, f"{words}: {count / n:.1%} of requests "
                f"(failure rate {b.value:.2%} > {b.limit:.2%})")
    if (b := breaches.get("p99_latency")) is not None:
        if b.value is not None:
            add("latency", b.criterion, f"p99 latency {b.value:,.0f} ms > {b.limit:,.0f} ms")
        elif "failure_rate" not in breaches:
            add("latency", b.criterion, "p99 latency: no successful request")
    if (b := breaches.get("daily_allowance")) is not None:
        add("daily_allowance", b.criterion,
            f"the daily allowance lasts {b.value:.1f} h at this rate (< 24 h), an assumed "
            "number the spec does not show")
    return [{**found[c], "breaks": tuple(found[c]["breaks"]),
             "detail": "; ".join(found[c]["detail"])}
            for c in DECIDING_CAUSES if c in found]
