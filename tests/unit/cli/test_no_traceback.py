"""Ordinary mistakes and failures end in one ``capsim: error:`` line, exit 2, no traceback
(issue 21 item 10).

Each of these ended in a traceback: `serve --cert-dir` on an unwritable path, `drive --ca`
with a file that is not PEM, `--set start=9999-12-31T23:59:59Z` (validate passed it, the
run crashed after simulating), a worker of a `--jobs` pool killed (BrokenProcessPool), a
HAR too large for memory (MemoryError); and a `--ca` that does not sign the emulator's
certificate was reported as "no emulator answering".
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from scenarios import scenario_text

from sim.cli.main import main
from sim.cli.options import handled

SAMPLES = Path(__file__).resolve().parents[3] / "workloads" / "traces"


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def clean_error(r, *parts: str) -> None:
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    line = next(ln for ln in r.output.splitlines() if ln.startswith("capsim: error: "))
    for part in parts:
        assert part in line, line
    assert "Traceback" not in r.output


def test_serve_with_an_unwritable_cert_dir(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    where = blocker / "certs"
    clean_error(cli("serve", "--tier", "RPC", "--port", "0", "--cert-dir", where),
                str(where), "--cert-dir", "cannot write")


def test_drive_with_a_ca_that_is_not_pem(tmp_path):
    (tmp_path / "s.toml").write_text(scenario_text())
    bad = tmp_path / "ca.pem"
    bad.write_text("this is not a certificate\n")
    clean_error(cli("drive", tmp_path / "s.toml", "--target", "https://127.0.0.1:9",
                    "--ca", bad, "--out", tmp_path / "t.parquet"),
                str(bad), "--ca", "not a PEM CA certificate")
    assert not (tmp_path / "t.parquet").exists()


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_start_too_far_in_the_future_is_refused(tmp_path, command):
    """validate passed it; run crashed after simulating (nanosecond timestamps overflow)."""
    r = cli(command, "--set", "start=9999-12-31T23:59:59Z", "--set", "duration=60",
            *(["--out", tmp_path / "o"] if command == "run" else []))
    clean_error(r, "start", "expected a start between")
    assert not (tmp_path / "o").exists()


def test_a_start_in_range_is_accepted():
    assert cli("validate", "--set", "start=2199-12-31T00:00:00Z").exit_code == 0


def _die():
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_killed_worker_is_a_clear_error():
    """A real worker killed mid-run: BrokenProcessPool becomes one line."""
    from sim.core.workers import process_pool

    @click.command()
    def job():
        with process_pool(1) as pool:
            pool.submit(_die).result()

    r = CliRunner().invoke(handled(job), [])
    clean_error(r, "a worker process ended abruptly")


def test_a_har_too_large_for_memory(tmp_path, monkeypatch):
    """HAR entries are streamed; a file the streaming parser refuses is read whole, and
    that can run out of memory."""
    import ijson

    def exhausted(*a, **k):
        raise MemoryError

    def refused(*a, **k):
        raise ijson.JSONError("refused")

    monkeypatch.setattr("sim.traces.formats_har._has_entries", refused)
    monkeypatch.setattr("sim.traces.formats_har.json.load", exhausted)
    r = cli("trace", "import", SAMPLES / "sample.har", "--out", tmp_path / "t.parquet")
    clean_error(r, str(SAMPLES / "sample.har"), "too large to load")


def test_memory_exhausted_anywhere_is_a_clear_error():
    @click.command()
    def job():
        raise MemoryError

    clean_error(CliRunner().invoke(handled(job), []), "out of memory")


def test_a_wrong_ca_is_a_trust_failure_not_a_missing_emulator(tmp_path):
    from live_server import running_server

    from sim.live.certs import make_certificate

    other = make_certificate(tmp_path / "other")  # a CA that did not sign the server's
    with running_server(tmp_path, "", "RPC") as server:
        r = cli("drive", tmp_path / "scenario.toml", "--target",
                f"https://127.0.0.1:{server.port}", "--ca", other.ca_path,
                "--out", tmp_path / "t.parquet")
    clean_error(r, "--ca", "not signed by the --ca given")
    assert "no emulator answering" not in r.output
