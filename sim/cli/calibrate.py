"""``capsim calibrate``: replay a recorded trace as it happened, compare with what the
service answered, and fit the prices the spec does not show (a thin layer over
:mod:`sim.calibration`). Registered in :data:`sim.cli.main.LAZY_COMMANDS`.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import click
from pydantic import ValidationError

from ..config.pricing import Pricing, deep_merge, default_pricing_table
from ..config.tiers import find_tier
from ..core.errors import CapsimError


def _pricing(path: str | None) -> Pricing:
    table = default_pricing_table()
    if path:
        try:
            with open(path, "rb") as fh:
                raw = tomllib.load(fh)
        except FileNotFoundError:
            raise CapsimError("no such file", file=path, field="--pricing") from None
        except tomllib.TOMLDecodeError as err:
            raise CapsimError(f"not valid TOML ({err})", file=path) from None
        table = deep_merge(table, raw.get("pricing", raw))
    try:
        return Pricing.model_validate(table)
    except ValidationError as err:
        raise CapsimError.from_validation(err, path) from None


@click.command("calibrate", short_help="Replay a recorded trace, compare outcomes, fit prices.")
@click.argument("trace", type=click.Path(dir_okay=False))
@click.option("--tier", "tier_name", required=True, metavar="NAME",
              help="The account's tier (spec 8.1 name, e.g. 'All 3 APIs').")
@click.option("--fit", "fits", multiple=True, type=click.Choice(["phase", "cu", "decisions"]),
              help="What to fit (repeatable; default all): phase = the windows' phase on the "
                   "UTC clock; cu = exact least squares on billed CU; decisions = prices "
                   "searched on the observed throttles, as intervals.")
@click.option("--pricing", "pricing_file", type=click.Path(dir_okay=False), default=None,
              help="A TOML file of prices to start from ([pricing] keys, deep-merged over "
                   "the shipped defaults).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False),
              default="reports/calibration", show_default=True,
              help="Folder to write (replaced whole, atomically): calibration.json, "
                   "pricing.toml, report.md, report.html, timeline.png.")
def calibrate_command(trace: str, tier_name: str, fits: tuple[str, ...],
                      pricing_file: str | None, out_dir: str) -> None:
    """Replay TRACE (a canonical trace from `capsim trace import`) as recorded against
    the tier, set each attempt's predicted outcome beside the observed one, estimate the
    window phase and fit the prices; write the calibration folder."""
    from ..calibration import FITS, calibrate
    from ..calibration.report import write_calibration

    tier = find_tier(tier_name)
    pricing = _pricing(pricing_file)
    cal = calibrate(trace, tier, pricing, fit=fits or FITS)
    out = write_calibration(cal, out_dir, Path(trace).name)
    click.echo(f"agreement {100 * cal.before.agreement:.2f} % before, "
               f"{100 * cal.after.agreement:.2f} % after ({cal.after.n_compared:,} attempts "
               f"compared); verdict: {cal.verdict}")
    for p in cal.prices:
        click.echo(f"  {p.name}: {p.value:.6g} ({p.how})")
    click.echo(f"wrote {out}/")
