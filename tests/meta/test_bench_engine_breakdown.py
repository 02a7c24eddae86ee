"""``benchmarks/bench_engine.py --breakdown`` measures the least work of an attempt on the
real classes: it must keep calling them with the rows' current columns (the request row
gained ``key``), or the breakdown crashes instead of measuring."""

from __future__ import annotations

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the scripts import their siblings by name

import bench_engine  # noqa: E402


def test_least_work_runs_every_piece_on_the_real_classes():
    pieces = bench_engine.least_work(n=2_000)
    assert set(pieces) == {"request object", "limiter reserve + settle",
                           "HTTP/2 stream acquire + release", "attempt + request rows"}
    assert all(math.isfinite(v) and v >= 0 for v in pieces.values())
