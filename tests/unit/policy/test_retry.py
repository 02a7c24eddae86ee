"""The one back-off formula (:func:`sim.policy.retry.backoff_s`) and the one stale-slot
expiry draw (:func:`sim.policy.slots.stale_expiry_s`), against their closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim.config.scenario import RetryPolicy
from sim.config.websockets import ExpiryRange, ReconnectPolicy
from sim.policy.retry import RetryDecider, backoff_s
from sim.policy.slots import mean_stale_expiry_s, stale_expiry_s


class Draws:
    """A uniform source returning the given values in turn, counting its calls."""

    def __init__(self, *values: float) -> None:
        self.values, self.calls = list(values), 0

    def __call__(self) -> float:
        self.calls += 1
        return self.values.pop(0)


@pytest.mark.parametrize("cls", [RetryPolicy, ReconnectPolicy])
def test_exponential_is_full_jitter_doubling_to_the_cap(cls):
    p = cls(policy="exponential", base_s=0.5, cap_s=3.0)
    # n-th wait: u * min(3, 0.5 * 2 ** (n - 1)) -> 0.5, 1, 2, 3, 3 times u
    for n, bound in ((1, 0.5), (2, 1.0), (3, 2.0), (4, 3.0), (5, 3.0), (10_000, 3.0)):
        assert backoff_s(p, n, None, Draws(0.25)) == 0.25 * bound


@pytest.mark.parametrize("header", [None, math.nan])
def test_retry_after_without_a_header_falls_back_to_exponential(header):
    p = ReconnectPolicy(policy="retry-after", base_s=1.0, cap_s=60.0, jitter_s=5.0)
    assert backoff_s(p, 3, header, Draws(0.5)) == 0.5 * 4.0


def test_retry_after_with_a_header_adds_jitter():
    p = RetryPolicy(policy="retry-after", jitter_s=2.0)
    assert backoff_s(p, 7, 11.0, Draws(0.75)) == 11.0 + 2.0 * 0.75


def test_fixed_and_immediate_draw_nothing():
    draws = Draws()
    assert backoff_s(RetryPolicy(policy="fixed", delay_s=1.5), 4, 9.0, draws) == 1.5
    assert backoff_s(ReconnectPolicy(policy="immediate"), 4, 9.0, draws) == 0.0
    assert draws.calls == 0


def test_the_decider_gives_up_after_max_attempts_and_uses_the_formula():
    p = RetryPolicy(policy="exponential", base_s=1.0, cap_s=100.0, max_attempts=3)
    decider = RetryDecider(p, np.random.default_rng(1))
    u = np.random.default_rng(1).random(2)  # the decider's first two draws
    assert decider.delay(1, None) == u[0] * 1.0
    assert decider.delay(2, None) == u[1] * 2.0
    assert decider.delay(3, None) is None


def test_stale_expiry_a_number_or_a_uniform_range():
    draws = Draws(0.25)
    assert stale_expiry_s(30, draws) == 30.0 and draws.calls == 0
    assert stale_expiry_s(ExpiryRange(low=20, high=28), draws) == 22.0 and draws.calls == 1
    assert mean_stale_expiry_s(ExpiryRange(low=20, high=28)) == 24.0
    assert mean_stale_expiry_s(7) == 7.0
