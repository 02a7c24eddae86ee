"""Run a scenario against its tiers and assemble the results (library entry point).

    loaded = sim.config.load("workloads/searcher.toml", ["duration=600"])
    output = sim.runner.run.run(loaded)
    output.summary.recommended

(Users call :func:`sim.run`, which wraps this and adds ``write()``.)

The open-loop demand is drawn once and replayed against every tier (common random
numbers): written to the run's spool folder (:mod:`sim.workload.demand_spool`) and read
back by each tier, so a recorded trace is read once per run, not once per tier. With
``jobs > 1`` tiers run in worker processes, which read the same spooled demand, so the
result is identical to a sequential run.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..compiled.choice import choose_engine, tier_run_class
from ..config.pricing import default_pricing_table, flatten
from ..config.resolved import LoadedScenario
from ..config.tiers import Tier
from ..core.errors import CapsimError
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
from ..workload.demand_spool import SpooledPlan, spool_demand
from .records import (
    RECORDS,
    AttemptRecords,
    RequestsWriter,
    drop_tier_rows,
    spool_folder,
)

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

    def close(self) -> None:
        """Remove the run's spool files now (its attempt rows can no longer be read);
        otherwise they go when the garbage collector frees this output, which may be
        long after its last use. Also done on leaving a ``with`` block."""
        self.records.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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


def _run_tier(plan: Plan, tier: Tier, spool: str, engine: str = "simpy",
              keep_rows: bool = True) -> tuple[TierResult, TierParts]:
    _check_reachable(plan, spool)
    result = tier_run_class(engine)(plan, tier, spool=spool).run()
    parts = tier_parts(result, plan)
    if not keep_rows:
        drop_tier_rows(result)
    return result, parts


def _run_tier_item(item: tuple[int, Plan, Tier, str, str, bool]
                   ) -> tuple[TierResult, TierParts]:
    """:func:`_run_tier` of an executor's item ``(index, plan, tier, spool, engine,
    keep_rows)``."""
    return _run_tier(*item[1:])


def _check_reachable(plan: Plan, spool: str) -> None:
    """A worker on another machine sees the run's spool folder only if it is shared."""
    folder = Path(spool).parent
    if not folder.is_dir() or (isinstance(plan, SpooledPlan)
                               and not Path(plan.demand_path).is_file()):
        raise CapsimError(
            f"the run's spool folder {folder} is not reachable from the worker on "
            f"{socket.gethostname()}: workers of --dask-scheduler must see it at the same "
            "path (point TMPDIR at a folder they share)", field="--dask-scheduler")


def _tier_results(items: list[tuple[int, Plan, Tier, str, str, bool]], jobs: int, executor
                  ) -> Iterator[tuple[TierResult, TierParts]]:
    """Each tier's result and parts, in tier order, computed in ``executor`` (any
    :class:`sim.jobs.executors.Executor`) or, if None, a local pool of ``jobs`` processes."""
    if executor is None:
        with process_pool(jobs) as pool:
            futures = [pool.submit(_run_tier, *item[1:]) for item in items]
            for future in futures:
                yield future.result()
        return
    done: dict[int, tuple[TierResult, TierParts]] = {}
    nxt = 0
    for item, out in executor.as_completed(_run_tier_item, items):
        done[item[0]] = out
        while nxt in done:  # held until the tiers before it are done
            yield done.pop(nxt)
            nxt += 1


def run(loaded: LoadedScenario, *, jobs: int = 1,
        progress: Callable[[Tier, float], None] | None = None,
        records: str = "attempts", executor=None, engine: str = "auto",
        keep_rows: bool = True) -> RunOutput:
    """Simulate ``loaded`` against each of its tiers; ``progress(tier, sim_time)`` as it goes.

    Attempt rows are spooled to Parquet files as the tiers run (memory stays flat in run
    length); ``records`` (one of :data:`sim.runner.records.RECORDS`) is what a report folder
    written from the output gets. With ``jobs > 1`` (a local process pool) or an
    ``executor`` (a :class:`sim.jobs.executors.Executor`, e.g. Dask's) the tiers run in
    parallel, and with ``records="attempts"`` the parent writes ``requests.parquet``
    (into the spool folder) tier by tier as they finish, while later tiers still
    simulate; a report copies it. The output is the same whichever runs the tiers.
    ``engine`` (``auto``, ``simpy`` or ``compiled``: :func:`sim.compiled.choice.choose_engine`)
    picks the engine; the same rows either way, and ``summary.engine`` says which ran.
    ``keep_rows`` False removes each tier's spooled rows once its summary and frames are
    computed, so the temporary disk holds one tier's at a time (one per worker) instead
    of every tier's; the output then has no attempt rows to read (``records`` must not
    be ``"attempts"``).
    """
    if records not in RECORDS:
        raise ValueError(f"records must be one of {', '.join(RECORDS)}, not {records!r}")
    if not keep_rows and records == "attempts":
        raise ValueError("records='attempts' writes the attempt rows: keep_rows=False "
                         "would remove them")
    chosen = choose_engine(loaded, engine).engine
    tier_run = tier_run_class(chosen)
    folder = spool_folder()
    plan = shared_plan(build_plan(loaded), folder.name, len(loaded.tiers))
    spools = [str(Path(folder.name) / f"tier{i}") for i in range(len(loaded.tiers))]
    if (jobs > 1 or executor is not None) and len(loaded.tiers) > 1:
        names = [t.name for t in loaded.tiers]
        writer = (RequestsWriter(Path(folder.name) / "requests.parquet", plan, names)
                  if records == "attempts" else None)
        results, parts = [], []
        items = [(i, plan, tier, spool, chosen, keep_rows)
                 for i, (tier, spool) in enumerate(zip(loaded.tiers, spools, strict=True))]
        with writer or nullcontext():
            for i, (result, part) in enumerate(_tier_results(items, jobs, executor)):
                results.append(result)
                parts.append(part)
                if progress:
                    progress(loaded.tiers[i], loaded.scenario.duration_s)
                if writer is not None:
                    writer.add_tier(i, result)
            written = None if writer is None else (writer.path, writer.close())
        out = assemble(plan, results, folder, parts=parts, written=written, engine=chosen,
                       rows_kept=keep_rows)
    else:
        results, parts = [], []
        for tier, spool in zip(loaded.tiers, spools, strict=True):
            cb = (lambda now, tier=tier: progress(tier, now)) if progress else None
            results.append(tier_run(plan, tier, cb, spool=spool).run())
            if progress:
                progress(tier, loaded.scenario.duration_s)
            parts.append(tier_parts(results[-1], plan))
            if not keep_rows:
                drop_tier_rows(results[-1])
        out = assemble(plan, results, folder, parts=parts, engine=chosen, rows_kept=keep_rows)
    out.records_mode = records
    return out


def shared_plan(plan: Plan, folder: str, tiers: int) -> Plan:
    """``plan`` with its open-loop demand drawn once into ``folder`` for the ``tiers``
    that replay it (:mod:`sim.workload.demand_spool`): every tier, in this process or a
    worker, reads the same rows instead of drawing (or reading a trace) again."""
    if tiers < 2 or plan.open_count == 0:
        return plan
    return spool_demand(plan, folder)


def assemble(plan: Plan, results: list[TierResult], folder=None,
             parts: list[TierParts] | None = None,
             written: tuple[Path, int] | None = None, engine: str = "simpy",
             rows_kept: bool = True) -> RunOutput:
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
    records = AttemptRecords(plan, results, folder, written=written, kept=rows_kept)
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
