"""``capsim calibrate``: replay a recorded trace as it happened, compare with what the
service answered, and fit the prices the spec does not show (a thin layer over
:mod:`sim.calibration`). Registered in :data:`sim.cli.main.LAZY_COMMANDS`.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import click
from pydantic import ValidationError

from ..config.loader import parse_toml
from ..config.pricing import Pricing, deep_merge, default_pricing_table
from ..config.tiers import find_tier
from ..core.errors import CapsimError


def _pricing(path: str | None) -> Pricing:
    table = default_pricing_table()
    if path:
        try:
            with open(path, "rb") as fh:
                raw = parse_toml(fh.read().decode("utf-8"), file=path, field="--pricing")
        except FileNotFoundError:
            raise CapsimError("no such file", file=path, field="--pricing") from None
        except (OSError, UnicodeDecodeError) as err:
            why = getattr(err, "strerror", None) or type(err).__name__
            raise CapsimError(f"cannot read it ({why})", file=path, field="--pricing") from None
        except tomllib.TOMLDecodeError as err:
            raise CapsimError(f"not valid TOML ({err})", file=path) from None
        table = deep_merge(table, raw.get("pricing", raw))
    try:
        return Pricing.model_validate(table)
    except ValidationError as err:
        raise CapsimError.from_validation(err, path) from None


@click.command("calibrate", short_help="Replay a recorded trace, compare outcomes, fit prices.")
@click.argument("trace", type=click.Path(dir_okay=False))
@click.option("--tier", "tier_name", default=None, metavar="NAME",
              help="The account's tier (spec 8.1 name, e.g. 'All 3 APIs'); required "
                   "unless --accounts gives each account's.")
@click.option("--accounts", "accounts_file", type=click.Path(dir_okay=False), default=None,
              help="A TOML file saying which keys belong to which account when the log "
                   "mixes several ([[account]] tables of name, tier and keys, as "
                   "pseudonyms or in clear): each account is calibrated on its own "
                   "budget, one price list from all of them.")
@click.option("--client-times", is_flag=True, default=False,
              help="The trace's times are the client's send times (an HTTP library's or a "
                   "proxy's log): each decision is taken to lie one network delay after "
                   "its send time, the window phase is reported on the log's clock (a "
                   "constant clock skew cannot be seen).")
@click.option("--delay-ms", "delay_ms", default=None, metavar="LO,HI",
              help="With --client-times: bounds on one network delay, in ms (default: "
                   "each row's recorded latency bounds its own).")
@click.option("--fit", "fits", multiple=True, type=click.Choice(["phase", "cu", "decisions"]),
              help="What to fit (repeatable; default all): phase = the windows' phase on the "
                   "UTC clock and the refund rule; cu = exact least squares on billed CU; "
                   "decisions = the prices every recorded decision allows, jointly (linear "
                   "programming), as intervals.")
@click.option("--pricing", "pricing_file", type=click.Path(dir_okay=False), default=None,
              help="A TOML file of prices to start from ([pricing] keys, deep-merged over "
                   "the shipped defaults).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False),
              default="reports/calibration", show_default=True,
              help="Folder to write (replaced whole, atomically): calibration.json, "
                   "pricing.toml, report.md, report.html, timeline.png. Must be missing, "
                   "empty or a calibration folder holding only what capsim wrote.")
@click.option("--quiet", "-q", is_flag=True,
              help="No progress bar (shown on a terminal only, on stderr).")
def calibrate_command(trace: str, tier_name: str | None, accounts_file: str | None,
                      client_times: bool, delay_ms: str | None, fits: tuple[str, ...],
                      pricing_file: str | None, out_dir: str, quiet: bool) -> None:
    """Replay TRACE (a canonical trace from `capsim trace import`) as recorded against
    the tier, set each attempt's predicted outcome beside the observed one, estimate the
    window phase and fit the prices; write the calibration folder."""
    from ..calibration import FITS, calibrate
    from ..calibration.calibrate import STEPS
    from ..calibration.report import write_calibration
    from ..report.folder import ReportFolder
    from ..traces.schema import open_trace
    from .progress import Progress

    ReportFolder(out_dir, "calibration").check()  # a folder not ours: refused first
    accounts = None
    if accounts_file:
        from ..calibration.accounts import load_accounts

        accounts = load_accounts(accounts_file)
    if tier_name is None and not accounts:
        raise CapsimError("missing; expected the account's tier (--tier NAME), or "
                          "--accounts FILE giving each account's", field="--tier")
    tier = find_tier(tier_name) if tier_name else None
    from ..calibration.client import parse_delay_ms

    delay_s = parse_delay_ms(delay_ms)
    if delay_s is not None and not client_times:
        raise CapsimError("only with --client-times (the delays between a client's send "
                          "time and the service's decision)", field="--delay-ms")
    pricing = _pricing(pricing_file)
    open_trace(trace).close()  # a wrong TRACE is refused before anything is created
    # Claimed and locked before the work, not at write time: a second calibration into
    # the same folder stops at once instead of running to the end and replacing this one.
    with ReportFolder(out_dir, "calibration") as folder, \
            Progress("calibrating", len(STEPS), "steps", quiet=quiet) as bar:
        cal = calibrate(trace, tier, pricing, fit=fits or FITS, accounts=accounts,
                        client_times=client_times, delay_s=delay_s,
                        progress=lambda name: bar.to(STEPS.index(name), note=name))
        bar.to(len(STEPS), note="done")
        out = write_calibration(cal, out_dir, Path(trace).name, folder)
    click.echo(f"agreement {100 * cal.before.agreement:.2f} % before, "
               f"{100 * cal.after.agreement:.2f} % after ({cal.after.n_compared:,} attempts "
               f"compared); verdict: {cal.verdict}" + (
                   f" after trimming {100 * cal.trimmed_share:.2f} % as likely mislabelled "
                   f"({100 * cal.kept_agreement:.2f} % of the rest agree)"
                   if cal.trimmed else ""))
    if cal.verdict == "does not fit":
        click.echo("  " + next(n for n in cal.notes if n.startswith(("does not fit",
                                                                     "the decisions cannot"))))
    for a, n, ag in zip(cal.accounts, cal.account_rows, cal.account_agreement, strict=True):
        click.echo(f"  account {a.name} ({a.tier.name}, {len(a.keys)} key(s)): {n:,} "
                   f"compared, {100 * ag:.2f} % agree after")
    if cal.phase_interval is not None:
        iv = cal.phase_interval
        clock = " on the log's clock" if cal.client_times else ""
        click.echo(f"  window phase{clock} {cal.settings_after.phase_s:.3f} s (fits "
                   f"{iv.low % 12:.3f}-{iv.low % 12 + iv.high - iv.low:.3f}); refunds: "
                   f"{cal.refund_rule}")
    for p in cal.prices:
        iv = "" if p.low is None and p.high is None else \
            f"  [{'-' if p.low is None else f'{p.low:.6g}'}, " \
            f"{'∞' if p.high is None else f'{p.high:.6g}'}]"
        click.echo(f"  {p.name}: {p.value:.6g} ({p.how}){iv}")
    for g in cal.gas_caps.values():
        hi = "∞" if g.high is None else f"{g.high:.6g}"
        click.echo(f"  gas cap {g.profile}: {g.value:.6g}  [{g.low:.6g}, {hi}]")
    if cal.dropped:
        click.echo(f"  {len(cal.dropped)} decisions left out (see report.md)")
    click.echo(f"wrote {out}/")
