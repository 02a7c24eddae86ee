"""``capsim schema``: print the scenario's JSON Schema (:mod:`sim.config.json_schema`).
Registered in :data:`sim.cli.main.LAZY_COMMANDS`."""

from __future__ import annotations

import json

import click

from .options import handled


@click.command("schema")
def schema() -> None:
    """Print the scenario file's JSON Schema (draft 2020-12) on stdout.

    Generated from the same models that read scenarios, so an editor with a TOML
    language server (Taplo, VS Code's Even Better TOML) completes keys, shows each one's
    documentation and flags a misspelt key or a wrong type as you type: save it with
    `capsim schema > capsim-scenario.schema.json` and put `#:schema
    ./capsim-scenario.schema.json` on a scenario's first line (docs/how-to/edit-scenarios.md).
    """
    from ..config.json_schema import scenario_schema

    click.echo(json.dumps(scenario_schema(), indent=2, sort_keys=False))


handled(schema)
