"""The emulator's admission (the model's policy objects asked in the model's order) and
the wall-clock addition to the account's connection limits (``release``)."""

from __future__ import annotations

import math

import pytest

from sim.config.resolved import validate
from sim.config.tiers import find_tier
from sim.policy.admission import Admission
from sim.policy.connections import AccountConnections

RAW = {"name": "adm", "account": {"keys": ["k"]},
       "sources": [{"name": "a", "key": "k", "arrival": {"process": "poisson", "rate": 1}}],
       "custom_tiers": [{"name": "T", "apis": ["rpc", "streams"], "cu_per_window": 100,
                         "ws_cap": 1}]}


def _admission(tier="T") -> Admission:
    loaded = validate(RAW, "<test>")
    return Admission.for_scenario(loaded, find_tier(tier, loaded.tiers))


def test_release_frees_an_active_connection_and_refuses_a_release_too_many():
    conns = AccountConnections(max_active=2, max_opens_per_s=32)
    assert conns.try_open(0.0, "h") and conns.try_open(0.1, "h")
    assert not conns.try_open(0.2, "h")  # 2 active: the cap
    conns.release(0.3)
    assert conns.active == 1
    assert conns.try_open(0.4, "h")  # room again
    conns.release(0.5)
    conns.release(0.6)
    with pytest.raises(RuntimeError):
        conns.release(0.7)


def test_opening_rate_counts_a_sliding_second_per_hostname_regardless_of_releases():
    conns = AccountConnections(max_active=128, max_opens_per_s=32)
    for k in range(32):
        assert conns.try_open(k / 100, "rpc")
        conns.release(k / 100 + 0.001)  # closing does not give back an opening
    assert not conns.try_open(0.5, "rpc")
    assert conns.try_open(0.5, "search")  # another hostname has its own count
    assert conns.try_open(1.0, "rpc")  # the first opening (t=0) left the second


def test_http_checks_run_in_the_models_order():
    adm = _admission()
    # 421 before 401: a bad key on HTTP/1.1 is told about the protocol first
    assert adm.request(0.0, "svc_call", key_ok=False, h2_sni=False, reserve_cu=20,
                       actual_cu=20).name == "421"
    assert adm.request(0.0, "svc_call", key_ok=False, h2_sni=True, reserve_cu=20,
                       actual_cu=20).name == "401"
    # the tier has no Search API: 402 before the limiter is asked
    assert adm.request(0.0, "POST /v1/size", key_ok=True, h2_sni=True, reserve_cu=500,
                       actual_cu=20).name == "402"
    assert adm.limiter.available(0.0) == 100
    # 100 CU per window: five calls of 20 CU, then the JSON-RPC throttle
    names = [adm.request(1.0, "svc_call", key_ok=True, h2_sni=True, reserve_cu=20,
                         actual_cu=20).name for _ in range(6)]
    assert names == ["ok"] * 5 + ["-32005"]
    d = adm.request(1.0, "svc_call", key_ok=True, h2_sni=True, reserve_cu=200,
                    actual_cu=200)
    assert d.name == "oversized"


def test_handshake_checks_the_cap_before_the_cu_and_gives_a_refused_slot_back():
    adm = _admission()
    assert adm.handshake(0.0, "pending-txs", key_ok=True).name == "ok"  # 50 CU, 1 slot
    d = adm.handshake(0.1, "new-blocks", key_ok=True)
    assert d.name == "435" and d.retry_after_s == 30  # every slot live: retry_after_live_s
    adm.websocket_closed(0.2, clean=True, stale_expiry_s=30)
    assert adm.handshake(0.3, "new-blocks", key_ok=True).name == "ok"  # 100 CU used
    adm.websocket_closed(0.4, clean=False, stale_expiry_s=30)  # stale until 30.4
    d = adm.handshake(1.0, "new-blocks", key_ok=True)
    assert d.name == "435" and d.retry_after_s == math.ceil(30.4 - 1.0)
    # a fresh window at 36 s: the slot expired, but spend 100 CU first to exhaust it
    assert adm.request(36.0, "svc_call", key_ok=True, h2_sni=True, reserve_cu=100,
                       actual_cu=100).name == "ok"
    d = adm.handshake(36.5, "pending-txs", key_ok=True)
    assert d.name == "ws_cu_rejected" and d.retry_after_s == math.ceil(48 - 36.5)
    assert adm.slots.live == 0  # the refused handshake's slot was given back
    assert adm.handshake(40.0, "monitoring", key_ok=True).name == "402"  # Search API
    assert adm.handshake(40.0, "pending-txs", key_ok=False).name == "401"


def test_billed_publishes_spend_until_the_window_is_exhausted():
    adm = _admission()
    # default pricing: pending-txs 1 CU per delivery, monitoring unbilled
    assert adm.publish_cu["pending-txs"] == 1 and adm.publish_cu["monitoring"] == 0
    spent = sum(adm.publish(2.0, "pending-txs") for _ in range(101))
    assert spent == 100  # the 101st delivery cannot reserve: the stream is closed
    assert adm.publish(2.0, "monitoring")  # unbilled: always delivered
