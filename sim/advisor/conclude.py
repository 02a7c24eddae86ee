"""The advisor's answer per tier from its searches: the change that costs the client
least, verified on replications (common random numbers), else the best pair of the
closest changes, else the closest one and what it misses; and what the change costs the
client (:class:`~sim.advisor.result.ClientCost`)."""

from __future__ import annotations

import itertools
import math

from ..jobs.sweep_results import cu_per_day as _cu_per_day
from ..results.summary import SLO_CRITERIA, TierSummary
from .catalogue import Step
from .probe import Search, shortfall
from .result import FOUND, NONE, UNFINISHED, UNVERIFIED, ClientCost, TierAdvice
from .snippet import toml_snippet


def monthly_usd(t: TierSummary | None) -> float | None:
    """What ``t`` costs a month: its plan's price with several accounts (what the
    recommendation compares), else the tier's."""
    if t is None:
        return None
    return t.plan.monthly_usd if t.plan is not None else t.monthly_usd


def cu_per_day(t: TierSummary, duration_s: float) -> float:
    """CU the run charged, per day of its rate (the CI gate's figure)."""
    return _cu_per_day(t, duration_s) or 0.0


def conclude(runner, tier, t, rec_t, mine: list[Search], slo, replications, text,
              duration_s, say) -> TierAdvice:
    tried = len(mine)
    def client_cost(s: Search) -> tuple:
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
            return advice_of(tier, t, rec_t, slo=slo, status=FOUND, steps=[step], summary=first,
                           verified=f"{ok}/{of} replications meet the SLO", text=text,
                           duration_s=duration_s, tried=tried)
    if found:
        step, first = found[0].found
        ok, of = _verify(runner, tier, step.overrides, replications, first)
        return advice_of(tier, t, rec_t, slo=slo, status=UNVERIFIED, steps=[step], summary=first,
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
            mild, mild_got = _relax(runner, tier, [a, b], steps, got, say)
            mild_both = tuple(o for s in mild for o in s.overrides)
            ok, of = _verify(runner, tier, mild_both, replications, mild_got)
            if ok == of or mild_both == both:
                steps, both, got = mild, mild_both, mild_got
            else:  # the relaxed pair sits at the edge: the pair as first found
                ok, of = _verify(runner, tier, both, replications, got)
            return advice_of(tier, t, rec_t, slo=slo, status=FOUND if ok == of else UNVERIFIED,
                           steps=steps,
                           summary=got, verified=f"{ok}/{of} replications meet the SLO",
                           text=text, duration_s=duration_s, tried=tried)
    if unfinished:
        return advice_of(tier, t, rec_t, slo=slo, status=UNFINISHED, tried=tried,
                       reason=f"{len(unfinished)} of {tried} changes not searched to the "
                              "end; raise --budget")
    got = None
    if close:
        gap, step, got = close[0].closest
        reason = (f"the closest is {step.words}: {_misses(got, slo)}")
    else:
        reason = "nothing was tried"
    return advice_of(tier, t, rec_t, slo=slo, status=NONE, reason=reason, tried=tried,
                   closest=got)


def _relax(runner, tier, pair: list[Search], steps: list[Step], got: TierSummary, say
           ) -> tuple[list[Step], TierSummary]:
    """A meeting pair made milder: each continuous member in turn, the other as it is,
    bisected (geometrically, to the search's tolerance) between its setting in the pair
    and its mildest bound; the mildest setting that still meets is kept."""
    steps = list(steps)
    for k, s in enumerate(pair):
        if not s.change.continuous or s.closest_value is None:
            continue
        other = [o for j, st in enumerate(steps) if j != k for o in st.overrides]
        met, failed = s.closest_value, s.bounds[0]
        while failed / met > 1 + s.tolerance:
            x = math.sqrt(met * failed)
            step = s.change.step(x, s.budget_cu)
            out = runner.run([(tier.name, (*step.overrides, *other), 0)])[0]
            if out is None:
                return steps, got
            say(f"advise: {tier.name}: pair with {step.words}: "
                f"{'meets' if out.meets_slo else 'fails'}")
            if out.meets_slo:
                met, steps[k], got = x, step, out
            else:
                failed = x
    return steps, got


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


def advice_of(tier, t, rec_t, *, status, steps=(), summary=None, verified="", text="",
            duration_s=1.0, reason="", tried=0, slo=None, closest=None) -> TierAdvice:
    after = summary if summary is not None else closest
    price, rec_price = monthly_usd(t), monthly_usd(rec_t)
    saved = None if price is None or rec_price is None else rec_price - price
    overrides = tuple(o for s in steps for o in s.overrides)
    cost = None
    if summary is not None:
        base = rec_t if rec_t is not None else t
        cost = _cost(summary, base, t, steps, duration_s)
    pacing = next((s.value for s in steps if s.overrides and ".pacing=" in s.overrides[0]),
                  None)
    cached = next((s.value for s in steps if s.overrides and ".cache=" in s.overrides[0]),
                  None)
    return TierAdvice(tier=tier.name, monthly_usd=price, saved_usd_per_month=saved,
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
