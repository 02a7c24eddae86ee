"""The advisor's search on the built-in scenario: every cheaper tier gets a change or a
reason; the budget bounds the runs; a kept folder resumes without simulating again."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import sim
from sim.advisor.result import FOUND, NONE, SKIPPED, UNFINISHED, UNVERIFIED
from sim.cli.main import main
from sim.core.errors import CapsimError
from sim.jobs.executors import SequentialExecutor

SHORT = ["duration=120"]


class Counting(SequentialExecutor):
    def __init__(self):
        self.calls = 0

    def as_completed(self, fn, items):
        for item in items:
            self.calls += 1
            yield item, fn(item)


def test_every_cheaper_tier_of_the_default_gets_a_change_or_a_reason():
    advice = sim.advise(None, overrides=SHORT, replications=1)
    assert advice.recommended is not None and advice.tiers
    for t in advice.tiers:
        assert t.monthly_usd < advice.recommended_usd
        assert t.saved_usd_per_month == advice.recommended_usd - t.monthly_usd
        assert t.status in (FOUND, UNVERIFIED, NONE, SKIPPED)
        assert t.reason or t.change
    # the default sends POST /v1/size: the tiers without Search are not searched
    rpc = next(t for t in advice.tiers if t.tier == "RPC")
    assert rpc.status == SKIPPED and "402" in rpc.reason


def test_the_budget_bounds_the_runs():
    advice = sim.advise(None, overrides=[*SHORT, "slo.allowance_must_last_day=false"],
                        tiers=["All 3 APIs", "Professional bundle"], budget=4)
    assert advice.runs <= 4
    (t,) = advice.tiers
    assert t.status == UNFINISHED


def test_a_budget_below_the_first_runs_is_a_user_error():
    with pytest.raises(CapsimError):
        sim.advise(None, overrides=SHORT, budget=3)


def test_a_kept_folder_resumes_without_simulating_again(tmp_path):
    args = dict(overrides=[*SHORT, "slo.allowance_must_last_day=false"],
                tiers=["All 3 APIs", "Professional bundle"], replications=1, budget=30)
    first = Counting()
    a = sim.advise(None, executor=first, store=tmp_path, **args)
    again = Counting()
    b = sim.advise(None, executor=again, store=tmp_path, **args)
    assert first.calls > 2 and again.calls == 0
    assert a == b


def test_the_command_prints_the_tiers_and_writes_the_folder(tmp_path):
    out = tmp_path / "adv"
    got = CliRunner().invoke(main, ["advise", "--set", "duration=120", "--replications", "1",
                                    "--out", str(out)])
    assert got.exit_code == 0, got.output
    assert "recommended tier Professional bundle" in got.output
    assert (out / "advice.json").exists() and (out / "report.md").exists()
    assert (out / "advice.png").exists()


def test_the_command_prints_json_for_scripts():
    import json

    got = CliRunner().invoke(main, ["advise", "--set", "duration=120", "--replications", "1",
                                    "--tier", "RPC + Search", "--tier", "Professional bundle",
                                    "--json"])
    assert got.exit_code == 0, got.output
    data = json.loads(got.output)
    assert data["recommended"] == "Professional bundle" and data["runs"] >= 2
    assert [t["tier"] for t in data["tiers"]] == ["RPC + Search"]


def test_a_zero_budget_is_a_usage_error():
    got = CliRunner().invoke(main, ["advise", "--budget", "0"])
    assert got.exit_code == 2


def test_on_run_counts_every_model_run_against_the_budget():
    told: list[tuple[int, int]] = []
    advice = sim.advise(None, overrides=SHORT, replications=1, budget=12,
                        on_run=lambda runs, budget: told.append((runs, budget)))
    # one call per run spent, counting 1, 2, ... up to the runs the advice reports
    assert [r for r, _ in told] == list(range(1, advice.runs + 1))
    assert {b for _, b in told} == {12} and advice.runs <= 12
