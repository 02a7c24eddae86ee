"""HAR 1.2 sources (browser and proxy exports, Polly recordings).

A HAR file is one JSON document; its ``log.entries`` are read one at a time by an
iterative parser (ijson's C backend), so memory stays flat in the file's size, and
converted to rows in chunks. Two passes over the file. The first registers every
credential in every entry (``X-Api-Key`` header in any case, ``Authorization: Bearer``
or ``Basic``, key-named query parameters, URL userinfo, credential path segments such
as ``/v1/lb/<key>``, ``/v2/<key>``, ``/v3/<32 hex>``, and every long opaque URL token;
see :mod:`.redaction`), so that the second can redact a key wherever it appears, and
learns the service's hosts from content: a host that received a JSON-RPC 2.0 POST body
serves RPC, one that received a sizing body at ``.../v1/size`` serves Search.

Each ``log.entries[i]`` is then classified by content first, then by host, then by path.
``--host-map HOST=rpc|search|streams|ignore`` (:mod:`.hosts`) overrides what was learned.

===================================================  =======================================
request                                              row(s)
===================================================  =======================================
``OPTIONS`` anything; a host mapped ``ignore``       ignored, counted
websocket handshake (``_resourceType: websocket``,   api ``streams``, method = the stream
``_webSocketMessages``, status 101, ``Upgrade:       name, when the host is mapped
websocket``, a ``ws``/``wss`` URL, or a GET of a     ``streams``, or recognised (learned,
stream path) whose last path segment is              or in a learned host's domain, or the
                                                     request carries a key)
``pending-txs`` / ``new-blocks`` / ``pending-logs``
the same to ``/v1/monitoring/unhealthy/ws``          api ``search``, method = that path
other websocket handshakes                           ignored, counted (by host when the
                                                     path matches but the host does not)
POST whose body is JSON-RPC 2.0 (an object, or a    api ``rpc``, one row per element, on
batch with an element, with ``"jsonrpc": "2.0"``)    any host not mapped ``ignore``;
                                                     method as recorded (``eth_call``);
                                                     validated (bad ones are invalid)
POST ``.../v1/size`` with a sizing body (spec 2.1)   api ``search``, ``POST /v1/size``
other POSTs to a host mapped or learned ``rpc``      invalid (expected a JSON-RPC body)
a path under ``/v1/`` on a Search host (mapped or    api ``search``, method ``METHOD /path``
learned)                                             (credential segments as ``{key}``)
anything else to a recognised host                   ignored (not a service request)
anything else to any other host                      ignored, counted by host
===================================================  =======================================

So the stored method never holds a path segment from a host that is not recognised.
JSON-RPC bodies are accepted as clients send them (:func:`.bodies.validate_rpc_envelope`):
string and null ids, notifications (rows marked ``notification``), batches mixing them,
missing or object ``params``; each deviation from the spec's envelope is counted.

Time is ``startedDateTime``; ``latency_ms`` is the entry's ``time`` (absent when
negative); status is ``response.status`` (absent when 0, i.e. no response), or, for
JSON-RPC, the ``error.code`` of the matching reply object in ``response.content.text``
(matched by ``id`` in a batch; a single error object answers every element;
notifications get no reply); ``retry_after_s`` is the response's ``Retry-After``
header (delta-seconds, or an HTTP date counted from ``startedDateTime``). The row's key
is the first of: ``X-Api-Key``, ``Authorization``, URL userinfo, a key-named query
parameter, a credential path
segment. Region: the first host name label, from the left, that looks like a regional
endpoint name - a geographic prefix (``us``, ``eu``, ``ap``, ``sa``, ``ca``, ``me``,
``af``, ``il``, ``cn``, ``mx``, ``uk``, ``au``, ``jp``, ``in``, ``sg``, ``de``, ``fr``,
``br``, ``kr``, ``za``), a dash, a word and an optional ``-<number>``:
``rpc.eu-west-1.example.com`` -> ``eu-west-1``; none -> no region (``--region``
overrides either way). Locations are written ``log.entries[i]`` (0-based).
"""

from __future__ import annotations

import base64
import email.utils
import json
import os
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from ..core.errors import CapsimError
from ..core.vocabulary import (
    MONITORING_PATH,
    RPC,
    SEARCH,
    SIZE_METHOD,
    STREAMS,
    STREAMS_API_STREAMS,
)
from .bodies import (
    BodyError,
    canonical_hash,
    looks_like_rpc,
    looks_like_sizing,
    parse_json,
    validate_rpc_payload,
    validate_sizing_body,
)
from .canonical import RecordBuffer
from .hosts import IGNORE, HostMap
from .problems import Problems
from .redaction import (
    KEY_HEADER,
    KeyRegistry,
    authorization_credentials,
    key_problem,
    parse_url,
)
from .timeparse import TIME_RANGE_TEXT, parse_time_text

