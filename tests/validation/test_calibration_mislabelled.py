"""Logs with 1, 2 and 3 % of mislabelled rows and 2 % duplicated rows (issue 36), on each
crafted kind: one account on two keys; a client's log (send times on a clock 1.9 s
ahead, 5-40 ms each way, completion order); two accounts of two tiers with the mapping
given. The traces are answered by the independent reference service
(tests/helpers/calib_reference.py, no capsim code); the mislabelling (a proxy's status:
a call's 200 <-> -32005) and the duplication are drawn from a seeded RNG there.

Decisions alone (no ``cu``). Calibration must say "fitted" with the trimmed share
named, trim at least 90 % of the mislabelled rows (some fit the rest: no fit can tell
them) and no more than 5 % of the compared attempts, read
each duplicated row once, and meet the issue's "done when"
(tests/helpers/calib_criteria.py): every interval contains the truth, the
well-exercised prices within 15 %, the phase within 0.3 s of its value on the log's
clock, the refund rule named correctly, agreement at least 97 % over the rows it
kept, no key in any output.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from calib_criteria import assert_done_when, assert_no_key
from calib_reference import (
    Hidden,
    client_log,
    demand,
    duplicate,
    mislabel,
    peaks,
    serve,
    to_canonical,
)

from sim.calibration import calibrate
from sim.calibration.accounts import Account
from sim.calibration.calibrate import MOST_LEFT_OUT
from sim.calibration.report import write_calibration
from sim.config.pricing import Pricing, default_pricing_table
from sim.config.tiers import find_tier
from sim.core.pseudonyms import pseudonym

SHARES = (0.01, 0.02, 0.03)
DUPLICATED = 0.02
KEYS = ("a" * 32, "b" * 32)
SMALL_KEY = "5e5e5e5e1a1a1a1a2b2b2b2b3c3c3c3c"
SKEW, DELAY = 1.9, (0.005, 0.040)


def pricing() -> Pricing:
    return Pricing.model_validate(default_pricing_table())


def one_account(rng):
    h = Hidden(phase_s=8.6)
    frame = serve(h, rng, demand(rng, duration_s=90, burst_size=(60, 320),
                                 sizing_share=0.2, ws_share=0.0),
                  record_cu=False, retry_after=False, keys=KEYS)
    return h, frame, h.phase_s, lambda f, _rng: f


def client_times(rng):
    h = Hidden(phase_s=5.2)
    frame = serve(h, rng, demand(rng, duration_s=120, burst_size=(60, 320),
                                 sizing_share=0.2, ws_share=0.0),
                  record_cu=False, retry_after=True, keys=KEYS)
    return h, frame, (h.phase_s + SKEW) % 12.0, lambda f, r: client_log(f, r, SKEW, DELAY)


def two_accounts(rng):
    big, small = Hidden(budget=8400.0, phase_s=3.3), Hidden(budget=4000.0, phase_s=3.3)
    big_first, small_first = peaks(rng, windows=12)
    a = serve(big, rng, big_first, record_cu=False, retry_after=False, keys=KEYS)
    b = serve(small, rng, small_first, record_cu=False, retry_after=False,
              keys=(SMALL_KEY,))
    frame = pd.concat([a, b]).sort_values("time_ns", kind="stable").reset_index(drop=True)
    return big, frame, big.phase_s, lambda f, _rng: f


KINDS = {"one account": (one_account, 77), "client times": (client_times, 363),
         "two accounts": (two_accounts, 36)}


@pytest.fixture(scope="module", params=sorted(KINDS))
def served(request):
    make, seed = KINDS[request.param]
    return request.param, seed, *make(np.random.default_rng(seed))


@pytest.fixture(params=SHARES, ids=lambda s: f"{100 * s:g}%")
def calibrated(request, served, tmp_path):
    kind, seed, h, frame, phase, as_logged = served
    share = request.param
    rng = np.random.default_rng([seed, round(1000 * share)])
    frame = frame.assign(_id=np.arange(len(frame)))
    frame, bad = mislabel(frame, rng, int(round(share * len(frame))))
    log = duplicate(as_logged(frame, rng), rng, DUPLICATED)
    ids = log.pop("_id").to_numpy()
    path = tmp_path / "log.parquet"
    to_canonical(log, path)
    kw = {}
    if kind == "two accounts":
        kw["accounts"] = [Account("big", find_tier("All 3 APIs"), tuple(
                              pseudonym(k) for k in KEYS)),
                          Account("small", find_tier("RPC"), (pseudonym(SMALL_KEY),))]
    if kind == "client times":
        kw.update(client_times=True, delay_s=DELAY)
    cal = calibrate(path, find_tier("All 3 APIs"), pricing(), **kw)
    out = write_calibration(cal, tmp_path / "cal", path.name)
    return kind, h, phase, cal, set(bad), ids, len(log) - len(frame), out


def test_mislabelled_and_duplicated_rows(calibrated):
    kind, h, phase, cal, bad, ids, n_twice, out = calibrated
    assert cal.verdict == "fitted", cal.notes
    assert len(cal.duplicates) == n_twice
    assert cal.trimmed and cal.trimmed_share <= MOST_LEFT_OUT
    assert any("trimmed" in n for n in cal.notes)
    # nearly every mislabelled row is among those left out (by the reference's row id:
    # a duplicated row is read at either of its copies); a few fit the rest (a window's
    # last admission recorded as its first throttle) and no fit can tell them
    missed = bad - {int(ids[d.row]) for d in cal.dropped}
    assert len(missed) <= 0.1 * len(bad), sorted(missed)
    assert_done_when(cal, h, phase)
    assert_no_key(out, (*KEYS, SMALL_KEY), *cal.notes)
