"""The rules bound to a request: the store calls ``decide(job, now)``, and each of these takes
the request's arguments in front (``functools.partial``), then applies its rule from
``rules.transitions``. ``sealed`` encodes the answer inside the transaction (coordinator/service/answer.py).
"""

from __future__ import annotations

import random
from datetime import datetime

from leasehold.coordinator.rules.backoff import BackoffPolicy
from leasehold.coordinator.rules.transitions import (
    Outcome,
    decide_cancel,
    decide_complete,
    decide_deadline,
    decide_expire,
    decide_fail,
    decide_release,
    decide_renew,
    decide_requeue,
    decide_run_now,
    decide_spawn,
)
from leasehold.coordinator.service import answer
from leasehold.coordinator.store.contract import Decide
from leasehold.model import JSON, Job


def sealed(decide: Decide, job: Job, now: datetime) -> Outcome:
    return answer.sealed(decide(job, now))


def renew(token: int, lease_seconds: float | None, job: Job, now: datetime) -> Outcome:
    return decide_renew(job, token, lease_seconds, now)


def complete(token: int, result: JSON, job: Job, now: datetime) -> Outcome:
    return decide_complete(job, token, result, now)


def fail(
    token: int,
    error: str,
    retryable: bool,
    policy: BackoffPolicy,
    rng: random.Random,
    retry_after_seconds: float | None,
    job: Job,
    now: datetime,
) -> Outcome:
    return decide_fail(
        job,
        token,
        error,
        now,
        retryable=retryable,
        policy=policy,
        rng=rng,
        retry_after_seconds=retry_after_seconds,
    )


def release(token: int, job: Job, now: datetime) -> Outcome:
    return decide_release(job, token, now)


def expire(token: int, job: Job, now: datetime) -> Outcome:
    return decide_expire(job, token, now)


def requeue(job: Job, now: datetime) -> Outcome:
    return decide_requeue(job, now)


def run_now(job: Job, now: datetime) -> Outcome:
    return decide_run_now(job, now)


def cancel(job: Job, now: datetime) -> Outcome:
    return decide_cancel(job, now)


def spawn(token: int, job: Job, now: datetime) -> Outcome:
    return decide_spawn(job, token, now)


def deadline(job: Job, now: datetime) -> Outcome:
    return decide_deadline(job, now)
