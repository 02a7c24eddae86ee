"""The whole SimPy model (sim/model/engine.py) against closed forms.

Each test builds a small scenario in code, validated through ``sim.config.validate``,
where the answer can be worked out on paper: deterministic (``constant``) arrivals,
zero round trip and zero service time unless a test needs them, and retries off unless
the retry is what is tested. Expected numbers come from the pricing defaults read here
(``default_pricing_table()``) and from exact rational arithmetic, never from the model.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from whole_demand import whole_demand

from sim.config.pricing import default_pricing_table
from sim.config.resolved import LoadedScenario, validate
from sim.config.tiers import find_tier
from sim.model import recorder as rc
from sim.model.engine import TierResult, TierRun
from sim.workload.demand import Plan, build_plan

W = 12.0
PRICING = default_pricing_table()
SVC_CALL_CU = PRICING["rpc"]["method_cu"]["svc_call"]
SIZE = "POST /v1/size"
ZERO = {"dist": "constant", "value": 0.0}
NO_RETRY = {"retry": {"policy": "none"}}


def instant_methods() -> dict:
    """The three built-in methods with zero service time."""
    return {"svc_call": {"api": "rpc", "service_time": ZERO},
            "svc_pendingBlock": {"api": "rpc", "service_time": ZERO},
            SIZE: {"api": "search", "service_time": ZERO}}


def scenario(sources: list[dict], *, tiers: list[str], custom_tiers: list[dict] = (),
             clients: dict | None = None, rtt_ms: float = 0.0, duration: float = 120.0,
             alignment: str = "epoch", methods: dict | None = None, keys=("key-a",),
             seed: int = 11) -> LoadedScenario:
    raw = {
        "name": "closed-form",
        "seed": seed,
        "duration": duration,
        "tiers": list(tiers),
        "custom_tiers": list(custom_tiers),
        "account": {"keys": list(keys)},
        "regions": [{"name": "here", "rtt_ms": rtt_ms}],
        "clients": clients if clients is not None else {"default": NO_RETRY},
        "sources": sources,
        "methods": instant_methods() if methods is None else methods,
        "limiter": {"alignment": alignment},
    }
    return validate(raw, "test")


def source(name: str, mix: dict, *, rate: float, phase: float = 0.0, key: str = "key-a",
           client: str = "default", **extra) -> dict:
    return {"name": name, "key": key, "client": client, "mix": mix,
            "arrival": {"process": "constant", "rate": rate, "phase": phase}, **extra}


def arrival_at_service(a: dict[str, np.ndarray], rtt_s: float) -> np.ndarray:
    """When each attempt reached the service: sent, waited for a stream, travelled rtt/2."""
    return a["t_send"] + a["stream_wait_s"] + rtt_s / 2


def run(loaded: LoadedScenario) -> tuple[Plan, dict[str, TierResult]]:
    plan = build_plan(loaded)
    return plan, {t.name: TierRun(plan, t).run() for t in loaded.tiers}


def method_index(plan: Plan, name: str) -> int:
    return plan.tables.methods.index(name)


def source_index(plan: Plan, name: str) -> int:
    return plan.tables.sources.index(name)


def constant_count(per_window: Fraction, phase: Fraction, w: int) -> int:
    """Arrivals of ``constant`` (``(j + phase) / rate``) in epoch window ``w``.

    With ``P = rate * 12`` arrivals per window, arrival ``j`` is in window ``w`` iff
    ``P w <= j + phase < P (w + 1)``, and ``#{j >= 0 : j < x} = ceil(x)`` for x >= 0.
    """
    def below(x: Fraction) -> int:
        return max(0, math.ceil(x))

    return below(per_window * (w + 1) - phase) - below(per_window * w - phase)


# -- (a) constant overload: floor(budget / cost) per window --------------------------------

ODD = {"name": "Odd", "apis": ["rpc"], "cu_per_window": 1010}  # 1010 / 20: remainder 10
PHASE = Fraction(3, 10)  # keeps every arrival >= 0.05 / rate away from a window boundary


def budget_of(tier_name: str) -> float:
    return ODD["cu_per_window"] if tier_name == "Odd" else find_tier(tier_name).cu_per_window


@pytest.mark.parametrize("tier_name", ["RPC", "Odd"])
@pytest.mark.parametrize("k", [2, 3, 4.5])
def test_constant_overload_admits_floor_budget_over_cost_per_window(tier_name, k):
    duration, n_windows = 120.0, 10
    budget = budget_of(tier_name)
    per_window = Fraction(k).limit_denominator(100) * int(budget) / SVC_CALL_CU
    rate = float(per_window / 12)
    loaded = scenario([source("calls", {"svc_call": 1.0}, rate=rate, phase=float(PHASE))],
                      tiers=[tier_name], custom_tiers=[ODD], duration=duration)
    plan, results = run(loaded)
    a = results[tier_name].attempts

    admit = int(budget) // SVC_CALL_CU  # floor(budget / cost): 200 (RPC) or 50 (Odd)
    offered = [constant_count(per_window, PHASE, w) for w in range(n_windows)]
    if tier_name == "RPC":  # by hand: k x 4000 CU / 20 CU = 400, 600, 900 calls a window
        assert offered == [int(k * 200)] * n_windows
    assert len(a["t_send"]) == sum(offered)  # retries off: one attempt per request
    assert np.all(a["attempt"] == 1)

    assert np.all(a["stream_wait_s"] == 0)  # rtt 0: connections open instantly
    window = np.floor(a["t_send"] / W).astype(int)  # rtt 0: t_send is the arrival
    for w in range(n_windows):
        rows = np.flatnonzero(window == w)
        assert len(rows) == offered[w]
        outcome = a["outcome"][rows[np.argsort(a["t_send"][rows], kind="stable")]]
        # The first floor(B/c) arrivals of the window are admitted, every later one refused.
        expected = [rc.OK] * admit + [rc.RPC_32005] * (offered[w] - admit)
        assert outcome.tolist() == expected, f"window {w}"

    throttled = int(np.sum(a["outcome"] == rc.RPC_32005))
    assert throttled == sum(offered) - admit * n_windows
    # The throttle rate over whole windows: 1 - floor(B/c) / (offered per window).
    assert Fraction(throttled, len(a["outcome"])) == 1 - Fraction(admit * n_windows,
                                                                  sum(offered))
    if tier_name == "RPC":  # c divides B, offered k*B/c per window: exactly 1 - 1/k
        assert Fraction(throttled, len(a["outcome"])) == 1 - 1 / Fraction(k)

    ws = results[tier_name].windows
    assert ws.start_s == [w * W for w in range(n_windows)]
    assert ws.admitted == [admit] * n_windows
    assert ws.throttled == [o - admit for o in offered]
    assert ws.reserved_cu == [admit * SVC_CALL_CU] * n_windows  # min(offered, B) rounded
    assert max(ws.peak_used_cu) <= budget                       # down to whole calls
    assert ws.phantom == [0] * n_windows  # nothing refundable in flight


@pytest.mark.parametrize("tier_name", ["RPC", "Odd"])
def test_first_hit_windows_also_admit_floor_budget_over_cost(tier_name):
    budget = budget_of(tier_name)
    rate = 3 * budget / SVC_CALL_CU / W
    loaded = scenario([source("calls", {"svc_call": 1.0}, rate=rate, phase=0.3)],
                      tiers=[tier_name], custom_tiers=[ODD], alignment="first-hit")
    plan, results = run(loaded)
    a, ws = results[tier_name].attempts, results[tier_name].windows
    admit = int(budget) // SVC_CALL_CU
    t = whole_demand(plan).t
    starts = ws.start_s
    assert starts[0] == t[0]  # the first billed request opens the first window
    for prev, start in zip(starts, starts[1:], strict=False):
        # ... and each later one opens at the first arrival after the previous expired.
        assert start == t[np.searchsorted(t, prev + W, side="left")]
    for i, start in enumerate(starts):
        in_window = (a["t_send"] >= start) & (a["t_send"] < start + W)
        assert ws.admitted[i] == np.sum(in_window & (a["outcome"] == rc.OK))
        if start + W <= t[-1]:  # a complete window
            assert ws.admitted[i] == admit
            assert ws.throttled[i] == np.sum(in_window) - admit


# -- (b) sizing: reserve base + cap x price, settle base + gas x price ---------------------

SIZING = PRICING["sizing"]


def sizer(name: str, *, items: dict, profile: str, gas_fraction: float, rate: float) -> dict:
    return source(name, {SIZE: 1.0}, rate=rate, phase=0.5,
                  sizing={"items": items, "profiles": {profile: 1.0},
                          "gas_used": {"dist": "constant", "value": gas_fraction}})


@pytest.mark.parametrize("items", [{"dist": "constant", "value": 3},
                                   {"dist": "int_uniform", "low": 1, "high": 6}])
def test_sizing_at_the_gas_cap_settles_exactly_what_it_reserved(items):
    per_item = SIZING["item_base_cu"] + SIZING["profile_gas_cap"]["standard"] * SIZING["cu_per_gas"]
    # At most 24 requests x 6 items x 40 CU = 5760 CU per window < 6000: nothing throttled.
    loaded = scenario([sizer("sizer", items=items, profile="standard", gas_fraction=1.0,
                             rate=2.0)], tiers=["Search"],
                      methods={**instant_methods(),
                               SIZE: {"api": "search",
                                      "service_time": {"dist": "constant", "value": 0.7}}})
    plan, results = run(loaded)
    res = results["Search"]
    a = res.attempts
    assert len(a["outcome"]) == 240 and np.all(a["outcome"] == rc.OK)
    n_items = whole_demand(plan).items[a["request_id"]]
    if items["dist"] == "constant":
        assert np.all(n_items == 3)
    np.testing.assert_array_equal(a["cu_settled"], a["cu_reserved"])
    np.testing.assert_allclose(a["cu_reserved"], n_items * per_item, rtol=1e-12)
    assert a["cu_settled"].sum() == pytest.approx(int(n_items.sum()) * per_item, rel=1e-12)
    ws = res.windows
    assert sum(ws.settled_cu) == pytest.approx(a["cu_settled"].sum(), rel=1e-12)
    np.testing.assert_allclose(ws.settled_cu, ws.reserved_cu, rtol=1e-12)


def test_sizing_below_the_cap_settles_base_plus_gas_used():
    cap = SIZING["profile_gas_cap"]["deep"]
    reserve_item = SIZING["item_base_cu"] + cap * SIZING["cu_per_gas"]
    settle_item = SIZING["item_base_cu"] + 0.25 * cap * SIZING["cu_per_gas"]
    loaded = scenario([sizer("sizer", items={"dist": "int_uniform", "low": 1, "high": 4},
                             profile="deep", gas_fraction=0.25, rate=1.5)],
                      tiers=["Advanced bundle"])
    plan, results = run(loaded)
    a = results["Advanced bundle"].attempts
    assert np.all(a["outcome"] == rc.OK)
    n_items = whole_demand(plan).items[a["request_id"]]
    np.testing.assert_allclose(a["cu_reserved"], n_items * reserve_item, rtol=1e-12)
    np.testing.assert_allclose(a["cu_settled"], n_items * settle_item, rtol=1e-12)
    ws = results["Advanced bundle"].windows
    assert sum(ws.settled_cu) == pytest.approx(int(n_items.sum()) * settle_item, rel=1e-12)
    assert sum(ws.reserved_cu) == pytest.approx(int(n_items.sum()) * reserve_item, rel=1e-12)


# -- (c) well under the budget: nothing throttled, admitted = offered ------------------------

def test_workload_well_under_budget_throttles_nothing():
    sources = [
        {"name": "calls", "key": "key-a", "client": "polite",
         "arrival": {"process": "poisson", "rate": 2.0},
         "mix": {"svc_call": 0.5, "svc_pendingBlock": 0.5}},
        {"name": "sizes", "key": "key-a", "client": "polite",
         "arrival": {"process": "poisson", "rate": 0.2}, "mix": {SIZE: 1.0},
         "sizing": {"items": {"dist": "int_uniform", "low": 1, "high": 3}}},
    ]
    clients = {"polite": {"retry": {"policy": "retry-after"}}}
    # Default (log-normal) service times, a 30 ms round trip, retries on: none is needed.
    loaded = validate({"name": "light", "seed": 3, "duration": 300, "tiers": ["RPC + Search"],
                       "account": {"keys": ["key-a"]},
                       "regions": [{"name": "here", "rtt_ms": 30}],
                       "clients": clients, "sources": sources}, "test")
    plan, results = run(loaded)
    res = results["RPC + Search"]
    a, r, d = res.attempts, res.requests, whole_demand(plan)
    assert len(d) > 500
    assert np.all(a["outcome"] == rc.OK)
    assert len(a["outcome"]) == len(d) and np.all(r["attempts"] == 1)
    assert sum(res.windows.throttled) == 0
    # Admitted CU per window = min(offered, budget) = offered: every request's reservation
    # lands in the window of its arrival at the service.
    np.testing.assert_array_equal(a["t_send"], d.t[a["request_id"]])
    arrival = arrival_at_service(a, 0.030)
    offered = np.bincount(np.floor(arrival / W).astype(int),
                          weights=d.reserve[a["request_id"]],
                          minlength=len(res.windows.reserved_cu))
    np.testing.assert_allclose(res.windows.reserved_cu, offered, rtol=1e-12, atol=1e-9)
    assert max(offered) < res.budget_cu / 4
    # Transport: each source's pool opens one connection for its first request, which
    # waits connect_rtts (default 2) round trips; a handful in flight never fill it.
    connect_s = 2 * 0.030
    for src in range(len(plan.tables.sources)):
        mine = np.flatnonzero(a["source"] == src)
        first = mine[np.argmin(a["t_send"][mine])]
        assert a["stream_wait_s"][first] == pytest.approx(connect_s)
        others = np.setdiff1d(mine, [first])
        assert np.all(a["stream_wait_s"][others] <= connect_s)
        # only requests sent while the connection was still opening wait, and only for it
        opening = a["t_send"][others] < a["t_send"][first] + connect_s
        assert np.all(a["stream_wait_s"][others][~opening] == 0)
    # End-to-end latency of a request: stream wait + rtt + its own service time.
    latency = r["t_end"] - r["t_first"]
    order = np.argsort(a["request_id"])
    expected = (a["stream_wait_s"][order] + 0.030
                + whole_demand(plan).service_s[a["request_id"][order]])
    np.testing.assert_allclose(latency[np.argsort(r["request_id"])], expected, atol=1e-9)


# -- (d) unbilled methods are never throttled -------------------------------------------------

@pytest.mark.parametrize("alignment", ["epoch", "first-hit"])
def test_pending_block_is_never_throttled_while_svc_call_exhausts_every_window(alignment):
    rate_calls = 4.5 * 4000 / SVC_CALL_CU / W  # 4.5 x the RPC budget
    loaded = scenario([source("calls", {"svc_call": 1.0}, rate=rate_calls, phase=0.3),
                       source("blocks", {"svc_pendingBlock": 1.0}, rate=7.0, phase=0.1)],
                      tiers=["RPC"], alignment=alignment)
    plan, results = run(loaded)
    res = results["RPC"]
    a = res.attempts
    blocks = a["method"] == method_index(plan, "svc_pendingBlock")
    assert np.sum(blocks) == 7 * 120
    assert np.all(a["outcome"][blocks] == rc.OK)
    assert np.all(a["cu_reserved"][blocks] == 0)
    ws = res.windows
    complete = [i for i, s in enumerate(ws.start_s) if s + W <= 120.0]
    assert len(complete) >= 9
    for i in complete:  # every complete window is exhausted by svc_call and throttles
        assert ws.reserved_cu[i] == 4000
        assert ws.throttled[i] > 0
    if alignment == "first-hit":  # an unbilled arrival never opens a window
        d = whole_demand(plan)
        calls_t = d.t[d.method == method_index(plan, "svc_call")]
        for prev, start in zip(ws.start_s, ws.start_s[1:], strict=False):
            assert start == calls_t[np.searchsorted(calls_t, prev + W)]


# -- (e) 401, 402, 421 --------------------------------------------------------------------

STUBBORN = {"retry": {"policy": "fixed", "delay_s": 1.0, "max_attempts": 3,
                      "retry_on": ["401", "402", "421"]}}


def test_unknown_key_unsubscribed_api_and_http11_are_refused_on_every_attempt():
    clients = {"default": STUBBORN, "h1": {**STUBBORN, "http_version": "1.1"},
               "nosni": {**STUBBORN, "sni": False}}
    sources = [
        source("stranger", {"svc_call": 1.0}, rate=1.0, key="not-a-key-of-the-account"),
        source("caller", {"svc_call": 1.0}, rate=1.0),
        source("pender", {"svc_pendingBlock": 1.0}, rate=1.0),
        source("sizer", {SIZE: 1.0}, rate=1.0),
        source("h1-call", {"svc_call": 1.0}, rate=1.0, client="h1"),
        source("h1-size", {SIZE: 1.0}, rate=1.0, client="h1"),
        source("nosni-call", {"svc_call": 1.0}, rate=1.0, client="nosni"),
    ]
    loaded = scenario(sources, tiers=["RPC", "Search"], clients=clients, duration=60.0)
    plan, results = run(loaded)
    ok, c401, c402, c421 = rc.OK, rc.AUTH_401, rc.PAY_402, rc.PROTO_421
    expected = {  # (source, tier) -> outcome of every attempt; None: not asserted
        ("stranger", "RPC"): c401, ("stranger", "Search"): c401,
        ("caller", "RPC"): ok, ("caller", "Search"): c402,
        ("pender", "RPC"): ok, ("pender", "Search"): c402,
        ("sizer", "RPC"): c402, ("sizer", "Search"): ok,
        ("h1-call", "RPC"): c421, ("h1-size", "Search"): c421,
        ("nosni-call", "RPC"): c421,
    }
    for (name, tier), outcome in expected.items():
        res = results[tier]
        a, r = res.attempts, res.requests
        mine = a["source"] == source_index(plan, name)
        assert np.sum(mine) > 0
        assert set(a["outcome"][mine].tolist()) == {outcome}, (name, tier)
        req = r["source"] == source_index(plan, name)
        assert np.sum(req) == 60
        # a refusal is retried by this client up to max_attempts; success takes one
        assert set(r["attempts"][req].tolist()) == {1 if outcome == ok else 3}, (name, tier)
    for res in results.values():  # refusals hold no CU
        a = res.attempts
        refused = a["outcome"] != rc.OK
        assert np.all(a["cu_reserved"][refused] == 0)
        assert sum(res.windows.reserved_cu) == pytest.approx(a["cu_reserved"].sum())


# -- (f) a Retry-After honoured lands the retry in a later window ---------------------------

@pytest.mark.parametrize("alignment", ["epoch", "first-hit"])
def test_retry_after_client_retries_in_the_next_window(alignment):
    rtt = 0.04
    clients = {"polite": {"retry": {"policy": "retry-after", "max_attempts": 4,
                                    "jitter_s": 0.5}}}
    sources = [  # 10 sizing requests of 120 CU per second against 6000 CU per 12 s
        sizer("sizer", items={"dist": "constant", "value": 3}, profile="standard",
              gas_fraction=1.0, rate=10.0) | {"client": "polite"},
        source("caller", {"svc_call": 1.0}, rate=5.0, client="polite"),
    ]
    loaded = scenario(sources, tiers=["RPC + Search"], clients=clients, rtt_ms=rtt * 1000,
                      duration=60.0, alignment=alignment,
                      methods={**instant_methods(),
                               SIZE: {"api": "search",
                                      "service_time": {"dist": "constant", "value": 0.3}}})
    plan, results = run(loaded)
    res = results["RPC + Search"]
    a = res.attempts
    rpc_throttles = a["outcome"] == rc.RPC_32005
    assert np.all(np.isnan(a["retry_after_s"][rpc_throttles]))  # JSON-RPC: no header
    throttled = np.flatnonzero(a["outcome"] == rc.HTTP_434)
    assert len(throttled) > 50
    by_key = {(int(q), int(n)): i for i, (q, n) in enumerate(zip(a["request_id"], a["attempt"],
                                                                  strict=True))}
    starts = np.asarray(res.windows.start_s)
    retried = 0
    arrivals = arrival_at_service(a, rtt)
    for i in throttled:
        arrival = arrivals[i]
        if alignment == "epoch":
            next_start = (math.floor(arrival / W) + 1) * W
        else:
            next_start = starts[np.searchsorted(starts, arrival, side="right") - 1] + W
        ra = a["retry_after_s"][i]
        assert ra == max(1, math.ceil(next_start - arrival))
        nxt = by_key.get((int(a["request_id"][i]), int(a["attempt"][i]) + 1))
        if a["attempt"][i] == 4:
            assert nxt is None  # max_attempts reached
            continue
        assert nxt is not None  # a 434 is retried (no retry budget configured)
        retried += 1
        retry_arrival = arrivals[nxt]
        # The reply takes rtt / 2 to come back, the client waits Retry-After (+ jitter),
        # the retry takes rtt / 2 (plus any wait for a stream) to reach the service:
        assert retry_arrival >= next_start + rtt - 1e-9
        assert a["t_send"][nxt] == pytest.approx(arrival + rtt / 2 + ra, abs=0.5 + 1e-9)
        assert a["t_send"][nxt] >= arrival + rtt / 2 + ra - 1e-9
    assert retried > 50


# -- transport: an idle connection closes after idle_timeout_s --------------------------------

def test_request_after_an_idle_gap_opens_a_new_connection():
    rtt = 0.1
    clients = {"default": {"retry": {"policy": "none"},
                           "http": {"idle_timeout_s": 60.0, "connect_rtts": 2.0}}}
    lonely = {"name": "lonely", "key": "key-a", "mix": {"svc_call": 1.0},
              "arrival": {"process": "block", "per_block": 1, "slot_s": 100.0, "offset_s": 1.0}}
    loaded = scenario([lonely], tiers=["RPC"], clients=clients, rtt_ms=rtt * 1000,
                      duration=300.0)
    plan, results = run(loaded)
    res = results["RPC"]
    a = res.attempts
    assert a["t_send"].tolist() == [1.0, 101.0, 201.0]
    # 100 s between requests > 60 s idle timeout: every request opens a connection,
    # waits 2 round trips for it, then takes one more round trip (service time 0).
    np.testing.assert_allclose(a["stream_wait_s"], [2 * rtt] * 3)
    np.testing.assert_allclose(a["t_end"] - a["t_send"], [3 * rtt] * 3)
    assert res.connections.opened == 3


# -- the daily allowance: 402 once spent, again at 00:00 UTC of the simulated clock ----------

def test_daily_allowance_runs_out_and_resets_at_utc_midnight():
    per_day = 20  # requests the allowance covers
    tier = {"name": "Metered", "apis": ["rpc"], "cu_per_window": 10_000,
            "daily_allowance_cu": per_day * SVC_CALL_CU}
    raw_sources = [source("calls", {"svc_call": 1.0}, rate=1.0, phase=0.5)]
    loaded = scenario(raw_sources, tiers=["Metered"], custom_tiers=[tier], duration=120.0)
    raw = loaded.scenario.model_dump(by_alias=True)
    raw["start"] = "2026-01-05T23:59:00Z"  # midnight UTC falls at simulated t = 60 s
    loaded = validate(raw, "test")
    assert loaded.scenario.day_offset_s == 86_340.0
    plan, results = run(loaded)
    res = results["Metered"]
    a = res.attempts
    t = a["t_send"]  # arrivals at 0.5, 1.5, ..., 119.5 (rtt 0)
    ok = a["outcome"] == rc.OK
    assert t[ok].tolist() == [k + 0.5 for k in range(20)] + [60 + k + 0.5 for k in range(20)]
    assert np.all(a["outcome"][~ok] == rc.PAY_402)
    assert np.all(a["cu_reserved"][~ok] == 0)
    # days counted from 00:00 UTC of the start date: day 0 ends at t = 60
    assert res.daily_used == {0: 400.0, 1: 400.0}
    assert res.daily_exhausted_at == {0: 20.5, 1: 80.5}


def test_reservation_larger_than_the_window_budget_is_oversized_and_not_retried():
    deep = SIZING["item_base_cu"] + SIZING["profile_gas_cap"]["deep"] * SIZING["cu_per_gas"]
    items = math.floor(6000 / deep) + 1  # just over the Search budget of 6000 CU
    clients = {"default": {"retry": {"policy": "retry-after", "max_attempts": 4}}}
    loaded = scenario([sizer("huge", items={"dist": "constant", "value": items},
                             profile="deep", gas_fraction=0.1, rate=0.5)],
                      tiers=["Search"], clients=clients, duration=60.0)
    plan, results = run(loaded)
    a = results["Search"].attempts
    assert whole_demand(plan).reserve[0] == pytest.approx(items * deep) and items * deep > 6000
    assert np.all(a["outcome"] == rc.OVERSIZED)
    assert np.all(results["Search"].requests["attempts"] == 1)  # no window could admit it
    assert np.all(a["cu_reserved"] == 0)
    assert sum(results["Search"].windows.throttled) == 0  # not a throttle
