"""Several accounts (``[[accounts]]``): each has its own limiter, allowance, slots and
connection limits; a fixed-tier account keeps its tier; the plan's cost adds up.

Expected numbers come from exact arithmetic on constant arrivals (as in
``tests/validation/test_model_closed_forms.py``) and from the pricing table read here, never from
the model.
"""

from __future__ import annotations

import math
import tomllib
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import sim
from sim.config.pricing import default_pricing_table
from sim.config.resolved import load, validate
from sim.config.tiers import find_tier
from sim.core.errors import CapsimError
from sim.model import recorder as rc
from sim.model.engine import TierRun
from sim.report.markdown import render
from sim.runner.run import assemble
from sim.workload.demand import build_plan

W = 12.0
PRICING = default_pricing_table()
SVC_CALL_CU = PRICING["rpc"]["method_cu"]["svc_call"]
ZERO = {"dist": "constant", "value": 0.0}
METHODS = {"svc_call": {"api": "rpc", "service_time": ZERO},
           "svc_pendingBlock": {"api": "rpc", "service_time": ZERO},
           "POST /v1/size": {"api": "search", "service_time": ZERO}}
WORKLOAD = Path(__file__).resolve().parents[3] / "workloads" / "two-accounts.toml"


def price(tier: str) -> float:
    return PRICING["tiers"][tier]["monthly_usd"]


def raw_scenario(sources: list[dict], *, tiers: list[str], accounts: list[dict] | None = None,
                 account: dict | None = None, duration: float = 120.0, **extra) -> dict:
    raw = {"name": "accounts", "seed": 3, "duration": duration, "tiers": tiers,
           "regions": [{"name": "here", "rtt_ms": 0.0}],
           "clients": {"default": {"retry": {"policy": "none"}}},
           "sources": sources, "methods": METHODS, **extra}
    if accounts is not None:
        raw["accounts"] = accounts
    if account is not None:
        raw["account"] = account
    return raw


def constant(name: str, key: str, rate: Fraction, phase: Fraction, mix=None) -> dict:
    return {"name": name, "key": key, "mix": mix or {"svc_call": 1.0},
            "arrival": {"process": "constant", "rate": float(rate), "phase": float(phase)}}


def constant_count(per_window: Fraction, phase: Fraction, w: int) -> int:
    """Arrivals ``(j + phase) / rate`` in epoch window ``w`` (P = 12 rate per window):
    ``#{j >= 0 : P w <= j + phase < P (w + 1)}``."""
    def below(x: Fraction) -> int:
        return max(0, math.ceil(x))

    return below(per_window * (w + 1) - phase) - below(per_window * w - phase)


def run_summary(raw: dict):
    loaded = validate(raw, "test")
    plan = build_plan(loaded)
    results = [TierRun(plan, t).run() for t in loaded.tiers]
    return plan, results, assemble(plan, results).summary


# -- one account throttles exactly k a window, two accounts with half each do not -------

@pytest.mark.parametrize("k", [Fraction(1, 2), Fraction(1, 4), Fraction(3, 10)])
def test_two_accounts_with_half_the_traffic_each_vs_one_account(k):
    """Offered ``(1 + k) B / c`` calls a window against a budget of ``B`` CU: one account
    admits floor(B / c) and throttles the rest; two accounts, each with half the offer,
    get ``(1 + k) B / (2c) <= B / c`` each and admit everything."""
    budget = find_tier("RPC").cu_per_window
    admit = int(budget) // SVC_CALL_CU
    per_window = (1 + k) * admit  # whole-window offer of the one account
    rate = per_window / 12
    phase = Fraction(3, 10)
    n_windows, duration = 10, 120.0

    one = raw_scenario([constant("all", "a", rate, phase)], tiers=["RPC"],
                       account={"keys": ["a", "b"]}, duration=duration)
    # Half the rate each, interleaved: source "a" takes arrivals 0, 2, 4, ... of the
    # single stream ((j + phase) / rate), source "b" the odd ones.
    two_sources = [constant("half-a", "a", rate / 2, phase / 2),
                   constant("half-b", "b", rate / 2, (phase + 1) / 2)]
    two = raw_scenario(two_sources, tiers=["RPC"], duration=duration,
                       accounts=[{"name": "first", "keys": ["a"]},
                                 {"name": "second", "keys": ["b"]}])

    offered = [constant_count(per_window, phase, w) for w in range(n_windows)]
    half_a = [constant_count(per_window / 2, phase / 2, w) for w in range(n_windows)]
    half_b = [constant_count(per_window / 2, (phase + 1) / 2, w) for w in range(n_windows)]
    assert [x + y for x, y in zip(half_a, half_b, strict=True)] == offered  # same demand
    assert max(half_a + half_b) <= admit  # each half fits its own account's window

    _, (r1,), s1 = run_summary(one)
    throttled_one = sum(o - admit for o in offered)
    assert int(np.sum(r1.attempts["outcome"] == rc.RPC_32005)) == throttled_one
    assert s1.tiers[0].throttled == throttled_one
    assert Fraction(s1.tiers[0].throttled, sum(offered)) == 1 - Fraction(admit * n_windows,
                                                                         sum(offered))
    assert s1.tiers[0].plan is None  # [account]: no per-account part

    plan2, (r2,), s2 = run_summary(two)
    t2 = s2.tiers[0]
    assert t2.requests == sum(offered) and t2.throttled == 0
    assert np.all(r2.attempts["outcome"] == rc.OK)
    by_name = {a.account: a for a in t2.plan.accounts}
    assert by_name["first"].requests == sum(half_a)
    assert by_name["second"].requests == sum(half_b)
    assert by_name["first"].throttled == by_name["second"].throttled == 0
    assert by_name["first"].cu_settled == sum(half_a) * SVC_CALL_CU
    # Each account's windows hold its own half; the tier's figures add them up.
    assert [w.windows.admitted for w in r2.accounts] == [half_a, half_b]
    assert r2.windows.admitted == offered
    assert t2.cu.limit == 2 * budget
    assert t2.plan.monthly_usd == 2 * price("RPC")


