"""A sweep's ``report.md``, self-contained ``report.html`` and plots, from ``sweep.json``.

Plots (base scenario): each headline metric against the first varied parameter, one
line per tier with its 95 % confidence band; with several varied parameters, one panel
per combination of the others. PNGs carry no software metadata, so reruns are
byte-stable.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..report import html  # noqa: E402
from ..report.colours import tier_colour  # noqa: E402
from ..results.decided import ASSUMPTION_NOTE, LABELS, legend  # noqa: E402
from .sweep_plan import BASE  # noqa: E402
from .sweep_results import IntervalFigure, SweepDocument, SweepPoint  # noqa: E402

PLOTTED = {
    "throttle_rate": ("throttle rate", "max_throttle_rate"),
    "failure_rate": ("failure rate", "max_failure_rate"),
    "p99_latency_ms": ("p99 latency (ms)", "p99_latency_ms"),
    "cu_settled": ("CU settled", None),
}
"""Metric -> (axis label, the SLO limit drawn as a dashed line, if any)."""


def _fmt_iv(iv: IntervalFigure, scale: float = 1.0, digits: int = 3, unit: str = "") -> str:
    from ..core.intervals import format_interval

    if iv.mean is None:
        return "–"
    hw = None if iv.half_width is None else iv.half_width * scale
    return format_interval(iv.mean * scale, hw, digits) + unit


def _values_label(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items()) or "(scenario as written)"


def _pp(iv: IntervalFigure) -> str:
    if iv.mean is None:
        return "–"
    hw = "" if iv.half_width is None else f" ± {iv.half_width * 100:.1f}"
    return f"{iv.mean * 100:+.1f} pp{hw}".replace("-", "−")


def _signed(iv: IntervalFigure, digits: str = ",.0f", unit: str = "") -> str:
    if iv.mean is None:
        return "–"
    hw = "" if iv.half_width is None else f" ± {iv.half_width:{digits}}"
    return f"{iv.mean:+{digits}}{unit}{hw}".replace("-", "−")


def point_line(p: SweepPoint) -> str:
    """A point's stdout line: the cheapest tier meeting the SLO; when no tier does, what
    decided each failing tier, with the labels of ``capsim run``'s table
    (``none (Streams fails: API; RPC fails: window (2/3), allowance*)``)."""
    label = ", ".join(f"{k}={v}" for k, v in p.values.items()) or "scenario"
    line = f"{label} [{p.variant}]: cheapest tier meeting the SLO: "
    if p.cheapest_meeting_slo is not None:
        return line + p.cheapest_meeting_slo
    failing = [f"{t.tier} fails" + (f": {t.decided_by}" if t.decided_by else "")
               for t in p.tiers if t.slo_met_fraction < 1]
    return line + "none" + (f" ({'; '.join(failing)})" if failing else "")


def decided_notes(doc: SweepDocument) -> list[str]:
    """The notes under the stdout lines of :func:`point_line`: each label the points
    where no tier meets the SLO use, and the assumption mark if one carries it."""
    cells = [t.decided_by for p in doc.points if p.cheapest_meeting_slo is None
             for t in p.tiers if t.decided_by]
    labels = [part.split(" (")[0] for cell in cells for part in cell.split(", ")]
    used = [c for c, text in LABELS.items() if any(lb.rstrip("*") == text for lb in labels)]
    if not used:
        return []
    lines = [f"SLO: what decided a failing tier: {legend(used)}."]
    if any(lb.endswith("*") for lb in labels):
        lines.append(f"*: {ASSUMPTION_NOTE}.")
    return lines


def difference_lines(doc: SweepDocument) -> list[str]:
    """One sentence per variant, point and tier: the throttle-rate difference first,
    then CU per day and the allowance's days; one per variant and point for the
    cheapest tier's price; a variant identical to the base by construction gets one
    sentence saying so instead."""
    lines = []
    identical = doc.identical_by_construction
    for variant, why in identical.items():
        lines.append(f"{variant}: identical to the base by construction ({why})")
    for d in doc.variant_differences:
        if d.variant in identical:
            continue
        where = _values_label(d.values) if doc.vary else ""
        p99 = d.p99_latency_ms
        p99_text = "–" if p99.mean is None else (
            f"{p99.mean:+.0f} ms" + ("" if p99.half_width is None
                                     else f" ± {p99.half_width:.0f}")).replace("-", "−")
        lines.append(f"{d.variant}{' (' + where + ')' if where else ''}: throttle rate "
                     f"{_pp(d.throttle_rate)}, failure rate {_pp(d.failure_rate)}, "
                     f"p99 {p99_text}, CU/day {_signed(d.cu_per_day)}, allowance "
                     f"{_signed(d.allowance_days, '.2f')} days on {d.tier}")
    for c in doc.cheapest_differences:
        if c.variant in identical or (c.tier is None and c.base_tier is None):
            continue
        where = _values_label(c.values) if doc.vary else ""
        lines.append(f"{c.variant}{' (' + where + ')' if where else ''}: cheapest tier "
                     f"meeting the SLO {c.tier or 'none'} against the base's "
                     f"{c.base_tier or 'none'}: {_signed(c.difference_usd, ',.0f')} $/month")
    return lines


def render_markdown(doc: SweepDocument, pngs: list[str]) -> str:
    """``report.md`` of a sweep."""
    n = doc.replications
    out = [f"# Sweep: {doc.scenario}", "",
           f"- scenario file: `{doc.scenario_file}`",
           f"- replications per point: {n} (95 % Student-t intervals; none with 1)",
           f"- tiers: {', '.join(doc.tiers)}"]
    for f in doc.vary:
        out.append(f"- varied: `{f.path}` = {', '.join(str(v) for v in f.values)}")
    if doc.variants:
        out.append(f"- variants: {', '.join(doc.variants)}")
    slo = doc.slo
    out += [f"- SLO: throttle rate ≤ {slo.max_throttle_rate:g}, failure rate ≤ "
            f"{slo.max_failure_rate:g}, p99 ≤ {slo.p99_latency_ms:g} ms"
            + (", daily allowance lasts ≥ 24 h at the run's rate (runs under a day)"
               if slo.allowance_must_last_day else ""), "",
            "## Cheapest tier meeting the SLO in every replication", "",
            "| point | variant | tier | $/month |", "|---|---|---|---:|"]
    for p in doc.points:
        usd = "–" if p.cheapest_monthly_usd is None else f"{p.cheapest_monthly_usd:,.0f}"
        out.append(f"| {_values_label(p.values)} | {p.variant} | "
                   f"{p.cheapest_meeting_slo or 'none'} | {usd} |")
    out += ["", "## Per point and tier (mean ± 95 % half-width)", "",
            "| point | variant | tier | throttle rate | failure rate | p99 ms | CU settled "
            "| CU/day | allowance days | SLO met | decided by |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in doc.points:
        for t in p.tiers:
            out.append(f"| {_values_label(p.values)} | {p.variant} | {t.tier} | "
                       f"{_fmt_iv(t.throttle_rate)} | {_fmt_iv(t.failure_rate)} | "
                       f"{_fmt_iv(t.p99_latency_ms, digits=4)} | "
                       f"{_fmt_iv(t.cu_settled, digits=6)} | "
                       f"{_fmt_iv(t.cu_per_day, digits=6)} | "
                       f"{_fmt_iv(t.allowance_days, digits=3)} | "
                       f"{t.slo_met_fraction:.0%} | {t.decided_by or ''} |")
    if any(t.decided_by for p in doc.points for t in p.tiers):
        out += ["", "Decided by: what made a tier fail its SLO, with how many replications "
                f"when not all: {legend()}. *: {ASSUMPTION_NOTE}."]
    if doc.variant_differences:
        out += ["", "## Variants against the base (paired differences, same seeds)", ""]
        out += [f"- {line}" for line in difference_lines(doc)]
    if pngs:
        out += ["", "## Plots", ""]
        out += [f"![{name[:-4]}]({name})" for name in pngs]
    return "\n".join(out) + "\n"


def write_plots(folder: Path, doc: SweepDocument) -> list[str]:
    """One PNG per plotted metric (base scenario); returns the file names."""
    base = [p for p in doc.points if p.variant == BASE]
    if not base:
        return []
    vary = doc.vary
    x_path = vary[0].path if vary else None
    xs = vary[0].values if vary else [0]
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in xs)
    others = [f.path for f in vary[1:]]
    combos = list(itertools.product(*(f.values for f in vary[1:]))) or [()]
    files = []
    for metric, (label, slo_key) in PLOTTED.items():
        fig, axes = plt.subplots(1, len(combos), figsize=(6 * len(combos), 4), squeeze=False)
        for ax, combo in zip(axes[0], combos, strict=True):
            fixed = dict(zip(others, combo, strict=True))
            pts = [p for p in base if all(p.values.get(k) == v for k, v in fixed.items())]
            for tier in doc.tiers:
                _line(ax, pts, tier, metric, x_path, xs, numeric)
            if slo_key is not None:
                ax.axhline(getattr(doc.slo, slo_key), color="black", ls="--", lw=1.0,
                           label="SLO")
            ax.set_xlabel(x_path or "")
            ax.set_ylabel(label)
            if fixed:
                ax.set_title(", ".join(f"{k}={v}" for k, v in fixed.items()), fontsize=9)
            if not numeric:
                ax.set_xticks(range(len(xs)), [str(v) for v in xs])
            ax.grid(alpha=0.3)
            ax.set_ylim(bottom=0)  # rates, latencies and CU are never negative
        axes[0][0].legend(fontsize=8)
        name = f"sweep_{metric}.png"
        fig.tight_layout()
        fig.savefig(folder / name, dpi=100, metadata={"Software": None})
        plt.close(fig)
        files.append(name)
    return files


def _line(ax, pts, tier, metric, x_path, xs, numeric) -> None:
    x, y, lo, hi = [], [], [], []
    for i, value in enumerate(xs):
        match = [p for p in pts if x_path is None or p.values.get(x_path) == value]
        if not match:
            continue
        iv = getattr(next(t for t in match[0].tiers if t.tier == tier), metric)
        if iv.mean is None:
            continue
        x.append(value if numeric else i)
        y.append(iv.mean)
        hw = iv.half_width or 0.0
        lo.append(max(iv.mean - hw, 0.0))  # every plotted metric is a rate, ms or CU: >= 0
        hi.append(iv.mean + hw)
    if not x:
        return
    colour = tier_colour(tier)  # the tier's colour in every plot of every report
    ax.plot(x, y, marker="o", label=tier, color=colour)
    ax.fill_between(x, lo, hi, color=colour, alpha=0.2, linewidth=0)


def render_html(markdown: str, folder: Path) -> str:
    """``report.html``: the Markdown with the plots embedded (one self-contained file)."""
    return html.render(markdown, folder)
