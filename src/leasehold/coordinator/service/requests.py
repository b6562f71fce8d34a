"""What producers and workers ask of the service, as given (None means "not given")."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from leasehold.coordinator.rules import unique
from leasehold.coordinator.rules.transitions import normalized_fingerprints
from leasehold.coordinator.store.contract import NewJob
from leasehold.model import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_PRIORITY,
    DEFAULT_QUEUE,
    JSON,
    EnqueueSpec,
    OnFailure,
)


@dataclass(frozen=True, slots=True)
class Enqueue(EnqueueSpec):
    """One enqueue request, as given (None means "not given"); the headers are not in the
    fingerprint (DESIGN.md §21). In a batch or a spawn, ``ref`` names it for the others,
    and ``after`` names the others it depends on (by their refs); a spawn gives each child
    its ``spawn_key`` (DESIGN.md §22)."""

    ref: str | None = None
    after: tuple[tuple[str, OnFailure], ...] = ()
    spawn_key: str | None = None

    def new_job(self) -> NewJob:
        """The job to store: defaults filled in, its fingerprints for the key, and its
        unique fingerprint (``after`` is left to the caller, which knows the batch)."""
        refs = [(ref, str(mode)) for ref, mode in self.after]
        canonical, earlier = normalized_fingerprints(
            self, default_max_attempts=DEFAULT_MAX_ATTEMPTS, refs=refs
        )
        queue = self.queue or DEFAULT_QUEUE
        resolved = None
        if self.unique is not None:
            resolved = dataclasses.replace(self.unique, states=unique.states(self.unique))
        return NewJob(
            kind=self.kind,
            payload=self.payload,
            max_attempts=self.max_attempts or DEFAULT_MAX_ATTEMPTS,
            run_after=self.run_after,
            idempotency_key=self.idempotency_key,
            request_hash=canonical,
            priority=self.priority or DEFAULT_PRIORITY,
            queue=queue,
            headers=self.headers,
            timeout_seconds=self.timeout_seconds,
            also_matches=earlier,
            depends_on=self.depends_on or (),
            spawn_key=self.spawn_key,
            group_key=self.group_key,
            weight=self.weight or 1,
            start_by=self.start_by,
            unique=resolved,
            unique_key=(
                unique.fingerprint(self.kind, queue, self.payload, self.unique)
                if self.unique is not None
                else None
            ),
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
