"""The development guide (docs/development.md), checked against the tree.

It tells a newcomer where each kind of change goes; what of that can drift silently is
checked here: the limiter kinds the configuration accepts are the ones ``LIMITERS`` builds,
and every scenario key, trace format and CI-gate metric is named in the reference page
that documents it (docs/reference/scenario.md, traces.md, gate-metrics.md). (The layers
are the folders of ``sim/``: ``test_layers.py`` needs no table to keep in step.)
"""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[2]
SIM = ROOT / "sim"
REFERENCE = ROOT / "docs" / "reference"
SCENARIO_DOC = (REFERENCE / "scenario.md").read_text(encoding="utf-8")
TRACES_DOC = (REFERENCE / "traces.md").read_text(encoding="utf-8")
GATE_DOC = (REFERENCE / "gate-metrics.md").read_text(encoding="utf-8")


def _section(heading: str, text: str) -> str:
    """The text under ``heading`` up to the next heading of the same or a higher level."""
    level = len(heading.split(" ", 1)[0])
    lines, fenced = [], False
    for line in text.split(f"\n{heading}\n", 1)[1].splitlines():
        fenced ^= line.startswith("```")  # a "# comment" in a code block is no heading
        if not fenced and re.match(rf"#{{1,{level}}} ", line):
            break
        lines.append(line)
    return "\n".join(lines)


# -- a limiter policy -----------------------------------------------------------------------

def test_the_limiter_kinds_the_config_accepts_are_the_ones_built():
    from sim.config.scenario import LimiterSettings
    from sim.policy.limiters import LIMITERS

    accepted = typing.get_args(LimiterSettings.model_fields["kind"].annotation)
    assert set(accepted) == set(LIMITERS)
    assert LimiterSettings().kind in LIMITERS


# -- scenario keys, trace formats, gate metrics ---------------------------------------------

def _models(annotation) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models(arg)]


def scenario_keys() -> list[str]:
    """Every key a scenario file may hold, as a dotted path (each model walked once)."""
    from sim.config.scenario import Scenario

    keys, seen = [], set()

    def walk(model: type[BaseModel], prefix: str) -> None:
        if model in seen:
            return
        seen.add(model)
        for name, field in model.model_fields.items():
            key = field.alias or name
            keys.append(prefix + key)
            for sub in _models(field.annotation):
                walk(sub, f"{prefix}{key}.")

    walk(Scenario, "")
    return keys


def documented(key: str, text: str = SCENARIO_DOC) -> bool:
    """Whether the scenario reference shows ``key`` as a key: ``key = ...``, `` `key` ``
    (or a dotted path ending in it), or a ``[table]`` / ``[[table]]`` header with it in
    its path."""
    k = re.escape(key.rsplit(".", 1)[-1])
    return bool(re.search(rf"(?<![\w.-]){k}\s*=|`[\w.\[\]-]*\b{k}`"
                          rf"|^\[\[?(?:[\w\"-]+\.)*{k}(?:\.[\w\"-]+)*\]\]?", text, re.M))


def test_every_scenario_key_is_in_the_scenario_reference():
    keys = scenario_keys()
    assert len(keys) > 100 and "limiter.kind" in keys and "ws.daily_profile" in keys
    missing = [k for k in keys if not documented(k)]
    assert not missing, f"scenario keys docs/reference/scenario.md never shows: {missing}"


@pytest.mark.parametrize(("key", "text", "found"), [
    ("x.rate_per_s", "rate_per_s = 3", True),
    ("ws.daily_profile", "the `ws.daily_profile` key", True),
    ("custom_tiers", "[[custom_tiers]]", True),
    ("clients", "[clients.interactive]", True),
    ("clients", "see [clients.x]", False),
    ("ws.daily_profile", "a daily profile", False),
    ("x.rate_per_s", "the rate_per_s_max key", False),
    ("x.rate_per_s", "max_rate_per_s = 3", False),
])
def test_documented(key, text, found):
    assert documented(key, text) is found


def test_every_trace_format_is_in_the_traces_reference():
    from sim.traces.importers import FORMATS

    section = _section("## What the importer recognises", TRACES_DOC)
    assert [f for f in FORMATS if f"`{f}`" not in section] == []


def test_every_gate_metric_is_in_the_gate_reference():
    from sim.results.catalogue import METRIC_NAMES

    section = _section("## What is compared", GATE_DOC)
    table = next(block for block in section.split("\n\n") if block.startswith("| metric |"))
    assert [m for m in METRIC_NAMES if f"`{m}`" not in table] == []


def test_the_scenario_reference_example_is_a_valid_scenario():
    """The example a newcomer copies validates (it did not: two sources named a client
    that the example's own [clients] table does not define)."""
    import tomllib

    from sim.config.resolved import validate

    block = _section("## An annotated scenario", SCENARIO_DOC).split("```toml\n", 1)[1]
    block = block.split("```", 1)[0]
    loaded = validate(tomllib.loads(block), "docs/reference/scenario.md")
    assert [s.name for s in loaded.scenario.sources] == ["frontend", "indexer", "searcher"]
    assert loaded.scenario.ws.min_retry_s == 0.1


# -- a report consumer ----------------------------------------------------------------------

def test_the_slo_criteria_cover_every_limit_of_the_slo():
    """Plots and the headroom search read the SLO through ``SLO_CRITERIA``: a limit added
    to ``[slo]`` without a criterion would be written but never checked by them."""
    from sim.config.scenario import Slo
    from sim.results.summary import SLO_CRITERIA, SloSummary

    limits = [c.limit_field for c in SLO_CRITERIA]
    # A switch, not a limit: the daily-allowance rule, read by slo_check and by the
    # headroom search's breaks_first (sim.jobs.headroom) through lasts_h.
    switches = {"allowance_must_last_day"}
    assert (set(limits) == set(SloSummary.model_fields) - switches
            == set(Slo.model_fields) - switches)
    assert len(set(limits)) == len(limits)
