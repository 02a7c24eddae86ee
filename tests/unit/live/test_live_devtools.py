"""The emulator's developer side: its CA kept across starts, region hostnames, the
temporary certificate folder, ``/admin/*`` endpoints, faults, the access log, and
settling on the service clock's schedule.

Expected values come from the spec (8.1: "All 3 APIs" has 8,400 CU per window), the
pricing defaults (``svc_call`` 20 CU) and RFC 6125 (a certificate verifies the names it
lists, a wildcard one label), not from the emulator's own output.
"""

from __future__ import annotations

import asyncio
import contextlib
import pathlib
import socket
import ssl

import httpx
import pytest
from live_server import BASE, running_server
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from sim.config.resolved import load
from sim.config.tiers import find_tier
from sim.core.errors import CapsimError
from sim.core.pseudonyms import pseudonym
from sim.live import server as server_mod
from sim.live.app import EmulatorApp
from sim.live.certs import hostnames, make_certificate
from sim.live.misbehave import rpc_body
from sim.live.server import ServeOptions, serve
from sim.policy.admission import Admission

SLOW = 0.05


def _client(server) -> httpx.AsyncClient:
    return httpx.AsyncClient(http2=True, verify=ssl.create_default_context(cafile=server.ca),
                             timeout=20)


async def _rpc(c, server, host="rpc"):
    return await c.post(server.url("/"), content=rpc_body(), headers=server.headers(host),
                        extensions=server.sni(host))


def _handshake_names(ca: str, cert_dir, name: str) -> bool:
    """Whether a TLS client trusting ``ca`` accepts the server certificate for ``name``."""
    ctx = ssl.create_default_context(cafile=ca)
    srv = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    srv.load_cert_chain(str(cert_dir / "server.pem"), str(cert_dir / "server.key"))
    c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
    client = ctx.wrap_bio(c_in, c_out, server_hostname=name)
    server = srv.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(10):
        try:
            client.do_handshake()
            return True
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLCertVerificationError:
            return False
        s_in.write(c_out.read())
        with contextlib.suppress(ssl.SSLWantReadError, ssl.SSLError):
            server.do_handshake()
        c_in.write(s_out.read())
    raise AssertionError("no TLS handshake")


def test_the_ca_is_kept_across_starts_and_names_every_region_hostname(tmp_path):
    folder = tmp_path / "certs"
    first = make_certificate(folder, hostnames(["default", "eu-west", "Not a label!"]))
    ca, leaf = first.ca_path.read_bytes(), first.cert_path.read_bytes()
    again = make_certificate(folder, hostnames(["default", "eu-west"]))
    assert again.reused and again.ca_path.read_bytes() == ca
    assert again.cert_path.read_bytes() == leaf  # same names: the same certificate
    assert not (folder / "ca.key").exists()  # the CA's key is not beside the certificates
    from cryptography import x509

    from sim.live.ca import key_path
    stored = key_path(x509.load_pem_x509_certificate(ca))
    assert stored.stat().st_mode & 0o077 == 0 and stored.parent.stat().st_mode & 0o077 == 0
    assert (folder / "server.key").stat().st_mode & 0o077 == 0
    for name in ("rpc.localhost", "search.eu-west.localhost", "streams.eu-west.localhost"):
        assert _handshake_names(str(first.ca_path), folder, name), name
    assert not _handshake_names(str(first.ca_path), folder, "rpc.us-east.localhost")
    # Another region: a new server certificate from the same CA.
    third = make_certificate(folder, hostnames(["us-east"]))
    assert third.ca_path.read_bytes() == ca and third.cert_path.read_bytes() != leaf
    assert _handshake_names(str(third.ca_path), folder, "rpc.us-east.localhost")
    # A folder holding something else is an error naming the file, not a traceback.
    (folder / "ca.pem").write_text("not a certificate")
    with pytest.raises(CapsimError, match="ca.pem"):
        make_certificate(folder)


def test_a_region_hostname_is_served(tmp_path):
    async def go(server):
        async with _client(server) as c:
            r = await _rpc(c, server, "rpc.eu-west")
            assert r.status_code == 200 and r.json()["result"] == "0x"
    regions = '[[regions]]\nname = "eu-west"\n'
    with running_server(tmp_path, regions, "All 3 APIs", SLOW) as server:
        assert any("rpc.eu-west.localhost" in ln for ln in server.lines)
        asyncio.run(go(server))


