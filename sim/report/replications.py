"""The "Across replications" section of ``report.md`` and the lines ``capsim run`` prints
for ``--replications N`` (N > 1), from the summary's ``replications`` section
(:mod:`sim.results.replications`). Nothing for a run of one replication."""

from __future__ import annotations

from ..results.replications import IntervalFigure, ProportionFigure, ReplicationsSummary
from ..results.summary import RunSummary

_LISTED = 20  # replications named one by one in the report up to this many


def _share(p: ProportionFigure, noun: str = "") -> str:
    """``9 of 10 replications (95 % interval 60–98 %)``."""
    return (f"{p.count} of {p.n}{' ' + noun if noun else ''} "
            f"(95 % interval {100 * p.low:.0f}–{100 * p.high:.0f} %)")


def _rate(iv: IntervalFigure) -> str:
    if iv.mean is None:
        return "–"
    text = f"{100 * iv.mean:.2f} %"
    return text if iv.half_width is None else f"{text} ± {100 * iv.half_width:.2f}"


def _num(iv: IntervalFigure, nd: int = 0) -> str:
    if iv.mean is None:
        return "–"
    text = f"{iv.mean:,.{nd}f}"
    return text if iv.half_width is None else f"{text} ± {iv.half_width:,.{nd}f}"


def held_line(rep: ReplicationsSummary) -> str:
    """How often replication 0's recommendation held, in words."""
    if rep.recommended is None:
        return ("no tier met the SLO in replication 0; no tier would be recommended in "
                f"{_share(rep.recommendation_held, 'replications')}")
    text = (f"recommended tier {rep.recommended} held in "
            f"{_share(rep.recommendation_held, 'replications')}")
    if rep.recommended_met_slo is not None:
        text += f"; it met the SLO in {_share(rep.recommended_met_slo)}"
    return text


def _by_tier(rep: ReplicationsSummary, listed: bool) -> list[str]:
    """Which tier each replication would recommend, grouped by tier."""
    groups: dict[str | None, list[int]] = {}
    for run in rep.runs:
        groups.setdefault(run.recommended, []).append(run.replication)
    parts = []
    for tier, runs in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[1][0])):
        which = f": {', '.join(map(str, runs))}" if listed else ""
        parts.append(f"{tier or 'no tier'} in {len(runs)}{which}")
    return parts


def stdout_lines(summary: RunSummary) -> list[str]:
    """What ``capsim run --replications N`` prints after the recommendation (none for N = 1)."""
    rep = summary.replications
    if rep is None:
        return []
    width = max(len(t.tier) for t in rep.tiers)
    lines = [f"across {rep.n} replications (95 % intervals; tables and records: "
             "replication 0):"]
    for t in rep.tiers:
        lasts = ("" if t.allowance_lasts_h.mean is None
                 else f", allowance lasts {_num(t.allowance_lasts_h, 1)} h")
        lines.append(f"  {t.tier:<{width}}  meets the SLO in {_share(t.slo_met)}; "
                     f"throttle {_rate(t.throttle_rate)}, failure {_rate(t.failure_rate)}, "
                     f"p99 {_num(t.p99_latency_ms)} ms{lasts}")
    lines.append(held_line(rep))
    lines.append("recommended per replication: " + "; ".join(_by_tier(rep, False))
                 + (f"; meeting the SLO in every replication: "
                    f"{rep.meeting_slo_in_every_replication or 'no tier'}"))
    return lines


def across_replications(summary: RunSummary) -> list[str]:
    """The "Across replications" section of ``report.md`` (none for one replication)."""
    rep = summary.replications
    if rep is None:
        return []
    lines = [
        "## Across replications", "",
        f"{rep.n} replications of this scenario: replication 0 is the run this report "
        f"describes (seed {summary.seed}); replication r > 0 runs at the seed "
        "`replication_seed(seed, r)`, the seed of `capsim sweep`'s replication r. Within a "
        "replication every tier replays the same demand. Means with 95 % Student-t "
        "intervals; shares of replications with 95 % Wilson intervals. The other sections, "
        "the plots and the Parquet records are replication 0's alone.", "",
        f"**{held_line(rep)[0].upper()}{held_line(rep)[1:]}.** The tier the same rule "
        "picks among the tiers meeting the SLO in every replication: "
        f"**{rep.meeting_slo_in_every_replication or 'no tier'}**.", "",
        "Tier each replication would recommend: "
        + "; ".join(_by_tier(rep, rep.n <= _LISTED)) + ".", "",
        "| tier | meets the SLO | throttle rate | failure rate | p99 ms | CU settled | "
        "peak window CU | allowance lasts (h) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for t in rep.tiers:
        lines.append(f"| {t.tier} | {_share(t.slo_met)} | {_rate(t.throttle_rate)} | "
                     f"{_rate(t.failure_rate)} | {_num(t.p99_latency_ms)} | "
                     f"{_num(t.cu_settled)} | {_num(t.cu_peak_window_used)} | "
                     f"{_num(t.allowance_lasts_h, 1)} |")
    lines += ["", "Peak window CU: the limiter's counter at its highest in the busiest "
              "12-second window. Allowance lasts: hours the daily allowance lasts at the "
              "run's rate (runs shorter than a day; – when it does not apply).", ""]
    return lines
