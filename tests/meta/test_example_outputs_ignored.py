"""What the documentation's examples write stays out of git (issue 21, item 15).

A new user runs the README's examples from the repository root; every file or folder
they name with ``--out`` (relative paths), and the wheel ``pip wheel`` writes, must be
git-ignored, and every ``pip wheel`` command shown must build capsim alone into a folder
of its own (``pip wheel .`` dropped 22 wheels into the repository root)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _commands(text: str) -> list[str]:
    """Shell-looking lines of code blocks and inline code spans."""
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M)
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))
    lines = [ln.strip().removeprefix("$ ") for b in blocks for ln in b.splitlines()]
    return [c for c in lines + spans if re.match(r"(capsim|pip|python3? -m pip)\b", c)]


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command, comments=True)
    except ValueError:
        return command.split()


def _out_paths() -> set[str]:
    out = set()
    for doc in DOCS:
        for cmd in _commands(doc.read_text(encoding="utf-8")):
            words = _words(cmd)
            for flag, value in zip(words, words[1:], strict=False):
                if flag == "--out" and not value.startswith("/") and value.upper() != value:
                    out.add(value.rstrip("]"))
    return out


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                    reason="not a git checkout")
def test_every_example_output_is_git_ignored():
    """Item 15: the outputs of the README's examples are in .gitignore."""
    paths = sorted(_out_paths()) + ["capsim-0.1.0-py3-none-any.whl", "dist/x.whl",
                                    "reports/default/summary.json"]
    assert "last-week.parquet" in paths  # the walk finds the README's examples
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=ROOT,
                             capture_output=True, text=True).stdout.split()
    assert sorted(set(paths) - set(ignored)) == []


def _pip_wheels(doc: Path) -> list[str]:
    return [c for c in _commands(doc.read_text(encoding="utf-8")) if "pip wheel" in c]


def _builds_capsim_alone_into_a_folder(command: str) -> bool:
    words = _words(command.split("&&")[0])
    return "--no-deps" in words and ("-w" in words or "--wheel-dir" in words)


def test_the_how_to_builds_capsim_alone_into_dist():
    """Item 15: docs/ shows ``pip wheel --no-deps -w dist .``."""
    wheels = [c for d in DOCS if d.name != "README.md" for c in _pip_wheels(d)]
    assert wheels and all(_builds_capsim_alone_into_a_folder(c) for c in wheels), wheels


def test_the_readme_builds_capsim_alone_into_dist():
    """Item 15: the README's own ``pip wheel`` builds capsim alone into ``dist/``."""
    wheels = _pip_wheels(ROOT / "README.md")
    assert all(_builds_capsim_alone_into_a_folder(c) for c in wheels), wheels
