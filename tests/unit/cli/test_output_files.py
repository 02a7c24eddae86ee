"""Output files a user names are never someone else's file overwritten (issue 21 item 3).

`--markdown`, `--junit`, `--comment`, `baseline save --out`, `trace import --out` and
`drive --out` overwrote an existing unrelated file without a word; now each refuses
(exit 2, the file named, nothing written) unless the file is capsim's own output of
that kind, or `--force`. `capsim drive` wrote its default trace inside
`reports/<scenario>/`, which the next `capsim run` replaces whole.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from scenarios import poisson_source, scenario_text

from sim.cli.live import default_drive_trace
from sim.cli.main import main

SAMPLES = Path(__file__).resolve().parents[3] / "workloads" / "traces"
SCENARIO = scenario_text(name="files", top="seed = 3\n", duration=30, tiers=["RPC"],
                         sources=poisson_source(2) + "mix = { svc_call = 1.0 }\n")
MINE = "my own notes, not capsim's\n"


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    d = tmp_path_factory.mktemp("files")
    (d / "files.toml").write_text(SCENARIO)
    r = cli("baseline", "save", d / "files.toml", "--out", d / "files.json")
    assert r.exit_code == 0, r.output
    return d


def refused(r, path: Path, option: str) -> None:
    assert r.exit_code == 2, r.output
    assert f"capsim: error: {path}: {option}: exists and is not" in r.output, r.output
    assert "--force" in r.output and "Traceback" not in r.output
    assert path.read_text() == MINE


@pytest.mark.parametrize("option", ["--markdown", "--junit", "--comment"])
def test_compare_does_not_overwrite_an_unrelated_file(saved, tmp_path, option):
    mine = tmp_path / "notes.txt"
    mine.write_text(MINE)
    r = cli("compare", saved / "files.json", saved / "files.json", option, mine)
    refused(r, mine, option)
    r = cli("compare", saved / "files.json", saved / "files.json", option, mine, "--force")
    assert r.exit_code == 0 and mine.read_text() != MINE


@pytest.mark.parametrize("option", ["--markdown", "--junit", "--comment"])
def test_capsims_own_report_is_overwritten(saved, tmp_path, option):
    out = tmp_path / "out"
    for _ in range(2):
        r = cli("compare", saved / "files.json", saved / "files.json", option, out)
        assert r.exit_code == 0, r.output
    assert "capsim" in out.read_text()


def test_check_refuses_before_simulating(saved, tmp_path, monkeypatch):
    mine = tmp_path / "notes.md"
    mine.write_text(MINE)
    monkeypatch.setattr("sim.jobs.replicate.replicate",
                        lambda *a, **k: pytest.fail("simulated before refusing"))
    r = cli("check", saved / "files.toml", "--baseline", saved / "files.json",
            "--markdown", mine)
    refused(r, mine, "--markdown")


def test_baseline_save_does_not_overwrite_an_unrelated_file(saved, tmp_path, monkeypatch):
    mine = tmp_path / "package.json"
    mine.write_text(MINE)
    monkeypatch.setattr("sim.jobs.replicate.replicate",
                        lambda *a, **k: pytest.fail("simulated before refusing"))
    refused(cli("baseline", "save", saved / "files.toml", "--out", mine), mine, "--out")


def test_baseline_save_replaces_a_baseline(saved, tmp_path):
    target = tmp_path / "b.json"
    target.write_bytes((saved / "files.json").read_bytes())
    assert cli("baseline", "save", saved / "files.toml", "--out", target).exit_code == 0


def test_trace_import_does_not_overwrite_an_unrelated_file(tmp_path):
    mine = tmp_path / "data.parquet"
    mine.write_text(MINE)
    refused(cli("trace", "import", SAMPLES / "sample.csv", "--out", mine), mine, "--out")
    r = cli("trace", "import", SAMPLES / "sample.csv", "--out", mine, "--force")
    assert r.exit_code == 0, r.output


def test_trace_import_replaces_a_canonical_trace(tmp_path):
    out = tmp_path / "t.parquet"
    for _ in range(2):
        r = cli("trace", "import", SAMPLES / "sample.csv", "--out", out)
        assert r.exit_code == 0, r.output


def test_drive_does_not_overwrite_an_unrelated_file(saved, tmp_path):
    """Refused before connecting (nothing listens on port 9)."""
    mine = tmp_path / "notes.parquet"
    mine.write_text(MINE)
    r = cli("drive", saved / "files.toml", "--target", "https://127.0.0.1:9", "--out", mine)
    refused(r, mine, "--out")


def test_the_default_drive_trace_is_not_inside_a_report_folder():
    """The next `capsim run` replaces reports/<scenario>/ whole: the trace is beside it."""
    path = default_drive_trace("files")
    report = Path("reports") / "files"
    assert report not in path.parents and path.parent == Path("reports")
