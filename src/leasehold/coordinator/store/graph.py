"""Workflows in the store (DESIGN.md §22), once for every backend: a job inserted with
parents, a change carried along the edges, and the parents a dependent's lease hands over.

Everything happens in the transaction of the change that causes it, so a dependent is
queued in the commit of its last parent's completion, and cancelled in the commit of the
end that dooms it. What the change makes of each job is decided by ``StoreRules``
(``coordinator/rules/graph.py``); this module reads, locks and writes.

Every edge goes from a job to one with a greater id (a parent exists before its
dependents, and a graph is inserted parents first), so a change carried along the edges
locks rows in rounds of growing ids: two transactions carrying changes never wait for each
other in a cycle.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime

from leasehold.coordinator.store.contract import Inserted, NewJob, StoreRules
from leasehold.coordinator.store.driver import Tx
from leasehold.errors import InvalidGraph, Unavailable
from leasehold.model import (
    FINISHED,
    MAX_DEPTH,
    UNFINISHED,
    Job,
    JobStatus,
    OnFailure,
    Outcome,
    Parent,
)

_REVIVABLE = (JobStatus.DEAD, JobStatus.CANCELLED)
_STARTED_AGAIN = (JobStatus.WAITING, JobStatus.QUEUED)


def draft(new: NewJob, now: datetime) -> Job:
    """The job a NewJob makes, before the store gives it an id."""
    return Job(
        id=0,
        kind=new.kind,
        payload=new.payload,
        status=JobStatus.QUEUED,
        attempts=0,
        max_attempts=new.max_attempts,
        run_after=new.run_after if new.run_after is not None else now,
        created_at=now,
        idempotency_key=new.idempotency_key,
        request_hash=new.request_hash,
        priority=new.priority,
        queue=new.queue,
        headers=new.headers,
        timeout_seconds=new.timeout_seconds,
        spawned_by=new.spawned_by,
        spawn_key=new.spawn_key,
        group_key=new.group_key,
        weight=new.weight,
        start_by=new.start_by,
        unique_key=new.unique_key,
    )


async def admitted(
    tx: Tx, rules: StoreRules, new: NewJob, loc: tuple[str | int, ...], done: Sequence[Inserted]
) -> Job:
    """The job ``new`` makes, as its parents make it (waiting, queued or cancelled at
    once), with its depth; InvalidGraph for a parent that does not exist or a chain of
    parents too long. Parents named by id are locked against a concurrent end (which then
    waits for this insert, and carries its end to this job once it is committed)."""
    now = await tx.now()
    job = draft(new, now)
    if not (new.depends_on or new.after):
        return job
    ids = [d.id for d in new.depends_on]
    stored = await tx.job_states(ids, lock=True) if ids else {}
    parents: list[Parent] = []
    depth = 0
    for dependency in new.depends_on:
        found = stored.get(dependency.id)
        if found is None:
            raise InvalidGraph(
                f"no job has id {dependency.id}: a job may depend only on jobs that exist",
                loc=(*loc, "depends_on"),
            )
        parent, parent_depth = found
        parents.append(_edge(parent, dependency.on_failure))
        depth = max(depth, parent_depth + 1)
    for place, on_failure in new.after:
        earlier = done[place].job
        parents.append(
            Parent(
                earlier.id, earlier.kind, earlier.status, None, False, earlier.spawn_key, on_failure
            )
        )
        depth = max(depth, earlier.depth + 1)
    if depth > MAX_DEPTH:
        raise InvalidGraph(
            f"the job would sit {depth} parents deep; at most {MAX_DEPTH} are allowed",
            loc=(*loc, "depends_on"),
        )
    return rules.admit(job.replace(parents=tuple(parents), depth=depth), now).replace(parents=None)


def _edge(parent: Parent, on_failure: OnFailure) -> Parent:
    return dataclasses.replace(parent, on_failure=on_failure)


async def carry(
    tx: Tx,
    rules: StoreRules,
    changes: Sequence[tuple[Job, Job]],
    deleted: Sequence[tuple[int, JobStatus, int]] = (),
) -> list[Outcome]:
    """Carry this transaction's changes along the edges, transitively: a parent that
    ended (finished now, and not before) or was deleted unfinished (``deleted``: id and
    status, dependents) counts as done for its waiting dependents or cancels them; a
    parent started again (requeued from dead or cancelled) revives the dependents it had
    cancelled. The outcomes it wrote, in order."""
    ended = _ended(changes)
    ended |= {job_id: None for job_id, status, n in deleted if n and status in UNFINISHED}
    revived = [a.id for b, a in changes if a.dependents and _started_again(b, a)]
    carried: list[_Carried] = []
    while ended or revived:
        outcomes = await _parents_ended(tx, rules, ended) if ended else []
        outcomes += await _parents_revived(tx, rules, revived) if revived else []
        carried += outcomes
        moved = [(o.before, o.job) for o in outcomes]
        ended = _ended(moved)
        revived = [a.id for b, a in moved if a.dependents and _started_again(b, a)]
    return [o.outcome for o in carried]


class _Carried:
    __slots__ = ("before", "job", "outcome")

    def __init__(self, before: Job, outcome: Outcome) -> None:
        self.before, self.job, self.outcome = before, outcome.job, outcome


def _ended(changes: Sequence[tuple[Job, Job]]) -> dict[int, JobStatus | None]:
    """The parents whose end reaches their dependents: finished now and not before (a
    finished job's end reached them already)."""
    return {
        after.id: after.status
        for before, after in changes
        if after.dependents and after.status in FINISHED and before.status not in FINISHED
    }


def _started_again(before: Job, after: Job) -> bool:
    return before.status in _REVIVABLE and after.status in _STARTED_AGAIN


async def _parents_ended(
    tx: Tx, rules: StoreRules, ended: dict[int, JobStatus | None]
) -> list[_Carried]:
    edges = await tx.dependents_of(list(ended))
    if not edges:
        return []
    now, current = await tx.jobs_lock(sorted({job_id for job_id, _, _ in edges}))
    if now is None:
        return []
    decided: list[tuple[Job, Outcome]] = []
    for job_id, parent_id, on_failure in edges:
        before = current.get(job_id)
        if before is None:
            continue
        outcome = rules.parent_ended(before, parent_id, ended[parent_id], on_failure, now)
        if outcome.changed:
            decided.append((before, outcome))
            current[job_id] = outcome.job
    return await _write(tx, decided, now)


async def _parents_revived(tx: Tx, rules: StoreRules, revived: Sequence[int]) -> list[_Carried]:
    ids = await tx.jobs_blocked_by(revived)
    if not ids:
        return []
    now, current = await tx.jobs_lock(sorted(ids))
    if now is None:
        return []
    parents = await tx.parents_of(list(current))
    decided = []
    for job_id, before in current.items():
        outcome = rules.revive(before.replace(parents=tuple(parents.get(job_id, ()))), now)
        if outcome.changed:
            job = outcome.job.replace(parents=None)  # they are not stored
            decided.append((before, dataclasses.replace(outcome, job=job)))
    return await _write(tx, decided, now)


def rounds(writes: Sequence[tuple[Job, Outcome]]) -> list[list[tuple[Job, Outcome]]]:
    """The writes in rounds of distinct jobs, in order: a job's second write goes in the
    round after its first (a guarded write changes a row once per statement)."""
    found: list[list[tuple[Job, Outcome]]] = []
    seen: dict[int, int] = {}  # job id -> the round of its latest write
    for write in writes:
        n = seen.get(write[0].id, -1) + 1
        seen[write[0].id] = n
        if n == len(found):
            found.append([])
        found[n].append(write)
    return found


async def _write(tx: Tx, decided: list[tuple[Job, Outcome]], now: datetime) -> list[_Carried]:
    """Write the outcomes in rounds, counted and announced as every decision is."""
    for batch in rounds(decided):
        if await tx.jobs_write(batch, now) != len(batch):
            raise Unavailable("a job changed under a guarded write")
    for before, outcome in decided:
        tx.tally.decided(before, outcome)
    if any(o.job.status is JobStatus.QUEUED for _, o in decided):
        tx.wake()
    if ended := [o.job.id for _, o in decided if o.job.status in FINISHED]:
        tx.finished(ended)
    return [_Carried(before, outcome) for before, outcome in decided]


async def with_parents(tx: Tx, jobs: Sequence[Job], budget: int) -> list[Job]:
    """Leased jobs, each dependent with its parents: ids, kinds, statuses and, while the
    results of all of them stay within ``budget`` bytes, their results (past it, each
    further parent says its result was left out; ``GET /jobs/{id}`` has it)."""
    dependents = [job.id for job in jobs if job.depth > 0]
    if not dependents:
        return list(jobs)
    parents = await tx.parents_of(dependents, results=budget)
    return [
        job.replace(parents=tuple(parents.get(job.id, ()))) if job.depth > 0 else job
        for job in jobs
    ]
