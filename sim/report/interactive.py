"""The interactive charts of ``report.html``: per-window CU against the limit, outcomes
over time and the tier comparison, drawn by plotly.js in the browser (hover a window
for its figures, zoom, click a tier in the legend to hide or show it).

Why plotly.js: a well-kept, MIT-licensed charting library whose one file (shipped in the
``plotly`` Python package) works offline once embedded, with hover, zoom, pan and legend
toggling built in and no server or notebook. The figures are written here as plain JSON
specs (data and layout), not built with plotly's Python objects: the report is written at
the end of every run, and the specs are a few dictionaries, so the run does not pay for
plotly's validation. plotly.js is embedded once per report, however many charts.

The PNGs stay the report's for Markdown (report.md, PR comments); each chart here
replaces its PNG in ``report.html`` only (:data:`REPLACES`).
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from importlib import resources

import numpy as np
import pandas as pd

from ..core.vocabulary import WINDOW_S
from ..results.summary import RunSummary, TierSummary
from .colours import tier_colour

REPLACES = {"cu_per_window.png": "cu-per-window", "outcomes_over_time.png": "outcomes",
            "tier_comparison.png": "tier-comparison"}
"""The PNG each interactive chart stands in for in report.html, and the chart's id."""

OUTCOME_COLOURS = {"ok": "#2ca02c", "434": "#d62728", "-32005": "#ff7f0e", "402": "#8c564b",
                   "401": "#e377c2", "oversized": "#bcbd22", "421": "#7f7f7f",
                   "430": "#1f77b4", "435": "#17becf", "ws_cu_rejected": "#9467bd"}
"""The PNGs' outcome colours (:data:`sim.report.plots.OUTCOME_COLOURS`), as hex."""

_CONFIG = {"displaylogo": False, "responsive": True,
           "modeBarButtonsToRemove": ["select2d", "lasso2d"]}
_LAYOUT = {"margin": {"l": 70, "r": 20, "t": 50, "b": 50}, "hovermode": "closest",
           # entries a fixed width apart: no overlap whatever the text measures
           "legend": {"orientation": "h", "y": -0.2, "entrywidth": 170,
                      "entrywidthmode": "pixels"}}


def plotly_js() -> str:
    """plotly.js (minified), from the ``plotly`` package: embedded once per report."""
    return (resources.files("plotly") / "package_data" / "plotly.min.js").read_text("utf-8")


def _num(values) -> list:
    """JSON-safe numbers (NaN as null), rounded to what a hover shows."""
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) else
            round(float(v), 3) for v in values]


def cu_chart(windows: pd.DataFrame, tiers: Sequence[str], duration_s: float) -> dict:
    """Per 12-second window and tier: CU reserved against the tier's limit (a dashed
    line of the tier's colour, toggled with it). Windows cut by the run's end are left
    out, as in the PNG."""
    data = []
    full = windows[windows["start_s"] + WINDOW_S <= duration_s + 1e-9]
    for name in tiers:
        w = full[full["tier"] == name].sort_values("window")
        if not len(w):
            continue
        colour = tier_colour(name)
        x = (w["start_s"].to_numpy() / 60.0).round(4).tolist()
        custom = np.column_stack([w["window"].to_numpy(), w["limit_cu"].to_numpy(),
                                  w["settled_cu"].to_numpy(), w["admitted"].to_numpy(),
                                  w["throttled"].to_numpy()]).tolist()
        data.append({
            "type": "scatter", "mode": "lines+markers", "line": {"shape": "hv",
                                                                 "color": colour, "width": 1.5},
            "marker": {"size": 3}, "name": name, "legendgroup": name, "x": x,
            "y": _num(w["reserved_cu"]), "customdata": custom,
            "hovertemplate": (
                "<b>%{fullData.name}</b><br>window %{customdata[0]} (from %{x:.2f} min)"
                "<br>CU reserved %{y:,.0f} of %{customdata[1]:,.0f}"
                "<br>CU settled %{customdata[2]:,.0f}"
                "<br>admitted %{customdata[3]:,}, throttled %{customdata[4]:,}<extra></extra>")})
        limit = float(w["limit_cu"].iloc[0])
        data.append({"type": "scatter", "mode": "lines", "name": f"{name} limit",
                     "legendgroup": name, "showlegend": False, "hoverinfo": "skip",
                     "x": [0.0, duration_s / 60.0], "y": [limit, limit],
                     "line": {"color": colour, "dash": "dash", "width": 1}})
    layout = {**_LAYOUT, "title": {"text": "CU reserved per 12-second window against each "
                                           "tier's limit (dashed); click a tier to hide it"},
              "xaxis": {"title": {"text": "minutes since the start"}, "rangemode": "tozero"},
              "yaxis": {"title": {"text": "CU per window"}, "rangemode": "nonnegative"}}
    return {"data": data, "layout": layout}


