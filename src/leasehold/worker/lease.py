"""Keeping a lease alive while its handler runs."""

from __future__ import annotations

import asyncio

import structlog

from leasehold.client import Client
from leasehold.errors import JobCancelled, LeaseholdError
from leasehold.worker.job import LeasedJob

log = structlog.get_logger("leasehold.worker")

# Renew when a third of the lease has passed: two more tries fit before it runs out.
RENEW_FRACTION = 1 / 3


class LeaseKeeper:
    """Renews one lease every third of its length; sets ``lost`` when it cannot.

    The lease is lost when the coordinator refuses a renewal (409: a newer lease, a
    release, a revoked lease, a cancelled job) or when ``deadline`` passes with no renewal
    answered (the coordinator cannot be reached). A cancelled job (409 ``job_cancelled``)
    is still ours to report: ``cancelled`` tells the runner to hand it back. ``deadline`` is on the event loop's monotonic clock and
    errs early: a renewal counts from when it was sent, not from when it was answered.
    """

    def __init__(self, client: Client, job: LeasedJob, seconds: float, deadline: float) -> None:
        self.client = client
        self.job = job
        self.seconds = seconds
        self.deadline = deadline
        self.lost = asyncio.Event()
        self.reason: str | None = None

    @property
    def cancelled(self) -> bool:
        return self.reason == JobCancelled.code

    def held(self) -> bool:
        return not self.lost.is_set() and asyncio.get_running_loop().time() < self.deadline

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            start = self.deadline - self.seconds
            await asyncio.sleep(max(0.0, start + self.seconds * RENEW_FRACTION - loop.time()))
            sent = loop.time()
            try:
                async with asyncio.timeout_at(self.deadline):
                    renewed = await self.client.renew(
                        self.job.id, self.job.token, lease_seconds=self.seconds
                    )
            except TimeoutError:
                self._lose("expired", "no renewal was answered before the lease ran out")
                return
            except LeaseholdError as exc:
                self._lose(exc.code, exc.message)
                return
            self.deadline = sent + self.seconds
            if renewed.lease_expires_at is not None:
                self.job.lease_expires_at = renewed.lease_expires_at

    def _lose(self, reason: str, message: str) -> None:
        self.reason = reason
        self.lost.set()
        if self.cancelled:
            log.info("job.cancel_requested", error=message)
        else:
            log.warning("lease.lost", reason=reason, error=message)
