"""The compiled engine against the SimPy model: identical attempt and request rows.

Both engines run every shipped scenario the compiled engine covers, and stress scenarios
written to reach each rule the two must agree on (phases, current-window refunds, UTC
midnight with a daily allowance, 430s from the connection cap and the open rate,
queueing for streams, HTTP/1.1 without reuse, unknown keys, retry budgets, pacing,
several accounts, closed-loop workers, and websockets: reconnect storms into 435 with
stale slots, publish exhaustion closing or dropping, open-loop sessions, two accounts,
handshakes and HTTP attempts competing for a window's last CU, ties at window
boundaries). Rows are compared as the spooled Parquet files, with pandas ``.equals``
(NaN equal to NaN, every bit of every float otherwise), and so are the limiter's
windows, the daily ledger, the connection figures, the websocket result and the run's
end. And ``capsim run`` writes the same report folder with either engine (but for the
line and the summary key that name the engine), the default scenario included.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scenarios import poisson_source, scenario_text

from sim.cli.main import main
from sim.compiled.choice import uncovered
from sim.config.resolved import load
from sim.core.vocabulary import AUTH_401, CONN_430, HTTP_434, OK, PAY_402, RPC_32005, WS_435, WS_CU
from sim.model.engine import TierRun
from sim.model.websockets import CLEAN, END, EXHAUSTED, UNCLEAN
from sim.workload.demand import build_plan

pytest.importorskip("numba")

from sim.compiled.engine import CompiledTierRun  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# every scenario shipped (an ``*-accounts.toml`` is a calibration's accounts file, not one)
SHIPPED = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "workloads").rglob("*.toml")
                 if not p.name.endswith("-accounts.toml"))

TINY = '[[custom_tiers]]\nname = "Tiny"\napis = ["rpc", "search"]\ncu_per_window = 600\n'
# a Search method that needs no HTTP/2 (an HTTP/1.1 client may call it)
SEARCH = '[methods."GET /v1/search"]\napi = "search"\n'


def _src(name, rate, *, key="k", client="default", mix=None, process="poisson"):
    text = poisson_source(rate, name=name, key=key).replace(
        "[[sources]]\n", f'[[sources]]\nclient = "{client}"\n')
    if process != "poisson":
        text = text.replace('process = "poisson"', f'process = "{process}"')
    if mix:
        text += "mix = { " + ", ".join(f'"{m}" = {w}' for m, w in mix.items()) + " }\n"
    return text


STRESS = {
    # windows on the UTC clock with a phase; refunds to the current window; sizing calls
    # reserved at the cap and settled lower (refunds), past a small budget
    "phase-current-window": dict(
        tiers=["Tiny"], duration=300, top=TINY,
        tables='[limiter]\nalignment = "utc"\nphase_s = 5.5\nrefund_to = "current-window"\n',
        sources=_src("s", 12, mix={"svc_call": 1.0, "POST /v1/size": 1.0})),
    # first-hit windows, origin-window refunds
    "first-hit": dict(
        tiers=["Tiny"], duration=300, top=TINY, tables='[limiter]\nalignment = "first-hit"\n',
        sources=_src("s", 10, mix={"svc_call": 1.0, "POST /v1/size": 1.0})),
    # across 00:00 UTC with a daily allowance spent before midnight: 402 until the new day
    "midnight-allowance": dict(
        tiers=["Daily"], duration=900,
        top=('start = 2026-03-02T23:55:00Z\n[[custom_tiers]]\nname = "Daily"\n'
             'apis = ["rpc"]\ncu_per_window = 4000\ndaily_allowance_cu = 20000\n'),
        tables='[limiter]\nalignment = "utc"\nphase_s = 3\n',
        sources=_src("s", 8)),
    # six UTC days at a low rate, an allowance spent each day: the day ledger's arrays grow
    "six-days": dict(
        tiers=["Daily"], duration="6d",
        top=('start = 2026-03-02T18:00:00Z\n[[custom_tiers]]\nname = "Daily"\n'
             'apis = ["rpc"]\ncu_per_window = 4000\ndaily_allowance_cu = 40000\n'),
        sources=_src("s", 0.05)),
    # an account cap of 3 connections and 2 opens a second, a client that opens a
    # connection per request (no reuse): 430s, retried
    "connection-cap-430": dict(
        tiers=["RPC"], duration=120,
        tables=('[http_limits]\nmax_active_connections = 3\nmax_new_connections_per_s = 2\n'
                '[clients.once]\nhttp = { reuse = false }\n'
                'retry = { policy = "exponential", base_s = 0.1, cap_s = 1.0, '
                'max_attempts = 5, retry_on = ["430", "-32005"] }\n'),
        sources=_src("s", 6, client="once")),
    # one connection of two streams opened slowly, short idle timeout: queueing, closes
    # and reopens; HTTP/1.1 (a stream per connection) to a Search method
    "queueing-http11": dict(
        tiers=["RPC + Search"], duration=300, top=SEARCH,
        tables=("[clients.default.http]\nmax_streams_per_conn = 2\nmax_connections = 1\n"
                "connect_rtts = 3\nidle_timeout_s = 0.5\n"
                '[clients.old]\nhttp_version = "1.1"\n'
                "http = { max_connections = 2, idle_timeout_s = 0.2 }\n"),
        sources=_src("s", 30) + _src("h", 8, client="old", mix={"GET /v1/search": 1.0})),
    # unknown key (401), HTTP/1.1 for RPC (421), a method outside the tier (402), fixed
    # and exponential retries, a retry budget
    "keys-protocols-budgets": dict(
        tiers=["RPC"], duration=120, keys=["k"],
        tables=('[clients.default]\nretry = { policy = "retry-after", budget_ratio = 0.1, '
                'budget_min_retries = 3 }\n'
                '[clients.fixed]\nretry = { policy = "fixed", delay_s = 0.5, '
                'max_attempts = 3 }\n'
                '[clients.old]\nhttp_version = "1.1"\n'),
        sources=(_src("a", 25) + _src("b", 10, client="fixed") + _src("c", 1, client="old")
                 + _src("d", 1, key="nobody") + _src("e", 1, mix={"POST /v1/size": 1.0}))),
    # closed-loop workers (exponential think times) past a small window beside an
    # open-loop source, queueing on one connection of two streams: retries while the
    # workers wait, requests drawn in chunks (256 at a time in the model, doubling in
    # the compiled engine: test_worker_chunks_at_their_caps too)
    "closed-loop": dict(
        tiers=["Tiny"], duration=1200, top=TINY,
        tables=("[clients.default.http]\nmax_streams_per_conn = 2\nmax_connections = 1\n"),
        sources=(_src("open", 1)
                 + '[[sources]]\nname = "w"\nkey = "k"\n'
                   'workers = { count = 2, think = { dist = "exponential", mean = 0.2 } }\n'
                   'mix = { svc_call = 1.0, "POST /v1/size" = 0.5 }\n')),
    # client pacing (a token bucket) and the window's 434 with Retry-After
    "pacing": dict(
        tiers=["Tiny"], duration=300, top=TINY + SEARCH,
        tables=('[clients.default]\npacing = { rate_cu_per_s = 40, burst_cu = 100 }\n'),
        sources=_src("s", 6, mix={"GET /v1/search": 1.0, "svc_call": 1.0})),
}


def _several_accounts() -> str:
    return ('name = "accts"\nduration = 300\ntiers = ["Tiny"]\n' + TINY
            + '[[accounts]]\nname = "a"\nkeys = ["ka"]\n'
            + '[[accounts]]\nname = "b"\nkeys = ["kb"]\ntier = "RPC"\n'
            + '[http_limits]\nmax_active_connections = 2\nmax_new_connections_per_s = 1\n'
            + '[clients.default]\n[clients.once]\nhttp = { reuse = false }\n'
            + _src("x", 12, key="ka") + _src("y", 3, key="kb", client="once")
            + _src("z", 2, key="nope", client="once"))


# Websockets: a custom tier with the Streams API and a small slot cap and budget.
WS_TIER = ('[[custom_tiers]]\nname = "WsTiny"\napis = ["rpc", "streams"]\n'
           'cu_per_window = {cu}\nws_cap = {cap}\n{extra}')


def _ws(name, *, cu, cap, duration=400, extra="", ws="", streams, sources=None, account=True):
    text = (f'name = "{name}"\nduration = {duration}\ntiers = ["WsTiny"]\n'
            + WS_TIER.format(cu=cu, cap=cap, extra=extra)
            + ('[account]\nkeys = ["k"]\n' if account else "") + ws + streams)
    return text + (_src("s", 8) if sources is None else sources)


def _stream(name, stream, *, key="k", **fields):
    text = f'[[streams]]\nname = "{name}"\nkey = "{key}"\nstream = "{stream}"\n'
    return text + "".join(f"{k} = {v}\n" for k, v in fields.items())


WS_STRESS = {
    # four connections on a cap of 2, unclean drops (and three drop-everything moments)
    # leaving stale slots 20-40 s: reconnects run into 435 and ws_cu_rejected
    "ws-reconnect-storm": _ws(
        "storm", cu=400, cap=2, ws="[ws]\nstale_expiry_s = { low = 20, high = 40 }\n",
        streams=(_stream("storm", "pending-txs", connections=4,
                         reconnect='{ policy = "retry-after", jitter_s = 0.5 }',
                         faults=('{ mean_time_between_drops_s = 40, clean_close_fraction = '
                                 '0.3, drop_all_at_s = [60, 120, 180] }'))
                 + _stream("heads", "new-blocks", reconnect='{ policy = "immediate" }',
                           faults="{ mean_time_between_drops_s = 50 }"))),
    # billed deliveries past a small budget beside HTTP: connections closed (exhausted)
    "ws-exhausted-close": _ws(
        "exhaust", cu=300, cap=4, ws='[ws]\npending_txs_rate = 12\non_exhausted = "close"\n'
        '[clients.default]\nretry = { policy = "retry-after", max_attempts = 3 }\n',
        streams=(_stream("mempool", "pending-txs", connections=3,
                         reconnect='{ policy = "exponential", base_s = 0.5, cap_s = 8 }')
                 + _stream("heads", "new-blocks", reconnect='{ policy = "fixed", delay_s = 1 }')),
        sources=_src("s", 4)),
    # the same with deliveries dropped: the streams stay open
    "ws-exhausted-drop": _ws(
        "drop", cu=300, cap=4, ws='[ws]\npending_txs_rate = 12\non_exhausted = "drop"\n',
        streams=_stream("mempool", "pending-txs", connections=3), sources=_src("s", 4)),
    # open-loop sessions (lost when refused) beside closed-loop sessions with gaps
    "ws-open-loop": _ws(
        "openloop", cu=500, cap=3, duration=600, ws="[ws]\nstale_expiry_s = 15\n",
        streams=(_stream("visitors", "pending-txs",
                         arrival='{ process = "poisson", rate = 0.3 }',
                         session='{ dist = "exponential", mean = 20 }',
                         faults="{ mean_time_between_drops_s = 30 }")
                 + _stream("sessions", "new-blocks", connections=2,
                           session='{ dist = "exponential", mean = 40 }',
                           gap='{ dist = "exponential", mean = 5 }',
                           reconnect='{ policy = "retry-after", max_attempts = 3 }')),
        sources=_src("s", 5)),
    # two accounts (one on a tier without RPC: HTTP 402), a client of no account (401)
    "ws-two-accounts": _ws(
        "twoacct", cu=300, cap=2, account=False,
        ws=('[[accounts]]\nname = "a"\nkeys = ["ka"]\n[[accounts]]\nname = "b"\n'
            'keys = ["kb"]\ntier = "Streams"\n[ws]\npending_txs_rate = 10\n'),
        streams=(_stream("a-mempool", "pending-txs", key="ka", connections=3,
                         reconnect='{ policy = "immediate" }',
                         faults="{ mean_time_between_drops_s = 60 }")
                 + _stream("b-mempool", "pending-txs", key="kb", connections=2,
                           faults="{ mean_time_between_drops_s = 80 }")
                 + _stream("nobody", "new-blocks", key="nope",
                           reconnect='{ policy = "fixed", delay_s = 5, max_attempts = 4 }')),
        sources=_src("x", 6, key="ka") + _src("y", 2, key="kb")),
    # no round trip: block arrivals, new-blocks events, drops and fixed 12 s reconnects
    # at whole multiples of 12 s, the window boundaries; handshakes and HTTP attempts
    # compete for a window's last CU under a daily allowance
    "ws-last-cu-ties": _ws(
        "lastcu", cu=120, cap=3, duration=360, extra="daily_allowance_cu = 9000\n",
        ws=('[[regions]]\nname = "here"\nrtt_ms = 0\n[ws]\non_exhausted = "drop"\n'
            '[clients.default]\nretry = { policy = "retry-after", max_attempts = 5 }\n'),
        streams=_stream("heads", "new-blocks", connections=3,
                        reconnect='{ policy = "fixed", delay_s = 12 }',
                        faults=("{ drop_all_at_s = [24, 48, 96, 120, 240], "
                                "clean_close_fraction = 1.0 }")),
        sources=('[[sources]]\nname = "blocks"\nkey = "k"\narrival = { process = "block", '
                 'per_block = 8, jitter_s = 0, offset_s = 0 }\n' + _src("s", 2))),
    # two UTC days and more: the daily allowance spent by handshakes, deliveries and a
    # trickle of HTTP, handshakes refused 402 until the next day; the day rows grow
    "ws-allowance-days": _ws(
        "days", cu=120, cap=3, duration=200_000, extra="daily_allowance_cu = 9000\n",
        ws='[[regions]]\nname = "here"\nrtt_ms = 0\n[ws]\non_exhausted = "drop"\n',
        streams=_stream("heads", "new-blocks", connections=3,
                        reconnect='{ policy = "fixed", delay_s = 12 }',
                        faults="{ mean_time_between_drops_s = 3000 }"),
        sources=_src("s", 0.05)),
}


def _texts() -> dict[str, str]:
    out = {name: scenario_text(**parts) for name, parts in STRESS.items()}
    out["several-accounts"] = _several_accounts()
    return out


def _spooled(engine, loaded, tier, prefix: Path):
    result = engine(build_plan(loaded), tier, spool=str(prefix)).run()
    return (result, pd.read_parquet(f"{prefix}-attempts.parquet"),
            pd.read_parquet(f"{prefix}-requests.parquet"))


def _same_values(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_values(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same_values(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    return a == b or (a != a and b != b)  # NaN equal to NaN


def assert_same_websockets(got, ref) -> None:
    """Every field of two websocket results equal (arrays of the same type, NaN = NaN)."""
    for name in ref.__dataclass_fields__:
        assert _same_values(getattr(got, name), getattr(ref, name)), name


def assert_same_runs(loaded, tmp_path: Path) -> list[pd.DataFrame]:
    """Both engines on every tier of ``loaded``: identical rows and figures."""
    attempts = []
    for i, tier in enumerate(loaded.tiers):
        ref, ref_a, ref_q = _spooled(TierRun, loaded, tier, tmp_path / f"simpy{i}")
        got, got_a, got_q = _spooled(CompiledTierRun, loaded, tier, tmp_path / f"comp{i}")
        assert len(ref_a) > 0, tier.name
        assert got_a.equals(ref_a), tier.name
        assert got_q.equals(ref_q), tier.name
        assert got.windows == ref.windows
        assert (got.daily_used, got.daily_exhausted_at) == (ref.daily_used,
                                                             ref.daily_exhausted_at)
        assert got.connections == ref.connections
        assert [a.connections for a in got.accounts] == [a.connections for a in ref.accounts]
        assert got.retry_budget_refusals == ref.retry_budget_refusals
        assert got.end_s == ref.end_s
        assert (got.websockets is None) == (ref.websockets is None)
        if ref.websockets is not None:
            assert_same_websockets(got.websockets, ref.websockets)
        for name in got.minutes:
            assert (got.minutes[name] == ref.minutes[name]).all()
        attempts.append(ref_a)
    return attempts


@pytest.mark.parametrize("path", [p for p in SHIPPED if not uncovered(load(ROOT / p))])
def test_shipped_scenarios_identical_rows(path, tmp_path):
    loaded = load(ROOT / path, ["duration=900"] if "indexer" in path else [])
    assert_same_runs(loaded, tmp_path)


def test_every_shipped_scenario_is_covered():
    # websockets included: streams-bot, live-agreement and the default scenario
    assert not [p for p in SHIPPED if uncovered(load(ROOT / p))]
    assert not uncovered(load(None))


def test_the_default_scenario_identical_rows(tmp_path):
    assert_same_runs(load(None, ["duration=900"]), tmp_path)


@pytest.mark.parametrize("name", list(WS_STRESS))
def test_websocket_stress_scenarios_identical_rows(name, tmp_path):
    path = tmp_path / f"{name}.toml"
    path.write_text(WS_STRESS[name], encoding="utf-8")
    loaded = load(path)
    assert not uncovered(loaded)
    (a,) = assert_same_runs(loaded, tmp_path)
    # each scenario reaches what it is named for (else the equality proves little)
    ws = TierRun(build_plan(loaded), loaded.tiers[0]).run().websockets
    hs = a[a["source"] >= len(loaded.scenario.sources)]
    http = a[a["source"] < len(loaded.scenario.sources)]
    kinds = np.bincount(ws.sessions["close_kind"], minlength=4)
    if name == "ws-reconnect-storm":
        assert ws.handshakes["435"] > 0 and kinds[UNCLEAN] > 0
        assert WS_CU in set(hs["outcome"].tolist())
    elif name == "ws-exhausted-close":
        assert kinds[EXHAUSTED] > 0 and ws.handshakes["ws_cu_rejected"] > 0
    elif name == "ws-exhausted-drop":
        assert kinds[EXHAUSTED] == 0 and ws.sessions["events_dropped"].sum() > 0
    elif name == "ws-open-loop":
        assert ws.handshakes["435"] > 0 and kinds[CLEAN] > 0
        assert (ws.clients["wanted_s"] > ws.clients["connected_s"]).all()
    elif name == "ws-two-accounts":
        assert ws.handshakes["401"] > 0 and len(ws.slots_by_account) == 2
        assert AUTH_401 in set(hs["outcome"].tolist())
        assert PAY_402 in set(http["outcome"].tolist())
    elif name == "ws-last-cu-ties":
        assert ws.handshakes["ws_cu_rejected"] > 0 and kinds[END] > 0
        assert WS_435 not in set(hs["outcome"].tolist())
        # handshakes and HTTP attempts at the very window boundaries (multiples of 12 s)
        assert ((hs["t_send"] % 12) == 0).sum() > 5 and ((http["t_send"] % 12) == 0).sum() > 50
        assert {OK, RPC_32005} <= set(http["outcome"].tolist())
    elif name == "ws-allowance-days":
        refused = hs[hs["outcome"] == PAY_402]
        assert set((refused["t_send"] // 86_400).tolist()) >= {0, 1, 2}
        assert ws.handshakes["ok"] > 3


@pytest.mark.parametrize("name", list(_texts()))
def test_stress_scenarios_identical_rows(name, tmp_path):
    path = tmp_path / f"{name}.toml"
    path.write_text(_texts()[name], encoding="utf-8")
    loaded = load(path)
    assert not uncovered(loaded)
    (a,) = assert_same_runs(loaded, tmp_path)
    # each scenario reaches what it is named for (else the equality proves little)
    out = set(a["outcome"].tolist())
    if name == "phase-current-window":
        assert HTTP_434 in out and (a["cu_reserved"] > a["cu_settled"]).any()
    elif name == "midnight-allowance":
        assert PAY_402 in out
        ok_after = a[(a["outcome"] == OK) & (a["t_send"] > 300)]
        assert len(ok_after) > 0  # admitted again after midnight
    elif name == "six-days":
        days = (a["t_send"] + 18 * 3600) // 86400
        assert set(days[a["outcome"] == PAY_402].tolist()) >= {1, 2, 3, 4, 5}
    elif name == "connection-cap-430":
        assert CONN_430 in out and (a["attempt"] > 1).any()
    elif name == "queueing-http11":
        assert (a["stream_wait_s"] > 0).mean() > 0.3
    elif name == "keys-protocols-budgets":
        assert {OK, RPC_32005} <= out and len(out) >= 5
    elif name == "closed-loop":
        workers = a["source"] == 1
        # more than one chunk of 256 requests per worker, and retries
        assert (workers & (a["attempt"] == 1)).sum() > 2 * 256
        assert (a["attempt"][workers] > 1).any()
        assert (a["stream_wait_s"] > 0).any()
    elif name == "pacing":
        assert HTTP_434 in out or OK in out
    elif name == "several-accounts":
        assert CONN_430 in out and len(set(a["key"].tolist())) == 3


@pytest.mark.parametrize("cap", [{"WORKER_CHUNK_MAX": 512},
                                 {"WORKER_CHUNK_CELLS": 8}])  # every chunk 256
def test_worker_chunks_at_their_caps(cap, tmp_path, monkeypatch):
    """A worker's chunks doubling to a cap of 512 and held there, and held at 256 where
    many workers would draw too much ahead: the model's rows either way."""
    from sim.compiled import engine

    for name, value in cap.items():
        monkeypatch.setattr(engine, name, value)
    path = tmp_path / "closed-loop.toml"
    path.write_text(_texts()["closed-loop"], encoding="utf-8")
    assert_same_runs(load(path), tmp_path)


