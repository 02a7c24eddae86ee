"""Keeping API keys out of canonical traces.

During an import every raw key found in a key source (a key column, the ``X-Api-Key``
header in any letter case, an ``Authorization: Bearer`` token or ``Basic`` credentials,
a ``apiKey`` / ``api_key`` / ``api-key`` / ``key`` / ``access_token`` / ``x-api-key`` /
``token`` query parameter in any letter case, URL userinfo, a credential path segment
(``/v1/lb/<key>``, ``/v2/<key>``, ``/v3/<32 hex>``, any long opaque token), a ``key=``
log token) is added to a :class:`KeyRegistry`, held in memory only, and so is every
other opaque token seen in a URL (:func:`is_opaque_token`). The key column stores
:func:`sim.core.pseudonyms.pseudonym` of the key; every kept text field (method, region,
profiles, the source file name) goes through :meth:`KeyRegistry.redact`, which replaces

* every occurrence of a registered key (substring match, longest key first), and
* every token with the *shape* of a registered key (same character class - hex,
  alphanumeric or URL-safe - and same length, for keys of at least 20 characters), so a
  key that never appeared in a key source but looks like the account's keys is caught
  too. This may over-redact, for example a 64-hex transaction hash in a path when the
  keys are 64 hex digits; that is the safe side.

by its pseudonym. Existing pseudonyms (``key-`` + 16 hex) are left alone, which makes
redaction idempotent. Keys shorter than :data:`MIN_KEY_LEN` characters, or with spaces or
control characters, are rejected as invalid rows: they cannot be told apart from
ordinary text.

After writing, :func:`scan_trace` reads the whole output back (decoded column values,
file metadata, and the raw file bytes) and fails if any registered key, or any token
with a registered shape, is still there. Messages name the column, never the value.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import parse_qsl, unquote, urlsplit

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..core.errors import CapsimError
from ..core.pseudonyms import PSEUDONYM_RE, pseudonym
from . import strbytes
from .schema import NO_KEY, TEXT_COLUMNS

MIN_KEY_LEN = 8
MAX_KEY_LEN = 512
SHAPE_MIN_LEN = 20
QUERY_KEY_NAMES = frozenset({"apikey", "api_key", "api-key", "key", "access_token",
                             "x-api-key", "token"})
KEY_HEADER = "x-api-key"

_PSEUDO = r"key-[0-9a-f]{16}(?![0-9a-fA-F])"
_CLASSES = (("hex", "0-9a-fA-F"), ("alnum", "A-Za-z0-9"), ("urlsafe", "A-Za-z0-9_\\-"))
_KEY_CHARS_RE = re.compile(r"[\x21-\x7e]+")


def key_problem(raw: str) -> str | None:
    """Why ``raw`` is not acceptable as an API key (None when it is)."""
    if not _KEY_CHARS_RE.fullmatch(raw):
        return "expected an API key of printable ASCII characters without spaces"
    if not MIN_KEY_LEN <= len(raw) <= MAX_KEY_LEN:
        return f"expected an API key of {MIN_KEY_LEN} to {MAX_KEY_LEN} characters"
    return None


def is_redacted(value: str) -> bool:
    """Whether ``value`` is already a pseudonym or the no-key marker."""
    return value == NO_KEY or bool(PSEUDONYM_RE.match(value))


def key_shape(key: str) -> tuple[str, int, bool] | None:
    """``(character class, length, has a digit)`` of a key long enough to be matched by
    shape. A key with a digit only matches tokens with a digit, so that method names
    such as ``eth_getTransactionReceipt`` are not taken for keys of their length."""
    if len(key) < SHAPE_MIN_LEN:
        return None
    for name, chars in _CLASSES:
        if re.fullmatch(f"[{chars}]+", key):
            return name, len(key), any(c.isdigit() for c in key)
    return None


def _shape_pattern(shape: tuple[str, int, bool]) -> str:
    chars = dict(_CLASSES)[shape[0]]
    n = shape[1]
    digit = f"(?=[{chars}]{{0,{n - 1}}}[0-9])" if shape[2] else ""
    return f"(?<![{chars}]){digit}[{chars}]{{{n}}}(?![{chars}])"


class KeyRegistry:
    """The raw keys seen during one import and the redactor they imply.

    Never serialised, never logged; :func:`len` tells how many distinct keys were seen.
    """

    def __init__(self, keys: Iterable[str] = ()) -> None:
        self._keys: set[str] = set()
        self._counted: set[str] = set()
        self._shapes: set[tuple[str, int, bool]] = set()
        self._regex: list[re.Pattern[str]] | None = None
        self.generation = 0  # grows with every newly registered string
        for key in keys:
            self.add(key)

    def add(self, key: str, *, counted: bool = True) -> None:
        """Register ``key`` (pseudonyms and the no-key marker are ignored).

        ``counted=False`` registers a credential-like string that is not a row's key (a
        Basic-auth token, an opaque URL token): it is redacted and scanned for like a
        key, but not counted in :func:`len`.
        """
        if not key or is_redacted(key):
            return
        if counted:
            self._counted.add(key)
        if key in self._keys:
            return
        self._keys.add(key)
        self.generation += 1
        shape = key_shape(key)
        if shape is not None:
            self._shapes.add(shape)
        self._regex = None

    def __len__(self) -> int:
        return len(self._counted)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    @property
    def keys(self) -> frozenset[str]:
        """Every registered string, keys and other credentials (for the scan only)."""
        return frozenset(self._keys)

    def _patterns(self) -> list[re.Pattern[str]]:
        # Literal keys first, then key-shaped tokens on the result: replacing a key can
        # leave a neighbouring key-shaped run newly bounded, and the second pass takes it,
        # which is what makes redaction idempotent. Pseudonyms are matched (and kept)
        # first at every position so that their hex digits are never taken for a key.
        if self._regex is None:
            literals = "|".join(re.escape(k) for k in sorted(self._keys, key=len, reverse=True))
            shapes = "|".join(_shape_pattern(s) for s in sorted(self._shapes))
            self._regex = [re.compile(f"(?P<p>{_PSEUDO})|{alt}")
                           for alt in (literals, shapes) if alt]
        return self._regex

    def redact(self, text: str) -> str:
        """``text`` with every registered key and key-shaped token replaced by a pseudonym."""
        if not self._keys:
            return text
        for pattern in self._patterns():
            text = pattern.sub(lambda m: m[0] if m["p"] else pseudonym(m[0]), text)
        return text

    def leaks(self, text: str) -> bool:
        """Whether ``text`` still holds a registered key or a key-shaped token."""
        if not self._keys:
            return False
        return any(not m["p"] for pattern in self._patterns()
                   for m in pattern.finditer(text))


@lru_cache(maxsize=32)
def _registry_for(keys: tuple[str, ...]) -> KeyRegistry:
    return KeyRegistry(keys)


def redact_text(text: str, keys: Iterable[str]) -> str:
    """Replace every occurrence of any of ``keys`` (and tokens of their shape) in ``text``.

    Idempotent: ``redact_text(redact_text(t, k), k) == redact_text(t, k)``.
    """
    return _registry_for(tuple(sorted(set(keys)))).redact(text)


OPAQUE_TOKEN_RE = re.compile(r"[A-Za-z0-9_\-]{20,512}")
_LB_KEY_RE = re.compile(r"[A-Za-z0-9_\-]{8,512}")
_V2_KEY_RE = re.compile(r"[A-Za-z0-9_\-]{16,512}")
_V3_KEY_RE = re.compile(r"[0-9a-fA-F]{32}")


_CHAIN_DATA_RE = re.compile(r"0x[0-9a-fA-F]*")


def is_opaque_token(text: str) -> bool:
    """A long opaque token: 20+ URL-safe characters with at least one digit and one
    letter (what API keys, project ids and access tokens look like; words do not).
    ``0x``-prefixed hex (addresses, hashes: public chain data) is not one."""
    return bool(OPAQUE_TOKEN_RE.fullmatch(text)) and any(c.isdigit() for c in text) \
        and any(c.isalpha() for c in text) and not _CHAIN_DATA_RE.fullmatch(text)


@dataclass(frozen=True)
class UrlParts:
    """A URL taken apart for import: where it went and every credential it carries.

    ``path`` is the path with every credential segment replaced by ``{key}``;
    ``keys`` are the credentials in the order a row's key is taken from them (userinfo,
    key-named query parameters, key path segments); ``secrets`` are every other opaque
    token in the path or query (redacted and scanned for, not used as a key).
    """

    scheme: str
    host: str
    path: str
    keys: tuple[str, ...]
    secrets: tuple[str, ...]
    credential_segments: int


def _path_keys(segments: list[str]) -> set[int]:
    """Indexes of path segments that hold a credential (documented provider forms:
    ``/v1/lb/<key>``, ``/v2/<key>``, ``/v3/<32 hex>``; and any long opaque token)."""
    found = set()
    for i, seg in enumerate(segments):
        prev = segments[i - 1] if i else ""
        prev2 = segments[i - 2] if i > 1 else ""
        if is_opaque_token(seg) \
                or (prev == "lb" and prev2 == "v1" and _LB_KEY_RE.fullmatch(seg)) \
                or (prev == "v2" and i == 2 and _V2_KEY_RE.fullmatch(seg)) \
                or (prev == "v3" and i == 2 and _V3_KEY_RE.fullmatch(seg)):
            found.add(i)
    return found


@lru_cache(maxsize=1 << 14)
def parse_url(url: str) -> UrlParts:
    """Take ``url`` apart (see :class:`UrlParts`); ValueError when it is not a URL.

    Cached: a HAR file sends most entries to a few URLs, taken apart three times each."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    keys: list[str] = []
    secrets: list[str] = []
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    for cred in (password, user):
        if cred and not key_problem(cred):
            (secrets if keys else keys).append(cred)
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if not value:
            continue
        if name.lower() in QUERY_KEY_NAMES:
            keys.append(value)
        elif is_opaque_token(value):
            secrets.append(value)
    segments = (parts.path or "/").split("/")
    cred = _path_keys(segments)
    keys += [unquote(segments[i]) for i in sorted(cred)]
    path = "/".join("{key}" if i in cred else seg for i, seg in enumerate(segments))
    return UrlParts(parts.scheme.lower(), host, path or "/", tuple(keys), tuple(secrets),
                    len(cred))


