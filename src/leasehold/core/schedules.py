"""Periodic jobs: managing schedules, and the loop that enqueues their runs.

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

from leasehold.core.fire_times import (
    Schedule,
    ScheduleSpec,
    check_cron,
    first_fire,
    plan_fires,
    zone,
)
from leasehold.core.service import JobService
from leasehold.errors import ScheduleNotFound
from leasehold.store.base import Fired

log = structlog.get_logger("leasehold")

FIRE_BATCH = 100  # schedules fired per transaction; a pass repeats until none are due


class Scheduler:
    """Schedule management (the API calls it) and the firing loop (``run``).

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

    # -- managing -------------------------------------------------------------------------

    async def put(self, spec: ScheduleSpec) -> tuple[Schedule, bool]:
        """Create or replace; the schedule starts at its first fire time from now."""
        check_cron(spec.cron)
        zone(spec.timezone)
        # Its jobs get the payload as given: the cap on enqueued payloads applies here.
        if too_large := self.service.oversize("payload", spec.payload):
            raise too_large
        schedule, created = await self.store.schedule_put(spec, first_fire)
        log.info("schedule.saved", name=spec.name, created=created, enabled=spec.enabled)
        return schedule, created

    async def get(self, name: str) -> Schedule:
        schedule = await self.store.schedule_get(name)
        if schedule is None:
            raise ScheduleNotFound("no schedule has that name")
        return schedule

    async def list(self) -> list[Schedule]:
        return await self.store.schedule_list()

    async def delete(self, name: str) -> None:
        if not await self.store.schedule_delete(name):
            raise ScheduleNotFound("no schedule has that name")
        log.info("schedule.deleted", name=name)

    # -- firing ---------------------------------------------------------------------------

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
