"""report.html in a real headless browser (Debian's chromium).

The report must render as one self-contained page: the tier table, the recommendation
and every plot as an embedded image that the browser decodes (no file or network
fetches). Outside CI the test is skipped when chromium is missing; in CI (.ci/run
installs chromium) a missing browser is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli.main import main

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage"]


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is required in CI (.ci/run installs it)")
        pytest.skip("chromium not installed (apt-get install chromium)")
    return path


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("html") / "rep"
    result = CliRunner().invoke(main, ["run", "--set", "duration=120", "--tier", "RPC",
                                       "--tier", "Professional bundle", "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    return out


def _chromium(chromium: str, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp / "profile"
    profile.mkdir(exist_ok=True)
    return subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120)


def test_report_renders_with_its_tables(chromium, report, tmp_path):
    html_file = report / "report.html"
    done = _chromium(chromium, tmp_path, "--dump-dom", html_file.as_uri())
    dom = done.stdout
    assert done.returncode == 0, done.stderr[-2000:]
    assert "<h1>capsim report: default</h1>" in dom
    assert "<strong>Professional bundle</strong>" in dom  # the recommendation
    rows = re.findall(r"<tr><td[^>]*>(RPC|Professional bundle)</td>", dom)
    assert rows.count("RPC") >= 3 and rows.count("Professional bundle") >= 3
    images = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,', dom)
    assert sorted(images) == sorted(p.name for p in report.glob("*.png"))
    assert "file://" not in dom.replace(html_file.as_uri(), "") and "http" not in dom


def test_report_screenshot_shows_the_plots(chromium, report, tmp_path):
    shot = tmp_path / "shot.png"
    done = _chromium(chromium, tmp_path, f"--screenshot={shot}", "--window-size=1280,4000",
                     "--hide-scrollbars", (report / "report.html").as_uri())
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    from matplotlib import image

    pixels = image.imread(shot)[..., :3]
    # A page of text on white is mostly white; decoded plots add large coloured areas.
    coloured = ((pixels.max(axis=2) - pixels.min(axis=2)) > 0.2).mean()
    assert coloured > 0.01, f"only {coloured:.2%} coloured pixels: plots not rendered?"
