"""``capsim run --robust`` / ``--calibration`` and ``[price_ranges]``.

Closed form: a constant ``r`` svc_call per second costing ``c`` CU, no retries, an SLO of
no throttle at all, meets a tier of ``L`` CU per 12-s window exactly when ``12 r c <= L``
(epoch windows from t = 0 and arrivals at k / r put exactly 12 r calls in each window).
With ``c`` ranging over an interval, the recommendation at each end is the cheapest tier
meeting that inequality at that end's ``c``.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sim.cli.main import main

RATE = 5.0
BUDGETS = (600, 1200, 1800, 2400)


def scenario(tmp_path, c: float, price_range: tuple[float, float] | None,
             extra: str = "") -> str:
    tiers = "".join(f'[[custom_tiers]]\nname = "T{L}"\napis = ["rpc"]\ncu_per_window = {L}\n'
                    f"monthly_usd = {L / 60}\n" for L in BUDGETS)
    ranges = ("" if price_range is None else
              f'[price_ranges]\n"rpc.method_cu.svc_call" = [{price_range[0]}, '
              f"{price_range[1]}]\n")
    text = (f'name = "robust"\nduration = 60\n'
            f"tiers = {json.dumps([f'T{L}' for L in BUDGETS])}\n{tiers}"
            '[account]\nkeys = ["k"]\n[clients.default]\nretry = { policy = "none" }\n'
            "[slo]\nmax_throttle_rate = 0.0\n"
            f"[pricing.rpc.method_cu]\nsvc_call = {c}\n{ranges}{extra}"
            '[[sources]]\nname = "s"\nkey = "k"\n'
            f'arrival = {{ process = "constant", rate = {RATE} }}\n')
    path = tmp_path / "s.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def cheapest(c: float) -> str | None:
    """The closed form: the cheapest tier with 12 r c <= L."""
    return next((f"T{L}" for L in BUDGETS if 12 * RATE * c <= L), None)


def run(*args):
    return CliRunner().invoke(main, ["run", *map(str, args)], catch_exceptions=False)


@pytest.mark.parametrize("c, lo, hi", [(20.0, 10.0, 25.0), (15.0, 12.0, 19.0),
                                       (30.0, 30.0, 45.0)])
def test_robust_ends_match_the_closed_form(tmp_path, c, lo, hi):
    out = tmp_path / "r"
    result = run(scenario(tmp_path, c, (lo, hi)), "--robust", "-q", "--records", "none",
                 "--out", out)
    assert result.exit_code == 0, result.output
    rec = json.loads((out / "summary.json").read_text())["recommended"]
    assert rec["tier"] == cheapest(c)
    assert rec["at_low_prices"] == cheapest(lo)
    assert rec["at_high_prices"] == cheapest(hi)
    assert rec["robust"] == (cheapest(lo) == cheapest(c) == cheapest(hi))
    call = next(r for r in rec["sensitivity"] if r["price"] == "rpc.method_cu.svc_call")
    assert (call["at_low"], call["at_high"], call["source"]) == (cheapest(lo), cheapest(hi),
                                                                 "scenario")
    assert call["flips"] == (not rec["robust"])
    # prices this demand never pays (sizing, handshakes) cannot flip it
    assert all(not r["flips"] for r in rec["sensitivity"] if r["price"] != call["price"])
    md = (out / "report.md").read_text()
    assert "## How sure" in md and "sensitivity_tornado.png" in md
    assert (out / "sensitivity_tornado.png").exists()


def test_exact_boundary_and_no_tier(tmp_path):
    """12 r c = L exactly meets L (the limiter admits what fits the budget exactly); a
    price no tier affords gives null."""
    out = tmp_path / "r"
    result = run(scenario(tmp_path, 20.0, (10.0, 41.0)), "--robust", "-q", "--records",
                 "none", "--out", out)
    assert result.exit_code == 0, result.output
    rec = json.loads((out / "summary.json").read_text())["recommended"]
    assert rec["at_low_prices"] == "T600" == cheapest(10.0)   # 600 <= 600
    assert rec["at_high_prices"] is None is cheapest(41.0)    # 2460 > 2400
    assert rec["robust"] is False


def test_without_robust_the_summary_is_unchanged(tmp_path):
    out = tmp_path / "r"
    assert run(scenario(tmp_path, 20.0, (10.0, 25.0)), "-q", "--records", "none",
               "--out", out).exit_code == 0
    rec = json.loads((out / "summary.json").read_text())["recommended"]
    assert set(rec) == {"tier", "reason"}
    assert "How sure" not in (out / "report.md").read_text()


def test_calibration_feeds_prices_phase_refund_rule_and_ranges(tmp_path):
    """A calibration.json's prices and limiter go into the run; its intervals are the
    ranges (the svc_call interval [22, 24] keeps T1800 at both ends: 12 * 5 * 24 = 1440)."""
    cal = {"prices": [{"name": "rpc.method_cu.svc_call", "value": 23.0, "how": "decisions",
                       "low": 22.0, "high": 24.0}],
           "pricing": {"rpc": {"method_cu": {"svc_call": 23.0}}},
           "limiter": {"alignment": "utc", "phase_s": 0.0, "refund_to": "current-window",
                       "kind": "fixed-window"},
           "gas_caps": {}}
    (tmp_path / "cal").mkdir()
    (tmp_path / "cal" / "calibration.json").write_text(json.dumps(cal))
    out = tmp_path / "r"
    result = run(scenario(tmp_path, 10.0, None), "--calibration", tmp_path / "cal", "-q",
                 "--records", "none", "--out", out)
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "summary.json").read_text())
    assert doc["limiter"]["refund_to"] == "current-window"
    assert doc["limiter"]["alignment"] == "utc"
    rec = doc["recommended"]
    assert rec["tier"] == cheapest(23.0) == "T1800"
    assert rec["at_low_prices"] == cheapest(22.0) and rec["at_high_prices"] == cheapest(24.0)
    call = next(r for r in rec["sensitivity"] if r["price"] == "rpc.method_cu.svc_call")
    assert call["source"] == "calibration" and (call["low"], call["high"]) == (22.0, 24.0)
    bad = CliRunner().invoke(main, ["run", scenario(tmp_path, 10.0, None), "--calibration",
                                    str(tmp_path / "none")])
    assert bad.exit_code == 2 and "no such calibration" in bad.output


def test_headroom_takes_a_calibration(tmp_path):
    """capsim headroom --calibration prices every run at the calibration's svc_call: the
    closed form's headroom of T1800 is L / (12 r c) = 1800 / (60 * 23)."""
    cal = {"prices": [], "pricing": {"rpc": {"method_cu": {"svc_call": 23.0}}},
           "limiter": {"alignment": "epoch", "refund_to": "origin-window"}, "gas_caps": {}}
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(cal))
    result = CliRunner().invoke(main, ["headroom", scenario(tmp_path, 10.0, None), "--tier",
                                       "T1800", "--calibration", str(path), "--json",
                                       "--tolerance", "0.01"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    (tier,) = doc["tiers"]
    assert tier["headroom"] == pytest.approx(1800 / (12 * RATE * 23.0), rel=0.03)


# -- the daily allowance and the monthly prices (issue 29, part 2) ---------------------------
#
# Closed form for the catalog tiers RPC (4,000 CU per window) and Professional bundle
# (50,000): r svc_call per second at c CU each meet a tier of budget L and daily
# allowance A when 12 r c <= L and the allowance lasts A / (3600 r c) >= 24 hours
# ([slo] allowance_must_last_day). svc_call's shipped price (20) and the allowances keep
# their default range (x0.5 to x2); the monthly prices are $49 and $499.

TIERS = {"RPC": (4000.0, 7.2e6, 49.0), "Professional bundle": (50000.0, 9e7, 499.0)}


def catalog_scenario(tmp_path, rate: float, ranges: str = "") -> str:
    text = (f'name = "allowance"\nduration = 60\ntiers = {json.dumps(list(TIERS))}\n'
            '[account]\nkeys = ["k"]\n[clients.default]\nretry = { policy = "none" }\n'
            + (f"[price_ranges]\n{ranges}" if ranges else "")
            + '[[sources]]\nname = "s"\nkey = "k"\n'
            f'arrival = {{ process = "constant", rate = {rate} }}\n')
    path = tmp_path / "a.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def meets(tier: str, rate: float, c: float, allowance: float | None = None) -> bool:
    budget, shipped, _usd = TIERS[tier]
    a = shipped if allowance is None else allowance
    return 12 * rate * c <= budget and a / (3600 * rate * c) >= 24


def pick(rate: float, c: float, allowances: dict | None = None,
         usd: dict | None = None) -> str | None:
    """The cheapest tier meeting the closed form."""
    allowances, usd = allowances or {}, usd or {}
    ok = [t for t in TIERS if meets(t, rate, c, allowances.get(t))]
    return min(ok, key=lambda t: usd.get(t, TIERS[t][2]), default=None)


@pytest.mark.parametrize("rpc_range", [None, (3.6e6, 2.88e7)])
def test_an_allowance_decided_recommendation_varies_the_allowance(tmp_path, rpc_range):
    """At 10 calls/s RPC's window has room (2,400 of 4,000 CU) but its allowance lasts
    10 h: the allowance decides Professional bundle. The least costly corner takes each
    allowance at its HIGH end (and svc_call at its low): RPC's then lasts 40 h and RPC is
    recommended; taking the low end there would keep Professional bundle."""
    rate, c = 10.0, 20.0
    ranges = ("" if rpc_range is None else
              f'"tiers.RPC.daily_allowance_cu" = [{rpc_range[0]}, {rpc_range[1]}]\n')
    out = tmp_path / "r"
    result = run(catalog_scenario(tmp_path, rate, ranges), "--robust", "-q", "--records",
                 "none", "--out", out)
    assert result.exit_code == 0, result.output
    rec = json.loads((out / "summary.json").read_text())["recommended"]
    lo, hi = rpc_range or (3.6e6, 1.44e7)
    assert rec["tier"] == pick(rate, c) == "Professional bundle"
    assert rec["at_low_prices"] == pick(rate, c / 2, {"RPC": hi, "Professional bundle": 1.8e8})
    assert rec["at_low_prices"] == "RPC"
    assert rec["at_high_prices"] == pick(rate, 2 * c, {"RPC": lo,
                                                       "Professional bundle": 4.5e7})
    rows = {r["price"]: r for r in rec["sensitivity"]}
    allowance = rows["tiers.RPC.daily_allowance_cu"]
    assert (allowance["low"], allowance["high"]) == (lo, hi)
    assert allowance["source"] == ("default" if rpc_range is None else "scenario")
    assert allowance["at_low"] == pick(rate, c, {"RPC": lo})
    assert allowance["at_high"] == pick(rate, c, {"RPC": hi})
    assert allowance["flips"] == (pick(rate, c, {"RPC": hi}) != rec["tier"])
    assert set(rows) == {"rpc.method_cu.svc_call", "tiers.RPC.daily_allowance_cu",
                         "tiers.Professional bundle.daily_allowance_cu"}
    assert rec["robust"] is False and rec["used_not_varied"] == []
    assert "rpc.default_method_cu" in rec["not_used"]
    assert "sizing.item_base_cu" in rec["not_used"]


def test_a_monthly_price_range_reranks_without_changing_the_tiers(tmp_path):
    """At 1 call/s both tiers meet at every end of the default ranges (RPC's allowance
    lasts at least 3.6e6 / (3600 * 40) = 25 h): only the price ordering can change it.
    RPC at up to $600 is dearer than Professional bundle's $499."""
    rate, c = 1.0, 20.0
    out = tmp_path / "r"
    result = run(catalog_scenario(tmp_path, rate, '"tiers.RPC.monthly_usd" = [40, 600]\n'),
                 "--robust", "-q", "--records", "none", "--out", out)
    assert result.exit_code == 0, result.output
    rec = json.loads((out / "summary.json").read_text())["recommended"]
    assert rec["tier"] == pick(rate, c) == "RPC"
    monthly = next(r for r in rec["sensitivity"] if r["price"] == "tiers.RPC.monthly_usd")
    assert monthly["at_low"] == pick(rate, c, usd={"RPC": 40.0}) == "RPC"
    assert monthly["at_high"] == pick(rate, c, usd={"RPC": 600.0}) == "Professional bundle"
    assert monthly["flips"] and rec["robust"] is False
    assert rec["at_high_prices"] == pick(rate, 2 * c, {"RPC": 3.6e6, "Professional bundle":
                                                       4.5e7}, {"RPC": 600.0})
    # the other prices alone change nothing: both tiers meet at every end
    assert [r["price"] for r in rec["sensitivity"] if r["flips"]] == ["tiers.RPC.monthly_usd"]
