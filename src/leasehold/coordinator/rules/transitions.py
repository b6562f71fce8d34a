"""Every rule about tokens, attempts, expiry, retries and dead jobs, decided in one place.

Each ``decide_*`` function takes the job as stored, the request and ``now``, and returns an
``Outcome``: the job as it should stand afterwards, whether that must be written, and the
error to answer with, if any. They do no I/O; a store runs them inside its transaction and
writes ``outcome.job`` guarded by the token and status it read (a compare-and-set), so the
same rules hold on every backend.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import orjson

from leasehold.coordinator.rules.backoff import BackoffPolicy, retry_delay
from leasehold.coordinator.rules.graph import requeue_dependent
from leasehold.errors import (
    InvalidTransition,
    JobCancelled,
    LeaseExpired,
    LeaseholdError,
    NotRunning,
    ReportConflict,
    StaleToken,
)
from leasehold.model import (
    DEFAULT_PRIORITY,
    DEFAULT_QUEUE,
    JSON,
    AttemptOutcome,
    EnqueueSpec,
    Event,
    Job,
    JobStatus,
    Report,
)
from leasehold.model import Outcome as Outcome  # the rules' answer; data, so in the model


def _unchanged(job: Job) -> Outcome:
    return Outcome(job)


def _rejected(job: Job, error: LeaseholdError, *events: Event) -> Outcome:
    return Outcome(job, error=error, events=events)


def fence(job: Job, token: int) -> StaleToken | None:
    """The fencing check: only the job's newest lease token may speak for it.

    Tokens come from one coordinator-wide sequence: each lease's is above every token
    issued before it, so a job's tokens increase and no two jobs' tokens are equal. A token
    of 0 was never issued, nor was any token above the current one; an older token has
    been superseded by a newer lease; and another job's token is simply not this job's.
    """
    if job.lease_token == 0 or token != job.lease_token:
        return StaleToken(
            f"token {token} is not the current lease token of job {job.id} "
            f"(current: {job.lease_token})"
        )
    if job.report is Report.REVOKED:
        return StaleToken(f"the lease under token {token} was revoked by a requeue")
    return None


def lease_expiry(now: datetime, lease_seconds: float) -> datetime:
    return now + timedelta(seconds=lease_seconds)


def is_expired(job: Job, now: datetime) -> bool:
    return job.lease_expires_at is None or job.lease_expires_at <= now


def decide_renew(job: Job, token: int, lease_seconds: float | None, now: datetime) -> Outcome:
    """Extend a live lease from now, by ``lease_seconds`` or the length it was granted for."""
    stale = fence(job, token)
    if stale:
        return _rejected(job, stale, Event.STALE_TOKEN)
    if job.cancel_requested or job.status is JobStatus.CANCELLED:
        return _rejected(job, JobCancelled(f"job {job.id} was cancelled: stop working on it"))
    if job.report is not None:
        return _rejected(
            job, NotRunning(f"job {job.id} was already {job.report} under token {token}")
        )
    if job.status is not JobStatus.RUNNING:
        # The reaper took the job back (queued or dead) after the lease ran out.
        return _rejected(job, LeaseExpired(f"the lease on job {job.id} has expired"))
    if is_expired(job, now):
        return _rejected(job, LeaseExpired(f"the lease on job {job.id} has expired"))
    seconds = lease_seconds if lease_seconds is not None else job.lease_seconds or 0.0
    renewed = job.replace(lease_expires_at=lease_expiry(now, seconds), lease_seconds=seconds)
    return Outcome(renewed, changed=True, events=(Event.RENEWED,))


def _check_report(
    job: Job, token: int, report: Report, now: datetime, error: str | None = None
) -> Outcome | None:
    """Shared fencing for complete / fail / release: None means "go ahead".

    A report under the current token is accepted even after the lease expired, as long as
    no newer lease was issued: fencing, not the lease's clock, decides who may write.
    Cancellation comes next: a report on a job being cancelled ends it as cancelled, and a
    report on a cancelled job is acknowledged (fail, release) or refused (complete), never
    recorded as the job's outcome.
    """
    stale = fence(job, token)
    if stale:
        return _rejected(job, stale, Event.STALE_TOKEN)
    if job.status is JobStatus.CANCELLED:
        if report is Report.COMPLETED:
            return _rejected(job, _cancelled(job))
        return _unchanged(job)
    if job.cancel_requested and job.status is JobStatus.RUNNING and job.report is None:
        return _finish_cancelled(job, report, now, error)
    if job.report is report:
        return _unchanged(job)  # a retried request: answer as before, change nothing
    if job.report is not None:
        return _rejected(
            job,
            ReportConflict(f"job {job.id} was already {job.report} under token {token}"),
        )
    return None


def _cancelled(job: Job) -> JobCancelled:
    return JobCancelled(f"job {job.id} was cancelled; its result is not recorded")


def _finish_cancelled(job: Job, report: Report, now: datetime, error: str | None) -> Outcome:
    """The holder of a job being cancelled reported: the job ends cancelled, whatever it
    said. A completion is answered with JobCancelled so the worker knows it did not count."""
    done = job.replace(
        status=JobStatus.CANCELLED,
        report=report,
        finished_at=now,
        lease_expires_at=None,
        last_error=error or f"cancelled while running (the holder {report})",
    )
    return Outcome(
        done,
        changed=True,
        error=_cancelled(job) if report is Report.COMPLETED else None,
        attempt=AttemptOutcome.CANCELLED,
        events=(Event.CANCELLED,),
    )


def decide_complete(job: Job, token: int, result: JSON, now: datetime) -> Outcome:
    """Record success. The first result under a token stays; repeats change nothing."""
    verdict = _check_report(job, token, Report.COMPLETED, now)
    if verdict:
        return verdict
    done = job.replace(
        status=JobStatus.COMPLETED, result=result, report=Report.COMPLETED, finished_at=now
    )
    ran = max(0.0, (now - job.leased_at).total_seconds()) if job.leased_at is not None else 0.0
    return Outcome(
        done,
        changed=True,
        attempt=AttemptOutcome.COMPLETED,
        events=(Event.COMPLETED,),
        ran_seconds=ran,
    )


def decide_fail(
    job: Job,
    token: int,
    error: str,
    now: datetime,
    *,
    retryable: bool,
    policy: BackoffPolicy,
    rng: random.Random,
    retry_after_seconds: float | None = None,
) -> Outcome:
    """Record failure: retry after a backoff, or dead when out of attempts or not retryable."""
    verdict = _check_report(job, token, Report.FAILED, now, error)
    if verdict:
        return verdict
    if not retryable or job.attempts >= job.max_attempts:
        if job.status is JobStatus.DEAD:
            # A late report on a job the reaper already buried (its last lease expired): the
            # handler's error replaces "lease expired", but the job died once, back then.
            dead = job.replace(last_error=error, report=Report.FAILED)
            return Outcome(
                dead, changed=True, attempt=AttemptOutcome.FAILED, events=(Event.FAILED,)
            )
        dead = job.replace(
            status=JobStatus.DEAD, last_error=error, report=Report.FAILED, finished_at=now
        )
        return Outcome(
            dead, changed=True, attempt=AttemptOutcome.FAILED, events=(Event.FAILED, Event.DEAD)
        )
    delay = retry_delay(job.attempts, policy, rng, retry_after_seconds)
    retry = job.replace(
        status=JobStatus.QUEUED,
        run_after=now + timedelta(seconds=delay),
        last_error=error,
        report=Report.FAILED,
        lease_expires_at=None,
    )
    return Outcome(retry, changed=True, attempt=AttemptOutcome.FAILED, events=(Event.FAILED,))


FREE_RELEASES = 3
"""Releases of one job that give their attempt back; later ones count as attempts."""


def decide_release(job: Job, token: int, now: datetime) -> Outcome:
    """Hand a leased job back unfinished (a worker shutting down): queued again at once.

    The job's first ``FREE_RELEASES`` releases give back the attempt their lease counted,
    so a job handed back on its last attempt is not lost to the dead list. Later ones keep
    it: a job that is leased and released forever (a worker that cannot run it) then ends
    dead like one that fails, after its attempts run out.
    """
    verdict = _check_report(job, token, Report.RELEASED, now)
    if verdict:
        return verdict
    if job.status is not JobStatus.RUNNING:
        # Nothing reported under this token, yet not running: the lease ran out and the
        # reaper put the job back (queued, or dead on its last attempt).
        return _rejected(job, LeaseExpired(f"the lease on job {job.id} has expired"))
    releases = job.releases + 1
    free = releases <= FREE_RELEASES
    if not free and job.attempts >= job.max_attempts:
        error = f"released {releases} times; the releases after {FREE_RELEASES} used its attempts"
        dead = job.replace(
            status=JobStatus.DEAD,
            last_error=error,
            report=Report.RELEASED,
            finished_at=now,
            lease_expires_at=None,
            releases=releases,
        )
        return Outcome(
            dead, changed=True, attempt=AttemptOutcome.RELEASED, events=(Event.RELEASED, Event.DEAD)
        )
    back = job.replace(
        status=JobStatus.QUEUED,
        run_after=now,
        attempts=max(job.attempts - 1, 0) if free else job.attempts,
        report=Report.RELEASED,
        lease_expires_at=None,
        releases=releases,
    )
    return Outcome(back, changed=True, attempt=AttemptOutcome.RELEASED, events=(Event.RELEASED,))


def decide_expire(job: Job, token: int, now: datetime) -> Outcome:
    """The reaper's compare-and-set: act only if the job is still running under ``token``
    with its lease run out; anything newer (a renew, a report, a new lease) wins."""
    if (
        job.status is not JobStatus.RUNNING
        or job.lease_token != token
        or job.report is not None
        or not is_expired(job, now)
    ):
        return _unchanged(job)
    error = f"lease expired (token {token}, worker {job.lease_owner})"
    if job.cancel_requested:  # nobody will finish it: the cancellation is complete
        after = job.replace(
            status=JobStatus.CANCELLED,
            last_error=f"{error} while it was being cancelled",
            finished_at=now,
            lease_expires_at=None,
        )
        return Outcome(
            after,
            changed=True,
            attempt=AttemptOutcome.CANCELLED,
            events=(Event.LEASE_EXPIRED, Event.CANCELLED),
        )
    if job.attempts >= job.max_attempts:
        after = job.replace(status=JobStatus.DEAD, last_error=error, finished_at=now)
        events: tuple[Event, ...] = (Event.LEASE_EXPIRED, Event.DEAD)
    else:
        # Queued again holds no lease: clear its expiry, as fail and release do.
        after = job.replace(
            status=JobStatus.QUEUED, run_after=now, last_error=error, lease_expires_at=None
        )
        events = (Event.LEASE_EXPIRED,)
    return Outcome(after, changed=True, attempt=AttemptOutcome.EXPIRED, events=events)


def decide_requeue(job: Job, now: datetime) -> Outcome:
    """An operator brings a dead or cancelled job back: queued at once, attempts (and
    releases) reset.

    The lease token is kept (the next lease gets a higher one) and revoked, so a late
    report from the last holder cannot finish the revived job.
    """
    if job.status not in (JobStatus.DEAD, JobStatus.CANCELLED):
        return _rejected(
            job,
            InvalidTransition(
                f"job {job.id} is {job.status}; only dead or cancelled jobs are requeued"
            ),
        )
    if job.parents is not None:  # it depends on others: it waits for them again
        return requeue_dependent(job, now)
    revived = job.replace(
        status=JobStatus.QUEUED,
        attempts=0,
        run_after=now,
        # A job cancelled before its first lease has no token to revoke (0 is never valid).
        report=Report.REVOKED if job.lease_token else None,
        lease_expires_at=None,
        finished_at=None,
        cancel_requested=False,
        releases=0,
    )
    return Outcome(revived, changed=True, events=(Event.REQUEUED,))


def decide_cancel(job: Job, now: datetime) -> Outcome:
    """Cancel a job. Queued and dead jobs are cancelled at once; a running job is marked,
    so its holder hears of it at its next renew and its next report (or the reaper) ends
    it. Repeats change nothing; a completed job stays completed."""
    if job.status is JobStatus.COMPLETED:
        return _rejected(
            job, InvalidTransition(f"job {job.id} is completed; it cannot be cancelled")
        )
    if job.status is JobStatus.CANCELLED or job.cancel_requested:
        return _unchanged(job)
    if job.status is JobStatus.RUNNING:
        marked = job.replace(cancel_requested=True)
        return Outcome(marked, changed=True, events=(Event.CANCEL_REQUESTED,))
    # Queued or dead. A late report under the current token now meets the cancellation.
    cancelled = job.replace(
        status=JobStatus.CANCELLED,
        cancel_requested=True,
        finished_at=now,
        lease_expires_at=None,
    )
    return Outcome(cancelled, changed=True, events=(Event.CANCELLED,))


def decide_deadline(job: Job, now: datetime) -> Outcome:
    """No lease started the job by its start deadline: it ends cancelled without running,
    saying so (DESIGN.md §19). A job that started, or whose deadline has not passed (or
    moved: a requeue keeps it, a debounce may not), is left as it is."""
    if job.status not in (JobStatus.WAITING, JobStatus.QUEUED):
        return _unchanged(job)
    if job.start_by is None or job.start_by > now:
        return _unchanged(job)
    ended = job.replace(
        status=JobStatus.CANCELLED,
        finished_at=now,
        lease_expires_at=None,
        last_error=f"not started by its start deadline {job.start_by.isoformat()}",
    )
    return Outcome(ended, changed=True, events=(Event.DEADLINE_MISSED, Event.CANCELLED))


def decide_spawn(job: Job, token: int, now: datetime) -> Outcome:
    """A running job spawns children under its lease (DESIGN.md §22): only its current,
    unrevoked token may, and only while nothing was reported under it and no cancel was
    asked for. The job itself does not change."""
    stale = fence(job, token)
    if stale:
        return _rejected(job, stale)
    if job.cancel_requested or job.status is JobStatus.CANCELLED:
        return _rejected(job, JobCancelled(f"job {job.id} was cancelled: it spawns nothing"))
    if job.report is not None:
        return _rejected(
            job,
            NotRunning(f"job {job.id} was already {job.report} under token {token}"),
        )
    return _unchanged(job)


def decide_run_now(job: Job, now: datetime) -> Outcome:
    """An operator makes a queued job that waits for its run_after (a retry's backoff, a
    job enqueued for later) due at once. A queued job already due is left as it is; any
    other state is refused: only queued jobs wait to be leased."""
    if job.status is not JobStatus.QUEUED:
        return _rejected(
            job,
            InvalidTransition(f"job {job.id} is {job.status}; only a queued job can run now"),
        )
    if job.run_after <= now:
        return _unchanged(job)
    return Outcome(job.replace(run_after=now), changed=True)


DELETABLE: tuple[JobStatus, ...] = (
    JobStatus.WAITING,
    JobStatus.QUEUED,
    JobStatus.COMPLETED,
    JobStatus.DEAD,
    JobStatus.CANCELLED,
)
"""States a job may be deleted in. A running job is not: its holder would report into a
void and its attempt would vanish mid-flight; cancel it first (it ends cancelled at its
holder's next report, or when its lease runs out), then delete it."""


def check_delete(job: Job) -> LeaseholdError | None:
    """Why the job cannot be deleted now, or None if it can."""
    if job.status in DELETABLE:
        return None
    return InvalidTransition(
        f"job {job.id} is {job.status}; cancel it first (a running job is not deleted)"
    )


def summary_line(error: str | None) -> str | None:
    """The last non-blank line of an error: for a traceback, the exception type and its
    message, which is what a list of failed jobs needs to show."""
    if error is None:
        return None
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def request_fingerprint(
    kind: str,
    payload: JSON,
    max_attempts: int | None,
    run_after: datetime | None,
    priority: int | None = None,
    queue: str | None = None,
    timeout_seconds: float | None = None,
    later: dict[str, JSON] | None = None,
) -> str:
    """A digest of an enqueue request as given, to tell a retry from a different request.

    Priority and queue are added only when given, so a request that names neither hashes
    as it did before they existed (keys used before an upgrade still match their retries);
    likewise the time limit, and ``later``: the options added since (parents, group,
    weight, start deadline, uniqueness), only those given.
    """
    given: list[JSON] = [kind, payload, max_attempts, run_after.isoformat() if run_after else None]
    if priority is not None or queue is not None:
        given += [priority, queue]
    if timeout_seconds is not None:  # likewise added only when given
        given += [{"timeout_seconds": timeout_seconds}]
    if later:
        given += [later]
    return hashlib.sha256(orjson.dumps(given, option=orjson.OPT_SORT_KEYS)).hexdigest()


def normalized_fingerprints(
    request: EnqueueSpec, *, default_max_attempts: int, refs: Sequence[tuple[str, str]] = ()
) -> tuple[str, tuple[str, ...]]:
    """The fingerprint of an enqueue request with its defaults filled in, so a retry that
    spells out a default (``priority: 0``) is the same request as one that leaves it out;
    and the fingerprint as given, which keys stored by earlier releases carry. Its key and
    headers are not part of it (DESIGN.md §21).

    Normalizing means leaving out what equals its default (so a request that names no
    option hashes as it always did) and writing ``run_after`` in UTC.
    """
    r = request
    later = _later_options(r, refs)
    canonical = request_fingerprint(
        r.kind,
        r.payload,
        None if r.max_attempts == default_max_attempts else r.max_attempts,
        r.run_after.astimezone(UTC) if r.run_after is not None else None,
        None if r.priority == DEFAULT_PRIORITY else r.priority,
        None if r.queue == DEFAULT_QUEUE else r.queue,
        r.timeout_seconds,
        later,
    )
    if later:  # no release before these options stored keys for requests that had them
        return canonical, ()
    as_given = request_fingerprint(
        r.kind, r.payload, r.max_attempts, r.run_after, r.priority, r.queue, r.timeout_seconds
    )
    return canonical, (() if as_given == canonical else (as_given,))


def _later_options(r: EnqueueSpec, refs: Sequence[tuple[str, str]]) -> dict[str, JSON]:
    """The options added after the first release's fingerprint, those given (as the
    request named them: parents in the same batch by their refs, so a retry matches)."""
    later: dict[str, JSON] = {}
    if r.depends_on or refs:
        later["depends_on"] = [[d.id, str(d.on_failure)] for d in r.depends_on or ()]
        later["depends_on"] += [[ref, mode] for ref, mode in refs]
    if r.group_key is not None:
        later["group_key"] = r.group_key
    if r.weight not in (None, 1):
        later["weight"] = r.weight
    if r.start_by is not None:
        later["start_by"] = r.start_by.astimezone(UTC).isoformat()
    if r.unique is not None:
        later["unique"] = orjson.loads(orjson.dumps(r.unique))
    return later
