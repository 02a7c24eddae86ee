"""Issue 33 ("Trust, fourth pass"), items 2, 5 and 7, as a new user meets them.

2. Nothing the user made is replaced: a ``bl.json.tmp`` beside a baseline, a drive's
   ``X.live.parquet``, a symbolic link given as ``--out``; a killed ``trace import``'s
   hidden temporary file is removed by the next import.
5. A user's mistake is exit 2 and one line naming the file and the option, never a
   traceback (exit 1, which the gate reads as a regression): unwritable ``--out`` for
   ``sweep``, ``baseline save`` and ``drive`` (checked before the work, so nothing
   recorded is lost), ``--dask-scheduler 'not a url'``, ``--time-scale nan``, deeply
   nested TOML, and any file the machine refuses.
7. Messages name what is wrong: ``trace import`` blames its ``--out``, not the input,
   when the output cannot be written; a NaN in ``calibration.json`` is that file's
   field, not a ``--set``; a damaged sweep manifest is damaged, not "another sweep";
   ``--vary`` mistakes name ``--vary``; ``drive`` checks its ``--out`` folder before
   driving.

"Unwritable" is made with a file where a folder is needed (the suite may run as root,
whom permissions do not stop) or, for a full disk, an injected ``ENOSPC``.
"""

from __future__ import annotations

import errno
import json
import os
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from scenarios import poisson_source, scenario_text

from sim.cli.main import main
from sim.cli.options import handled

SAMPLES = Path(__file__).resolve().parents[3] / "workloads" / "traces"
SCENARIO = scenario_text(name="trust", top="seed = 3\n", duration=30, tiers=["RPC"],
                         sources=poisson_source(2) + "mix = { svc_call = 1.0 }\n")
MINE = b"the user's own file, not capsim's\n"
NOBODY = "https://127.0.0.1:9"  # nothing listens: a drive that got that far fails there


