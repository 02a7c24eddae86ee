"""Named random streams derived from one seed.

Every stochastic input gets its own :class:`numpy.random.Generator`, derived from the
run's seed *by name* rather than by creation order: adding a source does not shift the
streams of the others, and every tier replays the same demand (common random numbers).
"""

from __future__ import annotations

import hashlib

import numpy as np


def _name_words(name: str) -> list[int]:
    digest = hashlib.sha256(name.encode("utf-8")).digest()
    return [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]


def stream(seed: int, *name: str | int) -> np.random.Generator:
    """A generator for ``(seed, name...)``; the same arguments always give the same stream."""
    key = "/".join(str(part) for part in name)
    seq = np.random.SeedSequence(entropy=int(seed), spawn_key=tuple(_name_words(key)))
    return np.random.Generator(np.random.PCG64(seq))


def replication_seed(seed: int, replication: int) -> int:
    """The seed of replication ``replication`` of a run seeded with ``seed``.

    Replication 0 is the run itself (``seed`` unchanged), so replication 0 of a sweep or a
    baseline is exactly ``capsim run``. Replication r > 0 gets a 128-bit seed derived *by
    name* from ``(seed, "replication", r)``: independent of every other replication and
    of the order in which replications are run.
    """
    if replication < 0:
        raise ValueError("replication must be >= 0")
    if replication == 0:
        return int(seed)
    words = _name_words(f"replication/{replication}")
    state = np.random.SeedSequence(entropy=int(seed), spawn_key=tuple(words)).generate_state(4)
    return int.from_bytes(state.astype("<u4").tobytes(), "little")
