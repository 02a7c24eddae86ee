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
   change is enough, the best pair of the closest ones is tried (:mod:`.conclude`).

A run is one tier simulated once; ``budget`` bounds them all. With ``store``, each
run's summary is kept as it finishes (``runs/<hash>.json``): the same call again runs
only what is missing (:mod:`.runs`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..core.errors import CapsimError
from ..core.limits import MAX_REPLICATIONS
from ..metrics.figures import recommend
from ..results.summary import TierSummary
from .catalogue import Change, catalogue
from .conclude import advice_of, conclude, cu_per_day, monthly_usd
from .probe import Search
from .result import NONE, SKIPPED, Advice, TierAdvice
from .runs import Runner

CUTS_CU = frozenset({"drop"})
"""The kinds of change that remove CU (the others move it in time or retry less)."""


def advise(scenario=None, *, tiers: list[str] = (), overrides: list[str] = (),
           replications: int = 3, budget: int = 400, tolerance: float = 0.02,
           executor=None, store: str | Path | None = None,
           progress: Callable[[str], None] | None = None,
           on_run: Callable[[int, int], None] | None = None) -> Advice:
    """The advice for ``scenario`` (a path, or None for the built-in default).

    ``tiers`` limits the tiers simulated (the recommended one among them);
    ``overrides`` are ``--set`` values applied to every run; ``replications`` (1 to
    1,000) verify a change found; ``budget`` bounds the model runs; ``executor`` is a
    :class:`sim.jobs.executors.Executor` (default: this process); ``store`` a folder
    keeping each run's summary, so that a second call resumes. ``progress(line)`` is
    told each setting tried; ``on_run(runs, budget)`` each model run spent."""
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
    runner = Runner(executor or SequentialExecutor(), text, label, tuple(overrides),
                     sc.seed, budget, Path(store) if store is not None else None, on_run)
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
    searches: list[Search] = []
    for tier in cheaper:
        t = by_name[tier.name]
        reason = _unreachable(t)
        if reason:
            answers[tier.name] = advice_of(tier, t, rec_t, slo=slo, status=SKIPPED, reason=reason)
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
            mine.append(Search(tier, c, tier.cu_per_window, tolerance))
        tier_skips[tier.name] = tuple(not_tried)
        if not mine:
            why = (f"the traffic charges {need_cu:,.0f} CU a day, more than its "
                   f"{allowance:,.0f} CU daily allowance, and no change in the catalogue "
                   "cuts CU" if short_allowance else
                   "its window never throttles, and nothing else it misses is a client "
                   "change of the catalogue")
            answers[tier.name] = advice_of(tier, t, rec_t, slo=slo, status=NONE, reason=why)
            continue
        searches.extend(mine)
    _search_all(runner, searches, slo, say)
    for tier in cheaper:
        if tier.name in answers:
            continue
        mine = [s for s in searches if s.tier.name == tier.name]
        answers[tier.name] = conclude(runner, tier, by_name[tier.name], rec_t, mine, slo,
                                       replications, text, sc.duration_s, say)
    answers = {k: _with_waits(replace(a, not_tried=tier_skips.get(k, ())), scenario,
                              list(overrides), tiers)
               for k, a in answers.items()}
    return Advice(scenario=sc.name, scenario_file=label, recommended=rec,
                  recommended_usd=monthly_usd(rec_t),
                  replications=replications, budget=budget, runs=runner.runs,
                  tiers=tuple(answers[t.name] for t in cheaper),
                  skipped_changes=tuple((s.title, s.reason) for s in skipped),
                  slo=slo.model_dump())


def _with_waits(a: TierAdvice, scenario, overrides: list[str], tiers) -> TierAdvice:
    """``a`` with the waits its pacing imposes on first attempts (:mod:`.delays`)."""
    if a.cost is None or a.pacing_cu_per_s is None:
        return a
    from ..api import load_scenario
    from .delays import paced_waits

    loaded = load_scenario(scenario, tiers=list(tiers), overrides=[*overrides, *a.overrides])
    waits = paced_waits(loaded)
    if waits is None or not waits.requests:
        return a
    cost = replace(a.cost, delayed_share=waits.delayed / waits.requests,
                   mean_delay_ms=waits.mean_wait_s * 1000.0)
    return replace(a, cost=cost)


def _cheaper(t: TierSummary, rec: TierSummary | None) -> bool:
    price, rec_price = monthly_usd(t), monthly_usd(rec)
    if t.meets_slo or price is None:
        return False
    if rec is None:
        return True
    return rec_price is not None and price < rec_price


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


def _search_all(runner: Runner, searches: list[Search], slo, say) -> None:
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


