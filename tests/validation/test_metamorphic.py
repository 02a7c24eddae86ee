"""Metamorphic relations of the model: how outputs must move when inputs move.

Only relations that are theorems of this model are asserted, each with its proof
sketch beside it. Three tempting ones are NOT theorems, and a test here exhibits a
counterexample for each, so that nobody "fixes" the suite by asserting them:

* "a bigger tier never throttles more" fails for requests of unequal cost. Admission is
  greedy in arrival order, and greedy packing is not monotone in the capacity: costs
  6, 5, 2, 2 in one window throttle one request at 10 CU (6, 2, 2 fit) and two at 11 CU
  (6 + 5 fills it). The default scenario mixes svc_call (20 CU) with sizing requests of
  20 to 660 CU that settle lower than they reserve, a closed-loop source whose demand
  depends on the replies, and websocket clients whose handshakes, billed publishes and
  reconnects depend on the tier, so there the relation can only be asserted on a variant
  where every billed request costs the same and the billed demand is open loop. On the
  shipped default only a weaker theorem is asserted (a tier that refuses nothing makes
  every bigger one identical).
* "doubling the load never lowers the throttle rate" holds when every arrival is
  duplicated, but not for "more arrivals" in general (new arrivals in a quiet window
  dilute the rate), and a Poisson source at twice the rate is a fresh draw, not the old
  arrivals plus more, so it has no pathwise guarantee at all.
* "more capacity never increases the p99 latency of successful requests" fails because
  more capacity admits more requests, and the newly admitted ones may be the slow ones.

All runs use the same seed and retries off (a retry's timing depends on the tier).
"""

from __future__ import annotations

import math
import tomllib

import numpy as np
import pytest
from whole_demand import whole_demand

from sim.config.loader import apply_override, builtin_scenario_text
from sim.config.resolved import LoadedScenario, load, validate
from sim.config.tiers import APIS, SEARCH, STREAMS, Tier
from sim.model import recorder as rc
from sim.model.engine import TierResult, TierRun
from sim.workload.demand import Plan, build_plan

W = 12.0
THROTTLES = list(rc.THROTTLES)
RETRIES_OFF = ['clients.interactive.retry.policy="none"', 'clients.batch.retry.policy="none"']
SHORT = ["duration=600", *RETRIES_OFF]
CALL_CU = 20  # pinned below, so that sizing and svc_call cost the same
UNIFORM = [
    *SHORT,
    # No websocket clients: their handshakes and billed publishes draw on the same window
    # with other costs, and their reconnect loops depend on the tier (cap, refusals).
    "streams=[]",
    # Pin the prices this variant relies on (they are assumptions, users change them).
    f"pricing.rpc.method_cu.svc_call={CALL_CU}",
    "pricing.sizing.item_base_cu=10",
    "pricing.sizing.cu_per_gas=0.00001",
    "pricing.sizing.profile_gas_cap.fast=1000000",
    # The searcher's sizing requests: 1 item, profile fast, gas at the cap -> 10 + 10 CU,
    # reserved and settled alike (no refunds).
    'sources[3].sizing.items={dist="constant", value=1}',
    "sources[3].sizing.profiles={fast=1.0}",
    'sources[3].sizing.gas_used={dist="constant", value=1.0}',
    # The indexer (closed loop) sends only the unbilled svc_pendingBlock: its demand still
    # depends on the replies, but it never touches the limiter.
    "sources[2].mix={svc_pendingBlock=1.0}",
    # HTTP/2 pools that never fill a connection: a request's wait for a stream then
    # depends on send times only (opening, idling), not on how long admitted requests
    # hold their streams -- which is tier-dependent and would move arrivals at the service.
    "clients.interactive.http.max_streams_per_conn=1000000",
    "clients.batch.http.max_streams_per_conn=1000000",
]


def throttled(res: TierResult) -> int:
    return int(np.isin(res.attempts["outcome"], THROTTLES).sum())


