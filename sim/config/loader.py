"""Loading a scenario file: TOML -> ``--set`` overrides -> validated, frozen :class:`Scenario`.

(:mod:`sim.config.resolved` then resolves its tiers and pricing.)

Every problem becomes a :class:`~sim.core.errors.CapsimError` naming the file, the line,
the key path (``sources[1].arrival.rate``) and what was expected; unknown keys get a
"did you mean". Values are never echoed (a key field may hold a real API key).
"""

from __future__ import annotations

import re
import tomllib
import types
import typing
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..core.errors import CapsimError
from .scenario import Scenario


def builtin_scenario_text() -> str:
    """The default scenario shipped inside the package."""
    return resources.files("sim").joinpath("data/default.toml").read_text("utf-8")


def read(path: str | Path | None = None, overrides: list[str] = ()
         ) -> tuple[dict[str, Any], Where]:
    """Read a scenario's TOML (``None``: the built-in default) and apply ``--set``
    overrides: the raw table, and where each key's value came from (for errors)."""
    if path is None:
        text, label = builtin_scenario_text(), "<built-in default scenario>"
    else:
        label = str(path)
        try:
            text = Path(path).read_bytes().decode("utf-8")
        except FileNotFoundError:
            raise CapsimError("no such file", file=label) from None
        except UnicodeDecodeError as err:
            raise CapsimError(f"expected UTF-8 text (bad byte at offset {err.start})",
                              file=label) from None
        except OSError as err:
            raise CapsimError(f"cannot read: {err.strerror}", file=label) from None
    try:
        raw = parse_toml(text, file=label)
    except tomllib.TOMLDecodeError as err:
        match = re.search(r"\(at line (\d+), column \d+\)", str(err))
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(err))
        raise CapsimError(f"not valid TOML: {msg}", file=label,
                          line=int(match.group(1)) if match else None) from None
    overridden = [apply_override(raw, item) for item in overrides]
    return raw, Where(label, key_lines(text), tuple(overridden))


MAX_NESTING = 100
"""Arrays and inline tables nested deeper than this are refused (a scenario needs a few
levels; Python's TOML parser recurses and would fail with a RecursionError near 500)."""


def parse_toml(text: str, *, file: str | None = None, line: int | None = None,
               field: str | None = None) -> dict[str, Any]:
    """``tomllib.loads(text)``, with nesting past :data:`MAX_NESTING` a CapsimError naming
    ``file`` / ``field`` (a TOMLDecodeError passes through for the caller to word)."""
    too_deep = CapsimError(f"nested too deeply (arrays or inline tables more than "
                           f"{MAX_NESTING} levels deep); expected a value nested a few levels",
                           file=file, line=line, field=field)
    try:
        value = tomllib.loads(text)
    except RecursionError:
        raise too_deep from None
    return _checked_depth(value, too_deep)


def _checked_depth(value: Any, too_deep: CapsimError) -> Any:
    stack = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            raise too_deep
        children = node.values() if isinstance(node, dict) else node if isinstance(
            node, list) else ()
        stack.extend((c, depth + 1) for c in children)
    return value


def validate_scenario(raw: dict[str, Any], where: Where) -> Scenario:
    """Validate a raw table into a frozen :class:`Scenario` (one clear error if not).

    ``where.overridden`` lists the key paths set by ``--set``: an error in one of them
    names the ``--set`` option and the key path, not the file's line.
    """
    try:
        return Scenario.model_validate(raw)
    except ValidationError as err:
        raise render_error(err, raw, where, Scenario) from None


# -- --set overrides ------------------------------------------------------------------

