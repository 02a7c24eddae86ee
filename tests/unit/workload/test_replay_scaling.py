"""Scaling a recording honestly, through the scenario: the new ``[sources.replay]`` keys'
validation, the warnings (copies stacked into a few windows, a trace that ends before
the run), the allowance's hours over the seconds with traffic, the run-size guard
counting the loops, and stdout carrying the warnings."""

from __future__ import annotations

import math

import pytest
from click.testing import CliRunner
from crafted_traces import KEY, write_trace

from sim.cli.main import main
from sim.config.resolved import load, validate
from sim.core.errors import CapsimError
from sim.runner.run import run
from sim.workload.demand import build_plan
from sim.workload.size_estimate import estimate

SESSION = [0.0, 0.4, 0.9, 5.0, 5.2, 17.0, 17.1, 29.0]
CU = 10.0


def _raw(trace, duration=3600, tiers=("RPC",), sources=None, **replay) -> dict:
    return {
        "name": "scaling", "duration": duration, "tiers": list(tiers),
        "start": "2026-04-01T00:00:00Z", "account": {"keys": [KEY]},
        "regions": [{"name": "r", "rtt_ms": 0}],
        "clients": {"default": {"retry": {"policy": "none"}}},
        "methods": {"svc_call": {"service_time": {"dist": "constant", "value": 0.0}}},
        "sources": [{"name": "rec", "key": KEY, "trace": str(trace),
                     "replay": {"drop_recorded_retries": False, **replay}}] + (sources or []),
    }


def _trace(tmp_path, times=SESSION):
    return write_trace(tmp_path / "t.parquet", [{"t": t, "cu": CU} for t in times])


def _warnings(plan) -> list[str]:
    return [n for n in plan.notes if n.startswith("warning: ")]


# -- validation -------------------------------------------------------------------------

@pytest.mark.parametrize("replay, field, expected", [
    ({"repeat": "loop"}, "repeat", "'none' or 'tile'"),
    ({"copies_spread": "hour"}, "copies_spread", "'window' or 'period'"),
    ({"period_s": 0}, "period_s", "greater than 0"),
    ({"period_s": 30}, "replay", "expected one of them with period_s"),
    ({"hourly_weights": [1.0] * 24}, "replay", 'expected repeat = "tile"'),
    ({"repeat": "tile", "hourly_weights": [1.0] * 23}, "hourly_weights", "24"),
    ({"repeat": "tile", "hourly_weights": [0.0] * 24}, "replay", "positive weight"),
    ({"repeat": "tile", "hourly_weights": [-1.0] + [1.0] * 23}, "hourly_weights", "0"),
])
def test_the_new_keys_are_validated_with_their_path(tmp_path, replay, field, expected):
    with pytest.raises(CapsimError) as err:
        validate(_raw(_trace(tmp_path), **replay), "s.toml")
    text = str(err.value)
    assert "sources[0].replay" in text and field in text and expected in text, text


def test_a_recording_of_one_instant_needs_its_period_named(tmp_path):
    loaded = validate(_raw(_trace(tmp_path, [3.0, 3.0]), repeat="tile"), "s.toml")
    with pytest.raises(CapsimError) as err:
        build_plan(loaded)
    assert err.value.field == "sources[0].replay.period_s"
    with pytest.raises(CapsimError):  # the size guard runs first and says the same
        estimate(loaded)


# -- warnings ---------------------------------------------------------------------------

def test_stacked_copies_of_a_short_recording_warn(tmp_path):
    plan = build_plan(validate(_raw(_trace(tmp_path), load_multiplier=2000), "s.toml"))
    stacked = [n for n in _warnings(plan) if "stacks" in n]
    assert stacked == [
        "warning: source 'rec': replay.load_multiplier = 2000 stacks 2,000 copies of a 29-s "
        "recording (8 request(s)) within 12 s of each other (copies_spread = \"window\"): "
        "about 16,000 requests in 41 s, a burst the recorded traffic never had; loop it "
        "over the run with replay.repeat = \"tile\", or spread the copies over a longer span "
        "with replay.copies_spread = \"period\" and replay.period_s (the run's 3,600 s, say)"]


