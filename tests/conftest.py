"""Shared fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT.parent / "shared" / "spec" / "service-interface.md"


@pytest.fixture
def spec_text() -> str:
    if not SPEC.exists():
        pytest.skip(f"spec not found beside the repo: {SPEC}")
    return SPEC.read_text(encoding="utf-8")