_GEO = "us|eu|ap|sa|ca|me|af|il|cn|mx|uk|au|jp|in|sg|de|fr|br|kr|za"
REGION_LABEL_RE = re.compile(rf"(?:{_GEO})-[a-z]+(?:-[0-9]+)?")


class EntryError(ValueError):
    """An entry that cannot be turned into rows: reason, field (within the entry), text."""

    def __init__(self, reason: str, field: str, message: str) -> None:
        self.reason, self.field, self.message = reason, field, message
        super().__init__(message)


@lru_cache(maxsize=1 << 12)
def region_from_host(host: str) -> str | None:
    """The regional endpoint name in a host name (rule in the module doc), if any."""
    for label in host.lower().split("."):
        if REGION_LABEL_RE.fullmatch(label):
            return label
    return None


def load_har(path: str, file: str) -> list:
    """``log.entries`` of a HAR file; :class:`CapsimError` when it is not HAR."""
    try:
        with open(path, "rb") as fh:
            doc = json.load(fh)
    except (ValueError, RecursionError):
        raise CapsimError("not a HAR file: expected a JSON document", file=file) from None
    except MemoryError:
        raise CapsimError("too large to load: this HAR file is read whole (the streaming "
                          "parser refused it) and does not fit in memory; export fewer "
                          "entries (or split the capture) and import the parts",
                          file=file) from None
    log = doc.get("log") if isinstance(doc, dict) else None
    entries = log.get("entries") if isinstance(log, dict) else None
    if not isinstance(entries, list):
        raise CapsimError("not a HAR file: expected an array", file=file, field="log.entries")
    return entries


def _headers(req: dict) -> list[tuple[str, str]]:
    headers = req.get("headers", [])
    if not isinstance(headers, list):
        raise EntryError("entry", "request.headers", "expected an array")
    out = []
    for h in headers:
        if isinstance(h, dict) and isinstance(h.get("name"), str) \
                and isinstance(h.get("value"), str):
            out.append((h["name"].lower(), h["value"]))
    return out


def _request(entry: Any) -> tuple[dict, str, str]:
    if not isinstance(entry, dict):
        raise EntryError("entry", "entry", "expected an object")
    req = entry.get("request")
    if not isinstance(req, dict):
        raise EntryError("entry", "request", "expected an object")
    url, verb = req.get("url"), req.get("method")
    if not isinstance(url, str) or not url:
        raise EntryError("entry", "request.url", "expected a URL string")
    if not isinstance(verb, str) or not verb.isalpha():
        raise EntryError("entry", "request.method", "expected an HTTP method")
    return req, url, verb.upper()


