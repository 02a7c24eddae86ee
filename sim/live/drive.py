"""``capsim drive``: a real client replaying a scenario's demand against the emulator.

The demand is the simulator's (:func:`sim.workload.demand.build_plan`: the same open-loop
arrivals, methods and sizing item counts on the same named streams; closed-loop workers
draw from the same per-worker streams), sent at its service times from the next
12-second window boundary of the emulator's clock on. Each source has its own httpx
client with HTTP/2 (or HTTP/1.1 for ``http_version = "1.1"``), SNI unless ``sni =
false``, at most ``http.max_connections`` connections, idle connections closed after
``http.idle_timeout_s`` (service time), a fresh connection per request when ``reuse =
false``; the server announces 32 streams per connection, so more parallelism opens
more connections as in the model. Refused attempts are retried with the model's own
:class:`~sim.model.retry.RetryDecider`. Websocket clients (:mod:`.drive_ws`) hold
their connections, drop them cleanly or by aborting the TCP connection (unclean), and
reconnect per their policy.

Bounded: nothing is sent after the scenario's duration (attempts in flight finish), and
only the ``--target`` address is contacted, which must be loopback unless
``--allow-remote``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import math
import ssl
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

from ..config.resolved import LoadedScenario
from ..config.scenario import Source
from ..core.errors import CapsimError
from ..core.rng import stream as named_stream
from ..core.vocabulary import (
    HTTP_STATUS_OUTCOME,
    RPC,
    SEARCH,
    SIZE_METHOD,
    STREAM_NAMES,
    WINDOW_S,
    Rng,
)
from ..policy.retry import RetryDecider
from ..traces.bodies import canonical_hash
from ..workload.demand import RequestDrawer, build_plan
from .certs import HOSTNAMES
from .clock import ServiceClock
from .record import DriveRecorder

_WALL_TIMEOUT_S = 30.0
_ADDRESS = "0x" + "11" * 20
_HASH = "0x" + "ab" * 32


@dataclass(frozen=True)
class DriveOptions:
    """Where to drive and how."""

    target: str
    time_scale: float | None = None
    ca_path: str | None = None
    allow_remote: bool = False


@dataclass
class DriveResult:
    """What a drive did: attempts by outcome, and where it wrote them."""

    trace: Path
    sidecar: Path
    outcomes: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)
    start_s: float = 0.0
    time_scale: float = 1.0
    tier: str = ""

    def describe(self) -> str:
        """A short human summary."""
        total = sum(self.outcomes.values())
        parts = ", ".join(f"{k}: {v}" for k, v in sorted(self.outcomes.items()))
        lines = [f"{total} attempts ({parts})"]
        if self.errors:
            lines.append("transport errors: " + ", ".join(
                f"{k}: {v}" for k, v in sorted(self.errors.items())))
        lines += [f"trace: {self.trace}", f"sidecar: {self.sidecar}"]
        return "\n".join(lines)


@dataclass(frozen=True)
class Target:
    """The emulator's address: the IP to connect to and its port."""

    ip: str
    port: int

    def url(self, hostname: str, path: str, scheme: str = "https") -> str:
        return f"{scheme}://{hostname}:{self.port}{path}"


def parse_target(url: str, allow_remote: bool) -> Target:
    """Check ``--target``: https, a port, and loopback unless ``allow_remote``."""
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise CapsimError("expected https://HOST:PORT (the address capsim serve printed)",
                          field="--target")
    host = parts.hostname
    ip = "127.0.0.1" if host == "localhost" or host.endswith(".localhost") else host
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        if not allow_remote:
            raise CapsimError("expected a loopback address (127.0.0.1, ::1, localhost); "
                              "pass --allow-remote for another host", field="--target") from None
        return Target(ip, parts.port or 443)
    if not addr.is_loopback and not allow_remote:
        raise CapsimError("expected a loopback address (127.0.0.1, ::1, localhost); pass "
                          "--allow-remote for another host", field="--target")
    return Target(ip, parts.port or 443)


def tls_context(ca_path: str | None) -> ssl.SSLContext:
    """Trust the emulator's CA; without one, do not verify (loopback testing only)."""
    if ca_path:
        try:
            return ssl.create_default_context(cafile=ca_path)
        except ssl.SSLError:
            raise CapsimError("not a PEM CA certificate; pass the ca.pem `capsim serve` "
                              "printed", file=ca_path, field="--ca") from None
        except OSError as err:
            raise CapsimError(f"cannot read it ({err.strerror or type(err).__name__})",
                              file=ca_path, field="--ca") from None
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def sizing_body(profiles: list[str]) -> dict:
    """A spec 2.1 sizing body with one item per profile."""
    call = {"from": _ADDRESS, "to": _ADDRESS, "value": "0x0", "input": "0x"}
    items = [{"range": {"from": "0", "to": "1"}, "settings": {"profile": p},
              "request": {**call, "input": [{"kind": "hex", "data": "0x00"},
                                            {"kind": "amount", "codec": "uint256"}]}}
             for p in profiles]
    return {"state": {"hash": _HASH, "request": call}, "blockNumber": "0x1", "items": items}


