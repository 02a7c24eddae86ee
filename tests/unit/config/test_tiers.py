"""The tier catalog is exactly the spec's tables 8.1 and 8.3.

The tables are read from ``tests/fixtures/spec-tier-tables.md``, a transcription of the
two tables of the service's interface specification (section 8, "Limits") made by hand
from the spec, never from this code, so the catalog is checked against the spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.config.tiers import CATALOG, RPC, SEARCH, STREAMS, find_tier, smallest_tier_for
from sim.core.errors import CapsimError

SPEC_TABLES = Path(__file__).resolve().parents[2] / "fixtures" / "spec-tier-tables.md"


@pytest.fixture
def spec_text() -> str:
    return SPEC_TABLES.read_text(encoding="utf-8")


def _table_after(text: str, heading: str) -> dict[str, str]:
    section = text[text.index(heading):]
    rows = {}
    for line in section.splitlines()[1:]:
        if line.startswith("#"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and not set(cells[1]) <= set("-: ") and cells[0] != "Selection":
            rows[cells[0]] = cells[1]
    return rows


def test_cu_budgets_match_spec_8_1(spec_text):
    spec = _table_after(spec_text, "### 8.1 CU window")
    assert len(spec) == 9
    assert {t.name: t.cu_per_window for t in CATALOG} == {
        name: float(value.replace(",", "")) for name, value in spec.items()}


def test_websocket_caps_match_spec_8_3(spec_text):
    spec = _table_after(spec_text, "### 8.3 Active websocket connections")
    assert {t.name: t.ws_cap for t in CATALOG} == {k: int(v) for k, v in spec.items()}


def test_apis_follow_the_selection_name():
    for tier in CATALOG:
        if "bundle" in tier.name or tier.name == "All 3 APIs":
            assert tier.apis == {RPC, SEARCH, STREAMS}
        else:
            named = {p.strip().lower() for p in tier.name.split("+")}
            assert tier.apis == named


@pytest.mark.parametrize("name", ["RPC + Search", "rpc + search", "rpc-search", "RPC+Search"])
def test_find_tier_accepts_name_forms(name):
    assert find_tier(name).name == "RPC + Search"


def test_unknown_tier_lists_known_names():
    with pytest.raises(CapsimError, match="unknown tier 'Gold'.*'Advanced bundle'"):
        find_tier("Gold")


def test_smallest_tier_for_peak():
    assert smallest_tier_for(4_500, {RPC}).name == "Streams + RPC"
    assert smallest_tier_for(8_000, {RPC, SEARCH}).name == "All 3 APIs"
    assert smallest_tier_for(100_001, {RPC}) is None


def test_custom_tiers_are_one_catalogue_for_the_run_the_accounts_and_a_selection():
    from sim.config.resolved import account_tiers, tier_catalog, validate
    from sim.config.selection import load_scenario
    from sim.config.tiers import CATALOG

    raw = {"name": "c", "tiers": ["RPC"],
           "accounts": [{"name": "a", "keys": ["k"]}, {"name": "b", "keys": ["j"], "tier": "Big"}],
           "sources": [{"name": "s", "key": "k", "arrival": {"process": "poisson", "rate": 1}}],
           "custom_tiers": [{"name": "Big", "apis": ["rpc"], "cu_per_window": 123_456,
                             "ws_cap": 3}]}
    loaded = validate(raw, "<test>")
    catalog = tier_catalog(loaded.scenario)
    assert catalog[:len(CATALOG)] == CATALOG
    big = catalog[-1]
    assert (big.name, big.apis, big.cu_per_window, big.ws_cap, big.custom) == (
        "Big", frozenset({"rpc"}), 123_456, 3, True)
    assert [t.name for t in loaded.tiers] == ["RPC"]
    assert account_tiers(loaded, loaded.tiers[0]) == (loaded.tiers[0], big)
    # a tier selection may pick a custom tier the scenario's ``tiers`` left out
    assert load_scenario(loaded, tiers=["Big"]).tiers == (big,)


@pytest.mark.parametrize("tiers, where", [
    (["RPC", "RPC"], "tiers[1]"),
    (["RPC", "Search", "rpc"], "tiers[2]"),  # tier names are found case-insensitively
    (["Big", "RPC", "Big"], "tiers[2]"),  # a custom tier too
])
def test_a_tier_listed_twice_is_a_user_error_at_validation(tmp_path, tiers, where):
    """Two results under one name would reach every table and crash after simulating
    (issue 33): refused by ``capsim validate``, naming the file, line and entry."""
    from click.testing import CliRunner
    from scenarios import write_scenario

    from sim.cli.main import main

    path = write_scenario(tmp_path, tiers=tiers, tables='[[custom_tiers]]\nname = "Big"\n'
                                                        'cu_per_window = 5000\n')
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2, result.output
    assert f"{path}:" in result.output and where in result.output
    assert "expected each tier once" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("names, where, other", [
    (["RPC"], "custom_tiers[0].name", "the catalog tier 'RPC'"),
    (["all 3 apis"], "custom_tiers[0].name", "the catalog tier 'All 3 APIs'"),
    (["Big", "Small", "big"], "custom_tiers[2].name", "custom_tiers[0]"),
])
def test_a_custom_tier_named_like_another_tier_is_a_user_error(tmp_path, names, where, other):
    """A custom tier another tier's name also picks (find_tier ignores case and
    punctuation) put two tiers of one name in the run, which crashed after simulating."""
    from click.testing import CliRunner
    from scenarios import write_scenario

    from sim.cli.main import main

    customs = "".join(f'[[custom_tiers]]\nname = "{n}"\ncu_per_window = 5000\n' for n in names)
    path = write_scenario(tmp_path, tiers=None, tables=customs)
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2, result.output
    assert f"{path}:" in result.output and where in result.output
    assert f"{other} already has it" in result.output