def test_uneven_split_throttles_only_the_overloaded_account():
    """Account "busy" gets 2 B / c calls a window (throttles B / c of them), account
    "quiet" B / (2c) (throttles none): throttles are per account."""
    admit = int(find_tier("RPC").cu_per_window) // SVC_CALL_CU
    busy, quiet = Fraction(2 * admit), Fraction(admit, 2)
    raw = raw_scenario([constant("busy", "b", busy / 12, Fraction(1, 4)),
                        constant("quiet", "q", quiet / 12, Fraction(1, 4))], tiers=["RPC"],
                       accounts=[{"name": "busy", "keys": ["b"]},
                                 {"name": "quiet", "keys": ["q"]}])
    _, _, s = run_summary(raw)
    acc = {a.account: a for a in s.tiers[0].plan.accounts}
    n_busy = sum(constant_count(busy, Fraction(1, 4), w) for w in range(10))
    assert acc["busy"].throttled == n_busy - 10 * admit
    assert acc["quiet"].throttled == 0
    assert acc["quiet"].requests == sum(constant_count(quiet, Fraction(1, 4), w)
                                        for w in range(10))
    assert s.tiers[0].throttled == acc["busy"].throttled


# -- a fixed-tier account keeps its tier across the tier study ------------------------

def test_fixed_tier_account_keeps_its_tier_across_the_study():
    """"rpc-only" is fixed at RPC; "main" takes each studied tier. The fixed account's
    sizing requests get 402 under every studied tier (RPC has no Search API) and its
    budget stays 4,000 CU; the plan costs RPC's price plus the studied tier's."""
    raw = raw_scenario(
        [constant("main", "m", Fraction(1), Fraction(1, 2), {"POST /v1/size": 1.0}),
         constant("fixed", "f", Fraction(1), Fraction(1, 2), {"POST /v1/size": 1.0})],
        tiers=["Search", "All 3 APIs"],
        accounts=[{"name": "main", "keys": ["m"]},
                  {"name": "rpc-only", "keys": ["f"], "tier": "RPC"}])
    _, results, s = run_summary(raw)
    assert [t.tier for t in s.tiers] == ["Search", "All 3 APIs"]
    for studied, res in zip(s.tiers, results, strict=True):
        main, fixed = studied.plan.accounts
        assert (main.tier, main.fixed_tier) == (studied.tier, False)
        assert (fixed.tier, fixed.fixed_tier) == ("RPC", True)
        assert fixed.cu_per_window == find_tier("RPC").cu_per_window
        assert [a.budget_cu for a in res.accounts] == [
            find_tier(studied.tier).cu_per_window, find_tier("RPC").cu_per_window]
        assert studied.plan.monthly_usd == price(studied.tier) + price("RPC")
        assert fixed.requests == 120 and fixed.cu_settled == 0.0
        assert studied.request_outcomes["402"] == 120  # only the fixed account's
        assert main.failure_rate == 0.0 and main.requests == 120


