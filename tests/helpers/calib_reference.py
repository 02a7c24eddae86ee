"""An independent reference service for the calibration tests (no capsim code).

A fixed-window reserve -> settle CU service with hidden prices and a hidden window phase
on the UTC clock, answering a random bursty trace the way the spec describes: windows
of 12 s, a request admitted when the window's reserved CU plus its cost fits the budget,
a sizing request reserving base + cap price per item and settling at its reply to base +
gas price, refunds to the window it was reserved in while that window lasts
(``refund_to="origin-window"``) or to whichever window is current when it settles, the
counter never below zero (``"current-window"``); ``434``
with ``Retry-After = ceil(seconds to the next window)`` for HTTP, ``-32005`` for
JSON-RPC, ``434`` for a websocket handshake refused for CU, ``435`` at the slot cap.
Throttled requests are retried once after their Retry-After (JSON-RPC: after 1-3 s), as
a real client would; the retry is recorded like any attempt.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

T0_NS = 1_714_564_800_123_000_000  # 2024-05-01T12:00:00.123Z


@dataclass
class Hidden:
    budget: float = 8400.0          # the "All 3 APIs" window
    ws_cap: int = 3
    call: float = 23.0
    base: float = 7.0
    per_gas: float = 2e-5
    caps: dict | None = None        # gas cap per profile
    connect: float = 45.0
    phase_s: float = 7.37           # window starts at UTC seconds = phase + 12 k
    refund_to: str = "origin-window"

    def __post_init__(self):
        if self.caps is None:
            self.caps = {"fast": 1_000_000, "deep": 4_000_000}


def demand(rng: np.random.Generator, duration_s: float = 1200.0, burst_every_s: float = 9.0,
           burst_size=(60, 420), sizing_share=0.25, ws_share=0.03):
    """Bursty first attempts: (t_s, kind, items, profiles, gas, latency_s), time-sorted."""
    out = []
    t = 0.0
    while True:
        t += rng.exponential(burst_every_s)
        if t > duration_s:
            break
        n = int(rng.integers(*burst_size))
        times = t + np.sort(rng.uniform(0, rng.uniform(0.5, 4.0), n))
        for s in times:
            u = rng.random()
            lat = float(rng.uniform(0.02, 0.3))
            if u < ws_share:
                out.append((s, "ws", 0, (), 0, float(rng.uniform(1, 40))))
            elif u < ws_share + sizing_share:
                k = int(rng.integers(1, 5))
                prof = tuple(rng.choice(["fast", "deep"], k))
                out.append((s, "size", k, prof, None, lat))
            elif u < 0.97:
                out.append((s, "call", 0, (), 0, lat))
            else:
                out.append((s, "pending", 0, (), 0, lat))  # unbilled
    return out


def serve(h: Hidden, rng: np.random.Generator, first: list, *, record_cu: bool = True,
          retry_after: bool = True, keys: tuple[str, ...] = ("k" * 32,)) -> pd.DataFrame:
    """Answer ``first`` (plus the retries it causes); the canonical trace as a frame.
    ``keys``: the account's keys, one drawn at random per first attempt (a retry keeps
    its attempt's key)."""
    day0 = (T0_NS / 1e9)
    key_of = dict(enumerate([keys[0]] * len(first) if len(keys) == 1 else
                            [keys[int(j)] for j in rng.integers(0, len(keys), len(first))]))
    queue = [(t, i, kind, items, prof, gas, lat, 0) for i, (t, kind, items, prof, gas, lat)
             in enumerate(first)]
    heapq.heapify(queue)
    seq = len(queue)
    window, used = None, 0.0
    pending = []  # (t_settle, window, refund)
    slots = []  # slot end times
    rows = []
    while queue:
        t, _, kind, items, prof, gas, lat, tries = heapq.heappop(queue)
        utc = day0 + t
        w = math.floor((utc - h.phase_s) / 12.0)
        while pending and pending[0][0] <= t:
            ts, pw, refund = heapq.heappop(pending)
            if h.refund_to == "origin-window":
                if pw == window:
                    used = max(0.0, used - refund)
            else:
                ws = math.floor((day0 + ts - h.phase_s) / 12.0)
                if ws != window:
                    window, used = ws, 0.0
                used = max(0.0, used - refund)
        if w != window:
            window, used = w, 0.0
        next_start = (w + 1) * 12.0 + h.phase_s
        ra = max(1, math.ceil(next_start - utc))
        row = {"time_ns": T0_NS + round(t * 1e9), "key": key_of[_],
               "latency_ms": lat * 1e3}
        status, cu = 200, None
        if kind == "ws":
            row.update(api="streams", method="new-blocks")
            slots = [e for e in slots if e > t]
            if len(slots) >= h.ws_cap:
                status = 435
            elif used + h.connect > h.budget:
                status = 434
            else:
                used += h.connect
                slots.append(t + lat)
                status, cu = 101, h.connect
        elif kind == "size":
            gas_used = int(sum(rng.integers(0, h.caps[p] + 1) for p in prof)) if gas is None \
                else gas
            gas = gas_used
            reserve = sum(h.base + h.caps[p] * h.per_gas for p in prof)
            actual = items * h.base + gas_used * h.per_gas
            row.update(api="search", method="POST /v1/size", items=items,
                       profiles=",".join(prof), gas_used=gas_used)
            if used + reserve > h.budget:
                status = 434
            else:
                used += reserve
                heapq.heappush(pending, (t + lat, window, reserve - actual))
                cu = actual
        elif kind == "call":
            row.update(api="rpc", method="svc_call")
            if used + h.call > h.budget:
                status = -32005
            else:
                used += h.call
                cu = h.call
        else:
            row.update(api="rpc", method="svc_pendingBlock")
        row["status"] = status
        if record_cu and cu is not None:
            row["cu"] = cu
        if status == 434 and retry_after:
            row["retry_after_s"] = float(ra)
        rows.append(row)
        if status in (434, -32005, 435) and tries == 0:
            wait = ra if status == 434 else float(rng.uniform(1, 3))
            seq += 1
            key_of[seq] = key_of[_]
            heapq.heappush(queue, (t + wait + float(rng.uniform(0, 0.2)), seq, kind, items,
                                   prof, gas, lat, 1))
    return pd.DataFrame(rows)


