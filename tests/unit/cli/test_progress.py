"""The one progress display: on a terminal a tqdm bar on stderr; nothing at all when
the stream is not a terminal or with -q; stdout never touched."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from sim.cli.main import main
from sim.cli.progress import Progress, RunProgress, shown


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_shown_only_on_a_terminal_and_not_quiet():
    assert shown(file=Terminal()) and not shown(quiet=True, file=Terminal())
    assert not shown(file=io.StringIO())


def test_a_bar_of_runs_on_a_terminal():
    term = Terminal()
    with Progress("sweep", 3, "runs", file=term) as bar:
        for done in (1, 2, 3):  # resumed: one run was already in the folder
            bar.to(done, 3)
    out = term.getvalue()
    assert "sweep:" in out and "3/3 runs" in out and "100%" in out
    assert "\r" in out  # redrawn in place


def test_nothing_when_not_a_terminal_or_quiet():
    for file, quiet in ((io.StringIO(), False), (Terminal(), True)):
        with Progress("sweep", 3, "runs", quiet=quiet, file=file) as bar:
            bar.to(3)
            bar.step("x")
        assert file.getvalue() == ""


def test_run_progress_sums_the_tiers_then_counts_replications():
    term = Terminal()
    tiers = [SimpleNamespace(name="RPC"), SimpleNamespace(name="Search")]
    p = RunProgress(tiers, 100.0, file=term)
    p.tier_progress(tiers[0], 100.0)
    p.tier_progress(tiers[1], 50.0)
    assert p.simulating.bar.n == 150 and p.simulating.bar.total == 200
    p.tier_progress(tiers[1], 100.0)
    p.replication_progress(1, 3)
    p.replication_progress(3, 3)
    p.close()
    out = term.getvalue()
    assert "200/200 simulated s" in out and "3/3 done" in out


def test_a_captured_run_prints_no_progress(tmp_path):
    done = CliRunner().invoke(main, ["run", "--set", "duration=30", "--tier", "RPC",
                                     "--replications", "2", "--out", str(tmp_path / "r")])
    assert done.exit_code == 0, done.output
    assert "simulating" not in done.output and "replication" not in done.stderr


def test_lines_written_above_the_bar_and_a_note_after_it():
    term = Terminal()
    with Progress("calibrating", 5, "steps", file=term) as bar:
        bar.to(1, note="fitting the bill")
        bar.write("advise: 3 tiers simulated")
    out = term.getvalue()
    assert "advise: 3 tiers simulated\n" in out and "fitting the bill" in out
    quiet = io.StringIO()
    with Progress("calibrating", 5, "steps", file=quiet) as bar:
        bar.to(1, note="x")
    assert quiet.getvalue() == ""


@pytest.mark.parametrize("command", [
    ["run"], ["sweep"], ["headroom"], ["calibrate"], ["advise"], ["baseline", "save"],
    ["baseline", "update"], ["check"]])
def test_every_long_command_takes_q(command):
    """Issue 35: the one progress display of every long command is off with -q (a
    command without the option refused `-q` with exit 2)."""
    from click.testing import CliRunner

    from sim.cli.main import main

    done = CliRunner().invoke(main, [*command, "--help"])
    assert done.exit_code == 0 and "-q, --quiet" in done.output
