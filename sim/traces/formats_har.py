"""HAR 1.2 sources (browser and proxy exports).

A HAR file is one JSON document; it is loaded whole (so its size is bounded by memory),
then its entries are converted to rows in chunks. Two passes: the first collects every
key in every entry (``X-Api-Key`` header in any case, ``Authorization: Bearer``, the
``apiKey`` / ``api_key`` / ``key`` query parameters in any case), so that the second can
redact a key wherever it appears, even before the entry that carries it as a header.

Each ``log.entries[i]`` is classified by its request:

================================================  ==========================================
request                                           row(s)
================================================  ==========================================
``OPTIONS`` anything                              ignored (CORS preflight), counted
websocket upgrade (``Upgrade: websocket`` header, api ``streams``, method = the stream name
``ws``/``wss`` URL, or a GET of a stream path),   (``pending-txs`` ...), status = HTTP status
last path segment ``pending-txs`` /
``new-blocks`` / ``pending-logs``
websocket upgrade to                              api ``search``, method = that path
``/v1/monitoring/unhealthy/ws``
other websocket upgrades                          ignored, counted
``POST /v1/size``                                 api ``search``, method ``POST /v1/size``;
                                                  ``postData.text`` validated as a sizing
                                                  body (spec 2.1): items, profiles, hash
other paths under ``/v1/``                        api ``search``, method ``METHOD /path``
``POST /`` (root path)                            api ``rpc``; ``postData.text`` must be a
                                                  JSON-RPC envelope or batch (spec 2.4); one
                                                  row per envelope
anything else                                     ignored (not a service request), counted
================================================  ==========================================

Time is ``startedDateTime``; ``latency_ms`` is the entry's ``time`` (absent when
negative); status is ``response.status`` (absent when 0, i.e. no response), or, for
JSON-RPC, the ``error.code`` of the matching reply object in ``response.content.text``
(matched by ``id`` in a batch; a single error object answers every element). Region: the
first host name label, from the left, that looks like a regional endpoint name - a
geographic prefix (``us``, ``eu``, ``ap``, ``sa``, ``ca``, ``me``, ``af``, ``il``, ``cn``,
``mx``, ``uk``, ``au``, ``jp``, ``in``, ``sg``, ``de``, ``fr``, ``br``, ``kr``, ``za``), a
dash, a word and an optional ``-<number>``: ``rpc.eu-west-1.example.com`` ->
``eu-west-1``; none -> no region (``--region`` overrides either way). Locations are the
0-based entry index, as in ``log.entries[i]``.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from typing import Any

from ..errors import CapsimError
from ..vocabulary import (
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
    parse_json,
    validate_rpc_payload,
    validate_sizing_body,
)
from .canonical import RecordBuffer
from .problems import Problems
from .redaction import KEY_HEADER, KeyRegistry, bearer_token, key_problem, split_url
from .timeparse import TIME_RANGE_TEXT, parse_time_text

_GEO = "us|eu|ap|sa|ca|me|af|il|cn|mx|uk|au|jp|in|sg|de|fr|br|kr|za"
REGION_LABEL_RE = re.compile(rf"(?:{_GEO})-[a-z]+(?:-[0-9]+)?")


class EntryError(ValueError):
    """An entry that cannot be turned into rows: reason, field (within the entry), text."""

    def __init__(self, reason: str, field: str, message: str) -> None:
        self.reason, self.field, self.message = reason, field, message
        super().__init__(message)


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


def entry_keys(entry: Any) -> list[str]:
    """Every acceptable key an entry carries (header, bearer token, query parameter)."""
    try:
        req, url, _ = _request(entry)
        found = [v for n, v in _headers(req) if n == KEY_HEADER]
        found += [t for n, v in _headers(req) if n == "authorization"
                  if (t := bearer_token(v))]
        found += split_url(url)[3]
    except (EntryError, ValueError):
        return []
    return [k.strip() for k in found if not key_problem(k.strip())]


def _pick_key(req: dict, url_keys: list[str]) -> str | None:
    headers = _headers(req)
    candidates = [("request.headers.X-Api-Key", v) for n, v in headers if n == KEY_HEADER]
    candidates += [("request.headers.Authorization", t) for n, v in headers
                   if n == "authorization" if (t := bearer_token(v))]
    candidates += [("request.url", k) for k in url_keys]
    if not candidates:
        return None
    where, key = candidates[0]
    problem = key_problem(key.strip())
    if problem:
        raise EntryError("key", where, problem)
    return key.strip()


def _post_text(req: dict) -> str:
    post = req.get("postData")
    text = post.get("text") if isinstance(post, dict) else None
    if not isinstance(text, str) or not text.strip():
        raise EntryError("body", "request.postData.text", "missing; expected a JSON body")
    return text


def _reply_codes(entry: dict) -> dict | None:
    """JSON-RPC error codes in the response: ``{id: code}`` (key None for a single reply)."""
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
        ident = el.get("id") if isinstance(reply, list) else None
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


def entry_rows(entry: Any) -> list[dict] | str:
    """Rows for one entry, or the reason it is ignored; :class:`EntryError` if invalid."""
    req, url, verb = _request(entry)
    try:
        scheme, host, path, url_keys = split_url(url)
    except ValueError:
        raise EntryError("entry", "request.url", "expected a URL") from None
    if verb == "OPTIONS":
        return "CORS preflight (OPTIONS) entries"
    headers = _headers(req)
    last = path.rstrip("/").rsplit("/", 1)[-1]
    # exports often drop hop-by-hop headers such as Upgrade, so a GET of a stream path
    # counts as a handshake too
    upgrade = scheme in ("ws", "wss") or any(
        n == "upgrade" and v.strip().lower() == "websocket" for n, v in headers) or (
        verb == "GET" and (last in STREAMS_API_STREAMS or path.rstrip("/") == MONITORING_PATH))
    if upgrade:
        if path.rstrip("/") == MONITORING_PATH:
            rows = [{"api": SEARCH, "method": MONITORING_PATH}]
        elif last in STREAMS_API_STREAMS:
            rows = [{"api": STREAMS, "method": last}]
        else:
            return "websocket entries to unknown paths"
    elif path.rstrip("/") == "/v1/size" and verb == "POST":
        try:
            sizing = validate_sizing_body(parse_json(_post_text(req)))
        except BodyError as err:
            raise EntryError("body", err.path or "request.postData.text", err.expected) \
                from None
        rows = [{"api": SEARCH, "method": SIZE_METHOD, "items": sizing.items,
                 "profiles": ",".join(sizing.profiles), "body_hash": sizing.body_hash}]
    elif path.startswith("/v1/"):
        method = f"{verb} {path}"
        if len(method) > 200 or any(ord(c) < 33 or ord(c) == 127 for c in path):
            raise EntryError("entry", "request.url", "expected a path of printable characters, "
                                                     "at most 190 long")
        post = req.get("postData")
        body = post.get("text") if isinstance(post, dict) else None
        rows = [{"api": SEARCH, "method": method,
                 "body_hash": canonical_hash({"method": method, "body": body})}]
    elif path in ("", "/") and verb == "POST":
        try:
            calls = validate_rpc_payload(parse_json(_post_text(req)))
        except BodyError as err:
            raise EntryError("body", err.path or "request.postData.text", err.expected) \
                from None
        rows = [{"api": RPC, "method": c.method, "body_hash": c.body_hash, "_id": c.id}
                for c in calls]
    else:
        return "entries that are not service requests"

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
    key = _pick_key(req, url_keys)
    common = {"time_ns": time_ns, "key": key, "region": region_from_host(host),
              "latency_ms": _number(entry.get("time"))}
    out = []
    for row in rows:
        ident = row.pop("_id", None)
        code = None
        if codes:
            # a single reply object answers the whole request (even a batch)
            code = codes[None] if None in codes else codes.get(ident)
        out.append({**common, **row, "status": code if code is not None else status})
    return out


def read_har(path: str, file: str, problems: Problems, chunk_rows: int,
             registry: KeyRegistry) -> Iterator[dict]:
    """Chunks (column lists) of a HAR source (see module doc)."""
    entries = load_har(path, file)
    for entry in entries:
        for key in entry_keys(entry):
            registry.add(key)
    buf = RecordBuffer()
    for i, entry in enumerate(entries):
        try:
            rows = entry_rows(entry)
        except EntryError as err:
            problems.add(err.reason, i, err.field, err.message)
            continue
        if isinstance(rows, str):
            problems.ignore(rows)
            continue
        for row in rows:
            buf.append(**row)
        if len(buf) >= chunk_rows:
            yield buf.take()
    if len(buf):
        yield buf.take()
