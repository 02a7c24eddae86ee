"""How big a run will be, known before any demand is drawn, and the guard that refuses
a run the machine cannot hold.

A run draws its demand slice by slice and spools its attempt rows to disk as it goes, so
what grows with its size is small: a tier's summary reads its spool chunk by chunk, in
bounded memory, and a trace source is read from its file a row group at a time (in the
parent and in each worker; :class:`~sim.traces.replay.ReplayStream`).
:func:`estimate` counts requests from closed forms only, never by drawing:

* an open-loop source: its arrival process's exact mean count over the duration
  (``expected_count``; for ``block`` with very many slots, its long-run rate times the
  duration plus two slots, so the estimate itself stays O(1));
* closed-loop workers: each cycle takes at least a round trip, the mean service time and
  the mean think time, so a worker sends about ``duration / (rtt + service + think)``;
* a trace source: the file's row count (Parquet metadata) times ``load_multiplier``
  requests; in memory, the rows of its largest set of row groups whose time ranges
  overlap (one group for a trace in time order; the Parquet statistics), times the
  copies of ``load_multiplier``, not its whole length; ``repeat = "tile"`` multiplies
  the requests by the loops that start in the run (from the file's first and last times,
  no hourly thinning: an upper bound), and a recording of at most
  :data:`~sim.traces.tiling.HOLD_ROWS` rows held for every loop, or whose copies spread
  over its period, is counted whole in memory (a longer one is read by a pass per loop
  and per copy, a row group each: :func:`_trace_rows`);
* ``[[streams]]``: handshakes (one per connection, plus one per session, drop and
  scheduled blip) and the deliveries of the published events to each connection;
* requests queued for an HTTP/2 stream (:func:`_queued`): a client's pool to one
  regional hostname holds K = ``max_streams_per_conn`` x ``max_connections`` (at most
  128 connections) requests in flight, each for at least a round trip and the mean
  service time h, so at most mu = K / h leave its queue per second. With open-loop
  arrivals at lambda per second on that pool the queue holds at most
  ``max(0, lambda - mu) * duration`` requests (the fluid bound: it grows at that rate
  and never drains), plus one block of a ``block`` source whose bursts exceed K.
  Every queued request stays in memory until it is sent.

Memory is ``BASE_BYTES + min(attempts, SUMMARY_ATTEMPTS_IN_MEMORY) * BYTES_PER_ATTEMPT
+ attempts * BYTES_PER_ATTEMPT_STREAMED + held trace rows * BYTES_PER_TRACE_ROW + queued *
BYTES_PER_QUEUED`` (times the copies, one per worker process, for the held trace rows and
the base of each worker), with figures measured by ``benchmarks/bench_memory.py`` and
``benchmarks/bench_replay_memory.py``. :func:`check` refuses (a
:class:`~sim.core.errors.CapsimError`, exit code 2) a run whose estimate, one attempt per
request, exceeds :data:`SAFETY_FRACTION` of the memory available, or the
``--max-requests`` / ``max_requests`` limit; retries can multiply the attempts by up to
``max_attempts``, which :func:`check` reports as a warning.

The spools are on disk, not in memory, and every tier's stays until the report is
written (unless the report takes no attempt rows: ``capsim run --records windows|none``
keeps one tier's at a time per worker): :func:`check` also refuses a run whose spools
(``tiers x (attempts + requests) x SPOOL_BYTES_PER_ROW``, plus the open-loop demand
drawn once for every tier, ``DEMAND_BYTES_PER_ROW`` a request) exceed
:data:`SAFETY_FRACTION` of the free space of the temporary folder (``TMPDIR``), and warns
when retries could.

``capsim run --replications N`` simulates the run N times: the ``--max-requests`` /
``max_requests`` limit counts N times the requests per tier; memory counts one
replication at a time (each worker of ``--jobs`` holds one tier of one); the disk, beside
replication 0's spools, one more tier's spool per worker (the others' are removed as
their summaries are read).
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from ..config.arrivals import BlockSync
from ..config.resolved import LoadedScenario
from ..config.scenario import Scenario, Source
from ..core.errors import CapsimError
from .load import scale_scenario

# ``python3 benchmarks/bench_memory.py`` (whole ``capsim run``, peak RSS, 0.2 and 0.8
# million requests on 1 and 3 tiers) measured 292.5 / 309.7 MiB on 1 tier and 326.8 /
# 301.4 MiB on 3 tiers: flat within the noise of +-20 MiB, so at most ~35 bytes per request
# over 0.6 million. BYTES_PER_ATTEMPT is that bound, for the attempts whose columns a tier's
# summary may still sort in memory (up to SUMMARY_ATTEMPTS_IN_MEMORY; beyond, its order
# statistics spill sorted runs to disk: sim/metrics/stream_stats.py).
BYTES_PER_ATTEMPT = 40
"""Peak bytes one attempt of a tier costs while that tier's summary is computed, for the
first :data:`SUMMARY_ATTEMPTS_IN_MEMORY` attempts (one tier at a time)."""
SUMMARY_ATTEMPTS_IN_MEMORY = 2 * 2**21
"""Attempts past which a tier's summary holds no more: its two order-statistics columns
(latencies, stream waits) keep at most ``sim.metrics.stream_stats.RUN_VALUES`` (2**21)
values each in memory (a lower layer cannot import it; a test holds the two equal)."""
BYTES_PER_ATTEMPT_STREAMED = 2
"""Bytes every attempt costs on top (the run's per-window figures and other state that
grows with its length): ``python3 benchmarks/bench_replay_memory.py`` measured the
synthetic floor at 223, 230 and 260 MiB for 0.5, 4 and 20 million requests (about 1.9, 15
and 77 million attempts on an overloaded tier), about 0.5 byte per attempt; 2 is the bound."""
BYTES_PER_TRACE_ROW = 500
"""Peak bytes a trace row held in memory costs, once per process: a streamed trace holds
a row group (or the row groups that overlap in time) at a time; the figure is the one
measured when the whole demand was held (500 per request), kept as a bound."""
BASE_BYTES = 350 * 2**20
"""Interpreter, libraries and a run's fixed part (measured 292-327 MiB above)."""
WORKER_BYTES = 200 * 2**20
"""Each worker process of ``--jobs N`` (``benchmarks/bench_day.py``: 163 MiB for the
largest worker of a 10-minute run of the default scenario's 9 tiers)."""
BYTES_PER_QUEUED = 400
"""Peak bytes one request waiting for an HTTP/2 stream costs (its request record and its
place in the pool's queue). ``python3 benchmarks/bench_memory_queue.py --rate 2000
--durations 100,200`` measured 312 / 387, 236 / 413 and 411 / 404 bytes in three runs
(extra peak RSS over the same demand unqueued, per request of the closed-form queue)."""
SAFETY_FRACTION = 0.8
"""Share of the available memory (and of the free temporary disk) a run may plan to use."""
SPOOL_BYTES_PER_ROW = 28
"""Temporary disk one spooled row costs, an attempt's or a logical request's
(``python3 benchmarks/bench_spool.py``: 27.68 bytes per attempt row as the spool writes
them, LZ4 without dictionaries; a request row has fewer columns). Every tier's spool stays
on disk until the run's report is written."""
DEMAND_BYTES_PER_ROW = 32
"""Temporary disk one row of a run's spooled open-loop demand costs (nine columns, LZ4:
21 bytes on a replayed trace, 31 on the mixed-bundle scenario's synthetic demand)."""
_MAX_EXACT_SLOTS = 1_000_000


