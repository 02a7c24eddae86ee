"""Validation of tabular trace rows, whole columns at a time.

Tabular sources (CSV, JSONL, Parquet) name their columns like the canonical table, with
aliases; :func:`resolve_columns` maps source names (case-insensitive, trimmed) to
canonical roles, and :func:`normalize` checks a chunk of raw columns with Arrow and numpy
and reports each invalid row once, under the first failing field in canonical column
order. Accepted spellings:

* time: ``time_ns`` (integer ns since the epoch) or ``timestamp`` / ``time`` (ISO-8601
  or epoch seconds, see :mod:`sim.traces.timeparse`); precedence in that order when a
  source has several.
* ``key`` / ``api_key`` / ``X-Api-Key``: a raw key, an existing pseudonym, or empty
  (no key).
* ``api``: ``rpc`` / ``search`` / ``streams`` (any case). ``method``: printable text, at
  most 200 characters; anything from a ``?`` on is dropped (query strings carry keys).
* ``items``, ``gas_used``: non-negative integers (``3.0`` accepted); ``status``: a
  32-bit integer (HTTP status or JSON-RPC error code); ``cu``, ``latency_ms``: finite
  non-negative numbers; ``profiles``: comma-separated non-empty names, as many as
  ``items`` (``items`` is taken from ``profiles`` when missing); ``body_hash``: 16 to
  64 hex digits, stored as the first 16 in lower case; ``retry_after_s`` /
  ``retry_after``: the ``Retry-After`` seconds, a finite non-negative number.

Rows whose every column is empty are blank lines, counted as ignored, not invalid.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.errors import CapsimError
from . import strbytes
from .problems import Problems
from .redaction import MAX_KEY_LEN, MIN_KEY_LEN
from .schema import APIS, NO_KEY
from .timeparse import MAX_NS, MIN_NS, NS, TIME_RANGE_TEXT, parse_time_array

# role -> accepted source names (lower case), in precedence order
ALIASES: dict[str, tuple[str, ...]] = {
    "time_ns": ("time_ns",),
    "time_s": ("timestamp", "time"),
    "api": ("api",),
    "method": ("method",),
    "key": ("key", "api_key", "x-api-key"),
    "region": ("region",),
    "items": ("items",),
    "profiles": ("profiles",),
    "gas_used": ("gas_used",),
    "cu": ("cu",),
    "status": ("status",),
    "latency_ms": ("latency_ms",),
    "retry_after_s": ("retry_after_s", "retry_after"),
    "body_hash": ("body_hash",),
}
ROLE_OF = {alias: role for role, names in ALIASES.items() for alias in names}

_INT_RE = r"^(?P<n>[+-]?(?:[0-9]{1,18}|[0-8][0-9]{18}))(?:\.0*)?$"  # never overflows int64
_FLOAT_RE = r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?$"
_PRINTABLE_RE = r"^[^\x00-\x1f\x7f]{1,%d}$"
_PROFILES_RE = r"^[^,\x00-\x1f\x7f]+(?:,[^,\x00-\x1f\x7f]+)*$"
_KEY_RE = rf"^[\x21-\x7e]{{{MIN_KEY_LEN},{MAX_KEY_LEN}}}$"
_HASH_RE = r"^[0-9a-fA-F]{16,64}$"
INT32_MAX = 2**31 - 1

MESSAGES = {
    "missing": "required value is missing",
    "time_ns": f"expected integer ns since the epoch, {TIME_RANGE_TEXT}",
    "time_s": f"expected ISO-8601 or epoch seconds, {TIME_RANGE_TEXT}",
    "api": "expected one of " + ", ".join(APIS),
    "method": "expected a method name (printable, at most 200 characters)",
    "key": f"expected an API key of {MIN_KEY_LEN} to {MAX_KEY_LEN} printable ASCII "
           "characters without spaces",
    "region": "expected a region name (printable, at most 100 characters)",
    "items": "expected a non-negative integer",
    "profiles": "expected comma-separated profile names",
    "profiles_count": "expected one profile per item",
    "gas_used": "expected a non-negative integer",
    "cu": "expected a finite non-negative number",
    "status": "expected an integer (HTTP status or JSON-RPC error code)",
    "latency_ms": "expected a finite non-negative number",
    "retry_after_s": "expected seconds, a finite non-negative number",
    "body_hash": "expected 16 to 64 hex digits",
    "encoding": "expected UTF-8 text",
}


def resolve_columns(names: list[str], file: str, line: int | None) -> tuple[dict[str, str],
                                                                           list[str]]:
    """``(role -> source name, ignored source names)`` for a tabular header.

    Raises :class:`CapsimError` for a duplicated column or a missing required one.
    """
    by_alias: dict[str, str] = {}
    ignored: list[str] = []
    for name in names:
        norm = str(name).strip().lower()
        if norm in by_alias:
            raise CapsimError("column appears twice", file=file, line=line, field=norm)
        if norm in ROLE_OF:
            by_alias[norm] = name
        else:
            ignored.append(str(name))
    mapping: dict[str, str] = {}
    for role, aliases in ALIASES.items():
        for alias in aliases:
            if alias in by_alias:
                if role in mapping:
                    ignored.append(by_alias[alias])
                else:
                    mapping[role] = by_alias[alias]
    if "time_ns" in mapping and "time_s" in mapping:
        ignored.append(mapping.pop("time_s"))
    if "time_ns" not in mapping and "time_s" not in mapping:
        raise CapsimError("missing a time column (time_ns, timestamp or time)", file=file,
                          line=line, field="columns")
    for role in ("api", "method"):
        if role not in mapping:
            raise CapsimError(f"missing the required column {role}", file=file, line=line,
                              field="columns")
    return mapping, ignored


def _np(arr) -> np.ndarray:
    return arr.to_numpy(zero_copy_only=False)


def _bools(arr) -> np.ndarray:
    return _np(pc.fill_null(arr, False)).astype(bool, copy=False)


def _per_value(arr: pa.Array, fn) -> tuple[np.ndarray, ...]:
    """``fn(strings)`` -> per-element numpy arrays, computed once per distinct value when
    the column has few of them (api, method, key, region, status), else row by row."""
    if len(arr) > 4096 and len(pc.unique(arr.slice(0, 4096))) <= 256:
        enc = pc.dictionary_encode(arr)
        idx = _np(pc.fill_null(enc.indices, -1)).astype(np.int64)
        return tuple(np.append(r, np.zeros(1, dtype=r.dtype))[idx]
                     for r in fn(enc.dictionary))
    return fn(arr)


def _parse_ints(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    ext = pc.extract_regex(values, _INT_RE)
    ok = _np(ext.is_valid()).astype(bool, copy=False)
    digits = pc.if_else(pa.array(ok), pc.fill_null(pc.struct_field(ext, "n"), "0"), "0")
    # Arrow's integer cast refuses an explicit plus sign ("+0"), which the pattern allows.
    digits = pc.replace_substring_regex(digits, r"^\+", "")
    return _np(digits.cast(pa.int64())), ok


def _parse_floats(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    ok = _bools(pc.match_substring_regex(values, _FLOAT_RE))
    clean = pc.fill_null(pc.if_else(pa.array(ok), values, "0"), "0")
    return _np(clean.cast(pa.float64())), ok


_FLOAT_BYTES = strbytes.byte_set("0123456789.")
_HEX_BYTES = strbytes.byte_set("0123456789abcdefABCDEF")


def _gated(values: pa.Array, gate: np.ndarray, fast, exact) -> tuple[np.ndarray, ...]:
    """``(values, ok)`` by ``fast`` for the rows ``gate`` picks (values that certainly
    pass the exact check, read as it reads them) and by ``exact`` for the other non-null
    rows; null rows give ``(0, False)``, as in the exact path. ``fast`` may raise
    :class:`pa.ArrowInvalid` to send every row the exact way."""
    valid = strbytes.valid_mask(values)
    rest = valid & ~gate
    try:
        if not rest.any() and gate.all():
            return fast(values)
        got = fast(values.filter(pa.array(gate))) if gate.any() else None
    except pa.ArrowInvalid:
        return exact(values)
    n = len(values)
    out = None
    if got is not None:
        out = tuple(np.zeros(n, dtype=a.dtype) for a in got)
        for o, a in zip(out, got, strict=True):
            o[gate] = a
    if rest.any():
        more = exact(values.filter(pa.array(rest)))
        if out is None:
            out = tuple(np.zeros(n, dtype=a.dtype) for a in more)
        for o, a in zip(out, more, strict=True):
            o[rest] = a
    return out if out is not None else exact(values)


def _plain_ints(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Values of 1 to 18 decimal digits (:data:`_INT_RE` reads them so)."""
    return _np(pc.fill_null(values.cast(pa.int64()), 0)), np.ones(len(values), dtype=bool)


