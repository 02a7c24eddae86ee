"""The GitHub Actions workflow ``capsim ci init`` writes into a user's repository.

It installs a pinned capsim, runs on pull requests that touch the capacity folder, the
traces its scenarios replay, the baselines or the workflow itself, runs ``capsim check``
on every scenario of the folder against its baseline (``reports/baselines/<name>.json``,
where ``capsim baseline save`` writes it), publishes the JUnit files and the reports,
and keeps one pull-request comment: written when something moved, deleted when nothing
does any more. Its shell steps use only environment variables (no ``${{ }}``
expressions), so they run as written on a developer's machine too.

capsim's own ``.github/workflows/capacity.yml`` is not this: it installs capsim from
its checkout and gates capsim's changes.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.errors import CapsimError
from ..core.version import __version__

MARKER = "# Written by `capsim ci init`"
"""The first line's start: how capsim recognises a workflow it may rewrite."""

DEFAULT_OUT = ".github/workflows/capacity.yml"
BASELINES = "reports/baselines"
REPORTS = "reports/capsim-check"
COMMENT_HEADER = "capsim-check"

_SAFE_PATH = re.compile(r"[A-Za-z0-9._/*@+-]+")
_PINNED = (
    re.compile(r"^[A-Za-z0-9._-]+(\[[A-Za-z0-9_,-]+\])?==[A-Za-z0-9.+!-]+$"),  # capsim==0.1.0
    re.compile(r"^[A-Za-z0-9._-]+(\[[A-Za-z0-9_,-]+\])? @ \S+@[A-Za-z0-9._/-]+$"),  # git ref
    re.compile(r"^\S+\.(whl|tar\.gz)$"),  # a file or URL of one release
)


@dataclass(frozen=True)
class WorkflowSettings:
    """What the workflow watches and installs (see :func:`render`)."""

    scenarios: str = "capacity"
    watch: tuple[str, ...] = ()
    install: str = f"capsim=={__version__}"
    python: str = "3.11"
    branch: str = "main"
    out: str = DEFAULT_OUT


def pinned(spec: str) -> bool:
    """Whether a pip requirement names one release: ``NAME==VERSION``, ``NAME @
    git+URL@REF`` or a wheel / sdist file."""
    return any(p.match(spec.strip()) for p in _PINNED)


def check_path(path: str, option: str) -> str:
    """A repository-relative path or glob for the workflow (``/`` separated, no ``..``,
    no characters a shell or a YAML flow would read differently)."""
    clean = path.strip().replace("\\", "/").removeprefix("./").rstrip("/")
    if not clean or clean.startswith("/") or ".." in clean.split("/") \
            or not _SAFE_PATH.fullmatch(clean):
        raise CapsimError(f"{path!r} is not a path inside the repository; expected a "
                          "relative path such as capacity or capacity/traces/** (letters, "
                          "digits, . _ - / * only)", field=option)
    return clean


def _quote(text: str) -> str:
    return json.dumps(text)  # a YAML double-quoted scalar is a JSON string


