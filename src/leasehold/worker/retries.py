"""A handler's retry policy: which failures are retried, and after how long.

Declared per kind (``@task(retry_on=..., fail_on=..., backoff=...)``, or the same keywords
on ``registry.handler``) and applied by the worker when it reports a failure: a failure
that must not be retried goes out with ``retryable: false`` (the job is dead at once), a
retried one with ``retry_after_seconds`` from the backoff (PROTOCOL.md §6). The coordinator
still decides: it caps the delay at its ``--retry-max-seconds`` and ends the job dead once
its attempts are spent. Without a backoff the coordinator's own applies (exponential with
jitter, ``--retry-base-seconds``).

The order of the checks, first match wins:

1. ``PermanentFailure``: never retried; ``Retry``: retried, after its ``delay`` if it gives
   one, else after the backoff (the handler's own word beats the declaration);
2. an instance of a ``fail_on`` type: not retried;
3. with ``retry_on`` given, anything that is not an instance of one of its types: not
   retried;
4. anything else: retried after the backoff.

A time limit that runs out counts as a ``TimeoutError``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

import structlog

from leasehold.worker.errors import PermanentFailure, Retry

log = structlog.get_logger("leasehold.worker")

Backoff: TypeAlias = Callable[[int], float]
"""Seconds to wait after failed attempt number ``attempt`` (1 for the first)."""

ExceptionTypes: TypeAlias = type[BaseException] | tuple[type[BaseException], ...]

_RNG = random.Random()


@dataclass(frozen=True, slots=True)
class Exponential:
    """``base * factor ** (attempt - 1)``, capped at ``max``, then spread by ``jitter``
    (0.5: anywhere from half to one and a half times), and capped again."""

    base: float = 1.0
    factor: float = 2.0
    max: float = 3600.0
    jitter: float = 0.5
    rng: random.Random | None = None

    def __post_init__(self) -> None:
        _check_seconds("base", self.base)
        _check_seconds("max", self.max)
        if not (math.isfinite(self.factor) and self.factor >= 1):
            raise ValueError(f"an exponential backoff's factor is at least 1, not {self.factor!r}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter is a fraction from 0 to 1, not {self.jitter!r}")

    def __call__(self, attempt: int) -> float:
        # The exponent stops where the cap is reached anyway: no float overflow.
        exponent = min(max(attempt - 1, 0), 1000)
        try:
            raw = min(self.max, self.base * self.factor**exponent)
        except OverflowError:
            raw = self.max
        spread = (self.rng or _RNG).uniform(1 - self.jitter, 1 + self.jitter)
        return min(self.max, raw * spread)


@dataclass(frozen=True, slots=True)
class Fixed:
    """The same delay after every attempt, spread by ``jitter`` (0: exactly ``seconds``)."""

    seconds: float
    jitter: float = 0.0
    rng: random.Random | None = None

    def __post_init__(self) -> None:
        _check_seconds("seconds", self.seconds)
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter is a fraction from 0 to 1, not {self.jitter!r}")

    def __call__(self, attempt: int) -> float:
        if not self.jitter:
            return self.seconds
        return self.seconds * (self.rng or _RNG).uniform(1 - self.jitter, 1 + self.jitter)


def exponential(
    base: float = 1.0,
    factor: float = 2.0,
    *,
    max: float = 3600.0,
    jitter: float = 0.5,
    rng: random.Random | None = None,
) -> Exponential:
    """A backoff that grows with each attempt: ``base * factor ** (attempt - 1)`` seconds,
    at most ``max``, spread by ``jitter`` so that jobs that failed together do not come
    back together."""
    return Exponential(base, factor, max, jitter, rng)


def fixed(seconds: float, *, jitter: float = 0.0, rng: random.Random | None = None) -> Fixed:
    """A backoff of ``seconds`` after every attempt."""
    return Fixed(seconds, jitter, rng)


def _check_seconds(name: str, value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
        raise ValueError(f"a backoff's {name} is a number of seconds >= 0, not {value!r}")


def _exception_types(name: str, types: ExceptionTypes | None) -> tuple[type[BaseException], ...]:
    if types is None:
        return ()
    found = types if isinstance(types, tuple) else (types,)
    for t in found:
        if not (isinstance(t, type) and issubclass(t, BaseException)):
            raise TypeError(f"{name} takes exception types, not {t!r}")
    return found


@dataclass(frozen=True, slots=True)
class RetryRules:
    """One kind's retry policy (see the module docstring). The default retries everything
    after the coordinator's backoff, as a handler without a policy always was."""

    retry_on: tuple[type[BaseException], ...] | None = None  # None: every exception
    fail_on: tuple[type[BaseException], ...] = ()
    backoff: Backoff | None = None  # None: the coordinator's

    @classmethod
    def of(
        cls,
        retry_on: ExceptionTypes | None = None,
        fail_on: ExceptionTypes | None = None,
        backoff: Backoff | None = None,
    ) -> RetryRules:
        """Checked rules: exception types (one or a tuple), a callable backoff."""
        if backoff is not None and not callable(backoff):
            raise TypeError(f"backoff is a function of the attempt number, not {backoff!r}")
        return cls(
            None if retry_on is None else _exception_types("retry_on", retry_on),
            _exception_types("fail_on", fail_on),
            backoff,
        )

    def retryable(self, error: BaseException) -> bool:
        """Whether a failure by ``error`` is tried again (attempts allowing)."""
        if isinstance(error, PermanentFailure):
            return False
        if isinstance(error, Retry):
            return True
        if isinstance(error, self.fail_on):
            return False
        return self.retry_on is None or isinstance(error, self.retry_on)

    def delay(self, error: BaseException, attempt: int) -> float | None:
        """The retry delay to ask for after ``error`` on attempt ``attempt``; None leaves
        it to the coordinator's backoff."""
        if isinstance(error, Retry) and error.delay is not None:
            return error.delay
        if self.backoff is None:
            return None
        try:
            seconds = float(self.backoff(attempt))
        except Exception as exc:  # a bug in the backoff must not lose the report
            log.error("job.backoff_failed", error=repr(exc), attempt=attempt)
            return None
        if not (math.isfinite(seconds) and seconds >= 0):
            log.error("job.backoff_failed", error=f"answered {seconds!r}", attempt=attempt)
            return None
        return seconds


DEFAULT_RULES = RetryRules()
