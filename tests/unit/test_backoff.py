"""Retry delays stay within their documented bounds."""

from __future__ import annotations

import itertools
import random

import pytest

from leasehold.coordinator.rules.backoff import BackoffPolicy, backoff_delay, retry_delay


@pytest.mark.parametrize("attempt", [1, 2, 3, 5, 10, 30, 64, 1000, 10**9])
def test_delay_is_within_jittered_exponential_and_cap(attempt: int) -> None:
    policy = BackoffPolicy(base_seconds=1.0, max_seconds=3600.0)
    rng = random.Random(1234)
    exponential = 1.0 * 2.0 ** min(attempt - 1, 60)
    for _ in range(2000):
        delay = backoff_delay(attempt, policy, rng)
        assert 0 <= delay <= policy.max_seconds
        assert delay <= exponential * 1.5
        assert delay >= min(policy.max_seconds, exponential * 0.5)


def test_delays_grow_and_are_spread() -> None:
    policy = BackoffPolicy(base_seconds=0.5, max_seconds=1e9)
    rng = random.Random(7)
    means = []
    for attempt in range(1, 8):
        draws = [backoff_delay(attempt, policy, rng) for _ in range(500)]
        means.append(sum(draws) / len(draws))
        assert len({round(d, 6) for d in draws}) > 400  # jittered, not one value
    assert all(b > a * 1.6 for a, b in itertools.pairwise(means))


def test_requested_delay_overrides_backoff_within_cap() -> None:
    policy = BackoffPolicy(base_seconds=1.0, max_seconds=60.0)
    rng = random.Random(0)
    assert retry_delay(3, policy, rng, requested=7.5) == 7.5
    assert retry_delay(3, policy, rng, requested=10_000) == 60.0
    assert retry_delay(3, policy, rng, requested=-5) == 0.0


def test_zero_base_means_immediate_retry() -> None:
    assert backoff_delay(5, BackoffPolicy(0.0, 10.0), random.Random(1)) == 0.0


def test_negative_settings_are_refused() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        BackoffPolicy(-1.0, 10.0)
