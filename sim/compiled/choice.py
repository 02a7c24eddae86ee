"""``--engine auto|simpy|compiled``: which engine runs a scenario, and why.

Imports no numba (``capsim validate`` and ``--help`` stay light): the compiled engine
(and numba) is imported only when a run may use it -- :func:`choose_engine` on a scenario
it covers, to learn whether numba loads; :func:`tier_run_class` when it is chosen.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from ..config.resolved import LoadedScenario
from ..core.errors import CapsimError
from .cache_dir import numba_cache_dir  # noqa: F401  (re-exported: part of the choice)

ENGINES = ("auto", "simpy", "compiled")
#: The largest open rate the compiled engine keeps a ring of opens for.
MAX_OPENS_PER_S = 1 << 16
#: The most streams per connection it keeps a row of release times for.
MAX_STREAMS_PER_CONN = 4096


def uncovered(loaded: LoadedScenario) -> list[str]:
    """What in ``loaded`` the compiled engine does not run (empty: it runs it all)."""
    sc = loaded.scenario
    why = []
    if sc.limiter.kind != "fixed-window":
        why.append(f"the {sc.limiter.kind} limiter")
    if sc.http_limits.max_new_connections_per_s > MAX_OPENS_PER_S:
        why.append(f"max_new_connections_per_s above {MAX_OPENS_PER_S}")
    wide = [name for name, c in sc.clients.items()
            if c.http.max_streams_per_conn > MAX_STREAMS_PER_CONN]
    if wide:
        why.append(f"max_streams_per_conn above {MAX_STREAMS_PER_CONN} (clients "
                   f"{', '.join(wide)})")
    return why


def numba_available() -> bool:
    """Whether numba can be found (without importing it)."""
    return importlib.util.find_spec("numba") is not None


def _numba_problem() -> str | None:
    """Why the compiled engine cannot load (None: it can), importing it to find out."""
    if not numba_available():
        return "numba is not installed (pip install 'numba>=0.59')"
    try:
        from . import engine  # noqa: F401  (numba and the loop, from the cache)
    except Exception as err:  # noqa: BLE001 - any failure to load means: use SimPy
        return f"numba cannot be imported ({type(err).__name__}: {err})"
    return None


@dataclass(frozen=True)
class EngineChoice:
    """The engine a run uses (``"simpy"`` or ``"compiled"``) and why, for the report."""

    engine: str
    reason: str


def choose_engine(loaded: LoadedScenario, requested: str = "auto") -> EngineChoice:
    """The engine for ``loaded``: ``compiled`` where it covers every feature of the
    scenario and numba is there (``auto``), else SimPy with the reason. ``compiled`` on a
    scenario it does not cover is a :class:`CapsimError`."""
    if requested not in ENGINES:
        raise CapsimError(f"unknown engine {requested!r}; expected one of "
                          f"{', '.join(ENGINES)}", field="engine")
    if requested == "simpy":
        return EngineChoice("simpy", "requested")
    why = uncovered(loaded)
    if not why and (problem := _numba_problem()) is not None:
        why = [problem]
    if requested == "compiled" and why:
        raise CapsimError("the compiled engine cannot run this scenario: "
                          + "; ".join(why) + " (use --engine auto or simpy)",
                          file=loaded.path, field="engine")
    if why:
        return EngineChoice("simpy", "the compiled engine does not cover " + "; ".join(why))
    return EngineChoice("compiled", "covers every feature of the scenario")


def tier_run_class(engine: str):
    """The class that runs one tier with ``engine`` (``"simpy"`` or ``"compiled"``)."""
    if engine == "compiled":
        from .engine import CompiledTierRun

        return CompiledTierRun
    from ..model.engine import TierRun

    return TierRun
