"""``capsim sweep``'s stdout lines per point (:func:`sim.jobs.sweep_report.point_line`).

A point where no tier meets the SLO says what decided each tier, with the labels of
``capsim run``'s table (``fails: API``, ``window``, ``allowance*``) that ``sweep.json``
already carries; a point with a tier meeting it prints the line it always printed.
"""

from __future__ import annotations

from sim.jobs.sweep_report import decided_notes, point_line
from sim.jobs.sweep_results import IntervalFigure, PointTier, SweepDocument, SweepPoint
from sim.results.summary import SloSummary

METRICS = ["throttle_rate", "failure_rate", "p99_latency_ms", "cu_settled", "cost_usd",
           "cu_per_day", "allowance_days"]


def tier(name: str, met: float, decided_by: str | None = None) -> PointTier:
    return PointTier(tier=name, n=3, slo_met_fraction=met, decided_by=decided_by,
                     **{m: IntervalFigure.of([1.0, 2.0]) for m in METRICS})


def point(tiers, cheapest=None, values=None) -> SweepPoint:
    return SweepPoint(point=0, values={"load": 4} if values is None else values,
                      variant="base", tiers=tuple(tiers), cheapest_meeting_slo=cheapest)


def doc(*points) -> SweepDocument:
    return SweepDocument(
        capsim_version="0", scenario="s", scenario_file="s.toml", fingerprint="f",
        replications=3, confidence_level=0.95, tiers=("Streams", "RPC"), vary=(),
        variants=(), slo=SloSummary(max_throttle_rate=0.01, max_failure_rate=0.001,
                                    p99_latency_ms=2000), points=points,
        variant_differences=())


def test_a_passing_point_prints_what_it_always_printed():
    p = point([tier("Streams", 0.0, "API"), tier("RPC", 1.0)], cheapest="RPC")
    assert point_line(p) == "load=4 [base]: cheapest tier meeting the SLO: RPC"
    assert point_line(point([tier("RPC", 1.0)], cheapest="RPC", values={})) == (
        "scenario [base]: cheapest tier meeting the SLO: RPC")
    assert decided_notes(doc(p)) == []


def test_a_failing_point_names_what_decided_each_tier():
    p = point([tier("Streams", 0.0, "API"), tier("RPC", 1 / 3, "window (2/3), allowance*")])
    assert point_line(p) == ("load=4 [base]: cheapest tier meeting the SLO: none "
                             "(Streams fails: API; RPC fails: window (2/3), allowance*)")
    notes = decided_notes(doc(p))
    assert notes[0] == ("SLO: what decided a failing tier: API = 402: the API is not in "
                        "this tier's selection; window = the 12-second CU window "
                        "(throttles); allowance = the daily allowance.")
    assert notes[1].startswith("*: decided by an assumption: daily allowance")
    assert len(notes) == 2


def test_a_failing_tier_without_causes_still_says_it_fails():
    """A sweep.json written before ``decided_by`` existed: no labels to show."""
    assert point_line(point([tier("RPC", 0.0)])) == (
        "load=4 [base]: cheapest tier meeting the SLO: none (RPC fails)")
