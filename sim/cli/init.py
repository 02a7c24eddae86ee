"""``capsim init``: a scenario to start from, commented, or proposed from a recorded trace
(a thin layer over :mod:`sim.config.template` and :mod:`sim.traces.scenario_from_trace`).
Registered in :data:`sim.cli.main.LAZY_COMMANDS`. It never overwrites a file.
"""

from __future__ import annotations

from pathlib import Path

import click

from ..core.errors import CapsimError
from .options import handled


def _refuse_existing(path: Path, option: str, what: str = "") -> None:
    if path.exists() or path.is_symlink():
        raise CapsimError(f"exists{what}, and capsim init never overwrites a file; nothing "
                          f"was written. Choose another {option} name", file=str(path),
                          field=option)


@click.command("init")
@click.argument("scenario", required=False, default="scenario.toml",
                type=click.Path(dir_okay=False))
@click.option("--trace", "trace_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="Propose a runnable scenario replaying FILE: a canonical trace, or any "
                   "file `capsim trace import` reads (then imported first, into "
                   "SCENARIO's name with .parquet, keys replaced by pseudonyms).")
def init(scenario: str, trace_file: str | None) -> None:
    """Write a new scenario file SCENARIO (default: scenario.toml).

    Without --trace: a commented template of a first scenario, every table it needs.
    With --trace FILE: a scenario that replays FILE as it was recorded: the trace's keys
    (as pseudonyms) on one account, its regions, its start and span as start and
    duration, the tiers serving every API it uses, and a method map proposed for each
    recorded JSON-RPC method that is not this service's. An existing file is never
    overwritten.
    """
    from ..core.outputs import check_writable, write_text_output

    out = Path(scenario)
    _refuse_existing(out, "SCENARIO")
    check_writable(out, "SCENARIO")
    if trace_file is None:
        from ..config.template import template_text

        write_text_output(out, template_text(out.stem, out.name), "SCENARIO")
        click.echo(f"wrote {out}: a commented scenario template; edit it, then "
                   f"`capsim validate {out}` and `capsim run {out}`")
        return
    from ..traces.scenario_from_trace import scenario_from_trace
    from ..traces.schema import is_canonical_trace

    trace = Path(trace_file)
    if not trace.is_file():
        raise CapsimError("no such file", file=str(trace), field="--trace")
    if not is_canonical_trace(trace):
        from ..traces.importers import import_trace

        imported = out.with_suffix(".parquet")
        _refuse_existing(imported, "SCENARIO",
                         " (the imported trace goes there: SCENARIO's name with .parquet)")
        report = import_trace(trace, imported)
        click.echo(report.render())
        trace = imported
    write_text_output(out, scenario_from_trace(trace, out), "SCENARIO")
    click.echo(f"wrote {out}: replays {trace}; read the proposals in it, then "
               f"`capsim run {out}`")


handled(init)
