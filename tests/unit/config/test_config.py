"""The configuration package: tagged unions are found from pydantic's discriminators."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from sim.config.loader import _allowed_keys


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Fixed(_M):
    shape: Literal["fixed"]
    width: float


class Sliding(_M):
    shape: Literal["sliding", "rolling"]
    span: float
    step: float = 1.0


class Holder(_M):
    window: Annotated[Fixed | Sliding, Field(discriminator="shape")]
    spare: Annotated[Fixed | Sliding, Field(discriminator="shape")] | None = None


def test_unknown_key_lists_the_fields_of_the_member_its_tag_selects():
    # A tag name ("shape") the loader has never heard of: found from the discriminator.
    raw = {"window": {"shape": "rolling", "spn": 3}}
    assert _allowed_keys(Holder, raw, ("window",)) == ["shape", "span", "step"]
    raw = {"window": {"shape": "fixed", "wdth": 3}}
    assert _allowed_keys(Holder, raw, ("window",)) == ["shape", "width"]
    # Optional around the Annotated union: still found.
    raw = {"window": {"shape": "fixed", "width": 1}, "spare": {"shape": "sliding"}}
    assert _allowed_keys(Holder, raw, ("spare",)) == ["shape", "span", "step"]


def test_scenario_unions_still_resolve():
    from sim.config.scenario import Scenario

    raw = {"sources": [{"arrival": {"process": "block", "rat": 1}}]}
    keys = _allowed_keys(Scenario, raw, ("sources", 0, "arrival"))
    assert "per_block" in keys and "rate" not in keys
    raw = {"methods": {"m": {"service_time": {"dist": "lognormal", "meen": 1}}}}
    keys = _allowed_keys(Scenario, raw, ("methods", "m", "service_time"))
    assert keys == ["dist", "median", "sigma"]
