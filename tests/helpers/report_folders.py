"""Report folders in tests: what a folder holds, a run that must not simulate, and the
shape of a refusal that must leave everything as it was."""

from __future__ import annotations

import importlib
from pathlib import Path


def names(folder: Path) -> list[str]:
    """Every path under ``folder``, relative, sorted."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def contents(folder: Path) -> list[tuple[str, bytes | None]]:
    """Every path under ``folder`` with its bytes (None for a folder), sorted."""
    return sorted((str(p.relative_to(folder)), p.read_bytes() if p.is_file() else None)
                  for p in folder.rglob("*"))


def no_simulation(monkeypatch) -> None:
    """Make any simulation fail the test: a refused folder must be refused first."""
    def fail(*a, **k):
        raise AssertionError("simulated although the folder is refused")
    # sim.api first: imported while sim.runner.run.run was patched, it bound the patch
    # for good (`from .runner.run import run`) and later tests "simulated".
    monkeypatch.setattr(importlib.import_module("sim.api"), "run", fail)
    monkeypatch.setattr(importlib.import_module("sim.runner.run"), "run", fail)


def assert_refused(result, message: str) -> None:
    """A user's mistake: exit code 2, ``message`` in the output, no traceback."""
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
