"""The admission order (spec 8), the one written in :mod:`sim.policy.admission`, checked
case by case against the spec's rules as written out here."""

from __future__ import annotations

import itertools

from sim.core.vocabulary import (
    AUTH_401,
    HTTP_434,
    OK,
    OVERSIZED,
    PAY_402,
    PROTO_421,
    RPC_32005,
    SIZE_METHOD,
    WS_CU,
)
from sim.policy.admission import LIMITER_STATUSES, ORDER
from sim.policy.limiter import NO_ALLOWANCE, THROTTLED
from sim.policy.limiter import OK as LIM_OK
from sim.policy.limiter import OVERSIZED as LIM_OVERSIZED


def test_http_checks_before_the_limiter_come_in_the_spec_order():
    for needs_h2, h2_sni, key_ok, in_tier in itertools.product((False, True), repeat=4):
        got = ORDER.http_before_limiter(needs_h2=needs_h2, h2_sni=h2_sni, key_ok=key_ok,
                                        api_in_tier=in_tier)
        # 421 wins over everything (even a bad key), then 401, then 402
        if needs_h2 and not h2_sni:
            assert got == PROTO_421
        elif not key_ok:
            assert got == AUTH_401
        elif not in_tier:
            assert got == PAY_402
        else:
            assert got is None


def test_which_methods_need_http2_with_sni():
    assert ORDER.needs_h2("svc_call", "rpc")
    assert ORDER.needs_h2(SIZE_METHOD, "search")
    assert not ORDER.needs_h2("GET /v1/items", "search")


def test_the_limiter_s_answers_to_http_and_to_a_handshake():
    assert [ORDER.http_limiter(s, rpc=False) for s in (LIM_OK, THROTTLED, NO_ALLOWANCE,
                                                       LIM_OVERSIZED)] == [
        OK, HTTP_434, PAY_402, OVERSIZED]
    assert ORDER.http_limiter(THROTTLED, rpc=True) == RPC_32005  # JSON-RPC: no header
    assert ORDER.http_limiter_table(rpc=True) == (OK, RPC_32005, PAY_402, OVERSIZED)
    assert [ORDER.handshake_connect(s) for s in LIMITER_STATUSES] == [
        OK, WS_CU, PAY_402, WS_CU]  # a connect cost above the window: ws_cu_rejected too
    assert {HTTP_434, WS_CU} == ORDER.WINDOW_RETRY_AFTER


def test_a_handshake_checks_the_key_then_the_api():
    assert ORDER.handshake_before_slots(key_ok=False, api_in_tier=False) == AUTH_401
    assert ORDER.handshake_before_slots(key_ok=True, api_in_tier=False) == PAY_402
    assert ORDER.handshake_before_slots(key_ok=True, api_in_tier=True) is None
