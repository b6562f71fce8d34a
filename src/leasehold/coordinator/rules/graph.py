"""The rules of workflows (DESIGN.md §22): what a job that depends on others is, given the
states of its parents; what a parent's end does to it; and the order a graph is inserted in.

Pure, like the rules of ``transitions``: each takes the job as stored and returns an
``Outcome``, which the store writes guarded by the token and status it read. The store
calls ``parent_ended`` and ``revive`` while it carries a change along the edges
(``store/graph.py``), through the ``StoreRules`` it is given (``RULES``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from leasehold.coordinator.rules.unique import replace
from leasehold.coordinator.store.contract import StoreRules
from leasehold.errors import InvalidGraph, InvalidTransition
from leasehold.model import (
    Event,
    Job,
    JobStatus,
    OnFailure,
    Outcome,
    Parent,
    Report,
)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a job's parents make of it: waiting for ``waiting_for`` of them, ready to be
    queued (``waiting_for`` 0), or cancelled because ``blocked_by`` can no longer complete."""

    waiting_for: int = 0
    blocked_by: int | None = None
    reason: str | None = None

    @property
    def status(self) -> JobStatus:
        if self.blocked_by is not None:
            return JobStatus.CANCELLED
        return JobStatus.WAITING if self.waiting_for else JobStatus.QUEUED


def done_with(status: JobStatus | None, on_failure: OnFailure) -> bool:
    """Whether a dependent is done waiting for a parent in ``status`` (None: deleted):
    completed, or ended any way at all for an edge that runs on failure."""
    if status is JobStatus.COMPLETED:
        return True
    return on_failure is OnFailure.RUN and (
        status is None or status in (JobStatus.DEAD, JobStatus.CANCELLED)
    )


def cannot_complete(status: JobStatus | None) -> bool:
    """A parent in this state will not complete unless an operator requeues it."""
    return status is None or status in (JobStatus.DEAD, JobStatus.CANCELLED)


def blocked_reason(parent_id: int, status: JobStatus | None) -> str:
    """The error a dependent cancelled by its parent carries, naming the parent and why."""
    why = "was deleted" if status is None else f"is {status}"
    return f"cancelled: parent job {parent_id} {why} (it depends on it completing)"


def verdict(parents: Sequence[Parent], on_failure: Mapping[int, OnFailure]) -> Verdict:
    """A dependent's verdict from its parents' states, in the order given: the first parent
    that can no longer complete (on a cancelling edge) blocks it; otherwise it waits for
    the parents it is not done with."""
    waiting = 0
    for parent in parents:
        mode = on_failure.get(parent.id, OnFailure.CANCEL)
        if done_with(parent.status, mode):
            continue
        if mode is OnFailure.CANCEL and cannot_complete(parent.status):
            return Verdict(blocked_by=parent.id, reason=blocked_reason(parent.id, parent.status))
        waiting += 1
    return Verdict(waiting_for=waiting)


def admit(job: Job, now: datetime) -> Job:
    """A new job as its parents (``job.parents``) make it: cancelled at once when one it
    needs can no longer complete (so a dependent enqueued after its parent died ends as
    one enqueued before), waiting for the others, or queued when it is done with all."""
    assert job.parents is not None
    seen = verdict(job.parents, {p.id: p.on_failure for p in job.parents})
    if seen.blocked_by is not None:
        return job.replace(
            status=JobStatus.CANCELLED,
            blocked_by=seen.blocked_by,
            last_error=seen.reason,
            finished_at=now,
        )
    return job.replace(status=seen.status, waiting_for=seen.waiting_for)