def to_canonical(frame: pd.DataFrame, path) -> None:
    """Write ``frame`` as a CSV and import it into a canonical trace at ``path``."""
    from sim.traces.importers import import_trace

    csv = str(path) + ".csv"
    frame.to_csv(csv, index=False)
    import_trace(csv, path)


def mislabel(frame: pd.DataFrame, rng: np.random.Generator, n: int) -> tuple[pd.DataFrame,
                                                                              list[int]]:
    """A proxy's mislabelled rows: ``n`` svc_call answers with the opposite outcome (200
    <-> -32005), chosen at random; the frame and the rows changed."""
    calls = np.flatnonzero((frame["method"] == "svc_call").to_numpy())
    pick = sorted(int(i) for i in rng.choice(calls, n, replace=False))
    out = frame.copy()
    for i in pick:
        out.loc[out.index[i], "status"] = -32005 if out["status"].iloc[i] == 200 else 200
        if "cu" in out.columns:
            out.loc[out.index[i], "cu"] = np.nan
    return out, pick


def duplicate(frame: pd.DataFrame, rng: np.random.Generator, share: float) -> pd.DataFrame:
    """A log that wrote some answers twice: ``share`` of the rows, chosen at random,
    repeated in every field right after the first copy (the frame's order kept)."""
    n = len(frame)
    twice = rng.choice(n, int(round(share * n)), replace=False)
    pos = np.sort(np.concatenate([np.arange(n), twice]), kind="stable")
    return frame.iloc[pos].reset_index(drop=True)


def peaks(rng: np.random.Generator, windows: int = 20):
    """One company's peaks for two accounts: a burst every 12 s, at a random time, in
    which both send (big: 150-500 calls and 5-15 sizing requests over 1-3 s; small:
    100-300 calls), so that in most bursts one account runs out of its window while
    the other still has room. First attempts ``(t_s, kind, items, profiles, gas,
    latency_s)`` of each, time-sorted."""
    big, small = [], []
    for w in range(windows):
        t0 = 12.0 * w + float(rng.uniform(0, 9))
        span = float(rng.uniform(1, 3))
        for s in t0 + np.sort(rng.uniform(0, span, int(rng.integers(150, 500)))):
            big.append((float(s), "call", 0, (), 0, float(rng.uniform(0.02, 0.3))))
        for s in t0 + np.sort(rng.uniform(0, span, int(rng.integers(5, 15)))):
            k = int(rng.integers(1, 5))
            big.append((float(s), "size", k, tuple(rng.choice(["fast", "deep"], k)), None,
                        float(rng.uniform(0.02, 0.3))))
        for s in t0 + np.sort(rng.uniform(0, span, int(rng.integers(100, 300)))):
            small.append((float(s), "call", 0, (), 0, float(rng.uniform(0.02, 0.3))))
    return sorted(big), sorted(small)


def client_log(frame: pd.DataFrame, rng: np.random.Generator, skew_s: float,
               delay_s: tuple[float, float]) -> pd.DataFrame:
    """The log a client would have written of the service's answers in ``frame`` (whose
    ``time_ns`` are the service's decision times and ``latency_ms`` the time from the
    decision to the reply, the settlement): each request sent one network delay before
    its decision and its reply received one delay after, both drawn uniformly in
    ``delay_s``, times on a clock ``skew_s`` ahead of the service's, ``latency_ms`` the
    round trip the client saw, rows in the order the replies arrived."""
    out = frame.copy()
    n = len(out)
    up = rng.uniform(*delay_s, n)
    down = rng.uniform(*delay_s, n)
    out["time_ns"] = out["time_ns"] + np.round((skew_s - up) * 1e9).astype(np.int64)
    out["latency_ms"] = out["latency_ms"] + 1e3 * (up + down)
    arrival = out["time_ns"] + np.round(out["latency_ms"] * 1e6).astype(np.int64)
    return out.iloc[np.argsort(arrival.to_numpy(), kind="stable")].reset_index(drop=True)


