"""The whole open-loop demand of a plan at once, for tests that look at every request.

A run reads its demand block by block (:meth:`sim.workload.demand.Plan.demand_blocks`, 60 s
each, so memory stays flat); a test that checks a request by its id wants the blocks end
to end, where row ``i`` is open-loop request ``i``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from sim.workload.demand import Demand, Plan


def whole_demand(plan: Plan) -> Demand:
    """Every block of ``plan``'s open-loop demand, end to end (drawn afresh each call)."""
    blocks = list(plan.demand_blocks())
    names = [f.name for f in dataclasses.fields(Demand)]
    if not blocks:
        return Demand(*(np.empty(0) for _ in names))
    return Demand(*(np.concatenate([getattr(b, n) for b in blocks]) for n in names))
