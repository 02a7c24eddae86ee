"""The advisor's search: per tier cheaper than the recommended one, the mildest change of
the catalogue (:mod:`sim.advisor.catalogue`) that makes it meet the SLO.

1. Every tier is simulated once as the scenario stands (replication 0): the
   recommended tier, and each cheaper tier's failure.
2. A cheaper tier that lacks an API the traffic uses is not searched (no client change
   adds an API); on a tier whose daily allowance is smaller than the CU the traffic
   charges a day, only changes that cut CU are tried; on a tier whose window never
   throttles, the changes that only help against throttles are not tried.
3. Each remaining (tier, change) is searched, all of them in step, each step's runs one
   batch for the executor: a discrete change tries its settings mildest first and stops
   at the first that meets; a continuous one (the pacing rate) doubles or halves from
   its closed-form start (the window budget / 12 s) until the verdict flips, then
   bisects geometrically to ``tolerance``.
4. The change that costs the client least (fewest calls cached, then fewest failures,
   then the lowest p99) is verified at replications 1 .. R-1 on the same seeds as
   every run (common random numbers); a continuous change that another replication
   fails at the edge is made a little stronger and verified again. If no single
   change is enough, the best pair of the closest ones is tried.

A run is one tier simulated once; ``budget`` bounds them all. With ``store``, each
run's summary is kept as it finishes (``runs/<hash>.json``): the same call again runs
only what is missing.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..config.tiers import Tier
from ..core.errors import CapsimError
from ..core.limits import MAX_REPLICATIONS
from ..core.rng import replication_seed
from ..jobs.sweep_results import cu_per_day as _cu_per_day
from ..metrics.figures import recommend
from ..results.summary import SLO_CRITERIA, RunSummary, TierSummary
from .catalogue import Change, Step, catalogue
from .result import FOUND, NONE, SKIPPED, UNFINISHED, UNVERIFIED, Advice, ClientCost, TierAdvice
from .snippet import toml_snippet

CUTS_CU = frozenset({"drop"})
"""The kinds of change that remove CU (the others move it in time or retry less)."""


class _Runner:
    """Runs (tier, overrides, replication) on the executor, once each, within budget."""

    def __init__(self, executor, text: str, label: str, overrides: tuple[str, ...],
                 seed: int, budget: int, store: Path | None) -> None:
        self.executor, self.text, self.label = executor, text, label
        self.overrides, self.seed, self.budget = overrides, seed, budget
        self.store = store
        self.memo: dict[tuple, TierSummary] = {}
        self.runs = 0  # model runs spent (kept runs read back from the store count too)

    def left(self) -> int:
        return self.budget - self.runs

    def run(self, wanted: list[tuple[str, tuple[str, ...], int]]) -> list[TierSummary | None]:
        """The summaries of ``wanted`` (None for a run past the budget)."""
        from ..jobs.run_one import simulate
        from ..jobs.sweep_plan import RunSpec

        todo: dict[tuple, RunSpec] = {}
        for key in wanted:
            if key in self.memo or key in todo:
                continue
            kept = self._read(key)
            if kept is not None:
                self.memo[key] = kept
                self.runs += 1
                continue
            if self.runs + len(todo) >= self.budget:
                continue
            tier, extra, r = key
            todo[key] = RunSpec(run_id=self._id(key), point=0, variant="advise",
                                replication=r, seed=replication_seed(self.seed, r),
                                overrides=(*self.overrides, *extra), scenario_text=self.text,
                                scenario_label=self.label, tiers=(tier,))
        by_id = {spec.run_id: key for key, spec in todo.items()}
        for spec, out in self.executor.as_completed(simulate, list(todo.values())):
            key = by_id[spec.run_id]
            self.memo[key] = RunSummary.from_json(out).tiers[0]
            self.runs += 1
            self._write(key, out)
        return [self.memo.get(k) for k in wanted]

    def _id(self, key) -> str:
        text = json.dumps([key[0], list(self.overrides), list(key[1]), key[2], self.seed,
                           hashlib.sha256(self.text.encode()).hexdigest()])
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def _read(self, key) -> TierSummary | None:
        if self.store is None:
            return None
        path = self.store / "runs" / f"{self._id(key)}.json"
        try:
            return RunSummary.from_json(path.read_text("utf-8")).tiers[0]
        except (OSError, ValueError, CapsimError):
            return None

    def _write(self, key, out: str) -> None:
        if self.store is None:
            return
        from ..jobs.sweep_store import write_atomic

        folder = self.store / "runs"
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / f"{self._id(key)}.json", out)


@dataclass
class _Search:
    """One change on one tier: the settings tried, the mildest meeting one found."""

    tier: Tier
    change: Change
    budget_cu: float
    tolerance: float
    i: int = 0  # discrete: the next setting
    value: Any = None  # continuous: the next value
    met: Any = None  # continuous: the mildest value known to meet
    failed: Any = None  # continuous: the strongest value known to fail
    found: tuple[Step, TierSummary] | None = None
    closest: tuple[float, Step, TierSummary] | None = None
    done: bool = False
    evaluations: int = 0
    bounds: tuple[float, float] = field(default=(0.0, 0.0))

    def __post_init__(self) -> None:
        if self.change.continuous:
            self.value = self.change.start(self.budget_cu)
            self.bounds = (self.value * 8, self.value / 4)  # (mildest, strongest)

    def next_step(self) -> Step | None:
        if self.done:
            return None
        if self.change.continuous:
            return self.change.step(self.value, self.budget_cu)
        return self.change.step(self.change.values[self.i], self.budget_cu)

    def record(self, step: Step, t: TierSummary, slo) -> None:
        self.evaluations += 1
        gap = shortfall(t, slo)
        if self.closest is None or gap < self.closest[0]:
            self.closest = (gap, step, t)
        if not self.change.continuous:
            if t.meets_slo:
                self.found, self.done = (step, t), True
            else:
                self.i += 1
                self.done = self.i >= len(self.change.values)
            return
        v = self.value
        if t.meets_slo:
            self.met, self.found = v, (step, t)
        else:
            self.failed = v
        mildest, strongest = self.bounds
        if self.failed is None:  # meets: go milder
            if v >= mildest:
                self.done = True
            self.value = min(v * 2, mildest)
        elif self.met is None:  # fails: go stronger
            if v <= strongest:
                self.done = True
            self.value = max(v / 2, strongest)
        elif max(self.met, self.failed) / min(self.met, self.failed) <= 1 + self.tolerance:
            self.done = True
        else:
            self.value = math.sqrt(self.met * self.failed)


def shortfall(t: TierSummary, slo) -> float:
    """How far ``t`` is from meeting ``slo``: the largest ratio of an SLO figure to its
    limit (1 or less: within it; an undefined p99 counts as far; the daily allowance as
    24 h over the hours it lasts)."""
    worst = 0.0
    for c in SLO_CRITERIA:
        v, limit = c.read(t), c.limit(slo)
        if v is None:
            worst = max(worst, 10.0)
            continue
        worst = max(worst, v / limit if limit > 0 else (1.0 + 1e6 * v))
    lasts = t.daily_allowance.lasts_h
    if getattr(slo, "allowance_must_last_day", False) and lasts is not None:
        worst = max(worst, 24.0 / lasts if lasts > 0 else math.inf)
    return worst


def cu_per_day(t: TierSummary, duration_s: float) -> float:
    """CU the run charged, per day of its rate (the CI gate's figure)."""
    return _cu_per_day(t, duration_s) or 0.0


def advise(scenario=None, *, tiers: list[str] = (), overrides: list[str] = (),
           replications: int = 3, budget: int = 400, tolerance: float = 0.02,
           executor=None, store: str | Path | None = None,
           progress: Callable[[str], None] | None = None) -> Advice:
    """The advice for ``scenario`` (a path, or None for the built-in default).

    ``tiers`` limits the tiers simulated (the recommended one among them);
    ``overrides`` are ``--set`` values applied to every run; ``replications`` (1 to
    1,000) verify a change found; ``budget`` bounds the model runs; ``executor`` is a
    :class:`sim.jobs.executors.Executor` (default: this process); ``store`` a folder
    keeping each run's summary, so that a second call resumes."""
    from ..api import load_scenario
    from ..jobs.executors import SequentialExecutor
    from ..jobs.sweep_plan import scenario_source

    if not 1 <= replications <= MAX_REPLICATIONS:
        raise CapsimError(f"expected 1 to {MAX_REPLICATIONS}; got {replications!r}",
                          field="--replications")
    if budget < 1:
        raise CapsimError(f"expected at least 1 run; got {budget!r}", field="--budget")
    loaded = load_scenario(scenario, tiers=list(tiers), overrides=list(overrides))
    sc = loaded.scenario
    label, text = scenario_source(scenario)
    if store is not None:
        from .report import claim_folder

        claim_folder(store)
    runner = _Runner(executor or SequentialExecutor(), text, label, tuple(overrides),
                     sc.seed, budget, Path(store) if store is not None else None)
    say = progress or (lambda _line: None)
    base = runner.run([(t.name, (), 0) for t in loaded.tiers])
    if any(b is None for b in base):
        raise CapsimError(f"a budget of {budget} runs does not cover the {len(base)} tiers' "
                          "first runs", field="--budget")
    say(f"advise: {len(base)} tiers simulated as the scenario stands")
    rec = recommend(list(base)).tier
    by_name = {t.tier: t for t in base}
    rec_t = by_name.get(rec)
    seen = tuple(sorted({m for t in base for m, b in t.by_method.items() if b.cu_settled > 0}))
    changes, skipped = catalogue(loaded, seen)
    cheaper = [t for t in loaded.tiers if _cheaper(by_name[t.name], rec_t)]
    slo = sc.slo
    ref = rec_t if rec_t is not None else max(base, key=lambda t: t.cu_per_window)
    need_cu = cu_per_day(ref, sc.duration_s)
    answers: dict[str, TierAdvice] = {}
    tier_skips: dict[str, tuple[str, ...]] = {}
    searches: list[_Search] = []
    for tier in cheaper:
        t = by_name[tier.name]
        reason = _unreachable(t)
        if reason:
            answers[tier.name] = _advice(tier, t, rec_t, slo=slo, status=SKIPPED, reason=reason)
            continue
        allowance = loaded.pricing.for_tier(tier).daily_allowance_cu
        short_allowance = (slo.allowance_must_last_day and sc.duration_s < 86400
                           and allowance is not None and need_cu > allowance)
        mine = []
        not_tried = []
        for c in changes:
            why = _irrelevant(c, t, short_allowance)
            if why:
                not_tried.append(f"{c.title}: {why}")
                continue
            mine.append(_Search(tier, c, tier.cu_per_window, tolerance))
        tier_skips[tier.name] = tuple(not_tried)
        if not mine:
            why = (f"the traffic charges {need_cu:,.0f} CU a day, more than its "
                   f"{allowance:,.0f} CU daily allowance, and no change in the catalogue "
                   "cuts CU" if short_allowance else
                   "its window never throttles, and nothing else it misses is a client "
                   "change of the catalogue")
            answers[tier.name] = _advice(tier, t, rec_t, slo=slo, status=NONE, reason=why)
            continue
        searches.extend(mine)
    _search_all(runner, searches, slo, say)
    for tier in cheaper:
        if tier.name in answers:
            continue
        mine = [s for s in searches if s.tier.name == tier.name]
        answers[tier.name] = _conclude(runner, tier, by_name[tier.name], rec_t, mine, slo,
                                       replications, text, sc.duration_s, say)
    answers = {k: replace(a, not_tried=tier_skips.get(k, ())) for k, a in answers.items()}
    return Advice(scenario=sc.name, scenario_file=label, recommended=rec,
                  recommended_usd=None if rec_t is None else rec_t.monthly_usd,
                  replications=replications, budget=budget, runs=runner.runs,
                  tiers=tuple(answers[t.name] for t in cheaper),
                  skipped_changes=tuple((s.title, s.reason) for s in skipped),
                  slo=slo.model_dump())


def _cheaper(t: TierSummary, rec: TierSummary | None) -> bool:
    if t.meets_slo or t.monthly_usd is None:
        return False
    if rec is None:
        return True
    return rec.monthly_usd is not None and t.monthly_usd < rec.monthly_usd


def _irrelevant(c: Change, t: TierSummary, short_allowance: bool) -> str:
    """Why ``c`` cannot make tier ``t`` meet, as ``t`` fails as it stands ("" if it might)."""
    if c.kind in CUTS_CU:
        return ""
    if short_allowance:
        return ("the traffic charges more CU a day than this tier's allowance: only a "
                "change that removes calls can help")
    if c.throttles_only and t.throttled == 0:
        return "this tier's window never throttles as it stands"
    if c.kind == "connections" and not (t.connections.refused_430
                                        or t.connections.attempts_waiting_for_stream):
        return "no 430 refusal and no attempt waiting for a stream on this tier"
    if c.kind == "fewer-websockets" and (t.websockets is None
                                         or not t.websockets.handshakes.get("435", 0)):
        return "no handshake refused with 435 (the slot cap) on this tier"
    return ""


def _unreachable(t: TierSummary) -> str:
    """Why no client change can make ``t`` meet ("" if one might)."""
    for c in t.decided_by:
        if c.cause == "api_not_in_tier":
            return ("the traffic uses an API this tier does not include (402): no client "
                    "change of the catalogue removes an API")
    return ""


def _search_all(runner: _Runner, searches: list[_Search], slo, say) -> None:
    while True:
        active = [(s, s.next_step()) for s in searches if not s.done]
        if not active:
            return
        if runner.left() <= 0:
            return
        out = runner.run([(s.tier.name, step.overrides, 0) for s, step in active])
        for (s, step), t in zip(active, out, strict=True):
            if t is None:
                continue
            s.record(step, t, slo)
            say(f"advise: {s.tier.name}: {step.words}: "
                f"{'meets' if t.meets_slo else 'fails'}")


def _conclude(runner, tier, t, rec_t, mine: list[_Search], slo, replications, text,
              duration_s, say) -> TierAdvice:
    tried = len(mine)
    def client_cost(s: _Search) -> tuple:
        # Fewest calls cached first (a change that keeps every call beats one that
        # drops some), then fewest failures, then the lowest p99.
        got = s.found[1]
        cached = 1.0 - got.requests / t.requests if s.change.kind == "drop" and t.requests \
            else 0.0
        return (round(cached, 6), got.failure_rate, got.latency_ms.p99 or 0)
    found = sorted((s for s in mine if s.found is not None), key=client_cost)
    for s in found[:3]:
        step, first = s.found
        ok, of = _verify(runner, tier, step.overrides, replications, first)
        for k in range(1, 4 if s.change.continuous and ok < of else 0):
            # At the edge of the verdict another seed may fail: a little stronger.
            step = s.change.step(s.met / (1 + 2 * s.tolerance) ** k, s.budget_cu)
            first = runner.run([(tier.name, step.overrides, 0)])[0]
            if first is None or not first.meets_slo:
                continue
            ok, of = _verify(runner, tier, step.overrides, replications, first)
            if ok == of:
                break
        if ok == of:
            return _advice(tier, t, rec_t, slo=slo, status=FOUND, steps=[step], summary=first,
                           verified=f"{ok}/{of} replications meet the SLO", text=text,
                           duration_s=duration_s, tried=tried)
    if found:
        step, first = found[0].found
        ok, of = _verify(runner, tier, step.overrides, replications, first)
        return _advice(tier, t, rec_t, slo=slo, status=UNVERIFIED, steps=[step], summary=first,
                       verified=f"{ok}/{of} replications meet the SLO", text=text,
                       duration_s=duration_s, tried=tried)
    unfinished = [s for s in mine if not s.done]
    close = sorted((s for s in mine if s.closest is not None), key=lambda s: s.closest[0])
    for a, b in itertools.combinations(close[:3], 2):
        if _clash(a.closest[1], b.closest[1]):
            continue
        steps = [a.closest[1], b.closest[1]]
        both = tuple(o for s in steps for o in s.overrides)
        got = runner.run([(tier.name, both, 0)])[0]
        if got is None:
            break
        say(f"advise: {tier.name}: {' + '.join(s.words for s in steps)}: "
            f"{'meets' if got.meets_slo else 'fails'}")
        if got.meets_slo:
            ok, of = _verify(runner, tier, both, replications, got)
            return _advice(tier, t, rec_t, slo=slo, status=FOUND if ok == of else UNVERIFIED,
                           steps=steps,
                           summary=got, verified=f"{ok}/{of} replications meet the SLO",
                           text=text, duration_s=duration_s, tried=tried)
    if unfinished:
        return _advice(tier, t, rec_t, slo=slo, status=UNFINISHED, tried=tried,
                       reason=f"{len(unfinished)} of {tried} changes not searched to the "
                              "end; raise --budget")
    got = None
    if close:
        gap, step, got = close[0].closest
        reason = (f"the closest is {step.words}: {_misses(got, slo)}")
    else:
        reason = "nothing was tried"
    return _advice(tier, t, rec_t, slo=slo, status=NONE, reason=reason, tried=tried,
                   closest=got)


def _clash(a: Step, b: Step) -> bool:
    keys = {o.split("=", 1)[0] for o in a.overrides}
    return any(o.split("=", 1)[0] in keys for o in b.overrides)


def _verify(runner, tier, overrides, replications, first) -> tuple[int, int]:
    """``(replications meeting the SLO, replications)``: one the budget left unrun
    counts as not meeting, so a change is never called verified on fewer."""
    more = runner.run([(tier.name, tuple(overrides), r) for r in range(1, replications)])
    got = [first, *[m for m in more if m is not None]]
    return sum(t.meets_slo for t in got), replications


def _misses(t: TierSummary, slo) -> str:
    parts = []
    for c in SLO_CRITERIA:
        v, limit = c.read(t), c.limit(slo)
        if v is None or v > limit:
            shown = "undefined" if v is None else (f"{v:,.0f} ms" if "latency" in c.name
                                                   else f"{v:.2%}")
            lim = f"{limit:,.0f} ms" if "latency" in c.name else f"{limit:.2%}"
            parts.append(f"{c.name.replace('_', ' ')} {shown} (limit {lim})")
    lasts = t.daily_allowance.lasts_h
    if slo.allowance_must_last_day and lasts is not None and lasts < 24:
        parts.append(f"the daily allowance lasts {lasts:.1f} h")
    return ", ".join(parts) or "meets on replication 0 only"


def _advice(tier, t, rec_t, *, status, steps=(), summary=None, verified="", text="",
            duration_s=1.0, reason="", tried=0, slo=None, closest=None) -> TierAdvice:
    after = summary if summary is not None else closest
    saved = (None if rec_t is None or rec_t.monthly_usd is None or t.monthly_usd is None
             else rec_t.monthly_usd - t.monthly_usd)
    overrides = tuple(o for s in steps for o in s.overrides)
    cost = None
    if summary is not None:
        base = rec_t if rec_t is not None else t
        cost = _cost(summary, base, t, steps, duration_s)
    pacing = next((s.value for s in steps if s.overrides and ".pacing=" in s.overrides[0]),
                  None)
    cached = next((s.value for s in steps if s.overrides and ".cache=" in s.overrides[0]),
                  None)
    return TierAdvice(tier=tier.name, monthly_usd=t.monthly_usd, saved_usd_per_month=saved,
                      status=status, change=tuple(s.words for s in steps),
                      overrides=overrides,
                      snippet=toml_snippet(text, overrides) if overrides else "",
                      verified=verified, cost=cost, reason=reason, pacing_cu_per_s=pacing,
                      tried=tried, cu_per_window=t.cu_per_window,
                      shortfall_before=_finite(shortfall(t, slo)) if slo else None,
                      shortfall_after=(_finite(shortfall(after, slo))
                                       if slo and after is not None else None),
                      cache_share=cached)


def _finite(x: float) -> float | None:
    return None if math.isinf(x) or math.isnan(x) else x


def _cost(t: TierSummary, base: TierSummary, same_tier: TierSummary, steps,
          duration_s: float) -> ClientCost:
    """``t`` (the change on its tier) against ``base`` (the recommended tier as the
    scenario stands); the requests cached are counted against ``same_tier`` (this tier
    as it stands), whose demand differs only by them."""
    def diff(a, b):
        return None if a is None or b is None else a - b
    caches = any(".cache=" in o for s in steps for o in s.overrides)
    dropped = (max(0.0, 1.0 - t.requests / same_tier.requests)
               if caches and same_tier.requests else 0.0)
    return ClientCost(added_p50_ms=diff(t.latency_ms.p50, base.latency_ms.p50),
                      added_p99_ms=diff(t.latency_ms.p99, base.latency_ms.p99),
                      failure_rate=t.failure_rate,
                      added_failure_rate=t.failure_rate - base.failure_rate,
                      dropped_share=dropped,
                      cu_per_day=cu_per_day(t, duration_s),
                      base_cu_per_day=cu_per_day(base, duration_s))
