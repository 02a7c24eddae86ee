"""The comparison's headline in the bill's terms: CU per day and dollars per month.

    +$0/month: recommended tier unchanged (RPC, $49/month); +6.3 % CU per day
        (allowance lasts 21.4 h instead of 22.8 h)
    +$40/month: recommended tier RPC → Streams + RPC; +6.3 % CU per day (allowance lasts …)

The CU figures are those of the tier the baseline recommends (the one the team is on:
its allowance running short is what moves the recommendation), else the run's
recommended tier, else the first tier both sides have; demand is the same on every
tier, only throttling makes the tiers differ. The change in dollars leads, because it is
what the bill shows first: ``+$0/month`` when the recommended tier stays (the CU change
then says how close the next tier is); without a price, the CU figures lead.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from .baseline import Baseline, TierFigures
from .compare import Comparison


def _usd(value: float) -> str:
    return f"${value:,.2f}".replace(".00", "")


def _percent(fraction: float) -> str:
    """``+6.3`` for 0.0625: half away from zero, as a reader rounds (not the float's
    half-to-even, which prints 6.25 as 6.2)."""
    d = Decimal(repr(fraction * 100)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
    return f"{d:+}" if d else "0.0"


def _tiers(base: Baseline, now: Baseline) -> tuple[TierFigures, TierFigures] | None:
    """The tier whose CU the headline quotes, on both sides."""
    names = [base.recommended.tier, now.recommended.tier, *(t.tier for t in base.tiers)]
    for name in names:
        if name is not None and base.tier(name) is not None and now.tier(name) is not None:
            return base.tier(name), now.tier(name)
    return None


def _mean(tier: TierFigures, metric: str) -> float | None:
    fig = tier.metrics.get(metric)
    return fig.mean if fig is not None else None


def cu_phrase(base: Baseline, now: Baseline) -> str:
    """``+6.3 % CU per day (allowance lasts 21.4 h instead of 22.8 h)``."""
    pair = _tiers(base, now)
    if pair is None:
        return "CU per day: no tier in common"
    tb, tn = pair
    a, b = _mean(tb, "cu_per_day"), _mean(tn, "cu_per_day")
    if a is None or b is None:
        text = "CU per day not recorded in the baseline" if a is None else "no CU charged"
    elif a == 0:
        text = "CU per day unchanged (none)" if b == 0 else f"CU per day 0 → {b:,.0f}"
    else:
        pct = _percent(b / a - 1)
        text = "CU per day unchanged" if pct == "0.0" else f"{pct} % CU per day"
    la, lb = _mean(tb, "allowance_lasts_h"), _mean(tn, "allowance_lasts_h")
    if lb is not None:
        if la is None or f"{la:.1f}" == f"{lb:.1f}":
            text += f" (allowance lasts {lb:,.1f} h)"
        else:
            text += f" (allowance lasts {lb:,.1f} h instead of {la:,.1f} h)"
    return text


def _price(side: Baseline, name: str | None) -> float | None:
    tier = side.tier(name) if name is not None else None
    return tier.monthly_usd if tier is not None else None


def tier_phrase(base: Baseline, now: Baseline) -> tuple[str, bool]:
    """The recommended tier and its price, and whether the phrase leads the headline
    (it carries a change in dollars: ``+$0/month`` when the tier stays)."""
    a, b = base.recommended.tier, now.recommended.tier
    pa, pb = _price(base, a), _price(now, b)
    if pb is None and b is not None:
        pb = _price(base, b)
    if a == b:
        if b is None:
            return "no tier meets the SLO (unchanged)", False
        if pb is None:
            return f"recommended tier unchanged: {b}", False
        return f"+$0/month: recommended tier unchanged ({b}, {_usd(pb)}/month)", True
    if b is None:
        return (f"no tier meets the SLO any more (was {a}"
                + (f", {_usd(pa)}/month" if pa is not None else "") + ")"), True
    if a is None:
        return (f"recommended tier: none → {b}"
                + (f", {_usd(pb)}/month" if pb is not None else "")), True
    if pa is None or pb is None:
        return f"recommended tier {a} → {b}", True
    delta = pb - pa
    sign = "+" if delta >= 0 else "-"
    return f"{sign}{_usd(abs(delta))}/month: recommended tier {a} → {b}", True


def bill_headline(cmp: Comparison) -> str:
    """One line, the CU and dollar change first (see the module docstring)."""
    cu = cu_phrase(cmp.base, cmp.now)
    tier, leads = tier_phrase(cmp.base, cmp.now)
    return f"{tier}; {cu}" if leads else f"{cu}; {tier}"


def icon(cmp: Comparison) -> str:
    """❌ with a regression, ✅ without."""
    return "❌" if cmp.regressions else "✅"
