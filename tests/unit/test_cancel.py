"""Cancellation rules, with a fixed clock and no I/O."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from leasehold.coordinator.rules.transitions import (
    decide_cancel,
    decide_complete,
    decide_expire,
    decide_fail,
    decide_release,
    decide_renew,
    decide_requeue,
    request_fingerprint,
)
from leasehold.errors import InvalidTransition, JobCancelled, StaleToken
from leasehold.model import AttemptOutcome, JobStatus, Report
from tests.unit.test_transitions import POLICY, T0, running

LATER = T0 + timedelta(seconds=5)


@pytest.mark.parametrize("status", [JobStatus.QUEUED, JobStatus.DEAD])
def test_queued_and_dead_jobs_are_cancelled_at_once(status: JobStatus) -> None:
    outcome = decide_cancel(running(status=status, lease_expires_at=None), LATER)
    assert outcome.changed and outcome.error is None
    assert outcome.job.status is JobStatus.CANCELLED
    assert (outcome.job.finished_at, outcome.job.cancel_requested) == (LATER, True)
    assert outcome.events == ("cancelled",)
    assert outcome.attempt is None


def test_a_running_job_is_only_marked() -> None:
    outcome = decide_cancel(running(), LATER)
    assert outcome.changed and outcome.error is None
    assert (outcome.job.status, outcome.job.cancel_requested) == (JobStatus.RUNNING, True)
    assert outcome.events == ("cancel_requested",)


def test_cancel_is_idempotent() -> None:
    for job in (
        decide_cancel(running(), LATER).job,
        decide_cancel(running(status=JobStatus.QUEUED), LATER).job,
    ):
        again = decide_cancel(job, LATER + timedelta(seconds=1))
        assert not again.changed and again.error is None
        assert again.job == job


def test_a_completed_job_cannot_be_cancelled() -> None:
    done = decide_complete(running(), 1, "ok", T0).job
    outcome = decide_cancel(done, LATER)
    assert isinstance(outcome.error, InvalidTransition)
    assert not outcome.changed


def test_renew_of_a_job_being_cancelled_says_so_and_changes_nothing() -> None:
    marked = decide_cancel(running(), LATER).job
    outcome = decide_renew(marked, 1, None, LATER)
    assert isinstance(outcome.error, JobCancelled)
    assert outcome.error.code == "job_cancelled"
    assert not outcome.changed


def test_complete_from_the_holder_ends_it_cancelled_and_never_records_the_result() -> None:
    marked = decide_cancel(running(), LATER).job
    outcome = decide_complete(marked, 1, {"would": "be"}, LATER)
    assert isinstance(outcome.error, JobCancelled)
    assert outcome.changed
    assert outcome.job.status is JobStatus.CANCELLED
    assert outcome.job.result is None
    assert outcome.attempt is AttemptOutcome.CANCELLED
    assert outcome.events == ("cancelled",)
    # A retried complete is refused the same way and changes nothing more.
    again = decide_complete(outcome.job, 1, {"would": "be"}, LATER)
    assert isinstance(again.error, JobCancelled)
    assert not again.changed


def test_fail_and_release_from_the_holder_are_acknowledged() -> None:
    marked = decide_cancel(running(), LATER).job
    failed = decide_fail(
        marked, 1, "stopped", LATER, retryable=True, policy=POLICY, rng=random.Random(1)
    )
    released = decide_release(marked, 1, LATER)
    for outcome in (failed, released):
        assert outcome.error is None and outcome.changed
        assert outcome.job.status is JobStatus.CANCELLED
        assert outcome.attempt is AttemptOutcome.CANCELLED
        repeat = decide_release(outcome.job, 1, LATER)
        assert repeat.error is None and not repeat.changed
    assert failed.job.last_error == "stopped"


def test_a_stale_token_is_still_stale_on_a_cancelled_job() -> None:
    cancelled = decide_cancel(running(token=2, status=JobStatus.QUEUED), LATER).job
    assert isinstance(decide_complete(cancelled, 1, None, LATER).error, StaleToken)
    assert isinstance(decide_release(cancelled, 1, LATER).error, StaleToken)


def test_a_late_complete_on_a_job_cancelled_while_queued_is_refused() -> None:
    reaped = decide_expire(running(), 1, T0 + timedelta(seconds=31)).job
    cancelled = decide_cancel(reaped, LATER).job
    outcome = decide_complete(cancelled, 1, "late", LATER)
    assert isinstance(outcome.error, JobCancelled)
    assert not outcome.changed


def test_the_reaper_ends_an_expired_cancel_requested_lease_as_cancelled() -> None:
    marked = decide_cancel(running(attempts=1, max_attempts=5), LATER).job
    outcome = decide_expire(marked, 1, T0 + timedelta(seconds=31))
    assert outcome.job.status is JobStatus.CANCELLED
    assert outcome.attempt is AttemptOutcome.CANCELLED
    assert outcome.events == ("lease_expired", "cancelled")


def test_a_cancelled_job_is_requeued_like_a_dead_one() -> None:
    cancelled = decide_complete(decide_cancel(running(), LATER).job, 1, None, LATER).job
    outcome = decide_requeue(cancelled, LATER)
    revived = outcome.job
    assert (revived.status, revived.attempts, revived.cancel_requested) == (
        JobStatus.QUEUED,
        0,
        False,
    )
    assert (revived.lease_token, revived.report) == (1, Report.REVOKED)
    assert isinstance(decide_complete(revived, 1, None, LATER).error, StaleToken)


def test_priority_and_queue_join_the_fingerprint_only_when_given() -> None:
    base = request_fingerprint("k", None, None, None)
    assert base == request_fingerprint("k", None, None, None, None, None)
    assert base != request_fingerprint("k", None, None, None, 0, None)
    assert request_fingerprint("k", None, None, None, 1, "q") != request_fingerprint(
        "k", None, None, None, 1, "r"
    )


def test_a_job_cancelled_before_its_first_lease_has_no_token_to_revoke() -> None:
    never_leased = running(token=0, attempts=0, status=JobStatus.QUEUED, lease_expires_at=None)
    cancelled = decide_cancel(never_leased, LATER).job
    revived = decide_requeue(cancelled, LATER).job
    assert (revived.status, revived.lease_token, revived.report) == (JobStatus.QUEUED, 0, None)
