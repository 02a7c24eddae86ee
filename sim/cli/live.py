"""``capsim serve`` and ``capsim drive``: the live emulator and the real client."""

from __future__ import annotations

import asyncio
import os
import sys

import click

from ..core.limits import MAX_TIME_SCALE
from .options import FiniteFloatRange, force_option, set_option


def _loaded(scenario, overrides):
    from ..api import load_scenario

    return load_scenario(scenario, overrides=overrides)


_set_option = set_option()


def _time_scale(f):
    return click.option("--time-scale", type=FiniteFloatRange(min=0, min_open=True,
                                                              max=MAX_TIME_SCALE),
                        default=None, metavar="X",
                        help="Service seconds per wall second (default 1; e.g. 10 lives a "
                             "minute of service time in 6 s).")(f)


@click.command()
@click.argument("scenario", required=False, type=click.Path(dir_okay=False))
@click.option("--tier", "tier_name", required=True, metavar="NAME",
              help="The subscription tier the emulated account has.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8443, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: a free port, printed).")
@_time_scale
@click.option("--cert-dir", type=click.Path(file_okay=False), default=None,
              help="Folder for the CA and server certificate, made on the first start and "
                   "reused after (default: a temporary folder, removed on exit).")
@click.option("--access-log", default="-", show_default=True, metavar="FILE|-|off",
              help="One line per request (the key only as its pseudonym): a file to "
                   "append to, - for standard error, off for none.")
@click.option("--access-log-format", type=click.Choice(["text", "jsonl"]), default="text",
              show_default=True,
              help="text: one readable line per request; jsonl: one JSON object per API "
                   "request, which `capsim trace import` reads (a recorded session replays "
                   "in the simulator).")
@click.option("--allow-remote", is_flag=True, help="Allow a non-loopback --host (the "
              "admin endpoints still answer loopback clients only, unless "
              "CAPSIM_ADMIN_TOKEN is set: then every admin request needs X-Admin-Token).")
@_set_option
def serve(scenario, tier_name, host, port, time_scale, cert_dir, access_log,
          access_log_format, allow_remote, overrides):
    """Emulate the service for SCENARIO's account (default: the built-in scenario).

    HTTPS with HTTP/2 and SNI on search.localhost, rpc.localhost and streams.localhost
    (and the same under each of the scenario's regions); the account's keys, limiter,
    websocket cap and connection limits are those the simulator uses. /admin/* (loopback
    clients only, or X-Admin-Token = $CAPSIM_ADMIN_TOKEN) helps a developer: window,
    reset, tier, faults, a request journal, fault and latency rules
    (docs/how-to/use-the-emulator.md). Stops cleanly on Ctrl-C or SIGTERM.
    """
    from ..config.tiers import find_tier
    from ..live.admin import ADMIN_TOKEN_ENV
    from ..live.server import ServeOptions
    from ..live.server import serve as serve_async

    loaded = _loaded(scenario, overrides)
    tier = find_tier(tier_name, loaded.tiers)
    if cert_dir is not None:
        _check_writable_folder(cert_dir, "--cert-dir")

    def warn(line: str) -> None:
        click.echo(line, err=True)

    options = ServeOptions(host=host, port=port, time_scale=time_scale or 1.0,
                           cert_dir=cert_dir, allow_remote=allow_remote,
                           access_log=access_log, access_log_format=access_log_format,
                           admin_token=os.environ.get(ADMIN_TOKEN_ENV) or None, warn=warn)

    def announce(line: str) -> None:
        click.echo(line)
        sys.stdout.flush()

    asyncio.run(serve_async(loaded, tier, options, announce))


@click.command()
@click.argument("scenario", type=click.Path(dir_okay=False))
@click.option("--target", required=True, metavar="URL",
              help="The emulator's address, e.g. https://127.0.0.1:8443.")
@_time_scale
@click.option("--out", type=click.Path(dir_okay=False), default=None, metavar="TRACE",
              help="Canonical trace to write (default: reports/<scenario name>.driven.parquet, "
                   "beside the report folders, never inside one). An existing file is "
                   "replaced only if it is a canonical trace (or with --force).")
@click.option("--ca", "ca_path", type=click.Path(dir_okay=False, exists=True), default=None,
              help="CA certificate to trust (the path `capsim serve` printed).")
@click.option("--allow-remote", is_flag=True,
              help="Allow a --target that is not a loopback address.")
@click.option("--boundary-ms", type=click.FloatRange(min=0), default=5.0, show_default=True,
              help="Leave out of the comparison attempts within this many wall "
                   "milliseconds (scaled) of a 12-second window boundary.")
@_set_option
@force_option
def drive(scenario, target, time_scale, out, ca_path, allow_remote, boundary_ms, overrides,
          force):
    """Replay SCENARIO's demand against a running emulator with real HTTP/2 and websocket
    clients, and write every attempt (status, latency) as a canonical trace.

    Then replays the trace as recorded through the simulator's policy objects for the
    emulator's tier and prints how many decisions agree.
    """
    from pathlib import Path

    from ..core.errors import CapsimError
    from ..core.outputs import check_writable, claim_output
    from ..live.drive import DriveOptions, run_drive, tls_context
    from ..live.record import LIVE_SIDECAR, sidecar_path
    from ..traces.schema import CANONICAL_TRACE

    loaded = _loaded(scenario, overrides)
    if ca_path:
        tls_context(ca_path)  # a CA that is not PEM: refused before anything is driven
    # Both files are checked before anything is driven: a recorded drive is never lost.
    out_path = claim_output(Path(out) if out else default_drive_trace(loaded.scenario.name),
                            "trace", force=force, option="--out", recognise=CANONICAL_TRACE)
    claim_output(sidecar_path(out_path), "trace", force=force, option="--out",
                 recognise=LIVE_SIDECAR)
    if out is None:
        try:
            out_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise CapsimError(f"cannot create its folder ({err.strerror})",
                              file=str(out_path), field="--out") from None
    elif not (out_path.parent if str(out_path.parent) else Path(".")).is_dir():
        raise CapsimError("output folder does not exist; expected a file name in an "
                          "existing folder", file=str(out_path), field="--out")
    check_writable(out_path, "--out")
    options = DriveOptions(target=target, time_scale=time_scale, ca_path=ca_path,
                           allow_remote=allow_remote)
    result = asyncio.run(run_drive(loaded, options, out_path))
    click.echo(result.describe())
    from ..calibration.agreement import compare
    from ..config.tiers import find_tier

    try:
        tier = find_tier(result.tier, loaded.tiers)
    except CapsimError:
        click.echo(f"no comparison: the emulator's tier {result.tier!r} is not in {scenario}")
        return
    comparison = compare(loaded, tier, out_path, sidecar=result.sidecar,
                         boundary_s=boundary_ms / 1e3 * result.time_scale)
    click.echo(f"sim vs emulator ({tier.name}): {comparison.describe()}")


def _check_writable_folder(folder: str, option: str) -> None:
    """A CapsimError naming ``folder`` unless it is (or can be made) a writable folder."""
    import os
    import tempfile
    from pathlib import Path

    from ..core.errors import CapsimError

    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".capsim-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise CapsimError(f"cannot write certificates here "
                          f"({err.strerror or type(err).__name__}); choose a writable folder",
                          file=folder, field=option) from None


def default_drive_trace(name: str):
    """Where `capsim drive` writes its trace by default: beside the report folders, not
    inside ``reports/<name>/`` (which the next `capsim run` replaces whole)."""
    from pathlib import Path

    return Path("reports") / f"{name}.driven.parquet"


__all__ = ["default_drive_trace", "drive", "serve"]
