"""Which folder ``capsim run`` may replace, leftovers of killed runs, the swap, the lock.

The rules (sim/report/folder.py): a run replaces only a missing, empty or capsim report
folder (marker ``.capsim-report``, or a capsim ``summary.json`` from before markers);
anything else is exit 2 with the folder named and nothing touched, checked before any
simulating. A killed run's ``.NAME.staging-*`` / ``.NAME.old-*`` folders are tidied on
the next run (a report left moved aside is put back first); a failed final rename puts
the old report back; ``.NAME.lock`` beside the folder keeps a second run out.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from report_folders import assert_refused, no_simulation
from report_folders import names as listing
from scenarios import scenario_text, write_scenario

import sim
from sim.cli.main import main

SCENARIO = scenario_text(name="tiny", rate=2)


@pytest.fixture
def scenario(tmp_path) -> Path:
    return write_scenario(tmp_path, SCENARIO, filename="tiny.toml")


def run(scenario: Path, out: Path | None, *extra, catch=True):
    args = ["run", str(scenario), "-q", *extra] + (["--out", str(out)] if out else [])
    return CliRunner().invoke(main, args, catch_exceptions=catch)


def test_every_report_carries_the_marker(tmp_path, scenario):
    out = tmp_path / "rep"
    assert run(scenario, out).exit_code == 0
    marker = (out / ".capsim-report").read_text(encoding="utf-8")
    assert f'capsim_version = "{sim.__version__}"' in marker


def test_a_folder_that_is_not_a_report_is_refused_untouched(tmp_path, scenario, monkeypatch):
    victim = tmp_path / "victim"
    (victim / "sub").mkdir(parents=True)
    (victim / "precious.txt").write_text("precious\n")
    (victim / "sub" / "more.txt").write_text("more\n")
    before = listing(tmp_path)
    no_simulation(monkeypatch)
    result = run(scenario, victim)
    assert_refused(result, f"capsim: error: {victim}: exists and is not a capsim report folder")
    assert listing(tmp_path) == before  # not even a lock file beside it
    assert (victim / "precious.txt").read_text() == "precious\n"


def test_the_default_folder_follows_the_same_rule(tmp_path, scenario, monkeypatch):
    mine = tmp_path / "reports" / "tiny"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("mine\n")
    monkeypatch.chdir(tmp_path)
    no_simulation(monkeypatch)
    result = run(scenario, None)
    assert result.exit_code == 2 and "reports/tiny: exists and is not a capsim" in result.output
    assert listing(tmp_path / "reports") == ["tiny", "tiny/notes.txt"]


def test_a_summary_json_not_written_by_capsim_is_not_a_report(tmp_path, scenario):
    out = tmp_path / "rep"
    out.mkdir()
    (out / "summary.json").write_text(json.dumps({"total": 3}))
    assert run(scenario, out).exit_code == 2
    assert listing(out) == ["summary.json"]


def test_an_empty_folder_is_used(tmp_path, scenario):
    out = tmp_path / "empty"
    out.mkdir()
    assert run(scenario, out).exit_code == 0
    assert (out / "summary.json").is_file() and (out / ".capsim-report").is_file()


def test_an_old_report_without_marker_is_replaced(tmp_path, scenario):
    out = tmp_path / "rep"
    assert run(scenario, out).exit_code == 0
    (out / ".capsim-report").unlink()  # as written before markers existed
    before = (out / "summary.json").read_bytes()
    assert run(scenario, out, "--seed", "7").exit_code == 0
    assert (out / "summary.json").read_bytes() != before
    assert (out / ".capsim-report").is_file()


def test_stale_staging_folders_are_removed_by_the_next_run(tmp_path, scenario):
    out = tmp_path / "rep"
    stale = tmp_path / ".rep.staging-st4le"
    stale.mkdir()
    (stale / "windows.parquet").write_bytes(b"PAR1")
    assert run(scenario, out).exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [".rep.lock", "rep", "tiny.toml"]


def test_a_killed_runs_leftovers_are_cleaned_and_the_report_put_back(tmp_path, scenario,
                                                                      monkeypatch):
    out = tmp_path / "rep"
    assert run(scenario, out).exit_code == 0
    before = (out / "summary.json").read_bytes()
    # Killed between moving the old report aside and renaming the new one in:
    aside = tmp_path / ".rep.old-k1ll3d"
    aside.mkdir()
    os.replace(out, aside / "rep")
    shutil.copytree(aside / "rep", tmp_path / ".rep.staging-h4lf")  # complete, never renamed
    # Killed while writing: a half-written staging folder.
    (tmp_path / ".rep.staging-3arly").mkdir()
    (tmp_path / ".rep.staging-3arly" / "requests.parquet").write_bytes(b"PAR1")
    # Another report's staging folder is not this run's business.
    (tmp_path / ".rep2.staging-0ther").mkdir()
    # This run fails while writing: the old report must be back in place regardless.
    from sim.report import writer

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(writer.plots, "write_all", boom)
    with pytest.raises(OSError):
        run(scenario, out, "--seed", "7", catch=False)
    assert (out / "summary.json").read_bytes() == before
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [".rep.lock", ".rep2.staging-0ther", "rep", "tiny.toml"]
    monkeypatch.undo()
    assert run(scenario, out, "--seed", "7").exit_code == 0
    assert (out / "summary.json").read_bytes() != before
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [".rep.lock", ".rep2.staging-0ther", "rep", "tiny.toml"]


def test_a_failed_final_rename_restores_the_old_report(tmp_path, scenario, monkeypatch):
    out = tmp_path / "rep"
    assert run(scenario, out).exit_code == 0
    before = listing(out), (out / "summary.json").read_bytes()
    real = os.replace

    def flaky(src, dst, *a, **k):
        if ".staging-" in os.fspath(src):
            raise OSError("rename failed")
        return real(src, dst, *a, **k)
    monkeypatch.setattr(os, "replace", flaky)
    with pytest.raises(OSError, match="rename failed"):
        run(scenario, out, "--seed", "7", catch=False)
    assert (listing(out), (out / "summary.json").read_bytes()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".rep.lock", "rep", "tiny.toml"]


HOLD = """import fcntl, sys
f = open(sys.argv[1], "a")
fcntl.flock(f, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.read()
"""


def test_a_second_run_on_a_locked_folder_fails_and_touches_nothing(tmp_path, scenario,
                                                                   monkeypatch):
    out = tmp_path / "rep"
    assert run(scenario, out).exit_code == 0
    before = listing(tmp_path), (out / "summary.json").read_bytes()
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path / ".rep.lock")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        no_simulation(monkeypatch)
        result = run(scenario, out, "--seed", "7")
        assert result.exit_code == 2, result.output
        assert f"{out}: another capsim run is writing this report folder" in result.output
        assert (listing(tmp_path), (out / "summary.json").read_bytes()) == before
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    monkeypatch.undo()
    assert run(scenario, out, "--seed", "7").exit_code == 0  # released with its holder
