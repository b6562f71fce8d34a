"""Retry delays: exponential in the attempt number, jittered, then capped.

    delay = min(cap, base * 2 ** (attempt - 1) * U(0.5, 1.5))

"Proportional" jitter: each delay is spread over +-50% of its exponential value, so a burst
of jobs that failed together does not come back together. The cap is applied after the
jitter, so a delay is always within [0, cap].
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# 2**60 seconds outlives any cap; stopping the exponent there avoids float overflow.
_MAX_EXPONENT = 60


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    base_seconds: float = 1.0
    max_seconds: float = 3600.0

    def __post_init__(self) -> None:
        if self.base_seconds < 0 or self.max_seconds < 0:
            raise ValueError("backoff base and max must be >= 0")


def backoff_delay(attempt: int, policy: BackoffPolicy, rng: random.Random) -> float:
    """Seconds to wait before the next try after failed attempt number ``attempt`` (>= 1)."""
    exponent = min(max(attempt - 1, 0), _MAX_EXPONENT)
    jittered = policy.base_seconds * (2.0**exponent) * rng.uniform(0.5, 1.5)
    return min(policy.max_seconds, jittered)


def retry_delay(
    attempt: int, policy: BackoffPolicy, rng: random.Random, requested: float | None = None
) -> float:
    """The delay to use: the handler's own request when it made one, else the backoff.

    Either way the result lies in [0, policy.max_seconds].
    """
    if requested is not None:
        return min(policy.max_seconds, max(0.0, requested))
    return backoff_delay(attempt, policy, rng)