def per_window(res: TierResult, n: int = 52) -> np.ndarray:
    """Throttled attempts per epoch window, padded with zeros to ``n`` windows."""
    out = np.zeros(n, dtype=int)
    got = res.windows.throttled[:n]
    out[:len(got)] = got
    return out


def used_apis(loaded: LoadedScenario) -> frozenset[str]:
    """The APIs a scenario's sources and websocket clients call."""
    sc = loaded.scenario
    apis = {sc.methods[m].api for src in sc.sources for m in src.mix}
    for client in getattr(sc, "streams", ()):
        apis.add(SEARCH if client.stream == "monitoring" else STREAMS)
    return frozenset(apis)


def gate(tier: Tier, loaded: LoadedScenario) -> frozenset[str]:
    """What the tier lets through of the APIs the scenario uses (the rest gets 402)."""
    return frozenset(tier.apis) & used_apis(loaded)


def run_all(loaded: LoadedScenario) -> tuple[Plan, dict[str, TierResult]]:
    plan = build_plan(loaded)
    return plan, {t.name: TierRun(plan, t).run() for t in loaded.tiers}


def bigger_pairs(loaded: LoadedScenario):
    """(smaller, bigger) tier pairs with the same gate and budget(bigger) >= budget(smaller)."""
    for a in loaded.tiers:
        for b in loaded.tiers:
            if a is not b and gate(a, loaded) == gate(b, loaded) \
                    and b.cu_per_window >= a.cu_per_window:
                yield a, b


@pytest.fixture(scope="module")
def uniform():
    loaded = load(None, UNIFORM)
    return (loaded, *run_all(loaded))


@pytest.fixture(scope="module")
def literal_default():
    loaded = load(None, SHORT)
    return (loaded, *run_all(loaded))


def billed_arrivals_per_window(plan: Plan, res: TierResult) -> np.ndarray:
    """Billed open-loop requests the tier lets through, by epoch window of arrival."""
    d, tab, a = whole_demand(plan), plan.tables, res.attempts
    in_tier = np.array([res.tier.includes(APIS[m]) for m in tab.method_api])
    rid = a["request_id"]
    keep = (rid < len(d)) & (d.reserve[rid % len(d)] > 0) & in_tier[a["method"]] \
        & tab.key_valid[a["key"]]
    arrival = a["t_send"] + a["stream_wait_s"] + tab.region_rtt_s[a["region"]] / 2
    return np.bincount(np.floor(arrival[keep] / W).astype(int), minlength=52)


def open_loop_waits(plan: Plan, res: TierResult) -> np.ndarray:
    """Each open-loop request's wait for a stream (one attempt each: retries are off)."""
    a = res.attempts
    mine = a["request_id"] < plan.open_count
    waits = np.full(plan.open_count, np.nan)
    waits[a["request_id"][mine]] = a["stream_wait_s"][mine]
    return waits


# -- a bigger tier never throttles more: uniform costs, open-loop billed demand ------------

def test_uniform_variant_really_is_uniform(uniform):
    """The premises the proofs below rest on, checked rather than assumed."""
    loaded, plan, results = uniform
    names = [s.name for s in loaded.scenario.sources]
    assert names[2:4] == ["indexer", "searcher"], "UNIFORM's overrides address these"
    assert loaded.scenario.sources[2].workers is not None
    assert not getattr(loaded.scenario, "streams", ())
    d = whole_demand(plan)
    billed = d.reserve[d.reserve > 0]
    assert billed.size > 1000 and np.all(billed == CALL_CU)
    np.testing.assert_array_equal(d.actual, d.reserve)
    assert throttled(results["RPC"]) > 0 and throttled(results["RPC + Search"]) > 0
    reference = open_loop_waits(plan, results["Streams"])
    assert not np.isnan(reference).any()
    for res in results.values():
        # Every open-loop request reaches the service at the same time on every tier.
        np.testing.assert_array_equal(open_loop_waits(plan, res), reference)
        assert not np.any(res.attempts["outcome"] == rc.CONN_430)
        assert np.all(res.attempts["attempt"] == 1)


