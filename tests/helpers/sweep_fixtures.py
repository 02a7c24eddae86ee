"""A small, fast scenario for sweep and headroom tests (two custom tiers, two variants)."""

from __future__ import annotations

from pathlib import Path

from scenarios import poisson_source, scenario_text
from scenarios import write_scenario as _write

SCENARIO = scenario_text(name="tiny", duration=120, tiers=["Small", "Big"], top="seed = 3\n",
                         sources=poisson_source(6.0, name="calls"), tables="""
[[custom_tiers]]
name = "Small"
cu_per_window = 2000
monthly_usd = 10
daily_allowance_cu = 1e12

[[custom_tiers]]
name = "Big"
cu_per_window = 6000
monthly_usd = 50
daily_allowance_cu = 1e12

[[regions]]
name = "here"
rtt_ms = 10

[clients.default]
retry = { policy = "exponential", max_attempts = 3, base_s = 0.5 }

[slo]
max_throttle_rate = 0.01
max_failure_rate = 0.01
p99_latency_ms = 2000

[[variants]]
name = "no retries"
set = { "clients.default.retry.policy" = "none" }

[[variants]]
name = "double traffic"
set = { load = 2.0 }
""")


def write_scenario(folder: Path, text: str = SCENARIO) -> Path:
    """``text`` (default: :data:`SCENARIO`) as ``folder/tiny.toml``."""
    return _write(folder, text, filename="tiny.toml")