def render(s: WorkflowSettings, command: str) -> str:
    """The workflow's YAML text; ``command`` is the ``capsim ci init`` line that wrote it."""
    if not pinned(s.install):
        raise CapsimError(f"{s.install!r} does not pin one capsim release; expected "
                          f"capsim=={__version__}, 'capsim @ git+https://…@TAG' or a wheel",
                          field="--install")
    paths = list(dict.fromkeys([f"{s.scenarios}/**", *s.watch, f"{BASELINES}/**", s.out]))
    path_lines = "\n".join(f"      - {_quote(p)}" for p in paths)
    return f"""{MARKER} (capsim {__version__}): {command}
# Rerunning that command rewrites this file (edits included); --force for a file of yours.
#
# Every scenario in {s.scenarios}/ is rerun as its baseline in {BASELINES}/ was run
# (`capsim check`) and compared with it: the job fails on a regression, the step summary
# leads with the change in CU per day and dollars per month, the JUnit report has one
# test per tier x check, and the pull request gets one comment, only while something
# moved. Accept a deliberate change with `capsim baseline update {BASELINES}/*.json`.
name: capacity

on:
  pull_request:
    paths:
{path_lines}
  push:
    branches: [{_quote(s.branch)}]
    paths:
{path_lines}
  workflow_dispatch:

permissions:
  contents: read
  checks: write
  pull-requests: write

concurrency:
  group: capacity-${{{{ github.ref }}}}
  cancel-in-progress: true

env:
  CAPSIM_SCENARIOS: {_quote(s.scenarios)}
  CAPSIM_REPORTS: {_quote(REPORTS)}

jobs:
  check:
    name: capsim check
    runs-on: ubuntu-latest
    timeout-minutes: 30
    steps:
      - name: Check out
        uses: actions/checkout@v5

      - name: Set up Python
        uses: actions/setup-python@v6
        with:
          python-version: {_quote(s.python)}

      - name: Install capsim (pinned)
        id: install
        run: python -m pip install {shlex.quote(s.install)}

      # capsim check appends its Markdown report to $GITHUB_STEP_SUMMARY itself.
      - name: Check every scenario against its baseline
        id: check
        shell: bash
        run: |
          mkdir -p "$CAPSIM_REPORTS"
          rm -f "$CAPSIM_REPORTS"/*.comment.md "$CAPSIM_REPORTS/pr-comment.md"
          status=0
          for scenario in "$CAPSIM_SCENARIOS"/*.toml; do
            [ -e "$scenario" ] || continue
            name=$(basename "$scenario" .toml)
            # exit 0: nothing regressed, 1: a regression, 2: a user error (no baseline...)
            rc=0
            capsim check "$scenario" \\
              --markdown "$CAPSIM_REPORTS/$name.md" \\
              --junit "$CAPSIM_REPORTS/$name.xml" \\
              --comment "$CAPSIM_REPORTS/$name.comment.md" --comment-only-on-change \\
              || rc=$?
            if [ "$rc" -gt "$status" ]; then status=$rc; fi
          done
          moved=false
          for part in "$CAPSIM_REPORTS"/*.comment.md; do
            if [ -e "$part" ]; then cat "$part" >> "$CAPSIM_REPORTS/pr-comment.md"; moved=true; fi
          done
          echo "moved=$moved" >> "$GITHUB_OUTPUT"
          exit "$status"

      - name: Publish the JUnit report
        if: always()
        uses: mikepenz/action-junit-report@v4
        with:
          report_paths: {_quote(REPORTS + "/*.xml")}
          check_name: capsim check
          include_passed: false

      - name: Comment on the pull request (something moved)
        if: always() && github.event_name == 'pull_request' && steps.check.outputs.moved == 'true'
        uses: marocchino/sticky-pull-request-comment@v2
        with:
          header: {COMMENT_HEADER}
          path: {_quote(REPORTS + "/pr-comment.md")}

      - name: Delete the comment (nothing moved)
        if: always() && github.event_name == 'pull_request' && steps.check.outputs.moved == 'false'
        uses: marocchino/sticky-pull-request-comment@v2
        with:
          header: {COMMENT_HEADER}
          delete: true

      - name: Keep the reports
        if: always()
        uses: actions/upload-artifact@v6
        with:
          name: capsim-check
          path: {_quote(REPORTS + "/")}
"""


def trace_paths(scenario_files: Sequence[str], folder: str) -> list[str]:
    """The traces the scenarios replay that lie outside ``folder`` (inside it they are
    watched already), as repository-relative paths."""
    import os
    from pathlib import Path

    from ..api import load_scenario
    from ..workload.replay_source import trace_path

    out = []
    root = Path.cwd().absolute()
    for file in scenario_files:
        loaded = load_scenario(file)
        for index, src in enumerate(loaded.scenario.sources):
            if src.trace is None:
                continue
            # As the repository spells it: a linked folder is watched by its own name.
            path = Path(os.path.normpath(root / trace_path(src, index, loaded.path)))
            try:
                rel = path.relative_to(root).as_posix()
            except ValueError:
                raise CapsimError(f"replays {src.trace}, outside the repository, which a "
                                  "workflow cannot watch; keep the trace in the repository",
                                  file=file, field=f"sources[{index}].trace") from None
            if not rel.startswith(folder.rstrip("/") + "/"):
                out.append(rel)
    return out
