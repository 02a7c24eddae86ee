"""The compiled loop's event heap (sim/compiled/loop.py) against a plain ``heapq``.

Events are ordered by ``(time, seq)``, ``seq`` the schedule order (SimPy's tie-break);
times come from a small grid so that ties are common and only ``seq`` decides them.
Driven as the loop drives it (handle the earliest event, schedule a few more), the
4-ary heap must hand out exactly the events ``heapq`` does, in its order.
"""

from __future__ import annotations

import heapq

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

from sim.compiled import loop as lp  # noqa: E402
from sim.compiled import policies as po  # noqa: E402

# a step: handle the earliest event (if any), then schedule these (delay, kind) events
steps = st.lists(st.lists(st.tuples(st.sampled_from([0.0, 0.5, 1.0, 2.5]),
                                    st.integers(0, 8)), max_size=3),
                 min_size=1, max_size=200)


@settings(max_examples=200, deadline=None)
@given(first=st.lists(st.sampled_from([0.0, 1.0, 3.0]), min_size=1, max_size=20),
       plan=steps)
def test_heap_pops_in_time_then_schedule_order(first, plan):
    EF, EI = np.zeros(1024), np.zeros((1024, 3), dtype=np.int64)
    G = np.zeros(po.G_NI, dtype=np.int64)
    ref: list[tuple[float, int, int, int]] = []
    obj = 0

    def push(t, kind):
        nonlocal obj
        heapq.heappush(ref, (t, int(G[po.G_SEQ]), kind, obj))
        lp.ev_push(EF, EI, G, t, kind, obj)
        obj += 1

    for t in first:
        push(t, 0)
    handled = []
    for schedule in [*plan, *([[]] * (len(first) + 3 * len(plan)))]:
        if G[po.G_EVN] == 0:
            assert not ref
            break
        now = EF[0]
        got = (now, int(EI[0, 0]), int(EI[0, 1]), int(EI[0, 2]))
        assert got == heapq.heappop(ref)
        handled.append(got)
        lp.ev_pop(EF, EI, G)
        for delay, kind in schedule:
            push(now + delay, kind)
    assert not ref and G[po.G_EVN] == 0
    assert handled == sorted(handled)
