"""Which work the live workers take, cached, for the enqueue's ``Leasehold-Unserved``.

An enqueue of a kind that no live worker serves (a misspelt kind, or no worker started)
is answered as usual, with the header naming the (queue, kind) pairs nobody takes: the
producer's client warns. The live workers are read at most once a second (and again at
once after a heartbeat reaches this coordinator), before the enqueue's transaction; a
read that fails or is slow leaves the header out rather than the enqueue, and nothing
after the commit can fail the answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Final

import structlog

from leasehold.coordinator.rules.presence import LIVE_SECONDS, Served
from leasehold.coordinator.store.contract import Store
from leasehold.model import MAX_WORKERS, Job, JobStatus

log = structlog.get_logger("leasehold")

MAX_AGE_SECONDS: Final = 1.0
"""How long a reading of the live workers answers enqueues: a warning may lag a worker
that started on another coordinator by this much (and by its first heartbeat)."""
READ_TIMEOUT_SECONDS: Final = 0.5


class Presence:
    """The live workers, folded (``rules.presence.Served``) and kept for a second."""

    def __init__(self, store: Store, max_workers: int = MAX_WORKERS) -> None:
        self.store = store
        self.max_workers = max_workers
        self._served: Served | None = None
        self._read_at = float("-inf")  # on the loop's clock
        self._reading = asyncio.Lock()

    def changed(self) -> None:
        """A heartbeat arrived: read the workers again for the next enqueue."""
        self._read_at = float("-inf")

    async def served(self) -> Served | None:
        """The live workers as recently read; None if they could not be read."""
        loop = asyncio.get_running_loop()
        if loop.time() - self._read_at < MAX_AGE_SECONDS:
            return self._served
        async with self._reading:  # one read at a time; those that waited share it
            if loop.time() - self._read_at < MAX_AGE_SECONDS:
                return self._served
            try:
                async with asyncio.timeout(READ_TIMEOUT_SECONDS):
                    live = await self.store.workers_list(LIVE_SECONDS, limit=self.max_workers)
            except Exception as exc:  # a warning is not worth failing an enqueue for
                log.debug("presence.unknown", error=repr(exc))
                return None
            self._served = Served(live)
            self._read_at = loop.time()
            return self._served


def unserved_pairs(served: Served | None, jobs: Iterable[Job]) -> list[tuple[str, str]]:
    """The (queue, kind) pairs of the jobs waiting to run now that no live worker takes:
    jobs enqueued for later are not counted (no worker need be up yet)."""
    if served is None:
        return []
    pairs = {
        (job.queue, job.kind)
        for job in jobs
        if job.status == JobStatus.QUEUED and job.run_after <= job.created_at
    }
    return sorted(p for p in pairs if not served(*p))
