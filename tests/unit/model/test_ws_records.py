"""Websocket recording and publishing (sim/model/websockets/: records.py, publish.py).

Handshakes go to the shared attempt recorder as they happen and come out after every
other attempt row, numbered from the first id no logical request took; a stream's
publish times are counted lazily, and only a billed stream with live connections costs
a SimPy event per publish. Expected values are worked out by hand in each test.
"""

from __future__ import annotations

import math

import numpy as np
import simpy

from sim.config.pricing import Pricing, default_pricing_table
from sim.config.tiers import CATALOG
from sim.config.websockets import StreamClient, StreamSource, WebsocketSettings
from sim.model import recorder as rc
from sim.model.websockets.publish import PublishTimes
from sim.model.websockets.records import RecorderHandshakes
from sim.model.websockets.sessions import Websockets
from sim.policy.limiter import CULimiter

PRICING = Pricing.model_validate(default_pricing_table())  # connect 50 CU, new-blocks 5
STREAMS_TIER = next(t for t in CATALOG if t.name == "Streams")


def test_handshakes_follow_the_attempts_with_ids_from_handshake_rid():
    seen = []
    rec = rc.Recorder(on_chunk=lambda c: seen.append(len(c["request_id"])), chunk_rows=4)
    for rid in range(3):  # three HTTP attempts
        rec.attempt(rid, 1, 0, 0, 0, 0, float(rid), rid + 0.5, rc.OK, 1.0, 1.0, math.nan,
                    False, 0.0)
    hs = RecorderHandshakes(rec, [(5, 7, 1, 2), (6, 8, 0, 1)], connect_cu=50)
    hs.write(0.25, 0, 0, rc.OK, math.nan)
    hs.write(1.0, 1, 3, rc.WS_435, 29.0)
    hs.write(2.0, 0, 0, rc.WS_CU, 10.0)
    rec.close(handshake_rid=40)
    a = rec.attempt_sink.read()
    assert a["request_id"].tolist() == [0, 1, 2, 40, 41, 42]
    assert a["source"].tolist()[3:] == [5, 6, 5] and a["method"].tolist()[3:] == [7, 8, 7]
    assert a["key"].tolist()[3:] == [1, 0, 1] and a["region"].tolist()[3:] == [2, 1, 2]
    assert a["attempt"].tolist()[3:] == [1, 1, 1]
    assert a["t_send"].tolist()[3:] == a["t_end"].tolist()[3:] == [0.25, 1.0, 2.0]
    assert a["outcome"].tolist()[3:] == [rc.OK, rc.WS_435, rc.WS_CU]
    # Only an admitted handshake reserved and settled the connect cost.
    assert a["cu_reserved"].tolist()[3:] == a["cu_settled"].tolist()[3:] == [50.0, 0.0, 0.0]
    assert np.isnan(a["retry_after_s"][3]) and a["retry_after_s"].tolist()[4:] == [29.0, 10.0]
    assert not a["phantom"].any() and (a["stream_wait_s"] == 0).all()
    # The chunks are those of rows recorded one after another: handshakes fill the last
    # HTTP chunk (a chunk of whole-second handshakes alone once broke the report's
    # timestamps, which pandas infers per chunk).
    assert seen == [4, 2]
    assert len(rec.request_sink.read()["request_id"]) == 0  # handshakes are not requests


def _times(src: StreamSource, duration: float) -> PublishTimes:
    return PublishTimes(src, np.random.default_rng(1), duration)


def test_block_times_and_lazy_counts():
    pt = _times(StreamSource(stream="new-blocks", kind="block", slot_s=5.0), 30.0)
    # Blocks at 5, 10, 15, 20, 25: an event at exactly `now` is not yet published.
    assert [pt.before(t) for t in (0.0, 5.0, 5.5, 10.0, 24.9)] == [0, 0, 1, 1, 4]
    assert pt.peek() == 25.0
    pt.pop()
    assert pt.count == 5 and pt.peek() == math.inf and pt.before(math.inf) == 5


def test_poisson_count_over_many_blocks():
    rate, duration = 20.0, 3_600.0
    pt = _times(StreamSource(stream="pending-txs", kind="poisson", rate=rate), duration)
    n = pt.before(duration)
    expected = rate * duration  # 72,000 over about 70 blocks of draws
    assert abs(n - expected) <= 4 * math.sqrt(expected)
    assert pt.peek() == math.inf


def _peek_pop(pt: PublishTimes, k: int) -> list[float]:
    """``k`` times the way the model consumes them: one peek and one pop each."""
    out = []
    for _ in range(k):
        t = pt.peek()
        if t == math.inf:
            break
        pt.pop()
        out.append(t)
    return out


