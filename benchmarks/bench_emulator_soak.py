"""A soak of ``capsim serve``: well-behaved and misbehaving clients on loopback, bounded.

    python3 benchmarks/bench_emulator_soak.py [--seconds 600] [--json FILE]

Starts ``capsim serve`` in a child process (its own CA folder, access log off) and, for
``--seconds`` of wall time, drives it with:

* well-behaved clients: 4 long-lived httpx HTTP/2 connections sending ``svc_call``,
  ``svc_pendingBlock`` and ``POST /v1/size`` (about 20 requests per second in all) and
  a websocket subscriber to ``new-blocks``;
* misbehaving ones, about 4 a second, in turn: a killed client (TCP RST with a request
  in its service time), a client timeout shorter than the service time, a half-sent
  body, a client that never reads, a burst of key-less connections, an HTTP/1.1 client
  (421), a 4 MiB streamed body (413), 33 streams before SETTINGS.

Every 5 s it samples the server's RSS and ``/healthz``. At the end it stops the
misbehaving clients, then closes the well-behaved ones, and reads ``/healthz`` until
the account holds no connection (at most 10 s): **leaked connections** are what is left.
It prints both, RSS over time (and its least-squares slope after the first minute), and
writes everything to ``--json`` (default ``benchmarks/results/emulator_soak.json``,
through ``benchmarks/results.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import socket
import ssl
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h2.config
import h2.connection
import h2.events
import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import add_json_option, write  # noqa: E402

from sim.live.drive import sizing_body  # noqa: E402

SCENARIO = """
name = "soak"
seed = 11
duration = "60s"
[account]
keys = ["soak-key"]
[[sources]]
name = "a"
key = "soak-key"
arrival = { process = "poisson", rate = 1 }
[methods.svc_call]
api = "rpc"
service_time = { dist = "lognormal", median = 0.02, sigma = 1.0 }
[methods.svc_pendingBlock]
api = "rpc"
service_time = { dist = "constant", value = 0.002 }
[methods.svc_slow]
api = "rpc"
service_time = { dist = "constant", value = 2.0 }
[methods."POST /v1/size"]
api = "search"
service_time = { dist = "constant", value = 0.01 }
[ws]
pending_txs_rate = 20
"""
KEY = "soak-key"
TIER = "Advanced bundle"


def rpc(method: str, ident: int = 1) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": []}).encode()


SIZING = json.dumps(sizing_body(["fast"])).encode()


class RawH2:
    """A raw HTTP/2 client (the ``h2`` library) over a blocking TLS socket."""

    def __init__(self, port: int, ca: str, host: str = "rpc.localhost") -> None:
        ctx = ssl.create_default_context(cafile=ca)
        ctx.set_alpn_protocols(["h2"])
        raw = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock = ctx.wrap_socket(raw, server_hostname=host)
        self.authority = f"{host}:{port}"
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.conn.initiate_connection()
        self.flush()

    def flush(self) -> None:
        self.sock.sendall(self.conn.data_to_send())

    def headers(self, sid: int, key: str = KEY) -> None:
        self.conn.send_headers(sid, [(":method", "POST"), (":path", "/"), (":scheme", "https"),
                                     (":authority", self.authority),
                                     ("content-type", "application/json"), ("x-api-key", key)])

    def request(self, sid: int, body: bytes, end: bool = True) -> None:
        self.headers(sid)
        self.conn.send_data(sid, body, end_stream=end)
        self.flush()

    def kill(self) -> None:
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    def close(self) -> None:
        self.sock.close()


# -- misbehaviours (blocking; run in threads) -----------------------------------------


def killed(port, ca):
    c = RawH2(port, ca)
    c.request(1, rpc("svc_slow"))
    time.sleep(0.02)
    c.kill()


def half_sent(port, ca):
    c = RawH2(port, ca)
    c.request(1, rpc("svc_call")[:15], end=False)
    time.sleep(0.02)
    c.close()


def never_reads(port, ca):
    c = RawH2(port, ca)
    for sid in (1, 3, 5):
        c.request(sid, rpc("svc_slow", sid))
    time.sleep(0.05)
    c.close()


def streams_33(port, ca):
    c = RawH2(port, ca)
    for i in range(33):
        c.request(1 + 2 * i, rpc("svc_pendingBlock", i))
    c.sock.settimeout(5)
    ended = 0
    with contextlib.suppress(OSError):
        for _ in range(200):
            data = c.sock.recv(65536)
            if not data:
                break
            events = c.conn.receive_data(data)
            ended += sum(isinstance(e, h2.events.StreamEnded | h2.events.StreamReset)
                         for e in events)
            c.flush()
            if ended >= 33:
                break
    c.close()


def big_body(port, ca):
    c = RawH2(port, ca)
    c.headers(1)
    c.flush()
    c.sock.settimeout(5)
    sent, chunk = 0, b" " * 16384
    with contextlib.suppress(OSError, h2.exceptions.ProtocolError):
        while sent < 4 << 20:
            window = min(c.conn.local_flow_control_window(1), len(chunk))
            if window > 0:
                c.conn.send_data(1, chunk[:window])
                sent += window
                c.flush()
                continue
            data = c.sock.recv(65536)
            if not data:
                break
            if any(isinstance(e, h2.events.StreamReset) for e in c.conn.receive_data(data)):
                break
            c.flush()
    c.close()


async def client_timeout(port, ca):
    async with httpx.AsyncClient(http2=True, verify=ssl.create_default_context(cafile=ca),
                                 timeout=0.05) as c:
        with contextlib.suppress(httpx.HTTPError):
            await c.post(f"https://127.0.0.1:{port}/", content=rpc("svc_slow"),
                         headers=_headers(port, "rpc"),
                         extensions={"sni_hostname": "rpc.localhost"})


async def keyless_burst(port, ca):
    for key in ("wrong", None, "also-wrong", None, "wrong"):
        async with httpx.AsyncClient(http2=True, verify=ssl.create_default_context(cafile=ca),
                                     timeout=5) as c:
            with contextlib.suppress(httpx.HTTPError):
                await c.post(f"https://127.0.0.1:{port}/", content=rpc("svc_call"),
                             headers=_headers(port, "rpc", key),
                             extensions={"sni_hostname": "rpc.localhost"})


async def http11(port, ca):
    async with httpx.AsyncClient(http1=True, http2=False, timeout=5,
                                 verify=ssl.create_default_context(cafile=ca)) as c:
        with contextlib.suppress(httpx.HTTPError):
            await c.post(f"https://127.0.0.1:{port}/", content=rpc("svc_call"),
                         headers=_headers(port, "rpc"),
                         extensions={"sni_hostname": "rpc.localhost"})


def _headers(port: int, host: str, key: str | None = KEY) -> dict:
    h = {"host": f"{host}.localhost:{port}", "content-type": "application/json"}
    if key:
        h["x-api-key"] = key
    return h


BLOCKING = [killed, half_sent, never_reads, streams_33, big_body]
ASYNC = [client_timeout, keyless_burst, http11]


async def misbehave(port, ca, until: float, counts: dict) -> None:
    kinds = [*(("thread", f) for f in BLOCKING), *(("async", f) for f in ASYNC)]
    i = 0
    while time.monotonic() < until:
        kind, fn = kinds[i % len(kinds)]
        i += 1
        try:
            if kind == "thread":
                await asyncio.to_thread(fn, port, ca)
            else:
                await fn(port, ca)
            counts[fn.__name__] = counts.get(fn.__name__, 0) + 1
        except (OSError, ssl.SSLError, httpx.HTTPError):
            counts["errors"] = counts.get("errors", 0) + 1
        await asyncio.sleep(0.25)


async def behave(port, ca, until: float, counts: dict, rng: random.Random) -> None:
    """One long-lived HTTP/2 connection per API: RPC and sizing, about 5 requests/s."""
    ctx = ssl.create_default_context(cafile=ca)
    async with httpx.AsyncClient(http2=True, verify=ctx, timeout=30) as rpc_c, \
            httpx.AsyncClient(http2=True, verify=ctx, timeout=30) as size_c:
        while time.monotonic() < until:
            pick = rng.random()
            try:
                if pick < 0.2:
                    r = await size_c.post(f"https://127.0.0.1:{port}/v1/size", content=SIZING,
                                          headers=_headers(port, "search"),
                                          extensions={"sni_hostname": "search.localhost"})
                else:
                    method = "svc_call" if pick < 0.7 else "svc_pendingBlock"
                    r = await rpc_c.post(f"https://127.0.0.1:{port}/", content=rpc(method),
                                         headers=_headers(port, "rpc"),
                                         extensions={"sni_hostname": "rpc.localhost"})
                key = str(r.status_code)
            except httpx.HTTPError as err:
                key = type(err).__name__
            counts[key] = counts.get(key, 0) + 1
            await asyncio.sleep(rng.expovariate(5.0))


async def subscribe(port, ca, until: float, counts: dict) -> None:
    from websockets.asyncio.client import connect

    ctx = ssl.create_default_context(cafile=ca)
    while time.monotonic() < until:
        try:
            async with connect(f"wss://streams.localhost:{port}/pending-txs", ssl=ctx,
                               server_hostname="streams.localhost", host="127.0.0.1",
                               port=port, additional_headers={"X-Api-Key": KEY},
                               ping_interval=None, open_timeout=10) as ws:
                while time.monotonic() < until:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(ws.recv(), 1.0)
                        counts["events"] = counts.get("events", 0) + 1
        except Exception:  # noqa: BLE001 - a refused handshake: count it and retry
            counts["ws_errors"] = counts.get("ws_errors", 0) + 1
            await asyncio.sleep(1.0)


async def health(port, ca) -> dict:
    async with httpx.AsyncClient(http2=True, timeout=10,
                                 verify=ssl.create_default_context(cafile=ca)) as c:
        r = await c.get(f"https://127.0.0.1:{port}/healthz", headers={"host": "rpc.localhost"})
        return r.json()


async def soak(seconds: float, port: int, ca: str, pid: int) -> dict:
    proc = psutil.Process(pid)
    start = time.monotonic()
    until = start + seconds
    good: dict = {}
    bad: dict = {}
    ws: dict = {}
    samples = []
    rng = random.Random(7)
    tasks = [asyncio.create_task(behave(port, ca, until, good, random.Random(rng.random())))
             for _ in range(2)]
    tasks.append(asyncio.create_task(subscribe(port, ca, until, ws)))
    bad_task = asyncio.create_task(misbehave(port, ca, until, bad))
    while time.monotonic() < until:
        await asyncio.sleep(min(5.0, max(0.0, until - time.monotonic())))
        h = await health(port, ca)
        samples.append({"t_s": round(time.monotonic() - start, 1),
                        "rss_mb": round(proc.memory_info().rss / 2**20, 1),
                        "account_active": h["connections"]["account_active"],
                        "tcp_open": h["connections"]["tcp_open"],
                        "websockets_live": h["websockets"]["live"]})
        print(f"  t={samples[-1]['t_s']:6.1f}s rss={samples[-1]['rss_mb']:7.1f} MB "
              f"account connections={samples[-1]['account_active']:3d} "
              f"tcp={samples[-1]['tcp_open']:3d}", flush=True)
    await bad_task
    await asyncio.gather(*tasks)
    # Everyone has left: what the account still holds leaked.
    h = await health(port, ca)
    for _ in range(100):
        if h["connections"]["account_active"] == 0 and h["connections"]["tcp_open"] <= 1:
            break
        await asyncio.sleep(0.1)
        h = await health(port, ca)
    return {"good": good, "bad": bad, "ws": ws, "samples": samples,
            "leaked_account_connections": h["connections"]["account_active"],
            "leaked_tcp_connections": max(0, h["connections"]["tcp_open"] - 1),
            "final_rss_mb": round(proc.memory_info().rss / 2**20, 1)}


def slope_mb_per_min(samples: list[dict], skip_s: float = 60.0) -> float:
    pts = [(s["t_s"], s["rss_mb"]) for s in samples if s["t_s"] >= skip_s]
    if len(pts) < 3:
        pts = [(s["t_s"], s["rss_mb"]) for s in samples]
    if len(pts) < 2:
        return 0.0
    mt = statistics.fmean(t for t, _ in pts)
    mr = statistics.fmean(r for _, r in pts)
    den = sum((t - mt) ** 2 for t, _ in pts)
    return 60.0 * sum((t - mt) * (r - mr) for t, r in pts) / den if den else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=600.0)
    add_json_option(ap, "emulator_soak")
    args = ap.parse_args()
    load_before = round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory(prefix="capsim-soak-") as tmp:
        scenario = Path(tmp) / "soak.toml"
        scenario.write_text(SCENARIO, encoding="utf-8")
        cmd = [sys.executable, "-c", "from sim.cli.main import main; main()", "serve",
               str(scenario), "--tier", TIER, "--port", "0", "--cert-dir",
               str(Path(tmp) / "certs"), "--access-log", "off"]
        server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=os.environ.copy())
        try:
            port = ca = None
            for _ in range(50):
                line = server.stdout.readline()
                if line.startswith("listening on"):
                    port = int(line.rsplit(":", 1)[1].split()[0])
                if line.startswith("CA certificate:"):
                    ca = line.split(": ", 1)[1].strip()
                    break
            if port is None or ca is None:
                raise SystemExit("capsim serve did not start: " + server.stderr.read())
            print(f"soak: {args.seconds:g} s against capsim serve (pid {server.pid}, "
                  f"port {port})", flush=True)
            result = asyncio.run(soak(args.seconds, port, ca, server.pid))
        finally:
            server.terminate()
            try:
                server.wait(15)
            except subprocess.TimeoutExpired:
                server.kill()
    result["seconds"] = args.seconds
    result["rss_slope_mb_per_min"] = round(slope_mb_per_min(result["samples"]), 3)
    rss = [s["rss_mb"] for s in result["samples"]]
    print(f"requests (well-behaved): {dict(sorted(result['good'].items()))}")
    print(f"misbehaving clients run: {dict(sorted(result['bad'].items()))}")
    print(f"websocket: {result['ws']}")
    print(f"RSS: first {rss[0] if rss else 'n/a'} MB, max {max(rss, default=0)} MB, "
          f"last {rss[-1] if rss else 'n/a'} MB; slope after the first minute "
          f"{result['rss_slope_mb_per_min']:+.3f} MB/min")
    print(f"leaked connections: account {result['leaked_account_connections']}, "
          f"TCP {result['leaked_tcp_connections']}")
    rss_at = {}
    for mark in (60, 180, 300, 540, result["seconds"]):
        if result["samples"]:
            near = min(result["samples"], key=lambda r, m=mark: abs(r["t_s"] - m))
            rss_at[str(int(mark))] = near["rss_mb"]
    result["rss_mb_at_s"] = rss_at
    write(args.json, "emulator_soak", result, load_before=load_before)

if __name__ == "__main__":
    main()
