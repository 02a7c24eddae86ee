"""A source's ``cache`` (the share of one method's calls its client answers itself):
a deterministic thinning of the demand, from the source's own named stream.

Against the demand drawn without it: the cached demand is the same rows minus some of
the cached method's, never another method's; a share of 0 changes nothing and 1 removes
every call of the method; the share removed is binomial (within 4 sigma); the rows
removed are those whose draw of ``source/NAME/cache`` (one per request, in request
order) is below the share; slicing the run does not change it; a replayed source thins
the same way.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from crafted_traces import write_trace

from sim.config.selection import load_scenario
from sim.core.errors import CapsimError
from sim.core.rng import stream
from sim.core.vocabulary import Rng
from sim.workload.demand import build_plan

TEXT = """name = "cached"
duration = 600
tiers = ["RPC"]
[account]
keys = ["k"]
[[sources]]
name = "app"
key = "k"
arrival = {{ process = "poisson", rate = 20 }}
mix = {{ svc_call = 0.5, svc_pendingBlock = 0.5 }}
{cache}
"""


def _demand(tmp_path, cache="", slice_s=None, name="s.toml"):
    path = tmp_path / name
    path.write_text(TEXT.format(cache=cache), encoding="utf-8")
    plan = build_plan(load_scenario(str(path)))
    blocks = list(plan.demand_blocks(**({} if slice_s is None else {"slice_s": slice_s})))
    methods = plan.tables.methods
    return {c: np.concatenate([getattr(b, c) for b in blocks])
            for c in ("t", "method", "reserve")}, methods, plan


def test_a_share_of_0_changes_nothing_and_1_removes_every_call(tmp_path):
    base, methods, _ = _demand(tmp_path)
    zero, _, _ = _demand(tmp_path, "cache = { svc_call = 0.0 }", name="z.toml")
    one, _, _ = _demand(tmp_path, "cache = { svc_call = 1.0 }", name="o.toml")
    for c in base:
        np.testing.assert_array_equal(zero[c], base[c])
    call = methods.index("svc_call")
    assert not np.any(one["method"] == call)
    np.testing.assert_array_equal(one["t"], base["t"][base["method"] != call])


def test_the_rows_removed_are_the_draws_below_the_share(tmp_path):
    share = 0.3
    base, methods, plan = _demand(tmp_path)
    cached, _, _ = _demand(tmp_path, f"cache = {{ svc_call = {share} }}", name="c.toml")
    call = methods.index("svc_call")
    u = stream(plan.scenario.seed, Rng.SOURCE, "app", Rng.CACHE).random(len(base["t"]))
    expected = ~((base["method"] == call) & (u < share))
    np.testing.assert_array_equal(cached["t"], base["t"][expected])
    n = int(np.sum(base["method"] == call))
    removed = n - int(np.sum(cached["method"] == call))
    assert abs(removed - share * n) <= 4 * math.sqrt(n * share * (1 - share))
    assert np.sum(cached["method"] != call) == np.sum(base["method"] != call)


def test_slicing_does_not_change_what_is_cached(tmp_path):
    whole, _, _ = _demand(tmp_path, "cache = { svc_call = 0.4 }", slice_s=600.0)
    sliced, _, _ = _demand(tmp_path, "cache = { svc_call = 0.4 }", slice_s=7.3, name="b.toml")
    for c in whole:
        np.testing.assert_array_equal(sliced[c], whole[c])


def test_the_note_says_what_is_cached(tmp_path):
    _, _, plan = _demand(tmp_path, "cache = { svc_call = 0.25 }")
    assert any("answers 0.25 of its svc_call calls" in n for n in plan.notes)


def test_a_replayed_source_is_thinned_too(tmp_path):
    trace = write_trace(tmp_path / "t.parquet", [{"t": i * 0.1} for i in range(3000)])
    text = f"""name = "replayed"
duration = 300
tiers = ["RPC"]
[account]
keys = ["3f9a2c71d04e4b8e9a6c15f2b7d08e43"]
[[sources]]
name = "rec"
key = "3f9a2c71d04e4b8e9a6c15f2b7d08e43"
trace = "{trace.name}"
cache = {{ svc_call = 0.5 }}
"""
    path = tmp_path / "r.toml"
    path.write_text(text, encoding="utf-8")
    plan = build_plan(load_scenario(str(path)))
    kept = sum(len(b) for b in plan.demand_blocks())
    assert abs(kept - 1500) <= 4 * math.sqrt(3000 * 0.25)


@pytest.mark.parametrize("cache, words", [
    ("cache = { svc_call = 1.5 }", "share from 0 to 1"),
    ("cache = { eth_call = 0.5 }", "not in this source's mix"),
])
def test_a_wrong_cache_is_a_user_error(tmp_path, cache, words):
    path = tmp_path / "bad.toml"
    path.write_text(TEXT.format(cache=cache), encoding="utf-8")
    with pytest.raises(CapsimError, match=words):
        load_scenario(str(path))


def test_closed_loop_workers_cannot_cache(tmp_path):
    text = TEXT.replace('arrival = {{ process = "poisson", rate = 20 }}',
                        "workers = {{ count = 2 }}")
    path = tmp_path / "w.toml"
    path.write_text(text.format(cache="cache = { svc_call = 0.5 }"), encoding="utf-8")
    with pytest.raises(CapsimError, match="closed-loop"):
        load_scenario(str(path))


def test_the_size_estimate_counts_only_the_calls_sent(tmp_path):
    from sim.workload.size_estimate import estimate

    path = tmp_path / "e.toml"
    path.write_text(TEXT.format(cache="cache = { svc_call = 0.3 }"), encoding="utf-8")
    (size,) = estimate(load_scenario(str(path))).sources
    assert size.requests == pytest.approx(20 * 600 * (1 - 0.3 * 0.5))
