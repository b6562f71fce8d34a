"""What operators do to a running system besides single-job changes: delete jobs, pause
and resume queues, see queues and workers. The API calls this next to the JobService."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import structlog

from leasehold.coordinator.rules.presence import KEEP_GONE_SECONDS, LIVE_SECONDS
from leasehold.coordinator.rules.stats import RATE_WINDOW_SECONDS, queue_ages
from leasehold.coordinator.rules.transitions import DELETABLE, check_delete
from leasehold.coordinator.service.job_service import JobService
from leasehold.coordinator.store.contract import DeleteFilter, WorkerBeat, WorkerSeen
from leasehold.errors import InvalidRequest, JobNotFound
from leasehold.model import JobStatus

log = structlog.get_logger("leasehold")

MAX_BULK_DELETE = 100_000
_BATCH = 1000


@dataclass(frozen=True, slots=True)
class BulkDelete:
    """A bulk delete's filter, as given (None: any)."""

    status: JobStatus | None = None
    kind: str | None = None
    queue: str | None = None
    finished_before: datetime | None = None
    limit: int = 1000


@dataclass(frozen=True, slots=True)
class QueueView:
    name: str
    counts: dict[str, int]  # by status, every status present
    paused: bool
    paused_at: datetime | None
    oldest_queued_age_seconds: float | None
    completed_last_minute: int


@dataclass(frozen=True, slots=True)
class WorkerView:
    seen: WorkerSeen
    live: bool
    seconds_since_seen: float


class Operations:
    """Operator actions on top of a JobService (its store, its wake-ups)."""

    def __init__(self, service: JobService) -> None:
        self.service = service
        self.store = service.store

    async def load(self) -> None:
        """Learn which queues are paused (at start, and when another coordinator may have
        changed them), so that enqueues into them wake no lessee."""
        snapshot = await self.store.queues_snapshot(RATE_WINDOW_SECONDS)
        self.service.paused = frozenset(snapshot.paused)

    # -- deleting -----------------------------------------------------------------------

    async def delete(self, job_id: int) -> None:
        """Delete one job and its history; a running job is refused (cancel it first)."""
        for _ in range(2):  # a second look if the job left its state between the reads
            deleted = await self.store.jobs_delete(DeleteFilter(DELETABLE, ids=(job_id,), limit=1))
            if deleted:
                log.info("job.deleted", job_id=job_id)
                self.service.carried(deleted.carried)
                self.service.figures_changed()
                return
            job = await self.store.job_get(job_id)
            if job is None:
                raise JobNotFound(f"no job has id {job_id}")
            if refused := check_delete(job):
                raise refused
        raise JobNotFound(f"no job has id {job_id}")

    async def delete_where(self, query: BulkDelete) -> int:
        """Delete up to ``query.limit`` jobs matching the filter, a batch per transaction;
        running jobs are never taken. How many went."""
        if query.status is not None and query.status not in DELETABLE:
            raise InvalidRequest("running jobs are not deleted: cancel them first")
        statuses = (query.status,) if query.status is not None else DELETABLE
        deleted = 0
        while deleted < query.limit:
            batch = min(_BATCH, query.limit - deleted)
            n = await self.store.jobs_delete(
                DeleteFilter(
                    statuses,
                    kind=query.kind,
                    queue=query.queue,
                    finished_before=query.finished_before,
                    limit=batch,
                )
            )
            self.service.carried(n.carried)
            deleted += n
            if n < batch:
                break
        log.info("jobs.deleted", count=deleted)
        if deleted:
            self.service.figures_changed()
        return deleted

    # -- queues -------------------------------------------------------------------------

    async def pause(self, queue: str) -> None:
        """Pause a queue: nothing more is leased from it; running jobs finish."""
        if await self.store.queue_pause(queue):
            log.info("queue.paused", queue=queue)
        self.service.paused |= {queue}
        self.service.figures_changed()  # the oldest waiting job leaves paused queues out

    async def resume(self, queue: str) -> None:
        """Resume a queue (a queue that is not paused is left as it is: repeats are safe)."""
        if await self.store.queue_resume(queue):
            log.info("queue.resumed", queue=queue)
        self.service.paused -= {queue}
        self.service.figures_changed()
        self.service.wakeup.notify()  # its queued jobs may be leased now

    async def queues(self) -> list[QueueView]:
        stats = await self.service.stats()
        snapshot = await self.store.queues_snapshot(RATE_WINDOW_SECONDS)
        self.service.paused = frozenset(snapshot.paused)
        names = sorted({*stats.by_queue, *snapshot.paused})
        empty = dict.fromkeys((s.value for s in JobStatus), 0)
        ages = queue_ages(snapshot)
        views = []
        for name in names:
            age = ages.get(name)
            views.append(
                QueueView(
                    name=name,
                    counts=stats.by_queue.get(name, empty),
                    paused=name in snapshot.paused,
                    paused_at=snapshot.paused.get(name),
                    oldest_queued_age_seconds=age,
                    completed_last_minute=snapshot.completed_recent.get(name, 0),
                )
            )
        return views

    # -- workers ------------------------------------------------------------------------

    async def beat(self, beat: WorkerBeat) -> WorkerSeen:
        return await self.store.worker_beat(beat)

    async def workers(self, limit: int | None = None, offset: int = 0) -> list[WorkerView]:
        """Live workers and those gone within the last hour, most recently seen first:
        ``limit`` of them (at most the coordinator's ``max_workers``) after ``offset``."""
        cap = self.service.max_workers - offset
        if cap <= 0:
            return []
        limit = cap if limit is None else min(limit, cap)
        seen: Sequence[WorkerSeen] = await self.store.workers_list(
            KEEP_GONE_SECONDS, limit=limit, offset=offset
        )
        now = await self.store.now()
        views = []
        for worker in seen:
            since = max(0.0, (now - worker.last_seen).total_seconds())
            views.append(WorkerView(worker, since <= LIVE_SECONDS, since))
        return views
