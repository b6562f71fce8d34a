"""``NewJob``: a job to enqueue, as ``Client.enqueue_many`` takes it."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from typing import Any

from leasehold.batch_items import MAX_BATCH
from leasehold.model import EnqueueSpec
from leasehold.tracing import inject_headers

__all__ = ["MAX_BATCH", "NewJob"]  # MAX_BATCH: the most jobs one POST /jobs/batch takes

# The enqueue request's fields are EnqueueSpec's, by the same names (PROTOCOL.md).
_FIELDS = tuple(f.name for f in dataclasses.fields(EnqueueSpec))


@dataclass(frozen=True, slots=True)
class NewJob(EnqueueSpec):
    """One job to enqueue; None leaves a field to the coordinator's default. ``headers`` go
    to the workers, with the trace context added (see ``inject_headers``)."""

    def body(self) -> dict[str, Any]:
        """The enqueue request: each field given, as JSON, and the payload even when null.
        A job without a key gets a random one, so that a retried request can never add it
        twice (see ``Client.enqueue``)."""
        given = {name: getattr(self, name) for name in _FIELDS if name != "payload"}
        given["run_after"] = self.run_after.isoformat() if self.run_after else None
        given["idempotency_key"] = self.idempotency_key or f"auto-{uuid.uuid4().hex}"
        given["headers"] = inject_headers(self.headers)
        return {**{k: v for k, v in given.items() if v is not None}, "payload": self.payload}
