"""Shared fixtures."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Helpers shared by tests in several folders (scenario builders, crafted traces, the
# reference calibration service, the emulator fixture) import by their module name.
sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
_CONFIG_HOME: str | None = None


def pytest_configure(config) -> None:
    """Keep the suite out of the real home: the per-user pseudonym secret (and any other
    per-user file) goes to a temporary config folder, inherited by subprocesses too."""
    global _CONFIG_HOME
    _CONFIG_HOME = tempfile.mkdtemp(prefix="capsim-test-config-")
    os.environ["XDG_CONFIG_HOME"] = _CONFIG_HOME


def pytest_unconfigure(config) -> None:
    if _CONFIG_HOME:
        shutil.rmtree(_CONFIG_HOME, ignore_errors=True)


_SLOW_FOLDERS = ("validation", "e2e")


def pytest_collection_modifyitems(config, items) -> None:
    """Validation against theory and end-to-end runs are slow by folder: the README's
    everyday loop (``pytest -m "not slow"``) leaves them out, ``.ci/run`` runs them in a
    step of their own."""
    here = Path(__file__).resolve().parent
    for item in items:
        folder = Path(item.fspath).resolve().relative_to(here).parts[0]
        if folder in _SLOW_FOLDERS:
            item.add_marker(pytest.mark.slow)
