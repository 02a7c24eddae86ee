"""The README's "Bad input" promise, on every command: a typical mistake gives exit 2 and
one ``capsim: error:`` line naming the file or the field, never a traceback (issue 21).

The table has a row for every command and subcommand (a test checks it against the
CLI's own list, so a new command without a row fails here).
"""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from sim.cli.main import main

BAD_SCENARIO = 'name = "bad"\nduration = -5\n[account]\nkeys = ["k"]\n'

# command -> (arguments; {tmp} is the test's folder, what the error line must name)
CASES: dict[str, tuple[list[str], list[str]]] = {
    "run": (["{tmp}/bad.toml", "--out", "{tmp}/o"], ["{tmp}/bad.toml", "duration"]),
    "init": (["{tmp}/new.toml", "--trace", "{tmp}/missing.csv"], ["{tmp}/missing.csv"]),
    "schema": (["surplus"], ["surplus"]),
    "export": (["{tmp}/missing-run"], ["{tmp}/missing-run"]),
    "validate": (["{tmp}/bad.toml"], ["{tmp}/bad.toml", "duration"]),
    "tiers": (["--json", "surplus"], ["surplus"]),
    "sweep": (["{tmp}/bad.toml", "--out", "{tmp}/o"], ["{tmp}/bad.toml", "duration"]),
    "headroom": (["{tmp}/bad.toml"], ["{tmp}/bad.toml", "duration"]),
    "advise": (["{tmp}/bad.toml"], ["{tmp}/bad.toml", "duration"]),
    "baseline save": (["{tmp}/bad.toml", "--out", "{tmp}/b.json"],
                      ["{tmp}/bad.toml", "duration"]),
    "baseline update": (["{tmp}/not-json.json"], ["{tmp}/not-json.json", "not JSON"]),
    "check": (["{tmp}/bad.toml", "--baseline", "{tmp}/b.json"],
              ["{tmp}/bad.toml", "duration"]),
    "compare": (["{tmp}/missing-a", "{tmp}/missing-b"], ["{tmp}/missing-a"]),
    "ci init": (["--scenarios", "{tmp}/capacity"], ["{tmp}/capacity", "--scenarios"]),
    "calibrate": (["{tmp}/missing.parquet", "--tier", "RPC", "--out", "{tmp}/cal"],
                  ["{tmp}/missing.parquet"]),
    "trace import": (["{tmp}/missing.csv", "--out", "{tmp}/t.parquet"],
                     ["{tmp}/missing.csv"]),
    "trace stats": (["{tmp}/not-json.json"], ["{tmp}/not-json.json"]),
    "serve": (["{tmp}/bad.toml", "--tier", "RPC", "--port", "0"],
              ["{tmp}/bad.toml", "duration"]),
    "drive": (["{tmp}/bad.toml", "--target", "https://127.0.0.1:9"],
              ["{tmp}/bad.toml", "duration"]),
}


def every_command() -> set[str]:
    ctx = click.Context(main)
    names = set()
    for name in main.list_commands(ctx):
        cmd = main.get_command(ctx, name)
        if isinstance(cmd, click.Group):
            names |= {f"{name} {sub}" for sub in cmd.commands}
        else:
            names.add(name)
    return names


def test_the_table_covers_every_command():
    assert set(CASES) == every_command()


@pytest.mark.parametrize("command", sorted(CASES))
def test_bad_input_is_one_line_exit_2(tmp_path, command):
    (tmp_path / "bad.toml").write_text(BAD_SCENARIO)
    (tmp_path / "not-json.json").write_text("this is not JSON\n")
    args, named = CASES[command]
    fill = [a.replace("{tmp}", str(tmp_path)) for a in args]
    r = CliRunner().invoke(main, [*command.split(), *fill])
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.output
    errors = [ln for ln in r.output.splitlines() if ln.startswith("capsim: error: ")]
    assert len(errors) == 1, r.output
    for part in named:
        assert part.replace("{tmp}", str(tmp_path)) in errors[0], errors[0]
    assert not (tmp_path / "o").exists() and not (tmp_path / "b.json").exists()


@pytest.mark.parametrize("args", [["--bogus"], ["run", "--jobs", "x"], ["baseline", "save"]])
def test_usage_errors_have_the_same_form(args):
    """Issue 20: one error format; click's own usage errors included."""
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2
    assert r.output.startswith("capsim: error: ") and "--help" in r.output, r.output
