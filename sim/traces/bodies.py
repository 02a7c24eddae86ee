"""Request bodies of the service, validated against the interface spec (sections 2.1-2.4).

Two bodies are recognised:

* the **JSON-RPC envelope** (2.4): ``jsonrpc`` is ``"2.0"``, ``id`` a JSON number,
  ``method`` a non-empty string, ``params`` an array (may be empty). A batch is a
  non-empty JSON array of envelopes; each element is validated on its own. Traffic
  recorded against other providers is JSON-RPC 2.0 as clients send it: string and null
  ids, notifications (no ``id``), no ``params`` or ``params`` as an object are accepted
  and counted as deviations from the envelope (:func:`validate_rpc_envelope`).
* the **sizing body** of ``POST /v1/size`` (2.1): ``state`` an object with ``hash``
  (``0x`` + 64 hex digits, 32 bytes) and ``request`` (a call object whose ``input`` is a
  ``0x`` hex string); ``blockNumber`` a hex quantity; ``items`` an array (may be empty)
  of items, each with ``range.from`` / ``range.to`` (decimal-number strings: digits with
  an optional fractional part), ``settings.profile`` (non-empty string without commas,
  since the canonical table joins profiles with commas) and ``request`` (a call object
  whose ``input`` is a hex string or an array of input segments, 2.3: ``kind`` ``hex``
  with ``data`` as ``0x`` hex bytes of even length, or ``kind`` ``amount`` with ``codec``
  a non-empty string; other kinds are rejected).

Call object (2.2): ``from`` and ``to`` are ``0x`` + 40 hex digits, ``value`` a hex
quantity (``0x0`` or ``0x`` + digits without leading zero), ``input`` as above. Every
listed field is required; fields the spec does not list are allowed and ignored.

A failure raises :class:`BodyError` with the path inside the body
(``items[2].request.to``) and what was expected; values are never echoed, since a body
may carry a key. ``body_hash`` identifies a request for retry recognition: sha256 over
the canonical JSON (sorted keys, no whitespace) of ``{"method", "params"}`` for an
envelope (``id`` is left out because clients renumber retries) or of the whole sizing
body, first 16 hex digits.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

ADDRESS_RE = re.compile(r"0x[0-9a-fA-F]{40}")
HASH32_RE = re.compile(r"0x[0-9a-fA-F]{64}")
QUANTITY_RE = re.compile(r"0x(?:0|[1-9a-fA-F][0-9a-fA-F]*)")
HEX_BYTES_RE = re.compile(r"0x(?:[0-9a-fA-F]{2})*")
DECIMAL_RE = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_CONTROL_RE = re.compile("[\x00-\x1f\x7f]")

EXPECT_ADDRESS = "expected 0x-prefixed 20-byte hex address"
EXPECT_HASH32 = "expected 0x-prefixed 32-byte hex string"
EXPECT_QUANTITY = "expected 0x-prefixed hex quantity without leading zeros"
EXPECT_HEX_BYTES = "expected 0x-prefixed hex bytes (even number of digits)"
EXPECT_DECIMAL = "expected a decimal-number string"


class BodyError(ValueError):
    """A body that does not follow the spec; ``path`` is the location inside the body."""

    def __init__(self, path: str, expected: str) -> None:
        self.path = path
        self.expected = expected
        super().__init__(f"{path}: {expected}" if path else expected)


@dataclass(frozen=True)
class RpcCall:
    """One validated JSON-RPC envelope."""

    method: str
    id: int | float | str | None
    body_hash: str
    notification: bool = False


@dataclass(frozen=True)
class SizingRequest:
    """One validated sizing body: its item count and the profile of each item."""

    items: int
    profiles: tuple[str, ...]
    body_hash: str


def _reject_constant(name: str) -> Any:
    raise BodyError("", "expected JSON (NaN and Infinity are not JSON)")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)  # built once, not per body


def parse_json(text: str | bytes) -> Any:
    """Strict JSON (no NaN/Infinity); :class:`BodyError` on anything else. Reads as
    ``json.loads(text, parse_constant=...)`` does, with one decoder for every call."""
    try:
        if isinstance(text, bytes | bytearray):
            text = text.decode(json.detect_encoding(text), "surrogatepass")
        elif text.startswith("\ufeff"):
            raise ValueError("Unexpected UTF-8 BOM")
        return _DECODER.decode(text)
    except BodyError:
        raise
    except (ValueError, RecursionError):
        raise BodyError("", "expected a JSON document") from None


def canonical_hash(obj: Any) -> str:
    """sha256 of the canonical JSON of ``obj``, first 16 hex digits."""
    try:
        text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except RecursionError:
        raise BodyError("", "expected a JSON document nested less deeply") from None
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _field(obj: dict, path: str, name: str) -> tuple[Any, str]:
    where = _join(path, name)
    if name not in obj:
        raise BodyError(where, "missing")
    return obj[name], where


def _obj(value: Any, path: str) -> dict:
    if not isinstance(value, dict):
        raise BodyError(path, "expected an object")
    return value


def _text(value: Any, path: str, pattern: re.Pattern[str], expected: str) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise BodyError(path, expected)
    return value


def _name(value: Any, path: str, what: str) -> str:
    if not isinstance(value, str) or not value or len(value) > 200 \
            or _CONTROL_RE.search(value):
        raise BodyError(path, f"expected a non-empty {what} string (printable, at most 200 "
                              "characters)")
    return value


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def _deviate(deviations: Counter | None, what: str) -> None:
    if deviations is not None:
        deviations[what] += 1


def validate_rpc_envelope(obj: Any, path: str = "",
                          deviations: Counter | None = None) -> RpcCall:
    """Check one JSON-RPC 2.0 request (spec 2.4 as clients send it); method, id, hash.

    ``jsonrpc`` must be ``"2.0"`` and ``method`` a non-empty string. What JSON-RPC 2.0
    allows but the spec's envelope does not show is accepted and counted in
    ``deviations`` by :data:`DEVIATIONS` name: a string or null ``id``, no ``id`` (a
    notification), no ``params``, ``params`` as an object. Other ``id`` / ``params``
    types are errors.
    """
    env = _obj(obj, path or "body")
    version, where = _field(env, path, "jsonrpc")
    if version != "2.0":
        raise BodyError(where, 'expected "2.0"')
    method, where = _field(env, path, "method")
    method = _name(method, where, "method")
    notification = "id" not in env
    ident = env.get("id")
    if notification:
        _deviate(deviations, "notification (no id)")
    elif ident is None:
        _deviate(deviations, "id null")
    elif isinstance(ident, str):
        _deviate(deviations, "id a string")
    elif not _is_number(ident):
        raise BodyError(_join(path, "id"), "expected a number, a string or null")
    if "params" not in env:
        _deviate(deviations, "params missing")
        params: Any = []
    else:
        params = env["params"]
        if isinstance(params, dict):
            _deviate(deviations, "params an object")
        elif not isinstance(params, list):
            raise BodyError(_join(path, "params"), "expected an array or an object")
    return RpcCall(method, ident, canonical_hash({"method": method, "params": params}),
                   notification)


def validate_rpc_payload(obj: Any, deviations: Counter | None = None) -> list[RpcCall]:
    """An envelope or a batch (non-empty array of envelopes, paths ``[3].method``)."""
    if isinstance(obj, list):
        if not obj:
            raise BodyError("", "expected a non-empty JSON-RPC batch")
        return [validate_rpc_envelope(el, f"[{i}]", deviations) for i, el in enumerate(obj)]
    return [validate_rpc_envelope(obj, "", deviations)]


def looks_like_rpc(obj: Any) -> bool:
    """Whether a parsed body is meant as JSON-RPC 2.0, valid or not: an object with
    ``"jsonrpc": "2.0"``, or a batch with at least one such element (so that a bad
    element is reported at its own path by :func:`validate_rpc_payload`)."""
    els = obj if isinstance(obj, list) else [obj]
    return any(isinstance(el, dict) and el.get("jsonrpc") == "2.0" for el in els)


def looks_like_sizing(obj: Any) -> bool:
    """Whether a parsed body is meant as a sizing request (``state`` and ``items``)."""
    return isinstance(obj, dict) and "state" in obj and "items" in obj


def _segment(seg: Any, path: str) -> None:
    seg = _obj(seg, path)
    kind, where = _field(seg, path, "kind")
    if kind == "hex":
        data, where = _field(seg, path, "data")
        _text(data, where, HEX_BYTES_RE, EXPECT_HEX_BYTES)
    elif kind == "amount":
        codec, where = _field(seg, path, "codec")
        _name(codec, where, "codec")
    else:
        raise BodyError(where, 'expected "hex" or "amount"')


def validate_call(obj: Any, path: str, *, segments: bool) -> None:
    """Check a call object (spec 2.2); ``segments`` allows an input segment array (2.3)."""
    call = _obj(obj, path)
    for name in ("from", "to"):
        value, where = _field(call, path, name)
        _text(value, where, ADDRESS_RE, EXPECT_ADDRESS)
    value, where = _field(call, path, "value")
    _text(value, where, QUANTITY_RE, EXPECT_QUANTITY)
    data, where = _field(call, path, "input")
    if segments and isinstance(data, list):
        for i, seg in enumerate(data):
            _segment(seg, f"{where}[{i}]")
    elif segments and not isinstance(data, str):
        raise BodyError(where, "expected 0x-prefixed hex bytes or an array of input segments")
    else:
        _text(data, where, HEX_BYTES_RE, EXPECT_HEX_BYTES)


def _item(obj: Any, path: str) -> str:
    item = _obj(obj, path)
    rng, where = _field(item, path, "range")
    rng = _obj(rng, where)
    for name in ("from", "to"):
        value, w = _field(rng, where, name)
        _text(value, w, DECIMAL_RE, EXPECT_DECIMAL)
    settings, where = _field(item, path, "settings")
    settings = _obj(settings, where)
    profile, where = _field(settings, where, "profile")
    profile = _name(profile, where, "profile")
    if "," in profile:
        raise BodyError(where, "expected a profile name without commas")
    request, where = _field(item, path, "request")
    validate_call(request, where, segments=True)
    return profile


def validate_sizing_body(obj: Any) -> SizingRequest:
    """Check a ``POST /v1/size`` body (spec 2.1); returns item count, profiles and hash."""
    body = _obj(obj, "body")
    state, where = _field(body, "", "state")
    state = _obj(state, where)
    value, w = _field(state, where, "hash")
    _text(value, w, HASH32_RE, EXPECT_HASH32)
    request, w = _field(state, where, "request")
    validate_call(request, w, segments=False)
    block, where = _field(body, "", "blockNumber")
    _text(block, where, QUANTITY_RE, EXPECT_QUANTITY)
    items, where = _field(body, "", "items")
    if not isinstance(items, list):
        raise BodyError(where, "expected an array")
    profiles = tuple(_item(item, f"items[{i}]") for i, item in enumerate(items))
    return SizingRequest(len(profiles), profiles, canonical_hash(body))
