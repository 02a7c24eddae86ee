"""The one progress display of every long command (run, --replications, --robust,
--headroom, sweep, headroom, baseline, check, calibrate, advise): a tqdm bar on stderr.

Shown only when stderr is a terminal and the command was not given ``-q``: piped or
captured output (CI logs, scripts, tests) gets no progress at all, and stdout is never
touched. tqdm rather than rich: progress is all it is needed for here, it has no
dependencies, and it redraws one line in place on any terminal, with the rate and the
estimate of what is left computed by one well-tested library instead of by each command.
"""

from __future__ import annotations

import os
import sys
from typing import IO

from tqdm import tqdm

BAR_FORMAT = ("{desc}: {percentage:3.0f}%|{bar:24}| {n_fmt}/{total_fmt} {unit} "
              "[{elapsed}<{remaining}]{postfix}")
COUNT_FORMAT = "{desc}: {n_fmt} {unit} [{elapsed}]{postfix}"


def shown(quiet: bool = False, file: IO[str] | None = None) -> bool:
    """Whether progress is displayed: not ``quiet`` and the stream is a terminal."""
    stream = sys.stderr if file is None else file
    return not quiet and bool(getattr(stream, "isatty", lambda: False)())


def _columns(stream) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0


class Progress:
    """One bar: ``total`` steps of ``unit`` (None: a count without an end), described
    by ``what``. A no-op when not :func:`shown`. Use as a context manager, or
    :meth:`close` it."""

    def __init__(self, what: str, total: float | None, unit: str, *, quiet: bool = False,
                 file: IO[str] | None = None) -> None:
        stream = sys.stderr if file is None else file
        self.stream = stream
        sized = _columns(stream) > 0  # a terminal of unknown size (0 columns): 100 wide
        self.bar = tqdm(total=total, desc=what, unit=unit, file=stream,
                        disable=not shown(quiet, stream), dynamic_ncols=sized,
                        ncols=None if sized else 100, nrows=None if sized else 24,
                        leave=True,
                        bar_format=BAR_FORMAT if total is not None else COUNT_FORMAT,
                        mininterval=0.2)

    def to(self, done: float, total: float | None = None, note: str | None = None) -> None:
        """``done`` steps of ``total`` (when the total is only known now) are done;
        ``note`` (what is under way) is shown after the bar."""
        if total is not None and total != self.bar.total:
            self.bar.total = total
        if note is not None:
            self.bar.set_postfix_str(note, refresh=done == self.bar.n)
        if done != self.bar.n:
            self.bar.n = done
            self.bar.refresh()

    def step(self, note: str | None = None) -> None:
        """One more step done; ``note`` (what it was) is shown after the bar."""
        if note is not None:
            self.bar.set_postfix_str(note, refresh=False)
        self.bar.update(1)

    def write(self, line: str) -> None:
        """Print ``line`` above the bar (on its stream), leaving the bar below it;
        nothing when the bar is not shown."""
        if not self.bar.disable:
            self.bar.write(line, file=self.stream)

    def close(self) -> None:
        """Leave the bar's last state on its line."""
        self.bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class RunProgress:
    """``capsim run``'s: simulated seconds over every tier (``tier_progress(tier,
    now)``, tiers simulated in parallel included), then the replications
    (``replication_progress(done, total)``), on one bar each."""

    def __init__(self, tiers, duration_s: float, *, quiet: bool = False,
                 file: IO[str] | None = None) -> None:
        self.quiet, self.file = quiet, file
        self.duration_s = duration_s
        self.at: dict[str, float] = {}
        self.simulating = Progress(f"simulating {len(tiers)} tier(s)",
                                   round(len(tiers) * duration_s), "simulated s",
                                   quiet=quiet, file=file)
        self.replications: Progress | None = None

    def tier_progress(self, tier, now: float) -> None:
        self.at[tier.name] = min(now, self.duration_s)
        self.simulating.bar.set_postfix_str(tier.name, refresh=False)
        self.simulating.to(round(sum(self.at.values())))

    def replication_progress(self, done: int, total: int) -> None:
        if self.replications is None:
            self.simulating.close()
            self.replications = Progress("replications", total, "done", quiet=self.quiet,
                                         file=self.file)
        self.replications.to(done, total)

    def close(self) -> None:
        self.simulating.close()
        if self.replications is not None:
            self.replications.close()