def test_the_recommendation_compares_plan_prices():
    """Two accounts on the studied tier: the plan's price is twice the tier's, and the
    recommendation's reason quotes it."""
    raw = raw_scenario([constant("x", "x", Fraction(1), Fraction(1, 2)),
                        constant("y", "y", Fraction(1), Fraction(1, 2))],
                       tiers=["RPC", "All 3 APIs"],
                       accounts=[{"name": "x", "keys": ["x"]}, {"name": "y", "keys": ["y"]}])
    _, _, s = run_summary(raw)
    assert s.recommended.tier == "RPC"
    assert f"${2 * price('RPC'):,.0f}/month" in s.recommended.reason


# -- separate websocket slot pools ------------------------------------------------------

def test_each_account_has_its_own_websocket_slot_cap():
    """Cap 2 per account (Streams tier). One account with two clients of 3 connections:
    2 live in all. Two accounts, a client each: 2 live per account, 4 in all; each
    account's third connection gets 435."""
    clients = [{"name": "c1", "key": "k1", "stream": "new-blocks", "connections": 3},
               {"name": "c2", "key": "k2", "stream": "new-blocks", "connections": 3}]
    cap = find_tier("Streams").ws_cap
    assert cap == 2
    common = {"streams": clients, "duration": 60.0}
    one = raw_scenario([], tiers=["Streams"], account={"keys": ["k1", "k2"]}, **common)
    two = raw_scenario([], tiers=["Streams"], accounts=[{"name": "a1", "keys": ["k1"]},
                                                        {"name": "a2", "keys": ["k2"]}],
                       **common)
    _, _, s1 = run_summary(one)
    _, (r2,), s2 = run_summary(two)
    assert s1.tiers[0].websockets.peak_live_slots == cap
    assert s2.tiers[0].websockets.peak_live_slots == 2 * cap
    for a in s2.tiers[0].plan.accounts:
        assert a.peak_live_slots == cap and a.ws_cap == cap
        assert a.ws_handshakes_ok == cap
        assert a.ws_refused_435 >= 1  # the third connection keeps being refused
    slots = r2.websockets.slots_by_account
    assert [int(s["live"].max()) for s in slots] == [cap, cap]


# -- [[accounts]] with one account is [account] ---------------------------------------

def test_one_named_account_runs_exactly_as_account():
    sources = [{"name": "p", "key": "k", "arrival": {"process": "poisson", "rate": 30},
                "mix": {"svc_call": 0.8, "POST /v1/size": 0.2}}]
    a = raw_scenario(sources, tiers=["RPC", "All 3 APIs"], account={"keys": ["k"]})
    b = raw_scenario(sources, tiers=["RPC", "All 3 APIs"],
                     accounts=[{"name": "only", "keys": ["k"]}])
    _, _, sa = run_summary(a)
    _, _, sb = run_summary(b)
    for ta, tb in zip(sa.tiers, sb.tiers, strict=True):
        assert tb.plan is not None and tb.plan.monthly_usd == ta.monthly_usd
        assert tb.plan.accounts[0].requests == ta.requests
        assert ta.model_copy(update={"plan": None}) == tb.model_copy(update={"plan": None})
    assert "plan" not in sa.to_dict()["tiers"][0]
    assert "plan" in sb.to_dict()["tiers"][0]


# -- validation ----------------------------------------------------------------------

BASE = """name = "t"
duration = 60
tiers = ["RPC"]
{accounts}
[[sources]]
name = "s"
key = "k1"
arrival = {{ process = "poisson", rate = 5 }}
"""


def _load(tmp_path, accounts: str, overrides=()):
    path = tmp_path / "s.toml"
    path.write_text(BASE.format(accounts=accounts))
    return load(path, list(overrides))


@pytest.mark.parametrize("accounts, line, field, words", [
    ('[[accounts]]\nname = "a"\nkeys = ["k1"]\n[[accounts]]\nname = "b"\nkeys = ["k2", "k1"]',
     9, "accounts[1].keys[1]", "also a key of account 'a'"),
    ('[[accounts]]\nname = "a"\nkeys = ["k1", "k1"]', 6, "accounts[0].keys[1]",
     "twice in this account"),
    ('[[accounts]]\nname = "a"\nkeys = ["k1"]\n[[accounts]]\nname = "a"\nkeys = ["k2"]',
     8, "accounts[1].name", "accounts[0] is also called that"),
    ('[[accounts]]\nname = "a"\nkeys = ["k1"]\ntier = "Gold"', 7, "accounts[0].tier",
     "unknown tier"),
    ('[[accounts]]\nname = "a"\nkeys = []', 6, "accounts[0].keys", "at least 1"),
    ('[[accounts]]\nkeys = ["k1"]', 4, "accounts[0].name", "required"),
    ('[[accounts]]\nname = "a"\nkeys = ["k1"]\nkey = "k2"', 7, "accounts[0].key",
     "did you mean 'keys'"),
])
def test_account_errors_name_file_line_and_key(tmp_path, accounts, line, field, words):
    with pytest.raises(CapsimError) as err:
        _load(tmp_path, accounts)
    e = err.value
    assert e.file == str(tmp_path / "s.toml")
    assert (e.line, e.field) == (line, field)
    assert words in e.message
    assert "k1" not in e.message and "k2" not in e.message  # keys are never echoed


