"""``[sources.replay] method_map``: replay another provider's methods as this service's.

Traffic recorded against another provider names its methods (``eth_call``,
``eth_getLogs``, ``eth_blockNumber``); the scenario prices and serves its own
(``svc_call``, ``svc_pendingBlock``). A map ``{ "eth_call" = "svc_call", "*" =
"svc_call" }`` renames the recorded RPC methods before replay: an exact entry first,
else ``"*"``, else the recorded name is kept (then it is priced through
``[pricing.rpc.method_cu]``, or ``default_method_cu`` when not listed there). Only RPC
rows are renamed (sizing, other Search paths and websocket handshakes keep their
names). :class:`~sim.workload.replay_source.TraceScan` applies it row by row as the trace
is read; :func:`describe` says what each recorded method became, for the report's notes.
"""

from __future__ import annotations

from ..core.errors import CapsimError

WILDCARD = "*"


def check_targets(method_map: dict[str, str], known: set[str], method_cu: dict[str, float],
                  scenario_path: str, index: int) -> None:
    """Each target must be a scenario method or priced in ``[pricing.rpc.method_cu]``."""
    for recorded, target in method_map.items():
        if target not in known and target not in method_cu:
            raise CapsimError(
                "expected a method of the scenario ([methods]) or of "
                "[pricing.rpc.method_cu] as the target", file=scenario_path,
                field=f"sources[{index}].replay.method_map.{recorded}")


def describe(source: str, listing: list[tuple], method_map: dict[str, str],
             scenario_methods: set[str], rpc_cost) -> list[str]:
    """Report notes: what each recorded RPC method was replayed as, with row counts."""
    notes = []
    if method_map:
        parts = []
        for name, target, rule, n in listing:
            if target is None:
                continue
            via = " (via \"*\")" if rule == WILDCARD else ""
            parts.append(f"{name} -> {target}{via} {n:,} row(s)")
        if parts:
            notes.append(f"source {source!r}: recorded methods mapped by replay.method_map: "
                         + "; ".join(parts))
    kept = [(name, n) for name, target, _, n in listing
            if target is None and name not in scenario_methods]
    if kept:
        notes.append(f"source {source!r}: recorded methods replayed as recorded, not in the "
                     "scenario's methods (priced by [pricing.rpc], default service time): "
                     + "; ".join(f"{name} {rpc_cost(name):g} CU {n:,} row(s)"
                                 for name, n in kept))
    return notes
