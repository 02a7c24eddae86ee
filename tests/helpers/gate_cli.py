"""The CI gate's CLI in tests: one invocation helper and a saved baseline to check against."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from sim.cli.main import main


def cli(*args, env=None):
    """Run ``capsim ARGS`` in-process; a crash (not a SystemExit) fails the test."""
    result = CliRunner().invoke(main, [str(a) for a in args], env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def saved_gate(folder: Path, scenario_text: str) -> Path:
    """``folder`` with ``gate.toml`` (``scenario_text``) and its baseline ``gate.json``."""
    (folder / "gate.toml").write_text(scenario_text)
    r = cli("baseline", "save", folder / "gate.toml", "--out", folder / "gate.json")
    assert r.exit_code == 0, r.output
    return folder
