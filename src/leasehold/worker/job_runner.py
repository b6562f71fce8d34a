"""One leased job, from start to report: renewals, the handler, complete / fail / release."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog

from leasehold import tracing
from leasehold.client import Client, CompleteItem, FailItem, Lease
from leasehold.errors import (
    Conflict,
    InvalidRequest,
    JobCancelled,
    LeaseholdError,
    PayloadTooLarge,
)
from leasehold.model import LEASE_WAIT_SHARE
from leasehold.worker.children import JobLink, with_parents
from leasehold.worker.context import enter_job
from leasehold.worker.handler_outcome import Failed, Interrupted, Outcome, Succeeded, execute
from leasehold.worker.job import LeasedJob
from leasehold.worker.registry import Registry
from leasehold.worker.renewal import LeaseKeeper, Renewer
from leasehold.worker.report import Reporter
from leasehold.worker.waiting import Flag, Preempted, unless_set

log = structlog.get_logger("leasehold.worker")

# The longest one try of a lease poll may last, as a share of the lease: its wait (at most a
# quarter, LEASE_WAIT_SHARE) and then as long again for the answer (Calls.lease).
MAX_POLL_SHARE = 2 * LEASE_WAIT_SHARE
# A release is a courtesy that saves waiting for the lease to run out; it gets this long.
RELEASE_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class Leased:
    """A lease as the worker holds it: the handler's view, and when it runs out locally."""

    job: LeasedJob
    seconds: float
    deadline: float  # on the loop's monotonic clock

    @classmethod
    def of(cls, lease: Lease, worker_id: str, sent: float, received: float) -> Leased:
        job = lease.job
        assert job.lease_expires_at is not None, "a leased job has an expiry"
        assert job.leased_at is not None, "a leased job has a lease time"
        seconds = (job.lease_expires_at - job.leased_at).total_seconds()
        # From when the request was sent, which errs early (PROTOCOL.md §10.2): the lease
        # was granted after it. A long poll waits at most a quarter of the lease, so at
        # least three quarters are left on arrival. A poll that moved on to another
        # coordinator was answered by a try that began at most half a lease before its
        # answer (the client's bound for it), hence the floor.
        start = max(sent, received - seconds * MAX_POLL_SHARE)
        return cls(LeasedJob.of(lease, worker_id), seconds, start + seconds)


