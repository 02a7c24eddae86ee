"""The client advisor (``capsim advise``): the least change to the client that lets a
cheaper tier meet the SLO, and the dollars it saves.

    advice = sim.advise("workloads/searcher.toml", overrides=["duration=600"])
    for tier in advice.tiers:
        print(tier.describe())

:mod:`.catalogue` lists the client changes (each a scenario diff: ``--set`` overrides),
:mod:`.search` looks for the mildest one per cheaper tier, :mod:`.conclude` picks the
one that costs the client least and verifies it on common random numbers, :mod:`.runs`
simulates within the budget (and resumes), :mod:`.result` holds and words the answer,
:mod:`.snippet` turns a change into TOML, :mod:`.report` writes the folder.
"""

from __future__ import annotations

from .result import Advice, TierAdvice
from .search import advise

__all__ = ["Advice", "TierAdvice", "advise"]
