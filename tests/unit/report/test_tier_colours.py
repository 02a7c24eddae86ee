"""One colour per tier across every plot, whichever tiers a run selects."""

from __future__ import annotations

import numpy as np
from matplotlib import colors

from sim.config.tiers import CATALOG
from sim.report.colours import tier_colour
from sim.report.plots import latency_figure


def test_every_catalog_tier_has_its_own_colour():
    assert len({tier_colour(t.name) for t in CATALOG}) == len(CATALOG)
    assert tier_colour("my custom tier") == tier_colour("my custom tier")


def test_a_tier_keeps_its_colour_whichever_tiers_are_drawn():
    rng = np.random.default_rng(1)

    def colour_of(tier, tiers):
        lat = {t: np.sort(rng.lognormal(3 + i, 0.5, 50)) for i, t in enumerate(tiers)}
        fig = latency_figure(lat, None)
        line = next(ln for ln in fig.axes[0].get_lines() if ln.get_label() == tier)
        return colors.to_hex(line.get_color())

    alone = colour_of("All 3 APIs", ["All 3 APIs"])
    among = colour_of("All 3 APIs", ["RPC", "Search", "All 3 APIs"])
    assert alone == among == tier_colour("All 3 APIs")
