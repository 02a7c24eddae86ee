"""`capsim trace` end to end with click's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from sim.cli.trace import trace
from sim.core.errors import CapsimError

SAMPLES = Path(__file__).resolve().parents[3] / "workloads" / "traces"


def make_cli() -> click.Group:
    """Stand-in for the main CLI: registers the group and maps CapsimError to exit 2."""

    class Main(click.Group):
        def invoke(self, ctx):
            try:
                return super().invoke(ctx)
            except CapsimError as err:
                click.echo(err.render(), err=True)
                raise click.exceptions.Exit(2) from None

    main = Main("capsim")
    main.add_command(trace)
    return main


def run(*args):
    return CliRunner().invoke(make_cli(), list(map(str, args)))


def test_every_command_has_help_text():
    for name, cmd in trace.commands.items():
        assert cmd.help and len(cmd.help) > 40, name
        result = run("trace", name, "--help")
        assert result.exit_code == 0 and "Usage:" in result.output
        for param in cmd.params:
            if isinstance(param, click.Option):
                assert param.help, f"{name} {param.name}"
    assert trace.help


def test_import_then_stats(tmp_path):
    out = tmp_path / "t.parquet"
    result = run("trace", "import", SAMPLES / "sample.har", "--out", out)
    assert result.exit_code == 0, result.output
    assert "imported" in result.stdout and "(har)" in result.stdout
    rows = pq.read_table(out).num_rows
    stats = run("trace", "stats", out, "--json")
    assert stats.exit_code == 0
    data = json.loads(stats.stdout)
    assert data["rows"] == rows and data["recommended_tier"]["name"]
    text = run("trace", "stats", out)
    assert text.exit_code == 0 and "recommended tier:" in text.stdout
    assert "peak window:" in text.stdout


def test_an_invalid_row_exits_2_with_one_line_and_no_output(tmp_path):
    src = tmp_path / "bad.csv"
    src.write_text("time_ns,api,method\n1714564800000000000,rpc,svc_call\n"
                   "1714564801000000000,ftp,svc_call\n")
    out = tmp_path / "o.parquet"
    result = run("trace", "import", src, "--out", out)
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0
    assert f"{src}:3: api:" in result.stderr
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv"]
    skip = run("trace", "import", src, "--out", out, "--on-invalid", "skip")
    assert skip.exit_code == 0 and "skipped 1 invalid rows: api 1" in skip.stdout
    assert pq.read_table(out).num_rows == 1


@pytest.mark.parametrize("args", [
    ["trace", "import", "{tmp}/missing.csv", "--out", "{tmp}/o.parquet"],
    ["trace", "stats", "{tmp}/missing.parquet"],
    ["trace", "import", str(SAMPLES / "sample.csv"), "--out", "{tmp}/no/such/dir/o.parquet"],
])
def test_user_mistakes_exit_2(tmp_path, args):
    result = run(*[a.format(tmp=tmp_path) for a in args])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert str(tmp_path) in result.stderr or "--out" in result.stderr


def test_options_reach_the_importer(tmp_path):
    out = tmp_path / "t.parquet"
    result = run("trace", "import", SAMPLES / "sample-rpc.log", "--format", "rpc-log",
                 "--out", out, "--region", "ap-south-1", "--chunk-rows", "10")
    assert result.exit_code == 0, result.output
    pf = pq.ParquetFile(out)
    assert pf.metadata.num_row_groups == -(-pf.metadata.num_rows // 10)
    assert set(pq.read_table(out).column("region").to_pylist()) == {"ap-south-1"}
