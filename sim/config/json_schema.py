"""The scenario's JSON Schema, from the pydantic models (:class:`~sim.config.scenario.Scenario`),
for TOML editors (Taplo, Even Better TOML: docs/how-to/edit-scenarios.md) and
``capsim schema``.

The models stay the one home of the format: the schema is generated from them, with the
few things a ``mode="before"`` validator accepts beyond the field's type written in
(``duration`` as ``"30m"`` as well as seconds). Unknown keys are refused
(``additionalProperties: false``, the models' ``extra="forbid"``), so an editor flags a
misspelt key as capsim does.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
DURATION_PATTERN = r"^\s*([0-9]*\.?[0-9]+)\s*(ms|s|m|h|d)?\s*$"
"""The strings :func:`sim.config.scenario.parse_duration` reads."""


def scenario_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a scenario file, as a JSON-ready dict."""
    from .scenario import Scenario

    schema = Scenario.model_json_schema(by_alias=True, mode="validation")
    duration = schema["properties"]["duration"]
    schema["properties"]["duration"] = {
        "title": duration.get("title", "Duration"),
        "description": "Simulated time: seconds, or a string such as \"90s\", \"30m\", "
                       "\"1h\", \"7d\".",
        "default": duration.get("default", 3600.0),
        "anyOf": [{"type": "number", "exclusiveMinimum": 0, "maximum": 366 * 86400},
                  {"type": "string", "pattern": DURATION_PATTERN}],
    }
    return {"$schema": SCHEMA_DIALECT, "title": "capsim scenario",
            **{k: v for k, v in schema.items() if k != "title"}}


def as_json_document(value: Any) -> Any:
    """A parsed TOML document as JSON sees it (dates and times as ISO strings), the form
    Taplo and ``jsonschema`` validate."""
    if isinstance(value, dict):
        return {k: as_json_document(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_json_document(v) for v in value]
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    return value
