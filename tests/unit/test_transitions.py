"""The state machine's rules, with a fixed clock and no I/O."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from leasehold.coordinator.rules.backoff import BackoffPolicy
from leasehold.coordinator.rules.transitions import (
    FREE_RELEASES,
    Outcome,
    decide_complete,
    decide_expire,
    decide_fail,
    decide_release,
    decide_renew,
    decide_requeue,
    request_fingerprint,
)
from leasehold.errors import InvalidTransition, LeaseExpired, ReportConflict, StaleToken
from leasehold.model import AttemptOutcome, Event, Job, JobStatus, Report

T0 = datetime(2030, 1, 1, tzinfo=UTC)
POLICY = BackoffPolicy(base_seconds=1.0, max_seconds=100.0)


def running(token: int = 1, attempts: int = 1, max_attempts: int = 3, **kw: object) -> Job:
    fields: dict[str, object] = {
        "id": 1,
        "kind": "k",
        "payload": None,
        "status": JobStatus.RUNNING,
        "attempts": attempts,
        "max_attempts": max_attempts,
        "run_after": T0,
        "created_at": T0,
        "lease_token": token,
        "lease_owner": "w",
        "lease_expires_at": T0 + timedelta(seconds=30),
        "lease_seconds": 30.0,
        "leased_at": T0,
    }
    fields.update(kw)
    return Job(**fields)  # type: ignore[arg-type]


def fail(job: Job, token: int, now: datetime = T0, retry_after: float | None = None) -> Outcome:
    return decide_fail(
        job,
        token,
        "boom",
        now,
        policy=POLICY,
        rng=random.Random(1),
        retryable=True,
        retry_after_seconds=retry_after,
    )


class TestFencing:
    @pytest.mark.parametrize("token", [0, 1, 3, 99])
    def test_any_token_but_the_current_is_stale(self, token: int) -> None:
        job = running(token=2)
        for outcome in (
            decide_complete(job, token, 1, T0),
            decide_renew(job, token, None, T0),
            decide_release(job, token, T0),
            decide_fail(job, token, "e", T0, retryable=True, policy=POLICY, rng=random.Random()),
        ):
            assert isinstance(outcome.error, StaleToken)
            assert not outcome.changed
            assert outcome.job == job
            assert outcome.events == ("stale_token",)

    def test_token_zero_is_never_valid_even_on_an_unleased_job(self) -> None:
        job = running(token=0, status=JobStatus.QUEUED, attempts=0)
        assert isinstance(decide_complete(job, 0, None, T0).error, StaleToken)

    def test_requeue_revokes_the_old_token(self) -> None:
        dead = running(status=JobStatus.DEAD, attempts=3)
        revived = decide_requeue(dead, T0).job
        assert revived.lease_token == dead.lease_token
        assert isinstance(decide_complete(revived, dead.lease_token, 1, T0).error, StaleToken)


class TestComplete:
    def test_completes_and_keeps_first_result_on_repeat(self) -> None:
        first = decide_complete(running(), 1, {"v": 1}, T0)
        assert first.changed
        assert first.job.status is JobStatus.COMPLETED
        assert first.job.result == {"v": 1}
        assert first.attempt is AttemptOutcome.COMPLETED
        again = decide_complete(first.job, 1, {"v": 2}, T0)
        assert not again.changed
        assert again.error is None
        assert again.job.result == {"v": 1}

    def test_a_completion_counts_how_long_its_attempt_ran(self) -> None:
        done = decide_complete(running(), 1, None, T0 + timedelta(seconds=2.5))
        assert done.counted() == [("completed", 2.5)]
        failed = fail(running(), 1, T0 + timedelta(seconds=2.5))
        assert all(value == 0.0 for _, value in failed.counted())

    def test_after_fail_is_a_conflict(self) -> None:
        failed = fail(running(), 1).job
        assert isinstance(decide_complete(failed, 1, 1, T0).error, ReportConflict)

    def test_late_report_under_current_token_is_accepted_after_expiry(self) -> None:
        late = T0 + timedelta(minutes=5)
        outcome = decide_complete(running(), 1, "ok", late)
        assert outcome.changed
        assert outcome.job.status is JobStatus.COMPLETED

    def test_late_report_after_reaper_requeued_is_accepted(self) -> None:
        late = T0 + timedelta(minutes=5)
        reaped = decide_expire(running(), 1, late).job
        assert reaped.status is JobStatus.QUEUED
        outcome = decide_complete(reaped, 1, "ok", late)
        assert outcome.job.status is JobStatus.COMPLETED


class TestFail:
    def test_retry_is_scheduled_within_backoff_bounds(self) -> None:
        outcome = fail(running(attempts=2), 1)
        job = outcome.job
        assert job.status is JobStatus.QUEUED
        assert job.last_error == "boom"
        assert T0 + timedelta(seconds=1) <= job.run_after <= T0 + timedelta(seconds=3)

    def test_last_attempt_goes_dead(self) -> None:
        outcome = fail(running(attempts=3, max_attempts=3), 1)
        assert outcome.job.status is JobStatus.DEAD
        assert outcome.events == ("failed", "dead")

    def test_not_retryable_goes_dead_at_once(self) -> None:
        outcome = decide_fail(
            running(attempts=1), 1, "bad", T0, retryable=False, policy=POLICY, rng=random.Random()
        )
        assert outcome.job.status is JobStatus.DEAD

    def test_requested_delay_is_used_and_capped(self) -> None:
        job = fail(running(), 1, retry_after=7).job
        assert job.run_after == T0 + timedelta(seconds=7)
        job = fail(running(), 1, retry_after=10**6).job
        assert job.run_after == T0 + timedelta(seconds=POLICY.max_seconds)

    def test_repeat_is_idempotent_and_complete_after_is_conflict(self) -> None:
        failed = fail(running(), 1).job
        again = fail(failed, 1)
        assert not again.changed
        assert again.error is None


class TestRenew:
    def test_extends_from_now(self) -> None:
        now = T0 + timedelta(seconds=10)
        outcome = decide_renew(running(), 1, 60, now)
        assert outcome.job.lease_expires_at == now + timedelta(seconds=60)
        assert outcome.job.lease_seconds == 60
        default = decide_renew(running(), 1, None, now)
        assert default.job.lease_expires_at == now + timedelta(seconds=30)

    def test_expired_lease_cannot_be_renewed(self) -> None:
        outcome = decide_renew(running(), 1, None, T0 + timedelta(seconds=30))
        assert isinstance(outcome.error, LeaseExpired)

    def test_reported_job_cannot_be_renewed(self) -> None:
        done = decide_complete(running(), 1, None, T0).job
        assert isinstance(decide_renew(done, 1, None, T0).error, LeaseExpired)


class TestExpire:
    def test_requeues_at_once_and_counts(self) -> None:
        now = T0 + timedelta(seconds=31)
        outcome = decide_expire(running(attempts=1), 1, now)
        assert outcome.job.status is JobStatus.QUEUED
        assert outcome.job.run_after == now
        assert outcome.job.attempts == 1
        assert "lease expired" in (outcome.job.last_error or "")
        assert outcome.attempt is AttemptOutcome.EXPIRED
        assert outcome.events == ("lease_expired",)

    def test_last_attempt_expiry_is_dead(self) -> None:
        outcome = decide_expire(running(attempts=3), 1, T0 + timedelta(seconds=31))
        assert outcome.job.status is JobStatus.DEAD

    @pytest.mark.parametrize(
        "job",
        [
            running(token=2),  # a newer lease
            running(lease_expires_at=T0 + timedelta(hours=1)),  # renewed meanwhile
            running(status=JobStatus.COMPLETED, report=Report.COMPLETED),  # finished
        ],
    )
    def test_is_a_compare_and_set_that_anything_newer_wins(self, job: Job) -> None:
        outcome = decide_expire(job, 1, T0 + timedelta(seconds=31))
        assert not outcome.changed
        assert outcome.job == job


class TestReleaseAndRequeue:
    def test_release_gives_the_attempt_back(self) -> None:
        outcome = decide_release(running(attempts=3, max_attempts=3), 1, T0)
        assert outcome.job.status is JobStatus.QUEUED
        assert outcome.job.attempts == 2
        assert isinstance(decide_complete(outcome.job, 1, None, T0).error, ReportConflict)

    def test_only_the_first_releases_give_the_attempt_back(self) -> None:
        """After FREE_RELEASES, a release keeps its attempt; on the last one the job dies."""
        kept = decide_release(running(attempts=1, releases=FREE_RELEASES - 1), 1, T0).job
        assert (kept.status, kept.attempts, kept.releases) == (JobStatus.QUEUED, 0, 3)
        counted = decide_release(running(attempts=1, releases=FREE_RELEASES), 1, T0).job
        assert (counted.status, counted.attempts, counted.releases) == (JobStatus.QUEUED, 1, 4)
        last = decide_release(running(attempts=3, max_attempts=3, releases=FREE_RELEASES), 1, T0)
        assert (last.job.status, last.events) == (JobStatus.DEAD, ("released", "dead"))
        assert last.job.last_error and "released 4 times" in last.job.last_error
        assert not decide_release(last.job, 1, T0).changed  # a retried release: as before
        revived = decide_requeue(last.job, T0).job
        assert (revived.attempts, revived.releases) == (0, 0)

    def test_requeue_only_dead(self) -> None:
        assert isinstance(decide_requeue(running(), T0).error, InvalidTransition)
        dead = running(status=JobStatus.DEAD, attempts=3)
        revived = decide_requeue(dead, T0 + timedelta(seconds=5)).job
        assert (revived.status, revived.attempts) == (JobStatus.QUEUED, 0)
        assert revived.run_after == T0 + timedelta(seconds=5)


def test_fingerprint_tells_requests_apart() -> None:
    base = request_fingerprint("k", {"a": 1, "b": 2}, None, None)
    assert base == request_fingerprint("k", {"b": 2, "a": 1}, None, None)
    assert base != request_fingerprint("k", {"a": 1, "b": 3}, None, None)
    assert base != request_fingerprint("k", {"a": 1, "b": 2}, 5, None)
    assert base != request_fingerprint("j", {"a": 1, "b": 2}, None, None)
    assert base != request_fingerprint("k", {"a": 1, "b": 2}, None, T0)


class TestFoundByTheStateMachine:
    """Sequences tests/integration/test_state_machine.py found, pinned here."""

    def test_an_expiry_that_requeues_clears_the_lease(self) -> None:
        requeued = decide_expire(running(attempts=1, max_attempts=3), 1, T0 + timedelta(seconds=31))
        assert requeued.job.status is JobStatus.QUEUED
        assert requeued.job.lease_expires_at is None

    def test_a_late_fail_on_a_job_the_reaper_buried_does_not_kill_it_twice(self) -> None:
        expired_at = T0 + timedelta(seconds=31)
        buried = decide_expire(running(attempts=3, max_attempts=3), 1, expired_at).job
        assert buried.status is JobStatus.DEAD
        late = fail(buried, 1, now=expired_at + timedelta(seconds=5))
        assert late.changed and late.job.status is JobStatus.DEAD
        assert late.job.last_error == "boom"  # the handler's own error is kept
        assert late.job.finished_at == expired_at  # it died once, when the lease ran out
        assert late.events == ("failed",)  # not a second "dead"


def test_the_counted_events_keep_the_names_the_database_holds() -> None:
    # Pinned: the store keeps totals under these names, and /stats lists them in this order.
    assert [e.value for e in Event] == [
        "enqueued",
        "leased",
        "renewed",
        "completed",
        "failed",
        "dead",
        "lease_expired",
        "stale_token",
        "released",
        "requeued",
        "cancel_requested",
        "cancelled",
        "deadline_missed",
        "duplicate",
    ]
