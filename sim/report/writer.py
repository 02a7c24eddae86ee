"""Write a run's report folder atomically.

Everything is written into a staging folder beside the destination, which then takes
the destination's place with a rename: a reader sees the old complete report or the new
complete one, never a half-written folder; a failure leaves the old report untouched.
Which folders may be replaced, the lock and the swap are :mod:`sim.report.folder`'s.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from ..runner.records import PARQUET_OPTIONS
from ..runner.run import RunOutput
from . import html, markdown, plots
from .folder import ReportFolder


def write_report(output: RunOutput, out_dir: str | Path,
                 folder: ReportFolder | None = None) -> Path:
    """Write ``output`` into ``out_dir`` (replaced whole, atomically); returns the folder.

    ``folder`` is the destination already claimed and locked by the caller for the whole
    run (see :class:`~sim.report.folder.ReportFolder`); without it, it is claimed here.
    """
    if folder is None:
        with ReportFolder(out_dir) as claimed:
            return write_report(output, out_dir, claimed)
    staging = folder.staging()
    try:
        _write_into(output, staging)
        folder.replace_with(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Path(out_dir)


def write_folder(out_dir: str | Path, fill: Callable[[Path], None], kind: str,
                 folder: ReportFolder | None = None) -> Path:
    """Claim ``out_dir`` for a folder of ``kind`` (see :data:`sim.report.folder.KINDS`),
    let ``fill`` write the files into a staging folder, then swap it in (replaced whole,
    atomically, as :func:`write_report`); returns the folder. ``folder``: the
    destination already claimed and locked by the caller for the whole command, as for
    :func:`write_report`."""
    if folder is None:
        with ReportFolder(out_dir, kind) as claimed:
            return write_folder(out_dir, fill, kind, claimed)
    staging = folder.staging()
    try:
        fill(staging)
        folder.replace_with(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Path(out_dir)


def _write_into(output: RunOutput, folder: Path) -> None:
    mode = output.records_mode
    if mode == "attempts":
        output.records.write_parquet(folder / "requests.parquet")
    if mode in ("attempts", "windows"):
        output.windows.to_parquet(folder / "windows.parquet", index=False, **PARQUET_OPTIONS)
        if len(output.streams.columns):
            output.streams.to_parquet(folder / "streams.parquet", index=False,
                                      **PARQUET_OPTIONS)
    summary = output.summary
    png = plots.write_all(folder, summary, output.minutes, output.windows,
                          output.latencies, output.slots, output.refused_handshakes)
    md = markdown.render(summary, png)
    (folder / "report.md").write_text(md, encoding="utf-8")
    (folder / "report.html").write_text(_html(md, folder, output), encoding="utf-8")
    (folder / "summary.json").write_text(summary.to_json(), encoding="utf-8")


def _html(md: str, folder: Path, output: RunOutput) -> str:
    """report.html: the Markdown with the interactive charts in place of their PNGs."""
    from .interactive import REPLACES, chart_html, charts, plotly_js

    drawn = charts(output.summary, output.windows, output.minutes)
    by_png = {png: chart_html(cid, drawn[cid]) for png, cid in REPLACES.items() if cid in drawn}
    return html.render(md, folder, by_png, plotly_js() if by_png else None)
