"""A small, fast scenario for sweep and headroom tests (two custom tiers, two variants)."""

from __future__ import annotations

from pathlib import Path

SCENARIO = """
name = "tiny"
seed = 3
duration = 120
tiers = ["Small", "Big"]

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

[account]
keys = ["k"]

[[regions]]
name = "here"
rtt_ms = 10

[clients.default]
retry = { policy = "exponential", max_attempts = 3, base_s = 0.5 }

[[sources]]
name = "calls"
key = "k"
arrival = { process = "poisson", rate = 6.0 }

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
"""


def write_scenario(folder: Path, text: str = SCENARIO) -> Path:
    path = folder / "tiny.toml"
    path.write_text(text, encoding="utf-8")
    return path
