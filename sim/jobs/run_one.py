"""One run of a job, as a worker executes it: a :class:`RunSpec` in, summary JSON out.

Module-level and free of open resources, so a process pool or a Dask worker can call
it; the scenario travels as text, so workers need capsim but not the scenario file.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import tomllib
from pathlib import Path

from .sweep_plan import RunSpec


def load_spec(spec: RunSpec):
    """The :class:`~sim.config.resolved.LoadedScenario` of ``spec`` (overrides and seed applied)."""
    from ..api import load_scenario
    from ..config.loader import apply_override, key_lines
    from ..config.resolved import validate

    raw = tomllib.loads(spec.scenario_text)
    overridden = [apply_override(raw, item) for item in spec.overrides]
    raw["seed"] = spec.seed
    loaded = validate(raw, spec.scenario_label, key_lines(spec.scenario_text), overridden)
    return load_scenario(loaded, tiers=spec.tiers)


def check_spec_size(spec: RunSpec, jobs: int = 1, warn=None, keep_rows: bool = True):
    """``spec`` loaded, after the run-size guard of ``capsim run`` (memory, and the
    scenario's ``max_requests``): a :class:`~sim.core.errors.CapsimError` before any
    demand is drawn for a run too large. ``warn(message)`` gets its warnings;
    ``keep_rows``: whether the run keeps every tier's rows (the disk it needs)."""
    from ..workload.size_estimate import check

    loaded = load_spec(spec)
    _, warnings = check(loaded, jobs=jobs, keep_rows=keep_rows)
    for w in warnings if warn else ():
        warn(w)
    return loaded


def simulate(spec: RunSpec, records_root: str | None = None) -> str:
    """Run ``spec`` on its tiers and return its ``summary.json`` text.

    With ``records_root``, the run's Parquet tables are written (atomically) into
    ``records_root/<run_id>/``; otherwise they are dropped here, in the worker.
    """
    from ..runner.run import run

    keep = records_root is not None  # its rows are written below, else not needed
    with run(check_spec_size(spec, keep_rows=keep), records="attempts" if keep else "none",
             keep_rows=keep) as out:
        if records_root is not None:
            _write_records(out, Path(records_root) / spec.run_id)
        return out.summary.to_json()


def _write_records(out, folder: Path) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        out.attempts.to_parquet(staging / "requests.parquet", index=False)
        out.windows.to_parquet(staging / "windows.parquet", index=False)
        if len(out.streams.columns):
            out.streams.to_parquet(staging / "streams.parquet", index=False)
        (staging / "summary.json").write_text(out.summary.to_json(), encoding="utf-8")
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(staging, folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
