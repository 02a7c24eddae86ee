"""The package's layers are its folders: no import points up.

    core <- results <- config <- policy <- workload, traces <- model <- metrics <- runner
        <- report <- api <- jobs, regression, calibration, live, advisor <- cli

A module's layer is the folder it stands in (``sim/<folder>/...``), so moving a module is
placing it; the only list kept by hand is the order of the folders below. A module may
import its own layer or any below it. Every import statement counts, including ones inside
functions (a lazy import is still a dependency); only imports under ``if TYPE_CHECKING:``
are skipped. Modules loose in ``sim/`` are the package face (``sim/__init__.py``, which
only re-exports names lazily, on top) and ``sim/api.py`` (its own floor).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SIM = next(d / "sim" for d in Path(__file__).resolve().parents
           if (d / "sim" / "__init__.py").exists())

# The floors, bottom first: each names folders of sim/ (or a loose module).
LAYERS: list[tuple[str, ...]] = [
    ("core",), ("results",), ("config",), ("policy",), ("workload", "traces"),
    ("model", "compiled"),
    ("metrics",), ("runner",), ("report",), ("api",),
    ("jobs", "regression", "calibration", "live", "advisor"), ("cli",), ("__init__",),
]
LOOSE_ALLOWED = {"__init__", "api"}


def layer_of(module: str) -> int:
    """The floor of ``module`` (``sim.<folder>...``): the index of its folder in LAYERS."""
    parts = module.split(".")
    folder = parts[1] if len(parts) > 1 else "__init__"
    for i, names in enumerate(LAYERS):
        if folder in names:
            return i
    raise AssertionError(f"{module} is in no layer: put it in a folder of LAYERS")


def module_name(path: Path) -> str:
    rel = path.relative_to(SIM.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _type_checking_lines(tree: ast.AST) -> set[int]:
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in node.body:
                skip.update(range(sub.lineno, (sub.end_lineno or sub.lineno) + 1))
    return skip


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every ``sim`` import in ``path``."""
    mod = module_name(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    out = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "sim"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "sim":
                continue
            for alias in node.names:  # `from . import html` imports the module sim.report.html
                sub = f"{target}.{alias.name}"
                is_module = (SIM.parent / Path(*sub.split("."))).with_suffix(".py").exists() \
                    or (SIM.parent / Path(*sub.split("."))).is_dir()
                out.append((node.lineno, sub if is_module else target))
    return out


def violations() -> list[str]:
    loose = {p.stem for p in SIM.glob("*.py")} - LOOSE_ALLOWED
    bad = [f"sim/{name}.py: a module loose in sim/ (put it in a folder)" for name in sorted(loose)]
    for path in sorted(SIM.rglob("*.py")):
        if path.parent == SIM and path.stem in loose:
            continue
        mod = module_name(path)
        here = layer_of(mod)
        for line, target in imports_of(path):
            if layer_of(target) > here:
                bad.append(f"{path.relative_to(SIM.parent)}:{line}: {mod} (layer {here}) "
                           f"imports {target} (layer {layer_of(target)})")
    return bad


def test_no_import_points_up_the_layers():
    assert len(list(SIM.rglob("*.py"))) > 100  # the real package was found
    assert violations() == []


def test_the_walker_sees_an_upward_import(tmp_path, monkeypatch):
    """The check can fail: a policy module importing the model is reported."""
    fake = tmp_path / "sim"
    (fake / "policy").mkdir(parents=True)
    (fake / "model").mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "policy" / "__init__.py").write_text("")
    (fake / "model" / "__init__.py").write_text("")
    (fake / "model" / "engine.py").write_text("X = 1\n")
    (fake / "policy" / "bad.py").write_text(
        "def f():\n    from ..model.engine import X\n    return X\n")
    monkeypatch.setattr(sys.modules[__name__], "SIM", fake)
    found = violations()
    assert len(found) == 1 and "sim.policy.bad" in found[0] and "sim.model.engine" in found[0]


@pytest.mark.parametrize(("low", "high"), [
    ("sim.core.errors", "sim.results.summary"), ("sim.config.loader", "sim.policy.limiter"),
    ("sim.policy.admission", "sim.model.engine"), ("sim.traces.replay", "sim.model.engine"),
    ("sim.model.websockets.sessions", "sim.metrics.figures"),
    ("sim.runner.run", "sim.report.writer"),
    ("sim.api", "sim.jobs.sweep"), ("sim.calibration.agreement", "sim.cli.main"),
])
def test_layer_order(low, high):
    assert layer_of(low) < layer_of(high)


def test_a_new_folder_must_be_placed():
    with pytest.raises(AssertionError, match="in no layer"):
        layer_of("sim.newfolder.thing")


def test_a_module_loose_in_sim_is_reported(tmp_path, monkeypatch):
    fake = tmp_path / "sim"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "helpers.py").write_text("X = 1\n")
    monkeypatch.setattr(sys.modules[__name__], "SIM", fake)
    assert violations() == ["sim/helpers.py: a module loose in sim/ (put it in a folder)"]


@pytest.mark.parametrize("package", ["sim", "sim.policy", "sim.policy.slots", "sim.config",
                                     "sim.results.summary"])
def test_packages_import_without_simpy(package):
    code = f"import {package}, sys; assert 'simpy' not in sys.modules, 'simpy'"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
