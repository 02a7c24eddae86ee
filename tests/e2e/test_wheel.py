"""`capsim run` works from a built wheel, not only from an editable checkout.

The default scenario and the pricing assumptions must ship inside the package: the
wheel is installed into a fresh virtual environment and run from an empty folder.

The fresh environment has no site packages of its own beyond the wheel: the
dependencies are those of the interpreter running the tests, exposed through a ``.pth``
file listing its site-packages folders. That works the same from a bare system Python
and from inside a virtual environment (``system_site_packages=True`` saw the *base*
interpreter's packages, not the running venv's), needs no network, and cannot pick up
the checkout: folders named in a ``.pth`` line are put on ``sys.path`` without their own
``.pth`` files being run, so the editable install's import hook stays out.
"""

from __future__ import annotations

import json
import site
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _dependency_dirs() -> list[str]:
    """The running interpreter's site-packages folders (where the dependencies are)."""
    dirs = [*site.getsitepackages(), sysconfig.get_paths()["purelib"],
            sysconfig.get_paths()["platlib"]]
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return [d for d in dict.fromkeys(dirs) if Path(d).is_dir()]


def test_wheel_runs_the_default_scenario(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(dist), str(ROOT)], check=True, cwd=tmp_path)
    wheel = next(dist.glob("capsim-*.whl"))
    env_dir = tmp_path / "venv"
    venv.create(env_dir, system_site_packages=False, with_pip=False)
    py = env_dir / "bin" / "python"
    # The running pip installs into the new environment (no ensurepip: it is slow).
    subprocess.run([sys.executable, "-m", "pip", "--python", py, "install", "-q", "--no-deps",
                    str(wheel)], check=True)
    env_site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                              check=True, capture_output=True, text=True).stdout.strip()
    # Appended after the venv's own site-packages, so the wheel's capsim comes first.
    (Path(env_site) / "_capsim_test_deps.pth").write_text("\n".join(_dependency_dirs()) + "\n")
    where = subprocess.run([py, "-c", "import sim; print(sim.__file__)"], check=True,
                           capture_output=True, text=True, cwd=tmp_path).stdout
    assert str(env_dir) in where, where
    # Only its own and the running interpreter's packages: never the base interpreter's
    # when the tests run inside a virtual environment.
    seen = json.loads(subprocess.run([py, "-c", "import json, sys; print(json.dumps(sys.path))"],
                                     check=True, capture_output=True, text=True).stdout)
    site_dirs = {p for p in seen if p.endswith(("site-packages", "dist-packages"))}
    assert site_dirs <= {env_site, *_dependency_dirs()}, site_dirs
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run([env_dir / "bin" / "capsim", "run", "--set", "duration=60",
                           "--tier", "RPC", "-q"], cwd=work, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    summary = json.loads((work / "reports" / "default" / "summary.json").read_text())
    assert summary["scenario_file"] == "<built-in default scenario>"
    assert summary["tiers"][0]["tier"] == "RPC" and summary["tiers"][0]["requests"] > 0
