"""`capsim run` works from a built wheel, not only from an editable checkout.

The default scenario and the pricing assumptions must ship inside the package: the
wheel is installed into a fresh virtual environment and run from an empty folder.
"""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_runs_the_default_scenario(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(dist), str(ROOT)], check=True, cwd=tmp_path)
    wheel = next(dist.glob("capsim-*.whl"))
    env_dir = tmp_path / "venv"
    # System site-packages provide the dependencies; the venv's own capsim shadows any
    # editable install of the checkout.
    venv.create(env_dir, system_site_packages=True, with_pip=True)
    py = env_dir / "bin" / "python"
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True)
    where = subprocess.run([py, "-c", "import sim; print(sim.__file__)"], check=True,
                           capture_output=True, text=True, cwd=tmp_path).stdout
    assert str(env_dir) in where, where
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run([env_dir / "bin" / "capsim", "run", "--set", "duration=60",
                           "--tier", "RPC", "-q"], cwd=work, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    summary = json.loads((work / "reports" / "default" / "summary.json").read_text())
    assert summary["scenario_file"] == "<built-in default scenario>"
    assert summary["tiers"][0]["tier"] == "RPC" and summary["tiers"][0]["requests"] > 0
