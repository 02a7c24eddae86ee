"""The advisor's folder: advice.json reads back, report.md names each tier's change
with its snippet and the plot, and the plot is byte-stable."""

from __future__ import annotations

import json

from sim.advisor.report import write_advice
from sim.advisor.result import FOUND, NONE, Advice, ClientCost, TierAdvice


def _advice() -> Advice:
    cost = ClientCost(added_p50_ms=3.0, added_p99_ms=900.0, failure_rate=0.0,
                      added_failure_rate=0.0, dropped_share=0.0, cu_per_day=1e6,
                      base_cu_per_day=1e6)
    paced = TierAdvice(tier="RPC", monthly_usd=49, saved_usd_per_month=450, status=FOUND,
                       change=("pace client 'app' at 330 CU/s (burst 40 CU)",),
                       overrides=("clients.app.pacing={rate_cu_per_s=330.0, burst_cu=40.0}",),
                       snippet="[clients.app]\npacing = { rate_cu_per_s = 330.0, burst_cu = 40.0 }",
                       verified="3/3 replications meet the SLO", cost=cost,
                       pacing_cu_per_s=330.0, cu_per_window=4000, shortfall_before=30.0,
                       shortfall_after=0.9)
    none = TierAdvice(tier="Search", monthly_usd=99, saved_usd_per_month=400, status=NONE,
                      reason="the closest is ...", cu_per_window=6000,
                      shortfall_before=5.0, shortfall_after=2.0)
    return Advice(scenario="s", scenario_file="s.toml", recommended="Professional bundle",
                  recommended_usd=499, replications=3, budget=100, runs=20,
                  tiers=(paced, none), skipped_changes=(("batch sizing items", "why"),))


def test_the_folder_holds_the_answer_and_a_stable_plot(tmp_path):
    write_advice(_advice(), tmp_path / "a")
    write_advice(_advice(), tmp_path / "b")
    data = json.loads((tmp_path / "a" / "advice.json").read_text(encoding="utf-8"))
    assert [t["tier"] for t in data["tiers"]] == ["RPC", "Search"]
    assert data["tiers"][0]["saved_usd_per_month"] == 450
    md = (tmp_path / "a" / "report.md").read_text(encoding="utf-8")
    assert "![the change each cheaper tier needs](advice.png)" in md
    assert "| RPC | 49 | 450 | found | pace client 'app'" in md
    assert "pacing = { rate_cu_per_s = 330.0, burst_cu = 40.0 }" in md
    assert "| Search | 99 | 400 | none | the closest is ... |" in md
    assert "* batch sizing items: why" in md
    png = (tmp_path / "a" / "advice.png").read_bytes()
    assert png[:4] == b"\x89PNG" and png == (tmp_path / "b" / "advice.png").read_bytes()


def test_a_folder_capsim_did_not_make_is_refused(tmp_path):
    import pytest

    from sim.core.errors import CapsimError

    mine = tmp_path / "project"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(CapsimError, match="not a capsim advice folder"):
        write_advice(_advice(), mine)
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    write_advice(_advice(), tmp_path / "new")
    write_advice(_advice(), tmp_path / "new")  # its own folder: written again
