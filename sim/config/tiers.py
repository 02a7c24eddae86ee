"""The subscription tier catalog: exactly the two tables of spec 8.1 and 8.3.

A tier (the spec calls it a *selection*) fixes which APIs the account may use, its CU
budget per 12-second window and its active-websocket cap. Bundles and "All 3 APIs"
include all three APIs. Money and the daily allowance are not in the spec: they live in
the pricing assumptions (:mod:`sim.config.pricing`). Pure Python, no SimPy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.errors import CapsimError
from ..core.vocabulary import APIS, RPC, SEARCH, STREAMS, WINDOW_S

__all__ = ["APIS", "RPC", "SEARCH", "STREAMS", "WINDOW_S"]


@dataclass(frozen=True)
class Tier:
    """One subscription selection.

    ``cu_per_window`` is the CU budget per 12-second window (spec 8.1) and ``ws_cap``
    the active websocket connection cap (spec 8.3), both per account.
    """

    name: str
    apis: frozenset[str]
    cu_per_window: float
    ws_cap: int
    custom: bool = False

    def includes(self, api: str) -> bool:
        """Whether the selection subscribes to ``api``."""
        return api in self.apis

    @property
    def slug(self) -> str:
        """A file- and shell-friendly name: ``rpc-search``, ``professional-bundle``."""
        return slugify(self.name)


def slugify(name: str) -> str:
    """Lower-case, non-alphanumerics collapsed to ``-``."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


_ALL = frozenset(APIS)

CATALOG: tuple[Tier, ...] = (
    Tier("Streams", frozenset({STREAMS}), 3_000, 2),
    Tier("RPC", frozenset({RPC}), 4_000, 0),
    Tier("Search", frozenset({SEARCH}), 6_000, 0),
    Tier("Streams + RPC", frozenset({STREAMS, RPC}), 5_000, 3),
    Tier("Streams + Search", frozenset({STREAMS, SEARCH}), 7_000, 3),
    Tier("RPC + Search", frozenset({RPC, SEARCH}), 7_500, 0),
    Tier("All 3 APIs", _ALL, 8_400, 3),
    Tier("Professional bundle", _ALL, 50_000, 5),
    Tier("Advanced bundle", _ALL, 100_000, 10),
)
"""The nine selections of the spec, in the spec's order."""


def find_tier(name: str, tiers: tuple[Tier, ...] | list[Tier] = CATALOG) -> Tier:
    """The tier called ``name`` (exact, case-insensitive or slug form).

    Raises :class:`CapsimError` listing the known names when there is none.
    """
    wanted = slugify(name)
    for tier in tiers:
        if tier.name == name or tier.slug == wanted:
            return tier
    known = ", ".join(repr(t.name) for t in tiers)
    raise CapsimError(f"unknown tier {name!r}; expected one of {known}", field="tier")


def smallest_tier_for(peak_cu_per_window: float, apis: set[str] | frozenset[str],
                      tiers: tuple[Tier, ...] = CATALOG) -> Tier | None:
    """The tier with the smallest budget that includes ``apis`` and fits the peak, if any."""
    fitting = [t for t in tiers if set(apis) <= t.apis and t.cu_per_window >= peak_cu_per_window]
    return min(fitting, key=lambda t: t.cu_per_window, default=None)