def test_bigger_tier_never_throttles_more_with_uniform_costs(uniform):
    """Proof: with retries off, the billed demand is the same open-loop arrivals on every
    tier of one gate (the closed-loop source is unbilled, and the premises test above
    shows that the transport delays each request alike on every tier). Epoch windows are independent
    (no refunds: reserve == actual). In a window with n billed arrivals of cost c, greedy
    admission takes the first floor(B/c), so it throttles max(0, n - floor(B/c)), which
    cannot grow with B. Summed over windows, neither can the throttle count.
    """
    loaded, plan, results = uniform
    pairs = list(bigger_pairs(loaded))
    assert len(pairs) >= 8
    for small, big in pairs:
        assert throttled(results[big.name]) <= throttled(results[small.name]), (small, big)
        assert np.all(per_window(results[big.name]) <= per_window(results[small.name]))


def test_uniform_throttles_match_the_per_window_closed_form(uniform):
    loaded, plan, results = uniform
    for tier in loaded.tiers:
        res = results[tier.name]
        assert res.daily_exhausted_at == {}  # no 402 for want of daily allowance
        n = billed_arrivals_per_window(plan, res)
        admit = math.floor(tier.cu_per_window / CALL_CU)
        expected = np.maximum(0, n - admit)
        np.testing.assert_array_equal(per_window(res, len(expected)), expected,
                                      err_msg=tier.name)
        assert throttled(res) == expected.sum()


def test_successes_nest_and_keep_their_latency_with_uniform_costs(uniform):
    """Proof: per window the smaller tier admits the first floor(B_small/c) arrivals, a
    prefix of the bigger tier's first floor(B_big/c); with retries off an admitted request
    takes its stream wait (the same on every tier, see the premises test) + rtt + its own
    service time (drawn before any tier runs), whatever the tier.
    Note what does NOT follow: the p99 over the (bigger) set of successes may go up.
    """
    loaded, plan, results = uniform
    n_open = plan.open_count
    for small, big in bigger_pairs(loaded):
        rs, rb = results[small.name].requests, results[big.name].requests
        ok_s = rs["request_id"][(rs["outcome"] == rc.OK) & (rs["request_id"] < n_open)]
        ok_b = rb["request_id"][(rb["outcome"] == rc.OK) & (rb["request_id"] < n_open)]
        assert np.all(np.isin(ok_s, ok_b)), (small.name, big.name)
        lat_s = dict(zip(rs["request_id"].tolist(), (rs["t_end"] - rs["t_first"]).tolist(),
                         strict=True))
        lat_b = dict(zip(rb["request_id"].tolist(), (rb["t_end"] - rb["t_first"]).tolist(),
                         strict=True))
        assert all(lat_s[i] == lat_b[i] for i in ok_s.tolist())
    d, tab = whole_demand(plan), plan.tables
    r = results["Advanced bundle"].requests
    open_ok = (r["outcome"] == rc.OK) & (r["request_id"] < n_open)
    rid = r["request_id"][open_ok]
    wait = open_loop_waits(plan, results["Advanced bundle"])[rid]
    expected = wait + tab.region_rtt_s[d.region[rid]] + d.service_s[rid]
    np.testing.assert_allclose((r["t_end"] - r["t_first"])[open_ok], expected, atol=1e-9)


# -- the default scenario as shipped: heterogeneous costs, refunds, a closed loop ----------

