"""The job algorithms every backend shares: enqueue with idempotency keys, the decide loop
behind every report, reap and operator change, job lists within a byte budget, deletes.

Each is an ``async`` function of one transaction (``driver.Tx``); the driver runs it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from datetime import timedelta

from leasehold.coordinator.store import graph
from leasehold.coordinator.store.contract import (
    Decide,
    Decided,
    Deleted,
    DeleteFilter,
    Inserted,
    JobFilter,
    JobList,
    NewJob,
    StoreRules,
)
from leasehold.coordinator.store.driver import Tx
from leasehold.errors import JobNotFound, Unavailable
from leasehold.model import FINISHED, Event, Job, JobStatus, Outcome


async def insert(
    tx: Tx, jobs: Sequence[NewJob], rules: StoreRules, *, compare: bool = True
) -> list[Inserted]:
    """Insert the jobs; an idempotency key used before (for the same kind) yields the job
    stored under it, and so does a spawn key used before by the same parent.

    A key used before by a different request raises IdempotencyConflict (and the driver
    rolls everything back); ``compare=False`` takes a used key as this job whatever its
    request (the scheduler's runs). A key given twice in one batch makes one job: the later
    item answers with it, as a retry would. A unique job's duplicate yields the job it
    duplicates (DESIGN.md §23); a job with parents starts as they make it (§22).
    """
    if all(new.plain for new in jobs):
        return await _insert_plain(tx, jobs, compare)
    done: list[Inserted] = []
    for new in jobs:  # in order: a job's parents in the batch come before it
        done.append(await _insert_one(tx, rules, new, done, compare))
    return done


async def _insert_plain(tx: Tx, jobs: Sequence[NewJob], compare: bool) -> list[Inserted]:
    """Jobs that need nothing looked up first, in as few statements as the engine can."""
    made = await tx.jobs_insert(jobs)
    taken = [_key(new) for new, job in zip(jobs, made, strict=True) if job is None]
    stored = await tx.jobs_by_key(taken) if taken else {}
    inserted = []
    for new, job in zip(jobs, made, strict=True):
        if job is not None:
            inserted.append(Inserted(job, created=True))
            continue
        seen = stored[_key(new)]
        if compare:
            new.check_reuse(seen.request_hash, f"job {seen.id}")
        inserted.append(Inserted(seen, created=False))
    return inserted


def _key(new: NewJob) -> tuple[str, str]:
    assert new.idempotency_key is not None  # only a key can be taken
    return new.kind, new.idempotency_key


async def _insert_one(
    tx: Tx, rules: StoreRules, new: NewJob, done: Sequence[Inserted], compare: bool
) -> Inserted:
    """One job that needs a look first: its spawn key, its idempotency key, its
    duplicates, its parents; then the row and its edges."""
    if new.spawned_by is not None and new.spawn_key is not None:
        spawned = await tx.job_spawned(new.spawned_by, new.spawn_key)
        if spawned is not None:
            return Inserted(spawned, created=False)
    if new.idempotency_key is not None and (used := await _used(tx, new, compare)):
        return used
    if new.unique_key is not None and (duplicate := await _duplicate(tx, rules, new, done)):
        return duplicate
    job = await graph.admitted(tx, rules, new, new.loc, done)
    made = await tx.job_insert(job)
    if made is None:  # its key was taken meanwhile, by another coordinator's insert
        used = await _used(tx, new, compare)
        assert used is not None
        return used
    edges = [(made.id, d.id, d.on_failure) for d in new.depends_on]
    edges += [(made.id, done[place].job.id, mode) for place, mode in new.after]
    if edges:
        await tx.deps_insert(edges)
    return Inserted(made, created=True)


async def _used(tx: Tx, new: NewJob, compare: bool) -> Inserted | None:
    seen = (await tx.jobs_by_key([_key(new)])).get(_key(new))
    if seen is None:
        return None
    if compare:
        new.check_reuse(seen.request_hash, f"job {seen.id}")
    return Inserted(seen, created=False)


async def _duplicate(
    tx: Tx, rules: StoreRules, new: NewJob, done: Sequence[Inserted]
) -> Inserted | None:
    """The job this one duplicates (DESIGN.md §23), in this batch or stored, or None; a
    debounce gives it this job's payload and run_after while it has not started."""
    unique = new.unique
    assert unique is not None
    assert unique.states is not None  # resolved by the service (rules.unique.states)
    assert new.unique_key is not None
    now = await tx.now()
    since = now - timedelta(seconds=unique.period_seconds) if unique.period_seconds else None
    found = next(
        (
            i.job
            for i in reversed(done)
            if i.job.unique_key == new.unique_key
            and i.job.status in unique.states
            and (since is None or i.job.created_at > since)
        ),
        None,
    )
    if found is None:
        found = await tx.job_duplicate(new.unique_key, unique.states, since)
    if found is None:
        return None
    tx.tally.event(Event.DUPLICATE, new.kind)
    if unique.replace:
        outcome = rules.replace(found, new, now)
        if outcome.changed and await tx.job_replace(found, outcome.job):
            if outcome.job.status is JobStatus.QUEUED:
                tx.wake()
            return Inserted(outcome.job, created=False, duplicate=True, replaced=True)
    return Inserted(found, created=False, duplicate=True)


async def spawn(
    tx: Tx, parent_id: int, check: Decide, jobs: Sequence[NewJob], rules: StoreRules
) -> list[Inserted]:
    """A running job's children (DESIGN.md §22): the fencing rule ``check`` on the parent,
    locked (so its spawns take turns, and a stale token spawns nothing), then each child
    inserted or, for a spawn key the parent used before, found."""
    now, found = await tx.jobs_lock([parent_id])
    parent = found.get(parent_id)
    if now is None or parent is None:
        raise JobNotFound(f"no job has id {parent_id}")
    verdict = check(parent, now)
    if verdict.error is not None:
        raise verdict.error
    return await insert(tx, jobs, rules)


async def decide(tx: Tx, items: Sequence[tuple[int, Decide]], rules: StoreRules) -> Decided:
    """For each (id, rule): read the job, decide, and write the outcome if it changed,
    guarded by the token and status that were read; None for an unknown id. What the
    changes do to the jobs depending on them is carried along in the same transaction
    (``Decided.carried``).

    One read and one write per batch: per job only the rule runs here. A job decided twice
    in one batch sees its first outcome, and its writes go in turn (a row is written once
    per statement). A finished job with parents is handed to its rule with them (a requeue
    looks at them).
    """
    now, current = await tx.jobs_lock(sorted({job_id for job_id, _ in items}))
    if now is None:
        return Decided([None] * len(items))
    dependents = [j.id for j in current.values() if j.depth > 0 and j.status in FINISHED]
    if dependents:
        parents = await tx.parents_of(dependents)
        for job_id in dependents:
            current[job_id] = current[job_id].replace(parents=tuple(parents.get(job_id, ())))
    outcomes = Decided()
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
    for batch in graph.rounds(writes):
        changed = sum(outcome.changed for _, outcome in batch)
        if await tx.jobs_write(batch, now) != changed:
            # Impossible while the rows are locked (or the writer is alone): refuse the
            # whole batch rather than half-apply it.
            raise Unavailable("a job changed under a guarded write")
    moved = [(before, outcome.job) for before, outcome in writes if outcome.changed]
    outcomes.carried = await graph.carry(tx, rules, moved)
    return outcomes


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


async def delete(tx: Tx, query: DeleteFilter, rules: StoreRules) -> Deleted:
    """Delete one batch of jobs (never running ones), uncounted with them: how many went,
    and what their going did to the jobs that depended on them (a parent deleted
    unfinished can no longer complete, DESIGN.md §22)."""
    gone = await tx.jobs_delete(query)
    for _, queue, kind, status, _ in gone:
        tx.tally.removed(queue, kind, status)
    carried = await graph.carry(tx, rules, (), [(i, s, n) for i, _, _, s, n in gone])
    return Deleted(len(gone), carried)


async def counts_by_status(tx: Tx) -> dict[JobStatus, int]:
    return dict.fromkeys(JobStatus, 0) | dict(await tx.status_counts())
