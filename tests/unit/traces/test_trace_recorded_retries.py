"""Recorded retries dropped by the replay (rule in the module doc of
:mod:`sim.traces.replay`), in memory and streamed: without a body hash, one refusal
explains at most the one row after it in its group; with a body hash, every row of the
same body within the window of a refusal is a retry."""

from __future__ import annotations

import numpy as np
import pytest
from crafted_traces import KEY, T0, S, write_trace

from sim.core.pseudonyms import pseudonym
from sim.traces.replay import ReplayStream, load_replay

OTHER_KEY = "a81c5e0f9b2d47c6813e7f0a5c9d2b64"
LIMITS = (434, -32005, 430, 435)


def kept_rows(path, *, row_groups_in_memory: int = 1 << 18, **kw):
    """``(dropped, [(t, key, method, items)] kept)`` by ``load_replay`` and by
    ``ReplayStream``, asserting they agree; ``t`` in seconds after ``T0``."""
    whole = load_replay(path, rng=np.random.default_rng(0), chunk_rows=row_groups_in_memory,
                        **kw)
    offset = (whole.t0_ns - T0) / S
    mem = [(round(float(t) + offset, 6), whole.key_categories[k], whole.method_categories[m],
            int(i)) for t, k, m, i in zip(whole.t_s, whole.key, whole.method, whole.items,
                                          strict=True)]
    stream = ReplayStream(path, rng=np.random.default_rng(0), **kw)
    chunks = list(stream.chunks())
    names = stream.names
    streamed = [(round(float(t) + (stream.t0_ns - T0) / S, 6), names["key"][k],
                 names["method"][m], int(i))
                for c in chunks for t, k, m, i in zip(c["t_s"], c["key"], c["method"],
                                                      c["items"], strict=True)]
    assert stream.dropped_retries == whole.dropped_retries
    assert streamed == mem
    return whole.dropped_retries, mem


def kept_times(path, **kw) -> list[float]:
    return [t for t, *_ in kept_rows(path, **kw)[1]]


def svc_calls(statuses: dict[float, int], times, **extra) -> list[dict]:
    """svc_call rows of one key without a body hash at ``times``; status 200 unless
    given in ``statuses``."""
    return [{"t": t, "status": statuses.get(t, 200), **extra} for t in times]


# rows per row group: one group, then groups cut everywhere; with one row a group, the
# stream's carry must know that the row after a refusal was admitted (a carry of the
# refused rows alone drops the rows after it)
SPLITS = [1000, 1, 2, 3]


@pytest.mark.parametrize("group_rows", SPLITS)
def test_without_a_hash_one_refusal_drops_only_the_next_row(tmp_path, group_rows):
    """Rows at 0..10 s, the one at 2 s refused: only the 3 s row is its retry.
    Fails on the old rule, which dropped every row from 3 s to 10 s (8 rows)."""
    p = write_trace(tmp_path / "t.parquet", svc_calls({2: 434}, range(11)),
                    chunk_rows=group_rows)
    dropped, rows = kept_rows(p, row_groups_in_memory=group_rows)
    assert dropped == 1
    assert [t for t, *_ in rows] == [0, 1, 2, 4, 5, 6, 7, 8, 9, 10]


@pytest.mark.parametrize("group_rows", SPLITS)
def test_a_chain_of_refused_retries_drops_each_retry(tmp_path, group_rows):
    """2 s refused, 3 s (its retry) refused too, 4 s admitted: 3 s and 4 s are retries,
    5 s on are new requests. Fails on the old rule (3 s to 10 s dropped)."""
    p = write_trace(tmp_path / "t.parquet", svc_calls({2: 434, 3: -32005}, range(11)),
                    chunk_rows=group_rows)
    assert kept_times(p, row_groups_in_memory=group_rows) == [0, 1, 2, 5, 6, 7, 8, 9, 10]


@pytest.mark.parametrize("group_rows", SPLITS)
def test_a_refusal_longer_ago_than_the_window_explains_nothing(tmp_path, group_rows):
    """A refusal at 0 s, the next row of its group 61 s later (window 60 s): nothing is
    dropped; at exactly 60 s it is a retry (the window is closed). Guards the window of
    the new rule (the old rule gives the same here)."""
    p = write_trace(tmp_path / "t.parquet", svc_calls({0: 430}, [0, 61, 62, 63]),
                    chunk_rows=group_rows)
    assert kept_times(p, row_groups_in_memory=group_rows) == [0, 61, 62, 63]
    p = write_trace(tmp_path / "u.parquet", svc_calls({0: 430}, [0, 60, 62, 63]),
                    chunk_rows=group_rows)
    assert kept_times(p, row_groups_in_memory=group_rows) == [0, 62, 63]


