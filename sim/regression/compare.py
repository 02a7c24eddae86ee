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
replications agree among themselves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from ..core.errors import CapsimError
from ..results.catalogue import METRICS, Metric
from .baseline import Baseline, Figure

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
        return "never" if metric is not None and metric.none_means == "never" else "–"
    if metric is not None and metric.name == "meets_slo":
        return {1.0: "yes", 0.0: "no"}.get(value, f"{value:.0%} of runs")
    if metric is not None and metric.unit == "rate":
        return f"{value:.4f}"
    if metric is not None and metric.unit == "s":
        return f"{value / 3600:.2f} h"
    if metric is not None and metric.unit == "USD":
        return f"${value:,.2f}".replace(".00", "")
    return f"{value:,.6g}" if abs(value) < 1e6 else f"{value:,.0f}"


def _fmt_figure(fig: Figure | None, metric: Metric) -> str:
    if fig is None:
        return "(no tier)"
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
    text = f"{float(f'{half:.2g}'):,.6g}"
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
    checks = [_recommendation(base, now)]
    notes = []
    if base.content_hash != now.content_hash:
        notes.append(f"the scenario changed since the baseline (content hash "
                     f"{base.content_hash} → {now.content_hash})")
    if base.capsim_version != now.capsim_version:
        notes.append(f"capsim {base.capsim_version} → {now.capsim_version}")
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
                checks.append(Check(tb.tier, m.name, m.label, _fmt_figure(fa, m),
                                    _fmt_figure(fb, m), "n/a", m.describe_tolerance(tol),
                                    "unchanged", "metric missing on one side"))
                continue
            verdict, change, note = judge(m, fa, base.replications, fb, now.replications, tol)
            checks.append(Check(tb.tier, m.name, m.label, _fmt_figure(fa, m),
                                _fmt_figure(fb, m), change, m.describe_tolerance(tol),
                                verdict, note))
    return Comparison(base.scenario, base_label, now_label, base, now, tuple(checks),
                      tuple(notes), command)