def apply_override(raw: dict[str, Any], item: str) -> tuple[str | int, ...]:
    """Apply ``key.path=value`` (value parsed as TOML, else taken as a string) to ``raw``.

    Returns the key path. Messages name the ``--set`` option and the key path, never the
    value (it may be an API key).
    """
    if "=" not in item:
        shown = _known_prefix(item)
        raise CapsimError("expected KEY.PATH=VALUE ('=' missing; the rest is not shown, it "
                          "may hold a value)", field=f"--set {shown}" if shown else "--set")
    path_text, value_text = item.split("=", 1)
    path = parse_path(path_text.strip())
    if not path or not _PATH_RE.fullmatch(path_text.strip()):
        raise CapsimError("expected KEY.PATH=VALUE with a key path such as "
                          "sources[0].arrival.rate (the text is not shown)", field="--set")
    path_text = _fmt(path)
    try:
        value = parse_toml(f"v = {value_text}", field=f"--set {path_text}")["v"]
    except tomllib.TOMLDecodeError:
        value = value_text
    node: Any = raw
    for i, part in enumerate(path[:-1]):
        nxt = path[i + 1]
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                raise CapsimError("no such list element", field=f"--set {path_text}")
            node = node[part]
        else:
            if not isinstance(node, dict):
                raise CapsimError("not a table", field=f"--set {path_text}")
            node = node.setdefault(part, [] if isinstance(nxt, int) else {})
    last = path[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or last >= len(node):
            raise CapsimError("no such list element", field=f"--set {path_text}")
        node[last] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise CapsimError("not a table", field=f"--set {path_text}")
    return path


_PATH_RE = re.compile(r'(?:[A-Za-z0-9_-]+|"[^"]*")(?:\[\d+\]|\.(?:[A-Za-z0-9_-]+|"[^"]*"))*')


def _known_prefix(item: str) -> str | None:
    """The key path at the start of a malformed ``--set`` item, when it is a path of the
    scenario format followed by something else (so that it cannot be the value)."""
    match = _PATH_RE.match(item.strip())
    if not match or match.end() == len(item.strip()):
        return None
    path = parse_path(match.group(0))
    tp: Any = Scenario
    for seg in path:
        tp = _step(tp, seg, None)
        if tp is None:
            return None
    return _fmt(path)


def parse_path(text: str) -> tuple[str | int, ...]:
    """``sources[0].arrival.rate`` or ``sources.0.arrival.rate`` -> path tuple."""
    parts: list[str | int] = []
    for token in re.findall(r'"[^"]*"|[^.\[\]]+|\[\d+\]', text):
        if token.startswith("["):
            parts.append(int(token[1:-1]))
        elif token.startswith('"'):
            parts.append(token[1:-1])
        else:
            parts.append(int(token) if token.isdigit() else token)
    return tuple(parts)


# -- error rendering ------------------------------------------------------------------

@dataclass(frozen=True)
class Where:
    """Where a key path's value came from: the file (with its line) or a ``--set``."""

    label: str
    lines: dict[tuple, int]
    overridden: tuple[tuple, ...]

    def override_of(self, path: tuple) -> tuple | None:
        """The ``--set`` path whose value holds ``path`` (the path itself or a parent)."""
        for set_path in reversed(self.overridden):  # the last --set of a key wins
            if set_path and path[:len(set_path)] == set_path:
                return set_path
        return None

    def field(self, path: tuple) -> str:
        """The key path, prefixed by the ``--set`` option when the value came from one."""
        set_path = self.override_of(path)
        if set_path is None:
            inside = [s for s in self.overridden if len(s) > len(path) and s[:len(path)] == path]
            sets = ", ".join(dict.fromkeys(f"--set {_fmt(s)}" for s in inside))
            changed = f" (as changed by {sets})" if inside and path else ""
            return _fmt(path) + changed
        inner = f": {_fmt(path)}" if len(path) > len(set_path) else ""
        return f"--set {_fmt(set_path)}{inner}"

    def line(self, path: tuple) -> int | None:
        """The file's line for ``path``; none for a value that came from ``--set``."""
        return None if self.override_of(path) is not None else _line(self.lines, path)

    def error(self, message: str, path: tuple) -> CapsimError:
        """A one-line error about ``path``."""
        if self.override_of(path) is not None:
            return CapsimError(message, field=self.field(path))
        return CapsimError(message, file=self.label, line=self.line(path), field=self.field(path))


_TYPE_WORDS = {bool: "a boolean", str: "a string", int: "an integer", float: "a number",
               list: "a list", dict: "a table"}


def _type_message(e: dict, node: Any) -> str | None:
    """``expected a number, not a boolean`` (the type of the value, never the value)."""
    expected = {"float_type": "a number", "int_type": "an integer", "bool_type": "true or false",
                "int_from_float": "an integer", "finite_number": "a finite number",
                "string_type": "a string"}.get(e["type"])
    if expected is None:
        return None
    given = _TYPE_WORDS.get(type(node))
    if e["type"] == "finite_number" or given is None:
        return f"expected {expected}"
    return f"expected {expected}, not {given}"


def _value_at(raw: Any, path: tuple) -> Any:
    node = raw
    for seg in path:
        try:
            node = node[seg]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def render_error(err: ValidationError, raw: Any, where: Where, model: type[BaseModel],
            prefix: tuple = ()) -> CapsimError:
    messages = []
    first_line = first_field = None
    from_set = None
    errors = err.errors(include_input=False, include_url=False)
    # An unknown key usually explains a "field required" beside it (a typo): name it first.
    errors.sort(key=lambda e: e["type"] != "extra_forbidden")
    for e in errors:
        path = _real_path(raw, e["loc"])
        full = prefix + path
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            allowed = _allowed_keys(model, raw, path[:-1])
            import difflib  # only for an error: `capsim validate` of a good file skips it

            hint = difflib.get_close_matches(str(path[-1]), allowed, n=1, cutoff=0.6)
            msg = f"unknown key {path[-1]!r}" + (f"; did you mean {hint[0]!r}?" if hint else "")
            if allowed:
                msg += f" (expected one of: {', '.join(allowed)})"
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
            inner = re.match(r"^([A-Za-z_][\w.\[\]]*): (.*)$", msg)
            if inner and not full:
                msg = inner.group(2)
                full = parse_path(inner.group(1))
        elif e["type"] == "union_tag_invalid":  # pydantic's message quotes the value
            tags = e["ctx"]["expected_tags"]
            msg = f"expected {e['ctx']['discriminator']} to be one of: {tags}"
        else:
            typed = _type_message(e, _value_at(raw, path))
            msg = typed or ("expected " + msg[0].lower() + msg[1:] if msg.startswith("Input should")
                            else msg[0].lower() + msg[1:])
            msg = msg.replace("expected input should be", "expected")
        field = where.field(full) if full else ""
        line = where.line(full)
        if not messages:
            first_line, first_field = line, field
            from_set = where.override_of(full) is not None
        at = f"line {line}: " if line and len(messages) else ""
        messages.append(f"{at}{field + ': ' if field and len(messages) else ''}{msg}")
    text = messages[0]
    if len(messages) > 1:
        text += "".join(f"\n  also {m}" for m in messages[1:10])
    if from_set:
        return CapsimError(text, field=first_field)
    return CapsimError(text, file=where.label, line=first_line, field=first_field or None)


def _real_path(raw: Any, loc: tuple) -> tuple:
    """The loc without pydantic's union-tag and validator segments (they are not keys)."""
    path, node = [], raw
    for seg in loc:
        in_dict = isinstance(node, dict) and seg in node
        if in_dict or isinstance(node, list) and isinstance(seg, int) and seg < len(node):
            node = node[seg]
            path.append(seg)
        elif isinstance(node, dict) and isinstance(seg, str) and not _is_tag(seg, node):
            path.append(seg)  # a missing or unknown key: name it, stop descending
            node = None
    return tuple(path)


def _is_tag(seg: str, node: dict) -> bool:
    return seg in node.values() or "[" in seg


def _fmt(path: tuple) -> str:
    out = ""
    for seg in path:
        out += f"[{seg}]" if isinstance(seg, int) else (f".{seg}" if out else str(seg))
    return out


def _allowed_keys(model: type[BaseModel], raw: Any, path: tuple) -> list[str]:
    """Field names accepted at ``path`` (walking models, lists, dicts and unions)."""
    tp: Any = model
    node = raw
    for seg in path:
        node = node[seg] if isinstance(node, dict | list) else None
        tp = _step(tp, seg, node)
        if tp is None:
            return []
    tp = _pick_model(tp, node)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        names = []
        for name, info in tp.model_fields.items():
            names.append(info.alias or name)
        return names
    return []


def _step(tp: Any, seg: Any, node: Any) -> Any:
    tp = _pick_model(tp, node if not isinstance(seg, int) else None)
    if isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(seg, str):
        for name, info in tp.model_fields.items():
            if seg in (name, info.alias):  # keep the FieldInfo: it holds the discriminator
                return typing.Annotated[info.annotation, info]
        return None
    origin = typing.get_origin(tp)
    if origin in (list, tuple) and isinstance(seg, int):
        return typing.get_args(tp)[0]
    if origin is dict:
        return typing.get_args(tp)[1]
    return None


def _pick_model(tp: Any, node: Any) -> Any:
    """Unwrap Annotated / Optional / unions, choosing the member the raw node selects.

    A tagged union names its tag in pydantic's own ``discriminator`` (on the Annotated
    ``Field``); the member is the one whose tag field's ``Literal`` holds the node's tag.
    """
    tag = None
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp, *meta = typing.get_args(tp)
            tag = next((d for d in map(_discriminator, meta) if d), tag)
        elif origin in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(members) == 1:
                tp = members[0]
                continue
            if tag and isinstance(node, dict):
                for member in members:
                    field = getattr(member, "model_fields", {}).get(tag)
                    if field and node.get(tag) in typing.get_args(field.annotation):
                        return member
            return members[0]
        else:
            return tp


def _discriminator(meta: Any) -> str | None:
    """The tag field's name if ``meta`` is a pydantic ``Field(discriminator=...)``."""
    disc = getattr(meta, "discriminator", None)
    if isinstance(disc, str):
        return disc
    return getattr(disc, "discriminator", None) if isinstance(
        getattr(disc, "discriminator", None), str) else None


# -- line numbers ---------------------------------------------------------------------

_KEY_VALUE = re.compile(
    r'^((?:[A-Za-z0-9_\-]+|"[^"]*")(?:\s*\.\s*(?:[A-Za-z0-9_\-]+|"[^"]*"))*)\s*=\s*(.*)$')


def key_lines(text: str) -> dict[tuple, int]:
    """Map key paths to the line that defines them (tables, arrays of tables, inline tables)."""
    lines: dict[tuple, int] = {}
    counts: dict[tuple, int] = {}
    table: tuple = ()
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        m = re.match(r"^\[\[\s*(.+?)\s*\]\]", s)
        if m:
            path = _resolve(parse_path(m.group(1)), counts)
            counts[path] = counts.get(path, -1) + 1
            table = path + (counts[path],)
            lines[table] = lineno
            continue
        m = re.match(r"^\[\s*(.+?)\s*\]", s)
        if m:
            table = _resolve(parse_path(m.group(1)), counts)
            lines.setdefault(table, lineno)
            continue
        m = _KEY_VALUE.match(s)
        if m:
            key = table + parse_path(re.sub(r"\s+", "", m.group(1)))
            lines[key] = lineno
            if m.group(2).startswith("{"):
                for sub in re.findall(r'([A-Za-z0-9_\-]+|"[^"]*")\s*=', m.group(2)):
                    lines.setdefault(key + (sub.strip('"'),), lineno)
    return lines


def _resolve(path: tuple, counts: dict[tuple, int]) -> tuple:
    """Insert the current index of every array of tables the path passes through."""
    out: tuple = ()
    for seg in path:
        out = out + (seg,)
        if out in counts and out != path:
            out = out + (counts[out],)
    return out


def _line(lines: dict[tuple, int], path: tuple) -> int | None:
    for n in range(len(path), 0, -1):
        if path[:n] in lines:
            return lines[path[:n]]
    return None