@dataclass(frozen=True)
class SourceSize:
    """Expected counts of one source over the run (per tier)."""

    name: str
    kind: str  # "arrival", "workers", "trace" or "streams"
    requests: float  # logical requests, or websocket handshakes for "streams"
    max_attempts: int  # attempts one request can take with retries
    deliveries: float = 0.0  # websocket events delivered to the source's connections
    held: float = 0.0  # trace rows in memory at once (row groups read together x copies)
    queued: float = 0.0  # requests waiting for an HTTP/2 stream at once, at most


@dataclass(frozen=True)
class SizeEstimate:
    """What a run will hold: requests, attempts per tier and the bytes they need."""

    sources: tuple[SourceSize, ...]
    tiers: int
    jobs: int = 1
    replications: int = 1
    """``capsim run --replications N``: the run N times over (one replication at a time
    in memory, each in its worker process with ``--jobs``)."""
    kept: bool = True
    """Whether every tier's spooled rows stay until the report is written (``capsim run
    --records attempts``); otherwise a tier's go once its summary is read."""

    @property
    def requests(self) -> float:
        """Logical HTTP requests and websocket handshakes (rows of the attempt table)."""
        return sum(s.requests for s in self.sources)

    @property
    def deliveries(self) -> float:
        """Websocket event deliveries (simulated, not stored)."""
        return sum(s.deliveries for s in self.sources)

    @property
    def queued(self) -> float:
        """Requests waiting for an HTTP/2 stream at once, at most (closed-form bound)."""
        return sum(s.queued for s in self.sources)

    @property
    def simulated(self) -> float:
        """Everything simulated per tier: requests, handshakes and deliveries."""
        return self.requests + self.deliveries

    def bytes_needed(self, retries: bool = False) -> float:
        """Peak memory, with one attempt per request or (``retries``) every retry."""
        rows = sum(s.held for s in self.sources if s.kind == "trace")
        attempts = sum(s.requests * (s.max_attempts if retries else 1) for s in self.sources)
        workers = min(self.jobs, self.tiers * self.replications) if self.jobs > 1 else 0
        summary = min(attempts, SUMMARY_ATTEMPTS_IN_MEMORY) * BYTES_PER_ATTEMPT
        return (BASE_BYTES + workers * WORKER_BYTES + rows * BYTES_PER_TRACE_ROW * (1 + workers)
                + summary + attempts * BYTES_PER_ATTEMPT_STREAMED
                + self.queued * BYTES_PER_QUEUED)

    def disk_bytes_needed(self, retries: bool = False) -> float:
        """Temporary disk for every tier's spool: one row per attempt (one per request,
        or with ``retries`` every retry) and one per logical request."""
        attempts = sum(s.requests * (s.max_attempts if retries else 1) for s in self.sources)
        # Replications 1.. keep a tier's spool only until its summary is read: one at a
        # time, or one per worker, beside replication 0's spools (kept for its report).
        others = 0 if self.replications == 1 else max(1, self.jobs)
        # The open-loop demand, drawn once for every tier (sim.workload.demand_spool).
        drawn = sum(s.requests for s in self.sources if s.kind in ("arrival", "trace"))
        demand = drawn * DEMAND_BYTES_PER_ROW if self.tiers > 1 else 0.0
        # Rows not kept for the report: one tier's at a time, or one per worker.
        tiers = self.tiers if self.kept else min(self.tiers, max(1, self.jobs))
        return (tiers + others) * (attempts + self.requests) * SPOOL_BYTES_PER_ROW + demand

    def describe(self) -> str:
        """``about 3.6e08 requests per tier (arrival 'a': 3.6e08) on 9 tier(s)``."""
        top = sorted(self.sources, key=lambda s: -s.requests)[:3]
        parts = ", ".join(f"{s.kind} {s.name!r}: {_num(s.requests)}" for s in top)
        more = ", ..." if len(self.sources) > 3 else ""
        text = f"about {_num(self.requests)} requests per tier ({parts}{more})"
        if self.deliveries:
            text += f" and {_num(self.deliveries)} websocket deliveries"
        if self.queued:
            text += f", up to {_num(self.queued)} waiting for an HTTP/2 stream at once"
        text += f" on {self.tiers} tier(s)"
        if self.replications > 1:
            text += (f", {self.replications} replications "
                     f"({_num(self.simulated * self.replications)} simulated per tier)")
        for s in self.sources:
            if s.kind == "trace":
                text += (f"; trace {s.name!r} is read a row group at a time, counted as "
                         f"{_num(s.held)} row(s) in memory at once, not its "
                         f"{_num(s.requests)}")
        return text


