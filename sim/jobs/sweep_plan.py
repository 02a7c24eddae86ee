"""A sweep's plan: the factorial points × variants × replications, as independent runs.

    plan = plan_sweep("workloads/searcher.toml", vary=["load=1,2,4"], replications=5)
    [run.run_id for run in plan.runs]     # 'p000-base-r000', 'p000-base-r001', ...

Each :class:`RunSpec` is self-contained (the scenario text, its overrides, the seed, the
tiers) so it can be simulated in any process or on any Dask worker. Replication r draws
the seed :func:`sim.core.rng.replication_seed` (seed, r): replication 0 of the base point is
exactly ``capsim run`` with the same ``--set`` values.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config.key_paths import masked_override, masked_text, masked_value, toml_text
from ..config.loader import _known_prefix
from ..core.errors import CapsimError, read_user_text
from ..core.rng import replication_seed

BASE = "base"


@dataclass(frozen=True)
class Factor:
    """One ``--vary KEY.PATH=V1,V2,...``: a key path and the values it takes."""

    path: str
    values: tuple[Any, ...]
    texts: tuple[str, ...]  # each value as written (TOML), for overrides and labels


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: a point, a variant and a replication, simulated on every tier."""

    run_id: str
    point: int
    variant: str
    replication: int
    seed: int
    overrides: tuple[str, ...]
    scenario_text: str
    scenario_label: str
    tiers: tuple[str, ...]


