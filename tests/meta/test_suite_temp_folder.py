"""The suite leaves nothing in the system's temporary folder (issue 33 item 2).

Tests that kill a run on purpose left its spool (``capsim-spool-*``, tens of MB) and
``capsim-making-*/.lock`` in ``/tmp`` for good: the killed run could not remove them.
The suite's ``TMPDIR`` is a folder of its own, inherited by every capsim it starts and
removed when the session ends (tests/conftest.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path


def test_runs_spool_under_the_sessions_own_temporary_folder():
    here = Path(tempfile.gettempdir())
    assert here.name.startswith("capsim-test-tmp-") and here.is_dir()
    assert os.environ["TMPDIR"] == str(here)
    child = subprocess.run([sys.executable, "-c", "import tempfile; print(tempfile.gettempdir())"],
                           capture_output=True, text=True, check=True)
    assert child.stdout.strip() == str(here)  # what a killed capsim leaves goes there


def test_pytests_own_folders_stay_where_they_were(tmp_path):
    assert not any(p.name.startswith("capsim-test-tmp-") for p in tmp_path.parents)
