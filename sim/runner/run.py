"""Run a scenario against its tiers and assemble the results (library entry point).

    loaded = sim.config.load("workloads/searcher.toml", ["duration=600"])
    output = sim.runner.run.run(loaded)
    output.summary.recommended

(Users call :func:`sim.run`, which wraps this and adds ``write()``.)

The open-loop demand is drawn once and replayed against every tier (common random
numbers). With ``jobs > 1`` tiers run in worker processes; each rebuilds the same plan
from the same seed, so the result is identical to a sequential run.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..compiled.choice import choose_engine, tier_run_class
from ..config.pricing import default_pricing_table, flatten
from ..config.resolved import LoadedScenario
from ..config.tiers import Tier
from ..core.pseudonyms import secret_kind
from ..core.version import __version__
from ..core.workers import process_pool
from ..metrics.figures import recommend, tier_summary
from ..metrics.spool_totals import RequestTotals
from ..metrics.tables import latency_table, slots_frame, streams_frame, windows_frame
from ..model import recorder as rc
from ..model.engine import TierResult
from ..results.summary import Assumptions, PricingAssumption, RunSummary, SloSummary, TierSummary
from ..workload.demand import Plan, build_plan
from .records import RECORDS, AttemptRecords, RequestsWriter, spool_folder

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
    """Everything a report needs: the typed summary and the columnar tables.

    ``records`` holds the attempt rows (spooled; :attr:`attempts` reads them whole);
    ``latencies`` is each tier's latency CDF as a table of at most
    :data:`sim.metrics.tables.LATENCY_POINTS` points (:func:`sim.metrics.tables.latency_table`);
    ``minutes`` (attempts per minute and outcome) and ``refused_handshakes`` are the
    aggregates the plots draw; ``records_mode`` is what a report folder gets
    (:data:`sim.runner.records.RECORDS`).
    """

    summary: RunSummary
    records: AttemptRecords
    windows: pd.DataFrame
    latencies: dict[str, np.ndarray]
    streams: pd.DataFrame
    slots: pd.DataFrame
    minutes: pd.DataFrame
    refused_handshakes: pd.DataFrame
    records_mode: str = "attempts"

    @property
    def attempts(self) -> pd.DataFrame:
        """One row per attempt of every tier (read from the spool: mind the size)."""
        return self.records.frame()


@dataclass
class TierParts:
    """What a report reads of one tier besides its rows: its ``summary.json`` entry,
    latency table and frames. Computed where the tier ran (in its worker process with
    ``jobs > 1``), so the parent's serial part does not grow with the run's length."""

    summary: TierSummary
    latencies: np.ndarray
    windows: pd.DataFrame
    streams: pd.DataFrame
    slots: pd.DataFrame


def tier_parts(result: TierResult, plan: Plan) -> TierParts:
    """:class:`TierParts` of one tier's result."""
    requests = RequestTotals.of(result)  # one pass, for the summary and the latency plot
    return TierParts(tier_summary(result, plan, requests),
                     latency_table(result, requests=requests),
                     windows_frame(result, plan), streams_frame(result, plan),
                     slots_frame(result))


def _run_tier(loaded: LoadedScenario, tier: Tier, spool: str,
              engine: str = "simpy") -> tuple[TierResult, TierParts]:
    plan = build_plan(loaded)
    result = tier_run_class(engine)(plan, tier, spool=spool).run()
    return result, tier_parts(result, plan)