@pytest.mark.parametrize("name", ["ws-exhausted-close", "ws-open-loop"])
def test_websocket_publish_times_in_small_blocks(name, tmp_path, monkeypatch):
    """The loop's copy of each stream's times handed over 3 at a time: chains that
    restart inside, at the end of and past a block give the same rows."""
    from sim.compiled import sessions

    monkeypatch.setattr(sessions, "TIMES_BLOCK", 3)
    path = tmp_path / f"{name}.toml"
    path.write_text(WS_STRESS[name], encoding="utf-8")
    assert_same_runs(load(path, ["duration=200"]), tmp_path)


def _report_files(folder: Path) -> dict[str, object]:
    """A report folder's files as comparable values: Parquet as frames, summary.json
    without its ``engine`` key, reports without the line naming the engine."""
    out = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = str(path.relative_to(folder))
        if path.suffix == ".parquet":
            out[rel] = pd.read_parquet(path)
        elif path.name == "summary.json":
            data = json.loads(path.read_text(encoding="utf-8"))
            data.pop("engine", None)
            out[rel] = data
        elif path.suffix in (".md", ".html"):
            out[rel] = path.read_text(encoding="utf-8").replace(
                ", compiled engine (the SimPy model's rows)", "")
        else:
            out[rel] = path.read_bytes()
    return out


