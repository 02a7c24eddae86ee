"""``capsim validate`` and ``capsim tiers`` load no simulator, table or plot library."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sim import cli_trace
from sim.traces.importers import FORMATS
from sim.traces.schema import DEFAULT_CHUNK_ROWS

WORKLOADS = Path(__file__).resolve().parent.parent / "workloads"
HEAVY = ("pandas", "pyarrow", "matplotlib", "simpy", "scipy")
CHILD = """
import sys
from sim.cli import main
main(sys.argv[1:], standalone_mode=False)
print("HEAVY:" + ",".join(m for m in {heavy!r} if m in sys.modules))
"""


@pytest.mark.parametrize("args", [["tiers"], ["validate", str(WORKLOADS / "searcher.toml")]])
def test_command_imports_no_heavy_library(args):
    done = subprocess.run([sys.executable, "-c", CHILD.format(heavy=HEAVY), *args],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "HEAVY:"


def test_trace_cli_constants_match_the_importer():
    assert cli_trace.FORMATS == FORMATS
    assert cli_trace.DEFAULT_CHUNK_ROWS == DEFAULT_CHUNK_ROWS
