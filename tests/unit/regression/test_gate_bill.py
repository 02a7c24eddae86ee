"""The gate in the bill's terms (issue 32 items 1-3): the headline's CU and dollar
figures, the recommended tier's price and each method's CU per day as checks, and the
fingerprint of every input with old baselines still loading.

Expected strings are worked by hand from the figures each test sets (100 → 106.3 CU per
day is +6.3 %; $89 - $49 = $40).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from sim.regression import comment, junit, markdown
from sim.regression.baseline import (
    Baseline,
    Figure,
    Inputs,
    RecommendedTier,
    TierFigures,
    parse_baseline,
)
from sim.regression.compare import compare
from sim.regression.headline import bill_headline
from sim.regression.settings import tolerances
from sim.results.catalogue import METRICS

PRICES = {"RPC": 49.0, "Streams + RPC": 89.0}


def side(rec: str | None, *, cu: float = 100.0, lasts: float | None = 22.8,
         methods: dict[str, float] | None = None, inputs: Inputs | None = None,
         content_hash: str = "sha256:s") -> Baseline:
    tiers = []
    for i, (tier, price) in enumerate(PRICES.items()):
        values = {"cu_per_day": cu, "allowance_lasts_h": lasts, "monthly_usd": price}
        metrics = {m.name: Figure(mean=values.get(m.name, 0.0), n=1) for m in METRICS}
        tiers.append(TierFigures(
            tier=tier, cu_per_window=1000.0 * (i + 1), monthly_usd=price, metrics=metrics,
            cu_per_day_by_method=None if methods is None else
            {k: Figure(mean=v, n=1) for k, v in methods.items()}))
    return Baseline(capsim_version="1", scenario="app", scenario_file="app.toml",
                    content_hash=content_hash, seed=1, replications=1,
                    recommended=RecommendedTier(tier=rec, per_replication=(rec,)),
                    tiers=tuple(tiers), inputs=inputs)


def test_headline_with_the_tier_unchanged_leads_with_no_change_in_dollars():
    # The bill does not move (same tier, same price): "+$0/month" first, as a budget owner
    # reads it, then the CU change that says how close the next tier is.
    cmp = compare(side("RPC"), side("RPC", cu=106.3, lasts=21.4), tolerances())
    assert bill_headline(cmp) == ("+$0/month: recommended tier unchanged (RPC, $49/month); "
                                  "+6.3 % CU per day (allowance lasts 21.4 h instead of "
                                  "22.8 h)")
    assert [c.metric for c in cmp.regressions] == ["cu_per_day", "allowance_lasts_h"] * 2


def test_headline_rounds_half_up_as_a_reader_does():
    # 17/16 - 1 = 6.25 % exactly (a binary fraction): "+6.3 %", not the float's "+6.2".
    cmp = compare(side("RPC", cu=16.0), side("RPC", cu=17.0), tolerances())
    assert bill_headline(cmp).endswith("; +6.3 % CU per day (allowance lasts 22.8 h)")
    cmp = compare(side("RPC", cu=1000.0), side("RPC", cu=1000.4), tolerances())
    assert bill_headline(cmp).endswith("; CU per day unchanged (allowance lasts 22.8 h)")


def test_headline_with_a_new_tier_leads_with_the_dollars():
    cmp = compare(side("RPC"), side("Streams + RPC", cu=130.0, lasts=None), tolerances())
    assert bill_headline(cmp) == ("+$40/month: recommended tier RPC → Streams + RPC; "
                                  "+30.0 % CU per day")
    price = next(c for c in cmp.checks if c.metric == "recommended_monthly_usd")
    assert (price.base, price.now, price.change, price.verdict) == (
        "$49", "$89", "+$40", "regression")


def test_losing_every_tier_fails_the_price_check_and_leads_the_headline():
    cmp = compare(side("RPC"), side(None), tolerances())
    price = next(c for c in cmp.checks if c.metric == "recommended_monthly_usd")
    assert (price.verdict, price.note) == ("regression", "no tier meets the SLO")
    assert bill_headline(cmp).startswith("no tier meets the SLO any more (was RPC, $49/month); ")


def test_the_price_check_takes_a_tolerance_in_dollars():
    cmp = compare(side("RPC"), side("Streams + RPC"),
                  tolerances(None, {"recommended_monthly_usd": 40.0}))
    price = next(c for c in cmp.checks if c.metric == "recommended_monthly_usd")
    assert price.verdict == "unchanged"


def test_the_markdown_and_the_comment_open_with_the_headline_and_fold_the_tiers():
    cmp = compare(side("RPC"), side("RPC", cu=106.3, lasts=21.4), tolerances())
    md = markdown.render(cmp)
    first = md.splitlines()[0]
    assert first.startswith("## ❌ +$0/month: recommended tier unchanged") and "$49/month" in first
    assert md.index("<details>") < md.index("### ❌ RPC") < md.rindex("</details>")
    body = comment.render(cmp)
    assert body.splitlines()[0] == f"### ❌ {bill_headline(cmp)}"
    assert body.splitlines()[1] == "<!-- capsim-check: app -->"


def test_each_method_is_checked_and_a_new_method_is_a_rise_from_zero():
    base = side("RPC", methods={"svc_call": 100.0})
    now = side("RPC", methods={"svc_call": 104.0, "svc_trace": 3.0})
    cmp = compare(base, now, tolerances())
    verdicts = {(c.tier, c.metric): c.verdict for c in cmp.checks
                if c.metric.startswith("method_cu_per_day")}
    # +4 % is inside the 5 % tolerance; 0 → 3 CU per day is outside any relative one.
    assert verdicts == {("RPC", "method_cu_per_day.svc_call"): "unchanged",
                        ("RPC", "method_cu_per_day.svc_trace"): "regression",
                        ("Streams + RPC", "method_cu_per_day.svc_call"): "unchanged",
                        ("Streams + RPC", "method_cu_per_day.svc_trace"): "regression"}


def inputs(trace: str = "sha256:t1", pricing: str = "sha256:p1") -> Inputs:
    return Inputs(scenario="sha256:s", traces={"traces/app.har": trace}, pricing=pricing,
                  capsim="1")


def test_a_changed_trace_and_pricing_file_are_reported_as_input_changes():
    cmp = compare(side("RPC", inputs=inputs()),
                  side("RPC", inputs=inputs(trace="sha256:t2", pricing="sha256:p2")),
                  tolerances())
    assert cmp.inputs_changed == (
        "trace `traces/app.har` changed (content hash sha256:t1 → sha256:t2)",
        "pricing file `sim/data/pricing.toml` changed (content hash sha256:p1 → sha256:p2)")
    assert "Inputs changed since the baseline:" in markdown.render(cmp)
    props = ET.fromstring(junit.render(cmp)).findall("./testsuite/properties/property")
    assert [p.get("value") for p in props if p.get("name") == "input_changed"] == list(
        cmp.inputs_changed)
    assert any(p.get("name") == "headline" for p in props)
    same = compare(side("RPC", inputs=inputs()), side("RPC", inputs=inputs()), tolerances())
    assert same.inputs_changed == () and not same.changed


def test_a_baseline_written_before_fingerprints_still_loads_and_says_not_recorded():
    data = json.loads(side("RPC", methods={"svc_call": 100.0}, inputs=inputs()).to_json())
    del data["inputs"]
    for tier in data["tiers"]:
        del tier["cu_per_day_by_method"]
    old = parse_baseline(json.dumps(data), file="old.json")
    assert old.inputs is None
    cmp = compare(old, side("RPC", methods={"svc_call": 100.0}, inputs=inputs()),
                  tolerances())
    assert any("not recorded" in line for line in cmp.inputs_unknown)
    assert any("not recorded" in note for note in cmp.notes)  # the per-method figures
    assert "not recorded" in markdown.render(cmp)


def test_the_fingerprint_hashes_each_trace_as_the_scenario_names_it(tmp_path):
    import hashlib
    from pathlib import Path

    from sim.api import load_scenario
    from sim.regression.fingerprint import fingerprint

    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "t.parquet").write_bytes(b"abc")  # hashed, not read here
    (tmp_path / "s.toml").write_text('name = "s"\nduration = 60\n[account]\nkeys = ["k"]\n'
                                     '[[sources]]\nname = "r"\nkey = "k"\n'
                                     'trace = "traces/t.parquet"\n')
    got = fingerprint(load_scenario(str(tmp_path / "s.toml")), "sha256:x")
    # sha256("abc") = ba7816bf8f01cfea 414140de... (FIPS 180-2's test vector)
    assert got.traces == {"traces/t.parquet": "sha256:ba7816bf8f01cfea"}
    shipped = Path(__file__).resolve().parents[3] / "sim" / "data" / "pricing.toml"
    assert got.pricing == "sha256:" + hashlib.sha256(shipped.read_bytes()).hexdigest()[:16]
    assert (got.scenario, got.capsim) == ("sha256:x", __import__("sim").__version__)
