"""Whether a what-if cannot differ from the base by construction, and why.

Two scenarios simulate the same runs when they are equal once the settings the model
never reads are set aside:

* a client no source uses (its settings reach no request);
* the retry policy ``retry-after`` against ``exponential`` (and ``jitter_s``, which only
  ``retry-after`` reads) on a client whose sources send only JSON-RPC calls: their
  window refusal is ``-32005``, which carries no ``Retry-After``, and ``retry-after``
  without a header is exponential backoff with the same ``base_s`` and ``cap_s``
  (:func:`sim.policy.retry.backoff_s`).

:func:`identical_reason` answers for two loaded scenarios; sweeps name such a variant
"identical by construction" instead of printing differences of zero, and the advisor
skips such a change.
"""

from __future__ import annotations

from ..config.resolved import LoadedScenario
from ..core.vocabulary import SIZE_METHOD

SAME_VALUES = "it sets values the scenario already has"
NO_HEADER = ("its clients' requests are all JSON-RPC, whose -32005 carries no "
             "Retry-After: retry-after falls back to exponential backoff with the same "
             "base and cap")
UNUSED_CLIENT = "it changes a client no source uses"


def json_rpc_only(scenario, client: str) -> bool:
    """Whether every source of ``client`` sends only JSON-RPC calls (no trace, whose
    methods are only known when it is read; no ``POST /v1/size``)."""
    srcs = [s for s in scenario.sources if s.client == client]
    for s in srcs:
        if s.trace is not None:
            return False
        for m in s.mix:
            method = scenario.methods.get(m)
            if m == SIZE_METHOD or method is None or method.api != "rpc":
                return False
    return bool(srcs)


def identical_reason(base: LoadedScenario, other: LoadedScenario) -> str | None:
    """Why ``other`` simulates exactly as ``base`` does, or None if it may differ."""
    a, b = base.scenario, other.scenario
    if a == b and base.pricing == other.pricing:
        return SAME_VALUES
    if base.pricing != other.pricing or base.tiers != other.tiers:
        return None
    reasons = []
    na, ra = _normalised(a)
    nb, rb = _normalised(b)
    if na != nb:
        return None
    if a.clients != b.clients:
        changed = {n for n in set(a.clients) | set(b.clients)
                   if a.clients.get(n) != b.clients.get(n)}
        used = {s.client for s in a.sources}
        reasons.append(NO_HEADER if changed & used else UNUSED_CLIENT)
    return "; ".join(reasons) or SAME_VALUES


def _normalised(sc):
    """``sc`` with the settings the model never reads set to one value each."""
    used = {s.client for s in sc.sources}
    clients = {}
    for name, client in sc.clients.items():
        if name not in used:
            continue
        if json_rpc_only(sc, name) and client.retry.policy in ("retry-after", "exponential"):
            retry = client.retry.model_copy(update={"policy": "exponential", "jitter_s": 0.0})
            client = client.model_copy(update={"retry": retry})
        clients[name] = client
    return sc.model_copy(update={"clients": clients, "variants": []}), None
