"""A sweep's output folder: resumable, every finished run kept, never two sweeps mixed.

Layout::

    OUT/sweep-manifest.json     what this folder is a sweep of (plan identity, fingerprint)
    OUT/runs/<run_id>.json      one finished run's summary.json, written atomically
    OUT/records/<run_id>/       its Parquet tables (--keep-records only)
    OUT/points.parquet, sweep.json, report.md, report.html, *.png   (written at the end)

A run's file appears whole or not at all (written beside, then renamed), so a killed
sweep leaves only complete runs; the same command again runs only what is missing. A
run's file that cannot be read back as a summary (a disk fault, a hand edit) is removed
and its run simulated again, saying so: it never blocks the sweep. What a kill during
the final write left (the ``.report-*`` staging folder, ``.sweep.json.*`` temporary
files) is removed when the folder is next claimed. A folder whose manifest belongs to
another sweep is refused, as is a non-empty folder with no manifest.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
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
            found = self._manifest(manifest)
            if found.get("fingerprint") != wanted["fingerprint"]:
                raise CapsimError(
                    "this folder holds another sweep (different scenario, --vary, "
                    "variants, --set, --tier or --replications); choose another --out or "
                    "delete the folder", file=str(self.folder), field="--out")
            self._sweep_leftovers()
            return
        if self.folder.exists() and not self.folder.is_dir():
            raise CapsimError("exists and is not a folder; nothing was changed",
                              file=str(self.folder), field="--out")
        if self.folder.exists() and any(self.folder.iterdir()):
            from ..report.folder import KINDS, inspect

            kind = inspect(self.folder).kind
            what = (f"is {KINDS[kind].title}, not a sweep folder: a sweep never replaces "
                    "another kind of output" if kind else
                    "folder exists and is not a capsim sweep folder")
            raise CapsimError(f"{what}; nothing was changed. Choose another --out",
                              file=str(self.folder), field="--out")
        try:
            write_atomic(manifest, json.dumps(wanted, indent=2, sort_keys=True) + "\n")
        except OSError as err:
            raise CapsimError(f"cannot write the sweep folder ({err.strerror or type(err).__name__}"
                              "); expected a folder that can be created and written",
                              file=str(self.folder), field="--out") from None

    @staticmethod
    def _manifest(manifest: Path) -> dict:
        """The manifest's content; a CapsimError naming it when it is not a manifest (a
        damaged or hand-edited one is not "another sweep")."""
        try:
            found = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as err:
            why = getattr(err, "strerror", None) or type(err).__name__
            raise CapsimError(f"cannot read this sweep's manifest ({why}); nothing was "
                              "changed", file=str(manifest), field="--out") from None
        except ValueError as err:
            raise CapsimError(f"this sweep's manifest is damaged (not JSON: {err}); nothing "
                              "was changed. Delete the sweep folder to start again, or choose "
                              "another --out", file=str(manifest), field="--out") from None
        if not isinstance(found, dict) or not isinstance(found.get("fingerprint"), str):
            raise CapsimError("this sweep's manifest is damaged (expected a JSON object with "
                              "a fingerprint); nothing was changed. Delete the sweep folder to "
                              "start again, or choose another --out", file=str(manifest),
                              field="--out")
        return found

    def _sweep_leftovers(self) -> None:
        # Temporary files of runs a kill interrupted mid-write: never complete, drop them.
        if self.runs_dir.is_dir():
            for stale in self.runs_dir.glob(".*"):
                stale.unlink(missing_ok=True)
        # The final write's staging folder and temporary files (write_outputs,
        # write_atomic), left by a kill during it.
        for stale in self.folder.glob(".report-*"):
            if stale.is_dir() and not stale.is_symlink():
                shutil.rmtree(stale, ignore_errors=True)
        for stale in self.folder.glob(".*.json.*"):
            if stale.is_file():
                stale.unlink(missing_ok=True)

    def done(self, notice: Callable[[str], None] | None = None) -> set[str]:
        """Run ids with a finished run on disk. A run's file that does not read back as a
        summary is removed (so the run is simulated again) and ``notice`` told why."""
        from ..core.errors import CapsimError
        from ..results.summary import RunSummary

        if not self.runs_dir.is_dir():
            return set()
        ok = set()
        for p in sorted(self.runs_dir.glob("*.json")):
            try:
                RunSummary.from_json(p.read_text(encoding="utf-8"), file=str(p))
            except (CapsimError, OSError, ValueError) as err:
                reason = err.message if isinstance(err, CapsimError) else type(err).__name__
                p.unlink(missing_ok=True)
                if notice:
                    notice(f"{p}: unreadable ({reason}); simulating run {p.stem} again")
                continue
            ok.add(p.stem)
        return ok

    def put(self, run_id: str, summary_json: str) -> None:
        """Keep a finished run (atomically)."""
        path = self.runs_dir / f"{run_id}.json"
        try:
            write_atomic(path, summary_json)
        except OSError as err:
            raise CapsimError(f"cannot write a finished run ({err.strerror or type(err).__name__}"
                              "); the runs kept so far are resumed by the same command",
                              file=str(path), field="--out") from None

    def read(self, run_id: str) -> str:
        """A finished run's summary JSON text."""
        return (self.runs_dir / f"{run_id}.json").read_text(encoding="utf-8")
