"""The live emulator at the edges of its input: JSON a parser may choke on, bursts whose
requests are taken up in another order than they were read.

Expected values come from RFC 8259 (no NaN or Infinity in JSON; a number must be
representable to be echoed), JSON-RPC 2.0 (-32700 parse error, -32600 invalid request,
``id`` null when it cannot be read) and the spec (8.4.3: 32 new connections per second
per hostname), never from the emulator's own output.
"""

from __future__ import annotations

import asyncio
import json
import ssl

import httpx
from live_server import running_server

SLOW = 0.05  # service seconds per wall second: no test reaches a window boundary


def _client(server) -> httpx.AsyncClient:
    return httpx.AsyncClient(http2=True, verify=ssl.create_default_context(cafile=server.ca),
                             timeout=20)


async def _post(c, server, body: bytes):
    return await c.post(server.url("/"), content=body, headers=server.headers("rpc"),
                        extensions=server.sni("rpc"))


def test_json_edge_cases_get_json_rpc_errors_in_valid_json(tmp_path):
    deep = b'{"jsonrpc":"2.0","id":1,"method":"svc_call","params":' \
        + b"[" * 100_000 + b"]" * 100_000 + b"}"
    bodies = {
        "deep": deep,
        "nan": b'{"jsonrpc":"2.0","id":NaN,"method":"svc_call","params":[]}',
        "infinity": b'{"jsonrpc":"2.0","id":Infinity,"method":"svc_call","params":[]}',
        "-infinity": b'{"jsonrpc":"2.0","id":-Infinity,"method":"svc_call","params":[]}',
        "1e400": b'{"jsonrpc":"2.0","id":1e400,"method":"svc_call","params":[]}',
    }

    async def go(server):
        got = {}
        async with _client(server) as c:
            for name, body in bodies.items():
                r = await _post(c, server, body)
                # valid JSON: the standard's parser, refusing NaN and Infinity
                reply = json.loads(r.content, parse_constant=lambda v: (_ for _ in ()).throw(
                    ValueError(v)))
                got[name] = (r.status_code, reply["id"], reply["error"]["code"])
            ok = await _post(c, server, b'{"jsonrpc":"2.0","id":1e3,"method":"svc_call"}')
        # NaN, Infinity: not JSON at all (RFC 8259 6): a parse error, id null.
        assert got["nan"] == got["infinity"] == got["-infinity"] == (200, None, -32700)
        # 1e400 is JSON but no finite number: an invalid id, answered with id null.
        assert got["1e400"] == (200, None, -32600)
        # 100,000 levels: a JSON-RPC error, not an empty 500.
        assert got["deep"][0] == 200 and got["deep"][1] is None
        assert got["deep"][2] in (-32700, -32600)
        assert ok.status_code == 200 and ok.json() == {"jsonrpc": "2.0", "id": 1000.0,
                                                       "result": "0x"}
    with running_server(tmp_path, "", "All 3 APIs", SLOW) as server:
        asyncio.run(go(server))


def test_x_capsim_t_follows_the_order_of_decisions_in_a_burst(tmp_path):
    # 40 connections at once, within one service second (SLOW: 20 wall s): 32 are
    # admitted, 8 refused (430); the refused ones were decided after every admission, so
    # none may carry an earlier service time than an admitted one.
    async def go(server):
        clients = [_client(server) for _ in range(40)]
        try:
            replies = await asyncio.gather(*(
                _post(c, server, b'{"jsonrpc":"2.0","id":1,"method":"svc_pendingBlock"}')
                for c in clients))
        finally:
            for c in clients:
                await c.aclose()
        admitted = [float(r.headers["x-capsim-t"]) for r in replies if r.status_code == 200]
        refused = [float(r.headers["x-capsim-t"]) for r in replies if r.status_code == 430]
        assert (len(admitted), len(refused)) == (32, 8)
        assert max(admitted) <= min(refused)
    for attempt in range(3):
        (tmp_path / str(attempt)).mkdir()
        with running_server(tmp_path / str(attempt), "", "All 3 APIs", SLOW) as server:
            asyncio.run(go(server))
