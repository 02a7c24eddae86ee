"""``capsim trace``: import recorded traffic and summarise it (a thin layer over
:mod:`sim.traces`). Registered in :data:`sim.cli.main.LAZY_COMMANDS`.

A :class:`~sim.core.errors.CapsimError` becomes ``capsim: error: ...`` on stderr and exit
code 2 (:func:`sim.cli.options.report_errors`, as for every command).
"""

from __future__ import annotations

import json

import click

from ..traces.names import DEFAULT_CHUNK_ROWS, FORMATS  # pyarrow-free
from .options import force_option, handled


@click.group("trace")
def trace() -> None:
    """Import recorded traffic into the canonical trace table and summarise it.

    A canonical trace is a Parquet file with one row per request (time, API, method,
    key pseudonym, region, sizing items and profiles, gas, CU, status, latency, body
    hash); `capsim trace import` writes it, `capsim trace stats` summarises it, and the
    simulator replays it.
    """


@trace.command("import", short_help="Import a trace file into a canonical trace (Parquet).")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["auto", *FORMATS]), default="auto",
              show_default=True,
              help="Source format; auto picks it from the extension (.csv, .jsonl, .parquet, "
                   ".har, .log).")
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="Canonical trace to write (Parquet). Written atomically: nothing appears "
                   "here unless the whole import succeeds. An existing file is replaced "
                   "only if it is a canonical trace (or with --force).")
@click.option("--on-invalid", type=click.Choice(["error", "skip"]), default="error",
              show_default=True,
              help="error: stop at the first invalid row, naming file, line and field. "
                   "skip: leave invalid rows out and report how many, by reason.")
@click.option("--region", default=None,
              help="Record this region for every row, replacing what the source says.")
@click.option("--chunk-rows", type=click.IntRange(min=1), default=DEFAULT_CHUNK_ROWS,
              show_default=True,
              help="Rows per Parquet row group. Sources are read in bounded pieces either "
                   "way (HAR entries one at a time). Replay reads a trace a row group at a "
                   "time.")
@click.option("--host-map", "host_map", multiple=True, metavar="HOST=API",
              help="Which API a recorded host serves: rpc, search, streams, or ignore "
                   "(repeatable; globs such as *.example.io allowed; HAR). Hosts neither "
                   "recognised from content nor mapped are counted by host, never imported.")
@click.option("--allow-empty", is_flag=True,
              help="Write an empty trace when nothing is kept, instead of failing.")
@force_option
def import_cmd(file: str, fmt: str, out: str, on_invalid: str, region: str | None,
               chunk_rows: int, host_map: tuple[str, ...], allow_empty: bool,
               force: bool) -> None:
    """Import FILE (CSV, JSONL, Parquet, HAR, RPC or sizing request log) into a
    canonical trace.

    Every row is validated (request bodies against the service spec; JSON-RPC as
    clients send it, deviations counted); API keys are replaced by pseudonyms wherever
    they appear (headers, URL userinfo, query, path), and the output is scanned for any
    key or opaque URL token that survived before it is published. An import that keeps
    nothing fails (exit 2) with the reasons by count, unless --allow-empty.
    """
    from ..core.outputs import claim_output
    from ..traces.importers import import_trace
    from ..traces.schema import CANONICAL_TRACE

    claim_output(out, "trace", force=force, option="--out", recognise=CANONICAL_TRACE)
    report = import_trace(file, out, fmt=fmt, on_invalid=on_invalid, region=region,
                          chunk_rows=chunk_rows, host_map=host_map, allow_empty=allow_empty)
    click.echo(report.render())


@trace.command("stats", short_help="Summarise a canonical trace: windows, peak, tier.")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def stats_cmd(file: str, as_json: bool) -> None:
    """Summarise the canonical trace FILE: time span, requests and CU per 12-second
    window, the peak window, counts by API / method / key / region / status, and the
    smallest tier that covers the peak.
    """
    from ..traces.stats import render_stats, trace_stats

    stats = trace_stats(file)
    if as_json:
        click.echo(json.dumps(stats, indent=2, default=str))
    else:
        click.echo(render_stats(stats))


handled(trace)
