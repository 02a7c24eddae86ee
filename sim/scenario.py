"""Loading a scenario file: TOML -> overrides -> validated, frozen :class:`Scenario`.

Every problem becomes a :class:`~sim.errors.CapsimError` naming the file, the line,
the key path (``sources[1].arrival.rate``) and what was expected; unknown keys get a
"did you mean". Values are never echoed (a key field may hold a real API key).
"""

from __future__ import annotations

import difflib
import re
import tomllib
import types
import typing
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from .errors import CapsimError
from .pricing import Pricing, deep_merge, default_pricing_table
from .scenario_model import Scenario
from .tiers import CATALOG, Tier, find_tier

DEFAULT_SCENARIO = "default"


@dataclass(frozen=True)
class LoadedScenario:
    """A validated scenario with what was resolved from it."""

    scenario: Scenario
    path: str
    tiers: tuple[Tier, ...]
    pricing: Pricing
    pricing_overrides: dict[str, Any]


def builtin_scenario_text() -> str:
    """The default scenario shipped inside the package."""
    return resources.files("sim").joinpath("data/default.toml").read_text("utf-8")


def load(path: str | Path | None = None, overrides: list[str] = ()) -> LoadedScenario:
    """Read, override and validate a scenario; ``None`` is the built-in default."""
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
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        match = re.search(r"\(at line (\d+), column \d+\)", str(err))
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(err))
        raise CapsimError(f"not valid TOML: {msg}", file=label,
                          line=int(match.group(1)) if match else None) from None
    overridden = [apply_override(raw, item) for item in overrides]
    return validate(raw, label, key_lines(text), overridden)


def validate(raw: dict[str, Any], label: str, lines: dict[tuple, int] | None = None,
             overridden: list[tuple] = ()) -> LoadedScenario:
    """Validate a raw table into a :class:`LoadedScenario`.

    ``overridden`` lists the key paths set by ``--set``: an error in one of them names
    the ``--set`` option and the key path, not the file's line.
    """
    where = _Where(label, lines or {}, tuple(overridden))
    try:
        scenario = Scenario.model_validate(raw)
    except ValidationError as err:
        raise _render(err, raw, where, Scenario) from None
    try:
        pricing = Pricing.model_validate(deep_merge(default_pricing_table(), scenario.pricing))
    except ValidationError as err:
        raise _render(err, raw.get("pricing", {}), where, Pricing, prefix=("pricing",)) from None
    for name in scenario.sizing_profiles_used():
        if name not in pricing.sizing.profile_gas_cap:
            known = sorted(pricing.sizing.profile_gas_cap)
            raise CapsimError(f"unknown sizing profile {name!r}; expected one of {known} "
                              "or a [pricing.sizing.profile_gas_cap] entry", file=label,
                              field="sources[].sizing.profiles")
    custom = tuple(Tier(t.name, frozenset(t.apis), t.cu_per_window, t.ws_cap, custom=True)
                   for t in scenario.custom_tiers)
    catalog = CATALOG + custom
    if scenario.tiers:
        tiers = []
        for i, name in enumerate(scenario.tiers):
            try:
                tiers.append(find_tier(name, catalog))
            except CapsimError as err:
                message = err.message
                if where.override_of(("tiers", i)) is not None:  # never echo a --set value
                    message = message.replace(f"unknown tier {name!r}", "unknown tier")
                raise where.error(message, ("tiers", i)) from None
    else:
        tiers = list(catalog)
    if custom:
        extra = {t.name: {"daily_allowance_cu": t.daily_allowance_cu, "monthly_usd": t.monthly_usd}
                 for t in scenario.custom_tiers}
        pricing = Pricing.model_validate(
            deep_merge(pricing.model_dump(), {"tiers": extra}))
    return LoadedScenario(scenario, label, tuple(tiers), pricing, scenario.pricing)


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
        value = tomllib.loads(f"v = {value_text}")["v"]
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
class _Where:
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


def _render(err: ValidationError, raw: Any, where: _Where, model: type[BaseModel],
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
        if isinstance(node, dict) and seg in node or isinstance(node, list) and isinstance(seg, int) and seg < len(node):
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
            if seg in (name, info.alias):
                return info.annotation
        return None
    origin = typing.get_origin(tp)
    if origin in (list, tuple) and isinstance(seg, int):
        return typing.get_args(tp)[0]
    if origin is dict:
        return typing.get_args(tp)[1]
    return None


def _pick_model(tp: Any, node: Any) -> Any:
    """Unwrap Annotated / Optional / unions, choosing the member the raw node selects."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(members) == 1:
                tp = members[0]
                continue
            for member in members:
                if isinstance(member, type) and issubclass(member, BaseModel) and isinstance(node, dict):
                    for tag in ("process", "dist"):
                        field = member.model_fields.get(tag)
                        if field and node.get(tag) in typing.get_args(field.annotation):
                            return member
            return members[0]
        else:
            return tp


# -- line numbers ---------------------------------------------------------------------

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
        m = re.match(r'^((?:[A-Za-z0-9_\-]+|"[^"]*")(?:\s*\.\s*(?:[A-Za-z0-9_\-]+|"[^"]*"))*)\s*=\s*(.*)$', s)
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
