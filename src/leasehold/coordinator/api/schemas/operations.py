"""Wire models of the operator routes: deleting jobs, queues, workers (api/operations.py)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, StrictInt

from leasehold.coordinator.api.schemas.fields import (
    MAX_KINDS_PER_LEASE,
    MAX_QUEUES_PER_LEASE,
    Kind,
    Label,
    QueueName,
    Rfc3339Time,
    Strict,
    UtcTime,
    WorkerId,
)
from leasehold.coordinator.service.operations import QueueView, WorkerView
from leasehold.model import JobStatus


class BulkDeleteRequest(Strict):
    """Every given field must match; running jobs are never deleted."""

    status: JobStatus | None = Field(default=None, description="any but running (default)")
    kind: Kind | None = None
    queue: QueueName | None = None
    finished_before: Rfc3339Time | None = Field(
        default=None, description="only jobs that finished before this time"
    )
    limit: Annotated[StrictInt, Field(ge=1, le=100_000)] = Field(
        default=1000, description="delete at most this many"
    )


class DeletedCount(BaseModel):
    deleted: int


class QueueOut(BaseModel):
    name: str
    counts: dict[str, int] = Field(description="jobs by status, every status present")
    paused: bool
    paused_at: UtcTime | None
    oldest_queued_age_seconds: float | None = Field(
        description="how long the queue's longest-waiting available job has waited"
    )
    completed_last_minute: int

    @classmethod
    def of(cls, view: QueueView) -> QueueOut:
        return cls(
            name=view.name,
            counts=view.counts,
            paused=view.paused,
            paused_at=view.paused_at,
            oldest_queued_age_seconds=view.oldest_queued_age_seconds,
            completed_last_minute=view.completed_last_minute,
        )


class QueueList(BaseModel):
    queues: list[QueueOut]


class QueueState(BaseModel):
    name: str
    paused: bool


class HeartbeatRequest(Strict):
    worker_id: WorkerId
    host: Label
    pid: Annotated[StrictInt, Field(ge=0, le=2**31 - 1)]
    version: Label
    # As many as a lease may name: a worker cannot lease more kinds than that by name.
    kinds: Annotated[list[Kind], Field(max_length=MAX_KINDS_PER_LEASE)] | None = Field(
        default=None, description="the kinds it serves (default: any)"
    )
    queues: Annotated[list[QueueName], Field(max_length=MAX_QUEUES_PER_LEASE)] | None = Field(
        default=None, description="the queues it leases from (default: any)"
    )
    concurrency: Annotated[StrictInt, Field(ge=1, le=100_000)]
    started_at: Rfc3339Time


class WorkerOut(BaseModel):
    worker_id: str
    host: str
    pid: int
    version: str
    kinds: list[str] | None
    queues: list[str] | None
    concurrency: int
    started_at: UtcTime
    last_seen: UtcTime
    live: bool = Field(description="seen within the last 15 seconds (3 heartbeats)")
    seconds_since_seen: float

    @classmethod
    def of(cls, view: WorkerView) -> WorkerOut:
        beat = view.seen.beat
        return cls(
            worker_id=beat.worker_id,
            host=beat.host,
            pid=beat.pid,
            version=beat.version,
            kinds=list(beat.kinds) if beat.kinds is not None else None,
            queues=list(beat.queues) if beat.queues is not None else None,
            concurrency=beat.concurrency,
            started_at=beat.started_at,
            last_seen=view.seen.last_seen,
            live=view.live,
            seconds_since_seen=view.seconds_since_seen,
        )


class WorkerList(BaseModel):
    workers: list[WorkerOut]
    next_cursor: str | None = Field(
        default=None, description="more workers follow: pass it as `cursor` for the next page"
    )
