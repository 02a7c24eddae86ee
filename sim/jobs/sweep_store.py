"""A sweep's output folder: resumable, every finished run kept, never two sweeps mixed.

Layout::

    OUT/sweep-manifest.json     what this folder is a sweep of (plan identity, fingerprint)
    OUT/runs/<run_id>.json      one finished run's summary.json, written atomically
    OUT/records/<run_id>/       its Parquet tables (--keep-records only)
    OUT/points.parquet, sweep.json, report.md, report.html, *.png   (written at the end)

A run's file appears whole or not at all (written beside, then renamed), so a killed
sweep leaves only complete runs; the same command again runs only what is missing. A
folder whose manifest belongs to another sweep is refused, as is a non-empty folder
with no manifest.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from ..core.errors import CapsimError
from .sweep_plan import SweepPlan

MANIFEST = "sweep-manifest.json"


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file renamed into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class SweepStore:
    """The output folder of one sweep plan (see the module docstring)."""

    def __init__(self, folder: str | Path, plan: SweepPlan) -> None:
        self.folder = Path(folder)
        self.plan = plan
        self.runs_dir = self.folder / "runs"
        self.records_dir = self.folder / "records"
        self._claim()

    def _claim(self) -> None:
        manifest = self.folder / MANIFEST
        wanted = {"fingerprint": self.plan.fingerprint, "sweep": self.plan.identity}
        if manifest.exists():
            try:
                found = json.loads(manifest.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                found = {}
            if found.get("fingerprint") != wanted["fingerprint"]:
                raise CapsimError(
                    "this folder holds another sweep (different scenario, --vary, "
                    "variants, --set, --tier or --replications); choose another --out or "
                    "delete the folder", file=str(self.folder), field="--out")
            self._sweep_leftovers()
            return
        if self.folder.exists() and any(self.folder.iterdir()):
            raise CapsimError("folder exists and is not a capsim sweep folder; choose "
                              "another --out", file=str(self.folder), field="--out")
        write_atomic(manifest, json.dumps(wanted, indent=2, sort_keys=True) + "\n")

    def _sweep_leftovers(self) -> None:
        # Temporary files of runs a kill interrupted mid-write: never complete, drop them.
        if self.runs_dir.is_dir():
            for stale in self.runs_dir.glob(".*"):
                stale.unlink(missing_ok=True)

    def done(self) -> set[str]:
        """Run ids with a finished run on disk."""
        if not self.runs_dir.is_dir():
            return set()
        return {p.stem for p in self.runs_dir.glob("*.json")}

    def put(self, run_id: str, summary_json: str) -> None:
        """Keep a finished run (atomically)."""
        write_atomic(self.runs_dir / f"{run_id}.json", summary_json)

    def read(self, run_id: str) -> str:
        """A finished run's summary JSON text."""
        return (self.runs_dir / f"{run_id}.json").read_text(encoding="utf-8")
