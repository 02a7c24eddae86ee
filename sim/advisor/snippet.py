"""A change's ``--set`` overrides as a TOML snippet to paste into the scenario file.

Each override is shown as the whole key it changes, under the table that holds it:
``clients.app.retry.max_attempts=2`` becomes ``[clients.app]`` / ``retry = { ... }``
(the retry table as it is after the change), so the line replaces the file's own. An
element of an array of tables (``sources[2]``) is named by a comment, since TOML has no
header for "the third ``[[sources]]``".
"""

from __future__ import annotations

import copy
import tomllib

from ..config.key_paths import toml_text
from ..config.loader import apply_override, parse_path

_ARRAYS = ("sources", "streams", "accounts", "regions", "custom_tiers")


def toml_snippet(scenario_text: str, overrides: tuple[str, ...] | list[str]) -> str:
    """The TOML lines that make ``scenario_text`` what ``overrides`` make it."""
    raw = tomllib.loads(scenario_text)
    after = copy.deepcopy(raw)
    for item in overrides:
        apply_override(after, item)
    blocks: dict[str, list[str]] = {}
    for item in overrides:
        path = parse_path(item.split("=", 1)[0].strip())
        header, key_path = _split(path, after)
        value = _get(after, key_path)
        line = f"{_key(key_path[-1])} = {_value(value)}"
        lines = blocks.setdefault(header, [])
        if line not in lines:
            lines.append(line)
    out = []
    for header, lines in blocks.items():
        if header:
            out.append(header)
        out.extend(lines)
    return "\n".join(out)


def _split(path: tuple, after: dict) -> tuple[str, tuple]:
    """``(header, path of the key to show)``: the table holding it and the key just below."""
    if len(path) == 1:
        return "", path
    if path[0] in _ARRAYS and isinstance(path[1], int):
        element = after[path[0]][path[1]]
        name = element.get("name") if isinstance(element, dict) else None
        label = f' name = {toml_text(name)}' if name else ""
        header = f"[[{path[0]}]]  # {path[0]}[{path[1]}]{label}"
        return header, path[:3]
    table = path[:2] if path[0] in ("clients", "methods") else path[:1]
    header = "[" + ".".join(_key(p) for p in table) + "]"
    return header, path[:len(table) + 1]


def _value(value) -> str:
    """``value`` as TOML, inline tables with bare keys where TOML allows them."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return toml_text(value)


def _get(node, path):
    for part in path:
        node = node[part]
    return node


def _key(part) -> str:
    text = str(part)
    return text if text.replace("_", "").replace("-", "").isalnum() else f'"{text}"'
