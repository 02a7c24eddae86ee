"""The "Across replications" section and stdout lines, from a hand-made section."""

from __future__ import annotations

import pytest

import sim
from sim.core.intervals import proportion_interval
from sim.report.markdown import render
from sim.report.replications import across_replications, held_line, stdout_lines
from sim.results.replications import (
    IntervalFigure,
    ProportionFigure,
    ReplicationRun,
    ReplicationsSummary,
    ReplicationTier,
)


def _section(n: int, failed_in: int) -> ReplicationsSummary:
    share = lambda k: ProportionFigure.of(proportion_interval(k, n))  # noqa: E731
    iv = IntervalFigure.of([0.01, 0.03])
    none = IntervalFigure.of([])
    return ReplicationsSummary(
        n=n, confidence_level=0.95, proportion_interval="wilson", seed_rule="r", records="0",
        recommended="RPC", recommendation_held=share(n - 1), recommended_met_slo=share(n - 1),
        meeting_slo_in_every_replication="Advanced bundle",
        runs=tuple(ReplicationRun(replication=r, seed=str(r),
                                  recommended="Advanced bundle" if r == failed_in else "RPC",
                                  meeting_slo=()) for r in range(n)),
        tiers=(ReplicationTier(tier="RPC", slo_met=share(n - 1), throttle_rate=iv,
                               failure_rate=iv, p99_latency_ms=none, cu_settled=iv,
                               cu_peak_window_used=iv, allowance_lasts_h=none),))


@pytest.fixture(scope="module")
def summary():
    return sim.run(None, tiers=["RPC"], overrides=["duration=12"], records="none").summary


def test_held_line_in_the_issue_words():
    assert held_line(_section(10, 4)).startswith(
        "recommended tier RPC held in 9 of 10 replications (95 % interval 60–98 %)")


def test_section_lists_each_replication_up_to_twenty(summary):
    ten = across_replications(summary.model_copy(update={"replications": _section(10, 4)}))
    text = "\n".join(ten)
    assert ten[0] == "## Across replications"
    assert "RPC in 9: 0, 1, 2, 3, 5, 6, 7, 8, 9; Advanced bundle in 1: 4." in text
    assert "| RPC | 9 of 10 (95 % interval 60–98 %) | 2.00 % ± 12.71 |" in text  # t(.975,1)=12.706
    many = "\n".join(across_replications(
        summary.model_copy(update={"replications": _section(30, 4)})))
    assert "RPC in 29; Advanced bundle in 1." in many


def test_nothing_for_one_replication(summary):
    assert across_replications(summary) == [] and stdout_lines(summary) == []
    assert "Across replications" not in render(summary, [])
    lines = stdout_lines(summary.model_copy(update={"replications": _section(10, 4)}))
    assert lines[0].startswith("across 10 replications") and "p99 – ms" in lines[1]
