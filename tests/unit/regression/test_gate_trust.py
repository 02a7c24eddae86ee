"""The CI gate never republishes a key, and a bad ``$GITHUB_STEP_SUMMARY`` is the user's
mistake (issue 33 items 1 and 5).

A baseline written by an older capsim, or edited by hand, may record a ``--set`` with an
API key in clear; ``capsim check`` replays it and printed it into ``--markdown``,
``--comment`` and ``$GITHUB_STEP_SUMMARY``. And a step summary that is a folder or
cannot be written was a traceback after the simulation: exit 1, which the gate reads
as a regression.
"""

from __future__ import annotations

import json

import pytest
from gate_cli import cli, saved_gate
from scenarios import poisson_source, scenario_text

from sim.core.pseudonyms import pseudonym

KEY = "live-9d1c2e7f0a3b4c5d"
SCENARIO = scenario_text(name="gate", top="seed = 3\n", duration=60, tiers=["RPC"],
                         keys=["k"], sources=poisson_source(2) + "mix = { svc_call = 1.0 }\n")


@pytest.fixture(scope="module")
def gate(tmp_path_factory):
    return saved_gate(tmp_path_factory.mktemp("gate"), SCENARIO)


def test_a_clear_key_in_a_baseline_is_never_republished(gate, tmp_path):
    data = json.loads((gate / "gate.json").read_text())
    # as an older capsim wrote it, or a hand edit: the key in clear
    data["overrides"] = [f'account.keys=["{KEY}"]', f'sources[0].key="{KEY}"']
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data))
    step = tmp_path / "step.md"
    r = cli("check", gate / "gate.toml", "--baseline", edited, "--markdown", tmp_path / "r.md",
            "--comment", tmp_path / "c.md", "--junit", tmp_path / "r.xml",
            env={"GITHUB_STEP_SUMMARY": str(step)})
    assert r.exit_code in (0, 1), r.output  # the comparison ran
    outputs = {"stdout": r.output, **{p.name: p.read_text()
                                      for p in (tmp_path / "r.md", tmp_path / "c.md",
                                                tmp_path / "r.xml", step)}}
    for name, text in outputs.items():
        assert KEY not in text, name
    # the replayed override is shown, as the key's pseudonym
    assert f'account.keys=["{pseudonym(KEY)}"]' in outputs["r.md"]


def test_baseline_update_writes_a_clear_key_back_as_its_pseudonym(gate, tmp_path):
    data = json.loads((gate / "gate.json").read_text())
    data["overrides"] = [f'account.keys=["{KEY}"]', f'sources[0].key="{KEY}"']
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data))
    r = cli("baseline", "update", edited)
    assert r.exit_code == 0, r.output
    assert KEY not in edited.read_text() + r.output
    assert pseudonym(KEY) in edited.read_text()


@pytest.mark.parametrize("make", ["folder", "no-folder"])
def test_an_unusable_step_summary_is_refused_before_running(gate, tmp_path, monkeypatch,
                                                            make):
    def never(*a, **k):
        raise AssertionError("simulated before refusing")
    monkeypatch.setattr("sim.jobs.replicate.replicate", never)
    step = tmp_path / "summary.md"
    if make == "folder":
        step.mkdir()
    else:
        step = tmp_path / "missing" / "summary.md"
    r = cli("check", gate / "gate.toml", "--baseline", gate / "gate.json",
            env={"GITHUB_STEP_SUMMARY": str(step)})
    assert r.exit_code == 2, r.output
    assert r.output.startswith(f"capsim: error: {step}: $GITHUB_STEP_SUMMARY: "), r.output
    assert "Traceback" not in r.output
    r = cli("compare", gate / "gate.json", gate / "gate.json",
            env={"GITHUB_STEP_SUMMARY": str(step)})
    assert r.exit_code == 2 and "$GITHUB_STEP_SUMMARY" in r.output, r.output
