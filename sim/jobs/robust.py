"""``capsim run --robust``: the recommendation across the ranges of the prices the
traffic pays.

Only the prices the traffic actually pays are varied (:mod:`sim.config.used_prices`);
the others are listed as not used and never simulated. Every tier is simulated again
at the least costly prices (each varied price at its least costly end,
:func:`sim.config.price_ranges.costly_ends`: a cost's low end, the daily allowance's
high end) and at the most costly, on the same demand (same seed); then each price alone
at each end of its range, the others at their estimates (a one-at-a-time sensitivity).
A tier's allowance reaches only the runs that charge it: varying it alone reruns only
those tiers. A monthly price only ranks the tiers: varying it alone re-ranks the
estimate's tiers without simulating.

The recommendation is *robust* when every price the traffic pays was varied (a price
of 0, unbilled, needs no range) and the same tier is recommended at the estimate, at
both corners and at each end of each range.

Both corners are those of the box of ranges: for a calibrated set, which is jointly
narrower than its box, this is conservative (at least as wide as the data allow).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..config.price_ranges import (
    costly_ends,
    is_allowance,
    is_monthly,
    tier_of,
    with_prices,
)
from ..config.resolved import LoadedScenario
from ..config.used_prices import priced_in_run
from ..metrics.accounts import plan_price
from ..metrics.figures import recommend
from ..results.summary import PriceSensitivity, RunSummary, TierSummary


@dataclass(frozen=True)
class Robustness:
    """What :func:`evaluate` found."""

    ranges: dict[str, tuple[float, float, str]]
    estimate: str | None
    at_low: str | None
    at_high: str | None
    sensitivity: tuple[PriceSensitivity, ...]
    not_varied: tuple[str, ...] = ()
    unbilled: tuple[str, ...] = ()
    not_used: tuple[str, ...] = ()

    @property
    def flipped(self) -> tuple[str, ...]:
        """The prices whose range alone changes the recommendation."""
        return tuple(r.price for r in self.sensitivity if r.flips)

    @property
    def robust(self) -> bool:
        """Every used price varied, and the same tier at the estimate, at both corners
        and at each end of each range."""
        return (not self.not_varied and not self.flipped
                and self.estimate == self.at_low == self.at_high)


def split_prices(used: set[str], ranges: dict[str, tuple[float, float, str]],
                 known: dict[str, float]) -> tuple[dict[str, tuple[float, float, str]],
                                                   tuple[str, ...], tuple[str, ...],
                                                   tuple[str, ...]]:
    """``(varied, not_varied, unbilled, not_used)`` of the prices ``known`` (key to
    value): the ranges of the ``used`` prices; the used prices without a range and not 0
    (monthly prices excepted: they are varied only when a range is given); the used
    prices of 0 without a range; the prices the traffic never pays, and the ones a
    scenario or calibration ranged (monthly prices only when ranged)."""
    varied = {k: r for k, r in ranges.items() if k in used}
    bare = sorted(k for k in used if k not in ranges and not is_monthly(k))
    not_varied = tuple(k for k in bare if known.get(k, 0.0) != 0)
    unbilled = tuple(k for k in bare if known.get(k, 0.0) == 0)
    given = {k for k, (_lo, _hi, source) in ranges.items() if source != "default"}
    not_used = tuple(sorted(k for k in set(known) | given
                            if k not in used and (not is_monthly(k) or k in ranges)))
    return varied, not_varied, unbilled, not_used


def evaluate(loaded: LoadedScenario, summary: RunSummary,
             ranges: dict[str, tuple[float, float, str]], used: set[str], *,
             jobs: int = 1, one_at_a_time: bool = True,
             progress: Callable[[str], None] | None = None) -> Robustness:
    """The recommendation of ``summary`` (the run at the estimates) at both corners of
    the ranges of the ``used`` prices and for each used price alone."""
    known = priced_in_run(loaded)
    varied, not_varied, unbilled, not_used = split_prices(used, ranges, known)
    estimate = summary.recommended.tier

    def step(what: str, values: dict[str, float]) -> str | None:
        if progress:
            progress(what)
        return _recommended(loaded, summary, values, jobs)

    ends = {k: costly_ends(k, lo, hi) for k, (lo, hi, _s) in varied.items()}
    at_low = step("least costly prices", {k: e[0] for k, e in ends.items()})
    at_high = step("most costly prices", {k: e[1] for k, e in ends.items()})
    rows = []
    if one_at_a_time:
        for key, (lo, hi, source) in varied.items():
            est = known.get(key, float("nan"))
            a = estimate if lo == est else step(f"{key} low", {key: lo})
            b = estimate if hi == est else step(f"{key} high", {key: hi})
            rows.append(PriceSensitivity(price=key, estimate=est, low=lo, high=hi,
                                         source=source, at_low=a, at_high=b,
                                         flips=not (a == b == estimate)))
    return Robustness(varied, estimate, at_low, at_high, tuple(rows), not_varied, unbilled,
                      not_used)


def _recommended(loaded: LoadedScenario, summary: RunSummary, values: dict[str, float],
                 jobs: int) -> str | None:
    """The tier recommended at ``values`` (the other prices at their estimates): only
    the tiers whose runs the changed prices reach are simulated again, then all ranked."""
    if not values:
        return summary.recommended.tier
    priced = replace(loaded, pricing=with_prices(loaded.pricing, values))
    simulated = [k for k in values if not is_monthly(k)]
    tiers = list(summary.tiers)
    rerun = _tiers_reached(loaded, simulated)
    if rerun:
        from ..runner.run import run

        subset = replace(priced, tiers=tuple(t for t in loaded.tiers if t.name in rerun))
        with run(subset, jobs=jobs, records="none", keep_rows=False) as out:
            fresh = {t.tier: t for t in out.summary.tiers}
        tiers = [fresh.get(t.tier, t) for t in tiers]
    tiers = [_priced(t, priced) for t in tiers]
    return recommend(tiers).tier


def _tiers_reached(loaded: LoadedScenario, keys: list[str]) -> set[str]:
    """The studied tiers whose runs depend on the prices ``keys``: a tier's allowance
    reaches its own run, and every run when an account is fixed at that tier; any other
    price reaches every run."""
    everything = {t.name for t in loaded.tiers}
    fixed = {a.tier for a in loaded.scenario.account_list if a.tier is not None}
    out: set[str] = set()
    for key in keys:
        tier = tier_of(key) if is_allowance(key) else None
        if tier is None or tier in fixed:
            return everything
        out.add(tier)
    return out & everything


def _priced(t: TierSummary, loaded: LoadedScenario) -> TierSummary:
    """``t`` with the monthly prices of ``loaded``'s pricing (its own, and its plan's
    total of each account at its own tier's price)."""
    def price(name: str) -> float | None:
        p = loaded.pricing.tiers.get(name)
        return None if p is None else p.monthly_usd

    update: dict = {"monthly_usd": price(t.tier)}
    if t.plan is not None:
        update["plan"] = t.plan.model_copy(update={
            "monthly_usd": plan_price([price(a.tier) for a in t.plan.accounts])})
    return t.model_copy(update=update)


def with_robustness(summary: RunSummary, rob: Robustness) -> RunSummary:
    """``summary`` with its recommendation's ``robust``, ``at_low_prices``,
    ``at_high_prices``, ``sensitivity``, ``used_not_varied``, ``used_unbilled`` and
    ``not_used``."""
    rec = summary.recommended.model_copy(update={
        "robust": rob.robust, "at_low_prices": rob.at_low, "at_high_prices": rob.at_high,
        "sensitivity": rob.sensitivity, "used_not_varied": rob.not_varied,
        "used_unbilled": rob.unbilled, "not_used": rob.not_used})
    return summary.model_copy(update={"recommended": rec})
