"""The emulator's developer side: who may use ``/admin/*``, the request journal, and
fault and latency rules.

* **Protection** (:func:`admin_allowed`): with a token in ``CAPSIM_ADMIN_TOKEN`` (read
  when ``capsim serve`` starts) every ``/admin/*`` request must carry it in
  ``X-Admin-Token``; without one, only loopback clients are answered (``--allow-remote``
  opens the API to other addresses, never the admin endpoints). Anything else: ``403``.
* **Journal** (:class:`Journal`): the last :data:`JOURNAL_SIZE` requests and handshakes
  (not ``/admin/*``), each as the access log records it -- the key only as its
  pseudonym -- queried with filters, counted, verified ("called N times").
* **Rules** (:class:`Rules`): for requests matching an API, a method (the JSON-RPC
  method, ``POST /v1/size`` or a stream), an HTTP method or a path, with a probability
  and at most a number of times: a forced status (not decided, not billed), a delay
  before the reply (latency; decided as usual), or a dropped connection.
"""

from __future__ import annotations

import hmac
import ipaddress
import random
from collections import deque
from dataclasses import dataclass, field

from ..core.pseudonyms import pseudonym

ADMIN_TOKEN_ENV = "CAPSIM_ADMIN_TOKEN"
"""Environment variable holding the admin token (``None``/empty: loopback clients only)."""

ADMIN_TOKEN_HEADER = b"x-admin-token"

JOURNAL_SIZE = 10_000
"""Requests the journal keeps (the oldest are forgotten first)."""

MAX_RULES = 100


