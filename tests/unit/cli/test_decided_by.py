"""What decided each tier, as ``capsim run`` prints and writes it (issue 29 part 1).

Two custom tiers take a constant 2 svc_call/s (20 CU each: 40 CU/s, 144,000 CU an hour,
480 CU in a 12-second window) with a window far from full (10,000 CU). Small's allowance
lasts 12 h at this rate (1,728,000 CU), Big's 48 h (6,912,000 CU): Small fails on the
allowance alone -- an assumed number -- and Big, recommended, has the allowance as its
tighter margin (48 / 24 = 2x against the window's 10,000 / 480 = 20.8x).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from scenarios import write_scenario

from sim.cli.main import main

TABLES = """
[[custom_tiers]]
name = "Small"
apis = ["rpc"]
cu_per_window = 10000
daily_allowance_cu = 1728000
monthly_usd = 10
[[custom_tiers]]
name = "Big"
apis = ["rpc"]
cu_per_window = 10000
daily_allowance_cu = 6912000
monthly_usd = 20
[[regions]]
name = "here"
rtt_ms = 0
[clients.default]
retry = { policy = "none" }
[methods.svc_call]
api = "rpc"
service_time = { dist = "constant", value = 0.01 }
"""
SOURCES = """[[sources]]
name = "calls"
key = "k"
arrival = { process = "constant", rate = 2 }
mix = { svc_call = 1.0 }
"""


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    d = tmp_path_factory.mktemp("decided")
    path = write_scenario(d, name="decided", duration=120, tiers=["Small", "Big"],
                          tables=TABLES, sources=SOURCES)
    r = CliRunner().invoke(main, ["run", str(path), "--out", str(d / "out")])
    assert r.exit_code == 0, r.output
    return r.output, json.loads((d / "out" / "summary.json").read_text()), \
        (d / "out" / "report.md").read_text(), d / "out"


def test_the_premise(ran):
    _, summary, *_ = ran
    small, big = summary["tiers"]
    assert small["daily_allowance"]["lasts_h"] == pytest.approx(12.0, rel=0.01)
    assert big["daily_allowance"]["lasts_h"] == pytest.approx(48.0, rel=0.01)
    assert small["throttle_rate"] == 0 and small["failure_rate"] == 0


def test_stdout_marks_a_tier_failing_on_the_assumed_allowance(ran):
    out, *_ = ran
    small = next(line for line in out.splitlines() if line.startswith("| Small |"))
    big = next(line for line in out.splitlines() if line.startswith("| Big |"))
    assert small.rstrip().endswith("| fails: allowance* |")
    assert big.rstrip().endswith("| meets |")
    assert ("*: decided by an assumption: daily allowance, not shown by the spec"
            in out)


def test_summary_and_report_say_what_decided_it(ran):
    _, summary, report, _ = ran
    small, big = summary["tiers"]
    (cause,) = small["decided_by"]
    assert cause["cause"] == "daily_allowance" and cause["assumption"] is True
    assert cause["breaks"] == ["daily_allowance"]
    assert "decided_by" not in big  # a tier meeting the SLO has none
    why = report.split("## Why tiers fail the SLO", 1)[1]
    assert ("**Small** (decided by an assumption: daily allowance, not shown by the spec)"
            in why)


def test_the_margin_names_the_allowance_when_it_is_tighter(ran):
    out, _, report, _ = ran
    (line,) = [x for x in out.splitlines() if x.startswith("margin: ")]
    assert line.startswith("margin: the daily allowance limits growth to 2.00x")
    assert "the window would allow 20.83x" in line
    assert f"- {line}" in report


def test_a_recommendation_resting_on_the_allowance_says_so(ran):
    """Small is cheaper and fails on the assumed allowance alone: the recommendation of
    Big is decided by an assumption, on stdout and in the report."""
    out, _, report, _ = ran
    line = ("decided by an assumption: Small ($10), cheaper, fails only on the daily "
            "allowance, a number the spec does not show")
    assert line in out.splitlines()
    assert f"- {line}" in report.split("## Tiers", 1)[0]


def test_the_comparison_plot_has_an_allowance_panel(ran):
    """tier_comparison.png's fourth panel: the hours each allowance lasts (12 h, 48 h)
    against the dashed 24 h line, red under it, green over it; under Small's name, what
    decided it."""
    from matplotlib.colors import to_rgba

    import sim
    from sim.report import plots

    summary = sim.load_summary(ran[3])
    fig = plots.comparison_figure(summary.tiers, summary.slo, summary.recommended.tier)
    assert len(fig.axes) == 4
    panel = fig.axes[3]
    bars = [p for p in panel.patches if p.get_width() == pytest.approx(0.6)]
    assert [b.get_height() for b in bars] == pytest.approx([12.0, 48.0], rel=0.01)
    assert [b.get_facecolor() for b in bars] == [to_rgba("tab:red"), to_rgba("tab:green")]
    assert [list(ln.get_ydata()) for ln in panel.get_lines()] == [[24.0, 24.0]]
    labels = [t.get_text() for t in fig.axes[-1].get_xticklabels()]
    assert labels[0].startswith("Small") and labels[0].endswith("fails: allowance*")
    assert "fails" not in labels[1]
