"""Files a user names (a summary, a baseline, a scenario for a job) that are missing or
unreadable give one :class:`CapsimError` naming the file and what was expected, never a
traceback: one reader, :func:`sim.core.errors.read_user_text`, for all of them."""

from __future__ import annotations

import pytest

from sim.core.errors import CapsimError, read_user_text
from sim.jobs.sweep_plan import plan_sweep, scenario_source
from sim.regression.baseline import load_baseline
from sim.results.summary import load_summary


def test_text_is_returned_as_stored(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes("é\r\nx".encode())
    assert read_user_text(p) == "é\r\nx"  # no newline translation


@pytest.mark.parametrize(("load", "expected"), [
    (load_summary, "no such file (expected a report folder or a summary.json)"),
    (load_baseline, "no such baseline file (write one with `capsim baseline save`)"),
    (plan_sweep, "no such file"),
])
def test_a_missing_file_names_itself_and_what_was_expected(tmp_path, load, expected):
    missing = tmp_path / "nope.json"
    with pytest.raises(CapsimError) as caught:
        load(missing)
    assert caught.value.message == expected and caught.value.file == str(missing)


def test_a_report_folder_without_a_summary(tmp_path):
    with pytest.raises(CapsimError) as caught:
        load_summary(tmp_path)
    assert caught.value.file == str(tmp_path / "summary.json")


@pytest.mark.parametrize("load", [load_summary, load_baseline, read_user_text])
def test_undecodable_or_unreadable_files(tmp_path, load):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"x": "\xff"}')
    with pytest.raises(CapsimError, match=r"cannot read it \(UnicodeDecodeError\)"):
        load(bad)
    folder = tmp_path / "dir.json"
    folder.mkdir()
    if load is not load_summary:  # load_summary reads a folder's summary.json instead
        with pytest.raises(CapsimError, match=r"cannot read it \(IsADirectoryError\)"):
            load(folder)


def test_the_builtin_scenario_source():
    label, text = scenario_source(None)
    assert label == "<built-in default scenario>" and "[[sources]]" in text