class _Source:
    """One scenario source's client side: its httpx client, retry decider and draws."""

    def __init__(self, drive: Driver, index: int, src: Source) -> None:
        import httpx

        sc = drive.scenario
        self.drive, self.index, self.src = drive, index, src
        self.client_cfg = client = sc.clients[src.client]
        self.http2 = client.http_version == "2"
        self.sni = client.sni
        self.reuse = client.http.reuse
        self.region = sc.region_of(src)
        self.decider = RetryDecider(client.retry, named_stream(sc.seed, Rng.SOURCE, src.name,
                                                               Rng.RETRY))
        self.retry_on = frozenset(client.retry.retry_on)
        profiles = list(src.sizing.profiles)
        weights = np.array([src.sizing.profiles[p] for p in profiles], dtype=float)
        self._profiles, self._profile_p = profiles, weights / weights.sum()
        self._profile_rng = named_stream(sc.seed, Rng.LIVE, Rng.DRIVE, src.name, Rng.PROFILES)
        http = client.http
        self._limits = httpx.Limits(
            max_connections=http.max_connections, max_keepalive_connections=http.max_connections,
            keepalive_expiry=max(0.001, drive.clock.wall(http.idle_timeout_s)))
        self.client = self._new_client() if self.reuse else None

    def _new_client(self):
        import httpx

        return httpx.AsyncClient(
            http2=self.http2, http1=not self.http2, verify=self.drive.tls,
            limits=self._limits, timeout=_WALL_TIMEOUT_S)

    def draw_profiles(self, n: int) -> list[str]:
        idx = self._profile_rng.choice(len(self._profiles), n, p=self._profile_p)
        return [self._profiles[i] for i in idx]

    async def close(self) -> None:
        if self.client is not None:
            await self.client.aclose()