def _same_folders(a: Path, b: Path) -> None:
    fa, fb = _report_files(a), _report_files(b)
    assert sorted(fa) == sorted(fb)
    for rel, value in fa.items():
        if isinstance(value, pd.DataFrame):
            assert value.equals(fb[rel]), rel
        else:
            assert value == fb[rel], rel


def _capsim_run(*args: str) -> None:
    done = CliRunner().invoke(main, ["run", "-q", *args], catch_exceptions=False)
    assert done.exit_code == 0, done.output


def test_capsim_run_writes_the_same_report_with_either_engine(tmp_path):
    scenario = str(ROOT / "workloads" / "mixed-bundle.toml")
    for engine in ("simpy", "compiled"):
        _capsim_run(scenario, "--set", "duration=600", "--engine", engine,
                    "--out", str(tmp_path / engine))
    summary = json.loads((tmp_path / "compiled" / "summary.json").read_text())
    assert summary["engine"] == "compiled"
    assert "engine" not in json.loads((tmp_path / "simpy" / "summary.json").read_text())
    _same_folders(tmp_path / "simpy", tmp_path / "compiled")


def test_capsim_run_of_the_default_scenario_is_the_same_with_either_engine(tmp_path):
    """The default scenario (websockets included): auto runs the compiled engine and
    writes what --engine simpy writes, but for the key and line naming the engine."""
    for engine in ("simpy", "auto"):
        _capsim_run("--set", "duration=600", "--engine", engine,
                    "--out", str(tmp_path / engine))
    summary = json.loads((tmp_path / "auto" / "summary.json").read_text())
    assert summary["engine"] == "compiled"
    _same_folders(tmp_path / "simpy", tmp_path / "auto")
