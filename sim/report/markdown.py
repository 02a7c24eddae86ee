"""``report.md``: the run in words and tables, plots linked.

Reads the typed summary (:class:`~sim.results.summary.RunSummary`): a renamed field fails here,
at the attribute, rather than printing an empty cell.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.vocabulary import HANDSHAKE_OUTCOMES
from ..metrics.decided import slo_breaches
from ..results import decided
from ..results.summary import RunSummary, TierSummary, p99_comparable
from .how_sure import how_sure
from .replications import across_replications

P99_NOTE = ("†: a p99 over fewer than half of the tier's requests (most failed): the "
            "latency of the few that succeeded, not comparable with other tiers' p99.")


def p99_notes(tiers: Sequence[TierSummary]) -> list[str]:
    """The note under a tier table whose p99 column has a † cell (else none)."""
    return [P99_NOTE] if any(_p99(t).endswith("†") for t in tiers) else []


def _fmt(x, nd=1) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:,.{nd}f}"
    return f"{x:,}" if isinstance(x, int) else str(x)


def _pct(x) -> str:
    """A fraction as a percentage, or "–" when there is none."""
    return "–" if x is None else f"{x:.1%}"


def _lasts(hours: float | None) -> str:
    """How long a daily allowance lasts at the run's rate ("–": the run saw whole days,
    no allowance, or nothing charged)."""
    if hours is None:
        return "–"
    return f"{hours:,.1f} h" + (" (< 1 day)" if hours < 24 else "")


def _p99(t: TierSummary) -> str:
    """The p99 cell: marked † when it covers under half of the tier's requests."""
    p99 = _fmt(t.latency_ms.p99)
    if t.latency_ms.p99 is not None and not p99_comparable(t.requests,
                                                           t.request_outcomes.get("ok", 0)):
        return p99 + " †"
    return p99


def _val(x) -> str:
    """A value as written (full precision), or "–" when missing."""
    return "–" if x is None else str(x)


