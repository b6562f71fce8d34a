"""Periodic jobs: the loop that enqueues their runs.

Every coordinator runs the loop (beside the reaper). Each pass asks the store to fire the
schedules that are due: the store locks them (PostgreSQL: ``SKIP LOCKED``, so coordinators
share the work instead of queueing on it), enqueues one job per fire time under the key
``schedule:{name}:{fire time}``, and moves ``next_fire_at`` with a compare-and-set, in one
transaction. A run is therefore enqueued once however many coordinators try, and a crash
between the enqueue and the move is impossible: they commit together.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from functools import partial

import structlog

from leasehold.coordinator.rules.fire_times import plan_fires
from leasehold.coordinator.service.job_service import JobService
from leasehold.coordinator.store.contract import Fired

log = structlog.get_logger("leasehold")

FIRE_BATCH = 100  # schedules fired per transaction; a pass repeats until none are due


class Scheduler:
    """The firing loop (``run``), one pass every ``interval`` seconds.

    ``passes`` counts finished passes and ``swept`` is set after each, so tests can wait
    for a pass instead of sleeping.
    """

    def __init__(self, service: JobService, interval: float, grace: float) -> None:
        self.service = service
        self.store = service.store
        self.interval = interval
        self.grace = timedelta(seconds=grace)
        self.passes = 0
        self.swept = asyncio.Event()

    async def fire(self) -> int:
        """Fire what is due now (one batch); how many schedules were due."""
        fired = await self.store.schedules_fire(partial(plan_fires, grace=self.grace), FIRE_BATCH)
        created = [i.job for f in fired for i in f.jobs if i.created]
        for f in fired:
            _log_fired(f)
        self.service.metrics.enqueued(created)
        self.service.wakeup.notify(len(created))
        return len(fired)

    async def run(self) -> None:
        while True:
            try:
                while await self.fire() >= FIRE_BATCH:
                    pass
            except Exception:
                log.exception("scheduler.error")
            self.passes += 1
            self.swept.set()
            self.swept = asyncio.Event()
            await asyncio.sleep(self.interval)


def _iso(t: datetime) -> str:
    return t.isoformat()


def _log_fired(fired: Fired) -> None:
    for inserted in fired.jobs:
        job = inserted.job
        if not inserted.created and job.request_hash != job.idempotency_key:
            # The scheduler's own jobs carry their key as request hash: this one is not its
            # own (a producer's, enqueued before the prefix was reserved), so no run was made.
            log.warning("schedule.key_conflict", name=fired.name, job_id=job.id, kind=job.kind)
        if inserted.created:
            log.info(
                "schedule.fired",
                name=fired.name,
                job_id=inserted.job.id,
                kind=inserted.job.kind,
                queue=inserted.job.queue,
                key=inserted.job.idempotency_key,
            )
    if fired.firing.missed:
        # No scheduler ran while some fire times were due (every coordinator was down).
        log.warning(
            "schedule.missed", name=fired.name, next_fire_at=_iso(fired.firing.next_fire_at)
        )
