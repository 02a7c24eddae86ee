"""The emulator as a mock server, over real sockets: the request journal and "called N
times", fault and latency rules, switching tier at runtime, and a session recorded in
the JSONL access log, imported by ``capsim trace import`` and replayed by ``capsim run``.

Expected values come from what the test itself sent (counts of calls), the documented
behaviour of rules (a forced status is not decided nor billed; a latency rule delays the
reply by at least its delay; a drop closes the connection), the tier catalog, and the
pricing defaults (svc_call 20 CU), never from the emulator's own output.
"""

from __future__ import annotations

import asyncio
import json
import ssl

import httpx
import pandas as pd
import pytest
from click.testing import CliRunner
from live_server import running_server
from scenarios import write_scenario

from sim.cli.main import main
from sim.core.pseudonyms import pseudonym
from sim.live.misbehave import rpc_body

SLOW = 0.05  # service seconds per wall second: no test reaches a window boundary


def _client(server) -> httpx.AsyncClient:
    return httpx.AsyncClient(http2=True, verify=ssl.create_default_context(cafile=server.ca),
                             timeout=20)


async def _rpc(c, server, method="svc_call"):
    return await c.post(server.url("/"), content=rpc_body(method),
                        headers=server.headers("rpc"), extensions=server.sni("rpc"))


async def _admin(c, server, method, path, body=None):
    return await c.request(method, server.url(path), headers={"host": "rpc.localhost"},
                           content=json.dumps(body).encode() if body is not None else None,
                           extensions=server.sni("rpc"))


def test_journal_rules_and_tier_switch_from_a_client(tmp_path):
    async def go(server):
        lim = lambda: server.app.admission.limiter  # noqa: E731 - the tier switch replaces it
        async with _client(server) as c:
            for m in ("svc_call", "svc_call", "svc_pendingBlock", "svc_call"):
                assert (await _rpc(c, server, m)).status_code == 200
            found = (await _admin(c, server, "GET", "/admin/requests?method=svc_call")).json()
            assert found["count"] == 3
            assert {r["key"] for r in found["requests"]} == {pseudonym("k1")}
            ok = await _admin(c, server, "POST", "/admin/requests/verify",
                              {"method": "svc_call", "times": 3})
            wrong = await _admin(c, server, "POST", "/admin/requests/verify",
                                 {"method": "svc_call", "times": 2})
            assert (ok.status_code, wrong.status_code) == (200, 409)
            assert wrong.json()["count"] == 3

            # A forced status: answered 503 with Retry-After, neither decided nor billed.
            rule = await _admin(c, server, "POST", "/admin/rules", {
                "match": {"method": "svc_pendingBlock"}, "status": 503, "retry_after_s": 2})
            assert rule.status_code == 201
            admitted = sum(lim().window_stats().admitted)
            forced = await _rpc(c, server, "svc_pendingBlock")
            assert (forced.status_code, forced.headers["retry-after"]) == (503, "2")
            assert sum(lim().window_stats().admitted) == admitted
            assert (await _rpc(c, server, "svc_call")).status_code == 200  # not matched

            # A latency rule, once: decided and billed as usual, the reply 0.3 s later.
            await _admin(c, server, "POST", "/admin/rules",
                         {"match": {"method": "svc_call"}, "delay_s": 0.3, "times": 1})
            slow = await _rpc(c, server, "svc_call")
            assert slow.status_code == 200 and slow.json()["result"] == "0x"
            last = (await _admin(c, server, "GET", "/admin/requests?limit=1")).json()
            assert last["requests"][0]["fault"] == "r2"
            assert last["requests"][0]["latency_ms"] >= 300  # at least the delay

            # A dropped connection, once.
            await _admin(c, server, "POST", "/admin/rules",
                         {"match": {"method": "svc_call"}, "drop": True, "times": 1})
            with pytest.raises(httpx.TransportError):
                await _rpc(c, server, "svc_call")
        async with _client(server) as c:
            rules = (await _admin(c, server, "GET", "/admin/rules")).json()["rules"]
            assert [r["id"] for r in rules] == ["r1"]  # r2 and r3 were for one use
            assert (await _admin(c, server, "DELETE", "/admin/rules")).json() == {"removed": 1}
            # Switching tier at runtime: a fresh account on the new tier.
            bad = await _admin(c, server, "POST", "/admin/tier", {"tier": "Nope"})
            assert bad.status_code == 400 and "expected one of" in bad.json()["error"]["message"]
            switched = await _admin(c, server, "POST", "/admin/tier", {"tier": "RPC"})
            assert switched.json()["tier"] == "RPC"
            window = (await _admin(c, server, "GET", "/admin/window")).json()
            assert (window["tier"], window["budget_cu"]) == ("RPC", 4000)
            assert (await _rpc(c, server, "svc_call")).status_code == 200
    with running_server(tmp_path, "", "All 3 APIs", SLOW) as server:
        asyncio.run(go(server))


