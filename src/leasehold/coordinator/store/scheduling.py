"""Schedules, once for every backend: saving one, and firing the due ones.

Firing is one transaction: the due schedules are locked (PostgreSQL skips those another
coordinator is firing), each planned fire time enqueues one job under its run key
(``model.schedule_idempotency_key``: a used key is a run enqueued before), and
``next_fire_at`` moves with a compare-and-set on the value read. A run is therefore
enqueued once however many coordinators try, and the enqueue and the move commit together.
"""

from __future__ import annotations

from leasehold.coordinator.store import jobs
from leasehold.coordinator.store.contract import (
    Fired,
    FirstFire,
    PlanFires,
    StoreRules,
    scheduled_job,
)
from leasehold.coordinator.store.driver import Tx
from leasehold.errors import Unavailable
from leasehold.model import Schedule, ScheduleSpec


async def put(tx: Tx, spec: ScheduleSpec, first: FirstFire) -> tuple[Schedule, bool]:
    """Create or replace a schedule, starting at ``first(spec, now)``; True if created."""
    now = await tx.now()
    return await tx.schedule_upsert(spec, first(spec, now), now)


async def fire(tx: Tx, plan: PlanFires, limit: int, rules: StoreRules) -> list[Fired]:
    """Fire up to ``limit`` due schedules (the module docstring)."""
    now, due = await tx.schedules_due(limit)
    fired: list[Fired] = []
    for schedule in due:
        assert now is not None  # given with the schedules due
        firing = plan(schedule, now)
        runs = [scheduled_job(schedule, t) for t in firing.fire_times]
        inserted = await jobs.insert(tx, runs, rules, compare=False) if runs else []
        if not await tx.schedule_advance(schedule, firing):
            # Impossible while the row is locked: roll the firing back rather than
            # enqueue a run twice.
            raise Unavailable(f"schedule {schedule.spec.name!r} changed while it fired")
        fired.append(Fired(schedule.spec.name, firing, inserted))
    return fired
