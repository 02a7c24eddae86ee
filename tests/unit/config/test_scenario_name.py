"""A scenario's name is its report folder ``reports/<name>/``: one path component.

``.`` once made a run replace ``reports/`` itself and ``..`` its parent; a leading dot
or a separator would put the report somewhere else or out of sight. Such names are
errors with the usual file:line: key: expectation message, and nothing is written.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from sim.cli.main import main

BODY = """[account]
keys = ["k"]
[[sources]]
name = "s"
key = "k"
arrival = { process = "poisson", rate = 1 }
"""


def _write(tmp_path, name: str):
    path = tmp_path / "sc.toml"
    path.write_text(f"# a scenario\nname = {name}\nduration = 60\n{BODY}", encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ['"."', '".."', '".hidden"', '"a/b"', '"../up"', r'"a\\b"',
                                  '""', '"/abs"', '"x/.."'])
def test_bad_names_are_errors_and_nothing_is_written(tmp_path, monkeypatch, name):
    path = _write(tmp_path, name)
    monkeypatch.chdir(tmp_path)
    for command in (["validate", str(path)], ["run", str(path), "-q", "--tier", "RPC"]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 2, (command, result.output)
        assert f"{path}:2: name: expected a folder name" in result.output
        assert "Traceback" not in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sc.toml"]


@pytest.mark.parametrize("name", ["default", "v1.2_x", "a..b", "Z-9"])
def test_plain_names_are_accepted(tmp_path, name):
    result = CliRunner().invoke(main, ["validate", str(_write(tmp_path, f'"{name}"'))])
    assert result.exit_code == 0, result.output
    assert f"scenario {name!r}" in result.output
