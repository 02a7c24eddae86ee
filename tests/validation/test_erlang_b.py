"""The slot pool as a loss system, held against the Erlang B formula.

Open-loop websocket sessions arrive as a Poisson process at rate λ and last a random
time with mean 1/μ; a session refused with 435 is lost (it never retries). With ``c``
slots this is the M/G/c/c loss system, whose blocking probability is Erlang B,
B(c, A = λ/μ), whatever the session-length distribution (insensitivity), and by PASTA
it is also the fraction of handshakes refused. Its carried load (mean live slots) is
A(1 - B).

The connect cost cannot interfere: either it is 0 or the window budget dwarfs it
(about 12 handshakes x 50 CU per window against 50,000 or 100,000 CU); the tests
assert that no handshake was rejected by the limiter.

Tolerance: each case runs ``SEEDS`` independent seeds; the per-seed blocked fractions
give a sample mean and its standard error (sample SD / sqrt(n)), and the mean must lie
within 4 standard errors of B. The first ``WARMUP_S`` seconds (many mean session
lengths) are dropped, so the start from an empty system biases nothing measurable.
A guard asserts the tolerance is tight enough to tell c from c - 1 slots.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import simpy

from sim.config.pricing import Pricing, deep_merge, default_pricing_table
from sim.config.tiers import CATALOG, SEARCH, Tier
from sim.config.websockets import StreamClient, WebsocketSettings
from sim.model import recorder as rc
from sim.model.websockets import Websockets
from sim.policy.limiter import CULimiter

SEEDS = 8
DURATION_S = 15_000.0
WARMUP_S = 200.0
Z = 4.0


def erlang_b(c: int, a: float) -> float:
    """B(c, A) by the stable recursion B(0) = 1, B(n) = A B(n-1) / (n + A B(n-1))."""
    b = 1.0
    for n in range(1, c + 1):
        b = a * b / (n + a * b)
    return b


def test_erlang_b_recursion_against_closed_form():
    # B(c, A) = (A^c / c!) / sum_k A^k / k!, evaluated directly for small c.
    for c, a in [(1, 0.5), (3, 2.0), (5, 4.0), (10, 7.0)]:
        terms = [a**k / math.factorial(k) for k in range(c + 1)]
        assert erlang_b(c, a) == pytest.approx(terms[-1] / sum(terms), rel=1e-12)
    assert erlang_b(1, 1.0) == pytest.approx(0.5)
    assert erlang_b(0, 3.0) == 1.0


def _run(tier: Tier, rate: float, session: dict, seed: int, pricing: Pricing):
    env = simpy.Environment()
    limiter = CULimiter(tier.cu_per_window)
    client = StreamClient.model_validate({
        "name": "sessions", "key": "k", "stream": "monitoring",
        "arrival": {"process": "poisson", "rate": rate}, "session": session})
    ws = Websockets(env, limiter, tier, [client], WebsocketSettings(), pricing,
                    lambda key: key == "k", seed, DURATION_S)
    ws.start()
    env.run()
    return ws.result()


CUSTOM = Tier("Custom 3 slots", frozenset({SEARCH}), 1_000, 3, custom=True)
PROFESSIONAL = next(t for t in CATALOG if t.name == "Professional bundle")
ADVANCED = next(t for t in CATALOG if t.name == "Advanced bundle")


@pytest.mark.parametrize(
    ("tier", "rate", "session", "connect_cu"),
    [
        (PROFESSIONAL, 1.0, {"dist": "exponential", "mean": 4.0}, None),
        (ADVANCED, 1.0, {"dist": "exponential", "mean": 7.0}, None),
        (CUSTOM, 0.5, {"dist": "exponential", "mean": 4.0}, 0.0),
        # Insensitivity: only the mean session length matters.
        (PROFESSIONAL, 1.0, {"dist": "lognormal", "median": 2.5, "sigma": 0.9695}, None),
    ],
    ids=["professional-c5-A4", "advanced-c10-A7", "custom-c3-A2", "professional-lognormal"],
)
def test_blocking_matches_erlang_b(tier, rate, session, connect_cu):
    table = default_pricing_table()
    if connect_cu is not None:
        table = deep_merge(table, {"websocket": {"connect_cu": connect_cu}})
    pricing = Pricing.model_validate(table)
    mean_len = (session["mean"] if session["dist"] == "exponential"
                else session["median"] * math.exp(session["sigma"] ** 2 / 2))
    a = rate * mean_len
    c = tier.ws_cap
    expected = erlang_b(c, a)

    blocked, carried, attempts = [], [], []
    for seed in range(SEEDS):
        r = _run(tier, rate, session, seed, pricing)
        log = r["handshake_log"]
        assert r["handshakes"]["ws_cu_rejected"] == 0
        assert set(np.unique(log["outcome"])) <= {rc.OK, rc.WS_435}
        keep = log["t"] >= WARMUP_S
        blocked.append(float(np.mean(log["outcome"][keep] == rc.WS_435)))
        attempts.append(int(keep.sum()))
        carried.append(r["connected_s"] / DURATION_S)
        assert r["slots"]["live"].max() == c  # the cap is reached and never exceeded

    blocked, carried = np.array(blocked), np.array(carried)
    se = blocked.std(ddof=1) / math.sqrt(SEEDS)
    # Power guard: the test can tell c slots from c - 1 (and from c + 1).
    assert Z * se < 0.5 * min(erlang_b(c - 1, a) - expected, expected - erlang_b(c + 1, a))
    assert abs(blocked.mean() - expected) <= Z * se, (blocked.mean(), expected, se)

    carried_expected = a * (1 - expected)
    se_carried = carried.std(ddof=1) / math.sqrt(SEEDS)
    assert abs(carried.mean() - carried_expected) <= Z * se_carried + 0.002 * carried_expected

    # Poisson arrivals: attempts per seed have mean and variance λ(T - warm-up).
    lam_t = rate * (DURATION_S - WARMUP_S)
    assert abs(np.mean(attempts) - lam_t) <= Z * math.sqrt(lam_t / SEEDS)


def test_refused_sessions_are_lost_and_never_retried():
    tier = Tier("One slot", frozenset({SEARCH}), 1_000, 1, custom=True)
    pricing = Pricing.model_validate(
        deep_merge(default_pricing_table(), {"websocket": {"connect_cu": 0}}))
    env = simpy.Environment()
    client = StreamClient.model_validate({
        "name": "s", "key": "k", "stream": "monitoring",
        "arrival": {"process": "constant", "rate": 1.0},  # t = 0, 1, 2, ...
        "session": {"dist": "constant", "value": 2.5}})
    ws = Websockets(env, CULimiter(1_000), tier, [client], WebsocketSettings(), pricing,
                    lambda key: True, 1, 10.0)
    ws.start()
    env.run()
    r = ws.result()
    log = r["handshake_log"]
    # One handshake per arrival, no retries: sessions at 0, 3, 6, 9 hold the slot for 2.5 s.
    assert log["t"].tolist() == [float(t) for t in range(10)]
    assert [rc.OUTCOMES[o] for o in log["outcome"]] == ["ok", "435", "435"] * 3 + ["ok"]
    assert r["sessions"]["open_s"].tolist() == [0.0, 3.0, 6.0, 9.0]
    assert r["sessions"]["close_s"].tolist() == [2.5, 5.5, 8.5, 10.0]
    # Wanted: ten sessions of 2.5 s, the last two cut at the end of the run (2 s, 1 s).
    assert r["wanted_s"] == pytest.approx(8 * 2.5 + 2.0 + 1.0)
    assert r["connected_s"] == pytest.approx(3 * 2.5 + 1.0)