def run(loaded: LoadedScenario, *, jobs: int = 1,
        progress: Callable[[Tier, float], None] | None = None,
        records: str = "attempts", engine: str = "auto") -> RunOutput:
    """Simulate ``loaded`` against each of its tiers; ``progress(tier, sim_time)`` as it goes.

    Attempt rows are spooled to Parquet files as the tiers run (memory stays flat in run
    length); ``records`` (one of :data:`sim.runner.records.RECORDS`) is what a report folder
    written from the output gets. With ``jobs > 1`` and ``records="attempts"`` the
    parent writes ``requests.parquet`` (into the spool folder) tier by tier as the
    workers finish them, while later tiers still simulate; a report copies it.
    ``engine`` (``auto``, ``simpy`` or ``compiled``: :func:`sim.compiled.choice.choose_engine`)
    picks the engine; the same rows either way, and ``summary.engine`` says which ran.
    """
    if records not in RECORDS:
        raise ValueError(f"records must be one of {', '.join(RECORDS)}, not {records!r}")
    chosen = choose_engine(loaded, engine).engine
    tier_run = tier_run_class(chosen)
    plan = build_plan(loaded)
    folder = spool_folder()
    spools = [str(Path(folder.name) / f"tier{i}") for i in range(len(loaded.tiers))]
    if jobs > 1 and len(loaded.tiers) > 1:
        names = [t.name for t in loaded.tiers]
        writer = (RequestsWriter(Path(folder.name) / "requests.parquet", plan, names)
                  if records == "attempts" else None)
        results, parts = [], []
        with process_pool(jobs) as pool, writer or nullcontext():
            futures = [pool.submit(_run_tier, loaded, tier, spool, chosen)
                       for tier, spool in zip(loaded.tiers, spools, strict=True)]
            for i, (tier, future) in enumerate(zip(loaded.tiers, futures, strict=True)):
                result, part = future.result()
                results.append(result)
                parts.append(part)
                if progress:
                    progress(tier, loaded.scenario.duration_s)
                if writer is not None:
                    writer.add_tier(i, result)
            written = None if writer is None else (writer.path, writer.close())
        out = assemble(plan, results, folder, parts=parts, written=written, engine=chosen)
    else:
        results = []
        for tier, spool in zip(loaded.tiers, spools, strict=True):
            cb = (lambda now, tier=tier: progress(tier, now)) if progress else None
            results.append(tier_run(plan, tier, cb, spool=spool).run())
            if progress:
                progress(tier, loaded.scenario.duration_s)
        out = assemble(plan, results, folder, engine=chosen)
    out.records_mode = records
    return out


def assemble(plan: Plan, results: list[TierResult], folder=None,
             parts: list[TierParts] | None = None,
             written: tuple[Path, int] | None = None, engine: str = "simpy") -> RunOutput:
    """Summaries and frames from the tiers' results (``folder``: their spool folder;
    ``parts``: their :class:`TierParts` if already computed; ``written``: their
    ``requests.parquet`` if already written, and its rows)."""
    if parts is None:
        parts = [tier_parts(r, plan) for r in results]
    names = [r.tier.name for r in results]
    latencies = {r.tier.name: p.latencies for r, p in zip(results, parts, strict=True)}
    windows = pd.concat([p.windows for p in parts], ignore_index=True)
    streams = pd.concat([p.streams for p in parts], ignore_index=True)
    slots = pd.concat([p.slots for p in parts], ignore_index=True)
    minutes = pd.concat([_outcome_frame(r.tier.name, r.minutes, names) for r in results],
                        ignore_index=True)
    refused = pd.concat([_outcome_frame(r.tier.name, r.refused_handshakes, names)
                         for r in results], ignore_index=True)
    for frame in (windows, streams):
        if len(frame.columns):
            frame["tier"] = pd.Categorical(frame["tier"].astype(str), categories=names)
    records = AttemptRecords(plan, results, folder, written=written)
    return RunOutput(summary_document(plan, [p.summary for p in parts], engine), records,
                     windows, latencies, streams, slots, minutes, refused)


def _outcome_frame(tier: str, cols: dict[str, np.ndarray], names: list[str]) -> pd.DataFrame:
    """An aggregate's columns as the plots read them: tier, t_send_s, outcome (+ count)."""
    n = len(cols["t_send"])
    frame = {"tier": pd.Categorical.from_codes(np.full(n, names.index(tier), dtype=np.int8),
                                               categories=names),
             "t_send_s": cols["t_send"],
             "outcome": pd.Categorical.from_codes(cols["outcome"].astype(np.int8),
                                                  categories=list(rc.OUTCOMES))}
    if "count" in cols:
        frame["count"] = cols["count"]
    return pd.DataFrame(frame)


def _limiter_settings(sc) -> dict:
    # The one limiter kind is left out, so summaries of the same runs stay as they were
    # before kinds existed; any other kind is recorded.
    settings = sc.limiter.model_dump()
    if settings["kind"] == "fixed-window":
        del settings["kind"]
    if settings["alignment"] != "utc":  # likewise: the phase is recorded only where read
        del settings["phase_s"]
    return settings


def summary_document(plan: Plan, tiers: list[TierSummary], engine: str = "simpy"
                     ) -> RunSummary:
    """The whole ``summary.json``: provenance, assumptions, tiers, recommendation
    (``engine``: recorded unless it is the SimPy model, so its summaries stay as they were)."""
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
        engine=None if engine == "simpy" else engine,
    )
