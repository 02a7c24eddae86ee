"""``report.md``: the run in words and tables, plots linked."""

from __future__ import annotations


def _fmt(x, nd=1) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:,.{nd}f}"
    return f"{x:,}" if isinstance(x, int) else str(x)


def tier_table(tiers: list[dict]) -> list[str]:
    """The per-tier table (Markdown rows), also printed by the CLI."""
    rows = ["| tier | CU/12s | $/month | requests | attempts | throttle rate | phantom | "
            "failure rate | p50 ms | p99 ms | peak reserved | peak settled | SLO |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for t in tiers:
        lat = t["latency_ms"]
        rows.append(
            f"| {t['tier']} | {_fmt(t['cu_per_window'], 0)} | {_fmt(t['monthly_usd'], 0)} | "
            f"{_fmt(t['requests'])} | {_fmt(t['attempts'])} | {t['throttle_rate']:.2%} | "
            f"{_fmt(t['phantom_throttles'])} | {t['failure_rate']:.2%} | {_fmt(lat['p50'])} | "
            f"{_fmt(lat['p99'])} | {_fmt(t['cu']['peak_window_reserved'], 0)} | "
            f"{_fmt(t['cu']['peak_window_settled'], 0)} | {'meets' if t['meets_slo'] else 'fails'} |")
    return rows


def render(summary: dict, plots: list[str]) -> str:
    """The Markdown report."""
    rec = summary["recommended"]
    slo = summary["slo"]
    lines = [
        f"# capsim report: {summary['scenario']}",
        "",
        summary["description"] or "",
        "",
        f"- scenario file: `{summary['scenario_file']}`",
        f"- simulated: {summary['start']} for {summary['duration_s']:,.0f} s, seed {summary['seed']}",
        f"- limiter: windows aligned `{summary['limiter']['alignment']}`, refunds to "
        f"`{summary['limiter']['refund_to']}`",
        f"- SLO: throttle rate ≤ {slo['max_throttle_rate']:.2%}, failure rate ≤ "
        f"{slo['max_failure_rate']:.2%}, p99 latency ≤ {slo['p99_latency_ms']:,.0f} ms",
        f"- capsim {summary['capsim_version']}",
        f"- API keys shown as pseudonyms (HMAC-SHA256; secret: "
        f"{summary.get('pseudonym_secret') or 'unknown'})",
        "",
        "## Recommendation",
        "",
        f"**{rec['tier']}** — {rec['reason']}." if rec["tier"] else f"**None** — {rec['reason']}.",
        "",
        "## Tiers",
        "",
        *tier_table(summary["tiers"]),
        "",
        "Throttle rate: attempts refused by the 12-second CU window (434, -32005, "
        "ws_cu_rejected) over all attempts. Phantom: throttles that would have fitted had "
        "in-flight reservations already settled. Latency: successful requests, first send "
        "to final reply, retries included.",
        "",
        "## Outcomes by tier (attempts)",
        "",
    ]
    names = list(summary["tiers"][0]["outcomes"]) if summary["tiers"] else []
    lines.append("| tier | " + " | ".join(names) + " |")
    lines.append("|---|" + "---:|" * len(names))
    for t in summary["tiers"]:
        lines.append(f"| {t['tier']} | " + " | ".join(_fmt(t["outcomes"][n]) for n in names) + " |")
    lines += ["", "## Cost and allowance", "",
              "| tier | CU reserved | CU settled | daily allowance | used (max day) | ran out at |",
              "|---|---:|---:|---:|---:|---|"]
    for t in summary["tiers"]:
        d = t["daily_allowance"]
        lines.append(f"| {t['tier']} | {_fmt(t['cu']['reserved'], 0)} | {_fmt(t['cu']['settled'], 0)} | "
                     f"{_fmt(d['allowance_cu'], 0)} | {_fmt(d['used_cu'], 0)} | {d['ran_out_at'] or '–'} |")
    lines += ["", "## HTTP/2 connections", "",
              "| tier | opened | peak active | 430 | 421 | attempts that waited for a stream | "
              "mean wait ms | p99 wait ms |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for t in summary["tiers"]:
        c = t["connections"]
        w = c["stream_wait_ms"]
        lines.append(f"| {t['tier']} | {_fmt(c['opened'])} | {_fmt(c['peak_active'])} | "
                     f"{_fmt(c['refused_430'])} | {_fmt(c['refused_421'])} | "
                     f"{_fmt(c['attempts_waiting_for_stream'])} | {_fmt(w['mean'], 2)} | "
                     f"{_fmt(w['p99'], 2)} |")
    if any(t.get("websockets") for t in summary["tiers"]):
        lines += ["", "## Websockets", "",
                  "| tier | cap | handshakes ok | 435 | ws_cu_rejected | 401 | 402 | connected | "
                  "events delivered | events lost | CU connect | CU publish | CU requests |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for t in summary["tiers"]:
            w = t["websockets"]
            h = w["handshakes"]
            lines.append(
                f"| {t['tier']} | {t['ws_cap']} | {_fmt(h['ok'])} | {_fmt(h['435'])} | "
                f"{_fmt(h['ws_cu_rejected'])} | {_fmt(h['401'])} | {_fmt(h['402'])} | "
                f"{w['connected_fraction']:.1%} | {_fmt(w['events_delivered'])} | "
                f"{_fmt(w['events_lost'])} | {_fmt(w['cu_connect'], 0)} | "
                f"{_fmt(w['cu_publish'], 0)} | {_fmt(w['cu_requests'], 0)} |")
    failing = [t for t in summary["tiers"] if not t["meets_slo"]]
    if failing:
        lines += ["", "## Why tiers fail the SLO", ""]
        lines += [f"- **{t['tier']}**: " + "; ".join(t["slo_violations"]) for t in failing]
    lines += ["", "## Plots", ""]
    lines += [f"![{p}]({p})" for p in plots]
    lines += ["", "## Assumptions", "", "Model:", ""]
    lines += [f"- {a}" for a in summary["assumptions"]["model"]]
    lines += ["", "Pricing (not shown by the spec; replace with your contract's numbers):", "",
              "| setting | value | from |", "|---|---:|---|"]
    lines += [f"| `{p['name']}` | {p['value']} | {p['source']} |"
              for p in summary["assumptions"]["pricing"]]
    if summary["notes"]:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in summary["notes"]]
    return "\n".join(lines) + "\n"
