"""Protocol 1.1's rules: distinct 409 codes for a renew after a report and a release after
the reaper, and enqueue requests compared with their defaults filled in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from leasehold.coordinator.rules.transitions import (
    decide_complete,
    decide_expire,
    decide_release,
    decide_renew,
    normalized_fingerprints,
    request_fingerprint,
)
from leasehold.errors import LeaseExpired, NotRunning
from leasehold.model import EnqueueSpec, Job, JobStatus
from tests.unit.test_transitions import T0, running

LATER = T0 + timedelta(seconds=60)


def _expired_and_reaped() -> Job:
    return decide_expire(running(token=4), 4, LATER).job


def test_renew_after_the_lease_reported_is_not_running() -> None:
    """A renew after its own complete is `not_running`, not `lease_expired`."""
    done = decide_complete(running(token=4), 4, "r", T0).job
    error = decide_renew(done, 4, None, T0).error
    assert isinstance(error, NotRunning) and error.code == "not_running"


def test_renew_after_the_reaper_took_the_job_back_is_lease_expired() -> None:
    reaped = _expired_and_reaped()
    assert reaped.status is JobStatus.QUEUED
    error = decide_renew(reaped, 4, None, LATER).error
    assert type(error) is LeaseExpired and error.code == "lease_expired"


def test_release_after_the_reaper_took_the_job_back_is_lease_expired() -> None:
    """The row the table lacked: the job is not held any more; nothing changes."""
    outcome = decide_release(_expired_and_reaped(), 4, LATER)
    assert type(outcome.error) is LeaseExpired and not outcome.changed


def _fingerprints(
    max_attempts: int | None = None,
    run_after: datetime | None = None,
    priority: int | None = None,
    queue: str | None = None,
) -> tuple[str, tuple[str, ...]]:
    request = EnqueueSpec(
        "k",
        {"a": 1},
        max_attempts=max_attempts,
        run_after=run_after,
        priority=priority,
        queue=queue,
    )
    return normalized_fingerprints(request, default_max_attempts=5)


def test_spelt_out_defaults_are_the_same_request() -> None:
    bare, _ = _fingerprints()
    spelt, earlier = _fingerprints(max_attempts=5, priority=0, queue="default")
    assert spelt == bare
    # Keys stored by the release before (fingerprint as given) still match their retry.
    assert earlier == (request_fingerprint("k", {"a": 1}, 5, None, 0, "default"),)


def test_a_request_that_names_no_option_hashes_as_it_always_did() -> None:
    bare, earlier = _fingerprints()
    assert bare == request_fingerprint("k", {"a": 1}, None, None) and earlier == ()


def test_run_after_is_compared_as_an_instant() -> None:
    when = datetime(2030, 5, 1, 12, tzinfo=UTC)
    elsewhere = when.astimezone(timezone(timedelta(hours=-7)))
    assert _fingerprints(run_after=when)[0] == _fingerprints(run_after=elsewhere)[0]


def test_a_different_option_is_a_different_request() -> None:
    assert _fingerprints(max_attempts=4)[0] != _fingerprints()[0]
    assert _fingerprints(queue="mail")[0] != _fingerprints()[0]