def tier_table(tiers: Sequence[TierSummary]) -> list[str]:
    """The per-tier table (Markdown rows), also printed by the CLI. With several accounts
    CU/12s and $/month are the plan's: every account's, added up."""
    rows = ["| tier | CU/12s | $/month | requests | attempts | throttle rate | phantom | "
            "failure rate | p50 ms | p99 ms | peak reserved | peak settled | SLO |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for t in tiers:
        lat = t.latency_ms
        # Several accounts: the whole plan's budget and price (see the Accounts table).
        plan = t.plan
        cu = t.cu.limit if plan else t.cu_per_window
        usd = plan.monthly_usd if plan else t.monthly_usd
        rows.append(
            f"| {t.tier} | {_fmt(cu, 0)} | {_fmt(usd, 0)} | "
            f"{_fmt(t.requests)} | {_fmt(t.attempts)} | {t.throttle_rate:.2%} | "
            f"{_fmt(t.phantom_throttles)} | {t.failure_rate:.2%} | {_fmt(lat.p50)} | "
            f"{_p99(t)} | {_fmt(t.cu.peak_window_reserved, 0)} | "
            f"{_fmt(t.cu.peak_window_settled, 0)} | "
            f"{decided.verdict(t)} |")
    return rows


COST_NOTE = (
    "CU columns: *reserved* and *settled* sum the attempts of `requests.parquet` (HTTP "
    "requests and websocket handshakes): what the 12-second window admitted, and what those "
    "attempts finally cost. *Publish* is the CU of events published on open websocket "
    "streams; each is charged when published (reserved = settled), so it counts in the "
    "windows but has no row in `requests.parquet`. *Charged* = settled + publish: every CU "
    "billed in the run. The daily allowance counts the same CU per UTC day, so for a run "
    "within one UTC day *used (max day)* equals *charged*. *Lasts at this rate* (runs "
    "shorter than a day): the daily allowance over the charged CU per simulated hour -- "
    "how long the allowance would last were the run's rate kept up; unless the scenario's "
    "`[slo]` sets `allowance_must_last_day = false`, a tier whose allowance lasts under "
    "24 h fails the SLO.")


def cost_table(tiers: Sequence[TierSummary]) -> list[str]:
    """CU per tier, with the column that each kind of CU goes in named in the header."""
    rows = ["| tier | CU reserved (requests + handshakes) | CU settled (requests + handshakes) "
            "| CU publish (stream events) | CU charged (settled + publish) | daily allowance "
            "| used (max day) | ran out at | lasts at this rate |",
            "|---|---:|---:|---:|---:|---:|---:|---|---:|"]
    for t in tiers:
        d, cu = t.daily_allowance, t.cu
        publish = t.websockets.cu_publish if t.websockets else 0.0
        rows.append(f"| {t.tier} | {_fmt(cu.reserved, 0)} | {_fmt(cu.settled, 0)} | "
                    f"{_fmt(publish, 0)} | {_fmt(cu.settled + publish, 0)} | "
                    f"{_fmt(d.allowance_cu, 0)} | {_fmt(d.used_cu, 0)} | "
                    f"{_val(d.ran_out_at)} | {_lasts(d.lasts_h)} |")
    return rows


def connections_table(tiers: Sequence[TierSummary]) -> list[str]:
    """HTTP/2 connection figures per tier, or one row when every tier shows the same figures."""
    rows = ["| tier | opened | peak active | 430 | 421 | attempts that waited for a stream | "
            "mean wait ms | p99 wait ms |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    cells = []
    for t in tiers:
        c = t.connections
        w = c.stream_wait_ms
        cells.append(f"{_fmt(c.opened)} | {_fmt(c.peak_active)} | "
                     f"{_fmt(c.refused_430)} | {_fmt(c.refused_421)} | "
                     f"{_fmt(c.attempts_waiting_for_stream)} | {_fmt(w.mean, 2)} | "
                     f"{_fmt(w.p99, 2)} |")
    if len(tiers) > 1 and len(set(cells)) == 1:
        return [*rows, f"| all {len(tiers)} tiers (identical) | {cells[0]}"]
    return rows + [f"| {t.tier} | {row}" for t, row in zip(tiers, cells, strict=True)]


ACCOUNTS_NOTE = (
    "Each account has its own 12-second CU window, daily allowance, websocket slot cap and "
    "HTTP/2 connection limits; an account with a fixed tier keeps it in every tier's run, the "
    "others take the tier under study. Plan $/month: the accounts' prices added up, each at "
    "its own tier. Requests and attempts are counted by the key they carried; a key of no "
    "account (401) counts for none.")


def accounts_table(tiers: Sequence[TierSummary]) -> list[str]:
    """One row per tier and account (scenarios with more than one account), else none."""
    if not any(t.plan and len(t.plan.accounts) > 1 for t in tiers):
        return []
    rows = ["| tier studied | plan $/month | account | its tier | $/month | requests | "
            "attempts | throttle rate | failure rate | p99 ms | CU settled | peak window CU | "
            "CU/12s | ran out at | connections | 430 | ws ok | 435 | peak slots / cap |",
            "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"
            "---:|---:|---:|"]
    for t in tiers:
        plan = t.plan
        if not plan:
            continue
        for i, a in enumerate(plan.accounts):
            head = (f"{t.tier} | {_fmt(plan.monthly_usd, 0)}" if i == 0 else " | ")
            fixed = " (fixed)" if a.fixed_tier else ""
            rows.append(
                f"| {head} | {a.account} | {a.tier}{fixed} | {_fmt(a.monthly_usd, 0)} | "
                f"{_fmt(a.requests)} | {_fmt(a.attempts)} | {a.throttle_rate:.2%} | "
                f"{a.failure_rate:.2%} | {_fmt(a.latency_p99_ms)} | "
                f"{_fmt(a.cu_settled, 0)} | {_fmt(a.peak_window_used, 0)} | "
                f"{_fmt(a.cu_per_window, 0)} | {_val(a.daily_allowance.ran_out_at)} | "
                f"{_fmt(a.connections_opened)} | {_fmt(a.refused_430)} | "
                f"{_fmt(a.ws_handshakes_ok)} | {_fmt(a.ws_refused_435)} | "
                f"{_fmt(a.peak_live_slots)} / {_fmt(a.ws_cap)} |")
    return ["## Accounts", "", *rows, "", ACCOUNTS_NOTE, ""]


def _limiter_line(limiter: dict) -> str:
    utc = limiter["alignment"] == "utc"
    phase = (f" (phase {limiter.get('phase_s', 0):g} s after the UTC 12-s grid)"
             if utc else "")
    return (f"- limiter: windows aligned `{limiter['alignment']}`{phase}, refunds to "
            f"`{limiter['refund_to']}`")


def outcomes_table(tiers: Sequence[TierSummary]) -> list[str]:
    """Attempts per outcome and tier; the columns are the outcomes the summary counts."""
    names = list(tiers[0].outcomes) if tiers else []
    rows = ["| tier | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    rows += [f"| {t.tier} | " + " | ".join(_fmt(t.outcomes[n]) for n in names) + " |"
             for t in tiers]
    return rows


def websockets_table(tiers: Sequence[TierSummary]) -> list[str]:
    """Handshakes by outcome, connected time, events and CU per tier (tiers with
    websockets)."""
    rows = ["| tier | cap | handshakes " + " | ".join(HANDSHAKE_OUTCOMES) + " | connected | "
            "events delivered | events lost | CU connect | CU publish | CU requests |",
            "|---|---:|" + "---:|" * len(HANDSHAKE_OUTCOMES)
            + "---:|---:|---:|---:|---:|---:|"]
    for t in tiers:
        w = t.websockets
        rows.append(
            f"| {t.tier} | {_val(t.ws_cap)} | "
            + " | ".join(_fmt(w.handshakes[k]) for k in HANDSHAKE_OUTCOMES) + " | "
            f"{_pct(w.connected_fraction)} | {_fmt(w.events_delivered)} | "
            f"{_fmt(w.events_lost)} | {_fmt(w.cu_connect, 0)} | "
            f"{_fmt(w.cu_publish, 0)} | {_fmt(w.cu_requests, 0)} |")
    return rows


def margin_sentence(t: TierSummary) -> str:
    """A tier's margin, the tighter first: its busiest 12-second window against its
    budget, and the growth the daily allowance allows (hours it lasts at this rate / 24)
    when known."""
    peak, budget = t.cu.peak_window_used, t.cu.limit
    window = (f"the busiest 12-second window used {_fmt(peak, 0)} CU of its "
              f"{_fmt(budget, 0)} CU budget ({peak / budget:.0%}; "
              f"{_fmt(budget - peak, 0)} CU to spare)" if budget else
              f"the busiest 12-second window used {_fmt(peak, 0)} CU")
    allowance, grow = decided.allowance_growth(t), decided.window_growth(t)
    if allowance is None:
        return window
    hours = decided.allowance_hours(t)
    allowed = (f"{allowance:.2f}x (it lasts {hours:,.1f} h at this rate; an assumed number, "
               "not shown by the spec)")
    if decided.tighter_margin(t) == "daily_allowance":
        return (f"the daily allowance limits growth to {allowed}; the window would allow "
                + (f"{grow:.2f}x: " if grow is not None else "") + window)
    return (f"the 12-second window limits growth to {grow:.2f}x: {window}; the daily "
            f"allowance would allow {allowed}")


def margin_lines(summary: RunSummary) -> list[str]:
    """The recommended tier's margin (:func:`margin_sentence`), and its headroom when the
    run was asked for it (``--headroom``)."""
    rec = summary.recommended
    assumed = decided.assumption_line(summary)
    if rec.tier is None:
        lines = [f"- {line}" for line in (assumed, rec.headroom) if line]
        return [*lines, ""] if lines else []
    t = summary.tier(rec.tier)
    lines = [f"- margin: {margin_sentence(t)}"]
    if assumed:
        lines.insert(0, f"- {assumed}")
    if rec.headroom:
        lines.append(f"- headroom: {rec.headroom}")
    return [*lines, ""]


def render(summary: RunSummary, plots: list[str]) -> str:
    """The Markdown report."""
    rec, slo, tiers = summary.recommended, summary.slo, summary.tiers
    lines = [
        f"# capsim report: {summary.scenario}",
        "",
        summary.description or "",
        "",
        f"- scenario file: `{_val(summary.scenario_file)}`",
        f"- simulated: {summary.start} for {summary.duration_s:,.0f} s, "
        f"seed {summary.seed}",
        _limiter_line(summary.limiter),
        f"- SLO: throttle rate ≤ {slo.max_throttle_rate:.2%}, failure rate ≤ "
        f"{slo.max_failure_rate:.2%}, p99 latency ≤ {slo.p99_latency_ms:,.0f} ms"
        + (", daily allowance lasts ≥ 24 h at this rate" if slo.allowance_must_last_day
           else ""),
        f"- capsim {summary.capsim_version}"
        + (f", {summary.engine} engine (the SimPy model's rows)" if summary.engine else ""),
        f"- API keys shown as pseudonyms (HMAC-SHA256; secret: "
        f"{summary.pseudonym_secret or 'unknown'})",
        "",
        "## Recommendation",
        "",
        f"**{rec.tier or 'No tier'}** — {rec.reason}.",
        "",
        *margin_lines(summary),
        *how_sure(summary),
        *across_replications(summary),
        "## Tiers",
        "",
        *tier_table(tiers),
        "",
        "Throttle rate: attempts refused by the 12-second CU window (434, -32005, "
        "ws_cu_rejected) over all attempts. Phantom: throttles that would have fitted had "
        "in-flight reservations already settled. Latency: successful requests, first send "
        "to final reply, retries included."
        + "".join(f" {note}" for note in p99_notes(tiers)),
        "",
        *[f"{line}\n" for line in decided.verdict_notes(tiers)],
        *accounts_table(tiers),
        "## Outcomes by tier (attempts)",
        "",
        *outcomes_table(tiers),
        "", "## Cost and allowance", "", *cost_table(tiers), "", COST_NOTE,
        "", "## HTTP/2 connections", "", *connections_table(tiers),
    ]
    if any(t.websockets for t in tiers):
        lines += ["", "## Websockets", "", *websockets_table(tiers)]
    failing = [t for t in tiers if not t.meets_slo]
    if failing:
        lines += ["", "## Why tiers fail the SLO", ""]
        lines += [f"- **{t.tier}**"
                  + (f" ({why})" if (why := decided.decided_sentence(t)) else "")
                  + ": " + "; ".join(t.slo_violations) + _by_account(t, summary.slo)
                  for t in failing]
    lines += ["", "## Plots", ""]
    lines += [f"![{p}]({p})" for p in plots]
    lines += ["", "## Assumptions", "", "Model:", ""]
    lines += [f"- {a}" for a in summary.assumptions.model]
    lines += ["", "Pricing (not shown by the spec; replace with your contract's numbers):", "",
              "| setting | value | from |", "|---|---:|---|"]
    lines += [f"| `{p.name}` | {_val(p.value)} | {_val(p.source)} |"
              for p in summary.assumptions.pricing]
    if summary.notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in summary.notes]
    return "\n".join(lines) + "\n"


def account_breaches(a, slo) -> list[str]:
    """What one account of a plan breaks of ``slo``, in words (empty: it meets it).
    The account's own figures against the run's SLO, compared by
    :func:`~sim.metrics.decided.slo_breaches` (one home for the comparisons): its throttle
    and failure rates, its p99 (an account with no successful request has none to
    compare, its failure rate speaks for it) and, when the SLO asks for it, the hours its
    own allowance lasts."""
    figures = {"throttle_rate": a.throttle_rate, "failure_rate": a.failure_rate,
               "latency_ms": {"p99": a.latency_p99_ms},
               "daily_allowance": {"lasts_h": a.daily_allowance.lasts_h}}
    words = {"throttle_rate": lambda b: f"throttle rate {b.value:.2%} > {b.limit:.2%}",
             "failure_rate": lambda b: f"failure rate {b.value:.2%} > {b.limit:.2%}",
             "p99_latency": lambda b: f"p99 {_fmt(b.value, 0)} ms > {_fmt(b.limit, 0)} ms",
             "daily_allowance": lambda b: f"its allowance lasts {b.value:.1f} h"}
    return [words[b.criterion](b) for b in slo_breaches(figures, slo)
            if b.value is not None]


def _by_account(t: TierSummary, slo) -> str:
    """With several accounts: which account fails and why, and which meet (else "")."""
    if t.plan is None:
        return ""
    parts = []
    for a in t.plan.accounts:
        bad = account_breaches(a, slo)
        parts.append(f"**{a.account}** ({a.tier}) fails: {', '.join(bad)}" if bad
                     else f"{a.account} ({a.tier}) meets it")
    return ". By account: " + "; ".join(parts)
