"""Noise-aware comparison of two baselines, tier by tier and metric by metric.

A metric's change counts (a *regression* when it moved the worse way, else an
*improvement*) only when it is outside the tolerance (absolute: ``|now - base| > tol``;
relative: ``|now - base| > tol · |base|``) **and** the two 95 % intervals do not overlap.
With one replication on both sides there is no interval, so only the tolerance
applies; with replications a noisy metric stays "unchanged" however far its means
wander inside the noise. A value that appears or disappears (a latency with no
successful request) is reported, never judged, unless it means "never" (the daily
allowance's run-out time): then "never → ran out" in every replication is a regression.

The recommended tier is compared per run: a more expensive recommendation (or none) is a
regression, a cheaper one an improvement; with replications only when both sides'
replications agree among themselves. Its monthly price is a check of its own
(``recommended_monthly_usd``, absolute tolerance in dollars). CU per day is also
compared per method (``method_cu_per_day``: a method one side never called charged 0).
The inputs that differ (:mod:`.fingerprint`) are listed apart from the checks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from ..core.errors import CapsimError
from ..core.intervals import format_interval
from ..results.catalogue import METHOD_CU_PER_DAY, METRICS, RECOMMENDED_MONTHLY_USD, Metric
from .baseline import Baseline, Figure
from .fingerprint import input_changes

Verdict = Literal["regression", "improvement", "unchanged"]
RECOMMENDED = "recommended_tier"


@dataclass(frozen=True)
class Check:
    """One verdict: a tier's metric (or the run's recommended tier, ``tier`` None)."""

    tier: str | None
    metric: str
    label: str
    base: str
    now: str
    change: str
    tolerance: str
    verdict: Verdict
    note: str = ""

    @property
    def changed(self) -> bool:
        return self.verdict != "unchanged"


@dataclass(frozen=True)
class Comparison:
    """Every verdict of ``now`` against ``base``, with the notes the reader needs."""

    name: str
    base_label: str
    now_label: str
    base: Baseline
    now: Baseline
    checks: tuple[Check, ...]
    notes: tuple[str, ...]
    command: str = "check"  # the command that compared: check or compare (its reports say)
    inputs_changed: tuple[str, ...] = ()
    """One line per input that differs from the baseline's (:mod:`.fingerprint`)."""
    inputs_unknown: tuple[str, ...] = ()
    """Inputs the baseline did not record ("not recorded")."""

    @property
    def regressions(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.verdict == "regression")

    @property
    def improvements(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.verdict == "improvement")

    @property
    def changed(self) -> bool:
        """Anything regressed or improved."""
        return any(c.changed for c in self.checks)

    @property
    def exit_code(self) -> int:
        """0 when nothing regressed, 1 otherwise (improvements never fail)."""
        return 1 if self.regressions else 0

    def tiers(self) -> list[str]:
        """The tiers compared, in the baseline's order."""
        return list(dict.fromkeys(c.tier for c in self.checks if c.tier is not None))


def fmt(value: float | None, metric: Metric | None = None) -> str:
    """A figure for the reports (None as "never" or "–")."""
    if value is None:
        if metric is not None and metric.unit == "h":
            return "unlimited"  # no allowance, or nothing charged
        return "never" if metric is not None and metric.none_means == "never" else "–"
    if metric is not None and metric.name == "meets_slo":
        return {1.0: "yes", 0.0: "no"}.get(value, f"{value:.0%} of runs")
    if metric is not None and metric.unit == "rate":
        return f"{value:.4f}"
    if metric is not None and metric.unit == "s":
        return f"{value / 3600:.2f} h"
    if metric is not None and metric.unit == "h":
        return f"{value:,.1f} h"
    if metric is not None and metric.unit == "USD":
        return f"${value:,.2f}".replace(".00", "")
    return f"{value:,.6g}" if abs(value) < 1e6 else f"{value:,.0f}"


def _fmt_figure(fig: Figure | None, metric: Metric) -> str:
    if fig is None:
        return "(not recorded)"
    text = fmt(fig.mean, metric)
    if fig.mean is not None and fig.half_width and metric.name != "meets_slo":
        text += f" ± {_fmt_half(fig.half_width, metric)}"
    return text


def _fmt_half(half: float, metric: Metric) -> str:
    """A half-width to two significant digits (rates: as many decimals as the figure)."""
    if metric.unit == "rate":
        return f"{half:.4f}"
    if metric.unit == "s":
        return f"{half / 3600:.2f} h"
    # Never in exponent notation (a CU half-width of 1.2e+06 reads 1,200,000).
    text = format_interval(float(f"{half:.2g}"), digits=2)
    return "$" + text if metric.unit == "USD" else text


