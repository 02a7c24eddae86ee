"""How a replay source scales its recording, and the warnings an honest scaling needs.

:func:`replay_scaling` turns ``[sources.replay]``'s ``repeat``, ``period_s``,
``copies_spread`` and ``hourly_weights`` into the stream's
:class:`~sim.traces.tiling.Scaling` (None when none is used: the stream is then exactly
what it was before these keys existed). After the scan of every trace source:

* :func:`stacking_note` warns when ``load_multiplier``'s copies stack into one window
  (``copies_spread = "window"``): copies of a recording shorter than
  :data:`SHORT_RECORDING_S`, or more than :data:`MAX_STACKED_COPIES` copies of any;
* :func:`coverage` warns when a trace (after ``speed``, copies and loops) ends more than
  :func:`end_tolerance_s` before the run does, and, when traces are the run's only demand,
  gives the span with traffic: the allowance's hours are then computed over it
  (``daily_allowance.lasts_h``), not over the whole run.

Warnings are notes of the run's summary beginning with ``"warning: "``; ``capsim run``
prints them under its table.
"""

from __future__ import annotations

import math

from ..config.scenario import Scenario, Source
from ..core.rng import stream
from ..core.vocabulary import WINDOW_S, Rng
from ..traces.tiling import Scaling

#: A recording shorter than this (seconds of replay, five windows) is "short": copies of
#: it stacked within one 12-s spread land in a couple of windows.
SHORT_RECORDING_S = 5 * WINDOW_S
#: More copies than this stacked within 12 s multiply every recorded burst into one window.
MAX_STACKED_COPIES = 10
WARNING = "warning: "


def replay_scaling(src: Source, sc: Scenario, index: int = 0,
                   file: str | None = None) -> Scaling | None:
    """The stream's scaling for ``src``, ``sources[index]`` of the scenario ``file`` (None
    when it uses none of the scaling keys)."""
    r = src.replay
    if r.repeat == "none" and r.copies_spread == "window":
        return None
    return Scaling(
        repeat=r.repeat, period_s=r.period_s, copies_spread=r.copies_spread,
        hourly_weights=r.hourly_weights, until_s=sc.duration_s, day_offset_s=sc.day_offset_s,
        spread_rng=(stream(sc.seed, Rng.SOURCE, src.name, Rng.REPLAY, Rng.SPREAD)
                    if r.copies_spread == "period" else None),
        tile_rng=(stream(sc.seed, Rng.SOURCE, src.name, Rng.REPLAY, Rng.TILE)
                  if r.hourly_weights is not None else None),
        file=file, field=f"sources[{index}].replay.period_s")


def _s(x: float) -> str:
    """Seconds for a sentence: 17.2 -> "17.2", 3600 -> "3,600"."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def stacking_note(scan) -> str | None:
    """The warning when the load multiplier's copies of a recording stack into a few
    windows: every copy of a recording that is not looped lands within
    ``length + spread`` seconds (spread: 12 s, or the period with
    ``copies_spread = "period"``); that is "a few windows" under
    ``SHORT_RECORDING_S + WINDOW_S``. With the default spread, more than
    :data:`MAX_STACKED_COPIES` copies of any recording also warn."""
    src = scan.src
    r = src.replay
    k = r.load_multiplier
    copies = math.ceil(k)
    if copies < 2 or scan.copy0_rows == 0:
        return None
    window = r.copies_spread == "window"
    spread = WINDOW_S if window else scan.stream.period_s()
    head = (f"{WARNING}source {src.name!r}: replay.load_multiplier = {k:g} stacks {copies:,} "
            "copies")
    how = ('copies_spread = "window"' if window else
           f'copies_spread = "period", a {_s(spread)}-s period')
    if r.repeat != "tile":
        length = scan.copy0_last_s - scan.copy0_first_s
        rows = scan.copy0_rows
        if length + spread < SHORT_RECORDING_S + WINDOW_S:
            within = "within 12 s of each other" if window else "within its period"
            return (f"{head} of a {_s(length)}-s recording ({rows:,} request(s)) {within} "
                    f"({how}): about {rows * k:,.0f} requests in {_s(length + spread)} s, a "
                    "burst the recorded traffic never had; loop it over the run with "
                    'replay.repeat = "tile", or spread the copies over a longer span with '
                    'replay.copies_spread = "period" and replay.period_s (the run\'s '
                    f"{_s(scan.duration_s)} s, say)")
    if window and copies > MAX_STACKED_COPIES:
        return (f"{head} of every recorded request within 12 s ({how}): each recorded burst "
                f"lands {copies:,} times over in one or two windows; spread the copies over "
                'the recording with replay.copies_spread = "period"')
    return None


def end_tolerance_s(duration_s: float) -> float:
    """How long before the run's end a trace may stop without a warning: a window, or 1 %
    of the run when that is longer (a recording of the run's length ends a little early)."""
    return max(WINDOW_S, 0.01 * duration_s)


def coverage(sc: Scenario, scans: dict) -> tuple[float | None, list[str]]:
    """``(seconds with traffic, warnings)``: the warnings for every trace source that ends
    before the run does; the seconds (from the first replayed request to the last, at
    least one window) when trace sources are the run's only demand and all of them end
    early, else None (the allowance is then over the whole run, as without traces)."""
    T = sc.duration_s
    with_rows = {i: s for i, s in scans.items() if math.isfinite(s.last_s)}
    early = {i: s for i, s in with_rows.items() if s.last_s < T - end_tolerance_s(T)}
    if not early:
        return None, []
    only_traces = (len(scans) == len(sc.sources) and not sc.streams
                   and len(early) == len(scans))
    covered = None
    if only_traces:
        first = min(s.first_s for s in early.values())
        covered = max(max(s.last_s for s in early.values()) - first, WINDOW_S)
    notes = []
    for scan in early.values():
        r = scan.src.replay
        how = [f"replay.speed = {r.speed:g}"] if r.speed != 1 else []
        if r.repeat == "tile":
            how.append('repeat = "tile"')
        text = (f"{WARNING}source {scan.src.name!r}: the trace covers "
                f"{_s(scan.last_s - scan.first_s)} s of the {_s(T)}-s run (requests from "
                f"{_s(scan.first_s)} s to {_s(scan.last_s)} s"
                + (f", after {', '.join(how)}" if how else "") + ")")
        if covered is not None:
            span = (f"those {_s(covered)} s" if covered > WINDOW_S else
                    f"{_s(covered)} s (one 12-second window, the shortest span a rate is "
                    "taken over)")
            text += (f": allowance hours and margins are over {span}"
                     + ("" if r.repeat == "tile" else
                        '; loop the recording over the run with replay.repeat = "tile"'))
        else:
            text += ("; other demand spans the run, so allowance hours are over the whole "
                     "run")
        notes.append(text)
    return covered, notes
