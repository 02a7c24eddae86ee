"""The commented scenario template ``capsim init`` writes: every table a first scenario
needs, with the other keys shown commented out. It loads as it stands (a test runs it);
docs/reference/scenario.md documents every key."""

from __future__ import annotations

TEMPLATE = '''\
# A capsim scenario: who calls what, how, for how long, against which tiers.
# Every key: docs/reference/scenario.md. Check it with `capsim validate {file}`,
# run it with `capsim run {file}`. Editors: `capsim schema > capsim-scenario.schema.json`
# and a first line `#:schema ./capsim-scenario.schema.json` give completion and checks
# as you type (Taplo / Even Better TOML: docs/how-to/edit-scenarios.md).

name = "{name}"
description = "What this account does"
seed = 1                          # same seed and inputs: the same summary.json
start = 2026-01-05T14:00:00Z      # simulated wall clock (UTC); sets the hour of day
duration = "30m"                  # "90s", "30m", "1h", "7d" or seconds
tiers = []                        # [] = the whole catalog (`capsim tiers`); or by name:
# tiers = ["RPC", "RPC + Search", "All 3 APIs"]
# load = 1.0                      # multiplies every source's rate

[account]
keys = ["app-key"]                # your API keys, by any name; never written in clear

[[regions]]
name = "eu-west"
rtt_ms = 20                       # network round trip to the service

[clients.default]
# What a client does when refused: "none", "immediate", "exponential" or "retry-after".
retry = {{ policy = "exponential", max_attempts = 4, base_s = 0.5, cap_s = 10 }}

[[sources]]
name = "web-app"
key = "app-key"
# Open loop: "poisson" (rate per second), "constant", "onoff" (bursts), "daily", "block",
# "ramp", "spikes". Or closed loop (instead of arrival):
# workers = {{ count = 8, think = {{ dist = "exponential", mean = 0.2 }} }}
# Or a recorded trace (`capsim init --trace FILE` writes one for you):
# trace = "recording.parquet"
arrival = {{ process = "poisson", rate = 10 }}
mix = {{ svc_call = 0.9, svc_pendingBlock = 0.1 }}   # method weights

# A sizing (Search API) source:
# [[sources]]
# name = "searcher"
# key = "app-key"
# arrival = {{ process = "poisson", rate = 2 }}
# mix = {{ "POST /v1/size" = 1.0 }}
# sizing = {{ items = {{ dist = "int_uniform", low = 1, high = 4 }}, profiles = {{ fast = 1.0 }} }}

[slo]
max_throttle_rate = 0.01          # share of requests refused by the 12-s CU window
max_failure_rate = 0.001          # share failing after every retry
p99_latency_ms = 2000
# allowance_must_last_day = true

# Your contract's prices (defaults: sim/data/pricing.toml, all assumptions):
# [pricing.rpc.method_cu]
# svc_call = 20
'''


def template_text(name: str, file: str) -> str:
    """The template, naming the scenario ``name`` and its file ``file`` in the comments."""
    return TEMPLATE.format(name=name, file=file)
