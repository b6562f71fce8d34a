"""The lease policy, once for every backend: which jobs a lease request gets.

1. A request id seen from the same worker within the window gets what that request got,
   as far as it still holds it (PROTOCOL.md, "Lease idempotency").
2. The plain grant: the first due jobs, in lease order (highest priority, oldest
   run_after, lowest id). It declines when a per-kind limit or a paused queue could apply.
3. Otherwise the capped grant: paused queues are left out; the kinds to consider are the
   request's, or, for a request of any kind, those of the first due jobs when no limit
   stops them (so that a limit on one kind does not make every lease probe thousands of
   tenant kinds), else every queued kind; each limited kind gets its room (its limit less
   its running jobs, the limit's row locked first where other coordinators lease too);
   the grant takes no kind past its room.

The grant itself (tokens, attempts, the statement that picks and updates) is the driver's
``Tx.lease_grant``. Before the commit, ``request.seal`` sees the jobs: if it raises, the
lease is rolled back, so no job is leased that its answer cannot carry.
"""

from __future__ import annotations

from collections.abc import Sequence

from leasehold.coordinator.store.contract import LeaseRequest, lease_order
from leasehold.coordinator.store.driver import Narrow, Tx
from leasehold.model import Job, JobStatus

MAX_KINDS_SCANNED = 10_000
"""Kinds a lease of any kind considers, at most, once some kind is limited."""


async def lease(tx: Tx, request: LeaseRequest) -> list[Job]:
    """Lease up to ``request.max_jobs`` jobs (the module docstring), in lease order."""
    jobs = await replay(tx, request) if request.request_id is not None else None
    if jobs is None:
        jobs = await tx.lease_grant(request, None)
        if jobs is None:
            jobs = await _capped(tx, request)
        if request.request_id is not None and jobs:
            # An empty answer is not recorded: a long poll asks again under the same id,
            # and its next look must lease afresh, not replay the empty one.
            await tx.lease_record(request, jobs)
    jobs.sort(key=lease_order)
    if request.seal is not None:
        request.seal(jobs)  # raising rolls this lease back
    return jobs


async def replay(tx: Tx, request: LeaseRequest) -> list[Job] | None:
    """The jobs an earlier request with this id got and still holds, or None when the id
    is new (or older than the window): a job since reported, expired or leased again is not
    handed out again (its token moved on, or it is no longer running)."""
    granted = await tx.lease_replay(request)
    if granted is None:
        return None
    jobs = await tx.jobs_read([job_id for job_id, _ in granted])
    return [
        job
        for job_id, token in granted
        if (job := jobs.get(job_id)) is not None
        and job.lease_token == token
        and job.status is JobStatus.RUNNING
        and job.report is None
    ]


async def _capped(tx: Tx, request: LeaseRequest) -> list[Job]:
    queues = await _open_queues(tx, request.queues)
    if queues == ():
        return []
    wanted = request.kinds
    if wanted is None:
        wanted = tuple(await _kinds_to_probe(tx, request.max_jobs, queues))
    kinds = tuple(dict.fromkeys(wanted))
    room = await _room(tx, kinds, request.max_jobs)
    open_kinds = tuple(k for k in kinds if room[k] > 0)
    if not open_kinds:
        return []
    caps = tuple(min(room[k], request.max_jobs) for k in open_kinds)
    granted = await tx.lease_grant(request, Narrow(open_kinds, caps, queues))
    return granted or []


async def _open_queues(tx: Tx, wanted: Sequence[str] | None) -> tuple[str, ...] | None:
    """The queues a lease may take from: those asked for (None: any) less the paused ones,
    read in this transaction, so a pause that has committed is always seen."""
    paused = await tx.paused_queues()
    if not paused:
        return tuple(dict.fromkeys(wanted)) if wanted is not None else None
    if wanted is None:
        wanted = await tx.queued_queues()
    return tuple(q for q in dict.fromkeys(wanted) if q not in paused)


async def _kinds_to_probe(tx: Tx, n: int, queues: Sequence[str] | None) -> list[str]:
    """The kinds a lease of any kind considers once some kind is limited: those of its
    first ``n`` due jobs when no limit stops them (the usual case), else every queued kind,
    so that jobs behind a full kind are still found."""
    heads = await tx.head_kinds(n, queues)
    limits = await tx.kind_limits(list(heads))
    room = _room_left(limits, await tx.running(list(limits)))
    if all(room[kind] >= heads[kind] for kind in limits):
        return list(heads)
    return await tx.queued_kinds(MAX_KINDS_SCANNED)


async def _room(tx: Tx, kinds: Sequence[str], n: int) -> dict[str, int]:
    """How many more jobs of each kind may run (``n`` for a kind without a limit).

    A kind already at its limit is left out without waiting for its lock: running jobs of
    a limited kind only grow under that lock, so the count cannot be low. Where leases run
    concurrently, the others' limits are then locked, in kind order, and counted again:
    leases of a limited kind take turns, and each sees what the previous one leased.
    """
    limits = await tx.kind_limits(kinds)
    room = dict.fromkeys(kinds, n) | _room_left(limits, await tx.running(list(limits)))
    wanted = [k for k in limits if room[k] > 0]
    if tx.concurrent and wanted:
        locked = await tx.kind_limits(wanted, lock=True)
        room |= _room_left(locked, await tx.running(list(locked)))
        room |= {k: 0 for k in wanted if k not in locked}  # its limit went meanwhile: next time
    return room


def _room_left(limits: dict[str, int], running: dict[str, int]) -> dict[str, int]:
    return {kind: n - running.get(kind, 0) for kind, n in limits.items()}