@pytest.mark.parametrize("replay", [
    {"repeat": "tile", "load_multiplier": 4.5, "copies_spread": "period"},
    {"load_multiplier": 2000, "copies_spread": "period", "period_s": 3600},
    {"repeat": "tile"},
])
def test_spread_or_looped_copies_do_not_warn(tmp_path, replay):
    plan = build_plan(validate(_raw(_trace(tmp_path), **replay), "s.toml"))
    assert _warnings(plan) == []
    assert plan.covered_s is None


def test_many_copies_of_a_long_recording_warn_with_the_default_spread(tmp_path):
    times = [i * 7.0 for i in range(40)]  # 273 s
    notes = _warnings(build_plan(validate(
        _raw(_trace(tmp_path, times), duration=280, load_multiplier=11), "s.toml")))
    assert notes == [
        "warning: source 'rec': replay.load_multiplier = 11 stacks 11 copies of every "
        "recorded request within 12 s (copies_spread = \"window\"): each recorded burst "
        "lands 11 times over in one or two windows; spread the copies over the recording "
        "with replay.copies_spread = \"period\""]


def test_speed_past_the_traces_end_warns_and_the_allowance_is_over_the_traffic(tmp_path):
    times = [i * 172.0 / 99 for i in range(100)]  # 100 calls over 172 s
    loaded = validate(_raw(_trace(tmp_path, times), speed=10), "s.toml")
    out = run(loaded, records="none")
    assert _warnings(out.summary) == [
        "warning: source 'rec': the trace covers 17.2 s of the 3,600-s run (requests from "
        "0 s to 17.2 s, after replay.speed = 10): allowance hours and margins are over those "
        "17.2 s; loop the recording over the run with replay.repeat = \"tile\""]
    tier = out.summary.tiers[0]
    allowance = tier.daily_allowance.allowance_cu
    assert tier.daily_allowance.used_cu == pytest.approx(100 * CU)
    # 1,000 CU charged in 17.2 s: the allowance lasts A / (1000 CU per 17.2 s) hours, not
    # A / (1000 CU per hour) as over the whole run
    assert tier.daily_allowance.lasts_h == pytest.approx(allowance / (1000 / (17.2 / 3600)),
                                                         rel=1e-3)


def test_a_trace_shorter_than_a_window_is_judged_over_one_window(tmp_path):
    """7 s of traffic: a rate over 7 s would claim more than the window-level data give, so
    the allowance is taken over one 12-s window, and the warning says so (not "over those
    12 s" after saying the trace covers 7)."""
    times = [i * 7.0 / 9 for i in range(10)]  # 10 calls over 7 s
    loaded = validate(_raw(_trace(tmp_path, times), duration=120), "s.toml")
    out = run(loaded, records="none")
    (note,) = _warnings(out.summary)
    assert "the trace covers 7 s of the 120-s run" in note
    assert "over 12 s (one 12-second window, the shortest span a rate is taken over)" in note
    tier = out.summary.tiers[0]
    assert tier.daily_allowance.lasts_h == pytest.approx(
        tier.daily_allowance.allowance_cu / (10 * CU / (12 / 3600)), rel=1e-3)


def test_other_demand_over_the_run_keeps_the_allowance_over_the_run(tmp_path):
    poisson = {"name": "p", "key": KEY, "arrival": {"process": "poisson", "rate": 1}}
    loaded = validate(_raw(_trace(tmp_path), duration=600, sources=[poisson]), "s.toml")
    plan = build_plan(loaded)
    assert plan.covered_s is None
    assert _warnings(plan) == [
        "warning: source 'rec': the trace covers 29 s of the 600-s run (requests from 0 s to "
        "29 s); other demand spans the run, so allowance hours are over the whole run"]


def test_a_trace_that_ends_within_the_tolerance_does_not_warn(tmp_path):
    # 36 s of a 50-s run ends 14 s early (> 12 s): warns; of a 45-s run, 9 s early: not
    times = [0.0, 12.0, 24.0, 36.0]
    assert len(_warnings(build_plan(validate(_raw(_trace(tmp_path, times), duration=50),
                                             "s.toml")))) == 1
    assert _warnings(build_plan(validate(_raw(_trace(tmp_path, times), duration=45),
                                         "s.toml"))) == []


