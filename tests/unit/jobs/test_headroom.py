"""``capsim headroom`` (sim/jobs/headroom.py) against closed forms.

A constant-rate ``svc_call`` source at r requests/s costing c CU, no retries, zero
service time and round trip, SLO throttle rate 0, a custom tier of L CU per 12-second
window. At load x the epoch-aligned windows of a run lasting a multiple of 12 s receive
floor or ceil of 12 r x requests each, and on average exactly 12 r x, so some window
exceeds n* = floor(L / c) requests iff 12 r x > n*: the headroom is n* / (12 r) exactly
(Fraction arithmetic below). The search must return lo <= H < hi with hi / lo within
the tolerance.
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from click.testing import CliRunner
from scenarios import write_scenario

from sim.cli.main import main
from sim.config.pricing import default_pricing_table
from sim.core.errors import CapsimError
from sim.jobs.headroom import find_headroom

C = Fraction(default_pricing_table()["rpc"]["method_cu"]["svc_call"])


def scenario(tmp_path, *, rate, limit, allowance=1e12, duration=120, slo_failure=1.0,
             slo_throttle=0.0, service_s=0.0, last_day=False):
    return write_scenario(tmp_path, filename="headroom.toml", name="headroom",
                          duration=duration, tiers=["Mine"], tables=f"""
