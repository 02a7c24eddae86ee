"""Every input of a gated run, fingerprinted, and what changed between two fingerprints.

A run reads its scenario (hashed as written, :func:`~.baseline.scenario_hash`), the
traces its sources replay, the pricing file its ``[pricing]`` table is merged over, and
capsim itself. A baseline records each (:class:`~.baseline.Inputs`); ``capsim check``
records them again and the reports list the ones that differ, so a moved figure can be
told apart from a changed trace, a new pricing file or another capsim.
"""

from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path

from ..core.version import __version__
from .baseline import Baseline, Inputs

PRICING_FILE = "sim/data/pricing.toml"
"""The pricing file, as the reports name it (capsim's shipped assumptions)."""

_CHUNK = 1 << 20


def file_hash(path: str | Path) -> str:
    """``sha256:`` and the first 16 hex digits of the file's content hash."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()[:16]


def pricing_hash() -> str:
    """The content hash of the pricing file capsim merges every scenario's prices over."""
    data = resources.files("sim").joinpath("data/pricing.toml").read_bytes()
    return "sha256:" + hashlib.sha256(data).hexdigest()[:16]


def fingerprint(loaded, content_hash: str) -> Inputs:
    """The inputs of ``loaded`` (a :class:`~sim.config.resolved.LoadedScenario`), whose
    scenario hashed to ``content_hash``. A trace that cannot be found is left to the run
    to report (it names the scenario's line)."""
    from ..workload.replay_source import trace_path

    traces = {}
    for index, src in enumerate(loaded.scenario.sources):
        if src.trace is not None:
            traces[src.trace] = file_hash(trace_path(src, index, loaded.path))
    return Inputs(scenario=content_hash, traces=traces, pricing=pricing_hash(),
                  capsim=__version__)


def input_changes(base: Baseline, now: Baseline) -> tuple[list[str], list[str]]:
    """``(changed, unknown)``: one line per input that differs between the two runs, and
    one per input the baseline did not record (a baseline older than fingerprints)."""
    changed = []
    if base.content_hash != now.content_hash:
        changed.append(f"the scenario changed since the baseline (`{now.scenario_file}`: "
                       f"content hash {base.content_hash} → {now.content_hash})")
    if base.capsim_version != now.capsim_version:
        changed.append(f"capsim {base.capsim_version} → {now.capsim_version}")
    a, b = base.inputs, now.inputs
    if b is None:
        return changed, []
    if a is None:
        return changed, ["traces and pricing file: not recorded in the baseline (written "
                         "before capsim kept them; `capsim baseline update` records them)"]
    for path in sorted(set(a.traces) | set(b.traces)):
        old, new = a.traces.get(path), b.traces.get(path)
        if old == new:
            continue
        if old is None:
            changed.append(f"trace `{path}`: new since the baseline ({new})")
        elif new is None:
            changed.append(f"trace `{path}`: no longer read (was {old})")
        else:
            changed.append(f"trace `{path}` changed (content hash {old} → {new})")
    if a.pricing != b.pricing:
        changed.append(f"pricing file `{PRICING_FILE}` changed (content hash {a.pricing} → "
                       f"{b.pricing})")
    return changed, []