@pytest.mark.parametrize("group_rows", SPLITS)
def test_groups_without_a_hash_are_key_method_items_and_profiles(tmp_path, group_rows):
    """Rows of another key, method or item count between a refusal and its retry do not
    break the pair; they are not retries themselves. Interleaved: the refused svc_call at
    1 s, another key's call at 2 s, a sizing request at 3 s, the retry at 4 s, then
    another svc_call at 5 s. Old rule: 4 s and 5 s dropped."""
    rows = [{"t": 1, "status": 434}, {"t": 2, "key": OTHER_KEY},
            {"t": 3, "api": "search", "method": "POST /v1/size", "items": 1,
             "profiles": "fast"},
            {"t": 4}, {"t": 5}]
    p = write_trace(tmp_path / "t.parquet", rows, chunk_rows=group_rows)
    assert kept_times(p, row_groups_in_memory=group_rows) == [1, 2, 3, 5]


@pytest.mark.parametrize("group_rows", SPLITS)
def test_rows_with_a_hash_keep_the_window_rule(tmp_path, group_rows):
    """With a body hash, every row of the same body within 60 s after a refusal is a
    retry (the body identifies the request), refused retries renew the window, other
    bodies are untouched. By hand: body a refused at 0 s -> 1, 2, 3, 50 s dropped, 70 s
    kept; body b refused at 100 s and 140 s -> 140 s and 190 s dropped (50 s after the
    second refusal), 201 s kept; body c never refused."""
    a, b, c = "a" * 16, "b" * 16, "c" * 16
    rows = [{"t": 0, "status": 434, "body_hash": a}, {"t": 1, "body_hash": a},
            {"t": 1.5, "body_hash": c}, {"t": 2, "body_hash": a}, {"t": 3, "body_hash": a},
            {"t": 50, "body_hash": a}, {"t": 70, "body_hash": a},
            {"t": 100, "status": 435, "body_hash": b},
            {"t": 140, "status": -32005, "body_hash": b},
            {"t": 190, "body_hash": b}, {"t": 201, "body_hash": b}]
    p = write_trace(tmp_path / "t.parquet", rows, chunk_rows=group_rows)
    dropped, got = kept_rows(p, row_groups_in_memory=group_rows)
    assert dropped == 6
    assert [t for t, *_ in got] == [0, 1.5, 70, 100, 201]


def test_a_refusal_before_the_time_range_still_explains_the_first_row(tmp_path):
    """The row before the range counts as the row before: refused at 1 s, range from
    2 s: the 3 s row is dropped, 4 s kept (old rule: 3 s and 4 s dropped)."""
    p = write_trace(tmp_path / "t.parquet", svc_calls({1: 434}, [0, 1, 3, 4]), chunk_rows=1)
    assert kept_times(p, time_range_s=(2.0, 100.0)) == [4]


# -- against a brute-force search -------------------------------------------------------


def brute_force(rows, window_s: float) -> list[bool]:
    """Which rows are recorded retries, by the rule written out row by row."""
    order = sorted(range(len(rows)), key=lambda i: (rows[i]["t"], i))
    retry = [False] * len(rows)
    last_of: dict[tuple, int] = {}
    for pos, i in enumerate(order):
        r = rows[i]
        h = r.get("body_hash")
        if h is not None:
            earlier = [rows[j] for j in order[:pos]]
            retry[i] = any(e.get("body_hash") == h and e["key"] == r["key"]
                           and e["method"] == r["method"] and e["status"] in LIMITS
                           and r["t"] - e["t"] <= window_s for e in earlier)
        else:
            group = (r["key"], r["method"], r.get("items") or 0, r.get("profiles"))
            j = last_of.get(group)
            retry[i] = (j is not None and rows[j]["status"] in LIMITS
                        and r["t"] - rows[j]["t"] <= window_s)
            last_of[group] = i
    return retry


def random_rows(seed: int, n: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    t = np.round(np.sort(rng.uniform(0, 200, n)), 1)  # ties: file order decides
    if seed % 2:
        t = t + np.round(rng.uniform(0, 3, n), 1)  # not quite in time order
    rows = []
    for i in range(n):
        row = {"t": float(t[i]), "key": str(rng.choice([KEY, OTHER_KEY])),
               "method": str(rng.choice(["svc_call", "svc_pendingBlock"])),
               "status": int(rng.choice([200, 200, 200, 434, -32005, 430, 435])),
               "items": int(rng.integers(0, 2)) or None,
               "profiles": str(rng.choice(["fast", "deep"])) if rng.random() < 0.3 else None}
        if rng.random() < 0.4:
            row["body_hash"] = f"{int(rng.integers(0, 3)):016x}"
        rows.append(row)
    return rows


@pytest.mark.parametrize("seed", range(8))
def test_replay_matches_a_brute_force_search(tmp_path, seed):
    """Random traces mixing rows with and without a body hash, cut into small row
    groups: the dropped rows are those of the brute-force rule, in memory and streamed."""
    window = (60.0, 5.0)[seed % 2]
    rows = random_rows(seed, 300)
    p = write_trace(tmp_path / "t.parquet", rows, chunk_rows=(7, 37, 1000)[seed % 3])
    retry = brute_force(rows, window)
    assert 0 < sum(retry) < len(rows)
    dropped, got = kept_rows(p, retry_window_s=window, row_groups_in_memory=13)
    expected = sorted((round(r["t"], 6), pseudonym(r["key"]), r["method"],
                       r.get("items") or 0) for r, d in zip(rows, retry, strict=True) if not d)
    assert dropped == sum(retry)
    assert sorted(got) == expected
