"""The emulator's developer endpoints (``/admin/*``) and its fault and latency rules,
as a part of :class:`~sim.live.app.EmulatorApp` (a mixin: they read and replace the
application's account, journal and rules). Who may call them, the journal and the rules
themselves: :mod:`.admin`; what each endpoint does: docs/reference/emulator.md.
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import parse_qs

from ..config.tiers import CATALOG, Tier, find_tier
from ..core.errors import CapsimError
from ..policy.admission import Admission
from ..traces.bodies import BodyError, parse_json
from .access import Exchange
from .admin import ADMIN_TOKEN_HEADER, admin_allowed

ADMIN_ENDPOINTS = ("GET /admin/window, POST /admin/reset, POST /admin/tier, "
                   "POST /admin/faults, GET|DELETE /admin/requests, "
                   "POST /admin/requests/verify, GET|POST|DELETE /admin/rules")
_ADMIN_BODY = {("POST", "/admin/faults"), ("POST", "/admin/rules"),
               ("POST", "/admin/requests/verify"), ("POST", "/admin/tier")}


class DeveloperEndpoints:
    """``/admin/*`` and the rules of :mod:`.admin`, for :class:`~sim.live.app.EmulatorApp`."""

    # -- fault and latency rules (:mod:`.admin`) -------------------------------------

    def _rule(self, scope, ex: Exchange):
        return self.rules.pick({"api": ex.api, "method": ex.what,
                                "http_method": scope.get("method"), "path": scope.get("path")})

    async def _injected(self, scope, ex: Exchange) -> bool:
        """Apply the first rule matching ``ex`` (once its method is known, before it is
        decided): a latency rule delays its reply (it is decided as usual); a forced
        status answers it undecided and unbilled; a drop closes its connection. True
        when the request was answered or dropped here."""
        rule = self._rule(scope, ex)
        if rule is None:
            return False
        ex.fault, ex.delay_s = rule.id, rule.delay_s
        if rule.drop:
            if rule.delay_s:
                await asyncio.sleep(rule.delay_s)
            ex.disconnected = True
            conn = self._conn(scope)
            if conn is not None:
                conn.abort()
            return True
        if rule.status is None:
            return False
        ex.outcome = "fault"
        headers = [("retry-after", str(rule.retry_after_s))] \
            if rule.retry_after_s is not None else []
        await ex.reply(rule.status, {"error": {"code": str(rule.status),
                                               "message": f"injected fault ({rule.id})"}},
                       headers)
        return True

    # -- developer endpoints --------------------------------------------------------

    async def _stalled(self) -> bool:
        """Hold a request while a ``stall`` fault lasts; whether it was held."""
        held = False
        while (left := self.stall_until - time.monotonic()) > 0:
            held = True
            await asyncio.sleep(min(left, 0.5))
        return held

    def window(self) -> dict:
        """The account's CU window and daily allowance now (``GET /admin/window``)."""
        adm, now = self.admission, self.clock.now()
        lim = adm.limiter
        stats = lim.window_stats()
        current = None
        if stats.start_s and stats.start_s[-1] <= now < stats.start_s[-1] + lim.window_s:
            start = stats.start_s[-1]
            current = {"start_s": start, "end_s": start + lim.window_s,
                       "reserved_cu": round(stats.reserved_cu[-1], 6),
                       "settled_cu": round(stats.settled_cu[-1], 6),
                       "admitted": stats.admitted[-1], "throttled": stats.throttled[-1]}
        day = max(lim.daily_used, default=None)
        return {"now_s": now, "tier": adm.tier.name, "budget_cu": lim.budget_cu,
                "available_cu": round(lim.available(now), 6), "window": current,
                "daily": {"allowance_cu": lim.daily_allowance_cu,
                          "used_cu": round(lim.daily_used[day], 6) if day is not None else 0.0},
                "connections": {"account_active": adm.connections.active,
                                "tcp_open": len(self.registry) if self.registry else None,
                                **self._guard_counts()},
                "websockets": {"live": adm.slots.live, "stale": adm.slots.stale(now)},
                "lateness": self.late.as_dict(),
                "arrival_lateness": self.arrival_late.as_dict(),
                "stalled_for_s": round(max(0.0, self.stall_until - time.monotonic()), 3)}

    def _guard_counts(self) -> dict:
        """Connections without a key now, and those dropped by :mod:`.guard` so far."""
        reg = self.registry
        if reg is None:
            return {}
        return {"unkeyed_open": reg.unkeyed, "dropped_idle_unkeyed": reg.dropped_idle,
                "dropped_over_cap": reg.dropped_over_cap}

    def reset(self, tier: Tier | None = None) -> dict:
        """Forget the account's windows, daily ledger, connections and websocket slots
        (``POST /admin/reset``; ``POST /admin/tier`` with a new ``tier``): open
        websockets are closed (1012), open connections are asked the limits again at
        their next request."""
        closed = 0
        for socks in self.sockets.values():
            for sock in list(socks):
                sock.closed_by_server = True
                sock.offer({"type": "websocket.close", "code": 1012, "reason": "reset"})
                closed += 1
            socks.clear()
        self.admission = Admission.for_scenario(self.loaded, tier or self.admission.tier)
        if self.registry is not None:
            for info in self.registry.all():
                info.admitted, info.account = None, None
        lateness = type(self.late)  # app.Lateness (app imports this module)
        self.late = lateness(self.clock.time_scale, self.late.warn)
        self.arrival_late = lateness(self.clock.time_scale, self.arrival_late.warn, "arrival")
        return {"reset": True, "tier": self.admission.tier.name,
                "websockets_closed": closed, "now_s": self.clock.now()}

    def drop_websockets(self) -> int:
        """Drop every websocket's TCP connection without a close frame (a fault)."""
        dropped = 0
        for socks in self.sockets.values():
            for sock in list(socks):
                if sock.conn is not None:
                    sock.conn.abort()
                    dropped += 1
        return dropped

    async def _admin(self, scope, receive, ex: Exchange, path: str, method: str) -> None:
        ex.what = path
        if not admin_allowed(scope.get("client"), ex.header(ADMIN_TOKEN_HEADER),
                             self.admin_token):
            await ex.reply(403, {"error": {"code": "403", "message": (
                "admin endpoints need X-Admin-Token (the server's CAPSIM_ADMIN_TOKEN)"
                if self.admin_token else "admin endpoints answer loopback clients only; "
                "start the server with CAPSIM_ADMIN_TOKEN set to allow others")}})
            return
        query = {k: v[-1] for k, v in parse_qs(
            scope.get("query_string", b"").decode("latin-1")).items()}
        route = (method, path)
        try:
            if route in _ADMIN_BODY:
                body = await self._body(scope, receive, ex)
                if body is None:
                    return
                try:
                    spec = parse_json(body) if body.strip() else {}
                except BodyError:
                    raise ValueError("expected a JSON body") from None
                status, reply = self._admin_with_body(route, spec)
            else:
                status, reply = self._admin_get(route, query)
        except (ValueError, CapsimError) as err:
            status, reply = 400, {"error": {"code": "400", "message": str(err)}}
        await ex.reply(status, reply)

    def _admin_get(self, route: tuple[str, str], query: dict) -> tuple[int, dict]:
        if route == ("GET", "/admin/window"):
            return 200, self.window()
        if route == ("POST", "/admin/reset"):
            return 200, self.reset()
        if route == ("GET", "/admin/requests"):
            return 200, self.journal.query(query)
        if route == ("DELETE", "/admin/requests"):
            return 200, {"cleared": self.journal.clear()}
        if route == ("GET", "/admin/rules"):
            return 200, {"rules": [r.as_dict() for r in self.rules.rules]}
        if route == ("DELETE", "/admin/rules"):
            return 200, {"removed": self.rules.remove(query.get("id"))}
        return 404, {"error": {"code": "404", "message": f"admin endpoints: {ADMIN_ENDPOINTS}"}}

    def _admin_with_body(self, route: tuple[str, str], spec) -> tuple[int, dict]:
        if route == ("POST", "/admin/rules"):
            return 201, self.rules.add(spec).as_dict()
        if route == ("POST", "/admin/requests/verify"):
            ok, reply = self.journal.verify(spec)
            return (200 if ok else 409), reply
        if route == ("POST", "/admin/tier"):
            if not isinstance(spec, dict) or not isinstance(spec.get("tier"), str):
                raise ValueError('expected {"tier": "<tier name>"}')
            # The scenario's tiers (its custom ones included), then the whole catalog.
            known = {t.name: t for t in (*CATALOG, *self.loaded.tiers)}
            return 200, self.reset(find_tier(spec["tier"], tuple(known.values())))
        return 200, self._faults(spec)

    def _faults(self, spec) -> dict:
        """``POST /admin/faults``: drop every websocket, and/or stall requests."""
        if not isinstance(spec, dict) or set(spec) - {"drop_websockets", "stall_s"}:
            raise ValueError("expected an object with drop_websockets and/or stall_s")
        drop = spec.get("drop_websockets", False)
        stall = spec.get("stall_s", 0)
        if not isinstance(drop, bool):
            raise ValueError("drop_websockets: expected true or false")
        if isinstance(stall, bool) or not isinstance(stall, int | float) \
                or not 0 <= stall <= 3600:
            raise ValueError("stall_s: expected a number of seconds in [0, 3600]")
        dropped = self.drop_websockets() if drop else 0
        if stall:
            self.stall_until = max(self.stall_until, time.monotonic() + float(stall))
        return {"websockets_dropped": dropped, "stall_s": stall}

