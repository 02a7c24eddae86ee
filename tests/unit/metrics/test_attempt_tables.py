"""``requests.parquet`` rows built as Arrow tables straight from the attempt columns
(:class:`sim.metrics.tables.AttemptTables`) are the rows pandas made of them before.

The reference is the pandas path the writer used until then,
``pa.Table.from_pandas(attempt_rows(...), preserve_index=False)``; the time column is also
checked against nanoseconds worked out by hand.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sim.config.resolved import load
from sim.metrics.tables import AttemptTables, attempt_rows
from sim.model import recorder as rc
from sim.runner.records import RequestsWriter
from sim.workload.demand import build_plan

TIERS = ["Tier A", "Tier B", "Tier C"]


@pytest.fixture(scope="module")
def plan():
    return build_plan(load(None, ["duration=60"]))


def _chunk(plan, n: int, seed: int = 1, whole_seconds: bool = False) -> dict[str, np.ndarray]:
    """n attempt rows with every code in range, some NaN Retry-After, some phantoms."""
    rng = np.random.default_rng(seed)
    t = plan.tables
    dtypes = dict(rc.ATTEMPT_COLUMNS)
    t_send = np.sort(rng.integers(0, 600, n).astype(float) if whole_seconds
                     else rng.uniform(0, 600, n))
    cols = {
        "request_id": np.arange(n), "attempt": rng.integers(0, 3, n),
        "source": rng.integers(0, len(t.sources), n),
        "method": rng.integers(0, len(t.methods), n),
        "key": rng.integers(0, len(t.key_pseudonyms), n),
        "region": rng.integers(0, len(t.regions), n),
        "t_send": t_send, "t_end": t_send + rng.uniform(0, 2, n),
        "outcome": rng.integers(0, len(rc.OUTCOMES), n),
        "cu_reserved": rng.integers(0, 100, n).astype(float),
        "cu_settled": rng.integers(0, 100, n).astype(float),
        "retry_after_s": np.where(rng.random(n) < 0.5, np.nan, rng.uniform(0, 12, n)),
        "phantom": rng.random(n) < 0.1, "stream_wait_s": rng.uniform(0, 0.1, n),
    }
    return {name: np.asarray(cols[name]).astype(dtypes[name]) for name in dtypes}


def test_a_table_is_what_pandas_made_of_the_rows_metadata_included(plan):
    tables = AttemptTables(plan, TIERS)
    for tier, seed in ((0, 1), (2, 2)):
        a = _chunk(plan, 500, seed)
        want = pa.Table.from_pandas(attempt_rows(a, tier, TIERS, plan), preserve_index=False)
        got = tables.table(a, tier)
        assert got.equals(want)
        assert got.schema.equals(want.schema, check_metadata=True)
        assert got.column("retry_after_s").null_count == np.isnan(a["retry_after_s"]).sum() > 0


def test_time_is_the_scenario_start_plus_the_send_time_in_nanoseconds(plan):
    a = _chunk(plan, 3)
    a["t_send"] = np.array([0.0, 1.5, 0.1])
    got = AttemptTables(plan, TIERS).table(a, 0).column("time")
    start = plan.scenario.start
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    start_ns = (start - epoch) // dt.timedelta(microseconds=1) * 1000
    assert got.type == pa.timestamp("ns", tz="UTC")
    assert got.cast(pa.int64()).to_pylist() == [start_ns, start_ns + 1_500_000_000,
                                                 start_ns + 100_000_000]


def test_a_file_of_whole_second_send_times_keeps_nanoseconds(plan, tmp_path):
    """Fails on the pandas path, which gave a chunk whose send times are all whole seconds
    a time column in microseconds (and could not join it to a chunk in nanoseconds)."""

    class Sink:
        def __init__(self, chunks):
            self._chunks = chunks

        def chunks(self):
            yield from self._chunks

    class Result:
        def __init__(self, chunks):
            self.attempt_sink = Sink(chunks)

    fractional, whole = _chunk(plan, 50, 1), _chunk(plan, 50, 2, whole_seconds=True)
    with RequestsWriter(tmp_path / "r.parquet", plan, TIERS) as w:
        w.add_tier(0, Result([fractional, whole]))
        assert w.close() == 100
    table = pq.read_table(tmp_path / "r.parquet")
    assert table.schema.field("time").type == pa.timestamp("ns", tz="UTC")
    times = pd.read_parquet(tmp_path / "r.parquet")["time"]
    assert str(times.dtype) == "datetime64[ns, UTC]"
    want = pd.Timestamp(plan.scenario.start) + pd.to_timedelta(whole["t_send"], unit="s")
    assert (times.iloc[50:].to_numpy() == want.as_unit("ns").to_numpy()).all()