def estimate(loaded: LoadedScenario, jobs: int = 1, replications: int = 1) -> SizeEstimate:
    """Expected counts of every source of ``loaded``, from closed forms (nothing drawn),
    for a run of ``replications`` replications."""
    sc = scale_scenario(loaded.scenario)  # the demand the run will draw, ``load`` applied
    sizes = []
    for i, src in enumerate(sc.sources):
        attempts = _max_attempts(sc, src)
        if src.arrival is not None:
            sizes.append(SourceSize(src.name, "arrival",
                                    _arrivals(src.arrival, sc) * _kept(src), attempts))
        elif src.workers is not None:
            sizes.append(SourceSize(src.name, "workers", _workers(sc, src), attempts))
        else:
            rows, held = _trace_rows(loaded, src, i)
            sizes.append(SourceSize(src.name, "trace", rows, attempts, held=held))
    queued = _queued(sc, sizes)
    sizes = [replace(s, queued=queued.get(i, 0.0)) for i, s in enumerate(sizes)]
    sizes += _streams(sc)
    return SizeEstimate(tuple(sizes), len(loaded.tiers), jobs, replications)


def _kept(src) -> float:
    """The share of an open-loop source's calls its ``cache`` leaves to send."""
    if not src.cache:
        return 1.0
    total = sum(src.mix.values())
    return 1.0 - sum(src.cache.get(m, 0.0) * w / total for m, w in src.mix.items())