def admin_allowed(client, token_sent: str | None, token: str | None) -> bool:
    """Whether a request from ``client`` (the ASGI ``(host, port)``) carrying
    ``token_sent`` may use ``/admin/*`` when the server's token is ``token``."""
    if token:
        return token_sent is not None and hmac.compare_digest(
            token_sent.encode("utf-8", "surrogateescape"), token.encode("utf-8"))
    if not client:
        return False
    try:
        address = ipaddress.ip_address(str(client[0]).split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


# -- the journal ----------------------------------------------------------------------

TEXT_FILTERS = ("api", "method", "http_method", "path", "host", "outcome", "key", "fault")
"""Journal fields a query can match exactly (``status`` too, and ``since_s``/``until_s``
on the service time ``t_s``)."""


def _filters(query: dict[str, str]) -> dict:
    """Validated filters from query parameters (``ValueError`` naming the bad one)."""
    known = {*TEXT_FILTERS, "status", "since_s", "until_s", "limit"}
    unknown = sorted(set(query) - known)
    if unknown:
        raise ValueError(f"unknown filter {unknown[0]!r}; expected one of {sorted(known)}")
    out: dict = {k: v for k, v in query.items() if k in TEXT_FILTERS}
    if "key" in out:
        out["key"] = pseudonym(out["key"])  # a key or its pseudonym: the same filter
    try:
        if "status" in query:
            out["status"] = int(query["status"])
        for bound in ("since_s", "until_s"):
            if bound in query:
                out[bound] = float(query[bound])
        out["limit"] = int(query.get("limit", 100))
    except ValueError:
        raise ValueError("status and limit: expected integers; since_s and until_s: "
                         "expected numbers of service seconds") from None
    if not 0 <= out["limit"] <= JOURNAL_SIZE:
        raise ValueError(f"limit: expected 0 to {JOURNAL_SIZE}")
    return out


class Journal:
    """The last :data:`JOURNAL_SIZE` exchanges as records (dicts of the access log's
    fields)."""

    def __init__(self, size: int = JOURNAL_SIZE) -> None:
        self.records: deque[dict] = deque(maxlen=size)
        self.seq = 0

    def add(self, record: dict) -> None:
        self.seq += 1
        self.records.append({"seq": self.seq, **record})

    def clear(self) -> int:
        n = len(self.records)
        self.records.clear()
        return n

    def matching(self, filters: dict) -> list[dict]:
        def ok(r: dict) -> bool:
            for k, v in filters.items():
                if k == "since_s":
                    if not r["t_s"] >= v:
                        return False
                elif k == "until_s":
                    if not r["t_s"] < v:
                        return False
                elif k != "limit" and r.get(k) != v:
                    return False
            return True
        return [r for r in self.records if ok(r)]

    def query(self, params: dict[str, str]) -> dict:
        """``GET /admin/requests``: ``count`` of the matching records and the last
        ``limit`` of them (oldest first)."""
        filters = _filters(params)
        found = self.matching(filters)
        limit = filters["limit"]
        return {"count": len(found), "requests": found[len(found) - limit:] if limit else []}

    def verify(self, spec: dict) -> tuple[bool, dict]:
        """``POST /admin/requests/verify``: whether the matching records number exactly
        ``times`` (or at least ``at_least``, at most ``at_most``)."""
        if not isinstance(spec, dict):
            raise ValueError("expected an object of filters and times/at_least/at_most")
        bounds = {k: spec[k] for k in ("times", "at_least", "at_most") if k in spec}
        if not bounds:
            raise ValueError("expected times, at_least or at_most")
        for k, v in bounds.items():
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{k}: expected a non-negative integer")
        params = {k: str(v) for k, v in spec.items() if k not in bounds}
        count = len(self.matching(_filters(params)))
        ok = (count == bounds.get("times", count) and count >= bounds.get("at_least", 0)
              and count <= bounds.get("at_most", count))
        return ok, {"ok": ok, "count": count, **bounds}


# -- fault and latency rules ----------------------------------------------------------

MATCH_KEYS = ("api", "method", "http_method", "path")


@dataclass
class Rule:
    """One rule: what it matches and what it does (see the module docstring)."""

    id: str
    match: dict[str, str]
    status: int | None = None
    retry_after_s: int | None = None
    delay_s: float = 0.0
    drop: bool = False
    probability: float = 1.0
    times: int | None = None
    hits: int = 0
    seen: int = field(default=0)

    def matches(self, request: dict) -> bool:
        return all(request.get(k) == v for k, v in self.match.items())

    def as_dict(self) -> dict:
        return {"id": self.id, "match": self.match, "status": self.status,
                "retry_after_s": self.retry_after_s, "delay_s": self.delay_s,
                "drop": self.drop, "probability": self.probability, "times": self.times,
                "matched": self.seen, "applied": self.hits}


def _number(spec: dict, key: str, low: float, high: float, default):
    value = spec.get(key, default)
    if value is default:
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ValueError(f"{key}: expected a number in [{low:g}, {high:g}]")
    return value


def parse_rule(spec, rule_id: str) -> Rule:
    """A :class:`Rule` from its JSON (``ValueError`` naming the field)."""
    if not isinstance(spec, dict):
        raise ValueError("expected a rule object")
    allowed = {"match", "status", "retry_after_s", "delay_s", "drop", "probability", "times"}
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r}; expected {sorted(allowed)}")
    match = spec.get("match", {})
    if not isinstance(match, dict) or set(match) - set(MATCH_KEYS) \
            or not all(isinstance(v, str) for v in match.values()):
        raise ValueError(f"match: expected an object of strings with keys from {MATCH_KEYS}")
    status = spec.get("status")
    if status is not None and (isinstance(status, bool) or not isinstance(status, int)
                               or not 200 <= status <= 599):
        raise ValueError("status: expected an HTTP status, 200 to 599")
    drop = spec.get("drop", False)
    if not isinstance(drop, bool):
        raise ValueError("drop: expected true or false")
    delay = float(_number(spec, "delay_s", 0, 600, 0.0))
    if status is None and not drop and not delay:
        raise ValueError("expected status, delay_s or drop: what the rule does")
    if status is not None and drop:
        raise ValueError("status and drop: a dropped connection has no status")
    retry = _number(spec, "retry_after_s", 0, 86400, None)
    times = spec.get("times")
    if times is not None and (isinstance(times, bool) or not isinstance(times, int)
                              or times < 1):
        raise ValueError("times: expected a positive integer")
    return Rule(rule_id, dict(match), status, int(retry) if retry is not None else None,
                delay, drop, float(_number(spec, "probability", 0, 1, 1.0)), times)


class Rules:
    """The rules in force, first match wins; draws with a seeded random stream."""

    def __init__(self, seed: int = 0) -> None:
        self.rules: list[Rule] = []
        self._next = 0
        self._rng = random.Random(f"capsim-faults-{seed}")

    def add(self, spec) -> Rule:
        if len(self.rules) >= MAX_RULES:
            raise ValueError(f"at most {MAX_RULES} rules; DELETE /admin/rules first")
        self._next += 1
        rule = parse_rule(spec, f"r{self._next}")
        self.rules.append(rule)
        return rule

    def remove(self, rule_id: str | None = None) -> int:
        before = len(self.rules)
        self.rules = [r for r in self.rules if rule_id is not None and r.id != rule_id]
        return before - len(self.rules)

    def pick(self, request: dict) -> Rule | None:
        """The first rule matching ``request`` (keys of :data:`MATCH_KEYS`) whose
        probability draw succeeds; it counts as applied (and expires after ``times``)."""
        if not self.rules:
            return None
        for rule in self.rules:
            if not rule.matches(request):
                continue
            rule.seen += 1
            if rule.probability < 1.0 and self._rng.random() >= rule.probability:
                continue
            rule.hits += 1
            if rule.times is not None and rule.hits >= rule.times:
                self.rules.remove(rule)
            return rule
        return None