def test_default_a_tier_that_throttles_nothing_makes_every_bigger_one_identical(
        literal_default):
    """Proof (by induction over the events, in time order): while every admission
    decision agrees, both runs schedule the same events at the same times -- service
    times, think times and retry draws are fixed before the run or drawn per request.
    If the smaller tier admits every attempt, its counter + cost <= B_small <= B_big at
    every reservation, and its daily ledger fits an allowance that is no larger than the
    bigger tier's, so the bigger tier admits it too. Hence identical records, throttles
    or not, whatever the costs, refunds or closed loops.
    """
    loaded, plan, results = literal_default
    allowance = {t.name: loaded.pricing.for_tier(t).daily_allowance_cu for t in loaded.tiers}
    checked = 0
    for small, big in bigger_pairs(loaded):
        res_s = results[small.name]
        if not refused_nothing_for_its_limits(res_s):
            continue  # the premise: the smaller tier's own limits refused nothing
        if (allowance[big.name] or math.inf) < (allowance[small.name] or math.inf) \
                or big.ws_cap < small.ws_cap:
            continue
        res_b = results[big.name]
        for col, values in res_s.attempts.items():
            np.testing.assert_array_equal(values, res_b.attempts[col], err_msg=col)
        checked += 1
    # Professional -> Advanced is such a pair on the default scenario.
    assert checked >= 1
    assert throttled(results["Professional bundle"]) == 0


def refused_nothing_for_its_limits(res: TierResult) -> bool:
    """No refusal that depends on the tier's budget, allowance or websocket cap."""
    tier_limited = [*THROTTLES, rc.OVERSIZED, rc.WS_435]
    if np.isin(res.attempts["outcome"], tier_limited).any() or res.daily_exhausted_at:
        return False
    ws = res.websockets
    if ws:  # billed publishes refused by the window (dropped, or closing the connection)
        if np.any(ws["clients"]["events_dropped"] > 0):
            return False
        if np.any(ws["sessions"]["close_kind"] == ws["close_kinds"].index("exhausted")):
            return False
    return True


def test_default_every_tier_keeps_each_window_within_budget(literal_default):
    loaded, plan, results = literal_default
    for tier in loaded.tiers:
        ws = results[tier.name].windows
        assert max(ws.peak_used_cu, default=0.0) <= tier.cu_per_window * (1 + 1e-9)


# -- counterexamples: what is NOT a theorem ---------------------------------------------------

def tiny(sources: list[dict], custom_tiers: list[dict], *, regions=None, methods=None,
         pricing=None, duration: float = 60.0) -> LoadedScenario:
    zero = {"dist": "constant", "value": 0.0}
    raw = {
        "name": "counterexample", "seed": 5, "duration": duration,
        "tiers": [t["name"] for t in custom_tiers], "custom_tiers": custom_tiers,
        "account": {"keys": ["k"]},
        "regions": regions or [{"name": "here", "rtt_ms": 0}],
        # connections open instantly, so that latency is rtt + service time
        "clients": {"default": {"retry": {"policy": "none"}, "http": {"connect_rtts": 0}}},
        "sources": sources,
        "methods": methods or {"svc_call": {"api": "rpc", "service_time": zero}},
        "pricing": pricing or {},
    }
    return validate(raw, "test")


def block(name: str, method: str, offset: float, per_block: int = 1, region=None) -> dict:
    src = {"name": name, "key": "k", "mix": {method: 1.0},
           "arrival": {"process": "block", "per_block": per_block, "offset_s": offset}}
    if region:
        src["region"] = region
    return src


def test_counterexample_bigger_tier_throttles_more_with_unequal_costs():
    zero = {"dist": "constant", "value": 0.0}
    methods = {m: {"api": "rpc", "service_time": zero} for m in ("m6", "m5", "m2")}
    loaded = tiny(
        [block("six", "m6", 1.0), block("five", "m5", 2.0), block("twos", "m2", 3.0, 2)],
        [{"name": "Ten", "apis": ["rpc"], "cu_per_window": 10},
         {"name": "Eleven", "apis": ["rpc"], "cu_per_window": 11}],
        methods=methods, pricing={"rpc": {"method_cu": {"m6": 6, "m5": 5, "m2": 2}}})
    plan, results = run_all(loaded)
    windows = 5
    assert throttled(results["Ten"]) == 1 * windows  # 6 fits, 5 does not, 2 + 2 fill it
    assert throttled(results["Eleven"]) == 2 * windows  # 6 + 5 fill it, both 2s refused


