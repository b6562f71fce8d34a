"""Managing schedules: create or replace, read, list and delete (the HTTP routes call this).

The loop that enqueues their runs is ``maintenance/scheduler.py``.
"""

from __future__ import annotations

import structlog

from leasehold.coordinator.rules.fire_times import (
    Schedule,
    ScheduleSpec,
    check_cron,
    first_fire,
    zone,
)
from leasehold.coordinator.service.job_service import JobService
from leasehold.errors import ScheduleNotFound

log = structlog.get_logger("leasehold")


class Schedules:
    """Schedules as operators manage them; a new one starts at its first fire time."""

    def __init__(self, service: JobService) -> None:
        self.service = service
        self.store = service.store

    async def put(self, spec: ScheduleSpec) -> tuple[Schedule, bool]:
        """Create or replace; the schedule starts at its first fire time from now. The
        very same schedule again changes nothing (its next fire time stays): workers that
        sync the schedules their code declares all put them as they start, and a restart
        at a fire time must not skip that run."""
        check_cron(spec.cron)
        zone(spec.timezone)
        # Its jobs get the payload as given: the cap on enqueued payloads applies here.
        if too_large := self.service.oversize("payload", spec.payload):
            raise too_large
        stored = await self.store.schedule_get(spec.name)
        if stored is not None and stored.spec == spec:
            return stored, False
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
