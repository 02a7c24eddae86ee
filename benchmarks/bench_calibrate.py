"""``capsim calibrate`` time against the number of decisions.

Traces answered by the independent reference service of the tests
(``tests/helpers/calib_reference.py``: hidden prices, window phase 7.37 s, origin-window
refunds) from decisions alone (no ``cu`` column, Retry-After recorded), of growing
length; each calibrated once (the whole ``calibrate``: load, phase screen, the LPs,
replays before and after), beside a floor measured in the same run: one replay of the
same trace as recorded. The bar: 10,000 rows in under a minute on this machine.
Results go to ``benchmarks/results/calibrate.json`` (``--json PATH``).

    python benchmarks/bench_calibrate.py [--sizes 1000 2500 5000 10000] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "helpers"))

from calib_reference import Hidden, demand, serve, to_canonical  # noqa: E402
from results import add_json_option, write  # noqa: E402

from sim.calibration import calibrate, predict_as_recorded  # noqa: E402
from sim.config.pricing import Pricing, default_pricing_table  # noqa: E402
from sim.config.scenario import LimiterSettings  # noqa: E402
from sim.config.tiers import find_tier  # noqa: E402


def trace_of(rows: int, folder: Path) -> tuple[Path, int]:
    """A reference trace of about ``rows`` rows (the demand's duration scaled)."""
    rng = np.random.default_rng(rows)
    hidden = Hidden()
    duration = rows / 19.0  # about 19 rows a second at these bursts
    frame = serve(hidden, rng, demand(rng, duration_s=duration, burst_size=(40, 220)),
                  record_cu=False)
    path = folder / f"t{rows}.parquet"
    to_canonical(frame, path)
    return path, len(frame)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 2500, 5000, 10000])
    add_json_option(ap, "calibrate")
    args = ap.parse_args()
    load_before = round(os.getloadavg()[0], 2)
    tier = find_tier("All 3 APIs")
    pricing = Pricing.model_validate(default_pricing_table())
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            path, n = trace_of(size, Path(tmp))
            # the floor, in the same run: one replay of the trace as recorded (what
            # calibrate does at least twice, before and after)
            t0 = time.perf_counter()
            predict_as_recorded(path, tier, pricing, LimiterSettings())
            floor = time.perf_counter() - t0
            t0 = time.perf_counter()
            cal = calibrate(path, tier, pricing)
            dt = time.perf_counter() - t0
            row = {"rows": n, "decisions": cal.after.n_compared, "seconds": round(dt, 2),
                   "replay_floor_s": round(floor, 3), "ratio_to_floor": round(dt / floor, 1),
                   "agreement_after": cal.after.agreement, "lp_cells_tried": cal.lp_candidates,
                   "phase_s": cal.settings_after.phase_s, "refund_rule": cal.refund_rule}
            out.append(row)
            print(f"{n:>7,} rows  {cal.after.n_compared:>7,} decisions  {dt:6.1f} s  "
                  f"({dt / floor:.0f}x one replay)  agreement "
                  f"{100 * cal.after.agreement:.2f} %  cells {cal.lp_candidates}",
                  flush=True)
    write(args.json, "calibrate", {"limit_s_at_10000_rows": 60, "runs": out},
          load_before=load_before)

if __name__ == "__main__":
    main()
