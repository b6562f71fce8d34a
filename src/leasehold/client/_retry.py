"""How patiently a call is tried again after no coordinator answered: backoff and jitter.

Only ``Unavailable`` (a network error, a timeout, a 5xx answer) is retried: every other
error is an answer, and asking again would get the same one. ``_exchange.exchange``
applies the policy, together with the move to another coordinator.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# 2**60 times any sane base is far past any cap; a bound keeps the float math finite.
_MAX_EXPONENT = 60


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently a call is tried again.

    ``attempts`` counts rounds, the first included: a round tries the coordinator in use
    and moves on at once, when one gives no answer, to each other one that has not
    failed lately; the wait comes between rounds (with one coordinator, a round is one
    try). None
    means "until the caller gives up", for callers that bound the call by a deadline of
    their own (``asyncio.timeout``), as the worker does with a lease's expiry.
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