_MAX_ACCOUNT_CONNECTIONS = 128  # spec 8.4: active connections per account, all regions


def _queued(sc: Scenario, sizes: list[SourceSize]) -> dict[int, float]:
    """The most requests of each open-loop source waiting for a stream at once: the fluid
    bound of each pool (client, region, API) shared out by the source's share of it."""
    T = sc.duration_s
    pools: dict[tuple, list[tuple[int, float, float, float]]] = {}
    for i, (src, size) in enumerate(zip(sc.sources, sizes, strict=False)):
        if src.arrival is None or size.kind != "arrival" or not src.mix:
            continue
        total = sum(src.mix.values())
        rtt = next(r.rtt_ms for r in sc.regions if r.name == sc.region_of(src)) / 1000.0
        block = src.arrival.per_block if isinstance(src.arrival, BlockSync) else 0.0
        for m, w in src.mix.items():
            method = sc.methods[m]
            share = w / total
            pools.setdefault((src.client, sc.region_of(src), method.api), []).append(
                (i, size.requests * share, rtt + method.service_time.mean, block * share))
    out: dict[int, float] = {}
    for (client, _, _), members in pools.items():
        http = sc.clients[client].http
        slots = http.max_streams_per_conn * min(http.max_connections, _MAX_ACCOUNT_CONNECTIONS)
        requests = sum(n for _, n, _, _ in members)
        if requests <= 0:
            continue
        hold = sum(n * h for _, n, h, _ in members) / requests
        capacity = slots / hold if hold > 0 else math.inf
        excess = max(0.0, requests / T - capacity) * T
        burst = sum(b for _, _, _, b in members)
        queue = excess + (burst if burst > slots else 0.0)
        for i, n, _, _ in members:
            out[i] = out.get(i, 0.0) + min(n, queue * n / requests)
    return out


def _num(x: float) -> str:
    return f"{x:,.0f}" if x < 1e6 else f"{x:.2g}".replace("e+", "e")


def _gib(x: float) -> str:
    return f"{x / 2**40:,.1f} TiB" if x >= 2**40 else f"{x / 2**30:,.1f} GiB"


def _max_attempts(sc: Scenario, src: Source) -> int:
    retry = sc.clients[src.client].retry
    return 1 if retry.policy == "none" else retry.max_attempts


def _arrivals(spec, sc: Scenario) -> float:
    T = sc.duration_s
    if isinstance(spec, BlockSync) and T / spec.slot_s > _MAX_EXACT_SLOTS:
        return spec.mean_rate * T + 2 * spec.per_block
    return spec.expected_count(T, sc.day_offset_s)


