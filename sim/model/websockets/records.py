"""What the websocket side of a run records: sessions, per-client totals, handshakes.

The session processes (:mod:`sim.model.websockets.sessions`) report each handshake, each live
period's close and each client's wanted and connected time here; :meth:`WsRecords.result`
turns them into a :class:`WebsocketsResult` once, at the end of the run.

Handshakes are attempts: in a tier's run they go straight to the shared attempt
recorder (:class:`RecorderHandshakes`, one row each, like an HTTP attempt); the model
alone (tests, the live emulator's checks) keeps them in a :class:`HandshakeLog`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ...core.vocabulary import CLOSE_KINDS, HANDSHAKE_OUTCOMES, OK, OUTCOMES
from ..recorder import Recorder

_NAN = math.nan
_SESSION_COLUMNS = (
    ("client", np.int16), ("conn", np.int32), ("open_s", np.float64), ("close_s", np.float64),
    ("close_kind", np.int8), ("events_delivered", np.int64), ("events_dropped", np.int64),
    ("events_lost_before", np.int64))


class HandshakeSink(Protocol):
    """Where handshakes go as they happen."""

    def write(self, now: float, client: int, conn: int, outcome: int,
              retry_after: float) -> None:
        """One handshake of connection ``conn`` of ``client`` (``retry_after`` NaN: none)."""


class HandshakeLog:
    """Handshakes kept in memory: columns ``t``, ``client``, ``conn``, ``outcome``
    (outcome code), ``retry_after_s`` (NaN without a header)."""

    def __init__(self) -> None:
        self._cols: tuple[list, ...] = tuple([] for _ in range(5))

    def write(self, now: float, client: int, conn: int, outcome: int,
              retry_after: float) -> None:
        for col, v in zip(self._cols, (now, client, conn, outcome, retry_after), strict=True):
            col.append(v)

    def columns(self) -> dict[str, np.ndarray]:
        """The log as typed numpy columns."""
        h = self._cols
        return {"t": np.asarray(h[0], dtype=np.float64),
                "client": np.asarray(h[1], dtype=np.int16),
                "conn": np.asarray(h[2], dtype=np.int32),
                "outcome": np.asarray(h[3], dtype=np.int8),
                "retry_after_s": np.asarray(h[4], dtype=np.float64)}


class RecorderHandshakes:
    """Handshakes written to a tier's attempt recorder, one attempt row each.

    ``rows[client]`` is the client's ``(source, method, key, region)`` codes in the
    attempt table; an admitted handshake reserved and settled ``connect_cu``.
    """

    def __init__(self, recorder: Recorder, rows: list[tuple[int, int, int, int]],
                 connect_cu: float) -> None:
        self._handshake = recorder.handshake
        self._rows, self._connect_cu = rows, float(connect_cu)

    def write(self, now: float, client: int, conn: int, outcome: int,
              retry_after: float) -> None:
        source, method, key, region = self._rows[client]
        cu = self._connect_cu if outcome == OK else 0.0
        self._handshake(source, method, key, region, now, outcome, cu, retry_after)


@dataclass(frozen=True)
class WebsocketsResult:
    """The websocket side of one tier's run (columnar records and totals).

    ``sessions``: one row per successful handshake (a connection's live period):
    ``client``, ``conn`` (connection index; the arrival index for open-loop clients),
    ``open_s``, ``close_s``, ``close_kind`` (:data:`CLOSE_KINDS` code),
    ``events_delivered``, ``events_dropped`` (exhaustion, while live) and
    ``events_lost_before`` (published while it was down just before this open); rows in
    the order they closed, those still open at the end last.
    ``handshakes``: counts by outcome name. ``handshake_log``: the handshakes' columns
    (see :class:`HandshakeLog`) when the model kept them itself, None when they went to
    the attempt recorder. ``slots``: the (t, live, stale, cap) steps summed over the
    accounts, ``slots_by_account`` each account's. ``clients``: per client ``name``,
    ``stream``, ``region`` ("" for none), ``wanted_s``, ``connected_s``,
    ``events_delivered``, ``events_lost_down``, ``events_dropped``, ``events_lost`` (the
    two summed), ``gave_up``. ``events_published`` by stream; the other fields are
    totals over the clients (``connected_fraction`` NaN when nothing was wanted).

    ``result["name"]`` reads a field too (the mapping form the model's tests use).
    """

    sessions: dict[str, np.ndarray]
    handshakes: dict[str, int]
    handshake_log: dict[str, np.ndarray] | None
    slots: dict[str, np.ndarray]
    slots_by_account: list[dict[str, np.ndarray]]
    clients: dict[str, np.ndarray]
    cu_connect: float
    cu_publish: float
    events_published: dict[str, int]
    events_delivered: int
    events_lost: int
    wanted_s: float
    connected_s: float
    connected_fraction: float
    close_kinds: tuple[str, ...] = CLOSE_KINDS
    outcomes: tuple[str, ...] = OUTCOMES

    def __getitem__(self, name: str) -> Any:
        if name not in self.__dataclass_fields__:
            raise KeyError(name)
        return getattr(self, name)


class WsRecords:
    """Sessions, per-client totals and handshake counts of ``n_clients`` clients."""

    def __init__(self, n_clients: int, handshakes: HandshakeSink | None = None) -> None:
        self.handshake_sink = handshakes if handshakes is not None else HandshakeLog()
        n = n_clients
        self.wanted, self.connected = [0.0] * n, [0.0] * n
        self.delivered, self.lost_down, self.dropped = [0] * n, [0] * n, [0] * n
        self.gave_up = [0] * n
        self.cu_connect = self.cu_publish = 0.0
        self._by_outcome = [0] * len(OUTCOMES)
        self._sess: tuple[list, ...] = tuple([] for _ in _SESSION_COLUMNS)

    def handshake(self, now: float, client: int, conn: int, outcome: int,
                  retry_after: float) -> None:
        """Count one handshake and hand it to the sink."""
        self._by_outcome[outcome] += 1
        self.handshake_sink.write(now, client, conn, outcome, retry_after)

    def session(self, client: int, conn: int, open_s: float, close_s: float, kind: int,
                delivered: int, dropped: int, lost_before: int) -> None:
        """One live period, closed at ``close_s`` (``kind``: a :data:`CLOSE_KINDS` code)."""
        for col, v in zip(self._sess, (client, conn, open_s, close_s, kind, delivered, dropped,
                                       lost_before), strict=True):
            col.append(v)
        self.delivered[client] += delivered
        self.dropped[client] += dropped
        self.connected[client] += close_s - open_s

    def result(self, clients: list, published: dict[str, int], slots_by_account: list[dict],
               slots: dict) -> WebsocketsResult:
        """The result, once every live period has been closed or cut at the end."""
        sessions = {n: np.asarray(c, dtype=d)
                    for (n, d), c in zip(_SESSION_COLUMNS, self._sess, strict=True)}
        lost = [a + b for a, b in zip(self.lost_down, self.dropped, strict=True)]
        wanted, connected = sum(self.wanted), sum(self.connected)
        sink = self.handshake_sink
        return WebsocketsResult(
            sessions=sessions,
            handshakes={o: self._by_outcome[OUTCOMES.index(o)] for o in HANDSHAKE_OUTCOMES},
            handshake_log=sink.columns() if isinstance(sink, HandshakeLog) else None,
            slots=slots, slots_by_account=slots_by_account,
            clients={
                "name": np.asarray([c.name for c in clients], dtype=str),
                "stream": np.asarray([c.stream for c in clients], dtype=str),
                "region": np.asarray([c.region or "" for c in clients], dtype=str),
                "wanted_s": np.asarray(self.wanted),
                "connected_s": np.asarray(self.connected),
                "events_delivered": np.asarray(self.delivered, dtype=np.int64),
                "events_lost_down": np.asarray(self.lost_down, dtype=np.int64),
                "events_dropped": np.asarray(self.dropped, dtype=np.int64),
                "events_lost": np.asarray(lost, dtype=np.int64),
                "gave_up": np.asarray(self.gave_up, dtype=np.int64)},
            cu_connect=self.cu_connect, cu_publish=self.cu_publish,
            events_published=dict(published),
            events_delivered=int(sum(self.delivered)), events_lost=int(sum(lost)),
            wanted_s=wanted, connected_s=connected,
            connected_fraction=connected / wanted if wanted > 0 else _NAN)
