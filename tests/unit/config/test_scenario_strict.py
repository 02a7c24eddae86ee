"""Strict types across the scenario format, and `--set` errors that never show the value."""

from __future__ import annotations

import typing

import pytest
from click.testing import CliRunner
from pydantic import BaseModel
from pydantic.types import Strict
from scenarios import scenario_text, write_scenario

from sim.cli.main import main
from sim.config.pricing import Pricing
from sim.config.resolved import load
from sim.config.scenario import Scenario
from sim.core.errors import CapsimError

BASE = scenario_text(keys=["k1"], rate=5)
FIELDS = ["sources[0].arrival.rate", "duration", "methods.svc_call.service_time.median",
          "pricing.rpc.default_method_cu", "slo.p99_latency_ms", "sources[0].replay.speed"]


def _write(tmp_path, path_key, bad):
    """A scenario whose ``path_key`` holds the TOML value ``bad``."""
    text = BASE
    key = path_key.split(".")[-1]
    if path_key == "sources[0].arrival.rate":
        text = text.replace("rate = 5", f"rate = {bad}")
    elif path_key == "duration":
        text = text.replace("duration = 60", f"duration = {bad}")
    elif path_key == "sources[0].replay.speed":
        text += f"replay = {{ speed = {bad} }}\n"
    elif path_key.startswith("methods"):
        text += ('\n[methods.svc_call]\nservice_time = { dist = "lognormal", '
                 f'median = {bad}, sigma = 0.6 }}\n')
    else:
        table = path_key.rsplit(".", 1)[0]
        text += f"\n[{table}]\n{key} = {bad}\n"
    return write_scenario(tmp_path, text)


@pytest.mark.parametrize("bad, expected", [
    ("true", "not a boolean"), ("false", "not a boolean"), ("nan", "finite"), ("inf", "finite"),
    ("-inf", "finite"), ('"1.5"', "not a string"),
])
@pytest.mark.parametrize("path_key", FIELDS)
def test_booleans_nan_and_infinities_are_not_numbers(tmp_path, path_key, bad, expected):
    if path_key == "duration" and bad == '"1.5"':
        pytest.skip('a duration may be a string such as "1.5" or "90s"')
    path = _write(tmp_path, path_key, bad)
    with pytest.raises(CapsimError) as err:
        load(path)
    e = err.value
    assert e.file == str(path) and e.line is not None, e.render()
    assert e.field == path_key and expected in e.message, e.render()


@pytest.mark.parametrize("path_key", FIELDS)
def test_the_same_fields_accept_numbers(tmp_path, path_key):
    value = "30" if path_key == "duration" else "0.5"
    assert load(_write(tmp_path, path_key, value)).scenario is not None


@pytest.mark.parametrize("raw, field", [
    ({"reuse": 1}, "clients.default.http.reuse"),
    ({"max_connections": 2.0}, "clients.default.http.max_connections"),
])
def test_integers_and_booleans_are_strict_too(tmp_path, raw, field):
    key, value = next(iter(raw.items()))
    path = write_scenario(tmp_path,
                          BASE + f"\n[clients.default.http]\n{key} = {str(value).lower()}\n")
    with pytest.raises(CapsimError) as err:
        load(path)
    assert err.value.field == field, err.value.render()


def _numeric_leaves(tp, where, seen):
    """Every (location, float | int | bool annotation's metadata) reachable from ``tp``."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        base, *meta = typing.get_args(tp)
        if base in (float, int, bool):
            yield where, base, meta
            return
        yield from _numeric_leaves(base, where, seen)
    elif tp in (float, int, bool):
        yield where, tp, []
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        if tp in seen:
            return
        seen.add(tp)
        for name, info in tp.model_fields.items():
            if info.annotation in (float, int, bool):
                yield f"{tp.__name__}.{name}", info.annotation, info.metadata
            else:
                yield from _numeric_leaves(info.annotation, f"{tp.__name__}.{name}", seen)
    else:
        for arg in typing.get_args(tp):
            if arg is not Ellipsis and arg is not type(None):
                yield from _numeric_leaves(arg, where, seen)


def test_every_number_and_boolean_of_the_format_is_strict():
    """A field added later with a plain ``float`` would accept ``true``: name it."""
    seen: set = set()
    leaves = [*_numeric_leaves(Scenario, "Scenario", seen),
              *_numeric_leaves(Pricing, "Pricing", seen)]
    assert len(leaves) > 80  # the walk reaches the nested models (arrivals, dists, ws, pricing)
    lax = [where for where, _, meta in leaves if not any(isinstance(m, Strict) for m in meta)]
    assert lax == []
    for model in seen:
        assert model.model_config.get("allow_inf_nan") is False, model.__name__


# -- --set ------------------------------------------------------------------------------

def _cli(*args):
    result = CliRunner().invoke(main, ["validate", *args])
    return result.exit_code, result.output


def test_a_bad_set_value_names_the_option_not_the_default_scenario_line(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(BASE)
    code, out = _cli(str(path), "--set", "duration=abc")
    assert code == 2
    assert out.startswith("capsim: error: --set duration: expected seconds"), out
    assert str(path) not in out and ":2" not in out and "abc" not in out
    code, out = _cli(str(path), "--set", "sources[0].arrival.rate=true")
    assert code == 2 and out.startswith("capsim: error: --set sources[0].arrival.rate: "
                                        "expected a number, not a boolean"), out


def test_run_with_the_builtin_scenario_names_the_option():
    result = CliRunner().invoke(main, ["run", "--set", "duration=abc", "-q"])
    assert result.exit_code == 2
    assert "<built-in default scenario>" not in result.output
    assert result.output.startswith("capsim: error: --set duration: "), result.output


def test_an_error_inside_a_set_table_names_the_option_and_the_inner_path(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(BASE)
    code, out = _cli(str(path), "--set", 'sources[0].arrival={process="poisson", rate=nan}')
    assert code == 2, out
    assert out.startswith("capsim: error: --set sources[0].arrival: sources[0].arrival.rate: "
                          "expected a finite number"), out


def test_a_set_value_is_never_echoed(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(BASE)
    secret = "sk_live_9f8e7d6c5b4a39281706"
    for item in (f"sources[0].key:{secret}", f"sources[0].key {secret}", secret,
                 f"sources[0].arrival.rate={secret}", f"sources[0].arrival.process={secret}",
                 f"tiers[0]={secret}", f"slo.p99_latency_ms={secret}"):
        code, out = _cli(str(path), "--set", item)
        assert code == 2, (item, out)
        assert secret not in out and secret[:12] not in out, (item, out)
        assert "--set" in out, out
    code, out = _cli(str(path), "--set", f"sources[0].key:{secret}")
    assert out.startswith("capsim: error: --set sources[0].key: expected KEY.PATH=VALUE"), out


def test_file_errors_keep_the_file_and_line_beside_a_set(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(BASE.replace("rate = 5", "rate = true"))
    code, out = _cli(str(path), "--set", "duration=30")
    assert code == 2 and out.startswith(f"capsim: error: {path}:9: sources[0].arrival.rate"), out
