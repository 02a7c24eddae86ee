"""``capsim export``: a report folder's tables as CSV (:mod:`sim.report.export`).
Registered in :data:`sim.cli.main.LAZY_COMMANDS`."""

from __future__ import annotations

from pathlib import Path

import click

from .options import force_option, handled


@click.command("export")
@click.argument("run_dir", metavar="RUN_DIR", type=click.Path(file_okay=False))
@click.option("--out", type=click.Path(file_okay=False), metavar="DIR",
              help="Folder for the CSV files (default: RUN_DIR-csv beside the report).")
@force_option
def export(run_dir: str, out: str | None, force: bool) -> None:
    """Export a run's report folder as CSV: tiers.csv (one row per tier, every figure of
    summary.json as a column), windows.csv (one row per tier x 12-second window, from
    windows.parquet) and accounts.csv (one row per tier x account, for [[accounts]]).

    Numbers in full, nested figures as flat columns (latency_ms_p99). The report folder
    itself is left as it is; an existing CSV is replaced only if it is capsim's export.
    """
    from ..report.export import export_tables

    target = Path(out) if out else Path(str(Path(run_dir)).rstrip("/") + "-csv")
    for path in export_tables(run_dir, target, force=force):
        click.echo(f"wrote {path}")


handled(export)
