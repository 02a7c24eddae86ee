"""Where a scenario holds API keys, and those values shown only as their pseudonyms.

The key paths of the scenario format (found from its models): ``account.keys``,
``accounts[i].keys``, ``sources[i].key`` and ``streams[i].key``. A value given for one of
them -- or for a table or list holding one, e.g. ``--set 'account={keys=["..."]}'`` --
by ``--set``, ``--vary`` or a ``[[variants]]`` table is written and printed with each key
replaced by :func:`sim.core.pseudonyms.pseudonym` (``key-`` + 16 hex digits). Pseudonyms
are idempotent, so an override written this way and read back (``capsim check`` replays
a baseline's) names the same keys as the one the user gave, as far as the simulation can
tell: keys only ever meet each other, compared for equality.
"""

from __future__ import annotations

import json
import tomllib
from typing import Any

from ..core.pseudonyms import pseudonym
from .loader import parse_path

KEY_FIELDS: frozenset[tuple[str, ...]] = frozenset({
    ("account", "keys"), ("accounts", "keys"), ("sources", "key"), ("streams", "key")})
"""Key paths of the scenario format (list indices left out) whose values are API keys."""


def _names(path: tuple[str | int, ...]) -> tuple[str, ...]:
    return tuple(p for p in path if isinstance(p, str))


def _mask(names: tuple[str, ...], value: Any) -> Any:
    if names in KEY_FIELDS:
        if isinstance(value, str):
            return pseudonym(value)
        if isinstance(value, list | tuple):
            return [pseudonym(v) if isinstance(v, str) else v for v in value]
        return value
    if not any(k[:len(names)] == names for k in KEY_FIELDS):
        return value
    if isinstance(value, dict):
        return {k: _mask((*names, str(k)), v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_mask(names, v) for v in value]
    return value


def holds_key(path: str | tuple[str | int, ...]) -> bool:
    """Whether a value at ``path`` is, or may hold, an API key."""
    names = _names(parse_path(path) if isinstance(path, str) else path)
    return any(k[:len(names)] == names for k in KEY_FIELDS) if names else False


def masked_value(path: str | tuple[str | int, ...], value: Any) -> Any:
    """``value`` as it may be shown when set at ``path``: keys replaced by pseudonyms."""
    return _mask(_names(parse_path(path) if isinstance(path, str) else path), value)


def toml_text(value: Any) -> str:
    """A value written as TOML (strings quoted)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_text(v)}"
                               for k, v in value.items()) + "}"
    return json.dumps(str(value))


def masked_text(path: str | tuple[str | int, ...], text: str) -> str:
    """A value as written (TOML, else a bare string) at ``path``, keys as pseudonyms;
    ``text`` itself when it holds no key."""
    if not holds_key(path):
        return text
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):  # the loader words a deep value
        value = text
    masked = masked_value(path, value)
    return text if masked == value else toml_text(masked)


def masked_override(item: str) -> str:
    """A ``KEY.PATH=VALUE`` override (``--set``, ``[[variants]]``) as it may be written
    or printed: a key's value replaced by its pseudonym, anything else unchanged."""
    if "=" not in item:
        return item
    path_text, value_text = item.split("=", 1)
    path = path_text.strip()
    if not holds_key(path):
        return item
    return f"{path}={masked_text(path, value_text.strip())}"