def test_counterexample_more_arrivals_can_lower_the_throttle_rate():
    """A second source filling quiet windows adds arrivals but no throttles."""
    zero = {"dist": "constant", "value": 0.0}
    tier = [{"name": "Small", "apis": ["rpc"], "cu_per_window": 10 * CALL_CU}]
    methods = {"svc_call": {"api": "rpc", "service_time": zero}}
    burst = {"name": "burst", "key": "k", "mix": {"svc_call": 1.0},
             "arrival": {"process": "block", "per_block": 20, "slot_s": 24.0, "offset_s": 1}}
    quiet = {"name": "quiet", "key": "k", "mix": {"svc_call": 1.0},
             "arrival": {"process": "block", "per_block": 10, "slot_s": 24.0, "offset_s": 13}}
    pricing = {"rpc": {"method_cu": {"svc_call": CALL_CU}}}
    _, one = run_all(tiny([burst], tier, methods=methods, pricing=pricing, duration=96))
    _, two = run_all(tiny([burst, quiet], tier, methods=methods, pricing=pricing, duration=96))
    rate_one = throttled(one["Small"]) / len(one["Small"].attempts["outcome"])
    rate_two = throttled(two["Small"]) / len(two["Small"].attempts["outcome"])
    assert (rate_one, rate_two) == (0.5, pytest.approx(1 / 3))


def test_counterexample_more_capacity_can_raise_p99_latency_of_successes():
    """Early near requests fit the small tier; the big one also admits late, far ones."""
    regions = [{"name": "near", "rtt_ms": 10}, {"name": "far", "rtt_ms": 600}]
    tiers = [{"name": "Small", "apis": ["rpc"], "cu_per_window": 10 * CALL_CU},
             {"name": "Big", "apis": ["rpc"], "cu_per_window": 20 * CALL_CU}]
    pricing = {"rpc": {"method_cu": {"svc_call": CALL_CU}}}
    loaded = tiny([block("near", "svc_call", 1.0, 10, region="near"),
                   block("far", "svc_call", 6.0, 10, region="far")], tiers,
                  regions=regions, pricing=pricing)
    _, results = run_all(loaded)

    def p99(res):
        r = res.requests
        ok = r["outcome"] == rc.OK
        return float(np.percentile((r["t_end"] - r["t_first"])[ok], 99))

    assert p99(results["Small"]) == pytest.approx(0.010)
    assert p99(results["Big"]) == pytest.approx(0.600)


# -- doubling the load (every arrival duplicated) never lowers the throttle rate -------------

def doubled_pair(copies: int) -> LoadedScenario:
    """Deterministic sources, uniform cost 20 CU; ``copies`` identical copies of each."""
    zero = {"dist": "constant", "value": 0.0}
    base = [
        {"arrival": {"process": "constant", "rate": 13.0, "phase": 0.3}, "mix": {"svc_call": 1}},
        {"arrival": {"process": "block", "per_block": 150, "slot_s": 30.0, "offset_s": 2.5},
         "mix": {"svc_call": 1}},
        {"arrival": {"process": "block", "per_block": 40, "slot_s": 7.0, "offset_s": 1.0},
         "mix": {"POST /v1/size": 1},
         "sizing": {"items": {"dist": "constant", "value": 1}, "profiles": {"fast": 1.0},
                    "gas_used": {"dist": "constant", "value": 1.0}}},
    ]
    sources = [{"name": f"s{i}-copy{c}", "key": "k", **src}
               for i, src in enumerate(base) for c in range(copies)]
    tiers = [{"name": f"B{b}", "cu_per_window": b} for b in (2000, 4000, 6000, 9000, 12000)]
    raw = {"name": "doubling", "seed": 9, "duration": 300, "tiers": [t["name"] for t in tiers],
           "custom_tiers": tiers, "account": {"keys": ["k"]},
           "regions": [{"name": "here", "rtt_ms": 0}],
           "clients": {"default": {"retry": {"policy": "none"}}}, "sources": sources,
           "methods": {m: {"api": api, "service_time": zero}
                       for m, api in (("svc_call", "rpc"), ("POST /v1/size", "search"))},
           "pricing": {"rpc": {"method_cu": {"svc_call": CALL_CU}},
                       "sizing": {"item_base_cu": 10, "cu_per_gas": 0.00001,
                                  "profile_gas_cap": {"fast": 1_000_000}}}}
    return validate(raw, "test")


