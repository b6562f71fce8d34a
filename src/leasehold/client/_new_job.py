"""``NewJob``: a job to enqueue, as ``Client.enqueue_many`` takes it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from leasehold.batch_items import MAX_BATCH
from leasehold.client._parse import drop_none
from leasehold.model import EnqueueSpec
from leasehold.tracing import inject_headers

__all__ = ["MAX_BATCH", "NewJob"]  # MAX_BATCH: the most jobs one POST /jobs/batch takes


@dataclass(frozen=True, slots=True)
class NewJob(EnqueueSpec):
    """One job to enqueue; None leaves a field to the coordinator's default. ``headers`` go
    to the workers, with the trace context added (see ``inject_headers``)."""

    def body(self) -> dict[str, Any]:
        """The enqueue request. A job without a key gets a random one, so that a retried
        request can never add it twice (see ``Client.enqueue``)."""
        fields = drop_none(
            kind=self.kind,
            max_attempts=self.max_attempts,
            run_after=self.run_after.isoformat() if self.run_after else None,
            idempotency_key=self.idempotency_key or f"auto-{uuid.uuid4().hex}",
            priority=self.priority,
            queue=self.queue,
            headers=inject_headers(self.headers),
            timeout_seconds=self.timeout_seconds,
        )
        return {**fields, "payload": self.payload}