def parent_ended(
    job: Job, parent_id: int, status: JobStatus | None, on_failure: OnFailure, now: datetime
) -> Outcome:
    """A parent of ``job`` ended in ``status`` (None: it was deleted while unfinished).

    A waiting dependent counts the parent as done (completed, or any end on an edge that
    runs on failure) and is queued when it was the last; otherwise it is cancelled, naming
    the parent. A dependent that is not waiting (cancelled already, or never waiting) is
    left as it is: rule 2 applies once.
    """
    if job.status is not JobStatus.WAITING:
        return Outcome(job)
    if done_with(status, on_failure):
        left = max(job.waiting_for - 1, 0)
        if left:
            return Outcome(job.replace(waiting_for=left), changed=True)
        return Outcome(_queued(job, now), changed=True)
    cancelled = job.replace(
        status=JobStatus.CANCELLED,
        finished_at=now,
        blocked_by=parent_id,
        last_error=blocked_reason(parent_id, status),
    )
    return Outcome(cancelled, changed=True, events=(Event.CANCELLED,))


def revive(job: Job, now: datetime) -> Outcome:
    """A parent that had cancelled ``job`` was requeued: the job stands as its parents
    (``job.parents``, filled by the store) now make it: waiting, queued, or still cancelled
    by another parent. Only a job cancelled by a parent is revived, never one an operator
    cancelled."""
    if job.status is not JobStatus.CANCELLED or job.blocked_by is None or job.parents is None:
        return Outcome(job)
    seen = verdict(job.parents, {p.id: p.on_failure for p in job.parents})
    if seen.blocked_by is not None:
        if seen.blocked_by == job.blocked_by:
            return Outcome(job)
        moved = job.replace(blocked_by=seen.blocked_by, last_error=seen.reason)
        return Outcome(moved, changed=True)
    return Outcome(_restarted(job, seen, now), changed=True, events=(Event.REQUEUED,))


def requeue_dependent(job: Job, now: datetime) -> Outcome:
    """An operator requeues a dead or cancelled job that depends on others (``job.parents``
    filled): it waits again for the parents it is not done with, or is queued; a parent
    that can no longer complete refuses the requeue (requeue that parent first)."""
    assert job.parents is not None
    seen = verdict(job.parents, {p.id: p.on_failure for p in job.parents})
    if seen.blocked_by is not None:
        return Outcome(
            job,
            error=InvalidTransition(
                f"job {job.id} depends on job {seen.blocked_by}, which cannot complete"
                f" ({seen.reason}): requeue that job first"
            ),
        )
    return Outcome(_restarted(job, seen, now), changed=True, events=(Event.REQUEUED,))


def _restarted(job: Job, seen: Verdict, now: datetime) -> Job:
    """A finished job started again as its parents allow: attempts and releases reset,
    its token revoked (a late report from its last holder cannot finish it)."""
    return job.replace(
        status=seen.status,
        waiting_for=seen.waiting_for,
        blocked_by=None,
        attempts=0,
        releases=0,
        run_after=max(job.run_after, now),
        report=Report.REVOKED if job.lease_token else None,
        lease_expires_at=None,
        finished_at=None,
        cancel_requested=False,
    )


def _queued(job: Job, now: datetime) -> Job:
    """A dependent whose last parent is done: leasable from now (or its own run_after)."""
    return job.replace(status=JobStatus.QUEUED, waiting_for=0, run_after=max(job.run_after, now))


def insertion_order(after: Sequence[Sequence[int]]) -> list[int]:
    """The items of a graph in an order where every item comes after those it depends on
    (``after[i]``: the items item ``i`` depends on), stable otherwise; InvalidRequest
    naming an item on a cycle."""
    state = [0] * len(after)  # 0 unseen, 1 on the current path, 2 placed
    order: list[int] = []
    for start in range(len(after)):
        if state[start]:
            continue
        stack = [(start, iter(after[start]))]
        state[start] = 1
        while stack:
            item, pending = stack[-1]
            parent = next(pending, None)
            if parent is None:
                stack.pop()
                state[item] = 2
                order.append(item)
            elif state[parent] == 1:
                raise InvalidGraph(
                    f"jobs[{item}] depends on jobs[{parent}], which depends on it: a cycle",
                    loc=("jobs", item, "depends_on"),
                )
            elif state[parent] == 0:
                state[parent] = 1
                stack.append((parent, iter(after[parent])))
    return order


RULES = StoreRules(admit=admit, parent_ended=parent_ended, revive=revive, replace=replace)
"""The rules a store applies of its own accord (``store.contract.StoreRules``)."""