def test_the_temporary_certificate_folder_is_removed_on_exit_and_on_failure(tmp_path,
                                                                            monkeypatch):
    made = []
    real = server_mod.tempfile.mkdtemp

    def mkdtemp(**kw):
        made.append(real(dir=tmp_path, **kw))
        return made[-1]
    monkeypatch.setattr(server_mod.tempfile, "mkdtemp", mkdtemp)
    path = tmp_path / "s.toml"
    path.write_text(BASE, encoding="utf-8")
    loaded = load(path)
    tier = find_tier("All 3 APIs", loaded.tiers)

    async def run_and_stop():
        stop = asyncio.Event()
        seen = []

        def ready(app):
            seen.append(list((tmp_path).glob("capsim-serve-*/ca.pem")))
            stop.set()
        await serve(loaded, tier, ServeOptions(port=0), lambda _line: None, stop, ready)
        return seen

    seen = asyncio.run(run_and_stop())
    assert len(seen[0]) == 1 and not any(pathlib.Path(p).exists() for p in made)
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        with pytest.raises(CapsimError, match="cannot listen"):
            asyncio.run(serve(loaded, tier, ServeOptions(port=taken.getsockname()[1]),
                              lambda _line: None, asyncio.Event()))
    finally:
        taken.close()
    assert len(made) == 2
    assert not any(pathlib.Path(p).exists() for p in made)


def test_admin_window_reset_and_the_access_log(tmp_path):
    log = tmp_path / "access.log"

    async def go(server):
        async with _client(server) as c:
            for _ in range(3):
                assert (await _rpc(c, server)).status_code == 200
            w = (await c.get(server.url("/admin/window"),
                             headers={"host": "rpc.localhost"})).json()
            assert w["budget_cu"] == 8400 and w["tier"] == "All 3 APIs"
            assert w["window"]["start_s"] == 0 and w["window"]["end_s"] == 12
            assert w["window"]["reserved_cu"] == 60 and w["window"]["settled_cu"] == 60
            assert w["available_cu"] == 8400 - 60 and w["daily"]["used_cu"] == 60
            assert w["connections"]["account_active"] == 1
            r = await c.post(server.url("/admin/reset"), headers={"host": "rpc.localhost"})
            assert r.status_code == 200
            w = (await c.get(server.url("/admin/window"),
                             headers={"host": "rpc.localhost"})).json()
            assert w["available_cu"] == 8400 and w["daily"]["used_cu"] == 0
            assert w["connections"]["account_active"] == 0
            assert (await _rpc(c, server)).status_code == 200  # asks the limits again
            w = (await c.get(server.url("/admin/window"),
                             headers={"host": "rpc.localhost"})).json()
            assert w["connections"]["account_active"] == 1 and w["available_cu"] == 8400 - 20
            r = await c.post(server.url("/admin/faults"), json={"stall_s": "x"},
                             headers={"host": "rpc.localhost"})
            assert r.status_code == 400 and "stall_s" in r.json()["error"]["message"]
        lines = log.read_text().splitlines()
        calls = [ln for ln in lines if " svc_call " in ln]
        assert len(calls) == 4
        who = pseudonym("k1")
        assert all("svc_call 200 ok cu=20 " in ln and ln.endswith(f"key={who}")
                   for ln in calls)
        assert all(" rpc.localhost POST / " in ln for ln in calls)
        assert not any("k1" in ln.replace(who, "") for ln in lines)
        assert any("/admin/window" in ln and " 200 " in ln and ln.endswith("key=-")
                   for ln in lines)
    with running_server(tmp_path, "", "All 3 APIs", SLOW, access_log=str(log)) as server:
        asyncio.run(go(server))


async def _ws(server):
    return await connect(f"wss://streams.localhost:{server.port}/new-blocks",
                         ssl=ssl.create_default_context(cafile=server.ca),
                         server_hostname="streams.localhost", host="127.0.0.1",
                         port=server.port, additional_headers={"X-Api-Key": "k1"},
                         ping_interval=None, open_timeout=20)