def cli(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def clean_error(r, *parts: str) -> str:
    """Exit 2, one ``capsim: error:`` line holding every one of ``parts``."""
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output, r.output
    assert r.output.startswith("capsim: error: "), r.output
    for part in parts:
        assert part in r.output, (part, r.output)
    return r.output


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "trust.toml"
    path.write_text(SCENARIO)
    return path


@pytest.fixture
def no_simulation(monkeypatch):
    """Fail the test if anything is simulated (a refusal must come first)."""
    def never(*a, **k):
        raise AssertionError("simulated before refusing")
    monkeypatch.setattr("sim.jobs.replicate.replicate", never)
    monkeypatch.setattr("sim.jobs.sweep.run_sweep", never)


# -- 2. nothing the user made is replaced ------------------------------------------------

def test_baseline_save_leaves_the_users_tmp_file_alone(scenario, tmp_path):
    mine = tmp_path / "bl.json.tmp"
    mine.write_bytes(MINE)
    r = cli("baseline", "save", scenario, "--out", tmp_path / "bl.json")
    assert r.exit_code == 0, r.output
    assert mine.read_bytes() == MINE
    assert json.loads((tmp_path / "bl.json").read_text())["scenario"] == "trust"
    assert not list(tmp_path.glob(".bl.json.*"))  # no temporary file left either


def test_a_symlink_given_as_out_is_followed_not_replaced(scenario, tmp_path):
    real = tmp_path / "real-report"
    link = tmp_path / "report"
    link.symlink_to(real, target_is_directory=True)
    real.mkdir()
    for _ in range(2):  # a new folder, then capsim's own report replaced
        r = cli("run", scenario, "--out", link, "-q", "--records", "none")
        assert r.exit_code == 0, r.output
        assert link.is_symlink() and os.readlink(link) == str(real)
        assert (real / "summary.json").is_file()


def test_a_killed_imports_hidden_temporary_file_is_removed_by_the_next_import(tmp_path):
    out = tmp_path / "t.parquet"
    killed = tmp_path / ".t.parquet.0123456789ab.tmp"  # what a SIGKILL-ed import leaves
    killed.write_bytes(b"PAR1 half a trace")
    past = time.time() - 3600
    os.utime(killed, (past, past))
    mine = tmp_path / ".t.parquet.tmp"  # not of capsim's name pattern: the user's
    mine.write_bytes(MINE)
    r = cli("trace", "import", SAMPLES / "sample.csv", "--out", out)
    assert r.exit_code == 0, r.output
    assert not killed.exists() and mine.read_bytes() == MINE and out.is_file()


KILLED_WRITER = """
import sys
from sim.traces.schema import TraceWriter
writer = TraceWriter(sys.argv[1])
print(writer.tmp, flush=True)
sys.stdin.readline()  # writing, until killed
"""


def test_a_really_killed_writers_temporary_file_is_removed_by_the_next_import(tmp_path):
    import signal
    import subprocess
    import sys

    out = tmp_path / "t.parquet"
    child = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(out)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    leftover = Path(child.stdout.readline().strip())
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert leftover.is_file() and leftover.name.startswith(".t.parquet.")
    past = time.time() - 3600
    os.utime(leftover, (past, past))
    r = cli("trace", "import", SAMPLES / "sample.csv", "--out", out)
    assert r.exit_code == 0, r.output
    assert not leftover.exists() and sorted(p.name for p in tmp_path.iterdir()) == [out.name]


def test_drive_refuses_a_users_live_parquet_before_connecting(scenario, tmp_path):
    sidecar = tmp_path / "t.live.parquet"
    sidecar.write_bytes(MINE)
    r = cli("drive", scenario, "--target", NOBODY, "--out", tmp_path / "t.parquet")
    clean_error(r, str(sidecar), "--out", "--force")
    assert sidecar.read_bytes() == MINE


# -- 5 and 7. one line, exit 2, naming the file and option --------------------------------

def test_drive_checks_its_out_folder_before_driving(scenario, tmp_path):
    out = tmp_path / "missing-folder" / "t.parquet"
    clean_error(cli("drive", scenario, "--target", NOBODY, "--out", out),
                str(out), "--out", "folder does not exist")
    blocker = tmp_path / "a-file"
    blocker.write_bytes(MINE)
    clean_error(cli("drive", scenario, "--target", NOBODY, "--out", blocker / "t.parquet"),
                str(blocker / "t.parquet"), "--out")


def test_a_drive_whose_trace_cannot_be_written_keeps_what_it_recorded(tmp_path):
    from sim.core.errors import CapsimError
    from sim.live.drive import _write_recorded
    from sim.live.record import DriveRecorder

    gone = tmp_path / "removed-while-driving" / "t.parquet"
    with pytest.raises(CapsimError) as caught:
        _write_recorded(DriveRecorder(0), gone, "trust")
    message = caught.value.render()
    assert str(gone) in message and "the recorded trace was written to" in message
    rescued = Path(message.split("the recorded trace was written to ")[1].split(" instead")[0])
    assert rescued.is_file() and rescued.name == "t.parquet"


def test_baseline_save_to_an_unwritable_out_is_refused_before_running(scenario, tmp_path,
                                                                      no_simulation):
    blocker = tmp_path / "a-file"
    blocker.write_bytes(MINE)
    out = blocker / "bl.json"
    clean_error(cli("baseline", "save", scenario, "--out", out), str(out), "--out")


def test_sweep_to_an_unwritable_out_is_a_clean_error(scenario, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_bytes(MINE)
    out = blocker / "sweep"
    clean_error(cli("sweep", scenario, "--vary", "duration=30,60", "--out", out),
                str(out), "--out")
    assert blocker.read_bytes() == MINE


def test_a_damaged_sweep_manifest_is_called_damaged_not_another_sweep(scenario, tmp_path):
    out = tmp_path / "sweep"
    out.mkdir()
    (out / "sweep-manifest.json").write_text('{"fingerprint": "abc", ')  # cut short
    text = clean_error(cli("sweep", scenario, "--vary", "duration=30,60", "--out", out),
                       str(out / "sweep-manifest.json"), "damaged")
    assert "another sweep" not in text


def test_vary_mistakes_name_vary_not_set(scenario, tmp_path):
    for item, expected in (("duration=30,-5", "--vary duration"),
                           ("no_such_key=1,2", "--vary no_such_key")):
        text = clean_error(cli("sweep", scenario, "--vary", item, "--out", tmp_path / "s"),
                           expected)
        assert "--set" not in text
        assert not (tmp_path / "s").exists()


def test_a_dask_scheduler_that_is_not_an_address(scenario, tmp_path):
    pytest.importorskip("distributed")
    clean_error(cli("sweep", scenario, "--vary", "duration=30,60", "--out", tmp_path / "s",
                    "--dask-scheduler", "not a url"),
                "--dask-scheduler", "tcp://HOST:8786")


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_serve_and_drive_refuse_a_time_scale_that_is_not_a_positive_finite_number(
        scenario, tmp_path, monkeypatch, value):
    def never(*a, **k):
        raise AssertionError("served with an impossible time scale")
    monkeypatch.setattr("sim.live.server.serve", never)
    for args in (["serve", "--tier", "RPC"],
                 ["drive", scenario, "--target", NOBODY, "--out", tmp_path / "t.parquet"]):
        clean_error(cli(*args, "--time-scale", value), "--time-scale",
                    "is not a finite number")
    for refused in ("0", "-1", "x"):  # refused before too (in other words)
        clean_error(cli("serve", "--tier", "RPC", "--time-scale", refused), "--time-scale")


def test_deeply_nested_toml_is_a_clean_error(tmp_path, scenario):
    deep = tmp_path / "deep.toml"
    deep.write_text(SCENARIO + "[check]\nx = " + "[" * 2000 + "]" * 2000 + "\n")
    clean_error(cli("validate", deep), str(deep), "nested too deeply")
    clean_error(cli("validate", scenario, "--set", "slo=" + "[" * 2000 + "]" * 2000),
                "--set slo", "nested too deeply")


def test_trace_import_blames_its_out_when_the_output_cannot_be_written(tmp_path,
                                                                      monkeypatch):
    import pyarrow.parquet as pq

    def disk_full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(pq, "ParquetWriter", disk_full)
    out = tmp_path / "t.parquet"
    source = SAMPLES / "sample.csv"
    text = clean_error(cli("trace", "import", source, "--out", out),
                       f"{out}: --out: cannot write it (No space left on device)")
    assert str(source) not in text
    assert list(tmp_path.iterdir()) == []  # no temporary file left


def test_a_nan_in_calibration_json_names_that_file_and_field(scenario, tmp_path):
    cal = tmp_path / "calibration.json"
    cal.write_text('{"prices": [], "pricing": {}, '
                   '"limiter": {"alignment": "utc", "phase_s": NaN}}')
    text = clean_error(cli("sweep", scenario, "--vary", "duration=30,60", "--out",
                           tmp_path / "s", "--calibration", cal),
                       f"{cal}: limiter.phase_s: expected a finite number, got nan")
    assert "--set" not in text


def test_a_file_the_machine_refuses_is_one_line_anywhere():
    @click.command()
    def job():
        raise PermissionError(errno.EACCES, "Permission denied", "/srv/out/report.md")

    r = CliRunner().invoke(handled(job), [])
    clean_error(r, "/srv/out/report.md: cannot read or write it (Permission denied)")
