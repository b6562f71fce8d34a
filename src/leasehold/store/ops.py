"""Plain data for the operator features the stores serve: deleting jobs, paused queues and
worker presence (the Store protocol methods are in ``base``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from leasehold.model import JobStatus


@dataclass(frozen=True, slots=True)
class DeleteFilter:
    """Which jobs a delete takes. Every given field must match; ``statuses`` never holds
    running (the rule is ``core.transitions.DELETABLE``)."""

    statuses: tuple[JobStatus, ...]
    ids: tuple[int, ...] | None = None
    kind: str | None = None
    queue: str | None = None
    finished_before: datetime | None = None
    # Finished longer ago than this, by the store's clock (retention: the database's clock
    # decides on PostgreSQL, as it does for expiry).
    finished_age_seconds: float | None = None
    limit: int = 1000


@dataclass(frozen=True, slots=True)
class QueuesSnapshot:
    now: datetime
    paused: dict[str, datetime]  # queue -> paused since
    oldest_available: dict[str, datetime]  # queue -> run_after of its longest-waiting job
    completed_recent: dict[str, int]  # queue -> jobs completed in the window


@dataclass(frozen=True, slots=True)
class WorkerBeat:
    """What a worker says about itself in each heartbeat."""

    worker_id: str
    host: str
    pid: int
    version: str
    kinds: tuple[str, ...] | None  # None: any kind
    queues: tuple[str, ...] | None  # None: any queue
    concurrency: int
    started_at: datetime


@dataclass(frozen=True, slots=True)
class WorkerSeen:
    beat: WorkerBeat
    last_seen: datetime