def _change(metric: Metric, a: float, b: float) -> str:
    delta = b - a
    if delta == 0:
        return "0"
    if metric.name == "meets_slo":
        if 0 < abs(delta) < 1:
            return f"{delta:+.0%} of runs"
        return "lost" if delta < 0 else "gained"
    if metric.kind == "relative":
        if a == 0:
            return "0" if delta == 0 else f"{delta:+,.6g}"
        return f"{delta / abs(a):+.1%}"
    if metric.unit == "s":
        return f"{delta / 3600:+.2f} h"
    return f"{delta:+.4f}" if metric.unit == "rate" else f"{delta:+,.6g}"


def judge(metric: Metric, a: Figure, reps_a: int, b: Figure, reps_b: int,
          tolerance: float) -> tuple[Verdict, str, str]:
    """``(verdict, change, note)`` of one metric moving from ``a`` to ``b``."""
    if a.mean is None or b.mean is None:
        if a.mean is None and b.mean is None:
            return "unchanged", "", ""
        if metric.none_means != "never":
            return "unchanged", "n/a", "defined on one side only"
        # "never" is the best end for a lower-is-worse time.
        all_a = a.n == reps_a or a.n == 0
        all_b = b.n == reps_b or b.n == 0
        if not (all_a and all_b):
            return "unchanged", "n/a", "within noise: not every replication agrees"
        return ("regression" if a.mean is None else "improvement"), "n/a", ""
    delta = b.mean - a.mean
    change = _change(metric, a.mean, b.mean)
    limit = tolerance * abs(a.mean) if metric.kind == "relative" else tolerance
    # Rounded figures: a difference within a rounding step is no change.
    if abs(delta) <= limit or math.isclose(a.mean, b.mean, rel_tol=1e-9, abs_tol=1e-12):
        return "unchanged", change, ""
    if a.interval().overlaps(b.interval()):
        return "unchanged", change, "within noise: intervals overlap"
    worse = delta > 0 if metric.worse == "higher" else delta < 0
    return ("regression" if worse else "improvement"), change, ""


def _rank(name: str | None, base: Baseline, now: Baseline) -> tuple[float, float]:
    """Price order of a recommendation: cheaper first, no tier last."""
    if name is None:
        return (math.inf, math.inf)
    t = now.tier(name) or base.tier(name)
    if t is None:
        return (math.inf, 0.0)
    return (t.monthly_usd if t.monthly_usd is not None else 0.0, t.cu_per_window)


def _recommendation(base: Baseline, now: Baseline) -> Check:
    a, b = base.recommended, now.recommended
    label = "recommended tier"
    shown = (a.tier or "none", b.tier or "none")
    if a.tier == b.tier:
        return Check(None, RECOMMENDED, label, *shown, "", "same tier", "unchanged")
    if not (a.unanimous and b.unanimous):
        return Check(None, RECOMMENDED, label, *shown, "changed", "same tier", "unchanged",
                     "within noise: replications disagree")
    ra, rb = _rank(a.tier, base, now), _rank(b.tier, base, now)
    verdict: Verdict = "regression" if rb > ra else "improvement" if rb < ra else "unchanged"
    return Check(None, RECOMMENDED, label, *shown, "changed", "same tier", verdict,
                 "" if verdict != "unchanged" else "same price")


def _price(base: Baseline, now: Baseline, name: str | None) -> float | None:
    t = (now.tier(name) or base.tier(name)) if name is not None else None
    return t.monthly_usd if t is not None else None


def _recommended_price(base: Baseline, now: Baseline, tolerance: float) -> Check:
    """The recommended tier's monthly price (no tier: no price; losing it a regression)."""
    m = RECOMMENDED_MONTHLY_USD
    a, b = _price(base, base, base.recommended.tier), _price(base, now, now.recommended.tier)
    shown = (m.name, m.label, fmt(a, m), fmt(b, m))
    tol = m.describe_tolerance(tolerance)
    if a is None and b is None:
        return Check(None, *shown, "", tol, "unchanged")
    if a is None or b is None:
        if b is None:
            return Check(None, *shown, "n/a", tol, "regression", "no tier meets the SLO")
        return Check(None, *shown, "n/a", tol, "improvement")
    change = _usd_change(a, b)
    if a != b and not (base.recommended.unanimous and now.recommended.unanimous):
        return Check(None, *shown, change, tol, "unchanged",
                     "within noise: replications disagree")
    verdict, _, note = judge(m, Figure(mean=a, n=1), 1, Figure(mean=b, n=1), 1, tolerance)
    return Check(None, *shown, change, tol, verdict, note)


def _one_sided(tier: str, m: Metric, fa: Figure | None, fb: Figure | None,
               tol: str) -> Check:
    """A metric one side lacks, said as it is: a new metric the baseline was saved
    before (``capsim baseline update`` records it), or one the new side no longer has."""
    if fa is None and fb is None:
        return Check(tier, m.name, m.label, _NOT_IN_BASELINE, _NOT_NOW, "n/a", tol,
                     "unchanged", "in neither side")
    if fa is None:
        return Check(tier, m.name, m.label, _NOT_IN_BASELINE, _fmt_figure(fb, m), "n/a",
                     tol, "unchanged", "new metric")
    return Check(tier, m.name, m.label, _fmt_figure(fa, m), _NOT_NOW, "n/a", tol,
                 "unchanged", "no longer recorded")


