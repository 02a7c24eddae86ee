"""A soak of ``capsim serve``: well-behaved and misbehaving clients on loopback, bounded.

    python3 benchmarks/bench_emulator_soak.py [--seconds 600] [--json FILE]

Starts ``capsim serve`` in a child process (its own CA folder, access log off) and, for
``--seconds`` of wall time, drives it with:

* well-behaved clients: 4 long-lived httpx HTTP/2 connections sending ``svc_call``,
  ``svc_pendingBlock`` and ``POST /v1/size`` (about 6 requests per second in all) and
  a websocket subscriber to ``pending-txs``;
* misbehaving ones (``sim/live/misbehave.py``), one at a time, about one a second, in
  turn: a killed client (TCP RST with a request in its service time), a client timeout
  shorter than the service time, a half-sent body, a client that never reads, a burst of
  key-less connections, an HTTP/1.1 client (421), a 4 MiB streamed body (413), 33
  streams before SETTINGS.

Every 5 s it samples the server's RSS and ``/healthz``. At the end it stops the
misbehaving clients, then closes the well-behaved ones, and reads ``/healthz`` until
the account holds no connection (at most 10 s): **leaked connections** are what is left.
It prints both, the RSS per minute, its floor (at one minute) and its least-squares
slope after the first minute and over the second half, and writes everything to
``--json`` (default ``benchmarks/results/emulator_soak.json``, through
``benchmarks/results.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import ssl
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import add_json_option, write  # noqa: E402

from sim.live import child, misbehave  # noqa: E402
from sim.live.drive import sizing_body  # noqa: E402
from sim.live.misbehave import headers, rpc_body  # noqa: E402

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
SIZING = json.dumps(sizing_body(["fast"])).encode()

# The misbehaviours, in turn: (name, blocking?, call(port, ca)).
BAD = [
    ("killed", True, partial(misbehave.killed, key=KEY, method="svc_slow")),
    ("half_sent", True, partial(misbehave.half_sent, key=KEY, method="svc_call", cut=15)),
    ("never_reads", True, partial(misbehave.never_reads, key=KEY, method="svc_slow")),
    ("streams_33", True, partial(misbehave.streams_before_settings, key=KEY,
                                 method="svc_pendingBlock", limit_s=5)),
    ("big_body", True, partial(misbehave.upload, total=4 << 20, key=KEY)),
    ("client_timeout", False, partial(misbehave.client_timeout, key=KEY, method="svc_slow")),
    ("keyless_burst", False, partial(misbehave.keyless, method="svc_call")),
    ("http11", False, partial(misbehave.http11, key=KEY, method="svc_call")),
]


async def misbehave(port, ca, until: float, counts: dict) -> None:
    i = 0
    while time.monotonic() < until:
        name, blocking, fn = BAD[i % len(BAD)]
        i += 1
        try:
            if blocking:
                await asyncio.to_thread(fn, port, ca)
            else:
                await fn(port, ca)
            counts[name] = counts.get(name, 0) + 1
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
                                          headers=headers(port, "search", KEY),
                                          extensions={"sni_hostname": "search.localhost"})
                else:
                    method = "svc_call" if pick < 0.7 else "svc_pendingBlock"
                    r = await rpc_c.post(f"https://127.0.0.1:{port}/", content=rpc_body(method),
                                         headers=headers(port, "rpc", KEY),
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


def slope_mb_per_min(samples: list[dict], since_s: float) -> float:
    """Least-squares slope of RSS (MB per minute) over the samples from ``since_s`` on."""
    pts = [(s["t_s"], s["rss_mb"]) for s in samples if s["t_s"] >= since_s]
    if len(pts) < 2:
        return 0.0
    mt = statistics.fmean(t for t, _ in pts)
    mr = statistics.fmean(r for _, r in pts)
    den = sum((t - mt) ** 2 for t, _ in pts)
    return 60.0 * sum((t - mt) * (r - mr) for t, r in pts) / den if den else 0.0


def rss_per_minute(samples: list[dict]) -> dict[str, float]:
    """The RSS sample nearest each whole minute (and the last), keyed by minutes."""
    out: dict[str, float] = {}
    if not samples:
        return out
    last = samples[-1]["t_s"]
    for minute in range(1, int(last // 60) + 1):
        near = min(samples, key=lambda r, m=minute: abs(r["t_s"] - 60 * m))
        out[str(minute)] = near["rss_mb"]
    if last % 60 > 1.0:  # and the last sample, when it is not at a whole minute
        out[f"{last / 60:.1f}"] = samples[-1]["rss_mb"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=600.0)
    add_json_option(ap, "emulator_soak")
    args = ap.parse_args()
    load_before = round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory(prefix="capsim-soak-") as tmp:
        scenario = Path(tmp) / "soak.toml"
        scenario.write_text(SCENARIO, encoding="utf-8")
        with child.running([str(scenario), "--tier", TIER, "--access-log", "off"],
                           Path(tmp) / "certs") as server:
            print(f"soak: {args.seconds:g} s against capsim serve (pid {server.proc.pid}, "
                  f"port {server.port})", flush=True)
            result = asyncio.run(soak(args.seconds, server.port, server.ca, server.proc.pid))
    samples = result["samples"]
    result["seconds"] = args.seconds
    # The floor: the server's RSS once it has served the first clients for a minute.
    result["rss_floor_mb"] = next((s["rss_mb"] for s in samples if s["t_s"] >= 60),
                                  samples[-1]["rss_mb"] if samples else None)
    result["rss_slope_mb_per_min"] = round(slope_mb_per_min(samples, 60.0), 3)
    result["rss_slope_second_half_mb_per_min"] = round(
        slope_mb_per_min(samples, args.seconds / 2), 3)
    result["rss_mb_per_minute"] = rss_per_minute(samples)
    rss = [s["rss_mb"] for s in samples]
    print(f"requests (well-behaved): {dict(sorted(result['good'].items()))}")
    print(f"misbehaving clients run: {dict(sorted(result['bad'].items()))}")
    print(f"websocket: {result['ws']}")
    print("RSS per minute (MB): " + ", ".join(
        f"{m}: {v}" for m, v in result["rss_mb_per_minute"].items()))
    print(f"RSS: floor (at 1 min) {result['rss_floor_mb']} MB, max {max(rss, default=0)} MB, "
          f"last {rss[-1] if rss else 'n/a'} MB")
    print(f"memory slope: {result['rss_slope_mb_per_min']:+.3f} MB/min after the first "
          f"minute, {result['rss_slope_second_half_mb_per_min']:+.3f} MB/min over the "
          f"second half")
    print(f"leaked connections: account {result['leaked_account_connections']}, "
          f"TCP {result['leaked_tcp_connections']}")
    write(args.json, "emulator_soak", result, load_before=load_before)


if __name__ == "__main__":
    main()
