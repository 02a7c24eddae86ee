"""Every ready scenario (the built-in default and workloads/*.toml) runs at a very low and
a very high load, and its summary holds only what a summary may hold (issue 21, item 7).

At load 0.01 a closed-loop websocket client's ``connections`` round to 0 (load rule:
floor(n x + 1/2)), so no connection is wanted; before the fix the connected fraction was
0/0 = NaN and the summary refused it (``capsim headroom`` on the default scenario and on
workloads/streams-bot.toml, and ``capsim run --set load=0.2 --tier RPC`` crashed).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import sim
from sim.report.markdown import render
from sim.results.summary import RunSummary

ROOT = Path(__file__).resolve().parents[2]
READY = [None, *sorted((ROOT / "workloads").glob("*.toml"))]


def _finite_everywhere(value, where="summary"):
    """Every number in the summary's JSON is finite (JSON has no NaN; the summary's own
    writer would refuse one)."""
    if isinstance(value, dict):
        for k, v in value.items():
            _finite_everywhere(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _finite_everywhere(v, f"{where}[{i}]")
    elif isinstance(value, float):
        assert math.isfinite(value), where


@pytest.mark.parametrize("load", [0.01, 10])
@pytest.mark.parametrize("path", READY, ids=lambda p: "default" if p is None else p.stem)
def test_ready_scenario_runs_at_any_load(path, load):
    """Item 7: no crash and a valid summary at loads 0.01 and 10."""
    out = sim.run(path, overrides=["duration=60", f"load={load}"], records="none")
    summary = out.summary
    assert summary.tiers
    data = json.loads(summary.model_dump_json())
    _finite_everywhere(data)
    assert RunSummary.model_validate(data) == summary
    for t in summary.tiers:
        if t.websockets is not None:
            f = t.websockets.connected_fraction
            if t.websockets.wanted_s == 0:
                assert f is None
            else:
                assert f is not None and 0 <= f <= 1
    assert "nan" not in render(summary, []).lower()
