"""Random sequences of every operation against the rules on the embedded store, time moved
by a FakeClock, checking after each step what must always hold (DESIGN.md §3-§7):

- a job's token only grows, by exactly one per lease, and never resets;
- a completed job never changes again;
- 0 <= attempts <= max_attempts;
- a stale, unissued or revoked token changes nothing and is answered stale_token;
- any refused request changes nothing;
- status, report, lease fields and the attempt history agree with each other;
- a lease takes the due jobs of highest priority, then oldest, as many as asked for and
  available;
- a cancelled job is never completed, and a job being cancelled is never renewed;
- after a reaper pass no running job holds an expired lease;
- the maintained counts by status equal the jobs' statuses.

Expectations come from the protocol's table, request by request; the store and the rules
under test decide, this file only checks.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Coroutine
from datetime import datetime, timedelta
from typing import Any, TypeVar

import pytest
import structlog.testing
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    multiple,
    precondition,
    rule,
)

from leasehold.coordinator.clock import FakeClock
from leasehold.coordinator.rules.backoff import BackoffPolicy
from leasehold.coordinator.rules.transitions import FREE_RELEASES
from leasehold.coordinator.service.job_service import JobService
from leasehold.coordinator.service.requests import Enqueue
from leasehold.coordinator.store.contract import DeadFilter, JobFilter
from leasehold.coordinator.store.sqlite.driver import SqliteStore
from leasehold.errors import (
    InvalidTransition,
    JobCancelled,
    LeaseExpired,
    LeaseholdError,
    ReportConflict,
    StaleToken,
)
from leasehold.model import AttemptOutcome, Job, JobStatus, Report

T = TypeVar("T")
QUEUED, RUNNING, COMPLETED, DEAD, CANCELLED = (
    JobStatus.QUEUED,
    JobStatus.RUNNING,
    JobStatus.COMPLETED,
    JobStatus.DEAD,
    JobStatus.CANCELLED,
)
RETRY_MAX = 30.0
Lease = tuple[int, int]  # (job id, token)


class QueueMachine(RuleBasedStateMachine):
    jobs = Bundle("jobs")
    leases = Bundle("leases")

    def __init__(self) -> None:
        super().__init__()
        # Thousands of steps: their log lines are kept out of the output (and unchecked).
        self.quiet = structlog.testing.capture_logs()
        self.quiet.__enter__()
        self.loop = asyncio.new_event_loop()
        self.clock = FakeClock()
        # In memory and unsynced: durability is tested elsewhere, the rules are tested here.
        self.store = SqliteStore(":memory:", clock=self.clock, synchronous="OFF")
        self.service = JobService(
            self.store, backoff=BackoffPolicy(1.0, RETRY_MAX), rng=random.Random(7)
        )
        self.run(self.store.open())
        self.seen: dict[int, Job] = {}  # each job as the last check saw it
        self.finished: dict[int, Job] = {}  # completed jobs, as they completed
        self.entered: dict[JobStatus, int] = dict.fromkeys(JobStatus, 0)  # moves into a status
        self.issued = 0  # the highest lease token issued so far

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(work)

    def teardown(self) -> None:
        self.run(self.store.close())
        self.loop.close()
        self.quiet.__exit__(None, None, None)

    def now(self) -> datetime:
        return self.clock.now()

    def job(self, job_id: int) -> Job:
        return self.run(self.service.get(job_id))

    def all_jobs(self) -> dict[int, Job]:
        return {j.id: j for j in self.run(self.service.list_jobs(JobFilter(limit=1000)))}

    def attempt(self, job_id: int, token: int | None, call: Coroutine[Any, Any, Job]) -> Any:
        """Make the request; check what holds for every request; return the job or error."""
        before = self.job(job_id)
        try:
            answer: Job | LeaseholdError = self.run(call)
        except LeaseholdError as error:
            answer = error
        after = self.job(job_id)
        ended_cancel = isinstance(answer, JobCancelled) and before.status is RUNNING
        if isinstance(answer, LeaseholdError) and not ended_cancel:
            assert after == before, f"refused ({answer.code}) but changed"
        if token is not None and (
            token == 0 or token != before.lease_token or before.report is Report.REVOKED
        ):
            assert isinstance(answer, StaleToken), answer
        if before.status is COMPLETED:
            assert after == before
        return answer

    # -- producers ----------------------------------------------------------------------

    @rule(
        target=jobs,
        max_attempts=st.integers(1, 3),
        delay=st.sampled_from([0, 0, 4]),
        priority=st.sampled_from([None, 0, 5]),
    )
    def enqueue(self, max_attempts: int, delay: int, priority: int | None) -> int:
        run_after = self.now() + timedelta(seconds=delay) if delay else None
        payload = {"n": len(self.seen)}
        inserted = self.run(
            self.service.enqueue(Enqueue("k", payload, max_attempts, run_after, None, priority))
        )
        job = inserted.job
        assert inserted.created
        assert (job.status, job.attempts, job.lease_token, job.report) == (QUEUED, 0, 0, None)
        return job.id

    # -- workers ------------------------------------------------------------------------

    @rule(target=leases, seconds=st.sampled_from([3.0, 8.0]), max_jobs=st.integers(1, 2))
    def lease(self, seconds: float, max_jobs: int) -> Any:
        before = self.all_jobs()
        due = sorted(
            (j for j in before.values() if j.status is QUEUED and j.run_after <= self.now()),
            key=lambda j: (-j.priority, j.run_after, j.id),
        )
        leased = self.run(self.service.lease("w", seconds, max_jobs=max_jobs))
        assert [j.id for j in leased] == [j.id for j in due[:max_jobs]]
        for job in leased:
            was = before[job.id]
            assert job.status is RUNNING and job.report is None
            # Coordinator-wide tokens: above every token issued before, this job's included.
            assert job.lease_token > max(self.issued, was.lease_token)
            assert job.attempts == was.attempts + 1
            assert job.lease_expires_at == self.now() + timedelta(seconds=seconds)
        self.issued = max([self.issued, *(j.lease_token for j in leased)])
        return multiple(*[(j.id, j.lease_token) for j in leased])

    @rule(lease=leases, seconds=st.none() | st.sampled_from([2.0, 6.0]))
    def renew(self, lease: Lease, seconds: float | None) -> None:
        job_id, token = lease
        before = self.job(job_id)
        answer = self.attempt(job_id, token, self.service.renew(job_id, token, seconds))
        live = (
            token == before.lease_token
            and before.status is RUNNING
            and before.report is None
            and before.lease_expires_at is not None
            and before.lease_expires_at > self.now()
        )
        if self._current(before, token) and (before.cancel_requested or before.status is CANCELLED):
            assert isinstance(answer, JobCancelled), answer
        elif live:
            assert isinstance(answer, Job), answer
            length = seconds if seconds is not None else before.lease_seconds
            assert answer.lease_expires_at == self.now() + timedelta(seconds=length or 0)
        else:
            assert isinstance(answer, StaleToken | LeaseExpired), answer

    @rule(lease=leases, result=st.integers(0, 3))
    def complete(self, lease: Lease, result: int) -> None:
        job_id, token = lease
        before = self.job(job_id)
        answer = self.attempt(job_id, token, self.service.complete(job_id, token, result))
        if self._cancelling(before, token, answer, Report.COMPLETED):
            return
        self._check_report(before, token, answer, Report.COMPLETED)
        if isinstance(answer, Job) and before.report is None:
            assert answer.status is COMPLETED and answer.result == result
            self.finished[job_id] = answer

    @rule(lease=leases, retryable=st.booleans(), after=st.none() | st.sampled_from([0.0, 2.0]))
    def fail(self, lease: Lease, retryable: bool, after: float | None) -> None:
        job_id, token = lease
        before = self.job(job_id)
        call = self.service.fail(
            job_id, token, "boom", retryable=retryable, retry_after_seconds=after
        )
        answer = self.attempt(job_id, token, call)
        if self._cancelling(before, token, answer, Report.FAILED):
            return
        self._check_report(before, token, answer, Report.FAILED)
        if isinstance(answer, Job) and before.report is None:
            if retryable and before.attempts < before.max_attempts:
                assert answer.status is QUEUED
                assert self.now() <= answer.run_after
                assert answer.run_after <= self.now() + timedelta(seconds=RETRY_MAX)
            else:
                assert answer.status is DEAD

    @rule(lease=leases)
    def release(self, lease: Lease) -> None:
        job_id, token = lease
        before = self.job(job_id)
        answer = self.attempt(job_id, token, self.service.release(job_id, token))
        if self._cancelling(before, token, answer, Report.RELEASED):
            return
        if self._current(before, token) and before.report is None and before.status is not RUNNING:
            assert isinstance(answer, LeaseExpired), answer  # reaped: nothing to hand back
            return
        self._check_report(before, token, answer, Report.RELEASED)
        if isinstance(answer, Job) and before.report is None:
            assert answer.releases == before.releases + 1
            if answer.releases <= FREE_RELEASES:
                assert answer.status is QUEUED and answer.run_after == self.now()
                assert answer.attempts == before.attempts - 1
            elif before.attempts < before.max_attempts:
                assert answer.status is QUEUED and answer.attempts == before.attempts
            else:
                assert answer.status is DEAD

    @rule(job_id=jobs, token=st.integers(0, 6), verb=st.sampled_from(["renew", "complete"]))
    def report_with_any_token(self, job_id: int, token: int, verb: str) -> None:
        """A token out of thin air: only the current one can ever work."""
        call = (
            self.service.renew(job_id, token)
            if verb == "renew"
            else self.service.complete(job_id, token, "guess")
        )
        answer = self.attempt(job_id, token, call)
        if isinstance(answer, Job) and verb == "complete":
            self.finished.setdefault(job_id, answer)

    def _cancelling(self, before: Job, token: int, answer: Any, report: Report) -> bool:
        """The cancellation rows of the table; True if one of them applied. A report under
        the current token on a job being cancelled ends it cancelled (a complete is told
        job_cancelled); on a cancelled job, complete is refused and fail/release are
        acknowledged with the job unchanged."""
        if not self._current(before, token):
            return False
        if before.status is CANCELLED:
            if report is Report.COMPLETED:
                assert isinstance(answer, JobCancelled), answer
            else:
                assert answer == before, answer
            return True
        if before.cancel_requested and before.status is RUNNING:
            after = self.job(before.id)
            assert after.status is CANCELLED and after.result is None
            assert after.finished_at == self.now()
            if report is Report.COMPLETED:
                assert isinstance(answer, JobCancelled), answer
            else:
                assert answer == after, answer
            return True
        return False

    def _current(self, job: Job, token: int) -> bool:
        return token == job.lease_token and token > 0 and job.report is not Report.REVOKED

    def _check_report(self, before: Job, token: int, answer: Any, report: Report) -> None:
        """The report rows of the table: current token and nothing said yet -> applied;
        the same said again -> 200, unchanged; something else said -> report_conflict."""
        if not self._current(before, token):
            assert isinstance(answer, StaleToken), answer
        elif before.report is None:
            assert isinstance(answer, Job), answer
        elif before.report is report:
            assert answer == before  # an idempotent repeat
        else:
            assert isinstance(answer, ReportConflict), answer

    # -- operators and time -------------------------------------------------------------

    @rule(job_id=jobs)
    def cancel(self, job_id: int) -> None:
        before = self.job(job_id)
        answer = self.attempt(job_id, None, self.service.cancel(job_id))
        if before.status is COMPLETED:
            assert isinstance(answer, InvalidTransition), answer
        elif before.status is CANCELLED or before.cancel_requested:
            assert answer == before  # a repeat changes nothing
        elif before.status is RUNNING:
            assert isinstance(answer, Job), answer
            assert (answer.status, answer.cancel_requested) == (RUNNING, True)
            assert answer.lease_token == before.lease_token
        else:
            assert isinstance(answer, Job), answer
            assert (answer.status, answer.cancel_requested) == (CANCELLED, True)
            assert answer.finished_at == self.now()

    @rule(job_id=jobs)
    def requeue(self, job_id: int) -> None:
        before = self.job(job_id)
        answer = self.attempt(job_id, None, self.service.requeue(job_id))
        if before.status in (DEAD, CANCELLED):
            assert isinstance(answer, Job), answer
            revoked = Report.REVOKED if before.lease_token else None
            assert (answer.status, answer.attempts, answer.report) == (QUEUED, 0, revoked)
            assert answer.lease_token == before.lease_token
            assert not answer.cancel_requested
        else:
            assert isinstance(answer, InvalidTransition), answer

    @rule()
    def requeue_all_dead(self) -> None:
        dead = {i for i, j in self.all_jobs().items() if j.status is DEAD}
        assert self.run(self.service.requeue_dead(DeadFilter())) == len(dead)
        assert all(self.job(i).status is QUEUED for i in dead)

    @rule(seconds=st.sampled_from([0.5, 2.5, 5.0, 9.0]))
    def advance_clock(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @precondition(lambda self: bool(self.seen))
    @rule()
    def reap(self) -> None:
        while self.run(self.service.reap()) > 0:
            pass
        for job in self.all_jobs().values():
            if job.status is RUNNING:
                assert job.lease_expires_at is not None and job.lease_expires_at > self.now()

    # -- what always holds --------------------------------------------------------------

    @invariant()
    def everything_holds(self) -> None:
        # One invariant, in this order: the totals are checked against the status changes
        # the first part has just recorded.
        self.every_job_is_consistent()
        self.counts_match_the_jobs()

    def every_job_is_consistent(self) -> None:
        jobs = self.all_jobs()
        for job_id, job in jobs.items():
            was = self.seen.get(job_id)
            if was is not None:
                assert job.lease_token >= was.lease_token, "a token went down"
                if was.status is COMPLETED:
                    assert job == was, "a completed job changed"
            if job_id in self.finished:
                assert job == self.finished[job_id]
            if was is None or was.status is not job.status:
                self.entered[job.status] += 1
            check_fields(job)
            check_history(job, self.run(self.service.attempts(job_id)))
        self.seen = jobs

    def counts_match_the_jobs(self) -> None:
        stats = self.run(self.service.stats())
        jobs = self.all_jobs().values()
        actual = {s.value: 0 for s in JobStatus}
        for job in jobs:
            actual[job.status.value] += 1
        assert stats.by_status == actual
        # Totals count events, each once: a job enters `dead` once per time it dies.
        totals = stats.totals
        assert totals.get("enqueued", 0) == len(jobs)
        leases = sum(len(self.run(self.service.attempts(j.id))) for j in jobs)
        assert totals.get("leased", 0) == leases
        assert totals.get("completed", 0) == actual["completed"]
        assert totals.get("dead", 0) == self.entered[DEAD]
        assert totals.get("cancelled", 0) == self.entered[CANCELLED]


def check_fields(job: Job) -> None:
    assert 0 <= job.attempts <= job.max_attempts
    if job.lease_token == 0:  # never leased: waiting, or cancelled while it waited
        assert job.status in (QUEUED, CANCELLED) and (job.attempts, job.report) == (0, None)
    if job.status is RUNNING:
        assert job.report is None and job.attempts >= 1
        assert job.lease_expires_at is not None and job.leased_at is not None
    elif job.status is COMPLETED:
        assert job.report is Report.COMPLETED and job.finished_at is not None
    elif job.status is DEAD:
        assert job.report in (None, Report.FAILED, Report.RELEASED)
        assert job.finished_at is not None
        assert job.last_error is not None
        assert not job.cancel_requested
    elif job.status is CANCELLED:
        assert job.cancel_requested and job.finished_at is not None
        assert job.lease_expires_at is None and job.result is None
    else:
        assert job.finished_at is None
        assert job.lease_expires_at is None, "a queued job holds no lease"
    if job.status is QUEUED:
        assert not job.cancel_requested, "only a running job waits to be cancelled"
    if job.report is Report.REVOKED:
        assert job.status in (QUEUED, CANCELLED) and job.attempts == 0


def check_history(job: Job, history: list[Any]) -> None:
    """One record per lease; all but the current one closed; the current one open exactly
    while the job is running."""
    tokens = [a.token for a in history]
    assert tokens == sorted(set(tokens)), "tokens of one job increase"
    assert (tokens[-1] if tokens else 0) == job.lease_token
    for record in history[:-1]:
        assert record.outcome is not AttemptOutcome.RUNNING
    if history:
        assert (history[-1].outcome is AttemptOutcome.RUNNING) == (job.status is RUNNING)


QueueMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("LEASEHOLD_STATEFUL_EXAMPLES", "100")),
    stateful_step_count=30,
    deadline=None,
    derandomize=bool(os.environ.get("CI")),  # CI: the same sequences every run
    suppress_health_check=[HealthCheck.too_slow],
)
TestQueueStateMachine = pytest.mark.slow(QueueMachine.TestCase)
