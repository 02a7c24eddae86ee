"""The advisor's report folder (``capsim advise --out DIR``): ``advice.json``,
``report.md`` (a section per cheaper tier: the change, what it saves and costs) and
``advice.png``: the cheaper tiers against the change each needs, with the SLO.

The plot has two panels, one bar group per cheaper tier (cheapest first). Left: the
change found, as its size (the pacing rate in CU/s beside the closed form, window
budget / 12 s; or the share of calls cached). Right: how far each tier is from the SLO
as the scenario stands and with the change (the largest ratio of an SLO figure to its
limit, log scale), the SLO a dashed line at 1. The PNG carries no software metadata,
so reruns are byte-stable."""

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
    for t in advice.tiers:
        if t.not_tried:
            out += ["", f"Not tried on {t.tier}:", ""]
            out += [f"* {line}" for line in t.not_tried]
    if advice.skipped_changes:
        out += ["", "## Changes not tried, and why", ""]
        out += [f"* {title}: {why}" for title, why in advice.skipped_changes]
    return "\n".join(out) + "\n"


MANIFEST = "advice-manifest.json"
"""The file that makes a folder capsim's advice folder (and so one it may write into)."""


def claim_folder(out_dir: str | Path) -> Path:
    """``out_dir`` as an advice folder: created, or an empty folder, or one holding
    :data:`MANIFEST` (resumed in place); anything else is a
    :class:`~sim.core.errors.CapsimError` before any run (nothing a user did not create
    with capsim is overwritten)."""
    from ..core.errors import CapsimError
    from ..jobs.sweep_store import write_atomic

    folder = Path(out_dir)
    if folder.exists() and not folder.is_dir():
        raise CapsimError(f"{folder} is a file, not a folder", field="--out")
    if folder.is_dir() and any(folder.iterdir()) and not (folder / MANIFEST).is_file():
        raise CapsimError(f"{folder} exists and is not a capsim advice folder (no {MANIFEST}): "
                          "give a new or empty folder", field="--out")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not (folder / MANIFEST).is_file():
            write_atomic(folder / MANIFEST, json.dumps({"kind": "capsim advise"}) + "\n")
    except OSError as err:
        raise CapsimError(f"cannot write the advice folder {folder} ({err.strerror})",
                          field="--out") from None
    return folder


def write_advice(advice: Advice, out_dir: str | Path) -> Path:
    """Write ``advice.json``, ``report.md`` and ``advice.png`` into ``out_dir`` (claimed
    by :func:`claim_folder`)."""
    from ..jobs.sweep_store import write_atomic

    folder = claim_folder(out_dir)
    write_atomic(folder / "advice.json",
                 json.dumps(advice.to_dict(), indent=2, allow_nan=False) + "\n")
    plot = "advice.png" if write_plot(advice, folder / "advice.png") else None
    write_atomic(folder / "report.md", advice_markdown(advice, plot))
    return folder


def write_plot(advice: Advice, path: Path) -> bool:
    """Draw ``advice.png``; False (nothing written) when there is no cheaper tier."""
    tiers = [t for t in advice.tiers if t.shortfall_before is not None]
    if not tiers:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [f"{t.tier}\n${t.monthly_usd:,.0f}" if t.monthly_usd is not None else t.tier
             for t in tiers]
    x = list(range(len(tiers)))
    fig, (left, right) = plt.subplots(1, 2, figsize=(max(8, 2.2 * len(tiers) + 4), 4.2))
    paced = [(i, t) for i, t in enumerate(tiers) if t.pacing_cu_per_s is not None]
    cached = [(i, t) for i, t in enumerate(tiers) if t.cache_share is not None]
    if paced:
        left.bar([i - 0.2 for i, _ in paced], [t.pacing_cu_per_s for _, t in paced],
                 width=0.4, label="pacing found (CU/s)")
        left.bar([i + 0.2 for i, _ in paced], [t.cu_per_window / 12 for _, t in paced],
                 width=0.4, alpha=0.5, label="window budget / 12 s")
        left.set_ylabel("pacing rate (CU/s)")
    if cached:
        axis = left.twinx() if paced else left
        axis.plot([i for i, _ in cached], [t.cache_share * 100 for _, t in cached], "o",
                  color="tab:red", label="share of calls cached (%)")
        axis.set_ylabel("calls cached (%)")
        axis.set_ylim(0, 105)
        if paced:
            axis.legend(fontsize=8, loc="upper right")
    for i, t in enumerate(tiers):
        if t.status not in (FOUND, UNVERIFIED) or (t.pacing_cu_per_s is None
                                                   and t.cache_share is None):
            words = {"found": "other change", "unverified": "other change"}.get(
                t.status, "no change" if t.status != "skipped" else "not searched")
            left.annotate(words, (i, 0), ha="center", va="bottom", fontsize=8,
                          rotation=90)
    left.set_xticks(x, names, fontsize=8)
    left.set_title("the change each cheaper tier needs", fontsize=10)
    if paced:
        left.legend(fontsize=8, loc="upper left")
    before = [t.shortfall_before for t in tiers]
    after = [t.shortfall_after if t.shortfall_after is not None else float("nan")
             for t in tiers]
    right.bar([i - 0.2 for i in x], before, width=0.4, label="as it stands")
    right.bar([i + 0.2 for i in x], after, width=0.4, label="with the change (or closest)")
    right.axhline(1.0, color="black", ls="--", lw=1.0, label="SLO")
    right.set_yscale("log")
    right.set_ylabel("worst SLO figure / its limit")
    right.set_xticks(x, names, fontsize=8)
    right.set_title("distance from the SLO", fontsize=10)
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return True