def split_url(url: str) -> tuple[str, str, str, list[str]]:
    """``(scheme, host, path, keys)`` of a URL (:func:`parse_url`, credentials in the
    path replaced by ``{key}``)."""
    u = parse_url(url)
    return u.scheme, u.host, u.path, list(u.keys)


def authorization_credentials(value: str) -> tuple[str | None, tuple[str, ...]]:
    """``(key, other secrets)`` of an ``Authorization`` header value.

    ``Bearer <token>``: the token. ``Basic <base64 user:password>``: the password (the
    user when there is none); the base64 text and the user are secrets too.
    """
    scheme, _, token = value.strip().partition(" ")
    token = token.strip()
    if not token:
        return None, ()
    if scheme.lower() == "bearer":
        return token, ()
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(token, validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return None, (token,)
        user, _, password = decoded.partition(":")
        key = password or user or None
        return key, tuple(s for s in (token, user) if s and s != key)
    return None, ()


def bearer_token(value: str) -> str | None:
    """The key of an ``Authorization`` header value (``Bearer`` or ``Basic``)."""
    return authorization_credentials(value)[0]


class KeySurvived(CapsimError):
    """A raw key (or key-shaped token) was found in the written output."""



def _unique_strings(col) -> list[str]:
    """The distinct strings of a column: every dictionary entry of a dictionary column."""
    if isinstance(col, pa.ChunkedArray):
        out: dict[str, None] = {}
        for chunk in col.chunks:
            out.update(dict.fromkeys(_unique_strings(chunk)))
        return list(out)
    values = col.dictionary if hasattr(col, "dictionary") else pc.unique(col.drop_null())
    return [v for v in values.to_pylist() if v is not None]


def _check_text(columns, registry: KeyRegistry, label: str) -> None:
    for name in TEXT_COLUMNS:
        for value in _unique_strings(columns(name)):
            if registry.leaks(value):
                raise KeySurvived("an API key survived redaction", file=label, field=name)


def check_chunk(table: pa.Table, registry: KeyRegistry, *, label: str) -> None:
    """The column checks of :func:`scan_trace` on one canonical chunk as it goes to the
    writer: every ``key`` a pseudonym or ``(none)``, every ``body_hash`` 16 lower-case
    hex digits, no registered key or key-shaped token (as registered so far) in the
    text columns. :class:`KeySurvived` names the column."""
    for value in _unique_strings(table.column("key")):
        if not is_redacted(value):
            raise KeySurvived("a key value is not a pseudonym", file=label, field="key")
    for hashes in table.column("body_hash").chunks:
        hashes = hashes.drop_null()
        if len(hashes) and not strbytes.all_bytes_in(hashes, strbytes.LOWER_HEX, 16,
                                                     16).all():
            raise KeySurvived("a body_hash is not 16 hex digits", file=label,
                              field="body_hash")
    _check_text(table.column, registry, label)


def _check_metadata(pf: pq.ParquetFile, registry: KeyRegistry, label: str) -> None:
    for k, v in (pf.metadata.metadata or {}).items():
        if k.startswith(b"ARROW:"):
            continue  # base64 of the schema; the raw-bytes scan still covers it
        if registry.leaks(k.decode("utf-8", "replace")) or registry.leaks(
                v.decode("utf-8", "replace")):
            raise KeySurvived("an API key survived redaction in the file metadata",
                              file=label, field="metadata")


def scan_trace(path: str, registry: KeyRegistry, *, label: str) -> None:
    """Fail with :class:`KeySurvived` when ``path`` still holds a key in any form.

    Checks: every ``key`` value is a pseudonym or ``(none)``; every ``body_hash`` is 16
    hex digits; ``method``/``region``/``profiles`` values and the file metadata hold no
    registered key or key-shaped token; the raw file bytes hold no registered key.
    ``label`` names the file in the message (the final output name, not the temp file).
    """
    pf = pq.ParquetFile(path)
    try:
        _check_metadata(pf, registry, label)
        for batch in pf.iter_batches(columns=["key", "body_hash", *TEXT_COLUMNS],
                                     batch_size=1 << 17):
            check_chunk(pa.Table.from_batches([batch]), registry, label=label)
    finally:
        pf.close()
    _scan_bytes(path, registry, label)


def finish_scan(path: str, registry: KeyRegistry, *, label: str, text_rows: int) -> None:
    """:func:`scan_trace` of a file whose chunks passed :func:`check_chunk` as they were
    written: the file metadata, the text columns of the first ``text_rows`` rows (those
    checked before the registry last grew) against every key now known, and the raw
    bytes."""
    pf = pq.ParquetFile(path)
    try:
        _check_metadata(pf, registry, label)
        seen = 0
        if text_rows > 0:
            for batch in pf.iter_batches(columns=list(TEXT_COLUMNS), batch_size=1 << 17):
                _check_text(batch.column, registry, label)
                seen += batch.num_rows
                if seen >= text_rows:
                    break
    finally:
        pf.close()
    _scan_bytes(path, registry, label)


_CLASS_BYTES = {name: np.array([bool(re.fullmatch(f"[{chars}]", chr(b))) for b in range(256)])
                for name, chars in _CLASSES}


def _long_runs(data: bytes, table: np.ndarray, min_len: int) -> list[bytes]:
    """The maximal runs of bytes in ``table`` at least ``min_len`` long."""
    inside = table[np.frombuffer(data, dtype=np.uint8)].view(np.int8)
    edges = np.diff(inside, prepend=np.int8(0), append=np.int8(0))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    long = ends - starts >= min_len
    return [data[a:b] for a, b in zip(starts[long].tolist(), ends[long].tolist(),
                                     strict=True)]


def _scan_bytes(path: str, registry: KeyRegistry, label: str) -> None:
    """Search the raw file for every registered key.

    Keys of a known character class are found through runs of that class (one pass per
    class over the bytes, then set look-ups of every key-length window of each run), so the
    cost does not grow with the number of keys; other keys are searched one by one.
    """
    keys = {k.encode("utf-8") for k in registry.keys}
    if not keys:
        return
    by_class: dict[str, set[bytes]] = {}
    loose: list[bytes] = []
    for key in keys:
        cls = next((name for name, chars in _CLASSES
                    if re.fullmatch(f"[{chars}]+".encode(), key)), None)
        if cls is None:
            loose.append(key)
        else:
            by_class.setdefault(cls, set()).add(key)
    runs = [(_CLASS_BYTES[c], min(map(len, ks)), ks, sorted({len(k) for k in ks}))
            for c, ks in by_class.items()]
    overlap = max(map(len, keys)) - 1
    tail = b""
    with open(path, "rb") as fh:
        while True:
            block = fh.read(16 << 20)
            if not block:
                return
            data = tail + block
            found = any(k in data for k in loose)
            for table, min_len, ks, lengths in runs:
                for run in _long_runs(data, table, min_len):
                    if any(run[i:i + n] in ks for n in lengths
                           for i in range(len(run) - n + 1)):
                        found = True
                        break
            if found:
                raise KeySurvived("an API key survived redaction in the raw file bytes",
                                  file=label)
            tail = data[-overlap:] if overlap else b""
