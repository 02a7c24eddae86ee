"""Draw values from a named random stream in blocks: one generator call per block, a
list index per value (the per-event hot paths call it once per event).

    jitter = BlockDraws(stream(seed, Rng.SOURCE, name, Rng.RETRY), 4096)   # U[0, 1)
    session = BlockDraws(rng, 64, dist.sample)                          # a distribution
    jitter(), session()

The values do not depend on the block size for uniforms; for a distribution, keep the
block size fixed so that a run's draws stay reproducible.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def _uniforms(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.random(n)


class BlockDraws:
    """Successive draws from ``rng``: ``sample(rng, block)`` values at a time (default
    U[0, 1)), handed out one per call as Python floats."""

    __slots__ = ("_rng", "_block", "_sample", "_v", "_i")

    def __init__(self, rng: np.random.Generator, block: int = 1024,
                 sample: Callable[[np.random.Generator, int], np.ndarray] = _uniforms) -> None:
        if block < 1:
            raise ValueError("block must be at least 1")
        self._rng, self._block, self._sample = rng, block, sample
        self._v: list[float] = []
        self._i = 0

    def __call__(self) -> float:
        if self._i == len(self._v):
            self._v, self._i = self._sample(self._rng, self._block).tolist(), 0
        self._i += 1
        return self._v[self._i - 1]
