"""Every command that simulates is guarded by the run-size check and the scenario's
``max_requests`` before any demand is drawn, exit 2 (issue 21 item 8).

`sweep`, `headroom`, `baseline save|update` and `check` skipped the guard: a huge rate
ran 90 s to a MemoryError traceback (and `check` exited 1, "a regression"). The limit
here is ``max_requests = 10`` against a Poisson 50/s over 60 s (about 3,000 requests a
tier): each command must refuse it without simulating.
"""

from __future__ import annotations

import importlib
import json

import pytest
from click.testing import CliRunner
from scenarios import poisson_source, scenario_text

from sim.cli.main import main

SMALL = scenario_text(name="guard", top="seed = 3\n", duration=60, tiers=["RPC"],
                      sources=poisson_source(1) + "mix = { svc_call = 1.0 }\n")
TOO_BIG = ["--set", "max_requests=10", "--set", "sources[0].arrival.rate=50"]


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    d = tmp_path_factory.mktemp("guard")
    (d / "guard.toml").write_text(SMALL)
    r = cli("baseline", "save", d / "guard.toml", "--out", d / "guard.json")
    assert r.exit_code == 0, r.output
    return d


@pytest.fixture
def no_simulation(monkeypatch):
    def fail(*a, **k):
        raise AssertionError("simulated although the run is too large")
    importlib.import_module("sim.api")  # bound to the real run before the patch
    monkeypatch.setattr(importlib.import_module("sim.runner.run"), "run", fail)


def refused(r):
    assert r.exit_code == 2, r.output
    assert "capsim: error:" in r.output and "run too large" in r.output, r.output
    assert "Traceback" not in r.output and "regression" not in r.output


def test_sweep_is_guarded(saved, tmp_path, no_simulation):
    refused(cli("sweep", saved / "guard.toml", *TOO_BIG, "--out", tmp_path / "sw"))
    assert not (tmp_path / "sw").exists()


def test_a_sweep_point_too_large_is_refused_before_any_run(saved, tmp_path, no_simulation):
    """The first point fits; the second does not: nothing runs at all."""
    refused(cli("sweep", saved / "guard.toml", "--set", "max_requests=500",
                "--vary", "sources[0].arrival.rate=1,50", "--out", tmp_path / "sw"))


def test_headroom_is_guarded(saved, no_simulation):
    refused(cli("headroom", saved / "guard.toml", *TOO_BIG))


def test_baseline_save_is_guarded(saved, tmp_path, no_simulation):
    refused(cli("baseline", "save", saved / "guard.toml", *TOO_BIG,
                "--out", tmp_path / "b.json"))
    assert not (tmp_path / "b.json").exists()


def test_baseline_update_is_guarded(saved, tmp_path, no_simulation):
    data = json.loads((saved / "guard.json").read_text())
    data["overrides"] = TOO_BIG[1::2]
    b = tmp_path / "b.json"
    b.write_text(json.dumps(data))
    refused(cli("baseline", "update", b))


def test_check_is_guarded_and_exits_2_not_1(saved, no_simulation):
    refused(cli("check", saved / "guard.toml", "--baseline", saved / "guard.json", *TOO_BIG))


def test_every_run_of_a_job_is_guarded_in_its_worker(saved, no_simulation):
    """A load the headroom search reaches is checked again where it runs."""
    from sim.core.errors import CapsimError
    from sim.jobs.run_one import simulate
    from sim.jobs.sweep_plan import plan_sweep

    plan = plan_sweep(saved / "guard.toml", overrides=TOO_BIG[1::2])
    with pytest.raises(CapsimError, match="run too large"):
        simulate(plan.runs[0])