@pytest.mark.parametrize("accounts", [
    "",  # neither
    '[account]\nkeys = ["k1"]\n[[accounts]]\nname = "a"\nkeys = ["k2"]',  # both
])
def test_exactly_one_of_account_and_accounts(tmp_path, accounts):
    with pytest.raises(CapsimError, match=r"exactly one of \[account\]"):
        _load(tmp_path, accounts)


def test_an_unknown_fixed_tier_set_on_the_command_line_is_not_echoed(tmp_path):
    with pytest.raises(CapsimError) as err:
        _load(tmp_path, '[[accounts]]\nname = "a"\nkeys = ["k1"]',
              ['accounts[0].tier="Secret-Plan"'])
    assert "Secret-Plan" not in str(err.value)
    assert err.value.field == "--set accounts[0].tier"


def test_a_key_of_no_account_gets_401_and_counts_for_no_account():
    raw = raw_scenario([constant("good", "a", Fraction(1), Fraction(1, 2)),
                        constant("stray", "nobody", Fraction(1), Fraction(1, 2))],
                       tiers=["RPC"], accounts=[{"name": "a", "keys": ["a"]},
                                                {"name": "b", "keys": ["b"]}])
    _, _, s = run_summary(raw)
    t = s.tiers[0]
    assert t.request_outcomes["401"] == 120 and t.request_outcomes["ok"] == 120
    assert [a.requests for a in t.plan.accounts] == [120, 0]


# -- the ready scenario ---------------------------------------------------------------

def test_two_accounts_workload_two_rpc_vs_one_all_3_apis():
    """The question of docs/how-to/choose-a-tier.md on workloads/two-accounts.toml (10
    minutes of it): the split costs two RPC prices, each account reports its own
    figures, and the same traffic on one All 3 APIs account (8,400 CU pooled) throttles
    less than the split (4,000 CU each, the indexer's bursts on its own)."""
    overrides = ["duration=600"]
    split = sim.run(str(WORKLOAD), overrides=overrides)
    t = split.summary.tiers[0]
    assert t.tier == "RPC" and t.plan.monthly_usd == 2 * price("RPC")
    assert [a.account for a in t.plan.accounts] == ["app", "indexer"]
    assert sum(a.requests for a in t.plan.accounts) == t.requests
    assert sum(a.throttled for a in t.plan.accounts) == t.throttled

    raw = tomllib.loads(WORKLOAD.read_text())
    raw["account"] = {"keys": [k for a in raw.pop("accounts") for k in a["keys"]]}
    raw["tiers"], raw["duration"] = ["All 3 APIs"], 600
    pooled = sim.run(validate(raw, "one-account")).summary.tiers[0]
    assert pooled.plan is None and pooled.monthly_usd == price("All 3 APIs")
    assert pooled.requests == t.requests  # the same open-loop demand
    assert pooled.throttled < t.throttled

    md = render(split.summary, [])
    assert "## Accounts" in md and "| RPC | 98 | app | RPC |" in md
    assert "| RPC | 8,000 | 98 |" in md  # the tier table shows the plan's budget and price


def test_the_live_emulator_refuses_several_accounts():
    """The emulator serves one account: a two-account scenario is a user error, not an
    AttributeError deep inside."""
    from sim.policy.admission import Admission

    raw = raw_scenario([constant("x", "x", Fraction(1), Fraction(1, 2))], tiers=["RPC"],
                       accounts=[{"name": "x", "keys": ["x"]}, {"name": "y", "keys": ["y"]}])
    loaded = validate(raw, "test")
    with pytest.raises(CapsimError, match="serves one account") as err:
        Admission.for_scenario(loaded, loaded.tiers[0])
    assert err.value.field == "accounts"
    one = validate(raw_scenario([constant("x", "x", Fraction(1), Fraction(1, 2))],
                                tiers=["RPC"], accounts=[{"name": "x", "keys": ["x"]}]), "test")
    Admission.for_scenario(one, one.tiers[0])  # a single [[accounts]] entry is served
