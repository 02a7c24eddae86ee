""""Why tiers fail" names the account that fails (issue 29): each account of a plan
against the run's SLO, by its own figures."""

from __future__ import annotations

from types import SimpleNamespace as NS

from sim.report.markdown import _by_account, account_breaches

SLO = NS(max_throttle_rate=0.01, max_failure_rate=0.001, p99_latency_ms=2000.0,
         allowance_must_last_day=True)


def account(name, throttle=0.0, failure=0.0, p99=100.0, lasts=None):
    return NS(account=name, tier="RPC", throttle_rate=throttle, failure_rate=failure,
              latency_p99_ms=p99, daily_allowance=NS(lasts_h=lasts))


def test_an_account_within_every_limit_breaks_nothing():
    # at the limits exactly: "at most" is met
    assert account_breaches(account("app", 0.01, 0.001, 2000.0, 24.0), SLO) == []


def test_each_breach_is_named_with_its_limit():
    a = account("indexer", throttle=0.2719, failure=0.0385, p99=2580.3, lasts=12.1)
    assert account_breaches(a, SLO) == [
        "throttle rate 27.19% > 1.00%", "failure rate 3.85% > 0.10%",
        "p99 2,580 ms > 2,000 ms", "its allowance lasts 12.1 h"]


def test_the_allowance_counts_only_when_the_slo_asks_for_it():
    a = account("app", lasts=3.0)
    assert account_breaches(a, NS(**{**vars(SLO), "allowance_must_last_day": False})) == []


def test_the_failing_account_is_named_and_the_others_said_to_meet():
    tier = NS(plan=NS(accounts=(account("app"), account("indexer", throttle=0.5))))
    assert _by_account(tier, SLO) == (". By account: app (RPC) meets it; **indexer** (RPC) "
                                      "fails: throttle rate 50.00% > 1.00%")
    assert _by_account(NS(plan=None), SLO) == ""
