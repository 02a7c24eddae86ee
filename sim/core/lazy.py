"""A package's public names imported on first use (PEP 562).

A package ``__init__`` that imports its submodules eagerly makes every ``import
sim.x.y`` pay for all of ``sim.x``: the light commands (``capsim tiers``, ``capsim
validate``) then build every pydantic model and load numpy before doing anything.
Instead the package lists where each public name lives:

    __getattr__, __dir__ = exports(globals(), {"Pricing": ".pricing", "load": ".resolved"})

and ``sim.config.Pricing`` imports ``sim.config.pricing`` the first time it is read.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def exports(namespace: dict[str, Any], where: dict[str, str]) -> tuple[
        Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the package whose ``globals()`` is
    ``namespace``: its public name ``n`` is the attribute ``n`` of the module
    ``where[n]`` (relative to the package, or absolute)."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        try:
            module = where[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value  # later reads skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__
