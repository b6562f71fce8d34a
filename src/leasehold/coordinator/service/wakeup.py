"""Long-polling lessees, and waking them when work may have become available.

A lessee registers before it looks for work (so a wake-up sent while it looks is not
lost), waits, and is either woken to look again or handed the jobs an enqueue leased for
it in the enqueue's own transaction (DESIGN.md §9, `wait_seconds`). This is the machinery
only: which jobs, and whether a lease is allowed, are decided by the store and the rules.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from leasehold.coordinator.store.contract import LeaseRequest, NewJob
from leasehold.model import Job


@dataclass(eq=False, slots=True)
class Waiter:
    """A lessee waiting for work. It may be woken to look again (``None``), or be handed
    the jobs leased for it in an enqueue's own transaction."""

    request: LeaseRequest
    future: asyncio.Future[list[Job] | None]
    gone: Callable[[], Awaitable[bool]] | None = None  # whether its connection has closed
    waiting: bool = False  # in ``Wakeup.wait``, not looking for itself: may be handed jobs
    claimed: bool = False  # an enqueue is leasing for it: it must take what that brings


def _matches(request: LeaseRequest, job: NewJob) -> bool:
    kinds, queues = request.kinds, request.queues
    return (kinds is None or job.kind in kinds) and (queues is None or job.queue in queues)


class Wakeup:
    """Wakes long-polling lessees when work may have become available.

    ``notify(n)`` wakes the ``n`` longest-waiting lessees (all of them when ``n`` is None),
    so one new job does not send every idle worker to the database at once. ``claim``
    takes waiting lessees off the queue for an enqueue that leases for them.
    """

    def __init__(self) -> None:
        self._waiters: collections.deque[Waiter] = collections.deque()
        self.on_register: Callable[[], None] | None = None

    def __len__(self) -> int:
        return len(self._waiters)

    def notify(self, n: int | None = None) -> None:
        left = len(self._waiters) if n is None else n
        while left > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.future.done():
                waiter.future.set_result(None)
                left -= 1

    def notify_matching(self, kind: str, queue: str) -> None:
        """Wake the longest-waiting lessee that would lease a job of this kind and queue."""
        for waiter in self._waiters:
            request = waiter.request
            if waiter.future.done() or not waiter.waiting:
                continue
            if (request.kinds is None or kind in request.kinds) and (
                request.queues is None or queue in request.queues
            ):
                self._waiters.remove(waiter)
                waiter.future.set_result(None)
                return

    def claim(self, due: Sequence[NewJob]) -> list[Waiter]:
        """Waiting lessees that would lease some of these jobs (kind and queue), longest
        waiting first, until they ask for as many; each must then be ``hand``-ed its jobs."""
        wanted = len(due)
        claimed: list[Waiter] = []
        for waiter in list(self._waiters):
            if wanted <= 0:
                break
            if not waiter.waiting or waiter.future.done():
                continue
            if not any(_matches(waiter.request, job) for job in due):
                continue
            self._waiters.remove(waiter)
            waiter.claimed = True
            claimed.append(waiter)
            wanted -= waiter.request.max_jobs
        return claimed

    @property
    def waiting(self) -> int:
        """How many lessees are waiting right now (not looking for themselves)."""
        return sum(w.waiting for w in self._waiters)

    @staticmethod
    def hand(waiter: Waiter, jobs: list[Job] | None) -> None:
        if not waiter.future.done():
            waiter.future.set_result(jobs)

    def register(
        self, request: LeaseRequest, gone: Callable[[], Awaitable[bool]] | None = None
    ) -> Waiter:
        """Join the queue of waiters now, before looking for work, so that a notify sent
        while the lessee is still looking is not lost."""
        waiter = Waiter(request, asyncio.get_running_loop().create_future(), gone)
        self._waiters.append(waiter)
        if self.on_register is not None:
            self.on_register()
        return waiter

    def forget(self, waiter: Waiter) -> None:
        if waiter.claimed:
            return  # off the queue already, and its future is the enqueue's to settle
        if not waiter.future.done():
            waiter.future.cancel()
        with contextlib.suppress(ValueError):
            self._waiters.remove(waiter)

    async def wait(self, waiter: Waiter, seconds: float) -> list[Job] | None:
        """Until ``waiter`` is notified, or ``seconds`` at most; the jobs it was handed,
        if an enqueue leased some for it."""
        waiter.waiting = True
        try:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(waiter.future), seconds)
        finally:
            waiter.waiting = False
        if waiter.claimed:
            # Its lease is being committed with the enqueue: take what it brings, or those
            # jobs would sit leased to nobody until their lease ran out.
            return await waiter.future
        if waiter.future.done() and not waiter.future.cancelled():
            return waiter.future.result()
        return None
