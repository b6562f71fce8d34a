"""Waiting for a job to finish: one event per watched job id, fired when it ends.

``GET /jobs/{id}?wait_seconds=N`` (a client's ``handle.result()``) waits here. The service
fires ``Finishes.fire(job_id)`` after any decision that leaves a job completed, dead or
cancelled, so a waiter on this coordinator answers at once. A job that a different
coordinator finished (several coordinators on PostgreSQL) is found by the waiter's own look
every ``recheck_seconds``: nothing crosses between coordinators for this.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from leasehold.model import Job, JobStatus

FINISHED = frozenset({JobStatus.COMPLETED, JobStatus.DEAD, JobStatus.CANCELLED})
# How often a waiting request reads the job again, for finishes on other coordinators.
RECHECK_SECONDS = 0.5


def is_finished(job: Job) -> bool:
    """Whether the job has ended (it may still be requeued, which starts it again)."""
    return job.status in FINISHED


class Finishes:
    """Events by job id for the requests waiting on that job; no entry while nobody waits."""

    def __init__(self) -> None:
        self._events: dict[int, list[asyncio.Event]] = {}

    def watch(self, job_id: int) -> asyncio.Event:
        event = asyncio.Event()
        self._events.setdefault(job_id, []).append(event)
        return event

    def unwatch(self, job_id: int, event: asyncio.Event) -> None:
        events = self._events.get(job_id)
        if events is None:
            return
        with contextlib.suppress(ValueError):
            events.remove(event)
        if not events:
            del self._events[job_id]

    def fire(self, job_id: int) -> None:
        for event in self._events.pop(job_id, ()):
            event.set()

    def fire_all(self) -> None:
        """Wake every waiter (the coordinator is stopping)."""
        for job_id in list(self._events):
            self.fire(job_id)

    @property
    def watched(self) -> int:
        """How many job ids someone is waiting on (for tests)."""
        return len(self._events)


async def wait_finished(
    finishes: Finishes,
    job_id: int,
    read: Callable[[], Awaitable[Job]],
    seconds: float,
    recheck_seconds: float,
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
                await asyncio.wait_for(event.wait(), min(remaining, recheck_seconds))
        finally:
            finishes.unwatch(job_id, event)