def test_faults_drop_websockets_uncleanly_and_stall_requests(tmp_path):
    async def go(server):
        ws = await _ws(server)
        async with _client(server) as c:
            r = await c.post(server.url("/admin/faults"), json={"drop_websockets": True},
                             headers={"host": "rpc.localhost"})
            assert r.json()["websockets_dropped"] == 1
            with pytest.raises(ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), 10)
            assert closed.value.rcvd is None  # no close frame: an unclean drop
            for _ in range(100):
                h = (await c.get(server.url("/healthz"), headers={"host": "rpc.localhost"}))
                if h.json()["websockets"]["stale"] == 1:
                    break
                await asyncio.sleep(0.02)
            assert h.json()["websockets"] == {"live": 0, "stale": 1}
            before = float(h.headers["x-capsim-t"]) if "x-capsim-t" in h.headers else \
                h.json()["now_s"]
            r = await c.post(server.url("/admin/faults"), json={"stall_s": 0.5},
                             headers={"host": "rpc.localhost"})
            assert r.status_code == 200
        async with _client(server) as c:  # SNI rpc.localhost (the pooled one has none)
            r = await _rpc(c, server)
            # decided no earlier than the stall's end: 0.5 wall s = 0.025 service s
            assert r.status_code == 200 and float(r.headers["x-capsim-t"]) >= before + 0.025
    with running_server(tmp_path, "", "All 3 APIs", SLOW) as server:
        asyncio.run(go(server))


class _LateClock:
    """A service clock whose sleeps end 2 service seconds late (an overloaded loop at a
    large time scale)."""

    time_scale = 100.0
    t0_unix = 0.0

    def __init__(self) -> None:
        self.t = 5.0

    def now(self) -> float:
        return self.t

    async def sleep_until(self, t: float) -> None:
        self.t = max(self.t, t) + 2.0