class Driver:
    """One drive: clients for every source and stream client, and the recorder."""

    def __init__(self, loaded: LoadedScenario, target: Target, clock: ServiceClock,
                 tls: ssl.SSLContext, start_s: float, ca_path: str | None = None) -> None:
        self.loaded, self.scenario = loaded, loaded.scenario
        self.target, self.clock, self.tls = target, clock, tls
        # httpx sets ALPN (h2, http/1.1) on the context it is given: websockets need
        # their own context, or the server would pick h2 for an HTTP/1.1 upgrade.
        self.ws_tls = tls_context(ca_path)
        self.start_s = start_s
        self.end_s = start_s + self.scenario.duration_s
        start_ns = int(self.scenario.start.timestamp() * 1e9)
        self.recorder = DriveRecorder(start_ns)
        self.pricing = loaded.pricing
        self.plan = build_plan(loaded)
        self.sources = [_Source(self, i, s) for i, s in enumerate(self.scenario.sources)]
        self._seen_ports: set[int] = set()
        self._rid = self.plan.open_count  # closed-loop ids follow the open-loop ones
        self._tasks: set[asyncio.Task] = set()
        self.errors: Counter = Counter()

    # -- scheduling ------------------------------------------------------------------

    async def run(self) -> None:
        from .drive_ws import StreamDriver

        jobs = [self._feed()]
        for i in self.plan.closed_sources:
            jobs += [self._worker(i, w) for w in range(self.scenario.sources[i].workers.count)]
        ws = StreamDriver(self)
        jobs += ws.jobs()
        try:
            await asyncio.gather(*jobs)
            if self._tasks:
                await asyncio.wait(self._tasks, timeout=_WALL_TIMEOUT_S)
        finally:
            for s in self.sources:
                await s.close()

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _feed(self) -> None:
        methods = self.plan.tables.methods
        rid = 0
        for d in self.plan.demand_blocks():
            for t, s, m, items in zip(d.t.tolist(), d.source.tolist(), d.method.tolist(),
                                      d.items.tolist(), strict=True):
                at = self.start_s + t
                if at >= self.end_s:
                    return
                await self.clock.sleep_until(at)
                self.sources[s].decider.on_request()
                self._spawn(self.request(self.sources[s], rid, methods[m], items))
                rid += 1

    async def _worker(self, index: int, worker: int) -> None:
        sc, clock = self.scenario, self.clock
        src = sc.sources[index]
        drawer = RequestDrawer(src, self.plan.tables, self.pricing, sc, sc.seed,
                               stream_name=(Rng.WORKER, worker))
        think_rng = named_stream(sc.seed, Rng.SOURCE, src.name, Rng.WORKER, worker, Rng.THINK)
        think = src.workers.think.sample(think_rng, 4096).tolist()
        methods = self.plan.tables.methods
        await clock.sleep_until(self.start_s + think_rng.random() * src.workers.think.mean)
        k, cols = 0, None
        while clock.now() < self.end_s:
            if cols is None or k == len(cols[0]):
                cols, k = [c.tolist() for c in drawer.draw(256)], 0
            rid, self._rid = self._rid, self._rid + 1
            self.sources[index].decider.on_request()
            await self.request(self.sources[index], rid, methods[cols[0][k]], cols[1][k])
            pause = think[k % len(think)]
            k += 1
            await clock.sleep(pause)

    def _connection_of(self, resp, opened: list[int]) -> tuple[int, bool]:
        """The connection an attempt used, and whether the attempt opened it."""
        if opened and opened[0] >= 0:
            self._seen_ports.add(opened[0])
            return opened[0], True
        port = _port(resp.extensions.get("network_stream"))
        new = port >= 0 and port not in self._seen_ports
        if port >= 0:
            self._seen_ports.add(port)
        return port, new

    # -- one logical request ---------------------------------------------------------

    async def request(self, source: _Source, rid: int, method: str, items: int) -> None:
        """Send a logical request and its retries; record every attempt."""
        attempt = 1
        while True:
            outcome, retry_after = await self._attempt(source, rid, attempt, method, items)
            if outcome == "ok" or outcome not in source.retry_on:
                return
            wait = source.decider.delay(attempt, None if math.isnan(retry_after)
                                        else retry_after)
            if wait is None or self.clock.now() + wait >= self.end_s:
                return
            await self.clock.sleep(wait)
            attempt += 1

    async def _attempt(self, source: _Source, rid: int, attempt: int, method: str,
                       items: int) -> tuple[str, float]:
        import httpx

        sc, pricing = self.scenario, self.pricing
        api = sc.methods[method].api if method in sc.methods else RPC
        hostname = HOSTNAMES[SEARCH if api == SEARCH else RPC]
        profiles: list[str] = []
        if method == SIZE_METHOD:
            profiles = source.draw_profiles(max(1, int(items)))
            body = sizing_body(profiles)
            path = "/v1/size"
            reserve = sum(pricing.sizing.item_reserve(p) for p in profiles)
            body_hash = canonical_hash(body)
        else:
            body = {"jsonrpc": "2.0", "id": rid * 100 + attempt, "method": method, "params": []}
            path = "/"
            reserve = pricing.rpc.cost(method)
            body_hash = canonical_hash({"method": method, "params": []})
        headers = {"x-api-key": source.src.key, "content-type": "application/json",
                   "host": f"{hostname}:{self.target.port}"}
        opened: list[int] = []

        wire: list[float] = []

        async def trace(event: str, info: dict) -> None:
            if event == "connection.connect_tcp.complete":
                opened.append(_port(info.get("return_value")))
            elif event.endswith(".send_request_headers.complete"):
                wire.append(self.clock.now())

        ext = {"trace": trace}
        if source.sni:
            ext["sni_hostname"] = hostname
        client = source.client if source.reuse else source._new_client()
        url = f"https://{self.target.ip}:{self.target.port}{path}" if ":" not in self.target.ip \
            else f"https://[{self.target.ip}]:{self.target.port}{path}"
        t_send = self.clock.now()
        status: int | None = None
        t_server, retry_after, conn, conn_new = math.nan, math.nan, -1, False
        gas_used, cu = None, None
        try:
            resp = await client.post(url, content=json.dumps(body).encode(), headers=headers,
                                     extensions=ext)
            t_end = self.clock.now()
            status = resp.status_code
            conn, conn_new = self._connection_of(resp, opened)
            t_server = float(resp.headers.get("x-capsim-t", "nan"))
            if "retry-after" in resp.headers:
                retry_after = float(resp.headers["retry-after"])
            payload = resp.json() if resp.content else None
            if status == 200 and isinstance(payload, dict) and "error" in payload \
                    and "jsonrpc" in payload:
                status = int(payload["error"]["code"])
            if status == 200 and method == SIZE_METHOD and isinstance(payload, dict):
                gas_used, cu = int(payload.get("gas_used", 0)), float(payload.get("cu", 0.0))
            elif status == 200:
                cu = reserve
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as err:
            t_end = self.clock.now()
            self.errors[type(err).__name__] += 1
        finally:
            if not source.reuse:
                await client.aclose()
        outcome = HTTP_STATUS_OUTCOME.get(status, "other") if status is not None else "error"
        self.recorder.attempt(
            t_s=t_send, end_s=t_end, api=api, method=method, key=source.src.key,
            region=source.region, status=status, items=len(profiles) if profiles else None,
            profiles=",".join(profiles) if profiles else None, gas_used=gas_used, cu=cu,
            body_hash=body_hash, kind="http", t_server_s=t_server, source=source.src.name,
            rid=rid, attempt=attempt, conn=conn, conn_new=conn_new,
            hostname=hostname if source.sni else "", http2=source.http2,
            reserve_cu=float(reserve), outcome=outcome, retry_after_s=retry_after,
            t_wire_s=wire[0] if wire else math.nan)
        return outcome, retry_after


