"""The worked examples of the README and docs/ print what capsim prints (issue 29).

``docs/examples.py`` reruns every marked console block; these tests hold its parser and
its drift check to crafted Markdown (with a fake capsim), and a slow test runs
``--check`` on the repository: an example whose figures drifted fails it.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("doc_examples", ROOT / "docs" / "examples.py")
examples = importlib.util.module_from_spec(_spec)
sys.modules["doc_examples"] = examples  # dataclasses look their module up there
_spec.loader.exec_module(examples)

PAGE = """# A page

<!-- example -->
```console
$ capsim tiers
{shown}
```

<!-- example keep="^b" -->
```console
$ capsim calibrate x --out cal  # output not shown
$ capsim run x
{kept}
```

```console
$ capsim run not-an-example
anything
```
"""


def fake_capsim(printed: dict[str, str], calls: list):
    def run(args):
        calls.append(args)
        return 0, printed[args[0]]
    return run


def regenerate(text, printed, calls=None):
    run = fake_capsim(printed, calls if calls is not None else [])
    return examples.regenerate(
        text, lambda ex: examples.render(ex, run, "page.md"), "page.md")


def test_blocks_are_found_with_their_commands_and_filters():
    lines = PAGE.format(shown="x", kept="y").split("\n")
    found = examples.find_examples(lines)
    assert [e.commands for e in found] == [
        ("capsim tiers",),
        ("capsim calibrate x --out cal  # output not shown", "capsim run x")]
    assert [e.keep for e in found] == [None, "^b"]
    assert lines[found[0].start] == "$ capsim tiers" and lines[found[0].end] == "```"


def test_the_right_output_is_unchanged_and_a_wrong_number_is_drift():
    printed = {"tiers": "\n| RPC | 4,000 |\nreport: out/report.md  (1.3 s)\n",
               "calibrate": "fitted\n", "run": "a 1\nb 2\nb 3\n"}
    right = PAGE.format(shown="| RPC | 4,000 |", kept="b 2\nb 3")
    calls: list = []
    assert regenerate(right, printed, calls) == right
    # the unmarked block never runs; the hidden command runs, in order, before the shown one
    assert calls == [["tiers"], ["calibrate", "x", "--out", "cal"], ["run", "x"]]
    wrong = PAGE.format(shown="| RPC | 4,400 |", kept="b 2\nb 3")
    assert regenerate(wrong, printed) == right


def test_a_failing_command_stops_the_regeneration():
    page = PAGE.format(shown="x", kept="y")
    with pytest.raises(RuntimeError, match="exited 2"):
        examples.regenerate(page, lambda ex: examples.render(
            ex, lambda args: (2, "capsim: error: no such file"), "page.md"), "page.md")


def test_a_marker_without_its_block_is_an_error():
    with pytest.raises(ValueError, match="page.md:1: an example marker must be followed"):
        examples.find_examples(["<!-- example -->", "text"], "page.md")


def test_timed_report_lines_and_blank_ends_are_left_out():
    assert examples.shown_output("\n\nx\nreport: r/report.md  (12.0 s)\n\n", None) == ["x"]


@pytest.mark.slow
def test_every_example_in_the_repository_prints_what_capsim_prints():
    done = subprocess.run([sys.executable, str(ROOT / "docs" / "examples.py"), "--check"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "up to date" in done.stderr
