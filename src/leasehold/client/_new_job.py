"""``NewJob``: a job to enqueue, as ``Client.enqueue_many`` (and ``spawn``) take it."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from typing import Any

from leasehold.batch_items import MAX_BATCH
from leasehold.errors import InvalidRequest
from leasehold.model import EnqueueSpec, OnFailure, Unique
from leasehold.tracing import inject_headers

__all__ = ["MAX_BATCH", "NewJob", "ParentRef"]  # MAX_BATCH: the most jobs one request takes

# The enqueue request's fields are EnqueueSpec's, by the same names (PROTOCOL.md).
_FIELDS = tuple(f.name for f in dataclasses.fields(EnqueueSpec))


@dataclass(frozen=True, slots=True)
class ParentRef:
    """A parent named by its ``ref`` among the jobs of the same request (a batch, or a
    spawn, where a child's ref is its key), and what its failure does to the dependent."""

    ref: str
    on_failure: OnFailure = OnFailure.CANCEL


@dataclass(frozen=True, slots=True)
class NewJob(EnqueueSpec):
    """One job to enqueue; None leaves a field to the coordinator's default. ``headers`` go
    to the workers, with the trace context added (see ``inject_headers``).

    Jobs enqueued together (``enqueue_many``, ``enqueue_graph``, ``spawn``) may name each
    other: ``ref`` is this job's name within the request (in a spawn, its key under the
    spawning job), and ``after`` the refs of the jobs of the same request it depends on
    (a ref, or a ``ParentRef`` to choose what the parent's failure does). ``depends_on``
    names parents that exist already, by id."""

    ref: str | None = None
    after: tuple[str | ParentRef, ...] | None = None

    def body(self) -> dict[str, Any]:
        """The enqueue request: each field given, as JSON, and the payload even when null.
        A job without a key gets a random one, so that a retried request can never add it
        twice (see ``Client.enqueue``)."""
        wire = self._wire()
        wire["idempotency_key"] = self.idempotency_key or f"auto-{uuid.uuid4().hex}"
        if self.ref is not None:
            wire["ref"] = self.ref
        return wire

    def child_body(self) -> dict[str, Any]:
        """The item of a spawn (``POST /jobs/{id}/children``): keyed by its ``ref``, which
        makes a spawn safe to repeat, so no idempotency key is made up."""
        if self.ref is None:
            raise InvalidRequest(f"a child job ({self.kind}) needs a key: give it a ref")
        return {**self._wire(), "key": self.ref}

    def _wire(self) -> dict[str, Any]:
        given = {name: getattr(self, name) for name in _FIELDS if name != "payload"}
        given["run_after"] = self.run_after.isoformat() if self.run_after else None
        given["start_by"] = self.start_by.isoformat() if self.start_by else None
        parents: list[Any] = [
            d.id if d.on_failure is OnFailure.CANCEL else {"id": d.id, "on_failure": d.on_failure}
            for d in self.depends_on or ()
        ]
        for parent in self.after or ():
            named = parent if isinstance(parent, ParentRef) else ParentRef(parent)
            if named.on_failure is OnFailure.CANCEL:
                parents.append({"ref": named.ref})
            else:
                parents.append({"ref": named.ref, "on_failure": named.on_failure})
        given["depends_on"] = parents or None
        if self.unique is not None:
            given["unique"] = unique_wire(self.unique)
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