def _auth_credentials(headers: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    keys, secrets = [], []
    for n, v in headers:
        if n == "authorization":
            key, extra = authorization_credentials(v)
            if key:
                keys.append(key)
            secrets += extra
    return keys, secrets


def entry_credentials(entry: Any) -> list[str]:
    """Every acceptable credential an entry carries (headers, userinfo, query, path)."""
    try:
        req, url, _ = _request(entry)
        headers = _headers(req)
        u = parse_url(url)
    except (EntryError, ValueError):
        return []
    keys, secrets = _auth_credentials(headers)
    found = [v for n, v in headers if n == KEY_HEADER] + keys + secrets
    found += list(u.keys) + list(u.secrets)
    return [k.strip() for k in found if not key_problem(k.strip())]


def _pick_key(headers: list[tuple[str, str]], url_keys: tuple[str, ...]) -> str | None:
    candidates = [("request.headers.X-Api-Key", v) for n, v in headers if n == KEY_HEADER]
    candidates += [("request.headers.Authorization", k) for k in _auth_credentials(headers)[0]]
    candidates += [("request.url", k) for k in url_keys]
    if not candidates:
        return None
    where, key = candidates[0]
    problem = key_problem(key.strip())
    if problem:
        raise EntryError("key", where, problem)
    return key.strip()


def _post_text(req: dict) -> str | None:
    post = req.get("postData")
    text = post.get("text") if isinstance(post, dict) else None
    if not isinstance(text, str) or not text.strip():
        return None
    return text


def _post_json(req: dict) -> Any:
    """The parsed POST body, or None when there is none or it is not JSON."""
    text = _post_text(req)
    if text is None:
        return None
    try:
        return parse_json(text)
    except BodyError:
        return None


_NO_ID = object()  # key of a single reply object, which answers the whole request


def _reply_codes(entry: dict) -> dict | None:
    """JSON-RPC error codes in the response: ``{id: code}`` (``_NO_ID`` for a single
    reply object)."""
    resp = entry.get("response")
    content = resp.get("content") if isinstance(resp, dict) else None
    text = content.get("text") if isinstance(content, dict) else None
    if not isinstance(text, str):
        return None
    try:
        if content.get("encoding") == "base64":
            text = base64.b64decode(text, validate=False).decode("utf-8")
        reply = parse_json(text)
    except (BodyError, ValueError):
        return None
    codes: dict = {}
    for el in reply if isinstance(reply, list) else [reply]:
        err = el.get("error") if isinstance(el, dict) else None
        code = err.get("code") if isinstance(err, dict) else None
        ident = el.get("id") if isinstance(reply, list) else _NO_ID
        if isinstance(ident, list | dict):
            continue
        if isinstance(code, int) and not isinstance(code, bool) and -(2**31) <= code < 2**31:
            codes[ident] = code
    return codes


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 \
            and value == value and value != float("inf"):
        return float(value)
    return None


def _is_websocket(entry: dict, headers: list[tuple[str, str]], scheme: str, verb: str,
                  path: str) -> bool:
    last = path.rstrip("/").rsplit("/", 1)[-1]
    resp = entry.get("response")
    # exports often drop hop-by-hop headers such as Upgrade, so a GET of a stream path
    # counts as a handshake too
    return (scheme in ("ws", "wss") or entry.get("_resourceType") == "websocket"
            or "_webSocketMessages" in entry
            or (isinstance(resp, dict) and resp.get("status") == 101)
            or any(n == "upgrade" and v.strip().lower() == "websocket" for n, v in headers)
            or (verb == "GET" and (last in STREAMS_API_STREAMS
                                   or path.rstrip("/") == MONITORING_PATH)))


def learn_host(entry: Any, known: dict[str, set[str]] | None = None
               ) -> tuple[str, str] | None:
    """``(host, api)`` when the entry's content shows which API its host serves. With
    ``known`` (host -> APIs learned so far), None without reading the body when every
    API the entry could show for its host is known already."""
    try:
        req, url, verb = _request(entry)
        u = parse_url(url)
    except (EntryError, ValueError):
        return None
    if verb != "POST" or not u.host:
        return None
    sizing_path = u.path.rstrip("/").endswith("/v1/size")
    if known is not None and RPC in known.get(u.host, ()) and (
            not sizing_path or SEARCH in known[u.host]):
        return None
    body = _post_json(req)
    if looks_like_rpc(body):
        return u.host, RPC
    if looks_like_sizing(body) and sizing_path:
        return u.host, SEARCH
    return None


class HarContext:
    """What classification needs besides the entry: the host map, the learned hosts,
    and the problem tallies (for deviations and unmapped hosts)."""

    def __init__(self, host_map: HostMap, problems: Problems) -> None:
        self.host_map = host_map
        self.problems = problems
        self.learned: dict[str, set[str]] = {}

    def learn(self, entries: list) -> None:
        for entry in entries:
            found = learn_host(entry, self.learned)
            if found:
                self.learned.setdefault(found[0], set()).add(found[1])

    def related(self, host: str) -> bool:
        """Whether ``host`` was learned, or shares its domain (last two labels) with a
        learned host (``streams.eu.example.io`` next to ``rpc.eu.example.io``)."""
        if host in self.learned:
            return True
        domain = ".".join(host.split(".")[-2:])
        return "." in domain and any(h.endswith("." + domain) or h == domain
                                     for h in self.learned)

    def serves(self, host: str) -> set[str]:
        """The APIs ``host`` serves: the mapped one, else the learned ones."""
        target = self.host_map.target(host)
        if target is not None:
            return {target}
        return self.learned.get(host, set())


def _body_field(path: str) -> str:
    """``request.postData.text`` followed by the path inside the body."""
    if not path or path == "body":
        return "request.postData.text"
    return "request.postData.text" + ("" if path.startswith("[") else ".") + path


def _rpc_rows(body: Any, deviations) -> list[dict]:
    try:
        calls = validate_rpc_payload(body, deviations)
    except BodyError as err:
        raise EntryError("body", _body_field(err.path), err.expected) from None
    return [{"api": RPC, "method": c.method, "body_hash": c.body_hash, "_id": c.id,
             "notification": c.notification} for c in calls]


def _sizing_row(body: Any) -> dict:
    try:
        sizing = validate_sizing_body(body)
    except BodyError as err:
        raise EntryError("body", _body_field(err.path), err.expected) from None
    return {"api": SEARCH, "method": SIZE_METHOD, "items": sizing.items,
            "profiles": ",".join(sizing.profiles), "body_hash": sizing.body_hash}


def _classify(entry: dict, req: dict, verb: str, u, headers, ctx: HarContext
              ) -> list[dict] | str:
    serves = ctx.serves(u.host)
    if IGNORE in serves:
        return "entries to hosts mapped to ignore"
    path = u.path.rstrip("/")
    if _is_websocket(entry, headers, u.scheme, verb, u.path):
        last = path.rsplit("/", 1)[-1]
        target = ctx.host_map.target(u.host)
        recognised = ctx.related(u.host) or bool(u.keys) or any(
            n == KEY_HEADER or (n == "authorization" and authorization_credentials(v)[0])
            for n, v in headers)
        if path == MONITORING_PATH:
            if target == SEARCH or (target is None and recognised):
                return [{"api": SEARCH, "method": MONITORING_PATH}]
        elif last in STREAMS_API_STREAMS:
            if target == STREAMS or (target is None and recognised):
                return [{"api": STREAMS, "method": last}]
        else:
            return "websocket entries to other paths"
        ctx.problems.unmapped_hosts[u.host or "(no host)"] += 1
        return "websocket entries to hosts not recognised or mapped"
    body = _post_json(req) if verb == "POST" else None
    if verb == "POST" and looks_like_rpc(body):
        return _rpc_rows(body, ctx.problems.deviations)
    if verb == "POST" and path.endswith("/v1/size") and looks_like_sizing(body):
        return [_sizing_row(body)]
    if RPC in serves and verb == "POST":
        raise EntryError("body", "request.postData.text",
                         "expected a JSON-RPC 2.0 request or batch (the host serves RPC)")
    if SEARCH in serves and path == "/v1/size" and verb == "POST":
        if _post_text(req) is None:
            raise EntryError("body", "request.postData.text", "missing; expected a JSON body")
        return [_sizing_row(_post_json(req))]
    if SEARCH in serves and u.path.startswith("/v1/"):
        method = f"{verb} {u.path}"
        if len(method) > 200 or any(ord(c) < 33 or ord(c) == 127 for c in u.path):
            raise EntryError("entry", "request.url", "expected a path of printable characters, "
                                                     "at most 190 long")
        post = req.get("postData")
        text = post.get("text") if isinstance(post, dict) else None
        return [{"api": SEARCH, "method": method,
                 "body_hash": canonical_hash({"method": method, "body": text})}]
    if serves:
        return "entries that are not service requests"
    ctx.problems.unmapped_hosts[u.host or "(no host)"] += 1
    return "entries to hosts not recognised or mapped"


def entry_rows(entry: Any, ctx: HarContext) -> list[dict] | str:
    """Rows for one entry, or the reason it is ignored; :class:`EntryError` if invalid."""
    req, url, verb = _request(entry)
    try:
        u = parse_url(url)
    except ValueError:
        raise EntryError("entry", "request.url", "expected a URL") from None
    if verb == "OPTIONS":
        return "CORS preflight (OPTIONS) entries"
    headers = _headers(req)
    rows = _classify(entry, req, verb, u, headers, ctx)
    if isinstance(rows, str):
        return rows

    started = entry.get("startedDateTime")
    time_ns = parse_time_text(started) if isinstance(started, str) else None
    if time_ns is None:
        raise EntryError("time", "startedDateTime", f"expected ISO-8601, {TIME_RANGE_TEXT}")
    resp = entry.get("response")
    status = resp.get("status") if isinstance(resp, dict) else None
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        if status not in (0, -1, None):
            raise EntryError("status", "response.status", "expected an HTTP status")
        status = None
    codes = _reply_codes(entry) if rows[0]["api"] == RPC else None
    key = _pick_key(headers, u.keys)
    common = {"time_ns": time_ns, "key": key, "region": region_from_host(u.host),
              "latency_ms": _number(entry.get("time")),
              "retry_after_s": _retry_after(resp, time_ns)}
    out = []
    for row in rows:
        ident = row.pop("_id", None)
        code = None
        if codes and not row.get("notification"):
            code = codes[_NO_ID] if _NO_ID in codes else codes.get(ident)
        out.append({**common, **row, "status": code if code is not None else status})
    return out


def _retry_after(resp: Any, time_ns: int) -> float | None:
    """The response's ``Retry-After`` in seconds: delta-seconds, or an HTTP date counted
    from the request's start; None when absent."""
    if not isinstance(resp, dict) or not isinstance(resp.get("headers"), list):
        return None
    for h in resp["headers"]:
        if isinstance(h, dict) and str(h.get("name", "")).lower() == "retry-after":
            value = str(h.get("value", "")).strip()
            if re.fullmatch(r"[0-9]+(?:\.[0-9]+)?", value):
                return float(value)
            try:
                when = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError):
                when = None
            if when is None or when.tzinfo is None:
                raise EntryError("retry_after", "response.headers.Retry-After",
                                 "expected seconds or an HTTP date")
            return max(0.0, when.timestamp() - time_ns / 1e9)
    return None


