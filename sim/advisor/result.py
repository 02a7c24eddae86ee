"""What the advisor found: per cheaper tier, the change, what it saves and what it costs.

:class:`TierAdvice` is one cheaper tier's answer; :class:`Advice` the whole. Both are
plain dataclasses with :meth:`to_dict` for ``capsim advise --json``; the sentences a
terminal shows come from :meth:`TierAdvice.describe`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

FOUND = "found"          # a change (or a pair) meets the SLO on this tier, verified
UNVERIFIED = "unverified"  # it met on replication 0 but not on every replication
NONE = "none"            # no change in the catalogue is enough
SKIPPED = "skipped"      # the tier cannot be reached by a client change (reason)
UNFINISHED = "unfinished"  # the --budget ran out before the search ended


@dataclass(frozen=True)
class ClientCost:
    """What a change costs the client, against the recommended tier without it
    (replication 0): latencies in ms, rates as shares of requests, CU per day."""

    added_p50_ms: float | None
    added_p99_ms: float | None
    failure_rate: float
    added_failure_rate: float
    dropped_share: float
    """With a cache: the share fewer requests sent than on this tier as it stands (the
    calls cached; a closed-loop source, throttled less, may send more); else 0."""
    cu_per_day: float
    base_cu_per_day: float
    delayed_share: float | None = None
    """With pacing: the share of the paced open-loop sources' first attempts that wait
    for the client's token bucket (exact, from the demand: :mod:`sim.advisor.delays`)."""
    mean_delay_ms: float | None = None  # their mean wait

    def words(self) -> str:
        """"+12 ms p50, +340 ms p99, 0.00 % failed, 0 % dropped, 1.2 M CU/day (was ...)"."""
        def ms(v):
            return "p? n/a" if v is None else f"{v:+,.0f} ms"
        delayed = ("" if self.delayed_share is None else
                   f"{self.delayed_share:.1%} of paced requests wait (mean "
                   f"{self.mean_delay_ms:,.0f} ms); ")
        cached = (f"{self.dropped_share:.1%} fewer requests sent (cached); "
                  if self.dropped_share else "")  # only a cache drops requests
        return (f"{ms(self.added_p50_ms)} p50, {ms(self.added_p99_ms)} p99; {delayed}"
                f"{self.failure_rate:.2%} of requests fail ({self.added_failure_rate:+.2%}); "
                f"{cached}{self.cu_per_day:,.0f} CU/day (was {self.base_cu_per_day:,.0f})")


@dataclass(frozen=True)
class TierAdvice:
    """One tier cheaper than the recommended one, and the least change that lets it meet."""

    tier: str
    monthly_usd: float | None
    saved_usd_per_month: float | None  # the recommended tier's price minus this one's
    status: str  # FOUND, UNVERIFIED, NONE, SKIPPED or UNFINISHED
    change: tuple[str, ...] = ()  # the change in words (one line per knob)
    overrides: tuple[str, ...] = ()  # the same as --set overrides
    snippet: str = ""  # the same as TOML to paste
    verified: str = ""  # "3/3 replications meet the SLO"
    cost: ClientCost | None = None
    reason: str = ""  # SKIPPED / NONE: why; NONE: the closest change and what it misses
    pacing_cu_per_s: float | None = None  # the pacing rate found, when the change paces
    tried: int = 0  # changes searched on this tier
    cu_per_window: float | None = None  # the tier's window budget
    shortfall_before: float | None = None  # largest SLO figure / its limit, as it stands
    shortfall_after: float | None = None  # the same with the change (or the closest one)
    cache_share: float | None = None  # the share of calls cached, when the change caches
    not_tried: tuple[str, ...] = ()  # "change: why it cannot help this tier"

    def describe(self) -> str:
        """A few lines for a terminal."""
        price = "" if self.monthly_usd is None else f" (${self.monthly_usd:,.0f}/month"
        saved = ("" if self.saved_usd_per_month is None
                 else f", saves ${self.saved_usd_per_month:,.0f}/month")
        head = f"{self.tier}{price}{saved}{')' if price else ''}"
        if self.status in (FOUND, UNVERIFIED):
            lines = [f"{head}: meets the SLO with {' + '.join(self.change)}"
                     f" ({self.verified})"]
            if self.status == UNVERIFIED:
                lines.append("  not verified: it does not meet on every replication (or --budget "
                             "ran out before they all ran)")
            lines.append(f"  cost to the client: {self.cost.words()}")
            lines.append("  paste into the scenario:")
            lines.extend("    " + s for s in self.snippet.splitlines())
            return "\n".join(lines)
        if self.status == SKIPPED:
            return f"{head}: not searched: {self.reason}"
        if self.status == UNFINISHED:
            return f"{head}: the run budget ran out before the search ended ({self.reason})"
        return f"{head}: no change in the catalogue is enough; {self.reason}"


@dataclass(frozen=True)
class Advice:
    """The advisor's answer for a scenario."""

    scenario: str
    scenario_file: str
    recommended: str | None
    recommended_usd: float | None
    replications: int
    budget: int
    runs: int  # model runs used (one tier simulated once is one run)
    tiers: tuple[TierAdvice, ...]
    skipped_changes: tuple[tuple[str, str], ...] = ()  # (change, why it cannot help)
    slo: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (``capsim advise --json``)."""
        return asdict(self)

    def lines(self) -> list[str]:
        """The whole answer, as ``capsim advise`` prints it."""
        rec = ("no tier meets the SLO" if self.recommended is None
               else f"recommended tier {self.recommended}"
               + ("" if self.recommended_usd is None else f" (${self.recommended_usd:,.0f}/month)"))
        out = [f"advice for {self.scenario}: {rec}; {self.runs} model runs "
               f"(budget {self.budget}), {self.replications} replication(s) to verify"]
        if not self.tiers:
            out.append("no cheaper tier to reach" if self.recommended is not None
                       else "no tier with a monthly price to search")
        for t in self.tiers:
            out.append(t.describe())
        for title, why in self.skipped_changes:
            out.append(f"skipped: {title}: {why}")
        return out
