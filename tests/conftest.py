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
_TEMP_ROOT: str | None = None


def pytest_configure(config) -> None:
    """Keep the suite out of the real home: the per-user pseudonym secret (and any other
    per-user file) goes to a temporary config folder, inherited by subprocesses too.

    And out of the system's temporary folder: runs spool there, and the tests that kill
    a run on purpose (SIGKILL: its spool, ``capsim-making-*/.lock``, tens of MB) leave
    what the killed run could not remove. ``TMPDIR`` points at a folder of the session's,
    inherited by every capsim the suite starts, removed at the end. (pytest's own
    ``tmp_path`` folders stay where they were: ``PYTEST_DEBUG_TEMPROOT``.)"""
    global _CONFIG_HOME, _TEMP_ROOT
    _CONFIG_HOME = tempfile.mkdtemp(prefix="capsim-test-config-")
    os.environ["XDG_CONFIG_HOME"] = _CONFIG_HOME
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", tempfile.gettempdir())
    _TEMP_ROOT = tempfile.mkdtemp(prefix="capsim-test-tmp-")
    os.environ["TMPDIR"] = _TEMP_ROOT
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again


def pytest_unconfigure(config) -> None:
    if _CONFIG_HOME:
        shutil.rmtree(_CONFIG_HOME, ignore_errors=True)
    if _TEMP_ROOT:
        shutil.rmtree(_TEMP_ROOT, ignore_errors=True)


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
