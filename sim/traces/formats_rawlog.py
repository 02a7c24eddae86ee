"""Request logs: one request per line, ``rpc-log`` (JSON-RPC) and ``size-log`` (sizing).

Line grammar (one line = one request; tokens separated by one or more spaces)::

    line      = timestamp 1*SP *(token 1*SP) body
    timestamp = ISO-8601 date-time without spaces ("2024-05-01T12:00:00.25Z")
              / epoch seconds ("1714564800.25")
    token     = name "=" value          ; value has no spaces; each name at most once
    name      = "key" / "region" / "status" / "latency_ms" / "gas_used" / "cu" /
                "retry_after"      ; Retry-After seconds, stored as retry_after_s
    body      = JSON text, the rest of the line, starting with "{" or "["

Blank lines and lines whose first non-space character is ``#`` are ignored (and
counted). ``rpc-log`` bodies are a JSON-RPC 2.0 request or a batch array, as clients send
them (string or null ids, notifications, missing or object ``params`` are kept and
counted as deviations from the spec's envelope 2.4, see :mod:`.bodies`); a batch
gives one row per element, all with the line's tokens, except that ``cu`` and
``gas_used`` are refused on a batch (they are per request). ``size-log`` bodies are
sizing bodies (spec 2.1): api ``search``, method ``POST /v1/size``. ``status`` is an
integer: the HTTP status or the JSON-RPC error code. Locations are 1-based line
numbers; body problems name the path inside the body.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

from .bodies import BodyError, parse_json, validate_rpc_payload, validate_sizing_body
from .canonical import RecordBuffer
from .problems import Problems
from .redaction import key_problem
from .schema import RPC, SEARCH, SIZE_METHOD
from .timeparse import TIME_RANGE_TEXT, parse_time_text

TOKEN_NAMES = ("key", "region", "status", "latency_ms", "gas_used", "cu", "retry_after")
GRAMMAR = "expected `<timestamp> [key=K] [region=R] [status=S] ... <JSON body>`"
_INT = re.compile(r"[+-]?[0-9]{1,18}")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?")
_REGION = re.compile(r"[^\x00-\x20\x7f]{1,100}")


class LineError(ValueError):
    """A line that breaks the grammar or a field rule."""

    def __init__(self, reason: str, field: str, message: str) -> None:
        self.reason, self.field, self.message = reason, field, message
        super().__init__(message)


def split_line(text: str) -> tuple[str, dict[str, str], str]:
    """``(timestamp, tokens, body)`` of one log line (see the grammar above)."""
    parts = text.strip().split(None, 1)
    if len(parts) < 2:
        raise LineError("line", "line", GRAMMAR)
    stamp, rest = parts
    tokens: dict[str, str] = {}
    while rest and rest[0] not in "{[":
        head = rest.split(None, 1)
        name, eq, value = head[0].partition("=")
        if not eq or name not in TOKEN_NAMES:
            raise LineError("line", "line", "unknown token before the body; " + GRAMMAR)
        if name in tokens:
            raise LineError(name, name, "given twice")
        tokens[name] = value
        rest = head[1] if len(head) > 1 else ""
    if not rest:
        raise LineError("body", "body", "missing JSON body")
    return stamp, tokens, rest


def _token_values(tokens: dict[str, str]) -> dict:
    row: dict = {}
    if "key" in tokens:
        problem = key_problem(tokens["key"])
        if problem:
            raise LineError("key", "key", problem)
        row["key"] = tokens["key"]
    if "region" in tokens:
        if not _REGION.fullmatch(tokens["region"]):
            raise LineError("region", "region", "expected a region name")
        row["region"] = tokens["region"]
    if "status" in tokens:
        value = tokens["status"]
        status = int(value) if _INT.fullmatch(value) else None
        if status is None or not -(2**31) <= status < 2**31:
            raise LineError("status", "status",
                            "expected an integer (HTTP status or JSON-RPC error code)")
        row["status"] = status
    if "gas_used" in tokens:
        value = tokens["gas_used"]
        if not _INT.fullmatch(value) or int(value) < 0:
            raise LineError("gas_used", "gas_used", "expected a non-negative integer")
        row["gas_used"] = int(value)
    for name, column in (("latency_ms", "latency_ms"), ("cu", "cu"),
                         ("retry_after", "retry_after_s")):
        if name in tokens:
            value = tokens[name]
            number = float(value) if _FLOAT.fullmatch(value) else -1.0
            if not math.isfinite(number) or number < 0:
                raise LineError(name, name, "expected a finite non-negative number")
            row[column] = number
    return row


def _line_rows(text: str, kind: str, deviations=None) -> list[dict]:
    stamp, tokens, body_text = split_line(text)
    time_ns = parse_time_text(stamp)
    if time_ns is None:
        raise LineError("time", "timestamp",
                        f"expected ISO-8601 or epoch seconds, {TIME_RANGE_TEXT}")
    base = _token_values(tokens)
    base["time_ns"] = time_ns
    try:
        body = parse_json(body_text)
        if kind == "rpc-log":
            calls = validate_rpc_payload(body, deviations)
            for name in ("cu", "gas_used"):
                if name in base and len(calls) > 1:
                    raise LineError(name, name, "not allowed with a batch body "
                                                "(it is per request)")
            return [{**base, "api": RPC, "method": c.method, "body_hash": c.body_hash,
                     "notification": c.notification} for c in calls]
        sizing = validate_sizing_body(body)
    except BodyError as err:
        raise LineError("body", err.path or "body", err.expected) from None
    return [{**base, "api": SEARCH, "method": SIZE_METHOD, "items": sizing.items,
             "profiles": ",".join(sizing.profiles), "body_hash": sizing.body_hash}]


def read_log(path: str, kind: str, problems: Problems, chunk_rows: int) -> Iterator[dict]:
    """Chunks (column lists) of an ``rpc-log`` or ``size-log`` source."""
    buf = RecordBuffer()
    with open(path, "rb") as fh:
        for line_no, raw in enumerate(fh, 1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                problems.add("encoding", line_no, "line", "expected UTF-8 text")
                continue
            stripped = text.strip()
            if not stripped:
                problems.ignore("blank lines")
                continue
            if stripped.startswith("#"):
                problems.ignore("comment lines")
                continue
            try:
                rows = _line_rows(stripped, kind, problems.deviations)
            except LineError as err:
                problems.add(err.reason, line_no, err.field, err.message)
                continue
            for row in rows:
                buf.append(**row)
            if len(buf) >= chunk_rows:
                yield buf.take()
    if len(buf):
        yield buf.take()


def sniff_log_kind(path: str) -> str | None:
    """``rpc-log`` or ``size-log`` from the first request line's body, if it tells."""
    with open(path, "rb") as fh:
        for _, raw in zip(range(1000), fh, strict=False):
            text = raw.decode("utf-8", "replace").strip()
            if not text or text.startswith("#"):
                continue
            try:
                _, _, body_text = split_line(text)
                body = parse_json(body_text)
            except (LineError, BodyError):
                return None
            if isinstance(body, list) or (isinstance(body, dict) and "jsonrpc" in body):
                return "rpc-log"
            if isinstance(body, dict) and ("items" in body or "state" in body):
                return "size-log"
            return None
    return None