WHOLE_BYTES = 256 << 20
"""A HAR file the streaming parser refuses is read whole by ``json.load`` (which accepts
a little more, e.g. ``NaN``) up to this size; a larger one is refused as not JSON."""


def _stream_entries(path: str) -> Iterator[Any]:
    """``log.entries`` items one at a time (ijson's C parser): memory stays flat."""
    import ijson

    with open(path, "rb") as fh:
        yield from ijson.items(fh, "log.entries.item", use_float=True)


MAX_DEPTH = 256
"""Containers a HAR may nest (a HAR is a few levels deep; bodies are strings): a deeper
document is refused before ijson's prefixed parsers read it, whose prefixes grow with the
square of the depth (a 200 KB file nested 100,000 deep took 23 GB)."""


def _has_entries(path: str, file: str | None = None) -> bool:
    """Whether the document has a ``log.entries`` array; the whole file is read by
    ijson's basic parser (memory flat in size and depth) and a document nested deeper
    than :data:`MAX_DEPTH` is a :class:`CapsimError`."""
    import ijson

    found = False
    depth, key, opened = 0, None, []  # opened: (kind, key) of the containers down to 3
    with open(path, "rb") as fh:
        for event, value in ijson.basic_parse(fh, use_float=True):
            if event == "map_key":
                key = value
            elif event in ("start_map", "start_array"):
                depth += 1
                if depth > MAX_DEPTH:
                    raise CapsimError(f"not a HAR file: JSON nested more than {MAX_DEPTH} "
                                      "levels deep", file=file or path)
                if depth <= 3:
                    parent_is_map = bool(opened) and opened[-1][0] == "start_map"
                    opened.append((event, key if parent_is_map else None))
                    found = found or opened == [("start_map", None), ("start_map", "log"),
                                                ("start_array", "entries")]
                key = None
            elif event in ("end_map", "end_array"):
                if depth <= 3:
                    opened.pop()
                depth -= 1
    return found


