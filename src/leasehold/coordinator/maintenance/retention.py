"""Retention: finished jobs are deleted by age, per status, a small batch at a time.

The ages are the coordinator's settings (``--retain-*-seconds``, whose defaults and reasons
``coordinator/settings.py`` gives); 0 keeps forever.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import structlog

from leasehold.coordinator.rules.presence import KEEP_GONE_SECONDS
from leasehold.coordinator.store.contract import DeleteFilter, Store
from leasehold.model import MAX_WORKERS, JobStatus

log = structlog.get_logger("leasehold")

BATCH = 1000
"""Jobs per delete transaction: a few milliseconds of work, so leases never queue long."""


@dataclass(frozen=True, slots=True)
class Retention:
    """Seconds a finished job is kept after it finished, per status; 0 keeps it forever."""

    completed_seconds: float
    cancelled_seconds: float
    dead_seconds: float

    def ages(self) -> list[tuple[JobStatus, float]]:
        return [
            (status, age)
            for status, age in (
                (JobStatus.COMPLETED, self.completed_seconds),
                (JobStatus.CANCELLED, self.cancelled_seconds),
                (JobStatus.DEAD, self.dead_seconds),
            )
            if age > 0
        ]


async def prune_finished(store: Store, retention: Retention, batch: int = BATCH) -> int:
    """Delete every finished job past its retention, one batch per transaction, yielding
    to the event loop between batches; how many jobs went."""
    total = 0
    for status, age in retention.ages():
        while True:
            n = await store.jobs_delete(
                DeleteFilter((status,), finished_age_seconds=age, limit=batch, keep_needed=True)
            )
            total += n
            if n < batch:
                break
            await asyncio.sleep(0)
    return total


class Pruner:
    """Prunes finished jobs (and forgets long-gone workers) every ``interval`` seconds
    until stopped. ``passes`` counts finished passes and ``swept`` is set after each one,
    so tests can wait for a pass instead of sleeping (the same hook as the Reaper's)."""

    def __init__(
        self, store: Store, retention: Retention, interval: float, max_workers: int = MAX_WORKERS
    ) -> None:
        self.store = store
        self.max_workers = max_workers
        self.retention = retention
        self.interval = interval
        self.passes = 0
        self.pruned = 0
        self.swept = asyncio.Event()

    async def run(self) -> None:
        while True:
            try:
                n = await prune_finished(self.store, self.retention)
                await self.store.workers_forget(KEEP_GONE_SECONDS, keep=self.max_workers)
                self.pruned += n
                if n:
                    log.info("jobs.pruned", count=n)
            except Exception:
                log.exception("pruner.error")
            self.passes += 1
            self.swept.set()
            self.swept = asyncio.Event()
            await asyncio.sleep(self.interval)
