"""Trying a call again after the coordinator could not answer, with backoff and jitter.

Only ``Unavailable`` (a network error, a timeout, a 5xx answer) is retried: every other
error is an answer, and asking again would get the same one.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import structlog

from leasehold.errors import Unavailable

log = structlog.get_logger("leasehold.client")

T = TypeVar("T")

# 2**60 times any sane base is far past any cap; a bound keeps the float math finite.
_MAX_EXPONENT = 60


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently a call is tried again.

    ``attempts`` counts the first try; None means "until the caller gives up", for callers
    that bound the call by a deadline of their own (``asyncio.timeout``), as the worker
    does with a lease's expiry.
    """

    attempts: int | None = 5
    base_seconds: float = 0.1
    max_seconds: float = 5.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        """The wait after failed try number ``attempt`` (1-based).

        Exponential with "equal jitter": at least half the step, so waits keep growing,
        plus a random share of the other half, so many clients do not retry in lockstep.
        """
        step = min(self.max_seconds, self.base_seconds * 2.0 ** min(attempt - 1, _MAX_EXPONENT))
        return step / 2 + rng.uniform(0, step / 2)


NO_RETRY = RetryPolicy(attempts=1)


async def call_with_retry(
    call: Callable[[], Awaitable[T]], policy: RetryPolicy, rng: random.Random, what: str
) -> T:
    """``await call()``, trying again on ``Unavailable`` as ``policy`` allows."""
    attempt = 1
    while True:
        try:
            return await call()
        except Unavailable as exc:
            if policy.attempts is not None and attempt >= policy.attempts:
                raise
            delay = policy.delay(attempt, rng)
            log.warning(
                "client.retry", call=what, attempt=attempt, delay=round(delay, 3), error=exc.message
            )
            await asyncio.sleep(delay)
            attempt += 1