def _port(network_stream) -> int:
    """The client port of a connection (its id), -1 when the socket is already gone."""
    try:
        addr = network_stream.get_extra_info("client_addr")
    except (OSError, AttributeError):
        return -1
    return int(addr[1]) if addr else -1


def _tls_untrusted(err: BaseException) -> bool:
    """Whether ``err`` (or what caused it) is a failed TLS certificate verification."""
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, ssl.SSLCertVerificationError) or \
                "CERTIFICATE_VERIFY_FAILED" in str(err):
            return True
        err = err.__cause__ or err.__context__
    return False


async def fetch_health(target: Target, tls: ssl.SSLContext) -> dict:
    """The emulator's /healthz (its clock's ``t0_unix`` and ``time_scale``)."""
    import httpx

    host = f"[{target.ip}]" if ":" in target.ip else target.ip
    try:
        async with httpx.AsyncClient(http2=True, verify=tls, timeout=10.0) as client:
            resp = await client.get(f"https://{host}:{target.port}/healthz",
                                    headers={"host": f"{HOSTNAMES[RPC]}:{target.port}"},
                                    extensions={"sni_hostname": HOSTNAMES[RPC]})
            data = resp.json()
    except (httpx.HTTPError, ValueError) as err:
        if _tls_untrusted(err):
            raise CapsimError("the emulator's TLS certificate is not signed by the --ca "
                              "given (certificate verify failed); pass the ca.pem this "
                              "`capsim serve` printed", field="--ca") from None
        raise CapsimError(f"no emulator answering /healthz ({type(err).__name__}); start "
                          "`capsim serve` first", field="--target") from None
    if resp.status_code != 200 or "t0_unix" not in data:
        raise CapsimError("the target is not a capsim emulator (no t0_unix in /healthz)",
                          field="--target")
    return data


def _write_recorded(recorder: DriveRecorder, out: Path, name: str) -> Path:
    """Write the trace (and its sidecar) at ``out``; if that fails after all (the folder
    was checked before driving), the recorded attempts are not lost: they go to the
    temporary folder, and the CapsimError says where."""
    import tempfile

    try:
        return recorder.write(out, f"capsim drive {name}")
    except CapsimError as err:
        rescue = Path(tempfile.mkdtemp(prefix="capsim-drive-")) / out.name
        try:
            recorder.write(rescue, f"capsim drive {name}")
        except CapsimError:
            raise err from None
        raise CapsimError(f"{err.message}; the recorded trace was written to {rescue} "
                          "instead", file=err.file, field=err.field) from None


async def run_drive(loaded: LoadedScenario, options: DriveOptions, out: Path) -> DriveResult:
    """Drive the emulator at ``options.target`` with ``loaded``'s demand; write ``out``."""
    target = parse_target(options.target, options.allow_remote)
    bad = [c.stream for c in loaded.scenario.streams if c.stream not in STREAM_NAMES]
    if bad:  # pragma: no cover -- the scenario model already restricts stream names
        raise CapsimError("unknown stream", field="streams")
    tls = tls_context(options.ca_path)
    health = await fetch_health(target, tls)
    scale = float(health["time_scale"])
    if options.time_scale is not None and not math.isclose(options.time_scale, scale):
        raise CapsimError(f"the emulator runs at time scale {scale:g}, not "
                          f"{options.time_scale:g}; pass the same --time-scale to both",
                          field="--time-scale")
    clock = ServiceClock(float(health["t0_unix"]), scale)
    # Start on a window boundary of the emulator's clock, as a simulated run starts at 0.
    now = clock.now() + 0.05 * scale
    start = math.ceil(now / WINDOW_S) * WINDOW_S
    driver = Driver(loaded, target, clock, tls, start, options.ca_path)
    await driver.run()
    sidecar = _write_recorded(driver.recorder, out, loaded.scenario.name)
    result = DriveResult(out, sidecar, start_s=start, time_scale=scale,
                         tier=str(health.get("tier", "")))
    result.outcomes.update(driver.recorder.outcomes())
    result.errors.update(driver.errors)
    return result
