"""The pull-request comment body of a comparison.

Its first line is the bill's headline (:mod:`.headline`: the CU and dollar change), the
second a hidden marker, ``<!-- capsim-check: NAME -->``, so a workflow finds and
updates its own comment instead of adding one per push. It lists only what moved
(regressions, then improvements, across tiers), never more than :data:`MAX_CHARS`
characters (GitHub refuses comments over 65,536).
"""

from __future__ import annotations

from .compare import Comparison
from .markdown import inputs, moved_rows, provenance, top_lines

MAX_CHARS = 60_000


def marker(name: str) -> str:
    """The hidden marker of scenario ``name``'s comment."""
    return f"<!-- capsim-check: {name} -->"


def render(cmp: Comparison, *, max_chars: int = MAX_CHARS) -> str:
    """The comment's Markdown body."""
    head = top_lines(cmp, "###")
    given = inputs(cmp)
    lines = [head[0], marker(cmp.name), *head[1:], "", *provenance(cmp), "",
             *(given + [""] if given else []), *moved_rows(cmp)]
    quiet = sum(not c.changed for c in cmp.checks)
    lines += ["", f"{quiet} check{'s' * (quiet != 1)} unchanged; the step summary and "
              "the JUnit report have them all."]
    text = "\n".join(lines) + "\n"
    if len(text) > max_chars:
        text = text[: max_chars - 80].rsplit("\n", 1)[0] + "\n\n… (truncated)\n"
    return text
