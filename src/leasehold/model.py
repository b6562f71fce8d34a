"""The job and its states: plain data shared by the rules, the stores and the API.

This module imports nothing else from leasehold, so every layer can depend on it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

JSON = Any
"""Any value that survives a JSON round trip (dict, list, str, int, float, bool, None)."""


class JobStatus(StrEnum):
    QUEUED = "queued"  # waiting for a lease; leasable once run_after has passed
    RUNNING = "running"  # leased to one worker under lease_token until lease_expires_at
    COMPLETED = "completed"  # a worker reported success; final, never changes again
    DEAD = "dead"  # failed for good (attempts used up or not retryable); requeue revives it
    CANCELLED = "cancelled"  # an operator cancelled it; never leased again unless requeued


class Report(StrEnum):
    """What has been said under the job's current lease_token.

    The fencing rules look at it to tell an idempotent repeat from a conflicting report.
    """

    COMPLETED = "completed"  # the holder reported success
    FAILED = "failed"  # the holder reported failure
    RELEASED = "released"  # the holder handed the job back unfinished
    REVOKED = "revoked"  # an operator requeued the job: the token may no longer report


class AttemptOutcome(StrEnum):
    RUNNING = "running"  # the lease is still held (or expired but not yet reaped)
    COMPLETED = "completed"
    FAILED = "failed"
    EXPIRED = "expired"  # the reaper found the lease run out
    RELEASED = "released"
    CANCELLED = "cancelled"  # ended by a cancellation (reported by the holder, or reaped)


DEFAULT_QUEUE = "default"


@dataclass(frozen=True, slots=True)
class Job:
    """One unit of work and its lease. Times are aware UTC datetimes."""

    id: int
    kind: str
    payload: JSON
    status: JobStatus
    attempts: int
    max_attempts: int
    run_after: datetime
    created_at: datetime
    lease_token: int = 0
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None
    lease_seconds: float | None = None  # the length the current lease was granted for
    leased_at: datetime | None = None
    finished_at: datetime | None = None
    idempotency_key: str | None = None
    request_hash: str | None = None  # fingerprint of the enqueue request, for idempotency
    result: JSON = None
    last_error: str | None = None
    report: Report | None = None
    priority: int = 0  # higher is leased first
    queue: str = DEFAULT_QUEUE
    # Set by a cancel of a running job: its holder is told at its next renew, and its next
    # report (or the reaper) ends it as cancelled. Stays set on the cancelled job.
    cancel_requested: bool = False
    releases: int = 0  # times the job was released; the first few give the attempt back
    # Seconds the worker lets one attempt run before it cancels it (None: no limit).
    timeout_seconds: float | None = None

    def replace(self, **changes: Any) -> Job:
        """A copy with some fields changed (jobs are immutable values)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, slots=True)
class Attempt:
    """The record one lease leaves in the job's history."""

    job_id: int
    token: int
    worker_id: str
    leased_at: datetime
    finished_at: datetime | None
    outcome: AttemptOutcome
    error: str | None = None