def outcomes_chart(minutes: pd.DataFrame, tiers: Sequence[str], duration_s: float) -> dict:
    """Attempts per minute by outcome, stacked, one tier at a time (a menu picks it)."""
    data, owner = [], []
    bin_s = 60.0
    end = max(duration_s, bin_s)
    edges = np.append(np.arange(0.0, end, bin_s), end)
    per_min = 60.0 / np.diff(edges)
    centres = ((edges[:-1] + edges[1:]) / 2 / 60.0).round(4).tolist()
    for i, name in enumerate(tiers):
        a = minutes[minutes["tier"] == name]
        weights = a["count"].to_numpy() if "count" in a.columns else None
        outcomes = a["outcome"].cat.categories if hasattr(a["outcome"], "cat") else sorted(
            a["outcome"].unique())
        for outcome in outcomes:
            rows = (a["outcome"] == outcome).to_numpy()
            if not rows.any():
                continue
            rate = np.histogram(a.loc[rows, "t_send_s"].to_numpy(), edges,
                                weights=None if weights is None else weights[rows])[0] * per_min
            data.append({"type": "bar", "name": str(outcome), "x": centres,
                         "y": _num(rate), "visible": i == 0,
                         "marker": {"color": OUTCOME_COLOURS.get(str(outcome), "#000000")},
                         "width": (np.diff(edges) / 60.0 * 0.95).round(4).tolist(),
                         "hovertemplate": f"<b>{html.escape(name)}</b><br>minute %{{x:.1f}}"
                                          f"<br>{html.escape(str(outcome))}: %{{y:,.1f}} "
                                          "attempts/min<extra></extra>"})
            owner.append(i)
    buttons = [{"label": name, "method": "update",
                "args": [{"visible": [o == i for o in owner]},
                         {"title.text": f"Attempts per minute by outcome: {name}"}]}
               for i, name in enumerate(tiers)]
    layout = {**_LAYOUT, "barmode": "stack", "bargap": 0,
              "title": {"text": f"Attempts per minute by outcome: {tiers[0] if tiers else ''}"},
              "xaxis": {"title": {"text": "minutes since the start"}, "range": [0, end / 60.0]},
              "yaxis": {"title": {"text": "attempts / min"}, "rangemode": "nonnegative"},
              "updatemenus": [{"buttons": buttons, "x": 0.0, "xanchor": "left", "y": 1.15,
                               "yanchor": "top", "showactive": True}] if len(tiers) > 1 else []}
    return {"data": data, "layout": layout}


