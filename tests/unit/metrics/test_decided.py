"""What decided a tier (sim/metrics/decided.py, sim/results/decided.py), on hand-built
figures: each cause, the assumption mark, the "alone or all" rule of the failure rate,
the 402 split, and the tighter of the two margins computed by hand."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sim.config.scenario import Slo
from sim.metrics.decided import decide, slo_breaches
from sim.report.markdown import margin_sentence
from sim.results import decided
from sim.results.summary import DECIDING_CAUSES, DecidingCause, MethodSummary

SLO = Slo(max_throttle_rate=0.01, max_failure_rate=0.01, p99_latency_ms=1000.0)
METHODS = {"svc_call": SimpleNamespace(api="rpc"), "POST /v1/search": SimpleNamespace(api="search")}
RPC_ONLY = SimpleNamespace(apis={"rpc"})


def figures(*, throttle=0.0, outcomes=None, p99=100.0, lasts_h=None, ran_out=None,
            by_method=None, requests=1000):
    """The dict ``tier_summary`` builds, reduced to what the decider reads."""
    outcomes = outcomes or {}
    failed = sum(outcomes.values())
    return {
        "apis": ["rpc"],
        "requests": requests,
        "request_outcomes": {"ok": requests - failed, **outcomes},
        "throttle_rate": throttle,
        "failure_rate": failed / requests if requests else 0.0,
        "latency_ms": {"p99": p99},
        "daily_allowance": {"lasts_h": lasts_h, "ran_out_at": ran_out},
        "by_method": by_method or {"svc_call": MethodSummary(attempts=requests, ok=requests,
                                                             throttled=0, cu_settled=1.0)},
    }


def causes(summary, slo=SLO):
    return [(c["cause"], c["assumption"], c["breaks"])
            for c in decide(summary, slo, METHODS, RPC_ONLY)]


def test_a_tier_within_every_limit_is_decided_by_nothing():
    assert slo_breaches(figures(lasts_h=30.0), SLO) == []
    assert causes(figures(lasts_h=30.0)) == []


def test_throttles_over_the_limit_are_the_window():
    assert causes(figures(throttle=0.02)) == [("cu_window", False, ("throttle_rate",))]


@pytest.mark.parametrize(("outcome", "cause"), [
    ("434", "cu_window"), ("-32005", "cu_window"), ("430", "connection_limits"),
    ("421", "connection_limits"), ("435", "websocket_cap"), ("401", "other_failures"),
    ("oversized", "other_failures")])
def test_each_failure_outcome_has_its_cause(outcome, cause):
    # 2 % of requests fail, over the 1 % limit.
    assert causes(figures(outcomes={outcome: 20})) == [(cause, False, ("failure_rate",))]


def test_402_for_an_api_not_in_the_tier_and_no_p99_of_its_own():
    """Every request is a search call on an RPC tier: 402 for all, no success, so the
    p99 is undefined -- a consequence of the failures, not a second cause."""
    by_method = {"POST /v1/search": MethodSummary(attempts=1000, ok=0, throttled=0,
                                                  cu_settled=0.0)}
    s = figures(outcomes={"402": 1000}, p99=None, by_method=by_method)
    assert [b.criterion for b in slo_breaches(s, SLO)] == ["failure_rate", "p99_latency"]
    (only,) = decide(s, SLO, METHODS, RPC_ONLY)
    assert (only["cause"], only["assumption"]) == ("api_not_in_tier", False)
    assert "POST /v1/search use search; this tier has rpc" in only["detail"]
    assert "100.0% of requests" in only["detail"]


def test_no_request_at_all_leaves_the_undefined_p99_as_the_cause():
    s = figures(p99=None, requests=0)
    assert causes(s) == [("latency", False, ("p99_latency",))]


def test_a_p99_over_its_limit_is_latency():
    assert causes(figures(p99=1500.0)) == [("latency", False, ("p99_latency",))]


def test_an_allowance_lasting_under_a_day_is_an_assumption():
    assert causes(figures(lasts_h=23.9)) == [("daily_allowance", True, ("daily_allowance",))]
    # ... and no cause when the scenario does not ask the allowance to last the day
    relaxed = Slo(max_throttle_rate=0.01, max_failure_rate=0.01, p99_latency_ms=1000.0,
                  allowance_must_last_day=False)
    assert causes(figures(lasts_h=23.9), relaxed) == []


def test_a_failure_rate_is_decided_by_each_cause_over_the_limit_alone():
    """402 for 8 % (API) and 430 for 0.5 %: the API alone breaks the 1 % limit, the 430s
    alone do not, so only the API decided it."""
    by_method = {"svc_call": MethodSummary(attempts=920, ok=915, throttled=0, cu_settled=1.0),
                 "POST /v1/search": MethodSummary(attempts=80, ok=0, throttled=0,
                                                  cu_settled=0.0)}
    s = figures(outcomes={"402": 80, "430": 5}, by_method=by_method)
    assert causes(s) == [("api_not_in_tier", False, ("failure_rate",))]


def test_causes_that_only_add_up_to_the_limit_all_decide_it():
    """430 for 0.6 % and 435 for 0.6 %: neither alone is over 1 %, together they are."""
    s = figures(outcomes={"430": 6, "435": 6})
    assert causes(s) == [("connection_limits", False, ("failure_rate",)),
                         ("websocket_cap", False, ("failure_rate",))]


def test_402_splits_between_the_api_and_an_allowance_that_ran_out():
    """50 requests got 402; the 30 search calls (an API the tier lacks) account for 30 of
    them, the allowance that ran out for the other 20."""
    by_method = {"svc_call": MethodSummary(attempts=970, ok=950, throttled=0, cu_settled=1.0),
                 "POST /v1/search": MethodSummary(attempts=30, ok=0, throttled=0,
                                                  cu_settled=0.0)}
    s = figures(outcomes={"402": 50}, ran_out="2026-01-05T20:00:00Z", by_method=by_method)
    found = {c["cause"]: c for c in decide(s, SLO, METHODS, RPC_ONLY)}
    assert set(found) == {"api_not_in_tier", "daily_allowance"}
    assert "3.0% of requests" in found["api_not_in_tier"]["detail"]
    assert "2.0% of requests" in found["daily_allowance"]["detail"]
    assert found["daily_allowance"]["assumption"] is True


def test_the_window_breaking_two_criteria_is_one_entry_in_the_fixed_order():
    s = figures(throttle=0.3, outcomes={"-32005": 100}, p99=5000.0, lasts_h=6.0)
    got = causes(s)
    assert got == [("cu_window", False, ("throttle_rate", "failure_rate")),
                   ("latency", False, ("p99_latency",)),
                   ("daily_allowance", True, ("daily_allowance",))]
    assert [c for c, *_ in got] == [c for c in DECIDING_CAUSES if c in {g[0] for g in got}]


# -- the words of the outputs -----------------------------------------------------------

def tier(decided_by=(), *, meets=False, peak=2040.0, limit=4000.0, lasts_h=None,
         ran_out=None, allowance=None, used=0.0):
    return SimpleNamespace(
        tier="T", meets_slo=meets, decided_by=tuple(decided_by), plan=None,
        cu=SimpleNamespace(peak_window_used=peak, limit=limit),
        daily_allowance=SimpleNamespace(lasts_h=lasts_h, ran_out_at=ran_out,
                                        allowance_cu=allowance, used_cu=used))


ALLOWANCE = DecidingCause(cause="daily_allowance", assumption=True,
                          breaks=("daily_allowance",), detail="")
WINDOW = DecidingCause(cause="cu_window", assumption=False, breaks=("throttle_rate",),
                       detail="")


def test_the_verdict_cell_marks_an_assumed_cause():
    assert decided.verdict(tier(meets=True)) == "meets"
    assert decided.verdict(tier([ALLOWANCE])) == "fails: allowance*"
    assert decided.verdict(tier([WINDOW, ALLOWANCE])) == "fails: window, allowance*"
    assert decided.verdict(tier()) == "fails"  # a summary written before decided_by


def test_a_tier_failing_only_on_the_allowance_says_it_is_an_assumption():
    only = tier([ALLOWANCE])
    assert decided.only_assumptions(only)
    assert decided.decided_sentence(only) == ("decided by an assumption: daily allowance, "
                                              "not shown by the spec")
    both = tier([WINDOW, ALLOWANCE])
    assert not decided.only_assumptions(both)
    notes = decided.verdict_notes([only, both, tier(meets=True)])
    assert notes[0].startswith("SLO: what decided a failing tier: window = ")
    assert notes[1].startswith("*: decided by an assumption: daily allowance, not shown by "
                               "the spec")
    assert decided.verdict_notes([tier(meets=True)]) == []


def test_the_tighter_margin_is_the_allowance_when_it_allows_less_growth():
    """4,000 CU budget, busiest window 2,040 CU: the window allows 4000 / 2040 = 1.96x
    (49 % to spare); an allowance lasting 29.76 h at this rate allows 29.76 / 24 = 1.24x:
    the allowance is the tighter margin."""
    t = tier(lasts_h=29.76)
    assert decided.window_growth(t) == pytest.approx(1.9608, abs=1e-4)
    assert decided.allowance_growth(t) == pytest.approx(1.24)
    assert decided.tighter_margin(t) == "daily_allowance"
    text = margin_sentence(t)
    assert text.startswith("the daily allowance limits growth to 1.24x (it lasts 29.8 h")
    assert "the window would allow 1.96x" in text and "1,960 CU to spare" in text


def test_the_tighter_margin_is_the_window_when_the_allowance_lasts_longer():
    t = tier(lasts_h=72.0)  # 3.00x against the window's 1.96x
    assert decided.tighter_margin(t) == "cu_window"
    text = margin_sentence(t)
    assert text.startswith("the 12-second window limits growth to 1.96x: the busiest")
    assert text.endswith("the daily allowance would allow 3.00x (it lasts 72.0 h at this "
                         "rate; an assumed number, not shown by the spec)")


def test_without_an_allowance_figure_the_margin_is_the_window_as_before():
    assert margin_sentence(tier()) == ("the busiest 12-second window used 2,040 CU of its "
                                       "4,000 CU budget (51%; 1,960 CU to spare)")


def test_runs_of_a_day_or_more_read_the_allowance_off_the_busiest_day():
    """No ``lasts_h`` (the run saw whole days): 24 h x 9,000 / 6,000 CU = 36 h, 1.5x;
    none when it ran out."""
    assert decided.allowance_hours(tier(allowance=9000.0, used=6000.0)) == pytest.approx(36.0)
    assert decided.allowance_growth(tier(allowance=9000.0, used=6000.0)) == pytest.approx(1.5)
    assert decided.allowance_hours(tier(allowance=9000.0, used=9000.0,
                                        ran_out="2026-01-05T20:00:00Z")) is None


def test_labels_and_words_cover_every_cause():
    assert set(decided.LABELS) == set(decided.WORDS) == set(DECIDING_CAUSES)


def test_union_labels_counts_replications():
    runs = [tier([WINDOW, ALLOWANCE]), tier([ALLOWANCE]), tier(meets=True)]
    assert decided.union_labels(runs) == "window (1/3), allowance* (2/3)"


def test_with_no_tier_recommended_every_tier_failing_on_assumptions_is_named():
    small = tier([ALLOWANCE])
    small.tier, small.monthly_usd = "Small", 10.0
    other = tier([WINDOW, ALLOWANCE])
    summary = SimpleNamespace(recommended=SimpleNamespace(tier=None), tiers=[small, other])
    assert decided.passed_over_on_assumptions(summary) == [small]
    assert decided.assumption_line(summary) == (
        "decided by an assumption: Small ($10) fails only on the daily allowance, a number "
        "the spec does not show")
    summary.tiers = [other]
    assert decided.assumption_line(summary) is None


def test_a_tier_without_the_streams_api_fails_its_websocket_clients():
    """A websocket client of the Streams API on an RPC-only tier: every handshake is
    refused with 402 (spec: the API outside the selection), no session ever connects, so
    the tier cannot serve the scenario whatever its HTTP figures; the failure is the API's,
    not an assumption. With the API in the tier, the same 402s (the allowance's) do not
    decide it by the API."""
    bot = [SimpleNamespace(stream="pending-txs", api="streams")]
    s = {**figures(), "websockets": {"handshakes": {"ok": 0, "402": 40}}}
    assert [b.criterion for b in slo_breaches(s, SLO, ["pending-txs"])] == ["websockets"]
    (only,) = decide(s, SLO, METHODS, RPC_ONLY, bot)
    assert (only["cause"], only["assumption"], only["breaks"]) == (
        "api_not_in_tier", False, ("websockets",))
    assert "pending-txs" in only["detail"] and "40 handshakes" in only["detail"]
    with_streams = SimpleNamespace(apis={"rpc", "streams"})
    assert decide(s, SLO, METHODS, with_streams, bot) == []
    # no websocket clients, or none refused: nothing to decide
    assert decide(figures(), SLO, METHODS, RPC_ONLY, bot) == []
