"""The advisor's report folder (``capsim advise --out DIR``): ``advice.json`` and
``report.md`` (a section per cheaper tier: the change, what it saves and costs)."""

from __future__ import annotations

import json
from pathlib import Path

from .result import FOUND, UNVERIFIED, Advice


def advice_markdown(advice: Advice, plot: str | None = None) -> str:
    """The report's Markdown: the cheaper tiers, each with its change or why none."""
    rec = advice.recommended or "none"
    usd = "" if advice.recommended_usd is None else f" (${advice.recommended_usd:,.0f}/month)"
    out = [f"# Client advice: {advice.scenario}", "",
           f"Recommended tier as the scenario stands: **{rec}**{usd}. "
           f"{advice.runs} model runs (budget {advice.budget}); a change found is verified "
           f"on {advice.replications} replication(s) with common random numbers.", "",
           "## Cheaper tiers and the change each needs", ""]
    if plot:
        out += [f"![the change each cheaper tier needs]({plot})", ""]
    out += ["| tier | $/month | saves $/month | verdict | change |", "|---|---:|---:|---|---|"]
    for t in advice.tiers:
        price = "–" if t.monthly_usd is None else f"{t.monthly_usd:,.0f}"
        saved = "–" if t.saved_usd_per_month is None else f"{t.saved_usd_per_month:,.0f}"
        what = " + ".join(t.change) if t.change else t.reason
        out.append(f"| {t.tier} | {price} | {saved} | {t.status} | {what} |")
    for t in advice.tiers:
        if t.status not in (FOUND, UNVERIFIED):
            continue
        out += ["", f"### {t.tier}: {' + '.join(t.change)}", "",
                f"{t.verified}. Cost to the client: {t.cost.words()}.", "",
                "```toml", t.snippet, "```"]
    if advice.skipped_changes:
        out += ["", "## Changes not tried, and why", ""]
        out += [f"* {title}: {why}" for title, why in advice.skipped_changes]
    return "\n".join(out) + "\n"


def write_advice(advice: Advice, out_dir: str | Path) -> Path:
    """Write ``advice.json`` and ``report.md`` into ``out_dir`` (created if needed)."""
    from ..jobs.sweep_store import write_atomic

    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / "advice.json",
                 json.dumps(advice.to_dict(), indent=2, allow_nan=False) + "\n")
    write_atomic(folder / "report.md", advice_markdown(advice))
    return folder
