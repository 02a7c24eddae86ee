"""Headroom: the largest ``load`` at which a tier still meets the scenario's SLO.

For each tier, along a log scale of load multipliers x (relative to the scenario's own
``load``, "today's load" = 1):

    x = 1 meets?  yes: double x until it fails (or reaches max_load: headroom >= max_load)
                  no:  halve x until it meets (or reaches min_load: no headroom)
    then bisect geometrically, x = sqrt(lo * hi), until hi / lo <= 1 + tolerance.

``lo`` (always a load that met) is the headroom; ``hi`` is the next step, where the
report names what breaks first. With replications, a load *meets* only if every
replication meets the SLO. All tiers advance together, so each round's runs (tiers ×
loads × replications) go to the executor as one batch.

With more workers than tiers still searching, a round simulates several loads per tier
(``points``): the search's next load and the loads it would try after each possible
verdict, nearest first (after x: 2x if x meets, sqrt(lo x) if not; then their
successors). The search then takes its steps one by one from what is known, so its
path, answer and bracket are those of the one-load-at-a-time search whatever the
number of workers; a round advances it by up to log2(points + 1) steps, for up to
``points`` runs per step-round where it took one.

The search assumes meeting the SLO is monotone in load (more demand never helps); the
rules of :mod:`sim.workload.load` are monotone, but a noisy metric near its limit can
make a single replication flip: more replications make the answer steadier.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..core.errors import CapsimError
from ..core.limits import MAX_LOAD_MULTIPLE, MAX_REPLICATIONS, MIN_RELATIVE_TOLERANCE
from ..core.rng import replication_seed
from ..results.decided import WORDS, union_labels, verdict
from ..results.summary import SLO_CRITERIA, RunSummary, SloSummary, TierSummary
from .executors import Executor, SequentialExecutor
from .run_one import simulate
from .sweep_plan import RunSpec, scenario_source

METRICS = (*(c.name for c in SLO_CRITERIA), "daily_allowance")


@dataclass(frozen=True)
class TierHeadroom:
    """One tier's answer (loads are multiples of today's load)."""

    tier: str
    headroom: float | None  # largest load found meeting the SLO; None: not even min_load
    capped: bool  # True: still meets at max_load (the headroom is at least that)
    next_load: float | None  # smallest load found failing (the next step)
    breaks_first: str | None  # one of METRICS, at next_load
    value: float | None  # that metric's worst value over replications at next_load
    limit: float | None  # its SLO limit
    allowance_ran_out_at: str | None  # simulated time, when breaks_first is the allowance
    evaluations: int  # loads on this tier's search path (more may run ahead, in parallel)
    cause: str | None = None  # why breaks_first broke, in words (the summary's decided_by)
    decided_by: str | None = None  # every cause at next_load: "API", "window (1/3), allowance*"

    def describe(self) -> str:
        """One line: "Tier: meets the SLO up to 3.4× today's load; at 3.6× p99 latency
        breaks first"."""
        if self.headroom is None:
            return (f"{self.tier}: does not meet the SLO even at {self.next_load:.3g}× "
                    f"today's load; {self._what()} breaks first{self._why()}")
        if self.capped:
            return f"{self.tier}: meets the SLO up to at least {self.headroom:.3g}× today's load"
        return (f"{self.tier}: meets the SLO up to {self.headroom:.3g}× today's load; at "
                f"{self.next_load:.3g}× {self._what()} breaks first{self._why()}")

    def _why(self) -> str:
        """The cause of a broken failure rate: " (402: the API is not in ...)"."""
        return f" ({self.cause})" if self.breaks_first == "failure_rate" and self.cause else ""

    def _what(self) -> str:
        if self.breaks_first == "daily_allowance":
            if self.allowance_ran_out_at is None and self.value is not None:
                return (f"the daily allowance (lasts {self.value:.1f} h at this rate; an "
                        "assumed number, not shown by the spec)")
            return (f"the daily allowance (runs out at {self.allowance_ran_out_at}; an "
                    "assumed number, not shown by the spec)")
        return (self.breaks_first or "?").replace("_", " ")


