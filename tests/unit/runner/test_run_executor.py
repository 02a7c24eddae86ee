"""``sim.run(..., executor=...)``: tiers finishing in any order give the run in tier
order; a worker that cannot see the run's spool folder says so."""

from __future__ import annotations

import pytest

import sim
from sim.config.selection import load_scenario
from sim.core.errors import CapsimError
from sim.runner.run import _run_tier
from sim.workload.demand import build_plan

TIERS = ["RPC", "Search", "All 3 APIs"]


class LastFirst:
    """An executor whose runs finish in the reverse of the order they were given."""

    workers = 3

    def __init__(self) -> None:
        self.ran = 0

    def as_completed(self, fn, items):
        items = list(items)
        self.ran += len(items)
        for item in reversed(items):
            yield item, fn(item)


def test_tiers_done_last_first_give_the_run_in_tier_order():
    kw = dict(tiers=TIERS, overrides=["duration=60"], records="attempts")
    plain = sim.run("workloads/mixed-bundle.toml", **kw)
    executor = LastFirst()
    spread = sim.run("workloads/mixed-bundle.toml", executor=executor, replications=2, **kw)
    assert executor.ran == 2 * len(TIERS)  # the run's tiers, then replication 1's
    assert [t.tier for t in spread.summary.tiers] == TIERS
    assert spread.summary.model_copy(update={"replications": None}).to_json() == \
        plain.summary.to_json()
    assert spread.attempts.equals(plain.attempts)


def test_a_worker_without_the_spool_folder_says_to_share_it(tmp_path):
    loaded = load_scenario(None, tiers=["RPC"], overrides=["duration=10"])
    with pytest.raises(CapsimError, match="not reachable from the worker.*TMPDIR") as err:
        _run_tier(build_plan(loaded), loaded.tiers[0], str(tmp_path / "gone" / "tier0"))
    assert err.value.field == "--dask-scheduler"
