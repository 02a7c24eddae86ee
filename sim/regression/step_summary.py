"""``$GITHUB_STEP_SUMMARY``: the file a GitHub Actions step appends its Markdown to.

``capsim check`` and ``capsim compare`` append their report when the variable is set.
The file is checked before any run (:func:`check_step_summary`), so a variable pointing
at a folder or an unwritable file is a :class:`~sim.core.errors.CapsimError` (exit 2)
naming it, not a traceback after the simulation that the gate would read as a
regression (exit 1); :func:`append_step_summary` reports a failure the same way.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..core.errors import CapsimError

VARIABLE = "GITHUB_STEP_SUMMARY"
FIELD = "$" + VARIABLE


def step_summary_path() -> Path | None:
    """The step summary file, or None when the variable is unset or empty."""
    value = os.environ.get(VARIABLE)
    return Path(value) if value else None


def _refused(path: Path, why: str) -> CapsimError:
    return CapsimError(f"{why}; expected a file the report can be appended to (or unset "
                       f"{VARIABLE})", file=str(path), field=FIELD)


def check_step_summary() -> None:
    """Refuse, touching nothing, a step summary that cannot be appended to."""
    path = step_summary_path()
    if path is None:
        return
    if path.is_dir():
        raise _refused(path, "is a folder")
    if path.exists():
        if not os.access(path, os.W_OK):
            raise _refused(path, "cannot write it (permission denied)")
        return
    parent = path.parent
    if not parent.is_dir():
        raise _refused(path, "its folder does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise _refused(path, "cannot create it (permission denied)")


def append_step_summary(text: str) -> None:
    """Append ``text`` and a newline to the step summary, if one is set."""
    path = step_summary_path()
    if path is None:
        return
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text + "\n")
    except OSError as err:
        raise _refused(path, f"cannot write it ({err.strerror or type(err).__name__})") \
            from None
