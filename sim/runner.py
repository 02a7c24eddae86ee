"""Run a scenario against its tiers and assemble the results (library entry point).

    loaded = sim.policy.load("workloads/searcher.toml", ["duration=600"])
    output = sim.runner.run(loaded)
    output.summary.recommended

(Users call :func:`sim.run`, which wraps this and adds ``write()``.)

The open-loop demand is drawn once and replayed against every tier (common random
numbers). With ``jobs > 1`` tiers run in worker processes; each rebuilds the same plan
from the same seed, so the result is identical to a sequential run.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import __version__
from .metrics import (
    attempts_frame,
    recommend,
    slots_frame,
    streams_frame,
    tier_summary,
    windows_frame,
)
from .model import recorder as rc
from .model.engine import TierResult, TierRun
from .policy.pricing import default_pricing_table, flatten
from .policy.resolved import LoadedScenario
from .policy.tiers import Tier
from .redact import secret_kind
from .summary import Assumptions, PricingAssumption, RunSummary, SloSummary, TierSummary
from .workload.demand import Plan, build_plan

MODEL_ASSUMPTIONS = (
    "Unknown API key: 401 (spec 5: response not shown).",
    "A billed action whose reservation exceeds the whole window budget is 'oversized': "
    "refused and not retried, since no window can admit it.",
    "Checks at admission, in order: HTTP/2 + SNI (421), key (401), API in the selection "
    "(402), oversized, daily allowance (402), then the 12-second window (434 / -32005).",
    "JSON-RPC -32005 carries no Retry-After; retry-after clients fall back to exponential backoff.",
    "The daily allowance is charged at reservation and refunded at settlement "
    "within the same UTC day.",
    "A retried attempt redoes the same work: same CU and service time as the first attempt.",
    "Latency = round trip of the region + service time (+ retries and their waits); "
    "a refused attempt costs one round trip.",
)


@dataclass
class RunOutput:
    """Everything a report needs: the typed summary and the columnar tables."""

    summary: RunSummary
    attempts: pd.DataFrame
    windows: pd.DataFrame
    latencies: dict[str, np.ndarray]
    streams: pd.DataFrame
    slots: pd.DataFrame


def _run_tier(loaded: LoadedScenario, tier: Tier) -> TierResult:
    return TierRun(build_plan(loaded), tier).run()


def run(loaded: LoadedScenario, *, jobs: int = 1,
        progress: Callable[[Tier, float], None] | None = None) -> RunOutput:
    """Simulate ``loaded`` against each of its tiers; ``progress(tier, sim_time)`` as it goes."""
    plan = build_plan(loaded)
    if jobs > 1 and len(loaded.tiers) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(_run_tier, loaded, tier) for tier in loaded.tiers]
            results = []
            for tier, future in zip(loaded.tiers, futures, strict=True):
                results.append(future.result())
                if progress:
                    progress(tier, loaded.scenario.duration_s)
    else:
        results = []
        for tier in loaded.tiers:
            cb = (lambda now, tier=tier: progress(tier, now)) if progress else None
            results.append(TierRun(plan, tier, cb).run())
            if progress:
                progress(tier, loaded.scenario.duration_s)
    return assemble(plan, results)


def assemble(plan: Plan, results: list[TierResult]) -> RunOutput:
    """Summaries and frames from the tiers' results."""
    tiers = [tier_summary(r, plan) for r in results]
    latencies = {}
    for r in results:
        q = r.requests
        ok = q["outcome"] == rc.OK
        latencies[r.tier.name] = (q["t_end"][ok] - q["t_first"][ok]) * 1000.0
    attempts = pd.concat([attempts_frame(r, plan) for r in results], ignore_index=True)
    windows = pd.concat([windows_frame(r, plan) for r in results], ignore_index=True)
    streams = pd.concat([streams_frame(r, plan) for r in results], ignore_index=True)
    slots = pd.concat([slots_frame(r) for r in results], ignore_index=True)
    for frame in (attempts, windows, streams):
        if len(frame.columns):
            frame["tier"] = pd.Categorical(frame["tier"].astype(str),
                                           categories=[r.tier.name for r in results])
    return RunOutput(summary_document(plan, tiers), attempts, windows, latencies, streams, slots)


def _limiter_settings(sc) -> dict:
    # The one limiter kind is left out, so summaries of the same runs stay as they were
    # before kinds existed; any other kind is recorded.
    settings = sc.limiter.model_dump()
    if settings["kind"] == "fixed-window":
        del settings["kind"]
    if settings["alignment"] != "utc":  # likewise: the phase is recorded only where read
        del settings["phase_s"]
    return settings


def summary_document(plan: Plan, tiers: list[TierSummary]) -> RunSummary:
    """The whole ``summary.json``: provenance, assumptions, tiers, recommendation."""
    sc, loaded = plan.scenario, plan.loaded
    overridden = set(flatten(loaded.pricing_overrides))
    effective = flatten(loaded.pricing.model_dump(exclude_none=True))
    defaults = flatten(default_pricing_table())
    pricing = tuple(
        PricingAssumption(name=k, value=v, source="scenario" if k in overridden
                          else ("default assumption" if k in defaults else "derived"))
        for k, v in sorted(effective.items())
    )
    return RunSummary(
        capsim_version=__version__,
        scenario=sc.name,
        description=sc.description,
        scenario_file=loaded.path,
        seed=sc.seed,
        start=sc.start.isoformat().replace("+00:00", "Z"),
        duration_s=sc.duration_s,
        pseudonym_secret=secret_kind(),
        limiter=_limiter_settings(sc),
        slo=SloSummary(**sc.slo.model_dump()),
        recommended=recommend(tiers),
        tiers=tuple(tiers),
        assumptions=Assumptions(model=MODEL_ASSUMPTIONS, pricing=pricing),
        notes=tuple(plan.notes),
    )