def test_duplicating_every_arrival_never_lowers_the_throttle_rate():
    """Proof: with uniform cost c and epoch windows, window w with n_w arrivals throttles
    n_w * g(n_w), g(n) = max(0, 1 - floor(B/c) / n), non-decreasing in n. The rate is
    sum_w (n_w / N) g(n_w); duplicating every arrival keeps the weights n_w / N and
    doubles every n_w, so it cannot fall. (Constant and block arrivals are deterministic,
    so the copies really are the same arrivals.)
    """
    plan1, once = run_all(doubled_pair(1))
    plan2, twice = run_all(doubled_pair(2))
    np.testing.assert_array_equal(np.repeat(whole_demand(plan1).t, 2), whole_demand(plan2).t)
    assert set(np.unique(whole_demand(plan2).reserve)) == {CALL_CU}
    rates = []
    for name in once:
        r1 = throttled(once[name]) / len(once[name].attempts["outcome"])
        r2 = throttled(twice[name]) / len(twice[name].attempts["outcome"])
        assert r2 >= r1, name
        rates.append((r1, r2))
    assert any(r1 > 0 for r1, _ in rates) and any(r2 > r1 for r1, r2 in rates)


# -- adding a source (named random streams) never lowers the throttle count ------------------

def test_adding_a_source_keeps_the_others_arrivals_and_never_lowers_throttles(uniform):
    """Proof: each source draws from a stream named after it, so adding one leaves every
    other source's requests untouched: the new billed demand is a superset of the old. With
    uniform cost, window w throttles max(0, n_w - floor(B/c)), non-decreasing in n_w.
    """
    loaded, plan, results = uniform
    raw = tomllib.loads(builtin_scenario_text())
    for item in UNIFORM:
        apply_override(raw, item)
    raw["sources"].append({"name": "newcomer", "key": "frontend-key", "region": "us-east",
                           "client": "interactive", "mix": {"svc_call": 1.0},
                           "arrival": {"process": "poisson", "rate": 6.0}})
    bigger = validate(raw, "test")
    plan2, results2 = run_all(bigger)
    d1, d2 = whole_demand(plan), whole_demand(plan2)
    old = d2.source < len(plan.tables.sources)
    for col in ("t", "source", "method", "key", "region", "items", "reserve", "actual",
                "service_s"):
        np.testing.assert_array_equal(getattr(d1, col), getattr(d2, col)[old], err_msg=col)
    # Premise: the newcomer has its own connection pool, so the old requests still reach
    # the service when they did (a new row shifts request ids: compare by position).
    old_rows = np.flatnonzero(old)
    for tier in loaded.tiers:
        w2 = open_loop_waits(plan2, results2[tier.name])[old_rows]
        np.testing.assert_array_equal(open_loop_waits(plan, results[tier.name]), w2)
    for tier in loaded.tiers:
        w1 = np.asarray(results[tier.name].windows.throttled)
        w2 = np.asarray(results2[tier.name].windows.throttled)
        n = min(len(w1), len(w2))
        assert np.all(w2[:n] >= w1[:n]), tier.name
        assert throttled(results2[tier.name]) >= throttled(results[tier.name])
