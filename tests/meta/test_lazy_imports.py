"""The light commands load only what they use.

``capsim --help``, ``capsim run --help``, ``capsim tiers`` and ``capsim validate`` must
start in well under a second (``benchmarks/bench_startup.py`` measures it; no timing
here). Each test below names modules a command must not import: adding an eager import
back (a subcommand module imported by ``sim.cli.main``, a package ``__init__`` importing its
submodules, numpy at the top of a config module) makes one of them fail.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from sim.cli import trace as cli_trace
from sim.cli.main import LAZY_COMMANDS, main
from sim.traces.importers import FORMATS
from sim.traces.schema import DEFAULT_CHUNK_ROWS

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = ROOT / "workloads"
DEFAULT = ROOT / "sim" / "data" / "default.toml"
# numba: the compiled engine loads it when a run uses it, never a light command
HEAVY = ("pandas", "pyarrow", "matplotlib", "simpy", "scipy", "numba", "llvmlite")
# What each subcommand module pulls in (asyncio for the live commands, the regression
# gate's summary models, the trace importers).
SUBCOMMANDS = tuple(sorted({c.module for c in LAZY_COMMANDS.values()})) + ("asyncio",)
SCENARIO_MODELS = ("sim.config.scenario", "sim.config.loader", "sim.config.resolved")
CHILD = """
import json, sys
from sim.cli.main import main
try:
    main(sys.argv[1:], standalone_mode=False)
finally:
    print("MODULES:" + json.dumps(sorted(sys.modules)))
"""


def modules_after(*args: str) -> set[str]:
    """The modules loaded once ``capsim ARGS`` has run, in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True,
                          text=True, check=True, cwd=ROOT)
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("MODULES:"), done.stdout
    return set(json.loads(last.removeprefix("MODULES:")))


def loaded(modules: set[str], names) -> list[str]:
    return sorted(n for n in names if n in modules)


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"]])
def test_help_loads_no_model(args):
    mods = modules_after(*args)
    assert "sim.cli.main" in mods  # the child did run the command line
    assert loaded(mods, ("pydantic", "numpy", "sim.config", "sim.policy", *HEAVY,
                         *SUBCOMMANDS)) == []


def test_tiers_loads_no_scenario_model_and_no_numpy():
    mods = modules_after("tiers")
    assert "sim.config.pricing" in mods
    assert loaded(mods, ("numpy", "sim.results.summary", *SCENARIO_MODELS, *HEAVY,
                         *SUBCOMMANDS)) == []


@pytest.mark.parametrize("scenario", [DEFAULT, *sorted(WORKLOADS.glob("*.toml"))],
                         ids=lambda p: p.stem)
def test_validate_loads_no_simulator_table_plot_or_subcommand(scenario):
    mods = modules_after("validate", str(scenario))
    assert "sim.workload.size_estimate" in mods  # the run-size guard did run
    assert loaded(mods, (*HEAVY, *SUBCOMMANDS, "numpy", "sim.results.summary", "sim.policy.retry",
                         "sim.policy.limiter", "difflib")) == []


@pytest.mark.parametrize(("module", "absent"), [
    ("sim", ("sim.api", "sim.results.summary", "sim.config", "sim.policy")),
    ("sim.config.tiers", ("sim.config.pricing", "sim.policy.limiter", *SCENARIO_MODELS, "numpy")),
    ("sim.config.pricing", ("sim.policy.limiter", "sim.config.resolved", *SCENARIO_MODELS,
                            "numpy")),
    ("sim.config.distributions", ("numpy", "sim.config.scenario")),
    ("sim.config.scenario", ("numpy",)),
    ("sim.results.catalogue", ("sim.results.summary",)),
    # the engine is chosen without numba; it is imported only by a compiled run
    ("sim.compiled.choice", ("numba", "sim.compiled.engine")),
    ("sim.runner.run", ("numba", "sim.compiled.engine")),
])
def test_module_alone_loads_only_what_it_needs(module, absent):
    code = (f"import json, sys, {module}; "
            "print(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    assert loaded(set(json.loads(done.stdout)), absent) == []


@pytest.mark.parametrize("package", ["sim", "sim.config", "sim.policy"])
def test_lazy_package_names_are_the_submodules_objects(package):
    pkg = importlib.import_module(package)
    for name in pkg._WHERE:
        module = importlib.import_module(pkg._WHERE[name], package)
        assert getattr(pkg, name) is getattr(module, name), f"{package}.{name}"
    assert set(pkg.__all__) - {"__version__"} == set(pkg._WHERE)
    assert set(pkg._WHERE) <= set(dir(pkg))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        pkg.nope  # noqa: B018


def test_lazy_commands_list_like_the_commands_themselves():
    """``capsim --help`` lists a lazy command from LAZY_COMMANDS without importing it;
    what it shows must be what the command itself would show, at any width."""
    for name, lazy in LAZY_COMMANDS.items():
        real = lazy.load()
        assert real.name == name
        stand_in = lazy.stand_in(name)
        for limit in range(20, 130, 7):
            assert stand_in.get_short_help_str(limit) == real.get_short_help_str(limit), name


def reachable(group: click.Group) -> set[int]:
    """ids of every command under ``group``, subcommands of subgroups included."""
    ctx = click.Context(group)
    found = set()
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        found.add(id(cmd))
        if isinstance(cmd, click.Group):
            found |= reachable(cmd)
    return found


def test_every_command_module_registered():
    """Each command a ``sim.cli`` module defines is reachable from ``capsim``."""
    under_capsim = reachable(main)
    defined = 0
    for path in sorted((ROOT / "sim" / "cli").glob("*.py")):
        if path.stem in ("__init__", "main"):  # main is `capsim` itself
            continue
        module = importlib.import_module(f"sim.cli.{path.stem}")
        for value in vars(module).values():
            if isinstance(value, click.Command) and \
                    getattr(value.callback, "__module__", None) == module.__name__:
                defined += 1
                assert id(value) in under_capsim, f"{module.__name__}: {value.name}"
    assert defined >= len(LAZY_COMMANDS)


def test_trace_cli_constants_match_the_importer():
    assert cli_trace.FORMATS == FORMATS
    assert cli_trace.DEFAULT_CHUNK_ROWS == DEFAULT_CHUNK_ROWS
