"""The emulator's admin side without sockets: who may use ``/admin/*``, the journal's
filters and verification, fault rules' matching, probability and expiry.

Expected values come from the documented rules (docs/reference/emulator.md: loopback
only unless CAPSIM_ADMIN_TOKEN is set; a rule with probability p applies to about p of
its matches) and counting by hand, never from the module's own output.
"""

from __future__ import annotations

import asyncio

import pytest
from live_server import BASE

from sim.config.resolved import load
from sim.config.tiers import find_tier
from sim.core.pseudonyms import pseudonym
from sim.live.admin import Journal, Rules, admin_allowed, parse_rule
from sim.live.app import EmulatorApp
from sim.live.clock import ServiceClock
from sim.policy.admission import Admission


@pytest.mark.parametrize(("client", "sent", "token", "allowed"), [
    (("127.0.0.1", 5000), None, None, True),
    (("127.8.9.10", 5000), None, None, True),       # all of 127/8 is loopback
    (("::1", 5000, 0, 0), None, None, True),
    (("::ffff:127.0.0.1", 5000), None, None, True),  # IPv4-mapped loopback
    (("10.0.0.7", 5000), None, None, False),
    (("192.168.1.2", 5000), "anything", None, False),
    (("::ffff:10.0.0.7", 5000), None, None, False),
    (None, None, None, False),
    (("not-an-address", 1), None, None, False),
    # with a token, the token decides -- loopback included
    (("127.0.0.1", 5000), None, "s3cret", False),
    (("127.0.0.1", 5000), "wrong", "s3cret", False),
    (("10.0.0.7", 5000), "s3cret", "s3cret", True),
])
def test_admin_allowed(client, sent, token, allowed):
    assert admin_allowed(client, sent, token) is allowed


def _rec(method, status=200, t=1.0, key="k1", api="rpc"):
    return {"api": api, "method": method, "http_method": "POST", "path": "/",
            "host": f"{api}.localhost", "status": status, "outcome": "ok",
            "key": pseudonym(key), "t_s": t, "fault": None}


def test_journal_filters_counts_and_verifies():
    j = Journal(size=5)
    for i, (m, s) in enumerate([("svc_call", 200), ("svc_call", 434), ("other", 200),
                                ("svc_call", 200), ("svc_call", 200), ("svc_call", 200)]):
        j.add(_rec(m, s, t=float(i)))
    # size 5: the first record is forgotten; 4 svc_call remain (t = 1, 3, 4, 5)
    assert j.query({"method": "svc_call"})["count"] == 4
    assert j.query({"method": "svc_call", "status": "200"})["count"] == 3
    assert [r["t_s"] for r in j.query({"method": "svc_call", "limit": "2"})["requests"]] \
        == [4.0, 5.0]
    assert j.query({"since_s": "3", "until_s": "5"})["count"] == 2  # t = 3, 4
    assert j.query({"key": "k1"})["count"] == 5  # a key filters as its pseudonym
    assert j.query({"key": pseudonym("k1")})["count"] == 5
    assert j.verify({"method": "svc_call", "times": 4}) == (True, {"ok": True, "count": 4,
                                                                  "times": 4})
    assert j.verify({"method": "other", "times": 2})[0] is False
    assert j.verify({"method": "svc_call", "at_least": 1, "at_most": 3})[0] is False
    with pytest.raises(ValueError, match="unknown filter"):
        j.query({"colour": "red"})
    with pytest.raises(ValueError, match="times"):
        j.verify({"method": "svc_call"})


def test_rules_match_expire_and_apply_with_their_probability():
    rules = Rules(seed=1)
    always = rules.add({"match": {"method": "svc_call"}, "status": 503, "times": 2})
    assert rules.pick({"method": "svc_pendingBlock"}) is None
    assert rules.pick({"method": "svc_call"}) is always
    assert rules.pick({"method": "svc_call"}) is always
    assert rules.pick({"method": "svc_call"}) is None  # applied twice: gone
    half = rules.add({"match": {"path": "/"}, "delay_s": 0.5, "probability": 0.25})
    hits = sum(rules.pick({"path": "/"}) is half for _ in range(4000))
    # binomial(4000, 0.25): mean 1000, sd 27.4; 5 sd either side
    assert 863 <= hits <= 1137
    assert half.seen == 4000 and half.hits == hits
    assert rules.remove(half.id) == 1 and rules.rules == []


@pytest.mark.parametrize(("spec", "message"), [
    ({"match": {"method": "svc_call"}}, "what the rule does"),
    ({"status": 99}, "status"),
    ({"status": 503, "drop": True}, "no status"),
    ({"delay_s": -1}, "delay_s"),
    ({"status": 503, "probability": 1.5}, "probability"),
    ({"status": 503, "match": {"colour": "red"}}, "match"),
    ({"status": 503, "times": 0}, "times"),
    ({"status": 503, "when": "now"}, "unknown field"),
])
def test_a_bad_rule_is_refused_naming_the_field(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_rule(spec, "r1")


def test_admin_endpoints_refuse_a_remote_client_without_a_token(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(BASE, encoding="utf-8")
    loaded = load(path)
    app = EmulatorApp(loaded, Admission.for_scenario(loaded, find_tier("All 3 APIs",
                                                                       loaded.tiers)),
                      ServiceClock.starting_now(1.0))

    def call(client, headers=()):
        sent = []

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            sent.append(message)
        scope = {"type": "http", "method": "POST", "path": "/admin/reset",
                 "headers": list(headers), "client": client, "query_string": b"",
                 "http_version": "2"}
        asyncio.run(app(scope, receive, send))
        return sent[0]["status"]
    assert call(("203.0.113.9", 4000)) == 403
    assert call(("127.0.0.1", 4000)) == 200
    app.admin_token = "s3cret"
    assert call(("127.0.0.1", 4000)) == 403
    assert call(("203.0.113.9", 4000), [(b"x-admin-token", b"s3cret")]) == 200
