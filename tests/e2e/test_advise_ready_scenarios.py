"""``capsim advise`` on every ready scenario (short runs): every cheaper tier gets a
change or a reason, and the dollars saved are the prices' difference (slow by folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

import sim
from sim.advisor.result import FOUND, NONE, SKIPPED, UNFINISHED, UNVERIFIED

ROOT = Path(__file__).resolve().parents[2]
READY = [None, *sorted((ROOT / "workloads").glob("*.toml")),
         ROOT / "workloads" / "examples" / "bursty-rpc.toml"]


@pytest.mark.parametrize("path", READY, ids=lambda p: "default" if p is None else p.stem)
def test_every_cheaper_tier_gets_a_change_or_a_reason(path):
    advice = sim.advise(path, overrides=["duration=240"], replications=1, budget=150)
    for t in advice.tiers:
        assert t.status in (FOUND, UNVERIFIED, NONE, SKIPPED, UNFINISHED)
        assert t.change if t.status in (FOUND, UNVERIFIED) else t.reason
        if t.status == FOUND:
            assert t.snippet and t.cost is not None
        if advice.recommended_usd is not None:
            assert t.saved_usd_per_month == advice.recommended_usd - t.monthly_usd > 0
    assert advice.runs <= 150
