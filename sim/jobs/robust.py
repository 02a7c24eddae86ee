"""``capsim run --robust``: the recommendation across the prices' ranges.

Every tier is simulated again at the least costly prices (each ranged price at its low
end, :mod:`sim.config.price_ranges`) and at the most costly (each at its high end), on
the same demand (same seed); then each price alone at each end of its range, the others
at their estimates (a one-at-a-time sensitivity). The recommendation is *robust* when the
same tier is recommended at both ends and at the estimate.

Both ends are the corners of the box of ranges: for a calibrated set, which is jointly
narrower than its box, this is conservative (at least as wide as the data allow).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..config.price_ranges import with_prices
from ..config.resolved import LoadedScenario
from ..results.summary import PriceSensitivity, RunSummary


@dataclass(frozen=True)
class Robustness:
    """What :func:`evaluate` found."""

    ranges: dict[str, tuple[float, float, str]]
    estimate: str | None
    at_low: str | None
    at_high: str | None
    sensitivity: tuple[PriceSensitivity, ...]

    @property
    def robust(self) -> bool:
        """The same tier at the estimate and at both ends."""
        return self.estimate == self.at_low == self.at_high


def _recommended(loaded: LoadedScenario, values: dict[str, float], jobs: int) -> str | None:
    from ..runner.run import run

    priced = replace(loaded, pricing=with_prices(loaded.pricing, values))
    return run(priced, jobs=jobs, records="none").summary.recommended.tier


def evaluate(loaded: LoadedScenario, ranges: dict[str, tuple[float, float, str]],
             estimate: str | None, *, jobs: int = 1, one_at_a_time: bool = True,
             progress: Callable[[str], None] | None = None) -> Robustness:
    """The recommendation at both ends of ``ranges`` and for each price alone."""
    def step(what: str, values: dict[str, float]) -> str | None:
        if progress:
            progress(what)
        return _recommended(loaded, values, jobs)

    at_low = step("least costly prices", {k: lo for k, (lo, _hi, _s) in ranges.items()})
    at_high = step("most costly prices", {k: hi for k, (_lo, hi, _s) in ranges.items()})
    est = _flat(loaded)
    rows = []
    if one_at_a_time:
        for key, (lo, hi, source) in ranges.items():
            a = step(f"{key} low", {key: lo})
            b = step(f"{key} high", {key: hi})
            rows.append(PriceSensitivity(price=key, estimate=est.get(key, float("nan")),
                                         low=lo, high=hi, source=source, at_low=a,
                                         at_high=b, flips=not (a == b == estimate)))
    return Robustness(ranges, estimate, at_low, at_high, tuple(rows))


def _flat(loaded: LoadedScenario) -> dict[str, float]:
    from ..config.price_ranges import rangeable

    return rangeable(loaded.pricing)


def with_robustness(summary: RunSummary, rob: Robustness) -> RunSummary:
    """``summary`` with its recommendation's ``robust``, ``at_low_prices``,
    ``at_high_prices`` and ``sensitivity``."""
    rec = summary.recommended.model_copy(update={
        "robust": rob.robust, "at_low_prices": rob.at_low, "at_high_prices": rob.at_high,
        "sensitivity": rob.sensitivity})
    return summary.model_copy(update={"recommended": rec})