async def _session(server, calls: int) -> None:
    """A client session: web3.py over an HTTP/2 provider when web3 is installed (the docs'
    sketch), else httpx JSON-RPC."""
    try:
        from web3 import Web3  # noqa: F401
    except ImportError:
        async with _client(server) as c:
            for i in range(calls):
                assert (await _rpc(c, server, "svc_call" if i % 2 else "svc_pendingBlock")
                        ).status_code == 200
        return
    await asyncio.to_thread(_web3_session, server, calls)


def _web3_session(server, calls: int) -> None:
    from web3 import Web3
    from web3.providers import JSONBaseProvider

    class H2Provider(JSONBaseProvider):  # as in docs/how-to/use-the-emulator.md
        def __init__(self, url, key, ca):
            super().__init__()
            self.url = url
            self.client = httpx.Client(http2=True, verify=ssl.create_default_context(cafile=ca),
                                       timeout=30, headers={"X-Api-Key": key})

        def make_request(self, method, params):
            r = self.client.post(self.url, content=self.encode_rpc_request(method, params),
                                 headers={"Content-Type": "application/json",
                                          "Host": "rpc.localhost"},
                                 extensions={"sni_hostname": "rpc.localhost"})
            r.raise_for_status()
            return self.decode_rpc_response(r.content)

    w3 = Web3(H2Provider(server.url("/"), "k1", server.ca))
    for i in range(calls):
        reply = w3.provider.make_request("svc_call" if i % 2 else "svc_pendingBlock", [])
        assert "result" in reply


def test_a_session_recorded_in_the_access_log_imports_and_replays(tmp_path):
    log = tmp_path / "access.jsonl"
    calls = 12
    with running_server(tmp_path, "", "All 3 APIs", 1.0, access_log=str(log)) as server:
        server.app.log.format = "jsonl"
        asyncio.run(_session(server, calls))
        async def noise():  # not API traffic: not in the importable log
            async with _client(server) as c:
                await c.get(server.url("/healthz"), headers={"host": "rpc.localhost"})
                await _admin(c, server, "GET", "/admin/window")
        asyncio.run(noise())
    rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == calls and {r["status"] for r in rows} == {200}
    assert "k1" not in log.read_text(encoding="utf-8")
    trace = tmp_path / "session.parquet"
    done = CliRunner().invoke(main, ["trace", "import", str(log), "--out", str(trace)])
    assert done.exit_code == 0, done.output
    table = pd.read_parquet(trace)
    assert len(table) == calls
    assert sorted(table["method"].astype(str)) == sorted(
        ["svc_call"] * (calls // 2) + ["svc_pendingBlock"] * (calls - calls // 2))
    assert set(table["key"].astype(str)) == {pseudonym("k1")}
    scenario = write_scenario(
        tmp_path, filename="replay.toml", name="replayed", duration="1h",
        tiers=["All 3 APIs"], keys=["k1"],
        tables='[clients.default]\nretry = { policy = "none" }\n', sources="""[[sources]]
name = "recorded"
key = "k1"
trace = "session.parquet"
""")
    out = tmp_path / "rep"
    done = CliRunner().invoke(main, ["run", str(scenario), "--out", str(out), "-q"])
    assert done.exit_code == 0, done.output
    req = pd.read_parquet(out / "requests.parquet")
    assert len(req) == calls and (req["outcome"] == "ok").all()
