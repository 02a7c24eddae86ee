"""The replay recipe of docs/how-to/replay-your-traffic.md with the account's own key (issue 7).

A trace stores keys as pseudonyms; a scenario's ``[account] keys`` lists them raw. When
the account lists the very key the trace was recorded with, the two are one key: the
run must not crash, and ``requests.parquet`` holds that key once, under its pseudonym,
with the trace's rows counted to it.
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pandas as pd
from click.testing import CliRunner
from scenarios import write_scenario

from sim.cli.main import main
from sim.core.pseudonyms import pseudonym

SAMPLE = Path(__file__).resolve().parents[2] / "workloads" / "traces" / "sample.csv"


def test_replay_with_the_accounts_own_key(tmp_path):
    with SAMPLE.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    http = [r for r in rows if r["api"] != "streams"]
    per_key = Counter(r["X-Api-Key"] for r in http)
    own = per_key.most_common(1)[0][0]
    trace = tmp_path / "t.parquet"
    done = CliRunner().invoke(main, ["trace", "import", str(SAMPLE), "--format", "csv",
                                     "--out", str(trace)])
    assert done.exit_code == 0, done.output
    scenario = write_scenario(
        tmp_path, filename="own.toml", name="own-key", duration="1h",
        tiers=["Advanced bundle"], keys=[own],
        tables='[clients.default]\nretry = { policy = "none" }\n', sources=f"""[[sources]]
name = "recorded"
key = "{own}"
trace = "t.parquet"
replay = {{ drop_recorded_retries = false }}
""")
    out = tmp_path / "rep"
    done = CliRunner().invoke(main, ["run", str(scenario), "--out", str(out), "-q"])
    assert done.exit_code == 0, done.output
    req = pd.read_parquet(out / "requests.parquet")
    categories = list(req["key"].cat.categories)
    assert len(categories) == len(set(categories))
    assert pseudonym(own) in categories
    assert own not in categories
    # Every HTTP row of the trace replays (it spans less than the hour; recorded retries kept),
    # attributed to the pseudonym of the key it was recorded with.
    counts = req["key"].value_counts()
    assert {k: int(counts.get(pseudonym(k), 0)) for k in per_key} == dict(per_key)
    assert (req["outcome"] != "401").all()
