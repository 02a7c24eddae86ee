"""The CI gate's pure parts: verdicts against hand-computed cases, the recommended tier,
the baseline file's stability, the Markdown budget and the JUnit structure."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from sim.core.errors import CapsimError
from sim.regression import comment, junit, markdown
from sim.regression.baseline import (
    Baseline,
    Figure,
    RecommendedTier,
    TierFigures,
    parse_baseline,
    rounded,
)
from sim.regression.compare import compare, judge
from sim.regression.settings import parse_tolerance, tolerances
from sim.results.catalogue import BY_NAME, METRICS


def fig(mean, half=None, n=1):
    return Figure(mean=mean, half_width=half, n=n)


# -- one metric -----------------------------------------------------------------------

def test_absolute_tolerance_on_a_rate():
    m = BY_NAME["throttle_rate"]  # higher is worse, absolute
    assert judge(m, fig(0.010), 1, fig(0.016), 1, 0.005)[0] == "regression"
    assert judge(m, fig(0.010), 1, fig(0.014), 1, 0.005)[0] == "unchanged"
    assert judge(m, fig(0.016), 1, fig(0.010), 1, 0.005)[0] == "improvement"


def test_relative_tolerance_on_a_latency():
    m = BY_NAME["latency_p99_ms"]
    assert judge(m, fig(100.0), 1, fig(111.0), 1, 0.10)[0] == "regression"
    assert judge(m, fig(100.0), 1, fig(109.0), 1, 0.10)[0] == "unchanged"
    assert judge(m, fig(100.0), 1, fig(89.0), 1, 0.10)[0] == "improvement"
    # relative to the baseline, not to the new value: 200 -> 100 is -50 %.
    assert judge(m, fig(200.0), 1, fig(100.0), 1, 0.49)[1] == "-50.0%"


def test_lower_is_worse_for_meeting_the_slo():
    m = BY_NAME["meets_slo"]
    assert judge(m, fig(1.0), 1, fig(0.0), 1, 0.0)[:2] == ("regression", "lost")
    assert judge(m, fig(0.0), 1, fig(1.0), 1, 0.0)[:2] == ("improvement", "gained")


def test_a_change_counts_only_when_the_intervals_do_not_overlap():
    m = BY_NAME["latency_p50_ms"]
    # 100 ± 5 reaches 105, 120 ± 15 starts at 105: they touch -> noise.
    verdict, _, note = judge(m, fig(100.0, 5.0, 5), 5, fig(120.0, 15.0, 5), 5, 0.10)
    assert (verdict, note) == ("unchanged", "within noise: intervals overlap")
    assert judge(m, fig(100.0, 5.0, 5), 5, fig(120.0, 10.0, 5), 5, 0.10)[0] == "regression"
    # Outside the noise but inside the tolerance: still unchanged.
    assert judge(m, fig(100.0, 1.0, 5), 5, fig(108.0, 1.0, 5), 5, 0.10)[0] == "unchanged"


def test_never_running_out_is_the_best_end_of_the_allowance_time():
    m = BY_NAME["allowance_run_out_s"]
    never = fig(None, None, 0)
    assert judge(m, never, 1, fig(3600.0), 1, 900)[0] == "regression"
    assert judge(m, fig(3600.0), 1, never, 1, 900)[0] == "improvement"
    assert judge(m, fig(7200.0), 1, fig(3600.0), 1, 900)[0] == "regression"  # earlier
    # Ran out in 2 of 3 replications: not every replication agrees -> noise.
    assert judge(m, never, 3, fig(3600.0, 100.0, 2), 3, 900)[0] == "unchanged"


def test_an_undefined_latency_is_reported_not_judged():
    m = BY_NAME["latency_p99_ms"]
    verdict, change, note = judge(m, fig(100.0), 1, fig(None, None, 0), 1, 0.1)
    assert (verdict, change) == ("unchanged", "n/a") and "one side" in note


# -- whole baselines ------------------------------------------------------------------

def snapshot(tiers: dict[str, dict[str, float | None]], rec, *, name="s", reps=1,
             price=None, content_hash="sha256:x") -> Baseline:
    rows = []
    for i, (tier, values) in enumerate(tiers.items()):
        metrics = {m.name: fig(values.get(m.name, 0.0), None, reps) for m in METRICS}
        rows.append(TierFigures(tier=tier, cu_per_window=1000.0 * (i + 1),
                                monthly_usd=(price or {}).get(tier, 10.0 * (i + 1)),
                                metrics=metrics))
    return Baseline(capsim_version="0", scenario=name, scenario_file="s.toml",
                    content_hash=content_hash, seed=1, replications=reps,
                    recommended=RecommendedTier(tier=rec, per_replication=(rec,) * reps),
                    tiers=tuple(rows))


def test_a_more_expensive_recommendation_is_a_regression_and_a_cheaper_one_not():
    tiers = {"small": {}, "big": {}}
    base, up, none = snapshot(tiers, "small"), snapshot(tiers, "big"), snapshot(tiers, None)
    tols = tolerances()
    rec = compare(base, up, tols).checks[0]
    assert (rec.metric, rec.verdict) == ("recommended_tier", "regression")
    assert compare(up, base, tols).checks[0].verdict == "improvement"
    assert compare(base, none, tols).checks[0].verdict == "regression"
    assert compare(base, up, tols).exit_code == 1 and compare(up, base, tols).exit_code == 0


def test_baselines_of_different_scenarios_are_refused():
    with pytest.raises(CapsimError, match="another scenario"):
        compare(snapshot({"t": {}}, "t", name="a"), snapshot({"t": {}}, "t", name="b"), {})


def test_a_changed_scenario_is_noted_and_still_compared():
    a = snapshot({"t": {"throttle_rate": 0.0}}, "t")
    b = snapshot({"t": {"throttle_rate": 0.5}}, "t", content_hash="sha256:y")
    cmp = compare(a, b, tolerances())
    assert any("scenario changed" in n for n in cmp.inputs_changed)
    assert [(c.tier, c.metric) for c in cmp.regressions] == [("t", "throttle_rate")]


@pytest.mark.parametrize("reps", [101, 100_000])
def test_a_baseline_asking_for_too_many_replications_is_a_user_error(reps):
    """``capsim check`` replays a baseline's replications: a hand-edited 100000 would run
    the scenario 100000 times. At most 100, as ``--replications`` and ``[check]``."""
    data = json.loads(snapshot({"t": {}}, "t").to_json())
    data["replications"] = reps
    with pytest.raises(CapsimError) as err:
        parse_baseline(json.dumps(data), file="bl.json")
    assert (err.value.file, err.value.field) == ("bl.json", "replications")
    assert "100" in err.value.message
    data["replications"] = 100
    assert parse_baseline(json.dumps(data), file="bl.json").replications == 100


def test_baseline_text_is_sorted_rounded_and_round_trips():
    b = snapshot({"t": {"latency_p99_ms": rounded(1234.56789123)}}, "t")
    text = b.to_json()
    assert parse_baseline(text) == b
    data = json.loads(text)
    assert list(data) == sorted(data)
    assert data["tiers"][0]["metrics"]["latency_p99_ms"]["mean"] == 1234.57
    # one line per figure: a moved figure is a one-line diff
    assert '"latency_p99_ms": {"half_width": null, "mean": 1234.57, "n": 1}' in text


@pytest.mark.parametrize("item, expected", [("throttle_rate=0.02", ("throttle_rate", 0.02)),
                                            ("latency_p99_ms=25%", ("latency_p99_ms", 0.25))])
def test_command_line_tolerances(item, expected):
    assert parse_tolerance(item) == pytest.approx(expected)


def test_an_unknown_tolerance_name_suggests_the_right_one():
    with pytest.raises(CapsimError, match="did you mean 'throttle_rate'"):
        parse_tolerance("throtle_rate=0.1")
    with pytest.raises(CapsimError, match="expected a finite number"):
        parse_tolerance("throttle_rate=-1")


# -- outputs --------------------------------------------------------------------------

def fifty_tiers(regressed: set[int]) -> tuple[Baseline, Baseline]:
    names = [f"custom-tier-{i:02d}" for i in range(50)]
    base = snapshot({n: {"latency_p99_ms": 100.0} for n in names}, names[0])
    now = snapshot({n: {"latency_p99_ms": 300.0 if i in regressed else 100.0}
                    for i, n in enumerate(names)}, names[0])
    return base, now


def test_markdown_of_fifty_tiers_is_under_a_mebibyte_and_puts_regressions_first():
    base, now = fifty_tiers({7, 42})
    text = markdown.render(compare(base, now, tolerances()))
    assert len(text.encode()) < 1024 * 1024
    sections = [line for line in text.splitlines() if line.startswith("### ")]
    assert len(sections) == 50
    assert sections[:2] == ["### ❌ custom-tier-07", "### ❌ custom-tier-42"]


def test_markdown_over_its_budget_keeps_every_regression():
    base, now = fifty_tiers({7, 42})
    cmp = compare(base, now, tolerances())
    full = markdown.render(cmp)
    small = markdown.render(cmp, max_bytes=len(full.encode()) // 4)
    assert len(small.encode()) <= len(full.encode()) // 4
    assert "### ❌ custom-tier-07" in small and "### ❌ custom-tier-42" in small
    assert "- custom-tier-00: every check unchanged" in small


# The common JUnit schema (Jenkins/Ant junit-10.xsd) as allowed children and attributes.
JUNIT_CHILDREN = {"testsuites": {"testsuite"},
                  "testsuite": {"properties", "testcase", "system-out", "system-err"},
                  "properties": {"property"},
                  "testcase": {"skipped", "error", "failure", "system-out", "system-err"}}
JUNIT_REQUIRED = {"testsuite": {"name", "tests"}, "testcase": {"name", "classname"},
                  "property": {"name", "value"}, "failure": {"type"}}
JUNIT_ATTRS = {"testsuites": {"name", "tests", "failures", "errors", "skipped", "disabled", "time"},
               "testsuite": {"name", "tests", "failures", "errors", "skipped", "disabled",
                             "time", "timestamp", "hostname", "id", "package"},
               "testcase": {"name", "classname", "time", "assertions", "status"},
               "property": {"name", "value"}, "failure": {"message", "type"},
               "properties": set(), "system-out": set()}


def _walk(el):
    assert set(el.attrib) <= JUNIT_ATTRS[el.tag], el.tag
    assert JUNIT_REQUIRED.get(el.tag, set()) <= set(el.attrib), el.tag
    for child in el:
        assert child.tag in JUNIT_CHILDREN.get(el.tag, set()), (el.tag, child.tag)
        _walk(child)


def test_junit_has_one_case_per_tier_and_check_with_consistent_counts():
    base, now = fifty_tiers({7, 42})
    cmp = compare(base, now, tolerances())
    root = ET.fromstring(junit.render(cmp))
    assert root.tag == "testsuites"
    _walk(root)
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == 50 * len(METRICS) + 2  # + the recommended tier and its price
    failed = [c for c in cases if c.find("failure") is not None]
    assert {(c.get("classname"), c.get("name")) for c in failed} == {
        ("capsim.s.custom-tier-07", "latency_p99_ms"),
        ("capsim.s.custom-tier-42", "latency_p99_ms")}
    suite = root.find("testsuite")
    for el in (root, suite):
        assert int(el.get("tests")) == len(cases) and int(el.get("failures")) == len(failed)


def test_comment_carries_the_marker_and_lists_only_what_moved():
    base, now = fifty_tiers({7})
    body = comment.render(compare(base, now, tolerances()))
    assert body.splitlines()[1] == "<!-- capsim-check: s -->"
    assert body.count("❌ regression") == 1
    assert f"{50 * len(METRICS) + 1} checks unchanged" in body  # + the recommended price
