"""Two accounts of two tiers in one log (issue 36, item 2), answered by the independent
reference service (tests/helpers/calib_reference.py, no capsim code): each account its
own budget, both the same hidden prices and window phase, their rows merged as a
company's gateway would log them.

* Account "big" on 'All 3 APIs' (8,400 CU per window): two keys, RPC calls and sizing
  requests; account "small" on 'RPC' (4,000 CU): one key, RPC calls, in the same
  bursts (one company's peaks, :func:`peaks`).
* With the mapping, each account is calibrated on its own budget and one price list
  is identified from both: every interval contains the hidden price, the call price
  within 15 %, the phase interval within 0.3 s of the truth and containing it, the
  replay at the fit agrees with at least 97 % of the attempts.
* Without it, no shared budget explains the decisions: the verdict says "does not fit"
  and names the keys (pseudonyms) whose traffic contradicts one budget.
* No key in clear in any output.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from calib_reference import Hidden, peaks, serve, to_canonical
from click.testing import CliRunner

from sim.cli.main import main
from sim.config.pricing import Pricing, default_pricing_table
from sim.core.pseudonyms import pseudonym

PHASE = 3.3
BIG_KEYS = ("a1b2c3d4e5f60718293a4b5c6d7e8f90", "0f1e2d3c4b5a69788796a5b4c3d2e1f0")
SMALL_KEY = "5e5e5e5e1a1a1a1a2b2b2b2b3c3c3c3c"
ALL_KEYS = (*BIG_KEYS, SMALL_KEY)


def pricing() -> Pricing:
    return Pricing.model_validate(default_pricing_table())


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """The merged log, its hidden prices, and the mapping file."""
    tmp = tmp_path_factory.mktemp("acc")
    big = Hidden(budget=8400.0, phase_s=PHASE)
    small = Hidden(budget=4000.0, phase_s=PHASE)
    rng = np.random.default_rng(36)
    big_first, small_first = peaks(rng)
    a = serve(big, rng, big_first, record_cu=False, retry_after=False, keys=BIG_KEYS)
    b = serve(small, rng, small_first, record_cu=False, retry_after=False, keys=(SMALL_KEY,))
    frame = pd.concat([a, b]).sort_values("time_ns", kind="stable").reset_index(drop=True)
    path = tmp / "gateway.parquet"
    to_canonical(frame, path)
    mapping = tmp / "accounts.toml"
    mapping.write_text(
        f'[[account]]\nname = "big"\ntier = "All 3 APIs"\nkeys = ["{BIG_KEYS[0]}", '
        f'"{BIG_KEYS[1]}"]\n\n[[account]]\nname = "small"\ntier = "RPC"\n'
        f'keys = ["{SMALL_KEY}"]\n', encoding="utf-8")
    return path, big, frame, mapping


def no_key_in(folder) -> None:
    for f in folder.iterdir():
        if f.suffix in (".json", ".md", ".html", ".toml"):
            text = f.read_text(encoding="utf-8")
            assert not any(k in text for k in ALL_KEYS), f.name


def test_the_premise_both_accounts_are_throttled(mixed):
    _path, _h, frame, _m = mixed
    for keys in (BIG_KEYS, (SMALL_KEY,)):
        mine = frame["key"].isin(keys)
        assert (frame["status"][mine].isin([-32005, 434])).sum() >= 20


def test_with_the_mapping_each_account_has_its_budget_and_one_price_list(mixed, tmp_path):
    path, h, _frame, mapping = mixed
    out = tmp_path / "cal"
    result = CliRunner().invoke(main, ["calibrate", str(path), "--accounts", str(mapping),
                                       "--out", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "verdict: fitted" in result.output
    assert not any(k in result.output for k in ALL_KEYS)
    doc = json.loads((out / "calibration.json").read_text())
    assert doc["verdict"] == "fitted", doc["notes"]
    assert doc["agreement"]["after"] >= 0.97
    assert [(a["name"], a["tier"]) for a in doc["accounts"]] == [("big", "All 3 APIs"),
                                                                  ("small", "RPC")]
    assert all(a["agreement_after"] >= 0.97 for a in doc["accounts"])
    assert doc["accounts"][1]["keys"] == [pseudonym(SMALL_KEY)]
    prices = {p["name"]: p for p in doc["prices"]}
    truth = {"rpc.method_cu.svc_call": h.call, "sizing.item_base_cu": h.base,
             "sizing.cu_per_gas": h.per_gas, "sizing.profile_cap_cu.fast":
             h.caps["fast"] * h.per_gas, "sizing.profile_cap_cu.deep":
             h.caps["deep"] * h.per_gas}
    for name, v in truth.items():  # every reported interval contains the truth
        p = prices[name]
        assert (p["low"] or 0.0) <= v * (1 + 1e-9), name
        assert p["high"] is None or v <= p["high"] * (1 + 1e-9), name
    call = prices["rpc.method_cu.svc_call"]
    assert abs(call["value"] - h.call) <= 0.15 * h.call
    fd = doc["window_phase"]["from_decisions"]
    assert fd["low_s"] - 1e-9 <= PHASE <= fd["high_s"] + 1e-9
    assert abs(doc["window_phase"]["estimate_s"] - PHASE) <= 0.3
    no_key_in(out)


def test_without_the_mapping_the_keys_that_contradict_one_budget_are_named(mixed, tmp_path):
    path, _h, _frame, _m = mixed
    out = tmp_path / "cal"
    result = CliRunner().invoke(main, ["calibrate", str(path), "--tier", "All 3 APIs",
                                       "--out", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "verdict: does not fit" in result.output
    assert "cannot fit one account" in result.output and "--accounts" in result.output
    # the small account's key is refused while a big key is admitted after it (and the
    # big keys never contradict each other: they share a budget)
    assert pseudonym(SMALL_KEY) in result.output
    doc = json.loads((out / "calibration.json").read_text())
    pairs = {frozenset((c["throttled"], c["admitted"])) for c in doc["key_conflicts"]}
    big = {pseudonym(k) for k in BIG_KEYS}
    assert pairs and all(len(p & big) == 1 for p in pairs)
    assert not any(k in result.output for k in ALL_KEYS)
    no_key_in(out)


def test_both_accounts_logged_by_a_client_with_a_skewed_clock(mixed):
    """The same two accounts as a client logged them (send times on a clock 1.9 s
    ahead, 5-40 ms each way, completion order): --accounts with --client-times."""
    from calib_reference import client_log, to_canonical

    from sim.calibration import calibrate
    from sim.calibration.accounts import load_accounts

    path, h, frame, mapping = mixed
    log = client_log(frame, np.random.default_rng(9), 1.9, (0.005, 0.040))
    client = path.with_name("client.parquet")
    to_canonical(log, client)
    cal = calibrate(client, None, pricing(), accounts=load_accounts(mapping),
                    client_times=True, delay_s=(0.005, 0.040))
    assert cal.verdict == "fitted", cal.notes
    assert cal.after.agreement >= 0.97
    truth = {"rpc.method_cu.svc_call": h.call, "sizing.item_base_cu": h.base,
             "sizing.cu_per_gas": h.per_gas, "sizing.profile_cap_cu.fast":
             h.caps["fast"] * h.per_gas, "sizing.profile_cap_cu.deep":
             h.caps["deep"] * h.per_gas}
    prices = {p.name: p for p in cal.prices}
    for name, v in truth.items():
        p = prices[name]
        assert (p.low or 0.0) <= v * (1 + 1e-9), (name, p)
        assert p.high is None or v <= p.high * (1 + 1e-9), (name, p)
    assert abs(prices["rpc.method_cu.svc_call"].value - h.call) <= 0.15 * h.call
    on_log_clock = (PHASE + 1.9) % 12.0
    iv = cal.phase_interval
    assert (on_log_clock - iv.low % 12.0) % 12.0 <= (iv.high - iv.low) + 1e-9
    assert abs(cal.settings_after.phase_s - on_log_clock) <= 0.3