[[custom_tiers]]
name = "Mine"
cu_per_window = {limit}
daily_allowance_cu = {allowance}
[[regions]]
name = "here"
rtt_ms = 0
[clients.default]
retry = {{ policy = "none" }}
[methods.svc_call]
api = "rpc"
service_time = {{ dist = "constant", value = {service_s} }}
[slo]
max_throttle_rate = {slo_throttle}
max_failure_rate = {slo_failure}
p99_latency_ms = 1e9
allowance_must_last_day = {str(last_day).lower()}
""", sources=f"""[[sources]]
name = "calls"
key = "k"
arrival = {{ process = "constant", rate = {rate} }}
""")


def closed_form(rate: str, limit: int) -> Fraction:
    return Fraction(limit // C) / (12 * Fraction(rate))


@pytest.mark.parametrize(("rate", "limit", "tol"), [
    ("2.5", 1010, 0.01),   # H = 50 / 30 = 5/3: the search goes up from 1
    ("10", 1010, 0.02),    # H = 50 / 120 = 5/12: the search goes down from 1
    ("0.75", 250, 0.005),  # H = 12 / 9 = 4/3
])
def test_headroom_matches_the_closed_form(tmp_path, rate, limit, tol):
    expected = closed_form(rate, limit)
    doc = find_headroom(scenario(tmp_path, rate=rate, limit=limit), tolerance=tol)
    (entry,) = doc.tiers
    lo, hi = Fraction(entry.headroom), Fraction(entry.next_load)
    assert lo <= expected < hi
    assert hi / lo <= 1 + Fraction(tol)
    assert not entry.capped
    assert entry.breaks_first == "throttle_rate"
    assert entry.limit == 0.0 and entry.value > 0


def test_headroom_is_capped_at_max_load(tmp_path):
    doc = find_headroom(scenario(tmp_path, rate="1", limit=100_000), max_load=8)
    (entry,) = doc.tiers
    assert entry.capped and entry.headroom == 8 and entry.next_load is None
    assert entry.evaluations == 4  # 1, 2, 4, 8
    assert "at least 8× today's load" in entry.describe()


def test_every_replication_must_meet_and_the_report_says_so(tmp_path):
    doc = find_headroom(scenario(tmp_path, rate="2.5", limit=1010), replications=3,
                        tolerance=0.05)
    assert doc.meets_means == "every replication meets the SLO"
    (entry,) = doc.tiers
    assert Fraction(entry.headroom) <= closed_form("2.5", 1010) < Fraction(entry.next_load)


def test_the_daily_allowance_running_out_breaks_first(tmp_path):
    """No window limit in reach, an allowance of A CU: at load x the run spends
    r x c per second, so the allowance runs out within the run iff r x c T > A
    (here 2 x 20 x 120 = 4800 CU at load 1, A = 9000: headroom about 1.875)."""
    path = scenario(tmp_path, rate="2", limit=1_000_000, allowance=9000, slo_failure=0.0)
    doc = find_headroom(path, tolerance=0.01)
    (entry,) = doc.tiers
    expected = Fraction(9000) / (2 * C * 120)
    assert Fraction(entry.headroom) <= expected * Fraction(101, 100)
    assert Fraction(entry.next_load) >= expected * Fraction(99, 100)
    assert entry.breaks_first == "daily_allowance"
    assert entry.allowance_ran_out_at.startswith("2026-01-05T00:01")  # late in the run
    assert "daily allowance (runs out at" in entry.describe()


def test_an_allowance_that_would_not_last_the_day_breaks_first(tmp_path):
    """Item 13 (issue 21): with ``allowance_must_last_day`` a run shorter than a day fails
    once the allowance A would last under 24 h at its rate: r x c * 86400 > A, so the
    headroom is A / (r c 86400) (here 1.5); the allowance never runs out within the run."""
    allowance = 1.5 * 2 * C * 86400
    path = scenario(tmp_path, rate="2", limit=1_000_000, allowance=int(allowance),
                    last_day=True)
    doc = find_headroom(path, tolerance=0.01)
    (entry,) = doc.tiers
    expected = Fraction(int(allowance)) / (2 * C * 86400)
    assert Fraction(entry.headroom) <= expected * Fraction(101, 100)
    assert Fraction(entry.next_load) >= expected * Fraction(99, 100)
    assert entry.breaks_first == "daily_allowance" and entry.allowance_ran_out_at is None
    assert entry.value < 24 and "daily allowance (lasts" in entry.describe()


def test_cli_headroom_json_and_run_headroom(tmp_path):
    path = scenario(tmp_path, rate="2.5", limit=1010)
    r = CliRunner().invoke(main, ["headroom", str(path), "--json", "--tolerance", "0.01"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    (entry,) = doc["tiers"]
    assert entry["tier"] == "Mine" and entry["breaks_first"] == "throttle_rate"
    assert Fraction(entry["headroom"]) <= Fraction(5, 3) < Fraction(entry["next_load"])
    r = CliRunner().invoke(main, ["headroom", str(path)])
    assert r.exit_code == 0
    assert "Mine: meets the SLO up to 1.6" in r.output and "throttle rate breaks first" in r.output
    # A constant service time changes no window count (every CU is reserved at admission
    # and settles to the same amount), and gives the run's latency plots a non-zero scale.
    path = scenario(tmp_path, rate="2.5", limit=1010, service_s=0.01)
    r = CliRunner().invoke(main, ["run", str(path), "--headroom", "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    assert "Mine: meets the SLO up to 1.6" in r.output
    r = CliRunner().invoke(main, ["headroom", str(path), "--tolerance", "0"])
    assert r.exit_code == 2


@pytest.mark.parametrize(("kwargs", "field"), [
    # 1 + 1e-17 == 1 in floating point: hi / lo <= 1 + tolerance only once lo == hi,
    # which the geometric mean of two neighbouring floats may never reach
    ({"tolerance": 1e-17}, "--tolerance"),
    ({"tolerance": 0.0009}, "--tolerance"),  # below the documented 0.001
    ({"tolerance": float("nan")}, "--tolerance"),
    ({"max_load": float("inf")}, "--max-load"),
    ({"max_load": 2e6}, "--max-load"),  # above the documented 1e6
    ({"replications": 101}, "--replications"),  # above the documented 100
])
def test_a_search_that_could_not_end_is_refused_before_it_starts(tmp_path, kwargs, field):
    # the scenario does not exist: a search that started would fail on it instead
    with pytest.raises(CapsimError) as err:
        find_headroom(str(tmp_path / "missing.toml"), **kwargs)
    assert err.value.field == field and "expected" in err.value.message


def test_a_tier_without_the_api_breaks_on_the_failure_rate_and_says_why(tmp_path):
    """Issue 29 part 5: RPC calls on a tier with only the search API get 402 each, so no
    request succeeds at any load. The p99 is then undefined, a consequence of the
    failures: what breaks is the failure rate (1.0, over the limit), because the API is
    not in the tier's selection -- not "p99 latency" with no value."""
    path = scenario(tmp_path, rate="1", limit=100_000, slo_failure=0.001)
    text = path.read_text().replace('name = "Mine"\n', 'name = "Mine"\napis = ["search"]\n')
    path.write_text(text)
    lines: list[str] = []
    doc = find_headroom(path, min_load=0.25, progress=lines.append)
    (entry,) = doc.tiers
    assert entry.headroom is None and entry.next_load == 0.25
    assert entry.breaks_first == "failure_rate"
    assert entry.value == 1.0 and entry.limit == 0.001
    assert entry.cause == "402: the API is not in this tier's selection"
    assert entry.decided_by == "API"
    assert ("failure rate breaks first (402: the API is not in this tier's selection)"
            in entry.describe())
    # one progress line per load evaluated: 1, 0.5, 0.25
    assert len(lines) == entry.evaluations == 3
    assert lines[0].startswith("headroom: Mine at 1× today's load: fails: API")
    r = CliRunner().invoke(main, ["headroom", str(path), "--json"])
    assert r.exit_code == 0, r.output
    (entry,) = json.loads(r.output)["tiers"]
    assert entry["breaks_first"] == "failure_rate" and entry["value"] == 1.0
    assert "headroom: Mine" not in r.output  # no progress off a terminal


