"""The job algorithms every backend shares: enqueue with idempotency keys, the decide loop
behind every report, reap and operator change, job lists within a byte budget, deletes.

Each is an ``async`` function of one transaction (``driver.Tx``); the driver runs it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from leasehold.coordinator.store.contract import (
    Decide,
    DeleteFilter,
    Inserted,
    JobFilter,
    JobList,
    NewJob,
)
from leasehold.coordinator.store.driver import Tx
from leasehold.errors import Unavailable
from leasehold.model import FINISHED, Job, JobStatus, Outcome


async def insert(tx: Tx, jobs: Sequence[NewJob], *, compare: bool = True) -> list[Inserted]:
    """Insert the jobs; an idempotency key used before yields the job stored under it.

    A key used before by a different request raises IdempotencyConflict (and the driver
    rolls everything back); ``compare=False`` takes a used key as this job whatever its
    request (the scheduler's runs). A key given twice in one batch makes one job: the later
    item answers with it, as a retry would.
    """
    made = await tx.jobs_insert(jobs)
    taken = [new.idempotency_key for new, job in zip(jobs, made, strict=True) if job is None]
    stored = await tx.jobs_by_key([k for k in taken if k is not None]) if taken else {}
    inserted = []
    for new, job in zip(jobs, made, strict=True):
        if job is not None:
            inserted.append(Inserted(job, created=True))
            continue
        assert new.idempotency_key is not None  # only a key can be taken
        seen = stored[new.idempotency_key]
        if compare:
            new.check_reuse(seen.request_hash, f"job {seen.id}")
        inserted.append(Inserted(seen, created=False))
    return inserted


async def decide(tx: Tx, items: Sequence[tuple[int, Decide]]) -> list[Outcome | None]:
    """For each (id, rule): read the job, decide, and write the outcome if it changed,
    guarded by the token and status that were read; None for an unknown id.

    One read and one write per batch: per job only the rule runs here. A job decided twice
    in one batch sees its first outcome, and its writes go in turn (a row is written once
    per statement).
    """
    now, current = await tx.jobs_lock(sorted({job_id for job_id, _ in items}))
    if now is None:
        return [None] * len(items)
    outcomes: list[Outcome | None] = []
    writes: list[tuple[Job, Outcome]] = []
    for job_id, rule in items:
        before = current.get(job_id)
        if before is None:
            outcomes.append(None)
            continue
        outcome = rule(before, now)
        if outcome.changed or outcome.attempt is not None:
            writes.append((before, outcome))
        current[job_id] = outcome.job  # a second item for the same job sees this one
        tx.tally.decided(before, outcome)
        outcomes.append(outcome)
    if any(o is not None and o.changed and o.job.status is JobStatus.QUEUED for o in outcomes):
        tx.wake()
    if ended := [
        o.job.id for o in outcomes if o is not None and o.changed and o.job.status in FINISHED
    ]:
        tx.finished(ended)
    for batch in _rounds(writes):
        changed = sum(outcome.changed for _, outcome in batch)
        if await tx.jobs_write(batch, now) != changed:
            # Impossible while the rows are locked (or the writer is alone): refuse the
            # whole batch rather than half-apply it.
            raise Unavailable("a job changed under a guarded write")
    return outcomes


def _rounds(writes: list[tuple[Job, Outcome]]) -> list[list[tuple[Job, Outcome]]]:
    """The writes in rounds of distinct jobs, in order: a job's second write goes in the
    round after its first."""
    rounds: list[list[tuple[Job, Outcome]]] = []
    seen: dict[int, int] = {}  # job id -> the round of its latest write
    for write in writes:
        n = seen.get(write[0].id, -1) + 1
        seen[write[0].id] = n
        if n == len(rounds):
            rounds.append([])
        rounds[n].append(write)
    return rounds


async def page(tx: Tx, query: JobFilter) -> JobList:
    """Jobs ordered by id after the cursor, filtered, stopped before their payloads and
    results pass ``query.max_bytes`` (the first job always comes)."""
    jobs = JobList()
    spent = 0
    async with contextlib.aclosing(tx.jobs_page(query)) as rows:
        async for size, job in rows:
            spent += size
            if query.max_bytes is not None and spent > query.max_bytes and jobs:
                jobs.cut = True
                break
            jobs.append(job)
    return jobs


async def delete(tx: Tx, query: DeleteFilter) -> int:
    """Delete one batch of jobs (never running ones); how many went, uncounted with them."""
    gone = await tx.jobs_delete(query)
    for queue, kind, status in gone:
        tx.tally.removed(queue, kind, status)
    return len(gone)


async def counts_by_status(tx: Tx) -> dict[JobStatus, int]:
    return dict.fromkeys(JobStatus, 0) | dict(await tx.status_counts())