SAMPLE_KEY = "3f9a2c71d04e4b8e9a6c15f2b7d08e43"


def sample_frame(seed: int = 2024, duration_s: float = 300.0) -> pd.DataFrame:
    """The shipped ``workloads/traces/calibration-sample.csv``: the reference with its
    default hidden prices and phase (``Hidden()``), ``cu`` and Retry-After recorded, one
    API key, ISO-8601 timestamps (regenerate with ``python tests/helpers/calib_reference.py``)."""
    rng = np.random.default_rng(seed)
    frame = serve(Hidden(), rng, demand(rng, duration_s=duration_s, burst_size=(40, 220)))
    frame = frame.sort_values("time_ns", kind="stable").reset_index(drop=True)
    ts = pd.to_datetime(frame["time_ns"], unit="ns", utc=True)
    out = pd.DataFrame({"timestamp": ts.dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")})
    for col in ("api", "method"):
        out[col] = frame[col]
    out["key"] = SAMPLE_KEY
    for col in ("items", "profiles", "gas_used", "cu", "status", "latency_ms",
                "retry_after_s"):
        out[col] = frame[col] if col in frame.columns else None
    out["latency_ms"] = out["latency_ms"].round(1)
    out["items"] = out["items"].astype("Int64")
    out["gas_used"] = out["gas_used"].astype("Int64")
    out["retry_after_s"] = out["retry_after_s"].astype("Int64")
    return out


def _as_csv(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` in the shipped samples' CSV layout (ISO-8601 timestamps, whole numbers
    where the column holds them)."""
    ts = pd.to_datetime(frame["time_ns"], unit="ns", utc=True)
    out = pd.DataFrame({"timestamp": ts.dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")})
    for col in ("api", "method", "key", "items", "profiles", "gas_used", "cu", "status",
                "latency_ms", "retry_after_s"):
        out[col] = frame[col] if col in frame.columns else None
    out["latency_ms"] = out["latency_ms"].round(1)
    for col in ("items", "gas_used", "retry_after_s"):
        out[col] = out[col].astype("Int64")
    return out


GATEWAY_KEYS = {"big": ("a1b2c3d4e5f60718293a4b5c6d7e8f90", "0f1e2d3c4b5a69788796a5b4c3d2e1f0"),
                "small": ("5e5e5e5e1a1a1a1a2b2b2b2b3c3c3c3c",)}
GATEWAY_TIERS = {"big": "All 3 APIs", "small": "RPC"}


def gateway_samples(seed: int = 36, windows: int = 10) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The shipped ``workloads/traces/gateway-sample.csv`` and ``client-sample.csv``: a
    company's gateway log of two accounts (``big`` on All 3 APIs, 8,400 CU a window, two
    keys; ``small`` on RPC, 4,000 CU, one key) answered by the reference with the default
    hidden prices, phase 3.3 s, no ``cu`` and no Retry-After recorded; and the same
    answers as the client logged them (a clock 1.9 s ahead, 5-40 ms each way, rows in
    completion order)."""
    rng = np.random.default_rng(seed)
    big_first, small_first = peaks(rng, windows)
    big = serve(Hidden(budget=8400.0, phase_s=3.3), rng, big_first, record_cu=False,
                retry_after=False, keys=GATEWAY_KEYS["big"])
    small = serve(Hidden(budget=4000.0, phase_s=3.3), rng, small_first, record_cu=False,
                  retry_after=False, keys=GATEWAY_KEYS["small"])
    gateway = pd.concat([big, small]).sort_values("time_ns", kind="stable")
    gateway = gateway.reset_index(drop=True)
    client = client_log(gateway, np.random.default_rng(seed + 1), 1.9, (0.005, 0.040))
    return _as_csv(gateway), _as_csv(client)


def gateway_accounts() -> str:
    """The accounts file of the gateway sample: its (made-up) keys as the log has them. A
    file may list pseudonyms instead, but those depend on the user's pseudonym secret."""
    parts = []
    for name, keys in GATEWAY_KEYS.items():
        listed = ", ".join(f'"{k}"' for k in keys)
        parts.append(f'[[account]]\nname = "{name}"\ntier = "{GATEWAY_TIERS[name]}"\n'
                     f"keys = [{listed}]\n")
    return ("# The accounts of workloads/traces/gateway-sample.csv and client-sample.csv\n"
            "# (written by python tests/helpers/calib_reference.py): which keys share which\n"
            "# account's budget, and each account's tier.\n\n" + "\n".join(parts))


if __name__ == "__main__":
    import sys

    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "workloads/traces")
    sample_frame().to_csv(folder / "calibration-sample.csv", index=False)
    gateway, client = gateway_samples()
    gateway.to_csv(folder / "gateway-sample.csv", index=False)
    client.to_csv(folder / "client-sample.csv", index=False)
    (folder / "gateway-accounts.toml").write_text(gateway_accounts(), encoding="utf-8")
    print(f"wrote calibration-sample.csv, gateway-sample.csv, client-sample.csv and "
          f"gateway-accounts.toml in {folder}")
