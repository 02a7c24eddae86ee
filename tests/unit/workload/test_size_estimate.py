"""The run-size guard: estimates from closed forms, refused before any demand is drawn."""

from __future__ import annotations

import math

import numpy as np
import pytest
from click.testing import CliRunner
from scenarios import poisson_source, scenario_text, write_scenario

from sim.cli.main import main
from sim.config.resolved import load, validate
from sim.config.tiers import find_tier
from sim.core.errors import CapsimError
from sim.runner import run as runner
from sim.workload import demand, size_estimate
from sim.workload.size_estimate import SAFETY_FRACTION, check, estimate

BIG = scenario_text(name="big", duration="1h", tiers=None, keys=["k1"],
                    sources=poisson_source("1e5", name="a", key="k1"))
GIB = 2**30


def _never_draw(monkeypatch):
    def refuse(*_args, **_kwargs):
        raise AssertionError("demand was drawn")
    monkeypatch.setattr(demand, "build_plan", refuse)
    monkeypatch.setattr(runner, "build_plan", refuse)


@pytest.mark.parametrize("rate, shown", [("1e5", "3.6e08"), ("1e6", "3.6e09"),
                                         ("1e9", "3.6e12")])
@pytest.mark.parametrize("command", ["run", "validate"])
def test_a_run_too_large_for_the_machine_stops_before_drawing(tmp_path, monkeypatch, rate,
                                                               shown, command):
    monkeypatch.setattr(size_estimate, "available_memory_bytes", lambda: 16 * GIB)
    _never_draw(monkeypatch)
    path = write_scenario(tmp_path, BIG, filename="big.toml")
    out = tmp_path / "out"
    args = [command, str(path), "--set", f"sources[0].arrival.rate={rate}"]
    if command == "run":
        args += ["--out", str(out), "-q"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    msg = result.output
    assert msg.startswith(f"capsim: error: {path}: run too large for this machine"), msg
    assert f"about {shown} requests per tier" in msg and "16.0 GiB available" in msg
    for advice in ("duration", "rates", "--tier", "--max-requests"):
        assert advice in msg
    assert not out.exists()


def test_a_billion_per_second_is_refused_on_any_machine(tmp_path):
    path = write_scenario(tmp_path, BIG.replace("1e5", "1e9"), filename="big.toml")
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2 and "run too large for this machine" in result.output


def test_the_default_scenario_is_unaffected():
    loaded = load(None)
    size, warnings = check(loaded)
    assert size.bytes_needed() < SAFETY_FRACTION * 4 * GIB  # fits a small laptop
    assert warnings == []
    result = CliRunner().invoke(main, ["validate", "sim/data/default.toml"])
    assert result.exit_code == 0 and "requests per tier" in result.output


def test_max_requests_from_the_option_or_the_scenario(tmp_path, monkeypatch):
    _never_draw(monkeypatch)
    path = tmp_path / "s.toml"
    path.write_text(BIG.replace("1e5", "10").replace('"1h"', "100"))  # 1,000 requests
    run = CliRunner().invoke
    assert run(main, ["validate", str(path), "--max-requests", "1001"]).exit_code == 0
    result = run(main, ["validate", str(path), "--max-requests", "999"])
    assert result.exit_code == 2 and "over the limit of 999" in result.output, result.output
    assert "about 1,000 requests per tier" in result.output
    result = run(main, ["validate", str(path), "--set", "max_requests=500"])
    assert result.exit_code == 2 and "over the limit of 500" in result.output
    assert run(main, ["validate", str(path), "--set", "max_requests=500",
                      "--max-requests", "2000"]).exit_code == 0


def _loaded(sources: str, extra: str = "", duration: float = 3600.0, tiers='["RPC"]'):
    import tomllib
    raw = tomllib.loads(f'name = "t"\nduration = {duration}\ntiers = {tiers}\n'
                        f'[account]\nkeys = ["k1"]\n{extra}\n{sources}')
    return validate(raw, "test")


def test_open_loop_counts_are_the_processes_own_means():
    loaded = _loaded("""
[[sources]]
name = "p"
key = "k1"
arrival = { process = "poisson", rate = 2.5 }
[[sources]]
name = "c"
key = "k1"
arrival = { process = "constant", rate = 0.3 }
[[sources]]
name = "b"
key = "k1"
arrival = { process = "block", per_block = 7, slot_s = 12, miss_probability = 0.25 }
""", duration=3600)
    got = {s.name: s.requests for s in estimate(loaded).sources}
    assert got["p"] == pytest.approx(2.5 * 3600)
    assert got["c"] == 1080  # ceil(0.3 * 3600) arrivals at k / 0.3 < 3600
    assert got["b"] == pytest.approx(7 * 0.75 * 300)  # 300 slots at 0, 12, ..., 3588


def test_a_block_process_with_tiny_slots_is_estimated_without_enumerating_them():
    loaded = _loaded("""
[[sources]]
name = "b"
key = "k1"
arrival = { process = "block", per_block = 1, slot_s = 1e-6 }
""", duration=86400)
    (src,) = estimate(loaded).sources
    assert src.requests == pytest.approx(86400 / 1e-6, rel=1e-9)


def test_closed_loop_workers_are_bounded_by_their_cycle_and_match_a_run():
    """rtt 0.1 s + service 0.05 s + think 0.35 s: a 0.5 s cycle, 4 workers, 600 s,
    so about 4 * 600 / 0.5 = 4,800 requests on a tier that never throttles."""
    loaded = _loaded("""
[[regions]]
name = "r"
rtt_ms = 100
[methods.svc_call]
service_time = { dist = "constant", value = 0.05 }
[[sources]]
name = "w"
key = "k1"
workers = { count = 4, think = { dist = "constant", value = 0.35 } }
""", duration=600, tiers='["Advanced bundle"]')
    (src,) = estimate(loaded).sources
    assert src.requests == pytest.approx(4 * (600 / 0.5 + 1))
    from sim.model.engine import TierRun
    result = TierRun(demand.build_plan(loaded), find_tier("Advanced bundle")).run()
    sent = len(result.requests["request_id"])
    assert sent <= src.requests and sent >= 0.98 * src.requests, (sent, src.requests)


def test_workers_that_never_advance_the_clock_are_refused():
    loaded = _loaded("""
[[regions]]
name = "r"
rtt_ms = 0
[methods.svc_call]
service_time = { dist = "constant", value = 0 }
[[sources]]
name = "w"
key = "k1"
workers = { count = 1, think = { dist = "constant", value = 0 } }
""")
    with pytest.raises(CapsimError, match="never advance the clock"):
        estimate(loaded)


def test_streams_count_handshakes_and_deliveries():
    """new-blocks every 12 s: 300 events in 3,600 s, each delivered to 5 connections."""
    loaded = _loaded("""
[[streams]]
name = "ws"
key = "k1"
stream = "new-blocks"
connections = 5
faults = { mean_time_between_drops_s = 600 }
""")
    (src,) = estimate(loaded).sources
    assert src.kind == "streams"
    assert src.requests == pytest.approx(5 * (1 + 3600 / 600))
    assert src.deliveries == pytest.approx(5 * 3600 / 12)


POISSON_10 = """
[[sources]]
name = "p"
key = "k1"
arrival = { process = "poisson", rate = 10 }
"""


def test_retries_that_might_not_fit_give_a_warning(monkeypatch):
    loaded = _loaded(POISSON_10)
    size = estimate(loaded)
    one, worst = size.bytes_needed(), size.bytes_needed(retries=True)
    assert worst > one
    available = math.ceil((one + worst) / 2 / SAFETY_FRACTION)
    _, warnings = check(loaded, available=available)
    assert len(warnings) == 1 and "with every retry" in warnings[0]
    with pytest.raises(CapsimError, match="run too large for this machine"):
        check(loaded, available=math.floor(one / SAFETY_FRACTION) - 1)


def test_available_memory_is_read_from_the_system():
    avail = size_estimate.available_memory_bytes()
    assert avail is None or avail > 0


def _trace_scenario(tmp_path, t, chunk_rows, k=1.0):
    from crafted_traces import write_trace

    trace = write_trace(tmp_path / "t.parquet", [{"t": float(x)} for x in t],
                        chunk_rows=chunk_rows)
    raw = {"name": "replay", "duration": 3600, "tiers": ["RPC"], "account": {"keys": ["k"]},
           "sources": [{"name": "rec", "key": "k", "trace": str(trace),
                        "replay": {"load_multiplier": k}}]}
    return validate(raw, "test")


@pytest.mark.parametrize("k", [1.0, 2.5])
def test_a_trace_in_time_order_counts_one_row_group_in_memory(tmp_path, k):
    loaded = _trace_scenario(tmp_path, range(1000), chunk_rows=100, k=k)  # 10 groups
    size = estimate(loaded)
    (src,) = size.sources
    assert (src.requests, src.held) == (1000 * k, 100 * math.ceil(k))
    need = size_estimate.BASE_BYTES + 100 * math.ceil(k) * size_estimate.BYTES_PER_TRACE_ROW \
        + 1000 * k * (size_estimate.BYTES_PER_ATTEMPT + size_estimate.BYTES_PER_ATTEMPT_STREAMED)
    assert size.bytes_needed() == pytest.approx(need)
    assert "trace 'rec' is read a row group at a time" in size.describe()
    # room for a row group but not for the whole trace at 500 bytes a row: it runs
    whole = need + (1000 * k - 100 * math.ceil(k)) * size_estimate.BYTES_PER_TRACE_ROW
    check(loaded, available=int((need + whole) / 2 / SAFETY_FRACTION))


def test_a_trace_out_of_order_counts_the_row_groups_that_overlap(tmp_path):
    t = np.random.default_rng(3).permutation(1000)  # every group spans the whole trace
    size = estimate(_trace_scenario(tmp_path, t, chunk_rows=100))
    assert size.sources[0].held == 1000
    # the first two groups overlap the third only: 200 rows at once
    t = np.concatenate([np.arange(0, 100), np.arange(200, 300), np.arange(150, 250),
                        np.arange(400, 500)])
    assert estimate(_trace_scenario(tmp_path, t, chunk_rows=100)).sources[0].held == 200


def test_a_too_large_trace_says_what_it_holds(tmp_path):
    loaded = _trace_scenario(tmp_path, range(1000), chunk_rows=100)
    with pytest.raises(CapsimError, match="read a row group at a time, counted as 100 row"):
        check(loaded, available=size_estimate.BASE_BYTES)


def test_spools_need_a_row_per_attempt_and_per_request_on_every_tier():
    loaded = _loaded(POISSON_10)
    size = estimate(loaded)
    (src,) = size.sources
    # 10 per second for the scenario's duration: every tier's spool holds a row per
    # attempt (one per request without retries) and a row per logical request
    rows = 10 * loaded.scenario.duration_s
    assert src.requests == pytest.approx(rows)
    per_row = size_estimate.SPOOL_BYTES_PER_ROW
    assert size.disk_bytes_needed() == pytest.approx(len(loaded.tiers) * 2 * rows * per_row)
    worst = len(loaded.tiers) * (src.max_attempts + 1) * rows * per_row
    assert size.disk_bytes_needed(retries=True) == pytest.approx(worst)


def test_a_run_whose_spools_would_fill_the_disk_is_refused(monkeypatch):
    loaded = _loaded(POISSON_10)
    size = estimate(loaded)
    one, worst = size.disk_bytes_needed(), size.disk_bytes_needed(retries=True)
    plenty = 64 * GIB
    _, warnings = check(loaded, available=plenty,
                        disk_free=math.ceil((one + worst) / 2 / SAFETY_FRACTION))
    assert len(warnings) == 1 and "spools could need" in warnings[0]
    with pytest.raises(CapsimError, match="too large for this machine's temporary disk") as e:
        check(loaded, available=plenty, disk_free=math.floor(one / SAFETY_FRACTION) - 1)
    assert "TMPDIR" in str(e.value) and size_estimate.free_spool_disk()[0] in str(e.value)


def test_the_cli_refuses_a_run_for_the_disk_before_drawing(tmp_path, monkeypatch):
    monkeypatch.setattr(size_estimate, "available_memory_bytes", lambda: 64 * GIB)
    monkeypatch.setattr(size_estimate, "free_spool_disk", lambda: ("/spool", GIB))
    _never_draw(monkeypatch)
    # 3.6e6 requests per tier on 9 tiers: 1.7 GiB of spool rows (2 x 28 bytes a request
    # a tier) and 0.1 GiB of demand drawn once (32 bytes a request), 0.1 GiB of memory
    path = write_scenario(tmp_path, BIG.replace("1e5", "1e3"), filename="big.toml")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["run", str(path), "--out", str(out), "-q"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.output.startswith(
        f"capsim: error: {path}: run too large for this machine's temporary disk")
    assert "needing about 1.8 GiB in /spool; 1.0 GiB free" in result.output
    assert not out.exists()


def test_rows_not_kept_need_one_tier_of_spool_per_worker():
    """``keep_rows=False`` (``capsim run --records windows|none``): a tier's rows go once
    it is summarised, so the disk holds one tier's at a time per worker instead of every
    tier's; the demand spool, drawn once for all tiers, is the same either way."""
    loaded = _loaded(POISSON_10, tiers='["RPC", "Search", "Streams", "All 3 APIs", '
                                       '"Professional bundle"]')
    tiers = len(loaded.tiers)
    need = {(kept, jobs): check(loaded, jobs=jobs, keep_rows=kept)[0].disk_bytes_needed()
            for kept in (True, False) for jobs in (1, 2, 99)}
    per_tier = need[False, 2] - need[False, 1]
    assert per_tier > 0
    assert need[True, 1] - need[False, 1] == pytest.approx((tiers - 1) * per_tier)
    assert need[True, 2] == need[True, 1]  # every tier's kept, whatever the workers
    assert need[False, 99] == pytest.approx(need[True, 1])  # a worker for every tier


def test_the_cli_lets_a_run_through_when_its_report_takes_no_rows(tmp_path, monkeypatch):
    """The run refused above for the disk (1.8 GiB of spools, 1 GiB free) passes the
    guard with ``--records windows`` (one tier's rows at a time): it goes on to draw."""
    monkeypatch.setattr(size_estimate, "available_memory_bytes", lambda: 64 * GIB)
    monkeypatch.setattr(size_estimate, "free_spool_disk", lambda: ("/spool", GIB))
    _never_draw(monkeypatch)
    path = write_scenario(tmp_path, BIG.replace("1e5", "1e3"), filename="big.toml")
    args = ["run", str(path), "--out", str(tmp_path / "out"), "-q"]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2 and "temporary disk" in refused.output
    through = CliRunner().invoke(main, [*args, "--records", "windows"])
    assert isinstance(through.exception, AssertionError)
    assert str(through.exception) == "demand was drawn"
    # a remote cluster may run every tier at once into the shared TMPDIR: all counted
    remote = CliRunner().invoke(main, [*args, "--records", "windows",
                                       "--dask-scheduler", "tcp://127.0.0.1:9"])
    assert remote.exit_code == 2 and "temporary disk" in remote.output


def test_the_summary_s_memory_stops_growing_where_its_columns_spill():
    from sim.metrics import stream_stats

    # the summary's two order-statistics columns hold at most RUN_VALUES values each
    assert size_estimate.SUMMARY_ATTEMPTS_IN_MEMORY == 2 * stream_stats.RUN_VALUES
    cap = size_estimate.SUMMARY_ATTEMPTS_IN_MEMORY

    def need(rate):
        size = estimate(_loaded(f"""
[[sources]]
name = "p"
key = "k1"
arrival = {{ process = "poisson", rate = {rate} }}
""", extra='[clients.default]\nretry = {policy = "none"}\nhttp = {max_connections = 128}\n'))
        assert size.queued == 0  # 4,096 streams: nothing waits at these rates
        return size.bytes_needed()

    # one hour: 3,600 x rate requests, one attempt each
    small, big, bigger = need(100), need(3_000), need(30_000)  # 0.36 M, 10.8 M, 108 M
    per = size_estimate.BYTES_PER_ATTEMPT + size_estimate.BYTES_PER_ATTEMPT_STREAMED
    assert small - size_estimate.BASE_BYTES == pytest.approx(360_000 * per)
    # past the cap only the streamed bytes grow
    assert bigger - big == pytest.approx(97_200_000 * size_estimate.BYTES_PER_ATTEMPT_STREAMED)
    assert big - size_estimate.BASE_BYTES == pytest.approx(
        cap * size_estimate.BYTES_PER_ATTEMPT
        + 10_800_000 * size_estimate.BYTES_PER_ATTEMPT_STREAMED)
