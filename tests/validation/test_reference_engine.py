"""The fast engine against the readable reference engine (``tests/helpers``), attempt for
attempt, on small scenarios: each attempt's outcome, ids, Retry-After, phantom flag and
CU exactly; its times to float rounding (the two add the same delays in another order).

As the limiter has a reference in ``tests/unit/policy/test_limiter.py``: a change to the
engine's tricks (its heap pushes, tables, inline loop) that changes behaviour shows here.
The closed-loop case fails (a different attempt count) if a worker's think time skips the
reply's rtt/2, its start is not spread by its think stream's first draw, it thinks from
another worker's stream, or it sends after the run's end.
"""

from __future__ import annotations

import numpy as np
import pytest
from reference_engine import run_reference
from scenarios import poisson_source, scenario_raw

from sim.config.resolved import validate
from sim.core.vocabulary import AUTH_401, HTTP_434, OK, PAY_402, PROTO_421, RPC_32005
from sim.model.engine import TierRun
from sim.workload.demand import build_plan

INTS = ("request_id", "attempt", "source", "method", "key", "region", "outcome")
EXACT = ("cu_reserved", "cu_settled", "retry_after_s", "phantom")
TIMES = ("t_send", "t_end", "stream_wait_s")


def _source(name, rate, *, key="k", client="default", mix=None):
    text = poisson_source(rate, name=name, key=key).replace(
        "[[sources]]\n", f'[[sources]]\nclient = "{client}"\n')
    if mix:
        text += "mix = { " + ", ".join(f'"{m}" = {w}' for m, w in mix.items()) + " }\n"
    return text


SCENARIOS = {
    # open loop past the RPC tier's window (4,000 CU / 12 s, 20 CU a call: 16.7/s),
    # retry-after clients (JSON-RPC -32005 has no header: exponential fallback)
    "open-loop": dict(tiers=["RPC"], duration=40, rate=25),
    # three clients: fixed and exponential retries, and HTTP/1.1 (RPC needs HTTP/2: 421);
    # a key of no account (401); a Search method outside the RPC tier (402)
    "retries": dict(
        tiers=["RPC"], duration=40, keys=["k"],
        tables=('[clients.default]\n[clients.fixed]\nretry = { policy = "fixed", delay_s = 0.5, '
                'max_attempts = 3 }\n'
                '[clients.expo]\nretry = { policy = "exponential", base_s = 0.2, '
                'cap_s = 2.0, max_attempts = 5 }\n'
                '[clients.old]\nhttp_version = "1.1"\n'),
        sources=(_source("a", 12, client="fixed") + _source("b", 10, client="expo")
                 + _source("c", 1, client="old") + _source("d", 1, key="nobody")
                 + _source("e", 1, mix={"POST /v1/size": 1.0}))),
    # one connection of two streams and slow connects: requests queue for a stream; RPC
    # and sizing calls (reserved at the cap, settled lower) past a small window
    "streams": dict(
        tiers=["Narrow"], duration=30,
        top='[[custom_tiers]]\nname = "Narrow"\napis = ["rpc", "search"]\n'
            'cu_per_window = 2000\n',
        tables=("[clients.default.http]\nmax_streams_per_conn = 2\nmax_connections = 1\n"
                "connect_rtts = 3\n"),
        sources=_source("s", 60, mix={"svc_call": 1.0, "POST /v1/size": 1.0})),
    # closed loop: three workers with exponential think times (mean 0.3 s) and an open-loop
    # source on the same key, past a window of 400 CU / 12 s (20 calls): -32005, retried
    # by the default client's exponential fallback while the worker waits
    "closed-loop": dict(
        tiers=["Tiny"], duration=30,
        top='[[custom_tiers]]\nname = "Tiny"\napis = ["rpc"]\ncu_per_window = 400\n',
        sources=(_source("open", 0.5)
                 + '[[sources]]\nname = "w"\nkey = "k"\n'
                   'workers = { count = 3, think = { dist = "exponential", mean = 0.3 } }\n')),
    # a retry budget (retries <= 20% of the requests sent so far + 2) past the RPC tier's
    # window: most refusals are not retried. Fails on an engine that counts open-loop
    # requests when its feeder schedules them, up to a second before they are sent.
    "retry-budget": dict(
        tiers=["RPC"], duration=40, rate=25,
        tables=('[clients.default]\nretry = { policy = "retry-after", budget_ratio = 0.2, '
                'budget_min_retries = 2 }\n')),
    # a daily allowance of 3,000 CU: 402 once it is spent (not retried by default)
    "daily-allowance": dict(
        tiers=["Small"], duration=60, rate=5,
        top='[[custom_tiers]]\nname = "Small"\napis = ["rpc"]\ncu_per_window = 4000\n'
            'daily_allowance_cu = 3000\n'),
}