@dataclass(frozen=True)
class Headroom:
    """The headroom of a scenario's tiers and how it was searched."""

    scenario: str
    scenario_file: str
    load: float  # the scenario's own load ("today's load", multiple 1)
    replications: int
    meets_means: str
    tolerance: float
    max_load: float
    slo: SloSummary
    tiers: tuple[TierHeadroom, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (``capsim headroom --json``)."""
        return {**asdict(self), "slo": self.slo.model_dump()}


@dataclass
class _Search:
    tier: str
    x: float = 1.0
    lo: float | None = None
    hi: float | None = None
    lo_runs: list[TierSummary] | None = None
    hi_runs: list[TierSummary] | None = None
    evaluations: int = 0
    done: bool = False


def find_headroom(scenario: str | Path | None, *, tiers: list[str] = (),
                  overrides: list[str] = (), replications: int = 1, max_load: float = 100.0,
                  min_load: float = 0.01, tolerance: float = 0.02,
                  executor: Executor | None = None,
                  progress: Callable[[str], None] | None = None,
                  points: int | None = None) -> Headroom:
    """The headroom of each tier of ``scenario`` (see the module's docstring).

    ``progress``: called with one line per load on the search's path (tier, load, the
    verdict and what decided it), as each round's batch finishes. ``points``: loads
    simulated per tier and round (default: the executor's workers shared among the
    tiers still searching and the replications, at least 1)."""
    from ..api import load_scenario

    if not MIN_RELATIVE_TOLERANCE <= tolerance <= 1:  # finer: the bisection may never end
        raise CapsimError(f"expected a relative tolerance from {MIN_RELATIVE_TOLERANCE:g} to "
                          f"1, e.g. 0.02; got {tolerance!r}", field="--tolerance")
    if not 1 < max_load <= MAX_LOAD_MULTIPLE:
        raise CapsimError(f"expected a multiplier > 1 and at most {MAX_LOAD_MULTIPLE:g}; got "
                          f"{max_load!r}", field="--max-load")
    if not 1 <= replications <= MAX_REPLICATIONS:
        raise CapsimError(f"expected 1 to {MAX_REPLICATIONS}; got {replications!r}",
                          field="--replications")
    loaded = load_scenario(scenario, tiers=tiers, overrides=list(overrides))
    sc = loaded.scenario
    label, text = scenario_source(scenario)
    searches = [_Search(t.name) for t in loaded.tiers]
    executor = executor or SequentialExecutor()
    bounds = (max_load, min_load, tolerance)
    found: dict[str, dict[float, list[TierSummary]]] = {s.tier: {} for s in searches}
    while True:
        for s in searches:  # along the sequential search's path, as far as it is known
            known = found[s.tier]
            while not s.done and s.x in known:
                if progress is not None:
                    progress(_progress_line(s, known[s.x]))
                _step(s, known[s.x], *bounds)
        active = [s for s in searches if not s.done]
        if not active:
            break
        per_tier = points or max(1, executor.workers // (len(active) * replications))
        loads = [(s, x) for s in active
                 for x in _next_loads(s, _verdicts(found[s.tier]), per_tier, bounds)]
        specs = [RunSpec(run_id=f"{s.tier}@{x!r}/r{r}", point=i, variant="headroom",
                         replication=r, seed=replication_seed(sc.seed, r),
                         overrides=(*overrides, f"load={sc.load * x!r}"),
                         scenario_text=text, scenario_label=label, tiers=(s.tier,))
                 for i, (s, x) in enumerate(loads) for r in range(replications)]
        results = [[None] * replications for _ in loads]  # in replication order
        for spec, out in executor.as_completed(simulate, specs):
            results[spec.point][spec.replication] = RunSummary.from_json(out).tiers[0]
        for (s, x), runs in zip(loads, results, strict=True):
            found[s.tier][x] = runs
    return Headroom(
        scenario=sc.name,
        scenario_file=label,
        load=sc.load,
        replications=replications,
        meets_means="every replication meets the SLO" if replications > 1
        else "the run meets the SLO",
        tolerance=tolerance,
        max_load=max_load,
        slo=SloSummary(**sc.slo.model_dump()),
        tiers=tuple(_answer(s, sc.slo) for s in searches),
    )


def _progress_line(s: _Search, runs: list[TierSummary]) -> str:
    met = sum(t.meets_slo for t in runs)
    verdicts = (f"meets ({met}/{len(runs)})" if met == len(runs) and len(runs) > 1
                else "meets" if met == len(runs)
                else verdict(runs[0]) if len(runs) == 1
                else f"fails ({len(runs) - met}/{len(runs)}): {union_labels(runs)}")
    return (f"headroom: {s.tier} at {s.x:.3g}× today's load: {verdicts} "
            f"(step {s.evaluations + 1})")


def _step(s: _Search, runs: list[TierSummary], max_load: float, min_load: float,
          tolerance: float) -> None:
    s.evaluations += 1
    meets = all(t.meets_slo for t in runs)
    if meets:
        s.lo_runs = runs
    else:
        s.hi_runs = runs
    s.x, s.lo, s.hi, s.done = _next(s.x, s.lo, s.hi, meets, max_load, min_load, tolerance)


def _next(x: float, lo: float | None, hi: float | None, meets: bool, max_load: float,
          min_load: float, tolerance: float) -> tuple[float, float | None, float | None, bool]:
    """The search's next ``(x, lo, hi, done)`` once load ``x`` met the SLO or not."""
    if meets:
        lo = x
    else:
        hi = x
    if hi is None:
        return min(lo * 2, max_load), lo, hi, lo >= max_load
    if lo is None:
        return max(hi / 2, min_load), lo, hi, hi <= min_load
    if hi / lo <= 1 + tolerance:
        return x, lo, hi, True
    return math.sqrt(lo * hi), lo, hi, False


def _verdicts(found: dict[float, list[TierSummary]]) -> dict[float, bool]:
    return {x: all(t.meets_slo for t in runs) for x, runs in found.items()}


def _next_loads(s: _Search, known: dict[float, bool], k: int,
                bounds: tuple[float, float, float]) -> list[float]:
    """Up to ``k`` loads not simulated yet that the sequential search may try next: its
    next load, then the loads after each of its possible verdicts, and so on, those
    fewest unknown verdicts away first. Whichever verdicts come, the search then walks
    the same path as one load at a time, several steps per round."""
    picks: list[float] = []
    tree = [(0, 0, s.x, s.lo, s.hi)]  # (unknown verdicts on the way, order, state)
    order = 1
    while tree and len(picks) < k:
        unknown, _, x, lo, hi = heapq.heappop(tree)
        if x in known:
            verdicts = (known[x],)
        else:
            if x not in picks:
                picks.append(x)
            verdicts, unknown = (True, False), unknown + 1
        for meets in verdicts:
            nx, nlo, nhi, done = _next(x, lo, hi, meets, *bounds)
            if not done:
                heapq.heappush(tree, (unknown, order, nx, nlo, nhi))
                order += 1
    return picks


def _answer(s: _Search, slo) -> TierHeadroom:
    metric = value = limit = ran_out = cause = labels = None
    if s.hi_runs is not None:
        metric, value, limit, ran_out = breaks_first(s.hi_runs, s.lo_runs or [], slo)
        cause = breaking_cause(s.hi_runs, metric)
        labels = union_labels(s.hi_runs) or None
    return TierHeadroom(s.tier, s.lo, s.hi is None, s.hi, metric, value, limit, ran_out,
                        s.evaluations, cause, labels)


def breaking_cause(failing: list[TierSummary], metric: str | None) -> str | None:
    """Why ``metric`` broke at the failing load, in words: the causes its summaries'
    ``decided_by`` name for it, the most frequent over replications first (None: none
    named, e.g. a summary written before ``decided_by``)."""
    found: dict[str, int] = {}
    for t in failing:
        for c in t.decided_by:
            if metric in c.breaks:
                found[c.cause] = found.get(c.cause, 0) + 1
    if not found:
        return None
    ranked = sorted(found, key=lambda c: -found[c])
    return ", ".join(WORDS[c] for c in ranked)


def breaks_first(failing: list[TierSummary], meeting: list[TierSummary], slo
                 ) -> tuple[str, float | None, float | None, str | None]:
    """What breaks at the failing load: the daily allowance if it now runs out (and did
    not at the meeting load), else the SLO metric exceeded the most, relative to its
    limit (worst replication)."""
    ran_out = sorted(t.daily_allowance.ran_out_at for t in failing
                     if t.daily_allowance.ran_out_at is not None)
    ran_out_before = any(t.daily_allowance.ran_out_at is not None for t in meeting)
    if ran_out and not ran_out_before:
        return "daily_allowance", None, None, ran_out[0]
    if getattr(slo, "allowance_must_last_day", False):
        short = [h for t in failing if (h := t.daily_allowance.lasts_h) is not None and h < 24]
        short_before = any((h := t.daily_allowance.lasts_h) is not None and h < 24
                           for t in meeting)
        if short and not short_before:
            return "daily_allowance", min(short), 24.0, None
    candidates = []
    for criterion in SLO_CRITERIA:
        name, limit = criterion.name, criterion.limit(slo)
        # Undefined (no successful request) is as bad as it gets, unless the failure
        # rate already says why: then the p99 is its consequence, not a break of its own.
        read = [(criterion.read(t), t.failure_rate) for t in failing]
        values = [math.inf if v is None else v for v, failures in read
                  if v is not None or failures <= slo.max_failure_rate]
        if not values:
            continue
        worst = max(values)
        if worst > limit:
            ratio = math.inf if limit == 0 else worst / limit
            candidates.append((ratio, name, worst, limit))
    if not candidates:  # a flip between replications: name the closest to its limit
        return "throttle_rate", None, slo.max_throttle_rate, None
    _, name, worst, limit = max(candidates, key=lambda c: c[0])
    return name, (None if math.isinf(worst) else worst), limit, None
