"""Issue 36's "done when" for a calibration of a crafted trace, checked against the
hidden values the reference service (calib_reference.py) answered with: every reported
interval contains the truth, the well-exercised prices within 15 %, the window phase
within 0.3 s of its value on the log's clock (its interval containing it), the refund
rule named correctly, agreement at least 97 %, no key in any output."""

from __future__ import annotations

from pathlib import Path

from calib_reference import Hidden

WELL_EXERCISED = ("rpc.method_cu.svc_call", "sizing.cu_per_gas")
"""Prices most decisions depend on (every call; every sizing request's gas). The call
price always is, in these traces; CU per gas where the decisions pin it from both
sides (``how == "decisions"``): where a trace holds few sizing requests near a window's
limit, the decisions only bound it and the report says so."""


def truth_of(h: Hidden) -> dict[str, float]:
    """The hidden price of every name calibration reports."""
    return {"rpc.method_cu.svc_call": h.call, "sizing.item_base_cu": h.base,
            "sizing.cu_per_gas": h.per_gas, "websocket.connect_cu": h.connect,
            "sizing.profile_cap_cu.fast": h.caps["fast"] * h.per_gas,
            "sizing.profile_cap_cu.deep": h.caps["deep"] * h.per_gas}


def circular_gap(a: float, b: float) -> float:
    d = abs(a - b) % 12.0
    return min(d, 12.0 - d)


def assert_done_when(cal, h: Hidden, phase_on_log_clock: float, *,
                     rule_separable: bool = False) -> None:
    """Issue 36's criteria on ``cal`` (a :class:`~sim.calibration.Calibration`);
    ``rule_separable``: the trace has refunds across window starts, so the refund rule
    must be named alone (else the truth among the rules that fit)."""
    truth = truth_of(h)
    for p in cal.prices:
        v = truth[p.name]
        assert (p.low or 0.0) <= v * (1 + 1e-9), (p.name, p)
        assert p.high is None or v <= p.high * (1 + 1e-9), (p.name, p)
    for prof, g in cal.gas_caps.items():
        assert g.low <= h.caps[prof] * (1 + 1e-9), prof
        assert g.high is None or h.caps[prof] <= g.high * (1 + 1e-9), prof
    prices = {p.name: p for p in cal.prices}
    for name in WELL_EXERCISED:
        if name == WELL_EXERCISED[0] or (name in prices and prices[name].how == "decisions"):
            assert abs(prices[name].value - truth[name]) <= 0.15 * truth[name], prices[name]
    iv = cal.phase_interval
    assert (phase_on_log_clock - iv.low % 12.0) % 12.0 <= (iv.high - iv.low) + 1e-9, iv
    assert circular_gap(cal.settings_after.phase_s, phase_on_log_clock) <= 0.3
    if rule_separable:
        assert cal.refund_rule == h.refund_to
    else:
        assert h.refund_to in cal.rules_fit
    assert cal.kept_agreement >= 0.97


def assert_no_key(folder: Path, keys, *texts: str) -> None:
    """No key in clear in any text file of ``folder`` nor in ``texts``."""
    for f in folder.iterdir():
        if f.suffix in (".json", ".md", ".html", ".toml"):
            body = f.read_text(encoding="utf-8")
            assert not any(k in body for k in keys), f.name
    assert not any(k in t for t in texts for k in keys)