class Counting:
    """A sequential executor that says it has ``workers`` workers and counts rounds
    (batches) and model runs."""

    def __init__(self, workers: int) -> None:
        from sim.jobs.executors import SequentialExecutor

        self.workers, self.rounds, self.runs = workers, 0, 0
        self._inner = SequentialExecutor()

    def as_completed(self, fn, items):
        items = list(items)
        self.rounds += 1
        self.runs += len(items)
        yield from self._inner.as_completed(fn, items)


@pytest.mark.parametrize(("rate", "limit", "tol"), [
    ("2.5", 1010, 0.01),   # H = 5/3: up from 1, then bisect
    ("10", 1010, 0.02),    # H = 5/12: down from 1, then bisect
])
@pytest.mark.parametrize("workers", [2, 3, 7])
def test_several_loads_per_round_find_the_sequential_answer_in_fewer_rounds(
        tmp_path, rate, limit, tol, workers):
    path = scenario(tmp_path, rate=rate, limit=limit)
    one, many = Counting(1), Counting(workers)
    sequential = find_headroom(path, tolerance=tol, executor=one)
    parallel = find_headroom(path, tolerance=tol, executor=many)
    (entry,) = parallel.tiers
    expected = closed_form(rate, limit)
    assert Fraction(entry.headroom) <= expected < Fraction(entry.next_load)
    assert parallel.to_dict() == sequential.to_dict()  # the same path, answer and bracket
    assert one.rounds == one.runs == entry.evaluations  # one load a round
    # A round of 2^d - 1 loads takes d steps of the path: the rounds needed at most
    # ceil(steps / d), where d = floor(log2(workers + 1)); never more runs than
    # workers a round.
    d = (workers + 1).bit_length() - 1
    assert many.rounds <= -(-entry.evaluations // d)
    assert many.runs <= workers * many.rounds


def test_replications_share_the_workers_and_the_answer_stays(tmp_path):
    path = scenario(tmp_path, rate="2.5", limit=1010)
    one, many = Counting(1), Counting(6)  # 3 replications: 2 loads a round
    a = find_headroom(path, tolerance=0.05, replications=3, executor=one)
    b = find_headroom(path, tolerance=0.05, replications=3, executor=many)
    assert a.to_dict() == b.to_dict()
    assert many.rounds < one.rounds and many.runs % 3 == 0


def test_the_capped_search_takes_three_steps_in_one_round_of_seven(tmp_path):
    # 7 loads: the next one, the 2 after its two verdicts and the 4 after theirs (1; 2,
    # 1/2; 4, sqrt 2, ...): the path 1, 2, 4 (each meets; 4 is max_load) in one round.
    many = Counting(7)
    doc = find_headroom(scenario(tmp_path, rate="1", limit=100_000), max_load=4,
                        executor=many)
    (entry,) = doc.tiers
    assert entry.capped and entry.headroom == 4 and entry.evaluations == 3  # 1, 2, 4
    assert many.rounds == 1 and many.runs == 7


def test_run_headroom_searches_on_the_runs_executor(tmp_path):
    from sim.cli.sweep import run_headroom_line

    path = scenario(tmp_path, rate="2.5", limit=1010)
    many = Counting(3)
    line = run_headroom_line(str(path), (), "Mine", None, many)
    assert line == find_headroom(path).tiers[0].describe()
    assert many.runs > many.rounds  # rounds of several loads: the executor was used
