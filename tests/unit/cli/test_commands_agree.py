"""Commands that do the same thing say the same thing (issue 21 item 12, issue 20's one
error handler and shared options).

- ``capsim compare`` reports as compare, not as ``capsim check``;
- a baseline with no tiers (or no tier in common) fails the gate: exit 2, not a pass;
- ``capsim trace`` errors carry the ``capsim: error:`` prefix as every other command's;
- ``validate``, ``sweep`` and ``headroom`` default to the built-in scenario as ``run`` does;
- ``--set``, ``--tier`` and ``--jobs`` have one help text each wherever they appear.
"""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner
from scenarios import poisson_source, scenario_text

from sim.cli.main import LAZY_COMMANDS, main

SCENARIO = scenario_text(name="agree", top="seed = 3\n", duration=60, tiers=["RPC"],
                         sources=poisson_source(2) + "mix = { svc_call = 1.0 }\n")


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    d = tmp_path_factory.mktemp("agree")
    (d / "agree.toml").write_text(SCENARIO)
    r = cli("baseline", "save", d / "agree.toml", "--out", d / "agree.json")
    assert r.exit_code == 0, r.output
    return d


def test_compare_reports_as_compare(saved, tmp_path):
    """Item 12: the headline, the Markdown and the JUnit suite name the command run."""
    r = cli("compare", saved / "agree.json", saved / "agree.json",
            "--markdown", tmp_path / "c.md", "--junit", tmp_path / "c.xml")
    assert r.exit_code == 0, r.output
    assert r.output.startswith("capsim compare `agree`")
    assert "capsim check" not in r.output
    # The bill's headline first (issue 32), then the verdict naming the command.
    assert (tmp_path / "c.md").read_text().splitlines()[2] == (
        "**capsim compare `agree`: ✅ no regression**")
    assert 'name="capsim compare agree"' in (tmp_path / "c.xml").read_text()


def test_check_still_reports_as_check(saved):
    r = cli("check", saved / "agree.toml", "--baseline", saved / "agree.json")
    assert r.exit_code == 0, r.output
    assert r.output.startswith("capsim check `agree`")


@pytest.mark.parametrize("command", ["check", "compare"])
def test_a_baseline_without_tiers_fails_the_gate(saved, tmp_path, command):
    """Item 12: it passed (exit 0) comparing nothing."""
    data = json.loads((saved / "agree.json").read_text())
    data["tiers"] = []
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps(data))
    if command == "check":
        r = cli("check", saved / "agree.toml", "--baseline", empty)
    else:
        r = cli("compare", empty, saved / "agree.json")
    assert r.exit_code == 2, r.output
    assert f"capsim: error: {empty}: tiers: has no tiers" in r.output


def test_no_tier_in_common_fails_the_gate(saved, tmp_path):
    data = json.loads((saved / "agree.json").read_text())
    data["tiers"][0]["tier"] = "Search"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(data))
    r = cli("compare", other, saved / "agree.json")
    assert r.exit_code == 2 and "no tier in common" in r.output, r.output


def test_trace_errors_have_the_prefix(tmp_path):
    """Item 12: `trace stats` on a missing file printed the message with no prefix."""
    missing = tmp_path / "nope.parquet"
    r = cli("trace", "stats", missing)
    assert r.exit_code == 2
    assert r.output.startswith(f"capsim: error: {missing}"), r.output


def test_trace_alone_reports_errors_the_same_way(tmp_path):
    """The trace group invoked on its own (not under `capsim`) uses the same handler."""
    from sim.cli.trace import trace

    r = CliRunner().invoke(trace, ["stats", str(tmp_path / "nope.parquet")])
    assert r.exit_code == 2 and r.output.startswith("capsim: error: ")


def test_validate_defaults_to_the_built_in_scenario():
    """Item 12: `capsim validate` with no argument was a usage error; `run` accepts none."""
    r = cli("validate")
    assert r.exit_code == 0, r.output
    assert r.output.startswith("<built-in default scenario>: ok")


@pytest.mark.parametrize("command", ["sweep", "headroom", "validate"])
def test_scenario_is_optional_like_run(command):
    """Item 12: the SCENARIO argument is optional as `run`'s is."""
    cmd = LAZY_COMMANDS[command].load() if command in LAZY_COMMANDS else main.commands[command]
    argument = next(p for p in cmd.params if p.name == "scenario")
    run_argument = next(p for p in main.commands["run"].params if p.name == "scenario")
    assert argument.required is run_argument.required is False


def test_sweep_without_a_scenario_plans_the_built_in_one(tmp_path):
    # A --vary of an unknown key: fails while planning the built-in scenario.
    r = cli("sweep", "--vary", "no_such_key=1,2", "--out", tmp_path / "o")
    assert r.exit_code == 2 and "capsim: error:" in r.output, r.output
    assert "Missing argument" not in r.output and not (tmp_path / "o").exists()


def _all_commands():
    ctx = click.Context(main)
    out = []
    for name in main.list_commands(ctx):
        cmd = main.get_command(ctx, name)
        subs = cmd.commands.values() if isinstance(cmd, click.Group) else [cmd]
        out += list(subs)
    return out


@pytest.mark.parametrize("option", ["--set", "--jobs"])
def test_shared_options_have_one_help_text_shape(option):
    """Issue 20: --set and --jobs were declared five times with four help texts."""
    found = {}
    for cmd in _all_commands():
        for p in cmd.params:
            if option in getattr(p, "opts", []):
                found[cmd.name] = p
    assert len(found) >= 4
    if option == "--set":
        assert all("value parsed as TOML" in p.help for p in found.values()), found
        assert {p.metavar for p in found.values()} == {"KEY.PATH=VALUE"}
    else:
        assert all(p.help and p.default == 1 for p in found.values()), found