def _workers(sc: Scenario, src: Source) -> float:
    rtt = next(r.rtt_ms for r in sc.regions if r.name == sc.region_of(src)) / 1000.0
    total = sum(src.mix.values())
    service = sum(w / total * sc.methods[m].service_time.mean for m, w in src.mix.items())
    cycle = rtt + service + src.workers.think.mean
    if cycle <= 0:
        raise CapsimError("closed-loop workers with zero round trip, service and think time "
                          "never advance the clock; give the region an rtt_ms or the workers "
                          "a think time", field=f"sources[{sc.sources.index(src)}].workers")
    return src.workers.count * (sc.duration_s / cycle + 1)


def _trace_rows(loaded: LoadedScenario, src: Source, index: int) -> tuple[float, float]:
    """``(requests, rows held at once)`` of a trace source: every row of the file times
    ``load_multiplier``, times the loops of ``repeat = "tile"``; held, the rows of the
    largest set of row groups that overlap in time (what
    :class:`~sim.traces.replay.ReplayStream` reads together) times the copies, plus the
    whole recording when a short one is held for every loop or its copies spread over
    its period (the one-pass merge then keeps up to a period of rows)."""
    import pyarrow.parquet as pq

    from ..traces.replay import max_overlap_rows, row_group_ranges
    from ..traces.tiling import HOLD_ROWS
    from .replay_source import trace_path

    try:
        with pq.ParquetFile(trace_path(src, index, loaded.path)) as pf:
            rows = pf.metadata.num_rows
            groups = row_group_ranges(pf)
            held = max_overlap_rows(groups)
    except CapsimError:
        raise
    except Exception:  # not a readable Parquet file: the trace loader says why
        return 0.0, 0.0
    r = src.replay
    k = r.load_multiplier
    copies = max(1, math.ceil(k))
    requests, held = rows * k, held * copies
    if r.repeat == "tile" and rows:
        requests *= _loops(loaded, src, index, groups, rows)
    if 0 < rows <= HOLD_ROWS and (r.repeat == "tile" or (r.copies_spread == "period"
                                                          and copies > 1)):
        held += rows  # held for every loop, or a period of it kept by the copies' merge
    return requests, held


def _loops(loaded: LoadedScenario, src: Source, index: int, groups, rows: int) -> int:
    """Loops of a tiled trace over the run, at most: its period from the file's first and
    last times (a time range shortens it to the range: more loops, each counted with every
    row of the file, so never fewer requests than the run draws); no hourly thinning."""
    from ..traces.tiling import recording_period

    r, sc = src.replay, loaded.scenario
    period = r.period_s
    if period is None:
        first, last = min(g[1] for g in groups), max(g[2] for g in groups)
        period = recording_period(first, last, rows, r.speed, file=loaded.path,
                                  field=f"sources[{index}].replay.period_s")
        if r.time_range_s is not None:
            period = min(period, (r.time_range_s[1] - r.time_range_s[0]) / r.speed)
    return max(1, math.ceil((sc.duration_s - r.phase_shift_s) / period))


def _streams(sc: Scenario) -> list[SourceSize]:
    T = sc.duration_s
    out = []
    for c in sc.streams:
        rate = sc.ws.source(c.stream).mean_rate
        if c.arrival is not None:
            sessions = _arrivals(c.arrival, sc)
            mean_session = c.session.mean if c.session is not None else T
            out.append(SourceSize(c.name, "streams", sessions, 1,
                                  rate * sessions * min(mean_session, T)))
            continue
        per_conn = 1.0 + len(c.faults.drop_all_at_s)
        if c.faults.mean_time_between_drops_s:
            per_conn += T / c.faults.mean_time_between_drops_s
        if c.session is not None:
            per_conn += T / max(c.session.mean + c.gap.mean, sc.ws.min_retry_s)
        attempts = c.reconnect.max_attempts or max(1, math.ceil(T / sc.ws.min_retry_s / per_conn))
        out.append(SourceSize(c.name, "streams", c.connections * per_conn, attempts,
                              rate * T * c.connections))
    return out