class JobRunner:
    """Runs leased jobs for the worker; shares its client, renewer, reporter and stop events."""

    def __init__(
        self,
        client: Client,
        registry: Registry,
        forced: Flag,
        polls_ended: Callable[[], Awaitable[None]],
    ) -> None:
        self.client = client
        self.renewer = Renewer(client)
        self.reporter = Reporter(client)
        self.registry = registry
        self.forced = forced
        # Releases happen only while stopping; they wait for the worker's lease polls to
        # end, or a poll could lease the job straight back.
        self.polls_ended = polls_ended

    async def run(self, leased: Leased, handler_done: Callable[[], None]) -> None:
        """Run the job's handler, then report what it came to; in a task of its own.
        ``handler_done`` is called as soon as the handler has ended (its slot can take
        another job while the report is on its way)."""
        job = leased.job
        # Each job runs in a task of its own, on a copy of the worker's context: bound here,
        # the fields go with every line the job logs (its handler's too) and end with it.
        structlog.contextvars.bind_contextvars(
            job_id=job.id, kind=job.kind, attempt=job.attempt, token=job.token
        )
        enter_job(job)  # current_job(), for this task and the handler's thread
        handler = self.registry.get(job.kind)
        if handler is None:
            handler_done()
            handles = ", ".join(self.registry.kinds)
            error = f"no handler for kind {job.kind!r} in this worker (it handles: {handles})"
            log.error("job.no_handler", error=error)
            await self.report(leased, Failed(error), leased.deadline)
            return
        keeper = LeaseKeeper(job, leased.seconds, leased.deadline)
        job._link = link = JobLink(self.client, keeper)  # spawns, under this lease
        if any(parent.result_omitted for parent in job.parents):
            handler = with_parents(handler, link)
        log.info("job.started")
        started = time.monotonic()
        self.renewer.add(keeper)
        try:
            with tracing.processing(
                job.kind, job.id, job.attempt, job.token, job.worker_id, job.headers
            ) as span:
                limit = job.timeout_seconds or self.registry.timeout_of(job.kind)
                rules = self.registry.retry_of(job.kind)
                outcome = await execute(handler, job, keeper, self.forced, limit, rules)
                tracing.processed(span, outcome.error if isinstance(outcome, Failed) else None)
        finally:
            self.renewer.remove(keeper)
            handler_done()
        await self.settle(leased, outcome, keeper, time.monotonic() - started)

    async def settle(
        self, leased: Leased, outcome: Outcome, keeper: LeaseKeeper, seconds: float
    ) -> None:
        if isinstance(outcome, Interrupted):
            if outcome.why == "cancelled":
                await self.acknowledge_cancel(leased.job)
            elif outcome.why == "forced":
                await self.release(leased.job)
            else:
                log.warning("job.result_dropped", reason=keeper.reason or "expired")
            return
        await self.report(leased, outcome, keeper.deadline, seconds)

    async def report(
        self, leased: Leased, outcome: Succeeded | Failed, deadline: float, seconds: float = 0.0
    ) -> None:
        """Complete or fail the job, retrying until answered, the lease runs out, or a
        forced stop. The reporter sends it along with the others that are ready."""
        try:
            # The reporter gives up on the report at ``deadline`` (TimeoutError).
            sending = self._send(leased, outcome, seconds, deadline)
            await unless_set(self.forced, sending)
        except TimeoutError:
            log.warning("report.abandoned", reason="the lease ran out before it was answered")
        except Preempted:
            log.warning("report.abandoned", reason="forced stop")
            await self.release(leased.job)
        except JobCancelled:
            # Cancelled while the handler finished: the result is not recorded, by design.
            log.info("job.cancelled", reported="too late")
        except Conflict as exc:
            log.warning("report.refused", reason=exc.code, error=exc.message)
        except LeaseholdError as exc:
            log.error("report.refused", reason=exc.code, error=exc.message)

    async def _send(
        self, leased: Leased, outcome: Succeeded | Failed, seconds: float, deadline: float
    ) -> None:
        job = leased.job
        if isinstance(outcome, Succeeded):
            try:
                item = CompleteItem(job.id, job.token, outcome.result)
                await self.reporter.complete(item, deadline, leased.seconds)
            except (InvalidRequest, PayloadTooLarge) as exc:
                error = f"the coordinator refused the handler's result: {exc.message}"
                outcome = Failed(error, retryable=False)
            else:
                log.info("job.succeeded", seconds=round(seconds, 3))
                return
        failure = FailItem(
            job.id,
            job.token,
            outcome.error,
            retryable=outcome.retryable,
            retry_after_seconds=outcome.retry_after_seconds,
        )
        after = await self.reporter.fail(failure, deadline, leased.seconds)
        log.warning(
            "job.failed",
            error=outcome.error.rstrip().rsplit("\n", 1)[-1],
            retryable=outcome.retryable,
            status=str(after.status),
            seconds=round(seconds, 3),
        )

    async def acknowledge_cancel(self, job: LeasedJob) -> None:
        """The job was cancelled and its handler stopped: say so with a release, which ends
        the job as cancelled at once (else it waits for the lease to run out). No wait for
        the lease polls: a cancelled job is never leased again."""
        try:
            async with asyncio.timeout(RELEASE_TIMEOUT_SECONDS):
                after = await self.client.release(job.id, job.token)
        except (TimeoutError, LeaseholdError) as exc:
            log.warning("job.cancel_unacknowledged", error=repr(exc))
        else:
            log.info("job.cancelled", status=str(after.status))

    async def release(self, job: LeasedJob) -> None:
        """Hand the job back at once, so it need not wait for the lease to run out."""
        await self.polls_ended()
        try:
            async with asyncio.timeout(RELEASE_TIMEOUT_SECONDS):
                await self.client.release(job.id, job.token)
        except (TimeoutError, LeaseholdError) as exc:
            log.warning("job.release_failed", job_id=job.id, token=job.token, error=repr(exc))
        else:
            log.info("job.released", job_id=job.id, token=job.token)