def _plain_floats(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Values of digits and dots that Arrow reads as numbers: one dot at most and a
    digit, so :data:`_FLOAT_RE` matches them; Arrow raises on the others."""
    return _np(pc.fill_null(values.cast(pa.float64()), 0.0)), np.ones(len(values), dtype=bool)


def _text_ints(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    gate = _bools(pc.ascii_is_decimal(values)) & (_np(pc.binary_length(values)) <= 18)
    return _gated(values, gate, _plain_ints, lambda v: _per_value(v, _parse_ints))


def _text_floats(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    gate = strbytes.all_bytes_in(values, _FLOAT_BYTES)
    return _gated(values, gate, _plain_floats, lambda v: _per_value(v, _parse_floats))


class _Chunk:
    """One chunk of raw columns being validated; collects masks of bad rows."""

    def __init__(self, raw: dict[str, pa.Array], n: int) -> None:
        self.raw = raw
        self.n = n
        self.bad: dict[str, np.ndarray] = {}
        self.text_cache: dict[str, pa.Array] = {}

    def mark(self, role: str, mask: np.ndarray) -> None:
        if role in self.bad:
            self.bad[role] |= mask
        else:
            self.bad[role] = mask.copy()

    def text(self, role: str) -> pa.Array:
        """The column as trimmed UTF-8 strings, empty -> null; bad UTF-8 marked."""
        if role in self.text_cache:
            return self.text_cache[role]
        arr = self.raw[role]
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        typ = arr.type
        if pa.types.is_dictionary(typ):
            arr = arr.cast(typ.value_type)
            typ = arr.type
        if pa.types.is_binary(typ) and strbytes.is_ascii(arr):  # valid UTF-8 as it is
            arr = pa.Array.from_buffers(pa.string(), len(arr), arr.buffers(), offset=arr.offset)
        elif pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
            try:
                arr = arr.cast(pa.string())
            except pa.ArrowInvalid:
                values, bad = [], np.zeros(len(arr), dtype=bool)
                for i, v in enumerate(arr.to_pylist()):
                    try:
                        values.append(None if v is None else v.decode("utf-8"))
                    except UnicodeDecodeError:
                        values.append(None)
                        bad[i] = True
                self.mark("encoding:" + role, bad)
                arr = pa.array(values, pa.string())
        elif pa.types.is_null(typ):
            arr = pa.nulls(len(arr), pa.string())
        elif not pa.types.is_string(typ):
            arr = arr.cast(pa.string())
        if strbytes.edge_may_be_space(arr):
            arr = pc.utf8_trim_whitespace(arr)
        offsets, _ = strbytes.parts(arr)
        empty = (np.diff(offsets) == 0) & strbytes.valid_mask(arr)
        if empty.any():
            if arr.offset == 0:  # the same strings, empty ones masked as null
                keep = pa.array(strbytes.valid_mask(arr) & ~empty)
                arr = pa.Array.from_buffers(pa.string(), len(arr),
                                            [keep.buffers()[1], *arr.buffers()[1:]])
            else:
                arr = pc.if_else(pa.array(empty), pa.scalar(None, pa.string()), arr)
        self.text_cache[role] = arr
        return arr

    def present(self, role: str) -> np.ndarray:
        if role not in self.raw:
            return np.zeros(self.n, dtype=bool)
        typ = self.raw[role].type
        if pa.types.is_string(typ) or pa.types.is_binary(typ) or pa.types.is_dictionary(typ) \
                or pa.types.is_large_string(typ) or pa.types.is_large_binary(typ):
            return _np(self.text(role).is_valid())
        return _np(self.raw[role].is_valid())

    def is_text(self, role: str) -> bool:
        typ = self.raw[role].type
        return not (pa.types.is_integer(typ) or pa.types.is_floating(typ)
                    or pa.types.is_timestamp(typ))

    # -- typed readers: (values, present) with bad rows marked ------------------------

    def integer(self, role: str, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        n = self.n
        if role not in self.raw:
            return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
        present = self.present(role)
        if self.is_text(role):
            values, ok = _text_ints(self.text(role))
        else:
            arr = self.raw[role]
            if pa.types.is_floating(arr.type):
                f = _np(pc.fill_null(arr, 0.0)).astype(np.float64)
                ok = np.isfinite(f) & (f == np.round(f)) & (np.abs(f) < 9e18)
                values = np.where(ok, f, 0).astype(np.int64)
            else:
                ok = np.ones(n, dtype=bool)
                values = _np(pc.fill_null(arr.cast(pa.int64()), 0))
        ok &= (values >= lo) & (values <= hi)
        self.mark(role, present & ~ok)
        return values, present & ok

    def number(self, role: str) -> tuple[np.ndarray, np.ndarray]:
        n = self.n
        if role not in self.raw:
            return np.zeros(n), np.zeros(n, dtype=bool)
        present = self.present(role)
        if self.is_text(role):
            values, ok = _text_floats(self.text(role))
        else:
            # unsafe: an integer beyond 2**53 rounds to the nearest double, as Python's
            # float() of the same JSON number does (a safe cast raised ArrowInvalid)
            values = _np(pc.fill_null(self.raw[role].cast(pa.float64(), safe=False), 0.0))
            ok = np.ones(n, dtype=bool)
        ok &= np.isfinite(values) & (values >= 0)
        self.mark(role, present & ~ok)
        return np.where(ok, values, 0.0), present & ok

    def string(self, role: str, pattern: str, fast: tuple | None = None
               ) -> tuple[pa.Array, np.ndarray]:
        """``fast``: ``(bytes, min length, max length)`` that certainly match ``pattern``."""
        if role not in self.raw:
            return pa.nulls(self.n, pa.string()), np.zeros(self.n, dtype=bool)
        text = self.text(role)
        present = self.present(role)

        def exact(v):
            return _per_value(v, lambda w: (_bools(pc.match_substring_regex(w, pattern)),))

        if fast is None:
            (ok,) = exact(text)
        else:
            gate = strbytes.all_bytes_in(text, *fast)
            (ok,) = _gated(text, gate, lambda v: (np.ones(len(v), dtype=bool),), exact)
        self.mark(role, present & ~ok)
        return text, present & ok

    def time(self, role: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(ns, ok, present)`` of a time column (``time_ns`` or ``time_s``)."""
        n = self.n
        if role not in self.raw:
            return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool), np.zeros(n, bool)
        arr = self.raw[role]
        present = self.present(role)
        if pa.types.is_timestamp(arr.type):
            values = _np(pc.fill_null(arr.cast(pa.timestamp("ns")).cast(pa.int64()), 0))
            ok = present.copy()
        elif role == "time_ns":
            values, ok = self.integer("time_ns", MIN_NS, MAX_NS - 1)
        elif pa.types.is_integer(arr.type):
            secs = _np(pc.fill_null(arr.cast(pa.int64()), 0))
            ok = (secs >= MIN_NS // NS) & (secs < MAX_NS // NS)
            values = np.where(ok, secs, 0) * NS
        elif pa.types.is_floating(arr.type):
            secs = _np(pc.fill_null(arr.cast(pa.float64()), 0.0))
            ok = np.isfinite(secs) & (secs >= MIN_NS / NS) & (secs < MAX_NS / NS)
            values = np.round(np.where(ok, secs, 0.0) * 1e6).astype(np.int64) * 1000
        else:
            values, ok = parse_time_array(self.text(role))
        ok &= present & (values >= MIN_NS) & (values < MAX_NS)
        self.bad[role] = present & ~ok
        return np.where(ok, values, 0), ok, present


def normalize(raw: dict[str, pa.Array], labels: dict[str, str], lines: np.ndarray,
              problems: Problems, *, blank_rows_ignored: bool = False) -> dict | None:
    """Validate one chunk of raw columns (role -> array); returns the valid rows' columns.

    ``labels`` names each role's source column for messages; ``lines`` gives each row's
    location (1-based line or row number). Invalid rows go to ``problems``; with
    ``blank_rows_ignored`` rows whose every field is empty are counted as ignored blank
    lines, otherwise they are invalid (no time). Returns None when no row is valid.
    """
    n = len(lines)
    if n == 0:
        return None
    ch = _Chunk(raw, n)
    any_present = np.zeros(n, dtype=bool)
    for role in raw:
        any_present |= ch.present(role)
    blank = ~any_present if blank_rows_ignored else np.zeros(n, dtype=bool)
    problems.ignore("blank lines", int(blank.sum()))

    # a row takes time_ns when it has one, else timestamp/time (JSONL rows may differ)
    ns_a, _, has_a = ch.time("time_ns")
    ns_b, _, has_b = ch.time("time_s")
    time_ns = np.where(has_a, ns_a, ns_b)
    bad_a, bad_b = ch.bad.pop("time_ns", None), ch.bad.pop("time_s", None)
    missing_time = ~has_a & ~has_b
    time_label = labels.get("time_ns", labels.get("time_s", "time_ns"))

    api_text, _ = ch.string("api", r"(?i)^(rpc|search|streams)$")
    method, _ = ch.string("method", _PRINTABLE_RE % 200)
    key_text, _ = ch.string("key", _KEY_RE)
    if "key" in raw:
        ch.bad["key"] &= ~_bools(pc.equal(key_text, NO_KEY))  # the no-key marker is fine
    region, _ = ch.string("region", _PRINTABLE_RE % 100)
    items, items_ok = ch.integer("items", 0, INT32_MAX)
    profiles, profiles_ok = ch.string("profiles", _PROFILES_RE)
    gas, gas_ok = ch.integer("gas_used", 0, 10**18)
    cu, cu_ok = ch.number("cu")
    status, status_ok = ch.integer("status", -(2**31), INT32_MAX)
    latency, latency_ok = ch.number("latency_ms")
    retry_after, retry_after_ok = ch.number("retry_after_s")
    body_hash, _ = ch.string("body_hash", _HASH_RE, fast=(_HEX_BYTES, 16, 64))

    n_profiles = np.zeros(n, dtype=np.int64)
    if profiles_ok.any():
        n_profiles = _np(pc.fill_null(pc.count_substring(profiles, ","), 0)) + 1
    both = items_ok & profiles_ok
    count_bad = both & (n_profiles != items)
    items = np.where(profiles_ok & ~items_ok & ~ch.present("items"), n_profiles, items)
    items_ok = items_ok | (profiles_ok & ~ch.present("items"))

    # first failing field per row, in canonical order
    checks: list[tuple[str, str, str, np.ndarray]] = []
    for role in raw:
        enc = ch.bad.get("encoding:" + role)
        if enc is not None:
            checks.append(("encoding", labels[role], MESSAGES["encoding"], enc))
    checks.append(("time", time_label, MESSAGES["missing"], missing_time))
    if bad_a is not None:
        checks.append(("time", labels["time_ns"], MESSAGES["time_ns"], bad_a))
    if bad_b is not None:
        checks.append(("time", labels["time_s"], MESSAGES["time_s"], bad_b & ~has_a))
    checks.append(("api", labels["api"], MESSAGES["missing"], ~ch.present("api")))
    checks.append(("method", labels["method"], MESSAGES["missing"], ~ch.present("method")))
    for role in ("api", "method", "key", "region", "items", "profiles"):
        if role in ch.bad:
            checks.append((role, labels[role], MESSAGES[role], ch.bad[role]))
    if count_bad.any():
        checks.append(("profiles", labels["profiles"], MESSAGES["profiles_count"], count_bad))
    for role in ("gas_used", "cu", "status", "latency_ms", "retry_after_s", "body_hash"):
        if role in ch.bad:
            checks.append((role, labels[role], MESSAGES[role], ch.bad[role]))

    invalid = np.zeros(n, dtype=bool)
    for reason, label, message, mask in checks:
        fresh = mask & ~invalid & ~blank
        if fresh.any():
            problems.add_many(reason, lines[fresh], label, message)
            invalid |= fresh
    keep = ~invalid & ~blank
    if not keep.any():
        return None
    whole = bool(keep.all())  # the common case: no row to drop, nothing to copy
    sel = pa.array(keep)

    def kept(values):
        return values if whole else (values.filter(sel) if isinstance(values, pa.Array)
                                     else values[keep])

    def opt(values: np.ndarray, ok: np.ndarray, typ: pa.DataType) -> pa.Array:
        return pa.array(kept(values), typ, mask=~kept(ok))

    hashes = None
    if "body_hash" in raw:
        present = strbytes.valid_mask(body_hash)
        if not (strbytes.all_bytes_in(body_hash, strbytes.LOWER_HEX, 16, 16)
                == present).all():  # else every hash is already 16 lower-case digits
            body_hash = pc.utf8_lower(pc.utf8_slice_codeunits(body_hash, 0, 16))
        hashes = kept(body_hash)
    return {
        "time_ns": kept(time_ns),
        "api": kept(pc.utf8_lower(api_text)),
        "method": kept(method),
        "key": kept(key_text) if "key" in raw else None,
        "region": kept(region) if "region" in raw else None,
        "items": opt(items, items_ok, pa.int32()),
        "profiles": kept(profiles) if "profiles" in raw else None,
        "gas_used": opt(gas, gas_ok, pa.int64()),
        "cu": opt(cu, cu_ok, pa.float64()),
        "status": opt(status, status_ok, pa.int32()),
        "latency_ms": opt(latency, latency_ok, pa.float64()),
        "retry_after_s": opt(retry_after, retry_after_ok, pa.float64()),
        "body_hash": hashes,
    }
