"""Running the emulator: hypercorn over TLS (ALPN ``h2`` and ``http/1.1``) on loopback.

:func:`serve` makes a certificate, binds the socket, prints where it listens and which
CA file to trust, and serves until SIGINT or SIGTERM (or until ``stop`` is set), then
closes the listening socket and its connections within a short grace period.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import socket
import ssl
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ..config.resolved import LoadedScenario
from ..config.tiers import Tier
from ..core.errors import CapsimError
from ..policy.admission import Admission
from . import garbage, guard
from .access import AccessLog
from .app import EmulatorApp
from .certs import Certificate, hostnames, make_certificate, region_label
from .clock import ServiceClock
from .connections import ConnectionRegistry, record_sni, tracking_connections

MAX_STREAMS_PER_CONNECTION = 32
"""SETTINGS_MAX_CONCURRENT_STREAMS the server announces (spec 8.4.2: about 32)."""

LOOPBACK = ("127.0.0.1", "::1", "localhost")


@dataclass(frozen=True)
class ServeOptions:
    """Where and how to serve; ``port`` 0 picks a free port."""

    host: str = "127.0.0.1"
    port: int = 8443
    time_scale: float = 1.0
    cert_dir: str | None = None
    allow_remote: bool = False
    access_log: str | None = None
    """``None``/``"off"``: no access log; ``"-"``: standard error; else a file."""
    access_log_format: str = "text"
    """``text`` or ``jsonl`` (what ``capsim trace import`` reads)."""
    admin_token: str | None = None
    """The ``X-Admin-Token`` ``/admin/*`` needs (``None``: loopback clients only)."""
    warn: Callable[[str], None] | None = None
    """Where warnings go (default: ``announce``)."""
    freeze_startup: bool = True
    """Exempt the objects alive at start-up from collections (:mod:`.garbage`); False
    when the server shares its process with other work (tests), whose objects it would
    exempt too."""


def _config(cert: Certificate):
    from hypercorn.config import Config

    class _Config(Config):
        def create_ssl_context(self) -> ssl.SSLContext | None:
            context = super().create_ssl_context()
            if context is not None:
                context.sni_callback = record_sni
            return context

    config = _Config()
    config.certfile, config.keyfile = str(cert.cert_path), str(cert.key_path)
    config.alpn_protocols = ["h2", "http/1.1"]
    config.h2_max_concurrent_streams = MAX_STREAMS_PER_CONNECTION
    config.keep_alive_timeout = 3600.0  # idle connections are the client's to close
    config.keep_alive_max_requests = 2**62  # no GOAWAY after N requests: not the spec's
    config.graceful_timeout = 1.0
    config.ssl_handshake_timeout = guard.HANDSHAKE_TIMEOUT_S
    config.accesslog = None
    config.errorlog = "-"
    config.loglevel = "WARNING"
    return config


def bind(options: ServeOptions) -> socket.socket:
    """The listening socket (refuses a non-loopback host unless allowed)."""
    if options.host not in LOOPBACK and not options.allow_remote:
        raise CapsimError("the emulator serves on loopback only; pass --allow-remote to "
                          "bind another address", field="--host")
    family = socket.AF_INET6 if ":" in options.host else socket.AF_INET
    try:
        sock = socket.create_server((options.host, options.port), family=family,
                                    backlog=512, reuse_port=False)
    except OSError as err:
        raise CapsimError(f"cannot listen on port {options.port}: {err.strerror}",
                          field="--port") from None
    sock.setblocking(False)
    return sock


async def serve(loaded: LoadedScenario, tier: Tier, options: ServeOptions,
                announce: Callable[[str], None] = print,
                stop: asyncio.Event | None = None,
                ready: Callable[[EmulatorApp], None] | None = None) -> None:
    """Serve ``loaded``'s account on ``tier`` until a signal (or ``stop``).

    Without ``options.cert_dir`` the certificates go to a temporary folder, removed when
    the server stops -- or fails to start. ``ready(app)`` is called once it listens."""
    temp_dir = None if options.cert_dir else tempfile.mkdtemp(prefix="capsim-serve-")
    try:
        await _serve(loaded, tier, options, announce, stop, ready,
                     options.cert_dir or temp_dir)
    finally:
        if temp_dir is not None:
            shutil.rmtree(temp_dir, ignore_errors=True)


async def _serve(loaded, tier, options, announce, stop, ready, cert_dir) -> None:
    from hypercorn.asyncio.run import worker_serve
    from hypercorn.config import Sockets
    from hypercorn.utils import wrap_app

    regions = [r.name for r in loaded.scenario.regions]
    names = hostnames(regions)
    skipped = [r for r in regions if region_label(r) is None]
    cert = make_certificate(cert_dir, names)
    log = AccessLog.open(options.access_log, options.access_log_format)
    log.hosts = frozenset(names)  # written as sent; any other Host label as a pseudonym
    try:
        sock = bind(options)
    except CapsimError:
        log.close()
        raise
    port = sock.getsockname()[1]
    clock = ServiceClock.starting_now(options.time_scale)
    registry = ConnectionRegistry()
    app = EmulatorApp(loaded, Admission.for_scenario(loaded, tier), clock, registry, log)
    app.admin_token = options.admin_token or None
    log.t0_unix = clock.t0_unix
    warn = options.warn or announce

    def warn_aside(line: str) -> None:
        # Never on the event loop: a pipe nobody reads (stderr) would stop the server.
        threading.Thread(target=warn, args=(line,), daemon=True).start()
    app.late.warn = app.arrival_late.warn = app.warn = warn_aside
    config = _config(cert)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        # Outside the main thread (tests) there are no signals: ``stop`` is set instead.
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
    host = f"[{options.host}]" if ":" in options.host else options.host
    announce(f"capsim serve: tier {tier.name!r}, time scale {options.time_scale:g}")
    announce(f"listening on https://{host}:{port} (HTTP/2 and HTTP/1.1)")
    announce(f"hostnames: {', '.join(names)} (TLS SNI and Host; resolve them to "
             f"{options.host}: an /etc/hosts line or curl --resolve)")
    if skipped:
        announce(f"regions without a hostname (not a DNS label): {', '.join(skipped)}")
    announce(f"CA certificate: {cert.ca_path}")
    announce("the CA was kept from an earlier start" if cert.reused else
             "a new CA: trust it once (docs/how-to/use-the-emulator.md); "
             "--cert-dir keeps it for later starts")
    for note in cert.notes:
        announce(note)
    announce("admin endpoints (/admin/*): " + (
        "X-Admin-Token required (CAPSIM_ADMIN_TOKEN)" if app.admin_token
        else "loopback clients only (set CAPSIM_ADMIN_TOKEN to allow others with a token)"))
    if ready is not None:
        ready(app)

    async def stop_websockets() -> None:
        await stop.wait()
        app.stopping.set()

    watcher = loop.create_task(stop_websockets())
    if options.freeze_startup:
        garbage.freeze_startup()
    collector = loop.create_task(garbage.collect_closed(lambda: registry.closed, stop))
    sweeper = loop.create_task(guard.sweep(registry, stop))
    try:
        with tracking_connections(registry):
            await worker_serve(wrap_app(app, config.wsgi_max_body_size, "asgi"), config,
                               sockets=Sockets([sock], [], []), shutdown_trigger=stop.wait)
    finally:
        watcher.cancel()
        collector.cancel()
        sweeper.cancel()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)
        sock.close()
        log.close()
    announce("capsim serve: stopped")
