"""A kind's retry policy: which failures are retried, after how long (worker/retries.py)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from leasehold import task
from leasehold.worker import PermanentFailure, Registry, Retry, exponential, fixed
from leasehold.worker.handler_outcome import Failed, outcome_of
from leasehold.worker.retries import DEFAULT_RULES, RetryRules


class Declined(Exception):
    pass


class Flaky(ConnectionError):
    pass


RULES = RetryRules.of(retry_on=(ConnectionError, TimeoutError), fail_on=Flaky, backoff=fixed(30))


@pytest.mark.parametrize(
    ("error", "retryable", "delay"),
    [
        (ConnectionError("reset"), True, 30.0),
        (TimeoutError(), True, 30.0),
        (Flaky("listed in both: fail_on wins"), False, None),
        (KeyError("not in retry_on"), False, None),
        (PermanentFailure("the handler's word"), False, None),
        (Retry("the handler's word", delay=5), True, 5.0),
        (Retry("no delay of its own: the backoff's"), True, 30.0),
    ],
)
def test_the_first_matching_rule_decides(
    error: BaseException, retryable: bool, delay: float | None
) -> None:
    assert RULES.retryable(error) is retryable
    assert (RULES.delay(error, 1) if retryable else None) == delay


def test_without_a_policy_everything_is_retried_after_the_coordinators_backoff() -> None:
    assert DEFAULT_RULES.retryable(KeyError()) is True
    assert DEFAULT_RULES.delay(KeyError(), 3) is None  # no retry_after_seconds is sent
    assert DEFAULT_RULES.retryable(PermanentFailure()) is False


def test_exponential_backoff_grows_is_capped_and_jittered_within_its_bounds() -> None:
    exact = exponential(base=2, factor=3, max=100, jitter=0)
    assert [exact(n) for n in (1, 2, 3, 4, 5, 10_000)] == [2, 6, 18, 54, 100, 100]
    spread = exponential(base=10, jitter=0.5, rng=random.Random(7))
    seen = [spread(1) for _ in range(200)]
    assert min(seen) >= 5 and max(seen) <= 15 and len(set(seen)) > 100
    assert all(exponential(max=60)(n) <= 60 for n in range(1, 200))


def test_fixed_backoff_and_a_function_of_the_attempt() -> None:
    assert [fixed(30)(n) for n in (1, 2, 9)] == [30, 30, 30]
    assert 15 <= fixed(30, jitter=0.5)(1) <= 45
    rules = RetryRules.of(backoff=lambda attempt: 10 * attempt)
    assert rules.delay(KeyError(), 4) == 40


def test_a_backoff_that_breaks_falls_back_to_the_coordinators() -> None:
    """A bug in the backoff must not lose the report: the coordinator's backoff applies."""
    assert RetryRules.of(backoff=lambda attempt: 1 / 0).delay(KeyError(), 1) is None
    assert RetryRules.of(backoff=lambda attempt: -5).delay(KeyError(), 1) is None
    assert RetryRules.of(backoff=lambda attempt: float("nan")).delay(KeyError(), 1) is None


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ({"retry_on": "ValueError"}, "exception types"),
        ({"fail_on": (ValueError, 3)}, "exception types"),
        ({"backoff": 30}, "function of the attempt"),
    ],
)
def test_a_policy_is_checked_when_declared(given: dict[str, Any], problem: str) -> None:
    with pytest.raises(TypeError, match=problem):
        RetryRules.of(**given)
    with pytest.raises(TypeError, match=problem):
        task(kind="k", **given)
    with pytest.raises(TypeError, match=problem):
        Registry().handler("k", **given)


@pytest.mark.parametrize(
    "make", [lambda: exponential(base=-1), lambda: exponential(factor=0.5), lambda: fixed(-1)]
)
def test_backoffs_refuse_impossible_numbers(make: Any) -> None:
    with pytest.raises(ValueError, match=r"backoff|factor"):
        make()


def test_the_registry_keeps_each_kinds_policy_from_the_task_or_the_handler() -> None:
    registry = Registry()

    @registry.register
    @task(kind="charge", retry_on=ConnectionError, fail_on=(Declined,), backoff=fixed(5))
    def charge(amount: int) -> None: ...

    @registry.handler("plain", fail_on=KeyError)
    def plain(job: object) -> None: ...

    registry.add("default", print)
    assert registry.retry_of("charge") == RetryRules((ConnectionError,), (Declined,), fixed(5))
    assert charge.options(queue="q").retry == charge.retry  # a view keeps the policy
    assert registry.retry_of("plain").retryable(KeyError()) is False
    assert registry.retry_of("default") is DEFAULT_RULES


async def test_the_outcome_of_a_failed_handler_carries_the_policys_verdict() -> None:
    async def raising(error: BaseException) -> None:
        raise error

    async def outcome(error: BaseException, attempt: int = 2) -> Failed:
        run = asyncio.create_task(raising(error))
        await asyncio.wait([run])
        failed = outcome_of(run, RULES, attempt)
        assert isinstance(failed, Failed)
        return failed

    retried = await outcome(ConnectionError("reset"))
    assert (retried.retryable, retried.retry_after_seconds) == (True, 30.0)
    assert "Traceback" in retried.error and "ConnectionError: reset" in retried.error
    refused = await outcome(KeyError("sku"))
    assert (refused.retryable, refused.retry_after_seconds) == (False, None)
    spoken = await outcome(Retry("later", delay=2))
    assert (spoken.error, spoken.retry_after_seconds) == ("Retry: later", 2)
