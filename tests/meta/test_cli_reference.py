"""docs/reference/cli.md says what ``--help`` says, for every command and subcommand.

The page is generated (``python -m sim.cli.reference``); these tests fail when a command's
help changed and the page was not regenerated, when a command is missing from the page,
and when the generator itself stops printing what ``capsim ... --help`` prints.
"""

from __future__ import annotations

import re
from pathlib import Path

import click
from click.testing import CliRunner

from sim.cli.main import main
from sim.cli.reference import COMMAND, WIDTH, render

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "cli.md"
REGENERATE = f"docs/reference/cli.md is out of date: regenerate it with `{COMMAND}`"


def page_sections(text: str) -> dict[str, str]:
    """``{"capsim trace import": "<help text>", ...}`` from the page's headings and blocks."""
    found = re.findall(r"^#{2,3} `([^`]+)`\n\n```text\n(.*?)\n```$", text, re.M | re.S)
    return {path: help_text for path, help_text in found}


def command_paths() -> list[list[str]]:
    """Every command path below ``capsim`` (lazy commands loaded), groups included."""
    paths = []

    def walk(command: click.Command, path: list[str], ctx: click.Context) -> None:
        paths.append(path)
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                walk(sub, [*path, name], click.Context(sub, info_name=name, parent=ctx))

    walk(main, [], click.Context(main, info_name="capsim"))
    return paths


def test_the_page_is_what_the_generator_prints():
    assert PAGE.read_text(encoding="utf-8") == render(), REGENERATE


def test_every_command_is_on_the_page_with_its_help():
    sections = page_sections(PAGE.read_text(encoding="utf-8"))
    runner = CliRunner()
    paths = command_paths()
    assert len(paths) >= 15 and ["trace", "import"] in paths and ["baseline", "save"] in paths
    for path in paths:
        name = " ".join(["capsim", *path])
        assert name in sections, f"{name} is missing from the page; {REGENERATE}"
        result = runner.invoke(main, [*path, "--help"], prog_name="capsim",
                               terminal_width=WIDTH, max_content_width=WIDTH)
        assert result.exit_code == 0, result.output
        assert sections[name] == result.output.rstrip(), f"{name}: {REGENERATE}"
    assert set(sections) == {" ".join(["capsim", *p]) for p in paths}


def test_page_sections_reads_headings_and_blocks():
    text = ("## `capsim a`\n\n```text\nUsage: capsim a\n\n  Help.\n```\n\n"
            "### `capsim a b`\n\n```text\nUsage: capsim a b\n```\n")
    assert page_sections(text) == {"capsim a": "Usage: capsim a\n\n  Help.",
                                   "capsim a b": "Usage: capsim a b"}
