"""``NewJob``: a job to enqueue, as ``Client.enqueue_many`` takes it."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from typing import Any

from leasehold.batch_items import MAX_BATCH
from leasehold.model import EnqueueSpec, OnFailure, Unique
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
        given["start_by"] = self.start_by.isoformat() if self.start_by else None
        if self.depends_on is not None:
            given["depends_on"] = [
                d.id
                if d.on_failure is OnFailure.CANCEL
                else {"id": d.id, "on_failure": d.on_failure}
                for d in self.depends_on
            ]
        if self.unique is not None:
            given["unique"] = unique_wire(self.unique)
        given["idempotency_key"] = self.idempotency_key or f"auto-{uuid.uuid4().hex}"
        given["headers"] = inject_headers(self.headers)
        return {**{k: v for k, v in given.items() if v is not None}, "payload": self.payload}


def unique_wire(unique: Unique) -> dict[str, Any]:
    """A ``Unique`` as the enqueue request's ``unique`` object: what it gives, no more."""
    wire: dict[str, Any] = {}
    for field in dataclasses.fields(unique):
        value = getattr(unique, field.name)
        if value != field.default:
            wire[field.name] = list(value) if isinstance(value, tuple) else value
    return wire
