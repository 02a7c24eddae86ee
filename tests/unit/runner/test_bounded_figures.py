"""A tier's figures come from its spools chunk by chunk, in bounded memory: with spool
chunks of 300 rows and budgets so small that every order-statistics column spills many
sorted runs to disk and merges them, a run's summary and latency table are those of the
in-memory path on 32k-row chunks, bit for bit (the sums are exact, so the chunks cannot
move them)."""

from __future__ import annotations

import numpy as np
import pytest

import sim
from sim.metrics import stream_stats
from sim.model import recorder as rc

# searcher on one connection of 4 streams: its bursts queue for HTTP/2 streams, so the
# stream-wait column has many values above zero for its percentile too
QUEUED = ["clients.bot.http.max_connections=1", "clients.bot.http.max_streams_per_conn=4"]
RUNS = [(None, ["RPC + Search", "Advanced bundle"], []),
        ("workloads/searcher.toml", ["Search", "Professional bundle"], QUEUED),
        # [[accounts]]: the per-account figures from the same kind of pass
        ("workloads/two-accounts.toml", None, [])]


def _run(scenario, tiers, overrides):
    return sim.run(scenario, tiers=tiers, overrides=["duration=240", *overrides],
                   records="windows")


class _SmallChunks(rc.Recorder):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, chunk_rows=300, **kwargs)


@pytest.mark.parametrize(("scenario", "tiers", "overrides"), RUNS)
def test_spilled_figures_are_the_in_memory_figures(scenario, tiers, overrides, monkeypatch):
    in_memory = _run(scenario, tiers, overrides)
    monkeypatch.setattr(stream_stats, "RUN_VALUES", 97)
    monkeypatch.setattr(stream_stats, "MERGE_VALUES", 61)
    monkeypatch.setattr(stream_stats, "_MIN_BLOCK", 5)
    monkeypatch.setattr(rc, "Recorder", _SmallChunks)
    spills = []
    spill = stream_stats.OrderStatistics._spill
    monkeypatch.setattr(stream_stats.OrderStatistics, "_spill",
                        lambda self: (spills.append(self), spill(self)))
    spilled = _run(scenario, tiers, overrides)
    monkeypatch.undo()
    assert len(spills) > 20  # many sorted runs went to disk
    assert spilled.summary.to_json() == in_memory.summary.to_json()
    assert spilled.latencies.keys() == in_memory.latencies.keys()
    for name, table in in_memory.latencies.items():
        np.testing.assert_array_equal(spilled.latencies[name], table)
    waited = [t.connections.attempts_waiting_for_stream for t in in_memory.summary.tiers]
    if overrides:
        assert min(waited) > 97 * 10  # the stream-wait column spilled too
