"""The calibration's outputs: ``calibration.json``, ``pricing.toml``, ``report.md``,
``report.html`` and ``timeline.png``, written atomically as one folder
(:func:`sim.report.writer.write_folder`, the run report's mechanism).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..core.intervals import format_interval  # noqa: E402
from ..core.version import __version__  # noqa: E402
from ..core.vocabulary import WINDOW_S  # noqa: E402
from ..report import html  # noqa: E402
from ..report.folder import ReportFolder  # noqa: E402
from ..report.writer import write_folder  # noqa: E402
from .calibrate import Calibration  # noqa: E402
from .recorded import CLASSES  # noqa: E402

_PNG_META = {"Software": None}


def _num(v):
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def to_dict(cal: Calibration, trace_name: str) -> dict:
    """The JSON document (stable key order, no wall-clock values)."""
    unusable: dict[str, int] = {}
    for reason in cal.after.unusable:
        if reason:
            unusable[reason] = unusable.get(reason, 0) + 1
    phase = None
    if cal.settings_after.alignment == "utc":
        phase = {"estimate_s": cal.settings_after.phase_s,
                 "from_retry_after": None if cal.phase is None else {
                     "low_s": cal.phase.low, "high_s": cal.phase.high,
                     "spread_s": cal.phase.spread, "observations": cal.phase.observations,
                     "consistent": cal.phase.consistent},
                 "from_decisions": None if cal.phase_interval is None else {
                     "low_s": cal.phase_interval.low % WINDOW_S,
                     "high_s": cal.phase_interval.low % WINDOW_S
                     + (cal.phase_interval.high - cal.phase_interval.low)}}
    doc = {
        "capsim_version": __version__,
        "trace": trace_name,
        "tier": cal.tier,
        "rows": cal.rows,
        "verdict": cal.verdict,
        "notes": cal.notes,
        "agreement": {
            "before": _num(cal.before.agreement), "after": _num(cal.after.agreement),
            "compared_before": cal.before.n_compared, "compared_after": cal.after.n_compared},
        "confusion_before": cal.before.confusion(),
        "confusion_after": cal.after.confusion(),
        "throttles_observed": cal.throttles_observed,
        "contradictions": cal.contradictions,
        "window_phase": phase,
        "limiter": cal.settings_after.model_dump(),
        "refund_rule": cal.refund_rule,
        "dropped_rows": [d.__dict__ for d in cal.dropped],
        "gas_caps": {p: {"value": _num(g.value), "low": _num(g.low), "high": _num(g.high)}
                     for p, g in sorted(cal.gas_caps.items())},
        "prices": [{k: _num(v) if isinstance(v, float) else v for k, v in p.to_dict().items()}
                   for p in cal.prices],
        "exact_fit": None if cal.exact is None else {
            "rows": cal.exact.rows, "rms_residual_cu": cal.exact.rms_residual_cu,
            "max_abs_residual_cu": cal.exact.max_abs_residual_cu,
            "not_identified": list(cal.exact.not_identified)},
        "rows_not_usable": dict(sorted(unusable.items())),
        "pricing": cal.pricing_table(),
    }
    # optional keys, present only where used (other calibrations' files stay as they were)
    if cal.accounts:
        doc["accounts"] = [
            {"name": a.name, "tier": a.tier.name, "keys": list(a.keys), "compared": n,
             "agreement_after": _num(ag)}
            for a, n, ag in zip(cal.accounts, cal.account_rows, cal.account_agreement,
                                strict=True)]
    if cal.duplicates:
        doc["duplicate_rows"] = cal.duplicates
    if cal.client_times:
        doc["client_times"] = {
            "phase_on": "the log's clock (the service's phase plus the client clock's "
                        "constant skew, which the log cannot show)",
            "delay_s": None if cal.client_delay_s is None else list(cal.client_delay_s),
            "delays_from": "given" if cal.client_delay_s else "each row's recorded latency"}
    if cal.conflicts:
        doc["key_conflicts"] = [c.__dict__ for c in cal.conflicts]
    if cal.trimmed:
        doc["trimmed"] = {"rows": cal.trimmed, "share": cal.trimmed_share,
                          "agreement_kept": _num(cal.kept_agreement)}
    return doc


def pricing_toml(cal: Calibration) -> str:
    """The fitted ``[pricing]`` table, ready to paste into a scenario."""
    t = cal.pricing_table()
    out = [f"# capsim calibrate, tier {cal.tier}: agreement "
           f"{_pct(cal.before.agreement)} before, {_pct(cal.after.agreement)} after.",
           "# Prices the data only bound or do not identify keep their given value; see",
           "# report.md. Paste under your scenario (keys deep-merge over the defaults).", ""]
    if cal.verdict == "does not fit":  # only then: other calibrations' files stay as they were
        out[-1:] = ["# DOES NOT FIT: these prices do not explain the recorded decisions; see the",
                    "# verdict in report.md before using them.", ""]
    if cal.settings_after.alignment == "utc":
        out += ["[limiter]", 'alignment = "utc"',
                f"phase_s = {cal.settings_after.phase_s:.3f}"]
        if cal.client_times:
            out.append("# on the log's clock (client send times): the service's phase "
                       "plus the client's clock skew")
        if cal.phase_interval is not None:
            iv = cal.phase_interval
            out.append(f"# the decisions fit phases {iv.low % WINDOW_S:.3f} to "
                       f"{iv.low % WINDOW_S + iv.high - iv.low:.3f} s")
        if cal.refund_rule == "both fit":
            out.append("# both refund rules fit the decisions; origin-window written")
        out += [f'refund_to = "{cal.settings_after.refund_to}"', ""]
    for section in ("rpc", "sizing", "websocket"):
        if section not in t:
            continue
        plain = {k: v for k, v in t[section].items() if not isinstance(v, dict)}
        if plain:
            out.append(f"[pricing.{section}]")
            out += [f"{k} = {_toml(v)}" for k, v in plain.items()]
            out.append("")
        for k, v in t[section].items():
            if isinstance(v, dict):
                out.append(f"[pricing.{section}.{k}]")
                out += [f'"{name}" = {_toml(x)}' for name, x in v.items()]
                out.append("")
    return "\n".join(out)


def _toml(v: float) -> str:
    return f"{v:.6g}" if abs(v) < 1e-3 and v else f"{v:.6g}".rstrip(".")


def _pct(x: float) -> str:
    return "n/a" if x != x else f"{100 * x:.2f} %"


def timeline_figure(cal: Calibration):
    """Observed and predicted throttles per 12-s window (after the fit), with the
    attempts where prediction and observation differ marked above."""
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(9, 4.8), sharex=True,
                                  gridspec_kw={"height_ratios": [3, 1]})
    w = cal.after.per_window()
    if len(w):
        x = w["window_start_s"].to_numpy() / 60.0
        edges = np.append(x, x[-1] + WINDOW_S / 60.0)
        ax.stairs(w["observed_throttles"].to_numpy(), edges, label="observed", lw=1.2,
                  color="tab:red")
        ax.stairs(w["predicted_throttles"].to_numpy(), edges, label="predicted", lw=1.0,
                  ls="--", color="tab:blue")
    ax.set_ylabel("throttles / 12 s", fontsize=8)
    ax.set_title(f"Replay as recorded, tier {cal.tier}: agreement "
                 f"{_pct(cal.after.agreement)}", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    miss = cal.after.compared & (cal.after.predicted != cal.after.observed)
    for k, (label, colour) in enumerate((("predicted throttled, observed ok", "tab:orange"),
                                         ("predicted ok, observed throttled", "tab:purple"),
                                         ("other mismatch", "black"))):
        if k == 0:
            sel = miss & (cal.after.predicted == "throttled") & (cal.after.observed == "ok")
        elif k == 1:
            sel = miss & (cal.after.predicted == "ok") & (cal.after.observed == "throttled")
        else:
            sel = miss & ~((cal.after.predicted == "throttled") & (cal.after.observed == "ok")) \
                & ~((cal.after.predicted == "ok") & (cal.after.observed == "throttled"))
        t = cal.after.t_s[sel] / 60.0
        ax2.vlines(t, k, k + 0.8, colors=colour, lw=0.6, label=f"{label} ({int(sel.sum())})")
    ax2.set_yticks([])
    ax2.set_ylim(0, 3)
    ax2.set_xlabel("minutes after the first request", fontsize=8)
    ax2.legend(fontsize=6, loc="upper right")
    for a in (ax, ax2):
        a.tick_params(labelsize=7)
    fig.tight_layout()
    return fig


def render_markdown(cal: Calibration, doc: dict) -> str:
    """``report.md``."""
    lines = [f"# Calibration: {doc['trace']} against {cal.tier}", "",
             f"- rows: {cal.rows:,}; compared: {cal.after.n_compared:,}; observed CU "
             f"throttles: {cal.throttles_observed:,}",
             f"- agreement: **{_pct(cal.before.agreement)}** with the given prices and "
             f"windows, **{_pct(cal.after.agreement)}** after the fit",
             f"- verdict: **{cal.verdict}**" + (
                 f" after trimming {_pct(cal.trimmed_share)} of the compared attempts "
                 "as likely mislabelled (the replay agrees with "
                 f"{_pct(cal.kept_agreement)} of the rest)" if cal.trimmed else "")]
    lines += [f"- {n}" for n in cal.notes]
    ph = doc["window_phase"]
    if ph:
        ra = ph["from_retry_after"]
        clock = "the log's clock" if cal.client_times else "the UTC clock"
        lines.append(f"- window phase: {ph['estimate_s']:.2f} s after each multiple of 12 s "
                     f"on {clock}" + (f" (Retry-After: {ra['low_s'] % 12:.2f}-"
                                           f"{ra['high_s'] % 12:.2f} s, ±{ra['spread_s']:.2f}"
                                           f" s, {ra['consistent']} of {ra['observations']}"
                                           " values consistent)" if ra else
                                           " (from the decisions; no Retry-After recorded)"))
    else:
        lines.append("- window phase: not estimated; windows start at the first request")
    if ph and ph["from_decisions"]:
        fd = ph["from_decisions"]
        lines.append(f"- the decisions fit window phases {fd['low_s']:.3f}-{fd['high_s']:.3f} s "
                     f"and refunds to: **{cal.refund_rule}**")
    if cal.contradictions:
        lines.append(f"- **{cal.contradictions} throttles contradict every price**: no "
                     "admitted billed request in the 12 s before them, so the window was "
                     "empty whatever its phase; they are left out of the fit")
    if cal.accounts:
        lines += ["", "## Accounts", "",
                  "Each account's decisions against its own window budget; one price list "
                  "for all.", "", "| account | tier | budget (CU / 12 s) | keys | compared "
                  "| agreement after |", "|---|---|---|---|---|---|"]
        lines += [f"| {a.name} | {a.tier.name} | {a.tier.cu_per_window:,} | "
                  f"{', '.join(a.keys)} | {n:,} | {_pct(ag)} |"
                  for a, n, ag in zip(cal.accounts, cal.account_rows, cal.account_agreement,
                                      strict=True)]
        lines.append("")
    if cal.conflicts:
        lines += ["", "## Keys that contradict one shared budget", "",
                  "| refused | admitted after it, same cost, same window | windows | of |",
                  "|---|---|---|---|"]
        lines += [f"| {c.throttled} | {c.admitted} | {c.windows} | {c.of} |"
                  for c in cal.conflicts]
        lines.append("")
    lines += ["", "## Prices", "",
              "| price | given | fitted | how | interval |", "|---|---|---|---|---|"]
    for p in cal.prices:
        if p.how == "bounded":
            iv = ("≤ " + f"{p.high:.6g}" if p.high is not None else "") + \
                 (" ≥ " + f"{p.low:.6g}" if p.low is not None else "")
            iv = "any value " + iv.strip() + " fits"
        elif p.how == "decisions":
            iv = f"{p.low:.6g} – {p.high:.6g}"
        elif p.how == "exact":
            iv = f"± {_std_error(p.std_error, p.value)} (std. error)"
            if p.low is not None and p.high is not None:
                iv += f"; decisions: {p.low:.6g} – {p.high:.6g}"
        elif p.how == "not identified":
            iv = "the data cannot identify it (every value fits)"
        else:
            iv = "not fitted"
        lines.append(f"| `{p.name}` | {p.before:.6g} | {p.value:.6g} | {p.how} | {iv} |")
    lines += ["", "Intervals: every value each price takes over the prices, phases and refund "
              "rules consistent with the decisions (jointly, by linear programming); the "
              "fitted value is that set's Chebyshev centre, where every decision holds with "
              "the widest margin."]
    if cal.gas_caps:
        lines += ["", "| profile | gas cap | interval |", "|---|---|---|"]
        for g in cal.gas_caps.values():
            hi = "∞" if g.high is None else f"{g.high:.6g}"
            lines.append(f"| `{g.profile}` | {g.value:.6g} | {g.low:.6g} – {hi} |")
    if cal.dropped:
        lines += ["", f"## Decisions left out ({len(cal.dropped)})", "",
                  "| trace row | t (s) | method | recorded | why |", "|---|---|---|---|---|"]
        lines += [f"| {d.row} | {d.t_s:.3f} | `{d.method}` | {d.observed} | {d.why} |"
                  for d in cal.dropped]
    if cal.duplicates:
        shown = ", ".join(str(r) for r in cal.duplicates[:50])
        lines += ["", f"## Rows read once ({len(cal.duplicates)})", "",
                  "These trace rows repeat an earlier row in every field (the same answer "
                  f"logged twice): {shown}" + (" ..." if len(cal.duplicates) > 50 else "")]
    if doc["exact_fit"]:
        e = doc["exact_fit"]
        lines += ["", f"Exact fit on {e['rows']:,} rows with billed CU: residual RMS "
                  f"{e['rms_residual_cu']:.3g} CU, max {e['max_abs_residual_cu']:.3g} CU."]
    for title, conf in (("before", doc["confusion_before"]), ("after", doc["confusion_after"])):
        lines += ["", f"## Confusion matrix ({title})", "",
                  "| observed \\ predicted | " + " | ".join(CLASSES) + " |",
                  "|---|" + "---|" * len(CLASSES)]
        for o in CLASSES:
            lines.append(f"| {o} | " + " | ".join(f"{conf[o][p]:,}" for p in CLASSES) + " |")
    lines += ["", "## Timeline", "", "![timeline](timeline.png)", ""]
    if doc["rows_not_usable"]:
        lines += ["## Rows not compared", "", "| reason | rows |", "|---|---|"]
        lines += [f"| {r} | {n:,} |" for r, n in doc["rows_not_usable"].items()]
        lines.append("")
    lines += ["## Pricing to paste", "", "See `pricing.toml` in this folder.", ""]
    return "\n".join(lines)


def write_calibration(cal: Calibration, out_dir: str | Path, trace_name: str,
                      folder: ReportFolder | None = None) -> Path:
    """Write the calibration folder (replaced whole, atomically); ``folder``: the
    destination claimed and locked for the whole command (else it is claimed here)."""
    doc = to_dict(cal, trace_name)

    def fill(folder: Path) -> None:
        fig = timeline_figure(cal)
        fig.savefig(folder / "timeline.png", dpi=110, metadata=_PNG_META)
        plt.close(fig)
        (folder / "calibration.json").write_text(
            json.dumps(doc, indent=2, sort_keys=True, default=float) + "\n", encoding="utf-8")
        (folder / "pricing.toml").write_text(pricing_toml(cal), encoding="utf-8")
        md = render_markdown(cal, doc)
        (folder / "report.md").write_text(md, encoding="utf-8")
        (folder / "report.html").write_text(html.render(md, folder), encoding="utf-8")

    return write_folder(out_dir, fill, "calibration", folder)


def _std_error(se: float, value: float) -> str:
    """A standard error to two significant figures, never in exponent notation; one
    within round-off of an exact fit (a billion times smaller than the value) is 0."""
    if se <= 1e-9 * abs(value):
        return "0"
    return format_interval(float(f"{se:.2g}"), digits=2)
