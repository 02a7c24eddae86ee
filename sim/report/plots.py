"""Plots of a run, drawn with matplotlib's explicit API.

Each ``*_panel`` / axes function draws one tier (or one comparison) into an ``ax``; each
``*_figure`` function returns a whole :class:`~matplotlib.figure.Figure`, so tests can
read legends, colours and limits off the objects. :func:`write_all` saves them.

Rules every figure keeps, so a plot never says more or less than the data:

* an outcome has one colour everywhere (:data:`OUTCOME_COLOURS`), and a figure's legend
  lists every label drawn in any of its panels;
* marks (throttles, refused handshakes) sit in a strip above the data, never on it;
* time axes end at the run's end: a 12-second window cut by it is not drawn, and the
  last, shorter minute of a histogram is scaled to a rate;
* PNGs are written without software/version metadata, so reruns are byte-stable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # reports are files; never open a window
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from ..core.vocabulary import OUTCOMES, WINDOW_S, WS_435, WS_CU  # noqa: E402
from ..results import decided  # noqa: E402
from ..results.summary import (  # noqa: E402
    SLO_CRITERIA,
    RunSummary,
    SloSummary,
    TierSummary,
    p99_comparable,
)
from .colours import tier_colour  # noqa: E402

_PNG_META = {"Software": None}

#: One colour per outcome, the same in every panel and every figure.
OUTCOME_COLOURS = {
    "ok": "tab:green",
    "434": "tab:red",
    "-32005": "tab:orange",
    "402": "tab:brown",
    "401": "tab:pink",
    "oversized": "tab:olive",
    "421": "tab:gray",
    "430": "tab:blue",
    "435": "tab:cyan",
    "ws_cu_rejected": "tab:purple",
}
_UNKNOWN = "black"
_SLOT_OR_CU_REFUSALS = (OUTCOMES[WS_435], OUTCOMES[WS_CU])
"""Handshakes refused for want of a slot or of CU, marked on the websocket plot."""

#: Marks live in this band of the axes (axes fraction); data is kept below ``_DATA_TOP``.
_STRIP = (0.92, 0.98)
_DATA_TOP = 0.88


def _strip(ax, x: np.ndarray, colour: str, label: str) -> None:
    """A rug of short vertical marks at ``x`` in the strip above the data."""
    if len(x) == 0:
        return
    ax.vlines(x, *_STRIP, transform=ax.get_xaxis_transform(), colors=colour, lw=0.6,
              label=label)


def _headroom(ax, top: float) -> None:
    """Y from 0 to a top that keeps every value below the mark strip."""
    ax.set_ylim(0.0, max(top, 1e-9) / _DATA_TOP)


def _style(ax, title: str, ylabel: str) -> None:
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("simulated minutes", fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(labelsize=7)


def full_windows(windows: pd.DataFrame, duration_s: float) -> pd.DataFrame:
    """The windows that lie wholly inside the run (a window cut by its end is partial)."""
    return windows[windows["start_s"] + WINDOW_S <= duration_s + 1e-9]


def _stairs(ax, values: np.ndarray, edges: np.ndarray, **kw):
    """``ax.stairs(values, edges, **kw)`` without its cost per step.

    Adding a patch updates the data limits one path segment at a time in Python (seconds
    for a day of 12-second windows); here the step patch is made on the first step, given
    all of them, and the limits updated from its vertices at once, which are the points
    that walk visits, so the limits and the pixels are the same.
    """
    baseline = kw.pop("baseline", 0)
    array_baseline = baseline is not None and np.ndim(baseline) > 0
    patch = ax.stairs(values[:1], edges[:2], baseline=baseline[:1] if array_baseline
                      else baseline, **kw)
    if len(values) > 1:
        patch.set_data(values, edges, baseline if array_baseline else None)
        ax.update_datalim(patch.get_path().vertices)
        if array_baseline:  # what stairs sets from the lowest baseline
            patch.sticky_edges.y[:] = [np.min(baseline)]
            ax.update_datalim([(edges[0], np.min(baseline))])
    return patch


def cu_per_window(ax, windows: pd.DataFrame, tier: str, duration_s: float) -> None:
    """Reserved and settled CU per full 12-s window, the limit, and windows with throttles."""
    w = full_windows(windows[windows["tier"] == tier], duration_s)
    if w.empty:
        _style(ax, tier, "CU / 12 s")
        return
    edges = np.append(w["start_s"].to_numpy(), w["start_s"].iloc[-1] + WINDOW_S) / 60.0
    limit = float(w["limit_cu"].iloc[0])
    ax.axhline(limit, color="black", lw=1.0, ls="--", label="limit", zorder=1)
    _stairs(ax, w["reserved_cu"].to_numpy(), edges, baseline=None, lw=0.9, label="reserved",
              color="tab:orange", zorder=2)
    _stairs(ax, w["settled_cu"].to_numpy(), edges, baseline=None, lw=0.9, label="settled",
              color="tab:blue", zorder=3)
    hit = w["throttled"].to_numpy() > 0
    _strip(ax, (edges[:-1][hit] + edges[1:][hit]) / 2, "tab:red", "window with throttles")
    _headroom(ax, max(limit, float(w["reserved_cu"].max()), float(w["settled_cu"].max())))
    ax.set_xlim(0.0, duration_s / 60.0)
    _style(ax, tier, "CU / 12 s")


def _bars(ax, left: np.ndarray, width: np.ndarray, bottom: np.ndarray, height: np.ndarray,
          label: str, colour: str) -> None:
    """What ``ax.bar(left, height, width, bottom, align="edge", lw=0)`` draws, as one
    collection rather than a patch per bar.

    A day has 1,440 minutes a panel: a patch each made the outcomes figure cost minutes.
    The pixels, the data limits (sticky bottoms included) and the legend entry (a
    :class:`~matplotlib.container.BarContainer` of a bar-like patch) are the bars'.
    """
    right, top = left + width, bottom + height
    verts = np.stack([np.column_stack(c) for c in ((left, bottom), (right, bottom),
                                                    (right, top), (left, top),
                                                    (left, bottom))], axis=1)
    bars = PolyCollection(verts, closed=False, facecolors=colour, edgecolors="none",
                          linewidths=0, label="_nolegend_")
    bars.sticky_edges.y.extend(bottom.tolist())
    ax.add_collection(bars, autolim=True)
    handle = Rectangle((0.0, 0.0), 1.0, 1.0, facecolor=colour, linewidth=0, label="_nolegend_")
    ax.add_container(BarContainer([handle], label=label))


def outcomes_over_time(ax, attempts: pd.DataFrame, tier: str, duration_s: float,
                       bin_s: float = 60.0) -> None:
    """Attempts per minute by outcome, stacked, one fixed colour per outcome.

    ``attempts`` is one row per attempt, or already counted per minute (the run's
    ``minutes``: a ``count`` column, each row's ``t_send_s`` inside its minute)."""
    a = attempts[attempts["tier"] == tier]
    weights = a["count"].to_numpy() if "count" in a.columns else None
    end = max(float(a["t_send_s"].max()) if len(a) else 0.0, duration_s, bin_s)
    edges = np.arange(0.0, end, bin_s)
    edges = np.append(edges, end)
    per_min = 60.0 / np.diff(edges)  # the last bin may be shorter: count it as a rate
    bottom = np.zeros(len(edges) - 1)
    for outcome in a["outcome"].cat.categories:
        rows = (a["outcome"] == outcome).to_numpy()
        t = a.loc[rows, "t_send_s"].to_numpy()
        if len(t) == 0:
            continue
        rate = np.histogram(t, edges, weights=None if weights is None
                            else weights[rows])[0] * per_min
        _bars(ax, edges[:-1] / 60.0, np.diff(edges) / 60.0, bottom, rate, outcome,
              OUTCOME_COLOURS.get(outcome, _UNKNOWN))
        bottom += rate
    ax.set_xlim(0.0, end / 60.0)
    _style(ax, tier, "attempts / min")


def websocket_slots(ax, slots: pd.DataFrame, attempts: pd.DataFrame, tier: str,
                    duration_s: float) -> None:
    """Live and stale websocket slots against the cap; refused handshakes in a strip above."""
    s = slots[slots["tier"] == tier]
    top = 1.0
    if len(s):
        t = np.append(s["t"].to_numpy(), max(duration_s, float(s["t"].max()))) / 60.0
        live = s["live"].to_numpy()
        stale = s["stale"].to_numpy()
        cap = s["cap"].to_numpy()
        _stairs(ax, live, t, fill=True, color="tab:green", alpha=0.6, label="live slots", lw=0)
        _stairs(ax, live + stale, t, baseline=live, fill=True, color="tab:gray", alpha=0.6,
                  label="stale slots", lw=0)
        _stairs(ax, cap, t, baseline=None, color="black", ls="--", lw=1.0, label="cap")
        top = max(top, float(cap.max()), float((live + stale).max()))
    a = attempts[(attempts["tier"] == tier) & attempts["outcome"].isin(_SLOT_OR_CU_REFUSALS)]
    for outcome in _SLOT_OR_CU_REFUSALS:
        _strip(ax, a.loc[a["outcome"] == outcome, "t_send_s"].to_numpy() / 60.0,
               OUTCOME_COLOURS[outcome], f"handshake refused: {outcome}")
    _headroom(ax, top)
    ax.set_xlim(0.0, duration_s / 60.0)
    _style(ax, tier, "websocket slots")


def identical_groups(latencies: dict[str, np.ndarray]) -> list[tuple[list[str], np.ndarray]]:
    """Tiers grouped by identical latency samples (sorted), in first-seen order."""
    groups: dict[bytes, tuple[list[str], np.ndarray]] = {}
    for tier, lat in latencies.items():
        x = np.sort(np.asarray(lat, dtype=float))
        groups.setdefault(x.tobytes(), ([], x))[0].append(tier)
    return list(groups.values())


def latency_cdf(ax, latencies: dict[str, np.ndarray], p99_slo_ms: float | None = None,
                tail: bool = False) -> None:
    """Empirical CDF of end-to-end latency of successful requests, one line per distinct curve.

    Tiers whose latencies are identical share one line ("A, B (identical)"); tiers with no
    successful request get a legend entry saying so. ``tail`` zooms on the top 10 %. The
    p99 SLO is drawn as a point (SLO ms, 0.99): a tier meets it when its curve passes
    to the left of that point.
    """
    styles = ["-", "--", "-.", ":"]
    for i, (tiers, x) in enumerate(identical_groups(latencies)):
        if len(x) == 0:
            for tier in tiers:
                ax.add_line(Line2D([], [], ls="none", label=f"{tier}: no successful request"))
            continue
        label = tiers[0] if len(tiers) == 1 else ", ".join(tiers) + " (identical)"
        ax.plot(x, np.arange(1, len(x) + 1) / len(x), lw=1.2, ls=styles[(i // 10) % 4],
                color=tier_colour(tiers[0]), label=label)
    if p99_slo_ms is not None:
        ax.axvline(p99_slo_ms, color="black", ls="--", lw=0.8, zorder=1)
        ax.axhline(0.99, color="black", ls=":", lw=0.8, zorder=1)
        ax.plot([p99_slo_ms], [0.99], marker="D", color="black", ms=5, ls="none",
                label=f"p99 SLO: 99 % within {p99_slo_ms:,.0f} ms")
    ax.set_xscale("log")
    ax.set_xlabel("latency (ms, log scale), retries included", fontsize=8)
    ax.set_ylabel("fraction of successful requests", fontsize=8)
    ax.grid(True, which="both", lw=0.3)
    ax.tick_params(labelsize=7)
    if tail:
        ax.set_ylim(0.9, 1.0005)
        ax.set_title("tail: 90th percentile and above", fontsize=9)
    else:
        ax.set_ylim(0.0, 1.02)
        ax.set_title("all successful requests", fontsize=9)


def _percent(v: float, _pos=None) -> str:
    return "0" if v == 0 else f"{v * 100:g}%"


def _order(tiers: Sequence[TierSummary]) -> list[TierSummary]:
    """Tiers by monthly price, then budget: the order in which the recommendation looks."""
    return sorted(tiers, key=lambda t: (t.monthly_usd is None, t.monthly_usd or 0,
                                        t.cu_per_window))


_AXIS_LABELS = {"throttle_rate": "throttle rate", "failure_rate": "failure rate",
                "p99_latency": "p99 latency (ms)"}


def tier_comparison(axes, tiers: Sequence[TierSummary], slo: SloSummary,
                    recommended: str | None) -> None:
    """Throttle rate, failure rate and p99 latency per tier against each SLO limit, and
    (a fourth axes, if given) the hours the daily allowance lasts (:func:`allowance_panel`).

    ``axes`` are three or four axes sharing x. Tiers go left to right by monthly price (shown
    under each name); a bar is green within its SLO and red over it, so the recommended
    tier (highlighted) is the leftmost one with three green bars. A p99 over under half
    of a tier's requests (most failed) is grey, marked "not comparable": the latency of
    the few that succeeded says nothing of the tier.
    """
    tiers = _order(tiers)
    x = np.arange(len(tiers))
    for ax, criterion in zip(axes[:len(SLO_CRITERIA)], SLO_CRITERIA, strict=True):
        title, limit = _AXIS_LABELS[criterion.name], criterion.limit(slo)
        in_ms = criterion.limit_field.endswith("_ms")  # latency: a log axis in ms
        values = [criterion.read(t) for t in tiers]
        ok = [v is not None and v <= limit for v in values]
        # latency: None where the p99 covers under half of the requests (not comparable)
        fair = [not in_ms or p99_comparable(t.requests, t.request_outcomes.get("ok", 0))
                for t in tiers]
        heights = [0.0 if v is None else v for v in values]
        ax.bar(x, heights, 0.6, color=["tab:gray" if not f else "tab:green" if g else "tab:red"
                                       for g, f in zip(ok, fair, strict=True)])
        ax.axhline(limit, color="black", ls="--", lw=1.0)
        for xi, v, g, f, t in zip(x, values, ok, fair, tiers, strict=True):
            text = ("no successful\nrequest" if v is None else
                    f"{v:,.0f}\nnot comparable:\n{1 - t.failure_rate:.0%} of requests"
                    if not f else
                    f"{v:,.0f}" if in_ms else f"{v:.2%}" if v else "0")
            ax.annotate(text, (xi, 0), xytext=(0, 2), textcoords="offset points",
                        xycoords=("data", "axes fraction"), ha="center", va="bottom", fontsize=6,
                        color="dimgray" if not f else "darkgreen" if g else "darkred",
                        fontweight="bold")
        if in_ms:
            ax.set_yscale("log")
            ax.set_ylim(min([v for v in values if v] + [limit]) / 3,
                        max([v for v in values if v] + [limit]) * 3)
        else:
            # An SLO of 0 (no throttling at all) is legitimate; symlog needs linthresh > 0.
            ax.set_yscale("symlog", linthresh=(min(limit, 0.01) or 0.01) / 10)
            ax.set_ylim(0.0, 1.5)
            ax.yaxis.set_major_formatter(FuncFormatter(_percent))
        ax.set_ylabel(title, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.text(1.0, limit, f" SLO ≤ {limit:,.0f} ms" if in_ms else f" SLO ≤ {limit:.2%}",
                transform=ax.get_yaxis_transform(), va="center", fontsize=7)
        if recommended in [t.tier for t in tiers]:
            ri = [t.tier for t in tiers].index(recommended)
            ax.axvspan(ri - 0.45, ri + 0.45, color="gold", alpha=0.25, lw=0, zorder=0)
    names = [t.tier.replace(" ", "\n", 1) + "\n"
             + ("price ?" if t.monthly_usd is None else f"${t.monthly_usd:,.0f}/mo")
             + ("" if t.meets_slo or not t.decided_by
                else "\n" + decided.verdict(t).replace(", ", ",\n"))
             + ("\n★ recommended" if t.tier == recommended else "") for t in tiers]
    if len(axes) > len(SLO_CRITERIA):
        allowance_panel(axes[len(SLO_CRITERIA)], tiers, slo, recommended)
    axes[-1].set_xticks(x, names, fontsize=7)
    for label, t in zip(axes[-1].get_xticklabels(), tiers, strict=True):
        if t.tier == recommended:
            label.set_fontweight("bold")
    axes[-1].set_xlabel("tiers by monthly price; green: within the SLO, red: over it,\n"
                        "grey: a p99 over under half of the requests (not comparable), "
                        "dashed: the SLO limit;\nunder a failing tier, what decided it "
                        "(*: an assumed number)", fontsize=8)


def _allowance_hours(t: TierSummary) -> tuple[float | None, str]:
    """The hours a tier's daily allowance lasts (at the run's rate; or, when it ran out,
    the time of day it did) and the text over its bar."""
    h = decided.allowance_hours(t)
    if h is not None:
        return h, f"{h:,.1f} h"
    ran_out = t.daily_allowance.ran_out_at
    if ran_out is not None:
        clock = ran_out.split("T", 1)[1].removesuffix("Z")
        hh, mm, ss = (float(v) for v in clock.split(":")[:3])
        return hh + mm / 60 + ss / 3600, f"ran out\nat {clock[:5]}"
    return None, "no allowance" if t.daily_allowance.allowance_cu is None else "no CU\ncharged"


def allowance_panel(ax, tiers: Sequence[TierSummary], slo: SloSummary,
                    recommended: str | None) -> None:
    """Hours the daily allowance lasts per tier against 24 h, on a log axis: green when
    it lasts the day, red when not and the SLO requires it
    (``allowance_must_last_day``), blue when it does not. The allowance is an assumed
    number (sim/data/pricing.toml): the panel says so."""
    x = np.arange(len(tiers))
    cells = [_allowance_hours(t) for t in tiers]
    hours = [h for h, _ in cells]
    short = [h is not None and h < 24 for h in hours]
    colours = ["tab:blue" if not slo.allowance_must_last_day else
               "tab:red" if s else "tab:green" for s in short]
    ax.bar(x, [h or 0.0 for h in hours], 0.6, color=colours)
    ax.axhline(24.0, color="black", ls="--", lw=1.0)
    for xi, (_, text), s in zip(x, cells, short, strict=True):
        ax.annotate(text, (xi, 0), xytext=(0, 2), textcoords="offset points",
                    xycoords=("data", "axes fraction"), ha="center", va="bottom", fontsize=6,
                    color="darkred" if s and slo.allowance_must_last_day else "darkgreen",
                    fontweight="bold")
    known = [h for h in hours if h]
    ax.set_yscale("log")
    ax.set_ylim(min(known + [24.0]) / 3, max(known + [24.0]) * 3)
    ax.set_ylabel("daily allowance*\nlasts (h)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.text(1.0, 24.0, " SLO ≥ 24 h" if slo.allowance_must_last_day else " 24 h",
            transform=ax.get_yaxis_transform(), va="center", fontsize=7)
    ax.text(0.0, 1.02, "* an assumed number (not shown by the spec): hours it lasts at "
            "the run's rate", transform=ax.transAxes, fontsize=6, color="dimgray")
    if recommended in [t.tier for t in tiers]:
        ri = [t.tier for t in tiers].index(recommended)
        ax.axvspan(ri - 0.45, ri + 0.45, color="gold", alpha=0.25, lw=0, zorder=0)


def _grid(n: int):
    cols = min(3, max(n, 1))
    rows = max(1, math.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.6 * rows + 0.6), squeeze=False,
                             sharex=True, layout="constrained")
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def figure_legend(fig, axes, order: list[str] | None = None, **kw) -> None:
    """One legend for the figure with every label drawn in any of ``axes`` (first seen)."""
    seen: dict[str, object] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, handle)
    rank = {k: i for i, k in enumerate(order or [])}
    labels = sorted(seen, key=lambda k: rank.get(k, len(rank)))
    if labels:
        fig.legend([seen[k] for k in labels], labels, loc="outside lower center",
                   ncols=min(len(labels), 6), fontsize=7, **kw)


def cu_figure(windows: pd.DataFrame, names: list[str], duration_s: float):
    """``cu_per_window.png``: one panel per tier."""
    fig, axes = _grid(len(names))
    for ax, tier in zip(axes, names, strict=True):
        cu_per_window(ax, windows, tier, duration_s)
    fig.suptitle("CU per 12-second window: reserved, settled and the limit "
                 "(windows cut by the run's end are not drawn)", fontsize=10)
    figure_legend(fig, axes)
    return fig


def outcomes_figure(attempts: pd.DataFrame, names: list[str], duration_s: float):
    """``outcomes_over_time.png``: one panel per tier, one legend for all outcomes drawn."""
    fig, axes = _grid(len(names))
    for ax, tier in zip(axes, names, strict=True):
        outcomes_over_time(ax, attempts, tier, duration_s)
    fig.suptitle("Attempts per minute by outcome", fontsize=10)
    figure_legend(fig, axes, order=list(OUTCOME_COLOURS))
    return fig


def websocket_figure(slots: pd.DataFrame, attempts: pd.DataFrame,
                     tiers: Sequence[TierSummary], duration_s: float):
    """``websocket_slots.png`` for the tiers that have websocket slots, or None if none has."""
    drawn = [t.tier for t in tiers if t.ws_cap]
    if not drawn:
        return None
    fig, axes = _grid(len(drawn))
    for ax, tier in zip(axes, drawn, strict=True):
        websocket_slots(ax, slots, attempts, tier, duration_s)
    skipped = [t.tier for t in tiers if not t.ws_cap]
    fig.suptitle("Websocket slots: live, stale and the cap; refused handshakes marked above"
                 + ("\nnot drawn, no websocket slots in the tier: " + ", ".join(skipped)
                    if skipped else ""), fontsize=10)
    figure_legend(fig, axes)
    return fig


def latency_figure(latencies: dict[str, np.ndarray], p99_slo_ms: float | None):
    """``latency_cdf.png``: the whole CDF and its tail, the p99 SLO marked on both."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), layout="constrained")
    for ax, tail in zip(axes, (False, True), strict=True):
        latency_cdf(ax, latencies, p99_slo_ms, tail=tail)
    fig.suptitle("End-to-end latency of successful requests", fontsize=10)
    figure_legend(fig, axes)
    return fig


def comparison_figure(tiers: Sequence[TierSummary], slo: SloSummary, recommended: str | None):
    """``tier_comparison.png``: each SLO criterion per tier, by price, the hours the daily
    allowance lasts, the recommendation marked."""
    fig, axes = plt.subplots(4, 1, figsize=(max(7, 1.15 * len(tiers)), 9.5), sharex=True,
                             layout="constrained")
    tier_comparison(axes, tiers, slo, recommended)
    fig.suptitle("Tier comparison: " + (f"recommended {recommended}" if recommended
                                          else "no tier meets the SLO"), fontsize=10)
    return fig


def figures(summary: RunSummary, attempts: pd.DataFrame, windows: pd.DataFrame,
            latencies: dict[str, np.ndarray], slots: pd.DataFrame | None = None,
            refused: pd.DataFrame | None = None) -> dict:
    """Every plot of a run as ``{file name: Figure}``, in report order.

    ``attempts`` is every attempt, or the run's per-minute counts with ``refused`` (the
    refused handshakes) for the websocket marks."""
    tiers, duration = summary.tiers, float(summary.duration_s)
    names = [t.tier for t in tiers]
    out = {"cu_per_window.png": cu_figure(windows, names, duration),
           "outcomes_over_time.png": outcomes_figure(attempts, names, duration)}
    if slots is not None and len(slots):
        ws = websocket_figure(slots, attempts if refused is None else refused, tiers, duration)
        if ws is not None:
            out["websocket_slots.png"] = ws
    out["latency_cdf.png"] = latency_figure(latencies, summary.slo.p99_latency_ms)
    out["tier_comparison.png"] = comparison_figure(tiers, summary.slo, summary.recommended.tier)
    if summary.recommended.sensitivity:
        out["sensitivity_tornado.png"] = tornado_figure(summary.recommended)
    return out


def tornado_figure(rec):
    """One bar per ranged price, from its low to its high end relative to its estimate
    (log scale), widest first; red where the range alone flips the recommendation, with
    the tier recommended at each end written beside it."""
    rows = sorted(rec.sensitivity, key=lambda r: -(r.high / r.estimate - r.low / r.estimate)
                  if r.estimate else 0.0)
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(rows) + 1.4))
    for i, r in enumerate(rows):
        est = r.estimate if r.estimate else 1.0
        lo, hi = r.low / est, r.high / est
        ax.barh(i, hi - lo, left=lo, color="tab:red" if r.flips else "tab:gray", alpha=0.8)
        ax.text(lo, i, f"{r.at_low or 'none'} ", ha="right", va="center", fontsize=7)
        ax.text(hi, i, f" {r.at_high or 'none'}", ha="left", va="center", fontsize=7)
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks(range(len(rows)), [r.price for r in rows], fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel("price / estimate (range ends; tier recommended at each end)", fontsize=8)
    ax.set_title(f"How sure: recommended {rec.tier or 'none'} at the estimates; red: the "
                 "range alone flips it", fontsize=9)
    ax.invert_yaxis()
    ends = [x for r in rows for x in (r.low / (r.estimate or 1.0), r.high / (r.estimate or 1.0))
            if x > 0] or [1.0]
    ax.set_xlim(min(min(ends), 1.0) / 2.5, max(max(ends), 1.0) * 2.5)  # room for the names
    fig.tight_layout()
    return fig


def write_all(folder: Path, summary: RunSummary, attempts: pd.DataFrame, windows: pd.DataFrame,
              latencies: dict[str, np.ndarray], slots: pd.DataFrame | None = None,
              refused: pd.DataFrame | None = None) -> list[str]:
    """Write every plot as PNG into ``folder``; returns the file names."""
    return [_save(fig, folder / name)
            for name, fig in figures(summary, attempts, windows, latencies, slots,
                                     refused).items()]


#: Pixels per inch of the PNGs.
DPI = 110


def _save(fig, path: Path) -> str:
    """Save ``fig`` as a PNG of :data:`DPI` and close it.

    A figure with a layout engine is laid out here, once, at the PNG's dpi, and saved
    without its engine: ``savefig`` would otherwise draw the whole figure once more (with
    drawing switched off) only to run the same layout, a sixth of the plots' CPU. The
    pixels are the same: the layout sees the same figure at the same dpi.
    """
    fig.set_dpi(DPI)
    engine = fig.get_layout_engine()
    if engine is not None:
        engine.execute(fig)
        fig.set_layout_engine(None)
    fig.savefig(path, dpi=DPI, metadata=_PNG_META)
    plt.close(fig)
    return path.name
