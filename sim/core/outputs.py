"""Output files a user names (``--markdown``, ``--junit``, ``--comment``, ``baseline save
--out``, ``trace import --out``, ``drive --out``): never overwrite what is not capsim's.

An existing file is overwritten only when it is capsim's own output of the same kind (a
check report over a check report, a canonical trace over a canonical trace), or with
``--force``; anything else is a :class:`CapsimError` naming the file, nothing written.
Each kind is recognised by what capsim puts at its start (see :data:`RECOGNISERS`); a
canonical trace by its Parquet metadata, which the caller passes as a predicate (this
module imports no Parquet reader).

See docs/reference/output-folders.md for the rules of output folders and files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from .errors import CapsimError

HEAD_BYTES = 4096


def _head(path: Path) -> str:
    with open(path, "rb") as fh:
        return fh.read(HEAD_BYTES).decode("utf-8", "replace")


def _is_check_markdown(path: Path) -> bool:
    # The bill's headline, then the verdict in bold (an older capsim: the verdict first).
    lines = _head(path).split("\n", 3)
    return lines[0].startswith(("## capsim check `", "## capsim compare `")) or (
        lines[0].startswith("## ") and len(lines) > 2
        and lines[2].startswith(("**capsim check `", "**capsim compare `")))


def _is_junit(path: Path) -> bool:
    head = _head(path)
    return head.startswith("<?xml") and '<testsuites name="capsim ' in head


def _is_comment(path: Path) -> bool:
    # The marker opens the body (an older capsim) or follows the headline.
    lines = _head(path).split("\n", 2)
    return any(line.startswith("<!-- capsim-check: ") for line in lines[:2])


def _is_baseline(path: Path) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "baseline_schema_version" in data


RECOGNISERS: dict[str, tuple[str, Callable[[Path], bool]]] = {
    "markdown": ("a capsim check report (Markdown)", _is_check_markdown),
    "junit": ("a capsim JUnit report", _is_junit),
    "comment": ("a capsim PR-comment body", _is_comment),
    "baseline": ("a capsim baseline", _is_baseline),
}
"""Kind -> (what it is, whether a file is one)."""


def claim_output(path: str | Path, kind: str, *, force: bool = False,
                 option: str | None = None,
                 recognise: tuple[str, Callable[[Path], bool]] | None = None) -> Path:
    """Check that ``path`` may be written as an output of ``kind``; return it as a Path.

    Missing: fine. A folder: refused. An existing file: fine if it is capsim's own
    output of ``kind`` (``recognise`` overrides :data:`RECOGNISERS` for kinds this module
    cannot read, e.g. a canonical trace) or ``force``; else a :class:`CapsimError`.
    """
    p = Path(path)
    what, is_ours = recognise or RECOGNISERS[kind]
    if p.is_dir():
        raise CapsimError(f"is a folder; expected a file name for {what}", file=str(p),
                          field=option)
    if not (p.exists() or p.is_symlink()) or force:
        return p
    try:
        ours = is_ours(p)
    except (OSError, ValueError):
        ours = False
    if not ours:
        raise CapsimError(f"exists and is not {what}, so it is not overwritten; nothing was "
                          "written. Choose another file name, or pass --force to overwrite "
                          "it", file=str(p), field=option)
    return p


def unwritable_reason(path: str | Path) -> str | None:
    """Why nothing could be created at ``path`` (its nearest existing folder is a file,
    or one this user cannot write in), or None when it looks writable."""
    from .atomic import destination

    ancestor = destination(path).absolute().parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"{ancestor} is a file, not a folder"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"no permission to write in {ancestor}"
    return None


def check_writable(path: str | Path, option: str | None = None) -> None:
    """Refuse, touching nothing, an output file that could not be written
    (:func:`unwritable_reason`). Checked before a command's work, so that work is not
    lost (the write itself still reports any other failure as a CapsimError)."""
    why = unwritable_reason(path)
    if why is not None:
        raise CapsimError(f"cannot write it: {why}; expected a file name in a writable "
                          "folder", file=str(path), field=option)


def write_text_output(path: Path, text: str, option: str | None = None) -> None:
    """Write ``text`` to ``path`` (folders created) atomically
    (:func:`sim.core.atomic.write_atomic`); a CapsimError if it cannot be."""
    from .atomic import write_atomic

    write_atomic(path, text, option)
