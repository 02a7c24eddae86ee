"""Simulated versus recorded decisions: replay a trace's attempts as recorded through the
model's policy objects and compare each predicted outcome with the recorded one.

The replay uses :class:`sim.policy.admission.Admission` -- the simulator's limiter,
websocket slot pool and account connection limits, asked in the model's order -- at
the times the *client* recorded (``time_ns``, the send time), so what is measured is
how well the model, given only what a client sees, predicts what the service decided.
The walk in time order, its settles and the scheduled closes are the shared
:class:`~sim.calibration.replay_core.Timeline` (calibration's replay walks the same one).
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
    MONITORING,
    MONITORING_PATH,
    RECORDED_HANDSHAKE_STATUS_OUTCOME,
    SIZE_METHOD,
    WINDOW_S,
)
from ..policy.admission import Admission
from ..policy.slots import mean_stale_expiry_s
from ..traces.schema import WEBSOCKET_METHODS, open_trace
from .replay_core import FIRST, RECORDED, Timeline


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


def _stream_of(method: str) -> str:
    return MONITORING if method == MONITORING_PATH else method


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
    adm = Admission(loaded, tier)
    keys_ok = {pseudonym(k) for k in sc.account_list[0].keys}
    pricing = loaded.pricing
    expiry = _stale_expiry(loaded)
    idle = {s.name: sc.clients[s.client].http for s in sc.sources}
    methods = tab["method"].astype(str).to_numpy()
    keys = tab["key"].astype(str).to_numpy()
    status = tab["status"].to_numpy()
    latency = tab["latency_ms"].to_numpy(dtype=float) / 1e3
    cu = tab["cu"].to_numpy(dtype=float)
    profiles = tab["profiles"].to_numpy()
    # Connection closes: an admitted connection is held until its last reply plus the
    # client's idle timeout (a connection per request: until its reply), as the model has it.
    last_end: dict[int, tuple[float, str]] = {}
    for i in range(n):
        if conn[i] >= 0 and methods[i] not in WEBSOCKET_METHODS:
            end = t[i] + (latency[i] if latency[i] == latency[i] else 0.0)
            if conn[i] not in last_end or end > last_end[conn[i]][0]:
                last_end[conn[i]] = (end, source[i])
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
    timeline = Timeline(adm.limiter, adm.slots)
    ws_live: dict[int, bool] = {}

    def closed(now: float, conn_id: int, clean: bool) -> None:
        # Only a connection the model admitted holds a slot the model can free.
        if ws_live.pop(conn_id, None) is not None:
            adm.websocket_closed(now, clean=clean, stale_expiry_s=expiry)

    for r in recorded_events:
        if r.kind == "close":
            timeline.at(r.t_s, RECORDED, closed, int(r.conn), r.close != "unclean")
        elif r.kind == "publish":
            timeline.at(r.t_s, RECORDED, adm.publish, r.stream)
    refused: set[int] = set()
    unasked: set[int] = set()
    result = Comparison()
    for i, now in timeline.walk(np.argsort(t_reach, kind="stable").tolist(), t_reach):
        method = methods[i]
        key_ok = keys[i] in keys_ok
        if method in WEBSOCKET_METHODS:
            d = adm.handshake(now, _stream_of(method), key_ok=key_ok)
            if d.name == "ok":
                ws_live[int(conn[i])] = True
            recorded = (RECORDED_HANDSHAKE_STATUS_OUTCOME.get(int(status[i]))
                        if status[i] == status[i] else None)
        else:
            c = int(conn[i])
            # A connection is the account's from its first request that passes the
            # header checks (a valid key; HTTP/2 with SNI where required): one that
            # never presents a valid key counts against no limit (the emulator's rule).
            if conn_new[i] and c >= 0:
                unasked.add(c)
            headers_ok = key_ok and (bool(h2[i]) or not adm.needs_h2(method))
            if c in unasked and headers_ok:
                unasked.discard(c)
                host = hostname[i] or "default"
                if adm.connection_opened(now, host):
                    end, src = last_end.get(c, (now, ""))
                    http = idle.get(src)
                    hold = 0.0 if http is None or not http.reuse else http.idle_timeout_s
                    timeline.at(end + hold, FIRST, adm.connection_closed)
                else:
                    refused.add(c)
            if c in refused and headers_ok:
                d = Admission.refused_connection()
            else:
                reserve, actual = _costs(method, profiles[i], cu[i], pricing)
                d = adm.request(now, method, key_ok=key_ok, h2_sni=bool(h2[i]),
                                reserve_cu=reserve, actual_cu=actual,
                                api=str(tab["api"].iat[i]))
                if d.ticket is not None:
                    lat = latency[i] if latency[i] == latency[i] else 0.0
                    timeline.settle_at(now + lat, *d.ticket)
            recorded = HTTP_STATUS_OUTCOME.get(int(status[i])) if status[i] == status[i] else None
        if recorded is None:
            result.unmodelled += 1
            continue
        if ambiguous[i]:
            result.near_boundary += 1
            continue
        result.compared += 1
        result.confusion[(recorded, d.name)] += 1
        if recorded == d.name:
            result.agreed += 1
        else:
            result.mismatches.append(Mismatch(int(i), float(now), str(method), d.name, recorded,
                                              float(t_server[i])))
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
