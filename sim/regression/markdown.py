"""The Markdown report of a comparison: the bill's headline (:mod:`.headline`: CU per
day, the allowance, the recommended tier and its price), the verdict, the inputs that
changed, what moved; then every check, a table per tier, folded in a ``<details>``.

Tiers with a regression come first, then those with an improvement, then the rest;
inside a table, regressions, improvements, unchanged. The text stays under
:data:`MAX_BYTES` (GitHub's step-summary limit is 1 MiB) however many tiers: past the
budget, unchanged tiers collapse to one line each, then to one line for all.
"""

from __future__ import annotations

from .compare import Check, Comparison
from .headline import bill_headline, icon

MAX_BYTES = 1024 * 1024 - 16 * 1024
"""Budget of the report (1 MiB less a margin for what a workflow appends)."""

ICON = {"regression": "❌ regression", "improvement": "✅ improvement", "unchanged": "unchanged"}
_ORDER = {"regression": 0, "improvement": 1, "unchanged": 2}


def headline(cmp: Comparison) -> str:
    """One line: the scenario and what moved."""
    reg, imp = len(cmp.regressions), len(cmp.improvements)
    state = f"❌ {reg} regression{'s' * (reg != 1)}" if reg else "✅ no regression"
    if imp:
        state += f", {imp} improvement{'s' * (imp != 1)}"
    return f"capsim {cmp.command} `{cmp.name}`: {state}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def check_rows(checks: list[Check], *, with_tier: bool = False) -> list[str]:
    """A Markdown table of ``checks`` (regressions first)."""
    head = ["metric", "baseline", "now", "change", "tolerance", "verdict"]
    if with_tier:
        head.insert(0, "tier")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in sorted(checks, key=lambda c: _ORDER[c.verdict]):
        verdict = ICON[c.verdict] + (f" ({c.note})" if c.note else "")
        row = [c.label, c.base, c.now, c.change, c.tolerance, verdict]
        if with_tier:
            row.insert(0, c.tier or "(run)")
        lines.append("| " + " | ".join(_cell(x) for x in row) + " |")
    return lines


def provenance(cmp: Comparison) -> list[str]:
    """Where the two sides come from, and the comparison's notes."""
    b, n = cmp.base, cmp.now
    out = [f"- baseline: `{cmp.base_label}` (capsim {b.capsim_version}, seed {b.seed}, "
           f"{b.replications} replication{'s' * (b.replications != 1)}"
           + (f", `--set {' '.join(b.overrides)}`" if b.overrides else "") + ")",
           f"- now: `{cmp.now_label}` (capsim {n.capsim_version}, {n.replications} "
           f"replication{'s' * (n.replications != 1)})"]
    out += [f"- {note}" for note in cmp.notes]
    return out


def inputs(cmp: Comparison) -> list[str]:
    """The inputs that changed since the baseline (or that it did not record)."""
    if not cmp.inputs_changed and not cmp.inputs_unknown:
        if cmp.now.inputs is None:  # a report folder or summary: no fingerprint to compare
            return []
        return ["Inputs: none changed since the baseline (scenario, traces, pricing file, "
                "capsim)."]
    lines = ["Inputs changed since the baseline:" if cmp.inputs_changed else "Inputs:"]
    lines += [f"- {line}" for line in cmp.inputs_changed + cmp.inputs_unknown]
    return lines


def top_lines(cmp: Comparison, level: str) -> list[str]:
    """The bill's headline as a heading of ``level`` (``##``), then the verdict."""
    return [f"{level} {icon(cmp)} {bill_headline(cmp)}", "", f"**{headline(cmp)}**"]


def moved_rows(cmp: Comparison) -> list[str]:
    """What regressed or improved, across tiers (or a line saying nothing did)."""
    moved = [c for c in cmp.checks if c.changed]
    if not moved:
        return ["Every check is within its tolerance (or the noise)."]
    return check_rows(moved, with_tier=True)


def render(cmp: Comparison, *, max_bytes: int = MAX_BYTES) -> str:
    """The whole report (see the module docstring)."""
    top = [*top_lines(cmp, "##"), "", *provenance(cmp), "", *inputs(cmp)]
    top += [""] if top[-1] else []
    rec = [c for c in cmp.checks if c.tier is None]
    top += check_rows(rec) + [""]
    top += ["What moved:", ""] if any(c.changed for c in cmp.checks) else []
    top += moved_rows(cmp) + [""]
    top += ["<details><summary>Every check, a table per tier</summary>", ""]
    by_tier: dict[str, list[Check]] = {}
    for c in cmp.checks:
        if c.tier is not None:
            by_tier.setdefault(c.tier, []).append(c)
    order = sorted(by_tier, key=lambda t: min(_ORDER[c.verdict] for c in by_tier[t]))
    sections = []
    for tier in order:
        checks = by_tier[tier]
        worst = min(_ORDER[c.verdict] for c in checks)
        mark = ["❌ ", "✅ ", ""][worst]
        sections.append((tier, worst, [f"### {mark}{tier}", "", *check_rows(checks), ""]))
    text = _join(top, [s[2] for s in sections])
    if len(text.encode()) <= max_bytes:
        return text
    # Too long: unchanged tiers become one line each, then one line for all of them.
    changed = [s[2] for s in sections if s[1] < 2]
    quiet = [s[0] for s in sections if s[1] == 2]
    text = _join(top, changed + [[f"- {t}: every check unchanged" for t in quiet] + [""]])
    if len(text.encode()) <= max_bytes:
        return text
    text = _join(top, changed + [[f"{len(quiet)} more tiers: every check unchanged", ""]])
    if len(text.encode()) <= max_bytes:
        return text
    cut = text.encode()[: max_bytes - 200].decode("utf-8", "ignore")
    return cut.rsplit("\n", 1)[0] + "\n\n… (truncated: see the JUnit file for every check)\n"


def _join(top: list[str], sections: list[list[str]]) -> str:
    body = top + [line for s in sections for line in s]
    return "\n".join(body).rstrip("\n") + "\n\n</details>\n"
