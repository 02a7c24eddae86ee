"""Write a run's report folder atomically.

Everything is written into a staging folder beside the destination, which then takes
the destination's place with a rename: a reader sees the old complete report or the new
complete one, never a half-written folder; a failure leaves the old report untouched.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..runner import RunOutput
from ..summary import RunSummary
from . import html, markdown, plots

FILES = ("summary.json", "requests.parquet", "windows.parquet", "report.md", "report.html")


def dumps_summary(summary: RunSummary) -> str:
    """The canonical JSON text of a summary (stable key order, no wall-clock values)."""
    return summary.to_json()


def write_report(output: RunOutput, out_dir: str | Path) -> Path:
    """Write ``output`` into ``out_dir`` (replaced whole, atomically); returns the folder."""
    return write_folder(out_dir, lambda staging: _write_into(output, staging))


def write_folder(out_dir: str | Path, fill: Callable[[Path], None]) -> Path:
    """Let ``fill`` write a folder's files into a staging folder, then put it in place of
    ``out_dir`` (replaced whole, atomically); returns the folder."""
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.staging-", dir=out.parent))
    staging.chmod(0o755)  # mkdtemp makes it private; a report folder is not
    try:
        fill(staging)
        old = None
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            os.replace(out, old / out.name)
        os.replace(staging, out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def _write_into(output: RunOutput, folder: Path) -> None:
    output.attempts.to_parquet(folder / "requests.parquet", index=False)
    output.windows.to_parquet(folder / "windows.parquet", index=False)
    if len(output.streams.columns):
        output.streams.to_parquet(folder / "streams.parquet", index=False)
    summary = output.summary.to_dict()
    png = plots.write_all(folder, summary, output.attempts, output.windows,
                          output.latencies, output.slots)
    md = markdown.render(summary, png)
    (folder / "report.md").write_text(md, encoding="utf-8")
    (folder / "report.html").write_text(html.render(md, folder), encoding="utf-8")
    (folder / "summary.json").write_text(dumps_summary(output.summary), encoding="utf-8")