def _fast(plan, tier):
    res = TierRun(plan, tier).run()
    return res.attempts, res.requests


def _columns(rows: list[dict], names) -> dict[str, np.ndarray]:
    return {n: np.array([r[n] for r in rows]) for n in names}


def _sorted(cols: dict[str, np.ndarray], keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    order = np.lexsort(tuple(cols[k] for k in reversed(keys)))
    return {n: c[order] for n, c in cols.items()}


def _most_in_flight(requests: dict[str, np.ndarray], source: int) -> int:
    """The most requests of ``source`` in flight at once (one ending as another starts
    counts once)."""
    mine = requests["source"] == source
    t = np.concatenate([requests["t_first"][mine], requests["t_end"][mine]])
    step = np.concatenate([np.ones(mine.sum(), int), -np.ones(mine.sum(), int)])
    order = np.lexsort((step, t))  # at equal times the ends first
    return int(np.cumsum(step[order]).max())


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_fast_engine_matches_the_reference_attempt_for_attempt(name):
    raw = scenario_raw(**SCENARIOS[name])
    loaded = validate(raw, f"<{name}>")
    tier = loaded.tiers[0]
    plan = build_plan(loaded)
    fast_a, fast_q = _fast(plan, tier)
    ref_a, ref_q = run_reference(build_plan(loaded), tier)

    names = INTS + EXACT + TIMES
    got = _sorted({n: fast_a[n] for n in names}, ("request_id", "attempt"))
    want = _sorted(_columns(ref_a, names), ("request_id", "attempt"))
    assert len(got["outcome"]) == len(want["outcome"]) > 0
    for n in INTS:
        assert np.array_equal(got[n], want[n]), n
    for n in EXACT:
        assert np.array_equal(got[n], want[n], equal_nan=True), n
    for n in TIMES:
        np.testing.assert_allclose(got[n], want[n], rtol=0, atol=1e-9, err_msg=n)

    qnames = ("request_id", "source", "method", "key", "outcome", "attempts", "t_first",
              "t_end")
    gq = _sorted({n: fast_q[n] for n in qnames}, ("request_id",))
    wq = _sorted(_columns(ref_q, qnames), ("request_id",))
    for n in qnames[:6]:
        assert np.array_equal(gq[n], wq[n]), n
    for n in qnames[6:]:
        np.testing.assert_allclose(gq[n], wq[n], rtol=0, atol=1e-9, err_msg=n)

    # each scenario exercises what it is named for
    outcomes = set(got["outcome"].tolist())
    if name == "open-loop":
        assert RPC_32005 in outcomes and got["attempt"].max() > 1
    elif name == "retries":
        assert {OK, RPC_32005, PROTO_421, AUTH_401, PAY_402} <= outcomes
        assert got["attempt"].max() > 1
    elif name == "streams":
        assert (got["stream_wait_s"] > 0).mean() > 0.5  # most waited for a stream
        assert HTTP_434 in outcomes  # the bundle's window too, with its Retry-After
        assert np.isfinite(got["retry_after_s"][got["outcome"] == HTTP_434]).all()
    elif name == "closed-loop":
        closed = got["source"] == 1
        assert RPC_32005 in outcomes and got["attempt"][closed].max() > 1
        assert closed.sum() > 2 * (~closed).sum()  # the workers send most attempts
        # a worker waits for its reply: never more than 3 of their requests in flight
        assert _most_in_flight(gq, source=1) == 3
    elif name == "retry-budget":
        # -32005 is retried (default retry_on) up to 4 attempts: a request that ended
        # with it sooner was stopped by the budget
        refused = gq["outcome"] == RPC_32005
        assert (refused & (gq["attempts"] < 4)).sum() > 10 and gq["attempts"].max() > 1
    elif name == "daily-allowance":
        assert PAY_402 in outcomes and OK in outcomes