def comparison_chart(summary: RunSummary) -> dict:
    """Per tier (by price): throttle rate, failure rate and p99 latency, each against its
    SLO limit (dashed), the hover saying whether the tier meets the SLO."""
    tiers: list[TierSummary] = sorted(summary.tiers, key=lambda t: (
        t.monthly_usd is None, t.monthly_usd or 0.0, t.cu_per_window))
    names = [t.tier for t in tiers]
    slo = summary.slo
    panels = [("throttle rate", [t.throttle_rate for t in tiers], slo.max_throttle_rate,
               ".2%"),
              ("failure rate", [t.failure_rate for t in tiers], slo.max_failure_rate, ".2%"),
              ("p99 latency (ms)", [t.latency_ms.p99 for t in tiers], slo.p99_latency_ms,
               ",.0f")]
    verdict = ["meets the SLO" if t.meets_slo else "fails: " + ", ".join(t.slo_violations)
               for t in tiers]
    price = ["n/a" if t.monthly_usd is None else f"${t.monthly_usd:,.0f}/month" for t in tiers]
    data, shapes = [], []
    width = 1.0 / len(panels)
    layout = {**_LAYOUT, "showlegend": False, "hovermode": "closest",
              "title": {"text": "Tier comparison against the SLO (dashed): "
                                + (f"recommended {summary.recommended.tier}"
                                   if summary.recommended.tier else "no tier meets the SLO")}}
    for k, (label, values, limit, fmt) in enumerate(panels):
        axis = "" if k == 0 else str(k + 1)
        data.append({"type": "bar", "x": names, "y": _num(values), "xaxis": f"x{axis}",
                     "yaxis": f"y{axis}", "name": label,
                     "marker": {"color": [tier_colour(n) for n in names]},
                     "customdata": [[v, p] for v, p in zip(verdict, price, strict=True)],
                     "hovertemplate": f"<b>%{{x}}</b><br>{label}: %{{y:{fmt}}}"
                                      f"<br>SLO limit: {format(limit, fmt)}"
                                      "<br>%{customdata[1]}<br>%{customdata[0]}<extra></extra>"})
        lo, hi = k * width + 0.05, (k + 1) * width - 0.02
        layout[f"xaxis{axis}"] = {"domain": [lo, hi], "anchor": f"y{axis}", "tickangle": -30}
        layout[f"yaxis{axis}"] = {"anchor": f"x{axis}",
                                  "rangemode": "nonnegative",
                                  "tickformat": fmt if fmt == ".2%" else ","}
        shapes.append({"type": "line", "xref": f"x{axis} domain", "yref": f"y{axis}",
                       "x0": 0, "x1": 1, "y0": limit, "y1": limit,
                       "line": {"color": "black", "dash": "dash", "width": 1}})
    layout["shapes"] = shapes
    # each panel's name above it (not a y-axis title, which sits on the tick labels when
    # they cannot be measured)
    layout["annotations"] = [
        {"text": f"<b>{label}</b>", "showarrow": False, "xref": "paper", "yref": "paper",
         "x": (k + 0.5) * width, "y": 1.0, "yanchor": "bottom", "xanchor": "center"}
        for k, (label, *_rest) in enumerate(panels)]
    layout["margin"] = {**_LAYOUT["margin"], "b": 110}
    return {"data": data, "layout": layout}


def charts(summary: RunSummary, windows: pd.DataFrame, minutes: pd.DataFrame) -> dict:
    """``{chart id: figure spec}`` for the charts a run has data for."""
    names = [t.tier for t in summary.tiers]
    duration = float(summary.duration_s)
    out = {}
    if len(windows):
        out["cu-per-window"] = cu_chart(windows, names, duration)
    if len(minutes):
        out["outcomes"] = outcomes_chart(minutes, names, duration)
    out["tier-comparison"] = comparison_chart(summary)
    return out


def chart_html(chart_id: str, figure: dict) -> str:
    """A ``<div>`` and the script drawing ``figure`` into it (plotly.js already loaded)."""
    spec = json.dumps(figure, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    config = json.dumps(_CONFIG, separators=(",", ":"))
    return (f'<div class="chart" id="{chart_id}" style="height:460px"></div>\n'
            f"<script>(function(){{var f={spec};Plotly.newPlot({json.dumps(chart_id)},"
            f"f.data,f.layout,{config});}})();</script>")
