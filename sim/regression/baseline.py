"""Baseline files: a scenario's headline figures per tier, small and diff-friendly.

A baseline is written by ``capsim baseline save`` and reviewed in pull requests, so it
holds only what the gate compares (the catalogue's metrics per tier, as a mean with its
95 % Student-t half-width over replications, and the recommended tier) and what makes it
reproducible (scenario name, file, content hash, seed, ``--set`` overrides, tier
selection, replications, capsim version, the summary's schema version), and the
fingerprint of every input the run read (:class:`Inputs`: the scenario, each trace's
content, the pricing file, capsim's version), so a report can say which input changed.
Baselines written before the fingerprint load with ``inputs`` None ("not recorded").
Keys are sorted
and every float is rounded to :data:`DIGITS` significant digits, so an unchanged run
rewrites the file byte for byte.

The same model holds a run being checked, or a report folder being compared: a single
summary is a baseline of one replication.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..config.key_paths import masked_override
from ..core.atomic import write_atomic
from ..core.errors import CapsimError, read_user_text
from ..core.intervals import Interval, mean_interval
from ..core.limits import MAX_REPLICATIONS
from ..core.version import __version__
from ..results.catalogue import METRICS, method_cu_per_day
from ..results.summary import SCHEMA_VERSION, RunSummary

BASELINE_SCHEMA_VERSION = 1
"""Version of the baseline file layout; bumped when a key changes meaning or goes."""

DIGITS = 6
"""Significant digits kept for every figure (diff-stable across platforms)."""


def rounded(value: float | None, digits: int = DIGITS) -> float | None:
    """``value`` to ``digits`` significant digits (None stays None)."""
    if value is None or math.isnan(value):
        return None
    return float(f"{value:.{digits}g}")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class Figure(_Frozen):
    """A metric over replications: mean, 95 % half-width (None with one replication),
    and ``n``, the replications where it was defined (0: undefined / never in all)."""

    mean: float | None
    half_width: float | None = None
    n: int = Field(ge=0)

    def interval(self) -> Interval:
        """As a :class:`~sim.core.intervals.Interval` (requires ``mean``)."""
        return Interval(float(self.mean), self.half_width, self.n)


class TierFigures(_Frozen):
    """One tier's figures, keyed by catalogue metric name."""

    tier: str
    cu_per_window: float
    monthly_usd: float | None
    metrics: dict[str, Figure]
    cu_per_day_by_method: dict[str, Figure] | None = None
    """CU settled per day by each method (None: a baseline written before it was kept)."""


class RecommendedTier(_Frozen):
    """The recommended tier (the most frequent over replications; None: no tier meets
    the SLO) and each replication's recommendation."""

    tier: str | None
    per_replication: tuple[str | None, ...]

    @property
    def unanimous(self) -> bool:
        return len(set(self.per_replication)) <= 1


class Inputs(_Frozen):
    """The fingerprint of everything a run read: content hashes, and capsim's version."""

    scenario: str
    """The scenario's content hash (as ``Baseline.content_hash``)."""
    traces: dict[str, str] = {}
    """Each trace a source replays, by its path as the scenario names it: its content hash."""
    pricing: str
    """The content hash of the pricing file the scenario's ``[pricing]`` is merged over."""
    capsim: str


class Baseline(_Frozen):
    """A baseline file (see the module docstring)."""

    baseline_schema_version: int = BASELINE_SCHEMA_VERSION
    summary_schema_version: int = SCHEMA_VERSION
    capsim_version: str
    scenario: str
    scenario_file: str
    content_hash: str
    seed: int
    overrides: tuple[str, ...] = ()
    tier_selection: tuple[str, ...] = ()
    replications: int = Field(ge=1, le=MAX_REPLICATIONS)  # a hand edit must not run 1e5
    recommended: RecommendedTier
    tiers: tuple[TierFigures, ...]
    inputs: Inputs | None = None

    @field_validator("overrides")
    @classmethod
    def _keys_as_pseudonyms(cls, overrides: tuple[str, ...]) -> tuple[str, ...]:
        # A baseline written by an older capsim, or edited by hand, may hold a key in
        # clear: it is never republished (reports, the step summary) nor written back.
        return tuple(masked_override(o) for o in overrides)

    def tier(self, name: str) -> TierFigures | None:
        """The figures of tier ``name`` (None if it is not in this baseline)."""
        return next((t for t in self.tiers if t.tier == name), None)

    def to_json(self) -> str:
        """The file's canonical text: sorted keys, two-space indent, trailing newline."""
        return _dumps(self.model_dump(mode="json"), "") + "\n"

    @classmethod
    def from_summaries(cls, summaries: Sequence[RunSummary], *, content_hash: str,
                       scenario_file: str | None = None, seed: int | None = None,
                       overrides: Sequence[str] = (),
                       tier_selection: Sequence[str] = (),
                       inputs: Inputs | None = None) -> Baseline:
        """Aggregate the summaries of a run's replications (replication 0 first)."""
        if not summaries:
            raise ValueError("no summaries")
        first = summaries[0]
        tiers = []
        for t in first.tiers:
            entries = [(s, s.tier(t.tier)) for s in summaries]
            figures = {}
            for m in METRICS:
                iv = mean_interval([m.read(s, ts) for s, ts in entries])
                figures[m.name] = Figure(mean=rounded(iv.mean), half_width=rounded(iv.half_width),
                                         n=iv.n)
            per_method = [method_cu_per_day(s, ts) for s, ts in entries]
            methods = {}
            for name in sorted({m for d in per_method for m in d}):
                # A replication that never called the method charged it nothing.
                iv = mean_interval([d.get(name, 0.0) for d in per_method])
                methods[name] = Figure(mean=rounded(iv.mean),
                                       half_width=rounded(iv.half_width), n=iv.n)
            tiers.append(TierFigures(tier=t.tier, cu_per_window=t.cu_per_window,
                                     monthly_usd=rounded(t.monthly_usd), metrics=figures,
                                     cu_per_day_by_method=methods))
        picks = tuple(s.recommended.tier for s in summaries)
        counts = Counter(picks)
        top = max(counts.values())
        # A tie goes to the worse pick: no tier, else the tier listed last (the bigger).
        order = [t.tier for t in first.tiers]
        tied = [p for p in counts if counts[p] == top]
        pick = max(tied, key=lambda p: (p is None, order.index(p) if p in order else -1))
        return cls(summary_schema_version=first.schema_version,
                   capsim_version=first.capsim_version, scenario=first.scenario,
                   scenario_file=scenario_file or first.scenario_file,
                   content_hash=content_hash, seed=first.seed if seed is None else seed,
                   # A key given by --set is recorded as its pseudonym (the replay by
                   # `capsim check` names the same keys: sim.config.key_paths).
                   overrides=tuple(masked_override(o) for o in overrides),
                   tier_selection=tuple(tier_selection),
                   replications=len(summaries),
                   recommended=RecommendedTier(tier=pick, per_replication=picks),
                   tiers=tuple(tiers), inputs=inputs)


