"""What producers and workers ask of the service, as given (None means "not given")."""

from __future__ import annotations

from dataclasses import dataclass

from leasehold.coordinator.rules.transitions import normalized_fingerprints
from leasehold.coordinator.store.contract import NewJob
from leasehold.model import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_PRIORITY,
    DEFAULT_QUEUE,
    JSON,
    EnqueueSpec,
)


@dataclass(frozen=True, slots=True)
class Enqueue(EnqueueSpec):
    """One enqueue request, as given (None means "not given"); the headers are not in the
    fingerprint (DESIGN.md §21)."""

    def new_job(self) -> NewJob:
        """The job to store: defaults filled in, and its fingerprints for the key."""
        canonical, earlier = normalized_fingerprints(
            self, default_max_attempts=DEFAULT_MAX_ATTEMPTS
        )
        return NewJob(
            kind=self.kind,
            payload=self.payload,
            max_attempts=self.max_attempts or DEFAULT_MAX_ATTEMPTS,
            run_after=self.run_after,
            idempotency_key=self.idempotency_key,
            request_hash=canonical,
            priority=self.priority or DEFAULT_PRIORITY,
            queue=self.queue or DEFAULT_QUEUE,
            headers=self.headers,
            timeout_seconds=self.timeout_seconds,
            also_matches=earlier,
        )


@dataclass(frozen=True, slots=True)
class Renew:
    """A renewal of one lease (``lease_seconds`` None: the lease's own length)."""

    job_id: int
    token: int
    lease_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class Complete:
    """A report that the leased job succeeded, with its result."""

    job_id: int
    token: int
    result: JSON = None


@dataclass(frozen=True, slots=True)
class Fail:
    """A report that the leased job failed (``retryable`` False: dead at once)."""

    job_id: int
    token: int
    error: str
    retryable: bool = True
    retry_after_seconds: float | None = None
