"""One colour per tier, the same in every plot (PNG, interactive chart, sweep plot) and
whichever tiers a run or a sweep selects: a catalog tier's colour follows its place in
the catalog, a custom tier's its name."""

from __future__ import annotations

import zlib

from ..config.tiers import CATALOG

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")
"""matplotlib's tab10, as hex (plotly.js and matplotlib read the same strings)."""

_CUSTOM = ("#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d",
           "#31a354", "#756bb1", "#636363")
_BY_NAME = {t.name: PALETTE[i % len(PALETTE)] for i, t in enumerate(CATALOG)}


def tier_colour(name: str) -> str:
    """The colour of the tier called ``name``."""
    if name in _BY_NAME:
        return _BY_NAME[name]
    return _CUSTOM[zlib.crc32(name.encode("utf-8")) % len(_CUSTOM)]
