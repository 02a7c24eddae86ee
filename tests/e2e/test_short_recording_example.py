"""The how-to's short-recording example prints what capsim prints.

docs/how-to/replay-your-traffic.md ("Scale a short recording honestly") shows two runs of
workloads/traces/short-recording.toml: sixty stacked copies (which warn) and the recording
looped over the hour. Each command in the console block is run and its stdout, less the
timed ``report:`` line, must be the lines printed under it.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from click.testing import CliRunner

from sim.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
HOWTO = ROOT / "docs" / "how-to" / "replay-your-traffic.md"


def _examples() -> list[tuple[list[str], list[str]]]:
    text = HOWTO.read_text(encoding="utf-8")
    section = text[text.index("## Scale a short recording honestly"):]
    block = re.search(r"```console\n(.*?)```", section, re.S).group(1)
    runs: list[tuple[list[str], list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ capsim "):
            runs.append((shlex.split(line[len("$ capsim "):]), []))
        else:
            runs[-1][1].append(line)
    return runs


def test_the_short_recording_example_prints_what_capsim_prints(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    runs = _examples()
    assert len(runs) == 2 and any("warning: " in line for line in runs[0][1])
    for i, (args, shown) in enumerate(runs):
        done = CliRunner().invoke(main, [*args, "--out", str(tmp_path / f"r{i}")])
        assert done.exit_code == 0, done.output
        printed = [line for line in done.stdout.splitlines()
                   if not line.startswith("report: ")]
        while printed and not printed[0]:
            printed.pop(0)
        assert printed == shown, args