def _dumps(value, indent: str) -> str:
    """JSON with sorted keys, one line per object of scalars (a figure per line)."""
    def flat(v) -> str:
        return json.dumps(v, sort_keys=True, ensure_ascii=False, allow_nan=False)

    scalar = (str, int, float, bool, type(None))
    if isinstance(value, dict) and value and not all(isinstance(v, scalar) for v in value.values()):
        inner = indent + "  "
        items = [f"{inner}{json.dumps(k)}: {_dumps(value[k], inner)}" for k in sorted(value)]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list) and value and not all(isinstance(v, scalar) for v in value):
        inner = indent + "  "
        return "[\n" + ",\n".join(inner + _dumps(v, inner) for v in value) + "\n" + indent + "]"
    return flat(value)


def summary_hash(summary: RunSummary) -> str:
    """A stand-in content hash for a bare summary (its provenance fields)."""
    ident = summary.model_dump(mode="json", include={"scenario", "scenario_file", "seed",
                                                     "start", "duration_s", "limiter", "slo"})
    return "summary:" + _digest(ident)


def scenario_hash(scenario: str | Path | None, overrides: Sequence[str] = (),
                  tiers: Sequence[str] = ()) -> str:
    """The content hash of a scenario as the user wrote it: its TOML table after the
    ``--set`` overrides, without the ``[check]`` table, and the tier selection. (Not the
    validated model, whose new defaults would change every hash with each capsim.)
    A key given by ``--set`` enters the hash as its pseudonym (a keyed hash of it), so the
    hash of a baseline's recorded overrides is the hash of the ones given, and the file
    never holds the key."""
    from ..config.loader import read

    raw, _ = read(scenario, [masked_override(o) for o in overrides])
    raw.pop("check", None)
    return "sha256:" + _digest({"scenario": raw, "tiers": list(tiers)})


def _digest(data) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def save_baseline(baseline: Baseline, path: str | Path, option: str | None = None) -> Path:
    """Write ``baseline`` to ``path`` (folders created, replaced atomically: never through
    a fixed ``.tmp`` name that could be the user's, :mod:`sim.core.atomic`); a
    CapsimError naming the file (and ``option``) if it cannot be written."""
    write_atomic(path, baseline.to_json(), option)
    return Path(path)


def parse_baseline(text: str, *, file: str | None = None) -> Baseline:
    """Parse and validate a baseline file's text; a :class:`CapsimError` says what is wrong."""
    try:
        data = json.loads(text)
    except ValueError as err:
        raise CapsimError(f"not JSON ({err.msg})", file=file, line=err.lineno) from None
    if not isinstance(data, dict) or "baseline_schema_version" not in data:
        raise CapsimError("not a capsim baseline (no baseline_schema_version; write one with "
                          "`capsim baseline save`)", file=file)
    version = data["baseline_schema_version"]
    if version != BASELINE_SCHEMA_VERSION:
        raise CapsimError(f"unknown baseline schema version {version!r} (this capsim "
                          f"{__version__} reads version {BASELINE_SCHEMA_VERSION}); "
                          "regenerate it with `capsim baseline update`", file=file,
                          field="baseline_schema_version")
    summary_version = data.get("summary_schema_version")
    if summary_version != SCHEMA_VERSION:
        raise CapsimError(f"unknown summary schema version {summary_version!r} (this "
                          f"capsim writes version {SCHEMA_VERSION}); regenerate it with "
                          "`capsim baseline update`", file=file, field="summary_schema_version")
    try:
        return Baseline.model_validate(data)
    except ValidationError as err:
        raise CapsimError.from_validation(err, file, " (not a valid capsim baseline)") from None


def load_baseline(path: str | Path) -> Baseline:
    """Read a baseline file (:func:`parse_baseline`)."""
    text = read_user_text(path, "no such baseline file (write one with `capsim baseline save`)")
    return parse_baseline(text, file=str(path))
