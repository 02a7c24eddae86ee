"""The command line end to end (click's CliRunner), including bad input."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pandas as pd
import pytest
from click.testing import CliRunner
from scenarios import scenario_text

from sim.cli.main import main

SHORT = ["--set", "duration=120"]


def run_cli(*args, cwd: Path | None = None):
    runner = CliRunner()
    return runner.invoke(main, list(args), catch_exceptions=False)


def all_commands():
    """Every ``capsim`` command, the lazily imported ones included."""
    ctx = click.Context(main)
    return {name: main.get_command(ctx, name) for name in main.list_commands(ctx)}


def test_every_command_has_help():
    for name, cmd in all_commands().items():
        assert cmd.help, f"capsim {name} has no help text"
        result = run_cli(name, "--help")
        assert result.exit_code == 0 and "Usage:" in result.output


def test_readme_and_cli_reference_document_every_command():
    """The README's command table names every command and subcommand, and the CLI
    reference has a section for each (its content is checked in tests/meta)."""
    root = Path(__file__).resolve().parents[3]
    readme = (root / "README.md").read_text(encoding="utf-8")
    table = readme.split("\n## Commands\n", 1)[1]
    reference = (root / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    for name, cmd in all_commands().items():
        assert f"| `capsim {name}" in table, f"README's command table lacks `capsim {name}`"
        assert f"## `capsim {name}`" in reference, f"docs/reference/cli.md lacks capsim {name}"
        for sub in getattr(cmd, "commands", {}):
            assert f"| `capsim {name} {sub}" in table
            assert f"### `capsim {name} {sub}`" in reference


def test_run_default_writes_the_report(tmp_path):
    out = tmp_path / "rep"
    result = run_cli("run", *SHORT, "--tier", "RPC", "--tier", "Advanced bundle", "--out", str(out))
    assert result.exit_code == 0, result.output
    for name in ("summary.json", "requests.parquet", "windows.parquet", "report.md",
                 "report.html", "cu_per_window.png"):
        assert (out / name).stat().st_size > 0, name
    summary = json.loads((out / "summary.json").read_text())
    assert [t["tier"] for t in summary["tiers"]] == ["RPC", "Advanced bundle"]
    assert summary["scenario"] == "default" and summary["duration_s"] == 120
    rpc, adv = summary["tiers"]
    # The default scenario needs ~10k-25k CU per window: RPC (4,000) must throttle,
    # the Advanced bundle (100,000) must not.
    assert rpc["throttle_rate"] > 0.1 and adv["throttle_rate"] == 0
    assert summary["recommended"]["tier"] == "Advanced bundle"
    # Attempts in summary and in requests.parquet agree, per tier and outcome.
    req = pd.read_parquet(out / "requests.parquet")
    for t in summary["tiers"]:
        rows = req[req["tier"] == t["tier"]]
        assert len(rows) == t["attempts"]
        http = rows[rows["transport"] == "http"]
        assert http["request_id"].nunique() == t["requests"]
        handshakes = rows[rows["transport"] == "websocket"]
        assert len(handshakes) == sum(t["websockets"]["handshakes"].values())
        assert set(handshakes["method"]) <= {"pending-txs", "new-blocks"}
        counts = rows["outcome"].value_counts()
        assert {k: int(counts.get(k, 0)) for k in t["outcomes"]} == t["outcomes"]
    win = pd.read_parquet(out / "windows.parquet")
    assert (win["peak_used_cu"] <= win["limit_cu"] + 1e-6).all()
    assert "Recommendation" in (out / "report.md").read_text()
    assert "the table" not in result.output
    assert "recommended tier: Advanced bundle" in result.output


@pytest.mark.slow  # whole runs through the CLI (.ci/run's slow step)
def test_same_seed_gives_byte_identical_summary(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):
        assert run_cli("run", *SHORT, "--tier", "RPC + Search", "--out", str(out)).exit_code == 0
    assert (a / "summary.json").read_bytes() == (b / "summary.json").read_bytes()
    assert (a / "cu_per_window.png").read_bytes() == (b / "cu_per_window.png").read_bytes()
    c = tmp_path / "c"
    assert run_cli("run", *SHORT, "--tier", "RPC + Search", "--seed", "99",
                   "--out", str(c)).exit_code == 0
    assert (a / "summary.json").read_bytes() != (c / "summary.json").read_bytes()


@pytest.mark.slow  # whole runs through the CLI (.ci/run's slow step)
def test_parallel_tiers_equal_sequential(tmp_path):
    args = [*SHORT, "--tier", "RPC", "--tier", "All 3 APIs", "--tier", "Search"]
    assert run_cli("run", *args, "--out", str(tmp_path / "seq")).exit_code == 0
    assert run_cli("run", *args, "--jobs", "2", "--out", str(tmp_path / "par")).exit_code == 0
    assert (tmp_path / "seq/summary.json").read_bytes() == \
        (tmp_path / "par/summary.json").read_bytes()


def test_tiers_command_prints_the_catalog():
    result = run_cli("tiers", "--json")
    rows = json.loads(result.output)
    assert [r["tier"] for r in rows][-1] == "Advanced bundle"
    assert {r["tier"]: r["cu_per_window"] for r in rows}["RPC + Search"] == 7500
    assert "Professional bundle" in run_cli("tiers").output


def test_validate_ok_and_warns_on_unknown_key(tmp_path):
    good = tmp_path / "s.toml"
    good.write_text(_scenario(key='"not-listed"'))
    result = CliRunner().invoke(main, ["validate", str(good)])
    assert result.exit_code == 0
    assert "ok" in result.output and "401" in result.output


def _scenario(rate="5", key='"k1"', extra="", arrival_key="rate", tiers='["RPC"]'):
    """A scenario with these TOML texts (not values: a test may write one wrong)."""
    return scenario_text(tiers=None, top=f"tiers = {tiers}\n", keys=["k1"], tables=f"{extra}\n",
                         sources=f'[[sources]]\nname = "s"\nkey = {key}\n'
                                 f'arrival = {{ process = "poisson", {arrival_key} = {rate} }}\n')


@pytest.mark.parametrize("text, field, expected", [
    (_scenario(arrival_key="rat"), "sources[0].arrival.rat", "did you mean 'rate'"),
    (_scenario(rate='"fast"'), "sources[0].arrival.rate",
     "expected a number, not a string"),
    (_scenario(rate="-2"), "sources[0].arrival.rate", "greater than or equal to 0"),
    (_scenario(tiers='["Gold"]'), "tiers[0]", "unknown tier 'Gold'"),
    (_scenario(extra="[limiter]\nalignment = \"sliding\""), "limiter.alignment",
     "'epoch', 'first-hit' or 'utc'"),
    ("duraton = 5\n" + _scenario(), "duraton", "did you mean 'duration'"),
    (_scenario() + "\nmix = { svc_call = 1 }\nfoo = 1\n", "sources[0].foo", "unknown key 'foo'"),
])
def test_bad_scenario_gives_one_clear_message(tmp_path, text, field, expected):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    for command in (["validate", str(path)], ["run", str(path), "--out", str(tmp_path / "o")]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 2, result.output
        err = result.stderr if hasattr(result, "stderr") else result.output
        assert "Traceback" not in err
        line = err.strip().splitlines()[0]
        assert line.startswith(f"capsim: error: {path}:"), line
        assert field in line and expected in line, line
        assert not (tmp_path / "o").exists()


def test_bad_scenario_names_the_line(tmp_path):
    path = tmp_path / "bad.toml"
    text = _scenario(rate="-2")
    path.write_text(text)
    result = CliRunner().invoke(main, ["validate", str(path)])
    lineno = next(i for i, line in enumerate(text.splitlines(), 1) if "arrival" in line)
    assert f"{path}:{lineno}: sources[0].arrival.rate" in result.output


def test_secret_key_is_never_echoed(tmp_path):
    secret = "sk_live_9f8e7d6c5b4a39281706f5e4d3c2b1a0"
    path = tmp_path / "bad.toml"
    path.write_text(_scenario(key=f'"{secret}"', rate="-1"))
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2 and secret not in result.output
    path.write_text(_scenario(key=f'"{secret}"')
                    + f'\n[clients.default]\nretry = {{ policy = "{secret}" }}\n')
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2 and secret not in result.output
    ok = tmp_path / "ok.toml"
    ok.write_text(_scenario(key=f'"{secret}"').replace('keys = ["k1"]', f'keys = ["{secret}"]'))
    out = tmp_path / "rep"
    assert CliRunner().invoke(main, ["run", str(ok), "--out", str(out), "-q"]).exit_code == 0
    for f in out.iterdir():
        assert secret.encode() not in f.read_bytes(), f.name


@pytest.mark.parametrize("args, message", [
    (["--set", "nonsense"], "expected KEY.PATH=VALUE"),
    (["--set", "sources[7].name=x"], "no such list element"),
])
def test_bad_overrides(args, message):
    result = CliRunner().invoke(main, ["validate", "missing.toml", *args])
    assert result.exit_code == 2
    result = CliRunner().invoke(main, ["run", *args, "--out", "/nonexistent/x"])
    assert result.exit_code == 2 and message in result.output


def test_missing_and_non_utf8_files(tmp_path):
    result = CliRunner().invoke(main, ["validate", str(tmp_path / "nope.toml")])
    assert result.exit_code == 2 and "no such file" in result.output
    bad = tmp_path / "bin.toml"
    bad.write_bytes(b"name = \"\xff\"\n")
    result = CliRunner().invoke(main, ["validate", str(bad)])
    assert result.exit_code == 2 and "UTF-8" in result.output
    broken = tmp_path / "broken.toml"
    broken.write_text("name = \n")
    result = CliRunner().invoke(main, ["validate", str(broken)])
    assert result.exit_code == 2 and f"{broken}:1: not valid TOML" in result.output


def test_failed_write_keeps_the_old_report(tmp_path, monkeypatch):
    out = tmp_path / "rep"
    assert run_cli("run", *SHORT, "--tier", "RPC", "--out", str(out), "-q").exit_code == 0
    before = (out / "summary.json").read_bytes()
    from sim.report import writer

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(writer.plots, "write_all", boom)
    with pytest.raises(OSError):
        run_cli("run", *SHORT, "--tier", "RPC", "--seed", "5", "--out", str(out), "-q")
    assert (out / "summary.json").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".rep.lock", "rep"]
