"""The package's layers: no import points up.

    vocabulary/errors (bottom) <- config <- policy <- workload, traces <- model
        <- metrics <- report <- cli, api

A module may import its own layer or any below it. Every import statement counts,
including ones inside functions (a lazy import is still a dependency); only imports
under ``if TYPE_CHECKING:`` are skipped.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SIM = Path(__file__).resolve().parent.parent / "sim"

LAYERS: list[tuple[str, ...]] = [
    ("sim", "sim.vocabulary", "sim.errors", "sim.lazy", "sim.rng", "sim.stats", "sim.redact",
     "sim.summary", "sim.draws", "sim.regression.catalogue"),
    ("sim.config",),
    ("sim.policy",),
    ("sim.workload", "sim.traces"),
    ("sim.model", "sim.calibration"),
    ("sim.metrics", "sim.account_metrics", "sim.runner", "sim.records"),
    ("sim.report",),
    ("sim.api", "sim.cli", "sim.cli_trace", "sim.cli_sweep", "sim.jobs", "sim.regression",
     "sim.cli_regression", "sim.live", "sim.compare_traces", "sim.cli_live",
     "sim.calibration.report", "sim.cli_calibrate"),
]


def layer_of(module: str) -> int:
    """The index of the layer ``module`` belongs to (longest matching prefix)."""
    best, best_len = None, -1
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            # "sim" is the package itself: a new top-level module must be placed by name.
            within = module.startswith(p + ".") and p != "sim"
            if (module == p or within) and len(p) > best_len:
                best, best_len = i, len(p)
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS")
    return best


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
    bad = []
    for path in sorted(SIM.rglob("*.py")):
        mod = module_name(path)
        here = layer_of(mod)
        for line, target in imports_of(path):
            if layer_of(target) > here:
                bad.append(f"{path.relative_to(SIM.parent)}:{line}: {mod} (layer {here}) "
                           f"imports {target} (layer {layer_of(target)})")
    return bad


def test_no_import_points_up_the_layers():
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


@pytest.mark.parametrize(("module", "layer"), [
    ("sim.config.loader", 1), ("sim.policy.limiter", 2), ("sim.traces.replay", 3),
    ("sim.model.engine", 4), ("sim.report.writer", 6), ("sim.cli", 7),
    ("sim.policy.slots", 2), ("sim.model.ws_sessions", 4), ("sim.model.ws_records", 4),
])
def test_layer_of(module, layer):
    assert layer_of(module) == layer


def test_a_new_top_level_module_must_be_placed():
    with pytest.raises(AssertionError, match="in no layer"):
        layer_of("sim.cli_new")


@pytest.mark.parametrize("package", ["sim", "sim.policy", "sim.policy.slots", "sim.config",
                                     "sim.summary"])
def test_packages_import_without_simpy(package):
    code = f"import {package}, sys; assert 'simpy' not in sys.modules, 'simpy'"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
