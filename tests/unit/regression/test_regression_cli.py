"""The CI gate end to end, on real (short) runs: `capsim baseline save|update`,
`capsim check` and `capsim compare` with their exit codes and reports.

The scenario: svc_call (20 CU) at a Poisson 10/s, so 120 requests = 2,400 CU per 12 s
window on average (sd ≈ 220 CU), against RPC (4,000 CU) and RPC + Search (7,500 CU).
Both tiers fit it with ~7 sd to spare. Doubled (20/s = 4,800 CU a window), RPC cannot
admit it and must throttle, while RPC + Search still fits with ~7 sd to spare.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from gate_cli import cli, saved_gate
from scenarios import poisson_source, scenario_text

from sim.results.catalogue import METRIC_NAMES, METRICS

# The gate is about the 12-second windows: the allowance rule for runs under a day
# (RPC's allowance lasts 10 h at 200 CU/s) is off.
SCENARIO = scenario_text(name="gate", top="seed = 3\n", duration=300, tiers=["RPC", "RPC + Search"],
                         tables="[slo]\nallowance_must_last_day = false\n",
                         sources=poisson_source(10) + "mix = { svc_call = 1.0 }\n")

ZERO = [f"--tolerance={m}=0" for m in METRIC_NAMES]


@pytest.fixture(scope="module")
def gate(tmp_path_factory):
    """The scenario and its baseline (one replication)."""
    return saved_gate(tmp_path_factory.mktemp("gate"), SCENARIO)


def check(gate, *args, env=None):
    return cli("check", gate / "gate.toml", "--baseline", gate / "gate.json", *args, env=env)


def test_the_baseline_records_provenance_and_the_figures(gate):
    data = json.loads((gate / "gate.json").read_text())
    assert data["scenario"] == "gate" and data["seed"] == 3 and data["replications"] == 1
    assert data["content_hash"].startswith("sha256:")
    assert [t["tier"] for t in data["tiers"]] == ["RPC", "RPC + Search"]
    rpc = data["tiers"][0]["metrics"]
    # Every request is a 20 CU svc_call that succeeds (see the module docstring).
    assert rpc["cu_per_request"]["mean"] == pytest.approx(20.0)
    assert rpc["throttle_rate"]["mean"] == 0.0
    assert data["recommended"]["tier"] == "RPC"  # the cheaper one (both meet the SLO)


def test_an_unchanged_scenario_passes_against_its_own_baseline(gate, tmp_path):
    step = tmp_path / "step.md"
    r = check(gate, "--markdown", tmp_path / "r.md", "--junit", tmp_path / "r.xml",
              env={"GITHUB_STEP_SUMMARY": str(step)})
    assert r.exit_code == 0, r.output
    assert "no regression" in r.output
    md = (tmp_path / "r.md").read_text()
    assert step.read_text() == md + "\n"
    assert "### RPC" in md and "### RPC + Search" in md
    root = ET.parse(tmp_path / "r.xml").getroot()
    assert root.get("failures") == "0" and int(root.get("tests")) == 2 * len(METRICS) + 2 + 2
    # two tiers × (the catalogue's metrics + svc_call's CU per day), the recommended tier
    # and its price


def test_saving_again_rewrites_the_same_bytes(gate, tmp_path):
    r = cli("baseline", "save", gate / "gate.toml", "--out", tmp_path / "again.json")
    assert r.exit_code == 0
    assert (tmp_path / "again.json").read_bytes() == (gate / "gate.json").read_bytes()


def test_doubling_the_load_fails_and_names_the_metrics(gate, tmp_path):
    r = check(gate, "--set", "sources[0].arrival.rate=20", "--junit", tmp_path / "r.xml",
              "--comment", tmp_path / "c.md")
    assert r.exit_code == 1, r.output
    assert "regression: RPC: throttle rate" in r.output
    assert "regression: RPC: meets the SLO: yes → no" in r.output
    assert "regression: (run): recommended tier: RPC → RPC + Search" in r.output
    # RPC + Search has room for 4,800 CU a window: no throttling appears there.
    assert "RPC + Search: throttle rate" not in r.output
    root = ET.parse(tmp_path / "r.xml").getroot()
    failed = {(c.get("classname"), c.get("name")) for c in root.iter("testcase")
              if c.find("failure") is not None}
    assert {("capsim.gate.RPC", "throttle_rate"), ("capsim.gate.run", "recommended_tier")} <= failed
    assert int(root.get("failures")) == len(failed)
    body = (tmp_path / "c.md").read_text()
    assert body.splitlines()[1] == "<!-- capsim-check: gate -->" and "scenario changed" in body


def test_a_change_inside_the_tolerance_passes(gate):
    # (+1 % calls: inside CU per day's 2 %, which +3 % would not be)
    r = check(gate, "--set", "sources[0].arrival.rate=10.1")
    assert r.exit_code == 0, r.output
    # Something did move: with no tolerance at all the same change fails.
    strict = check(gate, "--set", "sources[0].arrival.rate=10.1", *ZERO)
    assert strict.exit_code == 1 and "regression: RPC: " in strict.output


def test_tolerances_from_the_scenarios_check_table(gate, tmp_path):
    # A throttle rate cannot exceed 1: a tolerance of 1 lets any change through.
    (tmp_path / "gate.toml").write_text(SCENARIO + "[check.tolerance]\nthrottle_rate = 1.0\n")
    doubled = ("--set", "sources[0].arrival.rate=20")
    r = cli("check", tmp_path / "gate.toml", "--baseline", gate / "gate.json", *doubled)
    assert r.exit_code == 1 and "RPC: throttle rate" not in r.output
    assert "RPC: failure rate" in r.output  # the others keep their defaults
    # ... and the command line has the last word.
    r = cli("check", tmp_path / "gate.toml", "--baseline", gate / "gate.json", *doubled,
            "--tolerance", "throttle_rate=0.005")
    assert "regression: RPC: throttle rate" in r.output


def test_an_unknown_metric_in_the_check_table_is_a_user_error(gate, tmp_path):
    (tmp_path / "bad.toml").write_text(SCENARIO + "[check.tolerance]\nthrottle_rat = 0.1\n")
    r = cli("check", tmp_path / "bad.toml", "--baseline", gate / "gate.json")
    assert r.exit_code == 2
    assert "did you mean 'throttle_rate'" in r.output and "Traceback" not in r.output


def test_replicated_runs_with_different_seeds_are_not_flagged(tmp_path):
    (tmp_path / "gate.toml").write_text(SCENARIO)
    base = tmp_path / "gate.json"
    assert cli("baseline", "save", tmp_path / "gate.toml", "--replications", "5",
               "--out", base).exit_code == 0
    # Even with every tolerance at 0, the intervals absorb another seed's noise ...
    r = cli("check", tmp_path / "gate.toml", "--baseline", base, "--set", "seed=1234", *ZERO)
    assert r.exit_code == 0, r.output
    assert "within noise" in (r.output + _md(tmp_path, base, "seed=1234"))
    # ... which is real: single runs of the two seeds differ beyond a zero tolerance.
    single = tmp_path / "single.json"
    cli("baseline", "save", tmp_path / "gate.toml", "--out", single)
    r = cli("check", tmp_path / "gate.toml", "--baseline", single, "--set", "seed=1234", *ZERO)
    assert r.exit_code == 1


def _md(tmp_path, base, override):
    cli("check", tmp_path / "gate.toml", "--baseline", base, "--set", override, *ZERO,
        "--markdown", tmp_path / "noise.md")
    return (tmp_path / "noise.md").read_text()


@pytest.mark.parametrize("text, message", [
    ("{not json", "not JSON"),
    ('{"scenario": "gate"}', "not a capsim baseline"),
    ('{"baseline_schema_version": 1, "summary_schema_version": 1, "scenario": "gate"}',
     "not a valid capsim baseline"),
    ('{"baseline_schema_version": 99, "summary_schema_version": 1}',
     "unknown baseline schema version 99"),
    ('{"baseline_schema_version": 1, "summary_schema_version": 7}',
     "unknown summary schema version 7"),
])
def test_bad_baselines_are_user_errors(gate, tmp_path, text, message):
    (tmp_path / "b.json").write_text(text)
    r = cli("check", gate / "gate.toml", "--baseline", tmp_path / "b.json")
    assert r.exit_code == 2, r.output
    assert message in r.output and "Traceback" not in r.output


def test_a_baseline_of_another_scenario_is_a_user_error(gate, tmp_path):
    data = json.loads((gate / "gate.json").read_text())
    data["scenario"] = "searcher"
    (tmp_path / "b.json").write_text(json.dumps(data))
    r = check(gate, "--baseline", tmp_path / "b.json")
    assert r.exit_code == 2
    assert "baseline is of scenario 'searcher', not 'gate'" in r.output


def test_a_missing_baseline_says_how_to_make_one(gate, tmp_path):
    r = cli("check", gate / "gate.toml", "--baseline", tmp_path / "none.json")
    assert r.exit_code == 2 and "capsim baseline save" in r.output


def test_comment_only_on_change(gate, tmp_path):
    r = check(gate, "--comment", tmp_path / "c.md", "--comment-only-on-change")
    assert r.exit_code == 0 and not (tmp_path / "c.md").exists()
    r = check(gate, "--comment", tmp_path / "c.md", "--comment-only-on-change",
              "--set", "sources[0].arrival.rate=20")
    assert r.exit_code == 1 and (tmp_path / "c.md").read_text().splitlines()[1] == (
        "<!-- capsim-check: gate -->")


def test_compare_summaries_and_baselines(gate, tmp_path):
    import sim

    for name, rate in (("a", 10), ("b", 20)):
        out = tmp_path / name
        out.mkdir()
        summary = sim.run(gate / "gate.toml", overrides=[f"sources[0].arrival.rate={rate}"]).summary
        (out / "summary.json").write_text(summary.to_json())
    r = cli("compare", tmp_path / "a", tmp_path / "b" / "summary.json")
    assert r.exit_code == 1 and "regression: RPC: throttle rate" in r.output
    assert cli("compare", tmp_path / "b", tmp_path / "a").exit_code == 0  # improvements
    # A report folder of the baseline's own run equals the baseline.
    r = cli("compare", gate / "gate.json", tmp_path / "a", *ZERO)
    assert r.exit_code == 0, r.output
    r = cli("compare", gate / "gate.json", tmp_path / "missing")
    assert r.exit_code == 2


def test_baseline_update_rewrites_and_prints_what_moved(gate, tmp_path):
    scenario = tmp_path / "gate.toml"
    scenario.write_text(SCENARIO)
    base = tmp_path / "gate.json"
    cli("baseline", "save", scenario, "--out", base)
    r = cli("baseline", "update", base)
    assert r.exit_code == 0 and "0 figure(s) moved" in r.output
    before = base.read_text()
    scenario.write_text(SCENARIO.replace("rate = 10", "rate = 20"))
    r = cli("baseline", "update", base)
    assert r.exit_code == 0, r.output
    assert "RPC: throttle rate: 0.0000 →" in r.output and "scenario changed" in r.output
    assert base.read_text() != before
    assert check_passes(scenario, base)


def check_passes(scenario, base) -> bool:
    return cli("check", scenario, "--baseline", base).exit_code == 0


def test_markdown_of_a_real_fifty_tier_scenario_stays_under_a_mebibyte(tmp_path):
    tiers = "".join(f'[[custom_tiers]]\nname = "t{i:02d}"\ncu_per_window = {1000 + 100 * i}\n'
                    f"monthly_usd = {10 + i}\n" for i in range(50))
    text = SCENARIO.replace('tiers = ["RPC", "RPC + Search"]', "duration = 12") + tiers
    text = text.replace("duration = 300\n", "", 1)
    (tmp_path / "fifty.toml").write_text(text)
    base = tmp_path / "fifty.json"
    assert cli("baseline", "save", tmp_path / "fifty.toml", "--out", base).exit_code == 0
    assert len(json.loads(base.read_text())["tiers"]) == 59  # the catalog's 9 + 50
    r = cli("check", tmp_path / "fifty.toml", "--baseline", base, "--markdown",
            tmp_path / "r.md", "--set", "sources[0].arrival.rate=40")
    assert r.exit_code == 1
    md = (tmp_path / "r.md").read_text()
    assert len(md.encode()) < 1024 * 1024
    assert sum(line.startswith("### ") for line in md.splitlines()) == 59


def test_the_content_hash_follows_what_the_user_wrote(tmp_path):
    from sim.regression.baseline import scenario_hash

    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text(SCENARIO)
    # Comments, layout and the [check] table are not content; a value is.
    b.write_text("# a comment\n" + SCENARIO.replace("rate = 10", "rate    = 10")
                 + "[check.tolerance]\nthrottle_rate = 0.1\n")
    assert scenario_hash(a) == scenario_hash(b)
    assert scenario_hash(a) != scenario_hash(a, ["sources[0].arrival.rate=20"])
    assert scenario_hash(a) != scenario_hash(a, tiers=["RPC"])


def test_baseline_update_names_a_metric_the_baseline_lacks_a_new_metric(gate, tmp_path):
    """A baseline saved before a metric existed (p50 latency taken out of RPC's figures):
    the update says the figure was not in the baseline and is a new metric, not a
    missing tier or an unmeasurable change."""
    scenario = tmp_path / "gate.toml"
    scenario.write_text(SCENARIO)
    base = tmp_path / "gate.json"
    cli("baseline", "save", scenario, "--out", base)
    doc = json.loads(base.read_text())
    rpc = next(t for t in doc["tiers"] if t["tier"] == "RPC")
    del rpc["metrics"]["latency_p50_ms"]
    base.write_text(json.dumps(doc))
    r = cli("baseline", "update", base)
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if "RPC: p50 latency" in x)
    assert line.startswith("  RPC: p50 latency (ms): (not in the baseline) → ")
    assert line.endswith(" (new metric)")
    assert "n/a" not in line and "1 figure(s) moved" in r.output
