"""The job as a handler sees it."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from leasehold.client import Enqueued, Lease, NewJob, ParentRef
from leasehold.model import JSON, Parent

if TYPE_CHECKING:
    from leasehold.worker.children import JobLink


@dataclass(slots=True)
class LeasedJob:
    """The one argument a handler is called with.

    ``token`` is the lease's fencing token. Pass it on to any downstream write that must not
    be applied twice or out of order (store it with the row, compare-and-set on it): when a
    lease is lost, the job runs again under a higher token, and a store that remembers the
    highest token it has seen can refuse a late write from the older run.

    ``attempt`` is 1 on the first lease and grows with each one. ``lease_expires_at`` is the
    coordinator's expiry of the lease; the worker moves it on each renewal. ``parents`` are
    the jobs it depended on (DESIGN.md §22), in id order, with their statuses and results
    as parsed JSON (the worker fetches any the lease left out for size). Treat the object
    as read-only.
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
    parents: tuple[Parent, ...] = ()
    spawns: int = 0  # the spawn calls this run has made
    # The worker's way to the coordinator for this lease (spawns); None outside a worker.
    _link: JobLink | None = dataclasses.field(default=None, repr=False, compare=False)

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
            parents=job.parents or (),
        )

    async def spawn(
        self, children: Sequence[NewJob], *, then: NewJob | None = None
    ) -> list[Enqueued]:
        """Enqueue ``children`` of this job under its lease's token, in one request (DESIGN.md
        §22); ``then``, if given, is one more job that depends on all of them (a
        continuation). The answers are in that order.

        Each child is keyed by its ``ref`` (a child without one by its place:
        ``"{n}.{i}"``, its index ``i`` in the ``n``-th spawn call of this run, from 0), so
        a job leased again after a crash that spawns the same keys gets the same children
        back, none twice. Children may depend on each other by their keys (``after``). A
        lease that is no longer this run's (a newer lease, the job cancelled) spawns
        nothing: the error (``StaleToken``, ``JobCancelled``, ...) is raised and the
        handler is stopped, as a refused renewal stops it. For ``async def`` handlers;
        ``spawn_sync`` is the same for plain ones."""
        return await self._linked().spawn(self, self._keyed(children, then))

    def spawn_sync(
        self, children: Sequence[NewJob], *, then: NewJob | None = None
    ) -> list[Enqueued]:
        """``spawn`` for a plain (``def``) handler, which runs on a thread of its own: the
        same request, made on the worker's event loop while the thread waits for it."""
        return self._linked().spawn_sync(self, self._keyed(children, then))

    def _linked(self) -> JobLink:
        if self._link is None:
            raise RuntimeError(f"job {self.id} is not run by a worker: it cannot spawn")
        return self._link

    def _keyed(self, children: Sequence[NewJob], then: NewJob | None) -> list[NewJob]:
        call, self.spawns = self.spawns, self.spawns + 1
        keyed = [
            child if child.ref is not None else dataclasses.replace(child, ref=f"{call}.{n}")
            for n, child in enumerate(children)
        ]
        if then is not None:
            ref = then.ref if then.ref is not None else f"{call}.{len(keyed)}"
            after = (*(then.after or ()), *(ParentRef(c.ref or "") for c in keyed))
            keyed.append(dataclasses.replace(then, ref=ref, after=after))
        return keyed
