"""`capsim schema`: the JSON Schema an editor validates scenarios with accepts every
shipped scenario and refuses what capsim refuses (a misspelt key, a wrong type)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from sim.cli.main import main
from sim.config.json_schema import as_json_document, scenario_schema
from sim.config.template import template_text

ROOT = Path(__file__).resolve().parents[3]
# every scenario shipped (an ``*-accounts.toml`` is a calibration's accounts file, not one)
SHIPPED = sorted([*(p for p in ROOT.glob("workloads/**/*.toml")
                    if not p.name.endswith("-accounts.toml")), ROOT / "sim/data/default.toml"])


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    out = CliRunner().invoke(main, ["schema"])
    assert out.exit_code == 0, out.output
    schema = json.loads(out.output)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def doc(text: str) -> dict:
    return as_json_document(tomllib.loads(text))


def errors(validator, document) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]


def test_the_shipped_scenarios_are_found():
    names = {p.name for p in SHIPPED}
    assert {"default.toml", "searcher.toml", "short-recording.toml"} <= names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_scenario_is_valid(validator, path):
    assert errors(validator, doc(path.read_text())) == []


def test_the_init_template_is_valid(validator):
    assert errors(validator, doc(template_text("x", "x.toml"))) == []


@pytest.mark.parametrize("text, where", [
    ('duraton = "1h"\n', "duraton"),                               # top level
    ('[slo]\nmax_throtle_rate = 0.01\n', "max_throtle_rate"),       # a nested table
    ('[[sources]]\nname = "a"\nkey = "k"\nrate = 3\n'
     'arrival = { process = "poisson", rate = 1 }\n', "rate"),      # an array of tables
])
def test_a_misspelt_key_is_refused(validator, text, where):
    found = errors(validator, doc(text))
    assert found and any(where in e for e in found), found


@pytest.mark.parametrize("text", [
    'duration = "an hour"\n', "duration = -5\n", 'seed = "one"\n',
    '[slo]\nmax_throttle_rate = 2\n',
])
def test_a_wrong_value_is_refused(validator, text):
    assert errors(validator, doc(text))


@pytest.mark.parametrize("text", ['duration = "90s"\n', "duration = 600\n",
                                  'duration = "1.5h"\n'])
def test_durations_as_capsim_reads_them(validator, text):
    assert errors(validator, doc(text)) == []


def test_the_schema_is_the_models():
    # Every top-level key of the Scenario model, by its TOML name, and nothing else.
    from sim.config.scenario import Scenario

    names = {f.alias or n for n, f in Scenario.model_fields.items()}
    schema = scenario_schema()
    assert set(schema["properties"]) == names
    assert schema["additionalProperties"] is False
