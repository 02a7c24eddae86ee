"""The words of ``capsim run --robust``'s verdict: the report's "How sure" section and
the one line stdout prints. Read off the summary's recommendation alone."""

from __future__ import annotations

from ..results.summary import Recommendation, RunSummary

ALLOWANCE_DIRECTION = ("The least costly prices take every cost at its low end and every "
                       "daily allowance at its high end (a larger allowance leaves more "
                       "room: it is the less costly end); the most costly, the other way "
                       "round.")


def _names(keys: tuple[str, ...] | list[str], most: int = 3) -> str:
    shown = ", ".join(keys[:most])
    return shown + (f" and {len(keys) - most} more" if len(keys) > most else "")


def flipped(rec: Recommendation) -> list[str]:
    """The prices whose range alone changes the recommendation."""
    return [r.price for r in rec.sensitivity or () if r.flips]


def verdict_line(rec: Recommendation) -> str:
    """stdout's verdict: "robust", or "NOT robust" and why, in a few words."""
    if rec.robust:
        return "robust (every price this traffic pays was varied)"
    why = []
    if flips := flipped(rec):
        why.append(f"flips with {_names(flips)}")
    elif not (rec.tier == rec.at_low_prices == rec.at_high_prices):
        why.append("changes with the prices at their range ends together")
    if rec.used_not_varied:
        why.append(f"not varied: {_names(rec.used_not_varied)}")
    return "NOT robust: " + "; ".join(why) + " (see 'How sure' in the report)"


def how_sure(summary: RunSummary) -> list[str]:
    """The "How sure" section (``capsim run --robust``): the recommendation at the least
    and the most costly prices of the ranges, each price alone, the prices the traffic
    pays that were not varied and the ones it never pays."""
    rec = summary.recommended
    if rec.robust is None:
        return []

    def name(t: str | None) -> str:
        return f"**{t}**" if t else "**no tier**"

    corners = (f"At the least costly prices of the ranges {name(rec.at_low_prices)}, at "
               f"the estimates {name(rec.tier)}, at the most costly "
               f"{name(rec.at_high_prices)}: ")
    not_varied = tuple(rec.used_not_varied or ())
    if rec.robust:
        verdict = ("the recommendation is **robust**: every price this traffic pays was "
                   "varied across its range and none changes it.")
    else:
        why = []
        if flips := flipped(rec):
            why.append("it flips with " + ", ".join(f"`{k}`" for k in flips))
        elif not (rec.tier == rec.at_low_prices == rec.at_high_prices):
            why.append("it changes with the prices at their range ends together (no "
                       "price alone changes it)")
        if not_varied:
            why.append("prices this traffic pays were not varied: "
                       + ", ".join(f"`{k}`" for k in not_varied)
                       + " (no range: set by the scenario without a `[price_ranges]` "
                       "entry, or left unbounded by the calibration; give them one)")
        verdict = "the recommendation is **not robust**: " + "; ".join(why) + "."
    lines = ["## How sure", "", corners + verdict, "", ALLOWANCE_DIRECTION, ""]
    estimates = {p.name: p.value for p in summary.assumptions.pricing}
    rows = [f"| `{r.price}` | {r.estimate:.6g} | {r.low:.6g} – {r.high:.6g} | {r.source} | "
            f"{r.at_low or 'none'} | {r.at_high or 'none'} | "
            f"{'**yes**' if r.flips else 'no'} |" for r in rec.sensitivity or ()]
    for keys, what in ((not_varied, "**not varied** (no range)"),
                       (rec.used_unbilled or (), "unbilled (0 CU), not varied"),
                       (rec.not_used or (), "not used by this traffic")):
        rows += [f"| `{k}` | {_value(estimates.get(k))} | – | {what} | – | – | – |"
                 for k in keys]
    if rows:
        lines += ["Each price alone across its range, the others at their estimates; then "
                  "the prices this traffic pays that no range varied, and the ones it never "
                  "pays (not simulated, never evidence):", "",
                  "| price | estimate | range | from | tier at low | tier at high | flips |",
                  "|---|---:|---|---|---|---|---|", *rows, ""]
    if flipped(rec) or not_varied:
        lines += ["The prices that flip the recommendation, and the ones not varied, are the "
                  "ones to pin down: calibrate them on your own logs (`capsim calibrate`; "
                  "docs/explanation/calibration.md says which logs narrow which price), then "
                  "rerun with `--calibration`. Until then, plan for the tier at the most "
                  "costly prices if throttling is the risk you cannot take.", ""]
    return lines


def _value(v) -> str:
    return f"{v:.6g}" if isinstance(v, int | float) and not isinstance(v, bool) else "–"
