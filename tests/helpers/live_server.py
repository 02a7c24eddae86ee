"""Helpers for the live emulator tests: a real server on a free loopback port.

The server runs in a thread with its own event loop (hypercorn, TLS, the real app);
clients in the tests are real httpx HTTP/2 clients and websockets clients.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import dataclass
from pathlib import Path

from sim.config.resolved import load
from sim.config.tiers import find_tier
from sim.live import misbehave

BASE = """
name = "live-test"
seed = 5
duration = "60s"
[account]
keys = ["k1", "k2"]
[[sources]]
name = "a"
key = "k1"
arrival = { process = "poisson", rate = 1 }
[methods.svc_call]
api = "rpc"
service_time = { dist = "constant", value = 0.0005 }
[methods.svc_pendingBlock]
api = "rpc"
service_time = { dist = "constant", value = 0.0005 }
[methods."POST /v1/size"]
api = "search"
service_time = { dist = "constant", value = 0.0005 }
"""


@dataclass
class Server:
    """A running emulator: where it listens and which CA it uses."""

    port: int
    ca: str
    loop: asyncio.AbstractEventLoop
    stop: asyncio.Event
    app: object = None
    lines: list | None = None
    thread: object = None

    def url(self, path: str = "/") -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def headers(self, host: str, key: str | None = "k1") -> dict:
        return misbehave.headers(self.port, host, key)

    @staticmethod
    def sni(host: str) -> dict:
        return {"sni_hostname": f"{host}.localhost"}


@contextlib.contextmanager
def running_server(tmp_path: Path, extra_toml: str, tier: str, time_scale: float = 1.0,
                   access_log: str | None = None, cert_dir: Path | None = None):
    """Serve ``BASE + extra_toml`` on ``tier`` in a thread; yields a :class:`Server`."""
    from sim.live.server import ServeOptions, serve

    path = tmp_path / "scenario.toml"
    path.write_text(BASE + extra_toml, encoding="utf-8")
    loaded = load(path)
    tier_obj = find_tier(tier, loaded.tiers)
    lines: list[str] = []
    certs = cert_dir or tmp_path / "certs"
    ready = threading.Event()
    box: dict = {}

    def run() -> None:
        async def main() -> None:
            box["loop"] = asyncio.get_running_loop()
            box["stop"] = asyncio.Event()

            def announce(line: str) -> None:
                lines.append(line)

            def up(app) -> None:
                box["app"] = app
                ready.set()
            try:
                await serve(loaded, tier_obj,
                            ServeOptions(port=0, time_scale=time_scale, cert_dir=str(certs),
                                         access_log=access_log, warn=lines.append,
                                         freeze_startup=False),
                            announce, box["stop"], ready=up)
            finally:
                ready.set()
        asyncio.run(main())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(30), "server did not start"
    port = int(next(ln for ln in lines if ln.startswith("listening")).rsplit(":", 1)[1]
               .split()[0])
    server = Server(port, str(certs / "ca.pem"), box["loop"], box["stop"], box.get("app"),
                    lines, thread)
    try:
        yield server
    finally:
        if not server.loop.is_closed():  # a test may have stopped it already
            server.loop.call_soon_threadsafe(server.stop.set)
        thread.join(15)
        assert not thread.is_alive(), "server did not stop"
