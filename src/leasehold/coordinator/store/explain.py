"""Why a job is not running (DESIGN.md §19, "Explain"), read with the lease policy's own
code: the same pause, limits, turns, rate buckets and parents a lease would meet.

``facts`` reads them in one read transaction; ``service/explain.py`` words them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from leasehold.coordinator.store import flow
from leasehold.coordinator.store.contract import Flow
from leasehold.coordinator.store.driver import Tx
from leasehold.model import Job, JobStatus, Parent

AHEAD_COUNTED = 10_000
"""Jobs ahead of one counted at most (a count past it says "more than")."""


@dataclass(slots=True)
class Facts:
    """What a lease of the job's kind would meet now."""

    job: Job
    now: datetime
    paused: bool = False
    flow: Flow | None = None
    kind_running: int = 0
    group_running: int = 0
    rate_left: int | None = None  # units left in the job's bucket, if it has one
    rate_refill_at: datetime | None = None  # when its weight fits, if it does not now
    groups_ahead: int = 0  # groups whose turn comes first (its kind taking turns)
    ahead: int = 0  # due jobs of its kind and queue before it in lease order
    parents: list[Parent] = field(default_factory=list)  # those it still waits for


async def facts(tx: Tx, job_id: int) -> Facts | None:
    found = (await tx.jobs_read([job_id])).get(job_id)
    if found is None:
        return None
    now = await tx.now()
    seen = Facts(found, now)
    if found.status is JobStatus.WAITING:
        parents = (await tx.parents_of([job_id])).get(job_id, [])
        seen.parents = [p for p in parents if p.status is not JobStatus.COMPLETED]
        return seen
    if found.status is not JobStatus.QUEUED:
        return seen
    seen.paused = found.queue in await tx.paused_queues()
    limits = await tx.kind_flows([found.kind])
    seen.flow = limits.get(found.kind)
    seen.kind_running = (await tx.running([found.kind])).get(found.kind, 0)
    group = found.group_key or flow.UNGROUPED
    if seen.flow is not None:
        await _flow_facts(tx, seen, seen.flow, group)
    seen.ahead = await tx.jobs_ahead(found, AHEAD_COUNTED)
    return seen


async def _flow_facts(tx: Tx, seen: Facts, limit: Flow, group: str) -> None:
    job, stamp = seen.job, seen.now.timestamp()
    if job.group_key is not None:
        seen.group_running = (await tx.groups_running(job.kind, [group])).get(group, 0)
    rate = limit.rate
    if rate is not None:
        owner = group if rate.per_group else flow.UNGROUPED
        bucket = (await flow.buckets(tx, job.kind, rate, [owner], stamp))[owner]
        seen.rate_left = bucket.left
        if job.weight > bucket.left:
            seen.rate_refill_at = flow.when(bucket.refill_at(job.weight))
    if limit.turns:
        seen.groups_ahead = await tx.groups_ahead(job.kind, group, seen.now)
