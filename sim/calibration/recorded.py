"""A canonical trace as the calibration reads it: numpy columns, outcome classes, and
which rows can be replayed.

The outcome classes (:data:`CLASSES`) are what a client can tell apart and what the CU
limiter decides: ``ok`` (200, 101), ``throttled`` (``434``, ``-32005``, a handshake
refused for CU), ``402``, ``435`` and ``other`` (401, 421, 430, 404, ...: refused before
the CU window is asked, so the calibration neither replays nor compares them).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.vocabulary import OUTCOMES, RPC, SIZE_METHOD, THROTTLES, status_outcome
from ..traces.schema import WEBSOCKET_METHODS, open_trace

CLASSES = ("ok", "throttled", "402", "435", "other")
"""Outcome classes, in the order of the confusion matrix."""


KIND_UNBILLED, KIND_RPC, KIND_SIZE, KIND_WS = 0, 1, 2, 3


def class_of(outcome: int) -> str:
    """The class of an outcome (an index into :data:`~sim.core.vocabulary.OUTCOMES`)."""
    if outcome in THROTTLES:
        return "throttled"
    name = OUTCOMES[outcome]
    return name if name in CLASSES else "other"


def outcome_class(status: float | int | None) -> str | None:
    """The class of a recorded status (HTTP status or JSON-RPC code); None if unrecorded."""
    if status is None or status != status:
        return None
    name = status_outcome(int(status))
    return "other" if name is None else class_of(OUTCOMES.index(name))


@dataclass(frozen=True)
class Recorded:
    """The rows of a trace in time order (``order`` maps back to the file's rows).

    ``t_s`` is seconds after ``base_ns`` (the first request), ``api`` each attempt's API,
    ``kind`` one of the ``KIND_*`` codes, ``observed`` the outcome class (``""`` when no
    status was recorded), ``unusable`` a reason per row (``""`` when the row is compared),
    ``key`` each row's key pseudonym.
    """

    base_ns: int
    order: np.ndarray
    t_s: np.ndarray
    method: np.ndarray
    api: np.ndarray
    kind: np.ndarray
    items: np.ndarray
    profiles: list[tuple[str, ...]]
    gas_used: np.ndarray
    cu: np.ndarray
    status: np.ndarray
    latency_s: np.ndarray
    retry_after_s: np.ndarray
    observed: np.ndarray
    unusable: np.ndarray
    key: np.ndarray | None = None     # each row's key pseudonym (None: not read)

    def __len__(self) -> int:
        return len(self.t_s)

    @property
    def utc_day_offset_s(self) -> float:
        """Seconds after 00:00 UTC at the first request."""
        return (self.base_ns % 86_400_000_000_000) / 1e9

    @property
    def compared(self) -> np.ndarray:
        """Rows whose predicted and observed outcomes are compared."""
        return self.unusable == ""


def read_trace(trace: str | os.PathLike | pd.DataFrame) -> pd.DataFrame:
    """The canonical table of ``trace`` (a path, or an already-read frame)."""
    if isinstance(trace, pd.DataFrame):
        return trace
    pf = open_trace(trace)
    try:
        return pf.read().to_pandas()
    finally:
        pf.close()


def _floats(tab: pd.DataFrame, name: str) -> np.ndarray:
    if name not in tab.columns:
        return np.full(len(tab), np.nan)
    return pd.to_numeric(tab[name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def load_recorded(trace: str | os.PathLike | pd.DataFrame) -> Recorded:
    """Read and classify a canonical trace (see :class:`Recorded`)."""
    tab = read_trace(trace)
    time_ns = tab["time_ns"].to_numpy(np.int64)
    order = np.argsort(time_ns, kind="stable")
    tab = tab.iloc[order].reset_index(drop=True)
    time_ns = time_ns[order]
    n = len(tab)
    base = int(time_ns[0]) if n else 0
    method = tab["method"].astype(str).to_numpy(dtype=object)
    api = tab["api"].astype(str).to_numpy(dtype=object)
    kind = np.full(n, KIND_UNBILLED, dtype=np.int8)
    kind[api == RPC] = KIND_RPC
    kind[method == SIZE_METHOD] = KIND_SIZE
    kind[np.isin(method, WEBSOCKET_METHODS)] = KIND_WS
    prof_col = tab["profiles"] if "profiles" in tab.columns else pd.Series([None] * n)
    profiles = [tuple(p for p in str(v).split(",") if p) if isinstance(v, str) else ()
                for v in prof_col]
    status = _floats(tab, "status")
    observed = np.array([outcome_class(s) or "" for s in status], dtype=object)
    unusable = np.full(n, "", dtype=object)
    unusable[observed == ""] = "no status recorded"
    unusable[observed == "other"] = "status not decided by the CU window (401, 421, 430, ...)"
    sizing_blind = (kind == KIND_SIZE) & np.array([len(p) == 0 for p in profiles])
    unusable[sizing_blind & (unusable == "")] = "sizing request without profiles"
    return Recorded(
        base_ns=base, order=order, t_s=(time_ns - base) / 1e9, method=method, api=api,
        kind=kind, items=_floats(tab, "items"), profiles=profiles,
        gas_used=_floats(tab, "gas_used"), cu=_floats(tab, "cu"), status=status,
        latency_s=_floats(tab, "latency_ms") / 1e3, retry_after_s=_floats(tab, "retry_after_s"),
        observed=observed, unusable=unusable,
        key=tab["key"].astype(str).to_numpy(dtype=object) if "key" in tab.columns else None)
