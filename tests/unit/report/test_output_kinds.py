"""Which folders a command may replace (issue 21 items 1 and 2; docs/reference/output-folders.md).

Item 1: a folder is replaced only when it holds nothing but what capsim wrote there (its
marker, which lists the files, and those files). A folder holding a copied summary.json
beside ``.ssh/`` and ``src/`` was deleted whole by ``capsim run --out``.

Item 2: each kind of output folder (run report, calibration, sweep) is replaced only by
the same kind: ``capsim calibrate --out`` silently replaced a run report and the reverse.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from report_folders import assert_refused, no_simulation
from report_folders import contents as listing
from scenarios import scenario_text, write_scenario

from sim.cli.main import main
from sim.core.errors import CapsimError
from sim.jobs.sweep import run_sweep
from sim.jobs.sweep_plan import plan_sweep
from sim.report.folder import MARKER, ReportFolder, inspect, is_report
from sim.report.writer import write_folder


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """A real run report, made once."""
    d = tmp_path_factory.mktemp("kinds")
    scenario = write_scenario(d, scenario_text(name="tiny", rate=2, duration=30),
                              filename="tiny.toml")
    r = CliRunner().invoke(main, ["run", str(scenario), "-q", "--records", "none",
                                  "--out", str(d / "rep")])
    assert r.exit_code == 0, r.output
    return d / "rep"


@pytest.fixture
def scenario(tmp_path) -> Path:
    return write_scenario(tmp_path, scenario_text(name="tiny", rate=2, duration=30),
                          filename="tiny.toml")


def run_into(scenario, out):
    return CliRunner().invoke(main, ["run", str(scenario), "-q", "--records", "none",
                                     "--out", str(out)])


def test_the_marker_lists_the_files_written(report):
    names = sorted(p.name for p in report.iterdir() if p.name != MARKER)
    marker = (report / MARKER).read_text()
    assert 'kind = "run"' in marker
    assert "files = [" + ", ".join(f'"{n}"' for n in names) + "]" in marker
    assert is_report(report, "run") and not is_report(report, "calibration")


def test_a_project_folder_with_a_copied_summary_is_not_replaced(report, tmp_path, scenario,
                                                                monkeypatch):
    """Item 1: a copied summary.json beside .ssh/ and src/ made the folder "a report"."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("secret\n")
    (home / "src").mkdir()
    (home / "src" / "main.py").write_text("print('mine')\n")
    shutil.copy(report / "summary.json", home / "summary.json")
    before = listing(tmp_path)
    no_simulation(monkeypatch)
    r = run_into(scenario, home)
    assert_refused(r, f"capsim: error: {home}: ")
    assert listing(tmp_path) == before  # nothing touched, not even a lock beside it


def test_a_report_with_a_file_added_by_the_user_is_not_replaced(report, tmp_path, scenario,
                                                                 monkeypatch):
    """Item 1: even with its marker, a report holding one file capsim did not write."""
    rep = tmp_path / "rep"
    shutil.copytree(report, rep)
    (rep / "my-notes.txt").write_text("notes\n")
    before = listing(tmp_path)
    no_simulation(monkeypatch)
    r = run_into(scenario, rep)
    assert_refused(r, "holds files capsim did not write (my-notes.txt)")
    assert listing(tmp_path) == before


def test_a_folder_inside_a_report_is_in_the_way(report, tmp_path):
    rep = tmp_path / "rep"
    shutil.copytree(report, rep)
    (rep / "src").mkdir()
    assert inspect(rep).foreign == ("src/",)
    with pytest.raises(CapsimError, match=r"did not write \(src/\)"):
        ReportFolder(rep).check()


def test_a_report_from_before_markers_listed_files(report, tmp_path, scenario):
    """A marker-less report of capsim's own file names is still replaced (as before)."""
    rep = tmp_path / "rep"
    shutil.copytree(report, rep)
    (rep / MARKER).unlink()
    assert run_into(scenario, rep).exit_code == 0
    assert 'kind = "run"' in (rep / MARKER).read_text()


def test_its_own_report_is_still_replaced(report, tmp_path, scenario):
    rep = tmp_path / "rep"
    shutil.copytree(report, rep)
    assert run_into(scenario, rep).exit_code == 0


def _calibration_folder(out: Path) -> Path:
    def fill(folder: Path) -> None:
        (folder / "calibration.json").write_text("{}\n")
        (folder / "pricing.toml").write_text("[pricing]\n")
    return write_folder(out, fill, "calibration")


def test_run_does_not_replace_a_calibration_folder(tmp_path, scenario, monkeypatch):
    """Item 2: `capsim run --out` replaced a calibration folder."""
    cal = _calibration_folder(tmp_path / "cal")
    before = listing(tmp_path)
    no_simulation(monkeypatch)
    r = run_into(scenario, cal)
    assert_refused(r, "is a capsim calibration folder, not a capsim report folder")
    assert listing(tmp_path) == before


def test_calibrate_does_not_replace_a_run_report(report, tmp_path):
    """Item 2: `capsim calibrate --out` replaced a run report (refused before any work:
    the trace named does not even exist)."""
    rep = tmp_path / "rep"
    shutil.copytree(report, rep)
    before = listing(tmp_path)
    r = CliRunner().invoke(main, ["calibrate", str(tmp_path / "no-trace.parquet"),
                                  "--tier", "RPC", "--out", str(rep)])
    assert_refused(r, f"capsim: error: {rep}: is a capsim report folder, not a capsim "
                      "calibration")
    assert listing(tmp_path) == before
    with pytest.raises(CapsimError, match="not a capsim calibration folder"):
        _calibration_folder(rep)


def test_calibration_replaces_its_own_kind(tmp_path):
    cal = _calibration_folder(tmp_path / "cal")
    _calibration_folder(cal)
    assert is_report(cal, "calibration")


def test_run_does_not_replace_a_sweep_folder(tmp_path, scenario, monkeypatch):
    """Item 2: a sweep folder is refused, and says it is one."""
    sweep = tmp_path / "sw"
    (sweep / "runs").mkdir(parents=True)
    (sweep / "sweep-manifest.json").write_text(json.dumps({"fingerprint": "x"}))
    before = listing(tmp_path)
    no_simulation(monkeypatch)
    r = run_into(scenario, sweep)
    assert_refused(r, "is a capsim sweep folder")
    assert listing(tmp_path) == before


def test_a_sweep_does_not_take_a_run_report(report, tmp_path):
    """Item 2: `capsim sweep --out` on a run report names what the folder is."""
    rep = tmp_path / "rep"
    shutil.copytree(report, rep)
    before = listing(tmp_path)
    plan = plan_sweep(None, vary=["load=1,2"], overrides=["duration=1"])
    with pytest.raises(CapsimError, match="is a capsim report folder, not a sweep folder"):
        run_sweep(plan, rep)
    assert listing(tmp_path) == before
