"""report.html in a real headless browser (Debian's chromium).

The report must render as one self-contained page: the tier table, the recommendation,
the interactive charts (plotly.js embedded; a real mouse move over a window shows that
window's figures) and every other plot as an embedded image that the browser decodes
(no file or network fetches). Outside CI the test is skipped when chromium is missing;
in CI (.ci/run installs chromium) a missing browser is a failure.
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
    from sim.report.interactive import REPLACES

    html_file = report / "report.html"
    done = _chromium(chromium, tmp_path, "--virtual-time-budget=5000", "--dump-dom",
                     html_file.as_uri())
    dom = done.stdout
    assert done.returncode == 0, done.stderr[-2000:]
    assert "<h1>capsim report: default</h1>" in dom
    assert "<strong>Professional bundle</strong>" in dom  # the recommendation
    rows = re.findall(r"<tr>\s*<td[^>]*>(RPC|Professional bundle)</td>", dom)
    assert rows.count("RPC") >= 3 and rows.count("Professional bundle") >= 3
    images = re.findall(r'<img src="data:image/png;base64,[^"]*" alt="([^"]+)"', dom)
    pngs = {p.name for p in report.glob("*.png")}
    assert sorted(images) == sorted(pngs - set(REPLACES))  # the rest are charts
    for chart in REPLACES.values():  # drawn by plotly.js: an SVG inside each chart
        assert re.search(rf'<div class="chart[^"]*" id="{chart}"[^>]*>.*?<svg', dom, re.S)
    markup = re.sub(r"<script>.*?</script>", "", dom, flags=re.S)  # plotly.js's own text
    assert not re.search(r'(src|href)="(https?|file):', markup)  # nothing fetched


HOVER = """<script>
window.addEventListener("load", function () {
  var gd = document.getElementById("cu-per-window");
  var trace = gd.data.find(function (t) { return t.name === TIER; });
  var i = trace.customdata.findIndex(function (c) { return c[0] === WINDOW; });
  var xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
  var drag = gd.querySelector(".nsewdrag"), box = drag.getBoundingClientRect();
  drag.dispatchEvent(new MouseEvent("mousemove", {bubbles: true,
      clientX: box.left + xa.l2p(trace.x[i]) + 1, clientY: box.top + ya.l2p(trace.y[i])}));
  setTimeout(function () {
    var out = document.createElement("pre");
    out.id = "hovered";
    out.textContent = Array.from(gd.querySelectorAll(".hoverlayer .hovertext text"))
      .map(function (t) { return t.textContent; }).join(" | ") || "nothing shown";
    document.body.appendChild(out);
  }, 500);
});
</script>"""


@pytest.mark.parametrize("tier, window", [("Professional bundle", 4), ("RPC", 2)])
def test_hovering_a_window_shows_its_cu(chromium, report, tmp_path, tier, window):
    import pandas as pd

    page = (report / "report.html").read_text(encoding="utf-8")
    script = HOVER.replace("TIER", repr(tier)).replace("WINDOW", str(window))
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body></html>", script + "</body></html>"),
                     encoding="utf-8")
    done = _chromium(chromium, tmp_path, "--virtual-time-budget=10000", "--dump-dom",
                     probe.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    shown = re.search(r'<pre id="hovered">(.*?)</pre>', done.stdout, re.S).group(1)
    # The window's figures, read independently from windows.parquet.
    w = pd.read_parquet(report / "windows.parquet")
    row = w[(w["tier"] == tier) & (w["window"] == window)].iloc[0]
    assert tier in shown and f"window {window} " in shown
    assert f"CU reserved {row.reserved_cu:,.0f} of {row.limit_cu:,.0f}" in shown, shown
    assert f"throttled {row.throttled:,}" in shown


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


TOGGLE = """<script>
window.addEventListener("load", function () {
  var gd = document.getElementById("cu-per-window");
  var toggle = gd.querySelector(".legend .traces .legendtoggle");
  var box = toggle.getBoundingClientRect();
  var at = {bubbles: true, clientX: box.left + 5, clientY: box.top + 5, button: 0};
  ["mousedown", "mouseup", "click"].forEach(function (kind) {
    toggle.dispatchEvent(new MouseEvent(kind, at));
  });
  setTimeout(function () {
    var out = document.createElement("pre");
    out.id = "toggled";
    out.textContent = gd.data.map(function (t) {
      return t.name + "=" + (t.visible === undefined ? true : t.visible);
    }).join(" | ");
    document.body.appendChild(out);
  }, 1000);
});
</script>"""


def test_clicking_a_tier_in_the_legend_hides_it_and_its_limit(chromium, report, tmp_path):
    page = (report / "report.html").read_text(encoding="utf-8")
    probe = tmp_path / "toggle.html"
    probe.write_text(page.replace("</body></html>", TOGGLE + "</body></html>"),
                     encoding="utf-8")
    done = _chromium(chromium, tmp_path, "--virtual-time-budget=10000", "--dump-dom",
                     probe.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    shown = re.search(r'<pre id="toggled">(.*?)</pre>', done.stdout, re.S).group(1)
    # The first legend entry is the first tier (RPC): it and its limit line are hidden,
    # the other tier stays.
    assert shown == ("RPC=legendonly | RPC limit=legendonly | Professional bundle=true | "
                     "Professional bundle limit=true"), shown
