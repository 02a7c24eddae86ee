"""Small scenario files for tests, written one way.

:func:`scenario_text` is a whole scenario in TOML: the top-level keys, one account,
whatever tables a test adds, and one source -- by default a Poisson source ``s`` on the
account's first key. A test names only the parts it is about and keeps its TOML
readable; :func:`write_scenario` writes the text and returns the path, :func:`scenario_raw`
parses it for ``sim.config.resolved.validate``.

    write_scenario(tmp_path, tiers=["Advanced bundle"], rate=6,
                   tables='[clients.default]\\nretry = { policy = "none" }\\n')
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Sequence
from pathlib import Path


def toml_value(value) -> str:
    """A Python string, number or list of them as a TOML value."""
    if isinstance(value, str | list | tuple):
        return json.dumps(list(value) if not isinstance(value, str) else value)
    return repr(value)


def poisson_source(rate: float | str = 1, *, name: str = "s", key: str = "k") -> str:
    """A ``[[sources]]`` table: Poisson arrivals at ``rate`` per second (a number, or TOML
    text such as ``"1e5"``) on ``key``."""
    return (f'[[sources]]\nname = "{name}"\nkey = "{key}"\n'
            f'arrival = {{ process = "poisson", rate = {rate} }}\n')


def scenario_text(*, name: str = "t", duration: float | str | None = 60,
                  tiers: Sequence[str] | None = ("RPC",), keys: Sequence[str] = ("k",),
                  top: str = "", tables: str = "", rate: float | str = 1,
                  sources: str | None = None) -> str:
    """A scenario: ``name``, ``duration`` (seconds, or a string such as ``"1h"``; None:
    the default), ``tiers`` (None: every tier) and the TOML lines ``top`` (more top-level
    keys), then
    ``[account] keys``, the TOML tables ``tables``, and ``sources`` (default: one
    :func:`poisson_source` at ``rate`` on the first key)."""
    head = f"name = {toml_value(name)}\n"
    if duration is not None:
        head += f"duration = {toml_value(duration)}\n"
    if tiers is not None:
        head += f"tiers = {toml_value(tiers)}\n"
    account = f"[account]\nkeys = {toml_value(keys)}\n"
    if sources is None:
        sources = poisson_source(rate, key=keys[0])
    return head + top + account + tables + sources


def write_scenario(folder: Path, text: str | None = None, *, filename: str = "s.toml",
                   **parts) -> Path:
    """Write ``text`` (default: :func:`scenario_text` of ``parts``) to ``folder/filename``."""
    path = folder / filename
    path.write_text(scenario_text(**parts) if text is None else text, encoding="utf-8")
    return path


def scenario_raw(**parts) -> dict:
    """:func:`scenario_text` of ``parts``, parsed (a test may then edit the mapping)."""
    return tomllib.loads(scenario_text(**parts))
