"""Plots of a run, drawn with matplotlib's explicit API (every function takes an ``ax``).

PNGs are written without the software/version metadata, so reruns are byte-stable.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # reports are files; never open a window
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

_PNG_META = {"Software": None}


def cu_per_window(ax, windows: pd.DataFrame, tier: str) -> None:
    """Reserved and settled CU per 12-s window, the limit, and windows with throttles."""
    w = windows[windows["tier"] == tier]
    minutes = w["start_s"].to_numpy() / 60.0
    ax.step(minutes, w["reserved_cu"], where="post", lw=0.8, label="reserved", color="tab:orange")
    ax.step(minutes, w["settled_cu"], where="post", lw=0.8, label="settled", color="tab:blue")
    limit = float(w["limit_cu"].iloc[0]) if len(w) else 0.0
    ax.axhline(limit, color="black", lw=1.0, ls="--", label="limit")
    hit = w["throttled"].to_numpy() > 0
    if hit.any():
        ax.plot(minutes[hit], np.full(hit.sum(), limit), "|", color="tab:red", ms=8,
                label="throttles")
    ax.set_title(tier, fontsize=9)
    ax.set_xlabel("simulated minutes", fontsize=8)
    ax.set_ylabel("CU / 12 s", fontsize=8)
    ax.tick_params(labelsize=7)


def outcomes_over_time(ax, attempts: pd.DataFrame, tier: str, bin_s: float = 60.0) -> None:
    """Attempts per minute by outcome (stacked)."""
    a = attempts[attempts["tier"] == tier]
    if a.empty:
        return
    end = max(float(a["t_send_s"].max()), bin_s)
    edges = np.arange(0.0, end + bin_s, bin_s)
    bottom = np.zeros(len(edges) - 1)
    for outcome in a["outcome"].cat.categories:
        t = a.loc[a["outcome"] == outcome, "t_send_s"].to_numpy()
        if len(t) == 0:
            continue
        counts, _ = np.histogram(t, edges)
        ax.bar(edges[:-1] / 60.0, counts, width=bin_s / 60.0, bottom=bottom, align="edge",
               label=outcome, lw=0)
        bottom += counts
    ax.set_title(tier, fontsize=9)
    ax.set_xlabel("simulated minutes", fontsize=8)
    ax.set_ylabel("attempts / min", fontsize=8)
    ax.tick_params(labelsize=7)


def websocket_slots(ax, slots: pd.DataFrame, attempts: pd.DataFrame, tier: str) -> None:
    """Live and stale websocket slots against the cap; refused handshakes marked."""
    s = slots[slots["tier"] == tier]
    if len(s):
        minutes = s["t"].to_numpy() / 60.0
        live = s["live"].to_numpy()
        stale = s["stale"].to_numpy()
        ax.fill_between(minutes, 0, live, step="post", color="tab:green", alpha=0.6, label="live")
        ax.fill_between(minutes, live, live + stale, step="post", color="tab:gray", alpha=0.6,
                        label="stale")
        ax.step(minutes, s["cap"], where="post", color="black", ls="--", lw=1.0, label="cap")
    a = attempts[(attempts["tier"] == tier) & attempts["outcome"].isin(["435", "ws_cu_rejected"])]
    if len(a):
        cap = float(s["cap"].max()) if len(s) else 0.0
        for outcome, colour in (("435", "tab:red"), ("ws_cu_rejected", "tab:purple")):
            t = a.loc[a["outcome"] == outcome, "t_send_s"].to_numpy() / 60.0
            if len(t):
                ax.plot(t, np.full(len(t), cap + 0.3), "|", color=colour, ms=6,
                        label=f"{outcome} handshakes")
    ax.set_title(tier, fontsize=9)
    ax.set_xlabel("simulated minutes", fontsize=8)
    ax.set_ylabel("websocket slots", fontsize=8)
    ax.tick_params(labelsize=7)


def latency_cdf(ax, latencies: dict[str, np.ndarray]) -> None:
    """Empirical CDF of end-to-end latency of successful requests, one line per tier."""
    for tier, lat in latencies.items():
        if len(lat) == 0:
            continue
        x = np.sort(lat)
        ax.plot(x, np.arange(1, len(x) + 1) / len(x), lw=1.0, label=tier)
    ax.set_xscale("log")
    ax.set_xlabel("latency (ms, log scale), retries included")
    ax.set_ylabel("fraction of successful requests")
    ax.grid(True, which="both", lw=0.3)
    if ax.get_lines():
        ax.legend(fontsize=7)


def tier_comparison(ax, tiers: list[dict], slo_throttle: float) -> None:
    """Throttle and failure rate per tier, with the SLO's throttle limit."""
    names = [t["tier"] for t in tiers]
    x = np.arange(len(names))
    ax.bar(x - 0.2, [t["throttle_rate"] for t in tiers], 0.4, label="throttle rate")
    ax.bar(x + 0.2, [t["failure_rate"] for t in tiers], 0.4, label="failure rate")
    ax.axhline(slo_throttle, color="black", ls="--", lw=1.0, label="SLO throttle limit")
    ax.set_xticks(x, [n.replace(" ", "\n", 1) for n in names], fontsize=7)
    ax.set_ylabel("fraction")
    ax.legend(fontsize=7)


def _grid(n: int):
    cols = min(3, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.6 * rows), squeeze=False,
                             sharex=True)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def write_all(folder: Path, attempts: pd.DataFrame, windows: pd.DataFrame, tiers: list[dict],
              latencies: dict[str, np.ndarray], slo_throttle: float,
              slots: pd.DataFrame | None = None) -> list[str]:
    """Write every plot as PNG into ``folder``; returns the file names."""
    names = [t["tier"] for t in tiers]
    files = []

    fig, axes = _grid(len(names))
    for ax, tier in zip(axes, names, strict=True):
        cu_per_window(ax, windows, tier)
    axes[0].legend(fontsize=7, loc="upper right")
    fig.suptitle("CU per 12-second window: reserved, settled and the limit")
    files.append(_save(fig, folder / "cu_per_window.png"))

    fig, axes = _grid(len(names))
    for ax, tier in zip(axes, names, strict=True):
        outcomes_over_time(ax, attempts, tier)
    axes[0].legend(fontsize=6, loc="upper right")
    fig.suptitle("Attempts per minute by outcome")
    files.append(_save(fig, folder / "outcomes_over_time.png"))

    if slots is not None and len(slots):
        fig, axes = _grid(len(names))
        for ax, tier in zip(axes, names, strict=True):
            websocket_slots(ax, slots, attempts, tier)
        axes[0].legend(fontsize=6, loc="upper right")
        fig.suptitle("Websocket slots: live, stale and the cap; refused handshakes marked")
        files.append(_save(fig, folder / "websocket_slots.png"))

    fig, ax = plt.subplots(figsize=(7, 4.5))
    latency_cdf(ax, latencies)
    ax.set_title("End-to-end latency of successful requests")
    files.append(_save(fig, folder / "latency_cdf.png"))

    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(names)), 4))
    tier_comparison(ax, tiers, slo_throttle)
    ax.set_title("Tier comparison")
    files.append(_save(fig, folder / "tier_comparison.png"))
    return files


def _save(fig, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata=_PNG_META)
    plt.close(fig)
    return path.name
