"""The job as a handler sees it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from leasehold.client import Lease
from leasehold.model import JSON


@dataclass(slots=True)
class LeasedJob:
    """The one argument a handler is called with.

    ``token`` is the lease's fencing token. Pass it on to any downstream write that must not
    be applied twice or out of order (store it with the row, compare-and-set on it): when a
    lease is lost, the job runs again under a higher token, and a store that remembers the
    highest token it has seen can refuse a late write from the older run.

    ``attempt`` is 1 on the first lease and grows with each one. ``lease_expires_at`` is the
    coordinator's expiry of the lease; the worker moves it on each renewal. Treat the
    object as read-only.
    """

    id: int
    kind: str
    payload: JSON
    attempt: int
    max_attempts: int
    token: int
    lease_expires_at: datetime
    worker_id: str
    headers: dict[str, str] | None = None  # as the producer sent them (trace context)
    timeout_seconds: float | None = None  # the job's own time limit, if it carries one

    @classmethod
    def of(cls, lease: Lease, worker_id: str) -> LeasedJob:
        job = lease.job
        assert job.lease_expires_at is not None, "a leased job has an expiry"
        return cls(
            id=job.id,
            kind=job.kind,
            payload=job.payload,
            attempt=job.attempts,
            max_attempts=job.max_attempts,
            token=lease.token,
            lease_expires_at=job.lease_expires_at,
            worker_id=worker_id,
            headers=job.headers,
            timeout_seconds=job.timeout_seconds,
        )
