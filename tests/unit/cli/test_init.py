"""`capsim init`: the commented template and a scenario proposed from a trace."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli.main import main
from sim.config.resolved import load
from sim.traces.scenario_from_trace import propose_method_map

ROOT = Path(__file__).resolve().parents[3]
TRACES = sorted(p for p in (ROOT / "workloads" / "traces").iterdir()
                if p.suffix in {".csv", ".jsonl", ".har", ".log", ".parquet"})


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_template_loads_and_its_commented_sizing_source_too(tmp_path):
    out = tmp_path / "mine.toml"
    done = invoke("init", out)
    assert done.exit_code == 0, done.output
    text = out.read_text()
    assert text.count("\n#") > 10  # commented
    sc = load(out).scenario
    assert sc.name == "mine" and [s.name for s in sc.sources] == ["web-app"]
    # The commented-out sizing source is valid as written, once uncommented.
    block = re.search(r"# A sizing .*?\n((?:# .*\n)+)", text).group(1)
    uncommented = text + "\n" + re.sub(r"^# ", "", block, flags=re.M)
    (tmp_path / "two.toml").write_text(uncommented)
    assert [s.name for s in load(tmp_path / "two.toml").scenario.sources] == [
        "web-app", "searcher"]


@pytest.mark.parametrize("with_trace", [False, True])
def test_never_overwrites(tmp_path, with_trace):
    out = tmp_path / "scenario.toml"
    out.write_text("mine\n")
    args = ["init", out] + (["--trace", TRACES[0]] if with_trace else [])
    done = invoke(*args)
    assert done.exit_code == 2
    assert "never overwrites" in done.output
    assert out.read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scenario.toml"]


def test_imported_trace_beside_it_is_never_overwritten(tmp_path):
    (tmp_path / "s.parquet").write_text("mine\n")
    done = invoke("init", tmp_path / "s.toml", "--trace", ROOT / "workloads/traces/sample.csv")
    assert done.exit_code == 2 and "never overwrites" in done.output
    assert (tmp_path / "s.parquet").read_text() == "mine\n"
    assert not (tmp_path / "s.toml").exists()


def test_method_map_proposal():
    # Head queries are the unbilled svc_pendingBlock; anything else the billed svc_call;
    # the service's own methods replay as themselves (no entry).
    got = propose_method_map({"eth_blockNumber": 5, "eth_call": 9, "eth_getLogs": 1,
                              "eth_chainId": 2, "svc_call": 3, "svc_pendingBlock": 1})
    assert got == {"eth_blockNumber": "svc_pendingBlock", "eth_call": "svc_call",
                   "eth_chainId": "svc_pendingBlock", "eth_getLogs": "svc_call"}


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name)
def test_scenario_from_each_shipped_trace_runs(tmp_path, trace):
    out = tmp_path / "from-trace.toml"
    done = invoke("init", out, "--trace", trace)
    assert done.exit_code == 0, done.output
    text = out.read_text()
    raw = set(re.findall(r"\b[0-9a-f]{32}\b", trace.read_text(errors="replace")
                         if trace.suffix != ".parquet" else ""))
    assert not any(k in text for k in raw)  # keys only as pseudonyms
    sc = load(out).scenario
    keys = sc.account.keys
    assert keys and all(re.fullmatch(r"key-[0-9a-f]{16}", k) for k in keys) or \
        keys == ["recorded-key"]
    assert sc.sources[0].trace and sc.tiers
    assert sc.duration_s >= 60 and sc.duration_s % 60 == 0
    rep = tmp_path / "rep"
    done = invoke("run", out, "--out", rep, "-q", "--records", "none")
    assert done.exit_code == 0, done.output
    assert (rep / "summary.json").is_file()