@dataclass(frozen=True)
class SweepPlan:
    """Everything a sweep runs, and the identity its output folder is checked against."""

    scenario_name: str
    scenario_label: str
    factors: tuple[Factor, ...]
    points: tuple[dict[str, Any], ...]
    variants: tuple[str, ...]
    replications: int
    tiers: tuple[str, ...]
    runs: tuple[RunSpec, ...]
    identity: dict[str, Any] = field(default_factory=dict)
    hashed_identity: dict[str, Any] | None = None
    """:attr:`identity` with the keys as given (``identity``, which is written, shows
    them as pseudonyms): what :attr:`fingerprint` hashes. None: ``identity`` itself."""

    @property
    def fingerprint(self) -> str:
        """A short hash of the sweep's identity (the values as given, keys included,
        never written): two sweeps share a folder only if it matches."""
        ident = self.identity if self.hashed_identity is None else self.hashed_identity
        text = json.dumps(ident, sort_keys=True, ensure_ascii=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def split_values(text: str) -> list[str]:
    """Split ``V1,V2,...`` on commas outside brackets, braces and quotes."""
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def parse_vary(item: str) -> Factor:
    """``KEY.PATH=V1,V2,...`` -> :class:`Factor` (values parsed as TOML, else strings)."""
    if "=" not in item:
        # Not the item: its values (an API key?) run on into the path.
        shown = _known_prefix(item)
        raise CapsimError("expected KEY.PATH=V1,V2,... ('=' missing; the rest is not "
                          "shown, it may hold a value)",
                          field=f"--vary {shown}" if shown else "--vary")
    path, text = (s.strip() for s in item.split("=", 1))
    texts = split_values(text)
    if not path or not text or any(not t for t in texts):
        raise CapsimError("expected KEY.PATH=V1,V2,... with no empty value",
                          field=f"--vary {path}")
    if len(set(texts)) != len(texts):
        raise CapsimError("expected distinct values", field=f"--vary {path}")
    return Factor(path, tuple(_toml_value(t) for t in texts), tuple(texts))


def _toml_value(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):  # the loader words a deep value
        return text


def scenario_source(scenario: str | Path | None) -> tuple[str, str]:
    """``(label, text)`` of a scenario file (None: the built-in default), as the runs of
    a job carry it to their workers."""
    from ..config.loader import builtin_scenario_text

    if scenario is None:
        return "<built-in default scenario>", builtin_scenario_text()
    return str(scenario), read_user_text(scenario)


def plan_sweep(scenario: str | Path | None, *, vary: list[str] = (), replications: int = 1,
               tiers: list[str] = (), overrides: list[str] = (),
               variants: bool = True) -> SweepPlan:
    """Expand a sweep: the full factorial of ``vary``, each point run as the base scenario
    and as each of its ``[[variants]]``, ``replications`` times, on ``tiers`` (default:
    the scenario's). ``overrides`` (``--set``) apply to every run."""
    from ..api import load_scenario

    if replications < 1:
        raise CapsimError("expected at least 1", field="--replications")
    label, text = scenario_source(scenario)
    factors = tuple(parse_vary(v) for v in vary)
    paths = [f.path for f in factors]
    if len(set(paths)) != len(paths):
        raise CapsimError("each key path may be varied once", field="--vary")
    base = load_scenario(scenario, tiers=tiers, overrides=list(overrides))
    sc = base.scenario
    tier_names = tuple(t.name for t in base.tiers)
    chosen = [v for v in sc.variants] if variants else []
    variant_sets = {BASE: ()} | {
        v.name: tuple(f"{k}={toml_text(val)}" for k, val in v.set.items()) for v in chosen}
    # What is written and printed: every key as its pseudonym (the runs get the keys).
    shown = tuple(Factor(f.path, tuple(masked_value(f.path, v) for v in f.values),
                         tuple(masked_text(f.path, t) for t in f.texts)) for f in factors)
    points = tuple(dict(zip(paths, combo, strict=True))
                   for combo in itertools.product(*(f.values for f in shown)))
    point_sets = [tuple(f"{f.path}={t}" for f, t in zip(factors, combo, strict=True))
                  for combo in itertools.product(*(f.texts for f in factors))]
    runs = []
    for p, point_set in enumerate(point_sets):
        for vname, vset in variant_sets.items():
            ovr = (*overrides, *point_set, *vset)
            # Validate every combination now: a bad value fails before anything runs.
            try:
                loaded = load_scenario(scenario, tiers=tier_names, overrides=list(ovr))
            except CapsimError as err:
                raise _named_by_origin(err, factors, point_set, vname, vset, label) from None
            for r in range(replications):
                runs.append(RunSpec(
                    run_id=f"p{p:03d}-{_slug(vname)}-r{r:03d}", point=p, variant=vname,
                    replication=r, seed=replication_seed(loaded.scenario.seed, r),
                    overrides=ovr, scenario_text=text, scenario_label=label,
                    tiers=tier_names))
    def identity(factors, overrides, variant_sets) -> dict[str, Any]:
        return {
            "scenario": sc.name,
            "scenario_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "overrides": list(overrides),
            "vary": [[f.path, list(f.texts)] for f in factors],
            "variants": {k: list(v) for k, v in variant_sets.items()},
            "replications": replications,
            "tiers": list(tier_names),
        }
    shown_sets = {k: [masked_override(o) for o in v] for k, v in variant_sets.items()}
    return SweepPlan(sc.name, label, shown, points, tuple(variant_sets), replications,
                     tier_names, tuple(runs),
                     identity(shown, [masked_override(o) for o in overrides], shown_sets),
                     identity(factors, overrides, variant_sets))


def _set_path(field: str | None) -> tuple[tuple, str] | None:
    """The key path of a ``--set PATH[: inner]`` field, and the rest after it."""
    from ..config.loader import parse_path

    if not field or not field.startswith("--set "):
        return None
    head, sep, rest = field[len("--set "):].partition(": ")
    try:
        return parse_path(head), sep + rest
    except CapsimError:
        return None


def _named_by_origin(err: CapsimError, factors, point_set, vname: str, vset,
                     label: str) -> CapsimError:
    """``err`` about a value the run got from ``--vary`` or a ``[[variants]]`` table,
    naming that origin (the loader sees every one of them as a ``--set``)."""
    from ..config.loader import parse_path

    found = _set_path(err.field)
    if found is None:
        return err
    path, rest = found
    for factor, item in zip(factors, point_set, strict=True):
        with contextlib.suppress(CapsimError):
            if parse_path(factor.path) == path:
                shown = masked_override(item)
                return CapsimError(f"{err.message} (in the combination {shown})",
                                   field=f"--vary {factor.path}{rest}")
    for item in vset:
        with contextlib.suppress(CapsimError):
            if parse_path(item.split("=", 1)[0].strip()) == path:
                return CapsimError(err.message, file=label,
                                   field=f"variants {vname!r}: set.{item.split('=', 1)[0]}"
                                         f"{rest}")
    return err


def _slug(name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower() or "variant"
    return slug + "-" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:6] \
        if name != BASE else BASE
