"""Accounting for invalid rows and for source lines that are not requests.

With ``on_invalid="error"`` the first invalid row (in source order within a chunk, and
chunks are read in order) becomes a :class:`~sim.core.errors.CapsimError` naming the file,
the location and the field. With ``"skip"`` invalid rows are counted per reason, the
first :data:`EXAMPLES_PER_REASON` locations of each reason are kept for the report, and
the import goes on. Lines that are not requests at all (blank lines, comments, HAR
entries addressed to something other than the service) are *ignored*, and counted too:
nothing is dropped without a count. JSON-RPC requests that deviate from the spec's
envelope but are valid JSON-RPC 2.0 are kept and counted in ``deviations``; HAR entries
to hosts neither recognised nor mapped are counted by host in ``unmapped_hosts``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..core.errors import CapsimError

EXAMPLES_PER_REASON = 3
ON_INVALID = ("error", "skip")


@dataclass(frozen=True)
class Problem:
    """One invalid row: where, which field, what was expected. Never holds a value."""

    reason: str
    line: int | None
    field: str | None
    message: str

    def render(self, file: str) -> str:
        """``file:line: field: message``."""
        return CapsimError(self.message, file=file, line=self.line, field=self.field).render()


@dataclass
class Problems:
    """Invalid-row and ignored-line tallies of one import."""

    file: str
    on_invalid: str = "error"
    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list[Problem]] = field(default_factory=dict)
    ignored: Counter = field(default_factory=Counter)
    deviations: Counter = field(default_factory=Counter)
    unmapped_hosts: Counter = field(default_factory=Counter)
    _pending: list[Problem] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.on_invalid not in ON_INVALID:
            raise CapsimError(f"expected one of {', '.join(ON_INVALID)}", field="on_invalid")

    def add(self, reason: str, line: int | None, field: str | None, message: str) -> None:
        """Record one invalid row (judged at the next :meth:`settle` in error mode)."""
        problem = Problem(reason, line, field, message)
        if self.on_invalid == "error":
            self._pending.append(problem)
        else:
            self._count(reason, 1, [problem])

    def add_many(self, reason: str, lines, field: str | None, message: str) -> None:
        """Record invalid rows at ``lines`` (ascending) that share a reason and a field."""
        if not len(lines):
            return
        if self.on_invalid == "error":
            self._pending.append(Problem(reason, int(lines[0]), field, message))
        else:
            shown = [Problem(reason, int(x), field, message)
                     for x in lines[:EXAMPLES_PER_REASON]]
            self._count(reason, len(lines), shown)

    def _count(self, reason: str, n: int, shown: list[Problem]) -> None:
        self.counts[reason] += n
        kept = self.examples.setdefault(reason, [])
        kept.extend(shown[: EXAMPLES_PER_REASON - len(kept)])

    def ignore(self, what: str, n: int = 1) -> None:
        """Count ``n`` source lines or entries that are not requests (``what`` says why)."""
        if n:
            self.ignored[what] += n

    def settle(self) -> None:
        """In error mode, raise for the earliest invalid row recorded so far."""
        if not self._pending:
            return
        first = min(self._pending, key=lambda p: -1 if p.line is None else p.line)
        raise CapsimError(first.message, file=self.file, line=first.line, field=first.field)

    @property
    def skipped(self) -> int:
        """Invalid rows skipped so far."""
        return sum(self.counts.values())