_NOT_IN_BASELINE = "(not in the baseline)"
_NOT_NOW = "(not recorded)"


def _usd_change(a: float, b: float) -> str:
    d = b - a
    return "0" if d == 0 else f"{'+' if d > 0 else '-'}${abs(d):,.2f}".replace(".00", "")


def _method_checks(tier: str, base: Baseline, now: Baseline, fa: dict[str, Figure],
                   fb: dict[str, Figure], tolerance: float) -> list[Check]:
    """CU per day of each method either side called (a method not called charged 0)."""
    m = METHOD_CU_PER_DAY
    out = []
    for method in sorted(set(fa) | set(fb)):
        a = fa.get(method) or _zero(base.replications)
        b = fb.get(method) or _zero(now.replications)
        verdict, change, note = judge(m, a, base.replications, b, now.replications, tolerance)
        out.append(Check(tier, f"{m.name}.{method}", f"{m.label}: {method}",
                         _fmt_figure(a, m), _fmt_figure(b, m), change,
                         m.describe_tolerance(tolerance), verdict, note))
    return out


def _zero(replications: int) -> Figure:
    return Figure(mean=0.0, half_width=0.0 if replications > 1 else None, n=replications)


def compare(base: Baseline, now: Baseline, tolerances: dict[str, float], *,
            base_label: str = "baseline", now_label: str = "now",
            command: str = "check") -> Comparison:
    """Compare ``now`` with ``base``; a :class:`CapsimError` if they are of different
    scenarios (names differ), or if no tier can be compared (a side without tiers, or no
    tier in common): a gate that compares nothing must not pass."""
    if base.scenario != now.scenario:
        raise CapsimError(f"the baseline is of scenario {base.scenario!r}, not "
                          f"{now.scenario!r} (another scenario: pass its own baseline)",
                          file=base_label)
    for side, label in ((base, base_label), (now, now_label)):
        if not side.tiers:
            raise CapsimError("has no tiers, so there is nothing to compare (a gate that "
                              "compares nothing would pass anything); save it again with "
                              "`capsim baseline save`", file=label, field="tiers")
    if not any(now.tier(t.tier) is not None for t in base.tiers):
        raise CapsimError(f"no tier in common with {now_label} (baseline: "
                          f"{', '.join(t.tier for t in base.tiers)}; now: "
                          f"{', '.join(t.tier for t in now.tiers)}), so there is nothing "
                          "to compare", file=base_label, field="tiers")
    checks = [_recommendation(base, now),
              _recommended_price(base, now, tolerances.get(RECOMMENDED_MONTHLY_USD.name,
                                                           RECOMMENDED_MONTHLY_USD.tolerance))]
    changed_inputs, unknown_inputs = input_changes(base, now)
    notes = []
    if base.replications > 1 or now.replications > 1:
        notes.append(f"replications: {base.replications} → {now.replications} "
                     "(a change counts only outside the tolerance and the 95 % intervals)")
    only_base = [t.tier for t in base.tiers if now.tier(t.tier) is None]
    only_now = [t.tier for t in now.tiers if base.tier(t.tier) is None]
    if only_base:
        notes.append(f"tiers in the baseline only (not compared): {', '.join(only_base)}")
    if only_now:
        notes.append(f"tiers new since the baseline (not compared): {', '.join(only_now)}")
    for tb in base.tiers:
        tn = now.tier(tb.tier)
        if tn is None:
            continue
        for m in METRICS:
            fa, fb = tb.metrics.get(m.name), tn.metrics.get(m.name)
            tol = tolerances.get(m.name, m.tolerance)
            if fa is None or fb is None:
                checks.append(_one_sided(tb.tier, m, fa, fb, m.describe_tolerance(tol)))
                continue
            verdict, change, note = judge(m, fa, base.replications, fb, now.replications, tol)
            checks.append(Check(tb.tier, m.name, m.label, _fmt_figure(fa, m),
                                _fmt_figure(fb, m), change, m.describe_tolerance(tol),
                                verdict, note))
        if tb.cu_per_day_by_method is not None and tn.cu_per_day_by_method is not None:
            checks += _method_checks(tb.tier, base, now, tb.cu_per_day_by_method,
                                     tn.cu_per_day_by_method,
                                     tolerances.get(METHOD_CU_PER_DAY.name,
                                                    METHOD_CU_PER_DAY.tolerance))
    if any(t.cu_per_day_by_method is None for t in base.tiers) and \
            all(t.cu_per_day_by_method is not None for t in now.tiers):
        notes.append("CU per day per method: not recorded in the baseline "
                              "(`capsim baseline update` records it)")
    return Comparison(base.scenario, base_label, now_label, base, now, tuple(checks),
                      tuple(notes), command, tuple(changed_inputs), tuple(unknown_inputs))
