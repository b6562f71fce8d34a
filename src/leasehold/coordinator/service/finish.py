"""Waiting for a job to finish: one event per watched job id, fired when it ends.

``GET /jobs/{id}?wait_seconds=N`` (a client's ``handle.result()``) waits here. The service
fires ``Finishes.fire(job_id)`` after any decision that leaves a job completed, dead or
cancelled, so a waiter on this coordinator answers at once; a job another coordinator
finished (several on PostgreSQL) is announced by the store (``subscribe``'s
``on_finished``, a notification carrying the ids). A waiter reads its job when it starts
and when it is woken, never on a timer: thousands of idle waits cost no CPU. How many may
wait at once is capped (``--max-waiting-results``); past it a wait answers at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence

from leasehold.model import FINISHED, Job


def is_finished(job: Job) -> bool:
    """Whether the job has ended (it may still be requeued, which starts it again)."""
    return job.status in FINISHED


class Finishes:
    """Events by job id for the requests waiting on that job; no entry while nobody waits."""

    def __init__(self) -> None:
        self._events: dict[int, list[asyncio.Event]] = {}
        self.waiting = 0  # requests waiting now, on any job

    def watch(self, job_id: int) -> asyncio.Event:
        event = asyncio.Event()
        self._events.setdefault(job_id, []).append(event)
        self.waiting += 1
        return event

    def unwatch(self, job_id: int, event: asyncio.Event) -> None:
        events = self._events.get(job_id)
        if events is None:
            return
        with contextlib.suppress(ValueError):
            events.remove(event)
            self.waiting -= 1
        if not events:
            del self._events[job_id]

    def fire(self, job_id: int) -> None:
        events = self._events.pop(job_id, ())
        self.waiting -= len(events)
        for event in events:
            event.set()

    def fire_many(self, job_ids: Sequence[int] | None) -> None:
        """Jobs another coordinator finished (None: any may have: a lost notification)."""
        for job_id in list(self._events) if job_ids is None else job_ids:
            self.fire(job_id)

    def fire_all(self) -> None:
        """Wake every waiter (the coordinator is stopping)."""
        self.fire_many(None)

    @property
    def watched(self) -> int:
        """How many job ids someone is waiting on (for tests)."""
        return len(self._events)


async def wait_finished(
    finishes: Finishes,
    job_id: int,
    read: Callable[[], Awaitable[Job]],
    seconds: float,
    stopping: Callable[[], bool],
) -> Job:
    """The job as soon as it is finished, or as it is after ``seconds``.

    The event is registered before each read, so a finish that lands between the read and
    the wait is not missed.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        event = finishes.watch(job_id)
        try:
            job = await read()
            remaining = deadline - loop.time()
            if is_finished(job) or remaining <= 0 or stopping():
                return job
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), remaining)
        finally:
            finishes.unwatch(job_id, event)