# -- the run-size guard -----------------------------------------------------------------

def test_the_size_estimate_counts_the_loops(tmp_path):
    trace = _trace(tmp_path)
    period = 29.0 * 8 / 7
    loops = math.ceil(3600 / period)
    tiled = estimate(validate(_raw(trace, repeat="tile", load_multiplier=3), "s.toml"))
    assert tiled.requests == pytest.approx(8 * 3 * loops)
    given = estimate(validate(_raw(trace, repeat="tile", period_s=100.0), "s.toml"))
    assert given.requests == pytest.approx(8 * 36)
    # the drawn demand never exceeds it
    plan = build_plan(validate(_raw(trace, repeat="tile", load_multiplier=3), "s.toml"))
    assert plan.open_count <= tiled.requests


def test_the_guard_refuses_a_tiled_run_too_large(tmp_path):
    from sim.workload.size_estimate import check

    trace = _trace(tmp_path)
    room = {"max_requests": 10_000_000, "available": 2**40, "disk_free": 2**50}
    once = validate(_raw(trace, load_multiplier=2e5), "s.toml")  # 1.6 M requests: fits
    check(once, **room)
    looped = validate(_raw(trace, repeat="tile", load_multiplier=2e5), "s.toml")  # x 109
    with pytest.raises(CapsimError, match="run too large"):
        check(looped, **room)


# -- stdout -----------------------------------------------------------------------------

def test_capsim_run_prints_the_warnings_under_its_table(tmp_path):
    trace = _trace(tmp_path)
    scenario = tmp_path / "s.toml"
    scenario.write_text(f"""name = "scaling"
duration = "10m"
tiers = ["RPC"]
[account]
keys = ["{KEY}"]
[[regions]]
name = "r"
rtt_ms = 0
[[sources]]
name = "rec"
key = "{KEY}"
trace = "{trace.name}"
replay = {{ load_multiplier = 50, drop_recorded_retries = false }}
""")
    done = CliRunner().invoke(main, ["run", str(scenario), "--out", str(tmp_path / "o"),
                                     "--records", "none"])
    assert done.exit_code == 0, done.output
    out = done.stdout
    assert "warning: source 'rec': replay.load_multiplier = 50 stacks 50 copies" in out
    assert "warning: source 'rec': the trace covers" in out
    assert out.index("| RPC |") < out.index("warning: ") < out.index("recommended tier")
    report = (tmp_path / "o" / "report.md").read_text()
    assert "replay.load_multiplier = 50 stacks 50 copies" in report


def test_load_reads_the_keys_from_a_file(tmp_path):
    trace = _trace(tmp_path)
    scenario = tmp_path / "s.toml"
    scenario.write_text(f"""name = "s"
[account]
keys = ["{KEY}"]
[[sources]]
name = "rec"
key = "{KEY}"
trace = "{trace.name}"
[sources.replay]
repeat = "tile"
copies_spread = "period"
hourly_weights = [1, 1, 1, 1, 1, 1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 2, 1, 1, 1, 1, 1]
""")
    r = load(scenario).scenario.sources[0].replay
    assert (r.repeat, r.copies_spread, r.hourly_weights[8]) == ("tile", "period", 4.0)
    bad = scenario.read_text().replace('repeat = "tile"', 'repeat = "loop"')
    scenario.write_text(bad)
    with pytest.raises(CapsimError) as err:
        load(scenario)
    assert "s.toml" in str(err.value) and "sources[0].replay.repeat" in str(err.value)


def test_same_inputs_and_seed_give_the_same_summary(tmp_path):
    raw = _raw(_trace(tmp_path), duration=900, repeat="tile", load_multiplier=2.5,
               copies_spread="period", hourly_weights=[1.0, 0.4] * 12)
    first = run(validate(raw, "s.toml"), records="none").summary.model_dump(mode="json")
    again = run(validate(raw, "s.toml"), records="none").summary.model_dump(mode="json")
    assert first == again
    other = run(validate({**raw, "seed": 99}, "s.toml"), records="none").summary
    assert other.model_dump(mode="json") != first  # the spread and the loops are drawn
