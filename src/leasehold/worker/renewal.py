"""Keeping leases alive while their handlers run: one batch renewal for every lease due.

Each running job has a ``LeaseKeeper``: its lease's local deadline and whether it was lost.
One ``Renewer`` per worker renews, in a single ``/batch/renew`` request, every lease that
is due, and answers each keeper on its own: a refused item (409: a newer lease, a release,
a revoked lease) loses exactly that lease, whatever happened to the others.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

import structlog

from leasehold.client import MAX_BATCH, Client, ItemResult, RenewItem
from leasehold.errors import JobCancelled, LeaseholdError
from leasehold.worker.job import LeasedJob
from leasehold.worker.waiting import Flag

log = structlog.get_logger("leasehold.worker")

# Renew when a third of the lease has passed: two more tries fit before it runs out.
RENEW_FRACTION = 1 / 3
# One try of a renewal or a report gets at most this share of the lease (and the client's
# timeout at most): one that hangs leaves time for another, on the next coordinator.
TRY_FRACTION = 1 / 3
# A renewal also takes along every lease due within this share of its length, so that
# leases granted at nearby times are renewed by one request (and stay together after).
GROUP_FRACTION = 1 / 6


def try_seconds(client: Client, lease_seconds: float) -> float:
    """How long one try of a renewal or report of a lease this long may take."""
    return min(client.timeout_seconds, lease_seconds * TRY_FRACTION)


class LeaseKeeper:
    """One lease as the worker holds it; ``lost`` is set when it can no longer be held.

    The lease is lost when the coordinator refuses its renewal (409: a newer lease, a
    release, a revoked lease, a cancelled job) or when ``deadline`` passes with no renewal
    answered (the coordinator cannot be reached): a timer at the deadline sees to that,
    whether or not a renewal is in flight. A cancelled job (409 ``job_cancelled``) is still
    ours to report: ``cancelled`` tells the runner to hand it back. ``deadline`` is on the event
    loop's monotonic clock and errs early: a renewal counts from when it was sent, not from
    when it was answered.
    """

    def __init__(self, job: LeasedJob, seconds: float, deadline: float) -> None:
        self.job = job
        self.seconds = seconds
        self.deadline = deadline
        self.lost = Flag()
        self.reason: str | None = None
        self._timer: asyncio.TimerHandle | None = None

    @property
    def due(self) -> float:
        """When the lease should be renewed, on the loop's clock."""
        return self.deadline - self.seconds * (1 - RENEW_FRACTION)

    @property
    def cancelled(self) -> bool:
        return self.reason == JobCancelled.code

    def held(self) -> bool:
        return not self.lost.is_set() and asyncio.get_running_loop().time() < self.deadline

    def watch(self) -> None:
        """Start the timer that declares the lease lost at its deadline."""
        self._timer = asyncio.get_running_loop().call_at(self.deadline, self._check_deadline)

    def unwatch(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def renewed(self, sent: float, expires_at: datetime | None) -> None:
        self.deadline = sent + self.seconds
        if expires_at is not None:
            self.job.lease_expires_at = expires_at

    def lose(self, reason: str, message: str) -> None:
        if self.lost.is_set():
            return
        self.unwatch()
        self.reason = reason
        self.lost.set()
        job = self.job
        # Named here, not from the context: the renewer speaks for many jobs at once.
        fields = {"job_id": job.id, "kind": job.kind, "attempt": job.attempt, "token": job.token}
        if self.cancelled:
            log.info("job.cancel_requested", **fields, error=message)
        else:
            log.warning("lease.lost", **fields, reason=reason, error=message)

    def _check_deadline(self) -> None:
        self._timer = None
        loop = asyncio.get_running_loop()
        if loop.time() >= self.deadline:
            self.lose("expired", "no renewal was answered before the lease ran out")
        elif not self.lost.is_set():  # renewed meanwhile: watch the new deadline
            self._timer = loop.call_at(self.deadline, self._check_deadline)


class Renewer:
    """Renews every due lease of one worker in one ``/batch/renew`` request per tick."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._keepers: set[LeaseKeeper] = set()
        self._changed = asyncio.Event()
        self._next_tick = float("inf")
        self.requests = 0  # batch renewals sent, for tests and curiosity

    def add(self, keeper: LeaseKeeper) -> None:
        keeper.watch()
        self._keepers.add(keeper)
        if keeper.due < self._next_tick:  # sooner than the renewer means to wake: wake it
            self._changed.set()

    def remove(self, keeper: LeaseKeeper) -> None:
        keeper.unwatch()
        self._keepers.discard(keeper)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            self._changed.clear()
            held = [k for k in self._keepers if k.held()]
            self._next_tick = min((k.due for k in held), default=float("inf"))
            wait = self._next_tick - loop.time()
            if wait > 0:
                # Woken early by a lease due sooner; never sleep past a day at once.
                try:
                    async with asyncio.timeout(min(wait, 86_400.0)):
                        await self._changed.wait()
                except TimeoutError:
                    pass
                continue
            self._next_tick = float("-inf")  # renewing: a new lease need not wake us
            horizon = loop.time() + max(k.seconds for k in held) * GROUP_FRACTION
            due = sorted((k for k in held if k.due <= horizon), key=lambda k: k.due)
            await self._renew(due[:MAX_BATCH])

    async def _renew(self, keepers: list[LeaseKeeper]) -> None:
        loop = asyncio.get_running_loop()
        sent = loop.time()
        items = [RenewItem(k.job.id, k.job.token, lease_seconds=k.seconds) for k in keepers]
        self.requests += 1
        try:
            # Tried again until answered, but not past the first of these leases to run
            # out: its timer marks it lost, and the others are tried again at once.
            shortest = min(k.seconds for k in keepers)
            client = self.client.with_timeout(try_seconds(self.client, shortest))
            async with asyncio.timeout_at(min(k.deadline for k in keepers)):
                results = await client.renew_many(items)
        except TimeoutError:
            return
        except LeaseholdError as exc:  # the whole request refused (401, 403): none is held
            for keeper in keepers:
                keeper.lose(exc.code, exc.message)
            return
        for keeper, result in zip(keepers, results, strict=True):
            self._answer(keeper, result, sent)

    @staticmethod
    def _answer(keeper: LeaseKeeper, result: ItemResult, sent: float) -> None:
        try:
            renewed = result.job  # parsed here: an ok item whose job is not one is a refusal
        except LeaseholdError as exc:
            keeper.lose(exc.code, exc.message)
            return
        if renewed is not None:
            keeper.renewed(sent, renewed.lease_expires_at)
        else:
            error = result.error or LeaseholdError(f"renewal {result.outcome}")
            keeper.lose(error.code, error.message)