def available_memory_bytes() -> int | None:
    """Memory this process can still use: ``MemAvailable``, capped by a cgroup limit."""
    found = []
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024)
    if not found:  # no /proc (not Linux): free physical pages
        with contextlib.suppress(OSError, ValueError, AttributeError):
            found.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit != "max":
            used = int(Path("/sys/fs/cgroup/memory.current").read_text())
            found.append(max(0, int(limit) - used))
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def free_spool_disk() -> tuple[str, int | None]:
    """The folder runs spool to (the system's temporary folder: ``TMPDIR``) and the bytes
    free on its file system (None when it cannot be read)."""
    where = tempfile.gettempdir()
    try:
        return where, shutil.disk_usage(where).free
    except OSError:
        return where, None


def check(loaded: LoadedScenario, *, max_requests: int | None = None, jobs: int = 1,
          available: int | None = None, disk_free: int | None = None,
          replications: int = 1, keep_rows: bool = True) -> tuple[SizeEstimate, list[str]]:
    """Refuse a run too large for the machine (its memory, or the temporary disk its
    spools need) or the limit; return the estimate and warnings (a run that fits unless
    retries multiply its attempts).

    ``max_requests`` (``--max-requests``) wins over the scenario's ``max_requests``;
    ``available`` defaults to :func:`available_memory_bytes`, ``disk_free`` to the free
    bytes of :func:`free_spool_disk`. With ``replications`` N, the limit counts N times
    the requests simulated per tier (every replication simulates them). ``keep_rows``
    False: the run removes each tier's rows once its summary is read
    (:func:`sim.runner.run.run`), so its spools need one tier's disk per worker.
    """
    size = replace(estimate(loaded, jobs, replications), kept=keep_rows)
    limit = max_requests if max_requests is not None else loaded.scenario.max_requests
    change = ("shorten the duration (--set duration=...), lower the rates, simulate fewer "
              "tiers (--tier)" + (", run fewer replications (--replications)"
                                  if size.replications > 1 else ""))
    if limit is not None and size.simulated * size.replications > limit:
        raise CapsimError(
            f"run too large: {size.describe()}, over the limit of {limit:,} simulated "
            f"requests (--max-requests or max_requests); {change}, or raise the limit",
            file=loaded.path)
    if available is None:
        available = available_memory_bytes()
    warnings: list[str] = []
    _within(size.bytes_needed, available, warnings, loaded.path,
            refuse=lambda need: (
                f"run too large for this machine: {size.describe()}, needing about "
                f"{_gib(need)} of memory; {_gib(available)} available "
                f"({SAFETY_FRACTION:.0%} usable). {change[0].upper()}{change[1:]}, or set "
                "--max-requests to stop such runs early"),
            warn=lambda worst, need: (
                f"with every retry this run could need {_gib(worst)} of memory "
                f"({_gib(available)} available); it fits without retries ({_gib(need)})"))
    where, free = free_spool_disk()
    if disk_free is not None:
        free = disk_free
    _within(size.disk_bytes_needed, free, warnings, loaded.path,
            refuse=lambda need: (
                f"run too large for this machine's temporary disk: {size.describe()}, "
                f"its spools needing about {_gib(need)} in {where}; {_gib(free)} free "
                f"({SAFETY_FRACTION:.0%} usable). Point TMPDIR at a larger disk, "
                f"{change}, or set --max-requests to stop such runs early"),
            warn=lambda worst, need: (
                f"with every retry this run's spools could need {_gib(worst)} of disk in "
                f"{where} ({_gib(free)} free); it fits without retries ({_gib(need)})"))
    return size, warnings


def _within(needed, have: int | None, warnings: list[str], path, *, refuse, warn) -> None:
    """Refuse (``refuse(need)``, a :class:`CapsimError`) when ``needed()`` exceeds
    :data:`SAFETY_FRACTION` of ``have``; add ``warn(worst, need)`` when only
    ``needed(retries=True)`` does. Nothing when ``have`` is unknown."""
    if have is None:
        return
    budget = SAFETY_FRACTION * have
    need = needed()
    if need > budget:
        raise CapsimError(refuse(need), file=path)
    worst = needed(retries=True)
    if worst > budget:
        warnings.append(warn(worst, need))