def _first_pass(entries, registry: KeyRegistry, ctx: HarContext) -> None:
    """Register every credential and learn the service's hosts (see module doc)."""
    for entry in entries:
        for key in entry_credentials(entry):
            registry.add(key, counted=False)
        ctx.learn((entry,))


def read_har(path: str, file: str, problems: Problems, chunk_rows: int,
             registry: KeyRegistry, host_map: HostMap | None = None) -> Iterator[dict]:
    """Chunks (column lists) of a HAR source (see module doc): two passes over the
    entries, each streamed from the file (memory flat in the file's size). A file the
    streaming parser refuses is read whole by ``json.load`` up to :data:`WHOLE_BYTES`
    (it accepts a little more, e.g. ``NaN``, and says why it refuses the rest), so
    errors and results are those of reading it whole; every entry is parsed in the first
    pass, so a file that fails does so before any row."""
    import ijson

    whole = None
    ctx = HarContext(host_map or HostMap(), problems)
    try:
        if not _has_entries(path, file):
            raise CapsimError("not a HAR file: expected an array", file=file,
                              field="log.entries")
        _first_pass(_stream_entries(path), registry, ctx)
    except (ijson.JSONError, UnicodeDecodeError, RecursionError):
        if os.path.getsize(path) > WHOLE_BYTES:
            raise CapsimError("not a HAR file: expected a JSON document", file=file) from None
        whole = load_har(path, file)
        ctx = HarContext(host_map or HostMap(), problems)
        _first_pass(whole, registry, ctx)

    def entries() -> Iterator[Any]:
        return iter(whole) if whole is not None else _stream_entries(path)

    buf = RecordBuffer()
    for i, entry in enumerate(entries()):
        try:
            rows = entry_rows(entry, ctx)
        except EntryError as err:
            problems.add(err.reason, None, f"log.entries[{i}].{err.field}", err.message)
            continue
        if isinstance(rows, str):
            problems.ignore(rows)
            continue
        for row in rows:
            buf.add(row)
        if len(buf) >= chunk_rows:
            yield buf.take()
    if len(buf):
        yield buf.take()
