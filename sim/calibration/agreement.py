"""Simulated versus recorded decisions: replay a trace's attempts as recorded through the
model's policy objects and compare each predicted outcome with the recorded one.

The replay uses :class:`sim.policy.admission.Admission` -- the simulator's limiter,
websocket slot pool and account connection limits, asked in the model's order -- at
the times the *client* recorded (``time_ns``, the send time), so what is measured is
how well the model, given only what a client sees, predicts what the service decided.
The walk in time order and each attempt's decision are the shared
:func:`~sim.calibration.replay_core.decide` (calibration's replay asks the same one);
this module builds its inputs from the trace and the sidecar, and scores its outcomes.
Per attempt it needs the method, the key (its pseudonym), sizing profiles, and for
refunds the settled CU (``cu``) and the latency (the settle is placed at send time +
latency). A ``capsim drive`` sidecar (:mod:`sim.live.record`) adds what the canonical
table cannot say: which connection an attempt used and whether it opened it (430),
HTTP/2 and SNI (421), websocket closes (clean or unclean: stale slots) and billed
events (CU spent by publishing). Without a sidecar every attempt counts as HTTP/2 with
SNI on an existing connection.

An HTTP attempt is replayed when its request was written to its connection (the
sidecar's ``t_wire_s``), a handshake at its send time. An attempt whose way to the
service -- from then until the emulator decided it (``t_server_s``), widened by
``boundary_s`` on both sides -- spans a 12-second window boundary (``epoch``
alignment) reached a window the client cannot tell: it is replayed at its decision time
(so its CU count in the window they did) and not compared, only counted
(:attr:`Comparison.near_boundary`). Attempts whose reply was not an outcome of the model
(a 404, a transport error) are counted as ``unmodelled``.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from ..config.resolved import LoadedScenario
from ..config.tiers import Tier
from ..core.pseudonyms import pseudonym
from ..core.vocabulary import (
    HTTP_STATUS_OUTCOME,
    OUTCOMES,
    RECORDED_HANDSHAKE_STATUS_OUTCOME,
    SIZE_METHOD,
    WINDOW_S,
)
from ..policy.admission import Admission
from ..policy.slots import mean_stale_expiry_s
from ..traces.schema import WEBSOCKET_METHODS, open_trace
from .replay_core import Attempts, Close, Publish, decide


@dataclass
class Mismatch:
    """One attempt whose predicted outcome differs from the recorded one."""

    row: int
    t_s: float
    method: str
    predicted: str
    recorded: str
    t_server_s: float


@dataclass
class Comparison:
    """Agreement of predicted and recorded outcomes."""

    compared: int = 0
    agreed: int = 0
    near_boundary: int = 0
    unmodelled: int = 0
    confusion: Counter = field(default_factory=Counter)  # (recorded, predicted) -> count
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def agreement(self) -> float:
        """Fraction of compared attempts whose outcomes agree (NaN when none)."""
        return self.agreed / self.compared if self.compared else math.nan

    def describe(self) -> str:
        """A few lines for people."""
        lines = [f"compared {self.compared} attempts: {self.agreed} agree "
                 f"({100 * self.agreement:.2f} %); left out: {self.near_boundary} whose way "
                 f"to the service spans a window boundary, {self.unmodelled} unmodelled "
                 "replies"]
        for (rec, pred), n in sorted(self.confusion.items()):
            if rec != pred:
                lines.append(f"  recorded {rec}, predicted {pred}: {n}")
        return "\n".join(lines)


def _stale_expiry(loaded: LoadedScenario) -> float:
    return mean_stale_expiry_s(loaded.scenario.ws.stale_expiry_s)


def compare(loaded: LoadedScenario, tier: Tier, trace: str | Path, *,
            sidecar: str | Path | None = None, boundary_s: float = 0.0,
            times: str = "client") -> Comparison:
    """Replay ``trace`` through a fresh :class:`Admission` for ``tier`` and compare.

    ``times="server"`` replays each attempt at the service time the emulator decided it
    (the sidecar's ``t_server_s``) instead: a diagnosis, telling mismatches caused by
    transit (send order and time differ from arrival order and time) from the others.
    """
    if times not in ("client", "server"):
        raise ValueError("times must be 'client' or 'server'")
    pf = open_trace(trace)
    tab = pf.read().to_pandas()
    pf.close()
    sc = loaded.scenario
    start_ns = int(sc.start.timestamp() * 1e9)
    t = (tab["time_ns"].to_numpy(np.int64) - start_ns) / 1e9
    n = len(tab)
    side = None
    if sidecar is not None and Path(sidecar).exists():
        side = pq.read_table(sidecar).to_pandas()
    # Per-row driver facts (defaults without a sidecar).
    conn = np.full(n, -1, dtype=np.int64)
    conn_new = np.zeros(n, dtype=bool)
    h2 = np.ones(n, dtype=bool)
    hostname = np.array([""] * n, dtype=object)
    t_server = np.full(n, math.nan)
    t_reach = t.copy()  # when the attempt reached the service, as far as the client knows
    source = np.array([""] * n, dtype=object)
    recorded_events: list = []  # the sidecar's closes and publishes, in its order
    if side is not None:
        rows = side[side["row"] >= 0]
        idx = rows["row"].to_numpy()
        conn[idx] = rows["conn"].to_numpy()
        conn_new[idx] = rows["conn_new"].to_numpy()
        h2[idx] = rows["http2"].to_numpy() & (rows["hostname"].to_numpy() != "")
        hostname[idx] = rows["hostname"].to_numpy()
        t_server[idx] = rows["t_server_s"].to_numpy()
        # An attempt reaches the service when its request is written, after any wait for
        # a stream or for a new connection's TLS handshake: replay it then.
        wired = rows["t_wire_s"].to_numpy()
        known = ~np.isnan(wired)
        t_reach[idx[known]] = wired[known]
        if times == "server":
            known = ~np.isnan(t_server[idx])
            t_reach[idx[known]] = t_server[idx][known]
        source[idx] = rows["source"].to_numpy()
        h2[idx[rows["kind"].to_numpy() == "handshake"]] = True
        recorded_events = list(side[side["row"] < 0].itertuples())
    keys_ok = {pseudonym(k) for k in sc.account_list[0].keys}
    pricing = loaded.pricing
    idle = {s.name: sc.clients[s.client].http for s in sc.sources}
    methods = tab["method"].astype(str).to_numpy()
    keys = tab["key"].astype(str).to_numpy()
    status = tab["status"].to_numpy()
    latency = tab["latency_ms"].to_numpy(dtype=float) / 1e3
    cu = tab["cu"].to_numpy(dtype=float)
    profiles = tab["profiles"].to_numpy()
    handshake = np.isin(methods, WEBSOCKET_METHODS)
    # Connection closes: an admitted connection is held until its last reply plus the
    # client's idle timeout (a connection per request: until its reply), as the model has it.
    last_end: dict[int, tuple[float, str]] = {}
    for i in range(n):
        if conn[i] >= 0 and not handshake[i]:
            end = t[i] + (latency[i] if latency[i] == latency[i] else 0.0)
            if conn[i] not in last_end or end > last_end[conn[i]][0]:
                last_end[conn[i]] = (end, source[i])
    conn_close = {}
    for c, (end, src) in last_end.items():
        http = idle.get(src)
        conn_close[int(c)] = end + (0.0 if http is None or not http.reuse
                                    else http.idle_timeout_s)
    # An attempt whose way to the service -- from going on the wire to being decided
    # (``t_server_s``, when recorded), widened by ``boundary_s`` -- spans a window
    # boundary reached a window the client cannot know: it is replayed where the service
    # decided it, so that its CU land in the same window as they did, and not compared.
    ambiguous = np.zeros(n, dtype=bool)
    if boundary_s > 0:
        lo = t_reach - boundary_s
        hi = np.where(np.isnan(t_server), t_reach, np.maximum(t_reach, t_server)) + boundary_s
        ambiguous = np.floor(lo / WINDOW_S) != np.floor(hi / WINDOW_S)
        moved = ambiguous & ~np.isnan(t_server)
        t_reach[moved] = t_server[moved]
    reserve, actual = np.zeros(n), np.zeros(n)
    for i in np.flatnonzero(~handshake):
        reserve[i], actual[i] = _costs(methods[i], profiles[i], cu[i], pricing)
    events = [Close(r.t_s, int(r.conn), r.close != "unclean") if r.kind == "close"
              else Publish(r.t_s, r.stream)
              for r in recorded_events if r.kind in ("close", "publish")]
    attempts = Attempts(
        t_reach, methods, tab["api"].astype(str).to_numpy(), reserve, actual, latency,
        key_ok=np.array([k in keys_ok for k in keys], dtype=bool), h2_sni=h2, conn=conn,
        conn_new=conn_new, hostname=hostname, conn_close_s=conn_close, events=events,
        stale_expiry_s=_stale_expiry(loaded))
    outcomes = decide(Admission.for_scenario(loaded, tier), attempts)
    result = Comparison()
    for i in attempts.walk_order().tolist():
        if handshake[i]:
            recorded = (RECORDED_HANDSHAKE_STATUS_OUTCOME.get(int(status[i]))
                        if status[i] == status[i] else None)
        else:
            recorded = HTTP_STATUS_OUTCOME.get(int(status[i])) if status[i] == status[i] else None
        if recorded is None:
            result.unmodelled += 1
            continue
        if ambiguous[i]:
            result.near_boundary += 1
            continue
        predicted = OUTCOMES[outcomes[i]]
        result.compared += 1
        result.confusion[(recorded, predicted)] += 1
        if recorded == predicted:
            result.agreed += 1
        else:
            result.mismatches.append(Mismatch(i, float(t_reach[i]), str(methods[i]), predicted,
                                              recorded, float(t_server[i])))
    return result


def _costs(method: str, profiles, cu: float, pricing) -> tuple[float, float]:
    """CU an attempt reserves, and what it settles to (the recorded ``cu`` when known)."""
    if method == SIZE_METHOD:
        names = [p for p in str(profiles).split(",") if p] if profiles is not None else []
        reserve = round(sum(pricing.sizing.item_reserve(p) for p in names), 6)
        actual = reserve if cu != cu else float(cu)
        return reserve, actual
    cost = pricing.rpc.cost(method)
    return cost, cost
