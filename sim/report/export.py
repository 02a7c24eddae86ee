"""CSV exports of a report folder (``capsim export``, :func:`export_tables`): the
per-tier table, the 12-second windows and the per-account figures, for spreadsheets and
BI tools. Read from what the run wrote (``summary.json``, ``windows.parquet``), so any
report folder can be exported later, and nothing in it changes.

Numbers are written in full (no thousands separators, no rounding); nested figures of
``summary.json`` become flat columns joined by ``_`` (``latency_ms_p99``,
``cu_peak_window_reserved``); lists by ``;``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import CapsimError

EXPORTS = ("tiers.csv", "windows.csv", "accounts.csv")
_SKIPPED = ("by_method", "plan", "decided_by")  # tables of their own, not columns


def _flat(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flat(f"{prefix}_{k}" if prefix else str(k), v, out)
    elif isinstance(value, list | tuple):
        out[prefix] = ";".join(map(str, value))
    else:
        out[prefix] = value


def tier_rows(summary) -> list[dict[str, Any]]:
    """One flat row per tier of a :class:`~sim.results.summary.RunSummary`."""
    rows = []
    for t in summary.tiers:
        data = t.model_dump(mode="json")
        row: dict[str, Any] = {}
        for key, value in data.items():
            if key not in _SKIPPED:
                _flat(key, value, row)
        row["decided_by"] = ";".join(d.cause for d in t.decided_by)
        row["recommended"] = t.tier == summary.recommended.tier
        rows.append(row)
    return rows


def account_rows(summary) -> list[dict[str, Any]]:
    """One flat row per tier x account (runs with ``[[accounts]]``; else none)."""
    rows = []
    for t in summary.tiers:
        if t.plan is None:
            continue
        for acct in t.plan.accounts:
            row: dict[str, Any] = {"plan_tier": t.tier}
            _flat("", acct.model_dump(mode="json"), row)
            rows.append(row)
    return rows


def export_tables(report: str | Path, out: str | Path, *, force: bool = False) -> list[Path]:
    """Write :data:`EXPORTS` for the report folder ``report`` into the folder ``out``
    (created); return the files written. ``windows.csv`` needs ``windows.parquet`` (not
    written by ``--records none``), ``accounts.csv`` a run with ``[[accounts]]``. An
    existing file is replaced only if it is one of capsim's exports (or ``force``)."""
    import pandas as pd

    from ..core.outputs import claim_output, write_text_output
    from ..results.summary import load_summary

    folder = Path(report)
    if not (folder / "summary.json").is_file():
        raise CapsimError("expected a report folder of capsim run (with summary.json)",
                          file=str(folder), field="RUN_DIR")
    summary = load_summary(folder)
    tables: dict[str, pd.DataFrame] = {"tiers.csv": pd.DataFrame(tier_rows(summary))}
    if (folder / "windows.parquet").is_file():
        windows = pd.read_parquet(folder / "windows.parquet")
        if "start" in windows:
            windows["start"] = windows["start"].map(lambda t: t.isoformat())
        tables["windows.csv"] = windows
    if accounts := account_rows(summary):
        tables["accounts.csv"] = pd.DataFrame(accounts)
    out_dir = Path(out)
    if out_dir.exists() and out_dir.resolve() == folder.resolve():
        # the report folder stays as capsim run wrote it (its listing is the run's)
        raise CapsimError("is the report folder itself; expected another folder for the "
                          "CSV files", file=str(out_dir), field="--out")
    if out_dir.exists() and not out_dir.is_dir():
        raise CapsimError("is a file; expected a folder for the CSV files", file=str(out_dir),
                          field="--out")
    targets = {name: out_dir / name for name in tables}
    for name, path in targets.items():
        claim_output(path, "export", force=force, option="--out",
                     recognise=(f"a capsim export ({name})", _is_export(tables[name])))
    written = []
    for name, path in targets.items():
        write_text_output(path, tables[name].to_csv(index=False), "--out")
        written.append(path)
    return written


def _is_export(table):
    """Recognises a CSV whose header is this export's (capsim's own, replaceable)."""
    header = ",".join(map(str, table.columns))

    def ours(path: Path) -> bool:
        with path.open(encoding="utf-8") as f:
            return f.readline().rstrip("\r\n") == header
    return ours