def test_take_and_skip_consume_as_peek_and_pop_do():
    # Across block boundaries (1,024 draws a block), mixed with before(), up to the end.
    src = StreamSource(stream="pending-txs", kind="poisson", rate=20.0)
    one, bulk = _times(src, 400.0), _times(src, 400.0)
    for k in (3, 1021, 1, 2048, 5, 700, 10_000):
        assert bulk.take(k) == _peek_pop(one, k)
        assert bulk.count == one.count
        assert bulk.skip(k // 2 + 1) == len(_peek_pop(one, k // 2 + 1))
        assert bulk.count == one.count and bulk.peek() == one.peek()
        t = one.peek() + 0.5
        assert bulk.before(t) == one.before(t)
    assert bulk.peek() == one.peek() == math.inf
    assert bulk.take(3) == [] and bulk.skip(3) == 0 and bulk.count == one.count > 7_000


class CountingEnvironment(simpy.Environment):
    """Counts every event scheduled."""

    def __init__(self) -> None:
        super().__init__()
        self.scheduled = 0

    def schedule(self, event, priority=1, delay=0):
        self.scheduled += 1
        super().schedule(event, priority, delay)


def _run(client: dict, duration: float, ws=None):
    env = CountingEnvironment()
    model = Websockets(env, CULimiter(3_000), STREAMS_TIER, [StreamClient.model_validate(client)],
                       WebsocketSettings.model_validate(ws or {}), PRICING,
                       lambda key: key == "k", 1, duration)
    model.start()
    env.run()
    return env.scheduled, model.result()


def test_a_stream_nobody_is_connected_to_costs_no_event():
    # A key of no account: one handshake (401), never live; 72,000 pending-txs published.
    client = {"name": "c", "key": "stolen", "stream": "pending-txs",
              "reconnect": {"max_attempts": 1}}
    scheduled, r = _run(client, 3_600.0, ws={"pending_txs_rate": 20})
    assert r["events_published"]["pending-txs"] > 70_000
    assert r["events_lost"] == r["events_published"]["pending-txs"]
    assert scheduled <= 5  # the client's start and its one handshake


def test_an_unbilled_stream_costs_no_event_per_publish():
    client = {"name": "c", "key": "k", "stream": "new-blocks"}
    free = {"new_blocks_slot_s": 1}
    pricing_free = Pricing.model_validate(
        {**default_pricing_table(), "websocket": {**default_pricing_table()["websocket"],
                                                  "publish_cu": {"new-blocks": 0}}})
    env = CountingEnvironment()
    model = Websockets(env, CULimiter(3_000), STREAMS_TIER, [StreamClient.model_validate(client)],
                       WebsocketSettings.model_validate(free), pricing_free,
                       lambda key: key == "k", 1, 600.0)
    model.start()
    env.run()
    r = model.result()
    assert r["events_delivered"] == r["events_published"]["new-blocks"] == 599
    assert r["cu_publish"] == 0.0 and env.scheduled <= 5


def test_a_billed_stream_with_a_live_connection_has_one_event_per_publish():
    client = {"name": "c", "key": "k", "stream": "new-blocks"}
    scheduled, r = _run(client, 600.0, ws={"new_blocks_slot_s": 1})
    assert r["events_delivered"] == r["events_published"]["new-blocks"] == 599
    assert r["cu_publish"] == 599 * 5
    assert 599 <= scheduled <= 599 + 5


def test_a_block_at_the_instant_of_an_open_reaches_the_new_connection():
    # The window is full at 0: the handshake gets ws_cu_rejected with Retry-After 12 and
    # comes back at 12, the instant of the first block (blocks at 12 and 24 in 30 s).
    env = simpy.Environment()
    lim = CULimiter(3_000)
    assert lim.reserve(0.0, lim.available(0.0)) == 0
    client = {"name": "c", "key": "k", "stream": "new-blocks",
              "reconnect": {"policy": "retry-after", "jitter_s": 0}}
    model = Websockets(env, lim, STREAMS_TIER, [StreamClient.model_validate(client)],
                       WebsocketSettings(), PRICING, lambda key: key == "k", 1, 30.0)
    model.start()
    env.run()
    r = model.result()
    assert r["handshake_log"]["t"].tolist() == [0.0, 12.0]
    s = r["sessions"]
    assert (s["open_s"].tolist(), s["events_delivered"].tolist(),
            s["events_lost_before"].tolist()) == ([12.0], [2], [0])
    assert r["cu_publish"] == 2 * 5
