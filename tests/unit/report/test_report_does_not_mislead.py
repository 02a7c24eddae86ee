"""The report does not mislead a planner (issue 21, item 14).

The built-in scenario sends mostly RPC requests: on the Search tier 96 % of them get 402
(the API is not in the selection), and its p99 latency covers only the few search
requests that succeeded. Every figure checked here is recomputed from the attempt rows
or the window table, not read back from the summary."""

from __future__ import annotations

from dataclasses import replace

import matplotlib
import pytest
from click.testing import CliRunner
from matplotlib.colors import to_rgba

from sim.cli.main import main
from sim.config.resolved import load
from sim.config.tiers import find_tier
from sim.report import markdown, plots
from sim.runner.run import run

matplotlib.use("Agg")
TIERS = ("Search", "RPC + Search", "Professional bundle")


@pytest.fixture(scope="module")
def output():
    loaded = load(None, ["duration=130"])
    return run(replace(loaded, tiers=tuple(find_tier(n) for n in TIERS)))


@pytest.fixture(scope="module")
def final(output):
    """Each tier's logical requests: the outcome of each request's last attempt."""
    a = output.attempts.sort_values(["tier", "request_id", "attempt"])
    last = a.groupby(["tier", "request_id"], observed=True)["outcome"].last()
    return {t: last.loc[t] for t in TIERS}


def test_a_p99_over_under_half_the_requests_is_not_comparable(output, final):
    """Item 14: no green bar, and a † in the tier table, for a p99 over < half the requests."""
    by_price = sorted(output.summary.tiers, key=lambda t: (t.monthly_usd, t.cu_per_window))
    ok_share = {t: float((final[t] == "ok").mean()) for t in TIERS}
    assert ok_share["Search"] < 0.5 < ok_share["Professional bundle"]  # the premise
    fig = plots.comparison_figure(by_price, output.summary.slo, output.summary.recommended.tier)
    p99_ax = fig.axes[2]
    bars = [p for p in p99_ax.patches if p.get_width() == pytest.approx(0.6)]
    texts = [t.get_text() for t in p99_ax.texts]
    md = markdown.render(output.summary, [])
    for bar, t in zip(bars, by_price, strict=True):
        fair = ok_share[t.tier] >= 0.5
        assert (bar.get_facecolor() == to_rgba("tab:gray")) == (not fair), t.tier
        assert bar.get_facecolor() != to_rgba("tab:green") or fair, t.tier
        row = next(r for r in md.splitlines() if r.startswith(f"| {t.tier} |"))
        assert ("†" in row) == (not fair), row
    assert sum("not comparable" in s for s in texts) == 1
    assert "†: a p99 over fewer than half" in md


def test_why_tiers_fail_names_the_402_and_its_cause(output, final):
    """Item 14: "Why tiers fail" says 402 because the API is not in the selection, with
    the share of requests it hit."""
    search = output.summary.tier("Search")
    share = float((final["Search"] == "402").mean())
    (failure,) = [v for v in search.slo_violations if v.startswith("failure rate")]
    assert f"402 for {share:.1%} of requests" in failure
    assert "not in the selection" in failure and "svc_call" in failure
    md = markdown.render(output.summary, [])
    assert failure in md.split("## Why tiers fail the SLO", 1)[1]


def test_the_recommended_tiers_margin_is_in_the_report(output):
    """Item 14: the busiest window of the recommended tier against its budget."""
    s = output.summary
    rec = s.recommended.tier
    assert rec == "Professional bundle"
    w = output.windows[output.windows["tier"] == rec]
    peak, budget = float(w["peak_used_cu"].max()), float(w["limit_cu"].max())
    md = markdown.render(s, [])
    head = md.split("## Tiers", 1)[0]
    assert (f"used {peak:,.0f} CU of its {budget:,.0f} CU budget ({peak / budget:.0%}; "
            f"{budget - peak:,.0f} CU to spare)") in head


def test_run_headroom_puts_the_headroom_in_the_report(tmp_path):
    """Item 14: ``capsim run --headroom`` writes its headroom line in report.md and in
    summary.json, not only on stdout."""
    path = tmp_path / "h.toml"
    path.write_text("""name = "h"
duration = 120
tiers = ["Mine"]
[[custom_tiers]]
name = "Mine"
cu_per_window = 1010
[account]
keys = ["k"]
[clients.default]
retry = { policy = "none" }
[slo]
max_throttle_rate = 0.0
allowance_must_last_day = false
[[sources]]
name = "calls"
key = "k"
mix = { svc_call = 1.0 }
arrival = { process = "constant", rate = 2.5 }
""")
    out = tmp_path / "o"
    r = CliRunner().invoke(main, ["run", str(path), "--headroom", "--out", str(out)])
    assert r.exit_code == 0, r.output
    line = next(ln for ln in r.output.splitlines() if ln.startswith("Mine: meets the SLO"))
    assert f"- headroom: {line}" in (out / "report.md").read_text(encoding="utf-8")
    import json

    assert json.loads((out / "summary.json").read_text())["recommended"]["headroom"] == line
