"""``--engine auto|simpy|compiled``: which engine runs, and what a user is told."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from scenarios import poisson_source, scenario_text, write_scenario

from sim.compiled import choice
from sim.config.resolved import load
from sim.core.errors import CapsimError

ROOT = Path(__file__).resolve().parents[3]
STREAMS = poisson_source(1) + '[[streams]]\nname = "c"\nkey = "k"\nstream = "new-blocks"\n'
# more streams per connection than the compiled engine keeps a row for: it does not run it
WIDE = "[clients.default.http]\nmax_streams_per_conn = 5000\n"
WORKERS = ('[[sources]]\nname = "w"\nkey = "k"\n'
           'workers = { count = 2, think = { dist = "exponential", mean = 1.0 } }\n')


def test_auto_runs_the_compiled_engine_on_open_and_closed_loop_demand(tmp_path):
    loaded = load(write_scenario(tmp_path, sources=poisson_source(1) + WORKERS))
    assert choice.uncovered(loaded) == []
    assert choice.choose_engine(loaded, "auto").engine == "compiled"
    assert choice.choose_engine(loaded, "simpy").engine == "simpy"


def test_auto_runs_the_compiled_engine_on_websockets(tmp_path):
    loaded = load(write_scenario(tmp_path, sources=STREAMS))
    assert choice.uncovered(loaded) == []
    assert choice.uncovered(load(None)) == []  # the default scenario


def test_auto_falls_back_with_the_reason(tmp_path):
    loaded = load(write_scenario(tmp_path, tables=WIDE))
    chosen = choice.choose_engine(loaded, "auto")
    assert chosen.engine == "simpy" and "max_streams_per_conn above" in chosen.reason


def test_limits_beyond_its_arrays_run_on_simpy(tmp_path):
    loaded = load(write_scenario(tmp_path, tables=WIDE))
    assert choice.uncovered(loaded) == [
        "max_streams_per_conn above 4096 (clients default)"]


def test_compiled_on_an_uncovered_scenario_is_a_user_error(tmp_path):
    loaded = load(write_scenario(tmp_path, tables=WIDE))
    with pytest.raises(CapsimError, match="max_streams_per_conn") as err:
        choice.choose_engine(loaded, "compiled")
    assert err.value.field == "engine"


def test_without_numba_auto_says_so_and_compiled_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(choice, "numba_available", lambda: False)
    loaded = load(write_scenario(tmp_path))
    chosen = choice.choose_engine(loaded, "auto")
    assert chosen.engine == "simpy" and "numba is not installed" in chosen.reason
    with pytest.raises(CapsimError, match="numba"):
        choice.choose_engine(loaded, "compiled")


def test_cache_folder_is_the_users(monkeypatch, tmp_path):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert choice.numba_cache_dir() == str(tmp_path / "capsim" / "numba")
    monkeypatch.setenv("NUMBA_CACHE_DIR", "/elsewhere")
    assert choice.numba_cache_dir() == "/elsewhere"


def test_compiled_engine_caches_where_the_user_can_write(tmp_path):
    """A fresh process importing the engine points numba at the user's cache folder."""
    code = ("import os, sim.compiled.jit, numba; "
            "print(numba.config.CACHE_DIR)")
    env = {k: v for k, v in __import__("os").environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=ROOT, env=env)
    assert done.stdout.strip() == str(tmp_path / "capsim" / "numba")


def test_run_writes_which_engine_ran(tmp_path):
    from sim.api import run

    path = write_scenario(tmp_path, text=scenario_text(duration=20, rate=2))
    assert run(path, engine="compiled").summary.engine == "compiled"
    simpy = run(path, engine="simpy").summary
    assert simpy.engine is None and '"engine"' not in simpy.to_json()


def test_cli_compiled_on_an_uncovered_scenario_exits_2_without_traceback(tmp_path):
    from click.testing import CliRunner

    from sim.cli.main import main

    path = write_scenario(tmp_path, tables=WIDE)
    done = CliRunner().invoke(main, ["run", str(path), "--engine", "compiled", "--out",
                                     str(tmp_path / "out")])
    assert done.exit_code == 2
    assert "compiled engine cannot run this scenario: max_streams_per_conn" in done.output
    assert "Traceback" not in done.output
    assert not (tmp_path / "out").exists()
