"""Run a sweep: every missing run of the plan, each kept as it finishes, then the report.

    plan = plan_sweep("workloads/searcher.toml", vary=["load=1,2"], replications=3)
    result = run_sweep(plan, "reports/searcher-sweep")
    result.document.points[0].cheapest_meeting_slo

Only summaries travel back from the workers; a run's Parquet tables are written (by the
worker) only with ``keep_records``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pandas as pd

from ..results.summary import RunSummary
from .executors import Executor, SequentialExecutor
from .run_one import simulate
from .sweep_plan import SweepPlan
from .sweep_report import render_html, render_markdown, write_plots
from .sweep_results import SweepDocument, points_frame, sweep_document
from .sweep_store import SweepStore, write_atomic

Progress = Callable[[int, int], None]
"""``progress(done, total)`` after each finished run (and once before the first)."""


@dataclass
class SweepResult:
    """A finished sweep: its folder, the points table and ``sweep.json``'s content."""

    folder: Path
    points: pd.DataFrame
    document: SweepDocument
    ran: list[str]  # run ids simulated by this call (the rest were already on disk)


def run_sweep(plan: SweepPlan, out_dir: str | Path, executor: Executor | None = None, *,
              keep_records: bool = False, progress: Progress | None = None,
              notice: Callable[[str], None] | None = None) -> SweepResult:
    """Run what ``out_dir`` is missing of ``plan`` on ``executor``, then write the tables
    and the report. A :class:`~sim.core.errors.CapsimError` if ``out_dir`` holds another
    sweep; ``notice(message)`` hears of a kept run that is unreadable (it is run again)."""
    store = SweepStore(out_dir, plan)
    done = store.done(notice)
    missing = [r for r in plan.runs if r.run_id not in done]
    total = len(plan.runs)
    finished = total - len(missing)
    if progress:
        progress(finished, total)
    records = str(store.records_dir.resolve()) if keep_records else None
    executor = executor or SequentialExecutor()
    ran = []
    for spec, text in executor.as_completed(partial(simulate, records_root=records), missing):
        store.put(spec.run_id, text)
        ran.append(spec.run_id)
        finished += 1
        if progress:
            progress(finished, total)
    summaries = {r.run_id: RunSummary.from_json(store.read(r.run_id), file=r.run_id)
                 for r in plan.runs}
    points = points_frame(plan, summaries)
    document = sweep_document(plan, points, summaries[plan.runs[0].run_id])
    write_outputs(store.folder, points, document)
    return SweepResult(store.folder, points, document, ran)


def write_outputs(folder: Path, points: pd.DataFrame, document: SweepDocument) -> None:
    """``points.parquet``, ``sweep.json``, the plots, ``report.md`` and ``report.html``,
    each replaced atomically."""
    staging = Path(tempfile.mkdtemp(prefix=".report-", dir=folder))
    try:
        points.to_parquet(staging / "points.parquet", index=False)
        pngs = write_plots(staging, document)
        md = render_markdown(document, pngs)
        (staging / "report.md").write_text(md, encoding="utf-8")
        (staging / "report.html").write_text(render_html(md, staging), encoding="utf-8")
        for name in [*pngs, "points.parquet", "report.md", "report.html"]:
            os.chmod(staging / name, 0o644)
            os.replace(staging / name, folder / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    write_atomic(folder / "sweep.json", document.to_json())