def test_settled_on_the_schedule_not_when_the_loop_woke(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(BASE, encoding="utf-8")
    loaded = load(path)
    adm = Admission.for_scenario(loaded, find_tier("All 3 APIs", loaded.tiers))
    settled = []
    real = adm.settle
    adm.settle = lambda now, d: (settled.append(now), real(now, d))
    clock = _LateClock()
    warnings = []
    app = EmulatorApp(loaded, adm, clock)
    app.late.warn = warnings.append
    d = adm.request(5.0, "svc_call", key_ok=True, h2_sni=True, reserve_cu=20, actual_cu=20)
    from sim.live.access import Exchange
    asyncio.run(app._serve(Exchange({}, None), d, 5.0, "svc_call"))
    # BASE: svc_call's service time is a constant 0.0005 s.
    assert settled == [pytest.approx(5.0005)]
    assert app.late.max_s == pytest.approx(2.0) and len(warnings) == 1


def test_the_access_log_never_blocks_the_server_on_a_pipe_nobody_reads():
    import os
    import threading

    from sim.live.access import AccessLog, Exchange

    read_end, write_end = os.pipe()  # nobody reads: a pipe holds 64 KiB, then blocks
    out = os.fdopen(write_end, "w", encoding="utf-8")
    log = AccessLog(out)
    ex = Exchange({"method": "POST", "path": "/", "headers": []}, None)
    n = AccessLog.QUEUE_LINES + 5_000
    writer = threading.Thread(target=lambda: [log.write(ex) for _ in range(n)], daemon=True)
    writer.start()
    writer.join(30)
    assert not writer.is_alive()  # every write returned
    # what neither the pipe nor the queue holds is dropped, and counted
    assert log.lines == n and 0 < log.dropped <= n - AccessLog.QUEUE_LINES
    os.close(read_end)  # the log thread's write fails now; close() gives up after 1 s
    log.close()


def test_a_request_is_decided_at_its_read_time_not_when_the_loop_took_it_up(tmp_path):
    """The event loop takes a request up 0.3 wall s after reading it (a busy loop, made
    here by a slow ``_stalled``): at time scale 10 the old server decided it 3 service s
    late (``x-capsim-t`` = send + 3 s); now it is decided when its bytes were read, and
    the delay is reported (``arrival_lateness``) and warned about (over 0.1 service s)."""
    import time

    from live_server import running_server

    async def go(server):
        async def slow_takeup() -> bool:
            await asyncio.sleep(0.3)
            return False
        server.app._stalled = slow_takeup
        async with httpx.AsyncClient(http2=True, timeout=20,
                                     verify=ssl.create_default_context(cafile=server.ca)) as c:
            await c.get(server.url("/healthz"), headers=server.headers("rpc"),
                        extensions=server.sni("rpc"))  # connected before the clock is read
            clock = server.app.clock
            sent = clock.at(time.time())
            r = await c.post(server.url("/"), content=rpc_body(), headers=server.headers("rpc"),
                             extensions=server.sni("rpc"))
        assert r.status_code == 200
        decided = float(r.headers["x-capsim-t"])
        assert sent <= decided + 1e-3 and decided - sent < 1.0  # was sent + 3.0
        assert server.app.arrival_late.max_s > 2.5
    with running_server(tmp_path, "", "All 3 APIs", 10.0) as server:
        asyncio.run(go(server))
        deadline = time.monotonic() + 5
        while not any("after it was read" in ln for ln in server.lines) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        assert any("taken up" in ln and "after it was read" in ln for ln in server.lines)


def test_reset_with_requests_in_service_settles_them_in_the_old_account(tmp_path):
    """Issue 34 item 1: calls admitted before ``POST /admin/reset`` and still in service
    settle to the account that admitted them -- no 500, and the new account's window
    starts empty (8,400 CU available, nothing settled), as a fresh account must."""
    async def go(server):
        server.app._draw_service_s = lambda _method: 1.0  # 1 s in service, wall-clock
        async with _client(server) as c:
            calls = [asyncio.create_task(_rpc(c, server)) for _ in range(5)]
            await asyncio.sleep(0.4)
            r = await c.post(server.url("/admin/reset"), headers={"host": "rpc.localhost"})
            assert r.status_code == 200
            statuses = [(await t).status_code for t in calls]
            assert statuses == [200] * 5
            w = (await c.get(server.url("/admin/window"),
                             headers={"host": "rpc.localhost"})).json()
            assert w["available_cu"] == 8400 and w["daily"]["used_cu"] == 0
            assert w["window"] is None or w["window"]["settled_cu"] == 0
    with running_server(tmp_path, "", "All 3 APIs") as server:
        asyncio.run(go(server))


def test_the_ca_is_name_constrained_short_lived_and_replaces_an_unsound_one(tmp_path):
    """RFC 5280 4.2.1.10: a CA constrained to ``localhost`` and loopback cannot vouch for
    another name -- a certificate it signs for ``bank.example`` fails verification in
    Python's (OpenSSL's) client; a year of validity; a CA of the old kind (no
    constraints, valid until 3000, its key beside it) is replaced and its key removed."""
    import datetime as dt

    import trustme
    from cryptography import x509

    from sim.live import ca as ca_mod

    folder = tmp_path / "certs"
    made = make_certificate(folder)
    authority = ca_mod.load_authority(made.ca_path.read_bytes())
    assert authority.key is not None
    cert = authority.cert
    constraints = cert.extensions.get_extension_for_class(x509.NameConstraints)
    assert constraints.critical
    span = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert span <= dt.timedelta(days=366)
    # A leaf for another name, signed with the CA's own key, is refused by a client.
    chain, key = ca_mod.issue(authority, ["bank.example", "rpc.localhost"])
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "server.pem").write_bytes(chain)
    (evil / "server.key").write_bytes(key)
    assert not _handshake_names(str(made.ca_path), evil, "bank.example")
    assert not _handshake_names(str(made.ca_path), evil, "rpc.localhost")  # one bad name taints it
    # The old layout: trustme's CA (no constraints, until 3000) with ca.key beside it.
    old = tmp_path / "old"
    old.mkdir()
    legacy = trustme.CA()
    (old / "ca.pem").write_bytes(legacy.cert_pem.bytes())
    (old / "ca.key").write_bytes(legacy.private_key_pem.bytes())
    renewed = make_certificate(old)
    assert not renewed.reused and not (old / "ca.key").exists()
    assert any("no name constraints" in n for n in renewed.notes)
    assert renewed.ca_path.read_bytes() != legacy.cert_pem.bytes()
    assert _handshake_names(str(renewed.ca_path), old, "rpc.localhost")
