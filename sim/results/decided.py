"""What decided a tier, for the outputs: short labels, sentences and the margins.

The causes themselves are worked out once, when the summary is built
(:func:`sim.metrics.decided.decide`), and stored in each tier's ``decided_by``; the
report, the stdout table, the plots, sweeps and headroom word them with these helpers.

Imports nothing but the summary's models: reading a summary stays light.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .summary import DECIDING_CAUSES, DecidingCause, RunSummary, TierSummary

LABELS = {
    "api_not_in_tier": "API",
    "cu_window": "window",
    "connection_limits": "connections",
    "websocket_cap": "ws cap",
    "other_failures": "failures",
    "latency": "latency",
    "daily_allowance": "allowance",
}
"""A cause's short label (stdout and report tables); ``*`` follows an assumed one."""

WORDS = {
    "api_not_in_tier": "402: the API is not in this tier's selection",
    "cu_window": "the 12-second CU window (throttles)",
    "connection_limits": "the connection limits (430/421)",
    "websocket_cap": "the websocket slot cap (435)",
    "other_failures": "other failures (401, oversized, 402 of no known cause)",
    "latency": "p99 latency",
    "daily_allowance": "the daily allowance",
}
"""A cause in words."""

ASSUMPTION_NOTE = ("decided by an assumption: daily allowance, not shown by the spec "
                   "(sim/data/pricing.toml, or the scenario's [pricing])")


def legend(causes=DECIDING_CAUSES) -> str:
    """What each label stands for: "API = 402: the API ...; window = ..."."""
    return "; ".join(f"{LABELS[c]} = {WORDS[c]}" for c in causes)


def label(cause: DecidingCause) -> str:
    """``"window"``, or ``"allowance*"`` for an assumed number."""
    return LABELS.get(cause.cause, cause.cause) + ("*" if cause.assumption else "")


def only_assumptions(t: TierSummary) -> bool:
    """Whether the tier fails on assumed numbers alone (the spec would not decide it)."""
    return bool(t.decided_by) and all(c.assumption for c in t.decided_by)


def verdict(t: TierSummary) -> str:
    """The SLO cell: ``meets``, or ``fails: window, allowance*`` (causes in order; a
    summary written before ``decided_by`` existed: ``fails``)."""
    if t.meets_slo:
        return "meets"
    if not t.decided_by:
        return "fails"
    return "fails: " + ", ".join(label(c) for c in t.decided_by)


def verdict_notes(tiers: Sequence[TierSummary]) -> list[str]:
    """The notes under a table of :func:`verdict` cells: each label used, and the
    assumption mark if a tier carries it (empty when no tier fails)."""
    used = [c for c in DECIDING_CAUSES
            if any(d.cause == c for t in tiers for d in t.decided_by)]
    if not used:
        return []
    lines = [f"SLO: what decided a failing tier: {legend(used)}."]
    if any(d.assumption for t in tiers for d in t.decided_by):
        lines.append(f"*: {ASSUMPTION_NOTE}.")
    return lines


def decided_sentence(t: TierSummary) -> str | None:
    """One sentence of what decided a failing tier (None: it meets the SLO, or the
    summary predates ``decided_by``)."""
    if not t.decided_by:
        return None
    if only_assumptions(t):
        return "decided by an assumption: daily allowance, not shown by the spec"
    return "decided by: " + ", ".join(
        WORDS[c.cause] + (" (an assumed number)" if c.assumption else "")
        for c in t.decided_by)


def union_labels(tiers: Iterable[TierSummary]) -> str:
    """The labels of every cause in ``tiers`` (replications of one tier), in order, with
    how many of them each decided when not all: ``"window (2/3), allowance*"``."""
    tiers = list(tiers)
    counts = {c: 0 for c in DECIDING_CAUSES}
    assumed = set()
    for t in tiers:
        for d in t.decided_by:
            counts[d.cause] += 1
            if d.assumption:
                assumed.add(d.cause)
    parts = []
    for c, n in counts.items():
        if n:
            text = LABELS[c] + ("*" if c in assumed else "")
            parts.append(text if n == len(tiers) else f"{text} ({n}/{len(tiers)})")
    return ", ".join(parts)


def allowance_hours(t: TierSummary) -> float | None:
    """Hours the daily allowance lasts at the run's rate: ``lasts_h`` for runs shorter than
    a day; for longer runs, 24 h x allowance / the most CU used in a day (the account
    whose allowance lasts least). None: no allowance, nothing charged, or it ran out."""
    d = t.daily_allowance
    if d.lasts_h is not None:
        return d.lasts_h
    if d.ran_out_at is not None:
        return None
    allowances = ([a.daily_allowance for a in t.plan.accounts] if t.plan is not None
                  else [d])
    hours = [24.0 * a.allowance_cu / a.used_cu for a in allowances
             if a.allowance_cu is not None and a.used_cu > 0]
    return min(hours, default=None)


def window_growth(t: TierSummary) -> float | None:
    """How far the load may grow before the busiest 12-second window fills its budget:
    budget / CU used in that window (None: nothing used, or no budget)."""
    peak, budget = t.cu.peak_window_used, t.cu.limit
    return budget / peak if peak > 0 and budget else None


def allowance_growth(t: TierSummary) -> float | None:
    """How far the load may grow before the daily allowance lasts under 24 h: the hours
    it lasts at this rate over 24 (None: see :func:`allowance_hours`)."""
    hours = allowance_hours(t)
    return None if hours is None else hours / 24.0


def tighter_margin(t: TierSummary) -> str | None:
    """Which margin is tighter: ``"daily_allowance"`` or ``"cu_window"`` (None: neither
    is known)."""
    w, a = window_growth(t), allowance_growth(t)
    if w is None and a is None:
        return None
    if a is not None and (w is None or a < w):
        return "daily_allowance"
    return "cu_window"


def _price(t: TierSummary) -> float | None:
    return t.plan.monthly_usd if t.plan is not None else t.monthly_usd


def passed_over_on_assumptions(summary: RunSummary) -> list[TierSummary]:
    """The tiers the recommendation passed over on assumed numbers alone: cheaper than
    the recommended tier (every tier when none is recommended) and failing only on
    causes the spec does not show. Empty: the recommendation does not rest on them."""
    rec = summary.recommended.tier
    failing = [t for t in summary.tiers if only_assumptions(t)]
    if rec is None:
        return failing
    best = _price(summary.tier(rec))
    if best is None:
        return []
    return [t for t in failing if (p := _price(t)) is not None and p < best]


def assumption_line(summary: RunSummary) -> str | None:
    """The sentence under the recommendation when it rests on an assumed number (see
    :func:`passed_over_on_assumptions`); None when it does not."""
    tiers = passed_over_on_assumptions(summary)
    if not tiers:
        return None
    names = ", ".join(t.tier + ("" if _price(t) is None else f" (${_price(t):,.0f})")
                      for t in tiers)
    verb = "fails" if len(tiers) == 1 else "fail"
    if summary.recommended.tier is None:
        return (f"decided by an assumption: {names} {verb} only on the daily allowance, "
                "a number the spec does not show")
    return (f"decided by an assumption: {names}, cheaper, {verb} only on the daily "
            "allowance, a number the spec does not show")
