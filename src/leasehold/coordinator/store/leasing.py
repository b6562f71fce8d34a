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

from leasehold.coordinator.store import flow, graph
from leasehold.coordinator.store.contract import Flow, Leased, LeaseRequest, lease_order
from leasehold.coordinator.store.driver import Narrow, Tx
from leasehold.model import Job, JobStatus

MAX_KINDS_SCANNED = 10_000
"""Kinds a lease of any kind considers, at most, once some kind is limited."""


async def lease(tx: Tx, request: LeaseRequest) -> Leased:
    """Lease up to ``request.max_jobs`` jobs (the module docstring), in lease order."""
    leased = Leased()
    jobs = await replay(tx, request) if request.request_id is not None else None
    if jobs is None:
        jobs = await tx.lease_grant(request, None)
        if jobs is None:
            jobs = await _capped(tx, request, leased)
        if request.request_id is not None and jobs:
            # An empty answer is not recorded: a long poll asks again under the same id,
            # and its next look must lease afresh, not replay the empty one.
            await tx.lease_record(request, jobs)
    jobs.sort(key=lease_order)
    jobs = await graph.with_parents(tx, jobs, request.parents_budget)
    if request.seal is not None:
        request.seal(jobs)  # raising rolls this lease back
    leased.extend(jobs)
    return leased


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


async def _capped(tx: Tx, request: LeaseRequest, leased: Leased) -> list[Job]:
    queues = await _open_queues(tx, request.queues)
    if queues == ():
        return []
    wanted = request.kinds
    if wanted is None:
        wanted = tuple(await _kinds_to_probe(tx, request.max_jobs, queues))
    kinds = tuple(dict.fromkeys(wanted))
    flows = await tx.kind_flows(kinds)
    room = await _room(tx, kinds, flows, request.max_jobs)
    open_kinds = tuple(k for k in kinds if room[k] > 0)
    if not open_kinds:
        return []
    n = request.max_jobs
    planned = [k for k in open_kinds if k in flows and flows[k].planned]
    if not planned:
        caps = tuple(min(room[k], n) for k in open_kinds)
        granted = await tx.lease_grant(request, Narrow(open_kinds, caps, queues))
        return granted or []
    # Some kind is rate limited or takes turns: choose the jobs one by one (store/flow.py).
    plan = flow.Plan()
    plain = [k for k in open_kinds if k not in planned]
    heads = (
        await tx.lease_heads(plain, [min(room[k], n) for k in plain], queues, n) if plain else []
    )
    settle = request.queues is None and queues is None  # every queue seen: groups may sleep
    for kind in planned:
        want = min(room[kind], n)
        heads += await flow.plan_kind(tx, plan, kind, flows[kind], want, queues, settle=settle)
    chosen = sorted(heads, key=flow.lease_order)[:n]
    jobs = await tx.lease_take(request, [h.id for h in chosen]) if chosen else []
    await flow.record(tx, plan, chosen, jobs)
    leased.retry_at = flow.when(plan.retry_at)
    return jobs


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
    flows = await tx.kind_flows(list(heads))
    if not any(f.planned for f in flows.values()):
        room = _room_left(flows, await tx.running(list(flows)))
        if all(room[kind] >= heads[kind] for kind in room):
            return list(heads)
    return await tx.queued_kinds(MAX_KINDS_SCANNED)


async def _room(tx: Tx, kinds: Sequence[str], flows: dict[str, Flow], n: int) -> dict[str, int]:
    """How many more jobs of each kind may run (``n`` for a kind without a limit on its
    running jobs).

    A kind already at its limit is left out without waiting for its lock: running jobs of
    a limited kind only grow under that lock, so the count cannot be low. Where leases run
    concurrently, the others' limits are then locked, in kind order, and counted again:
    leases of a limited kind take turns, and each sees what the previous one leased. A
    kind under a rate limit of its own (not per group) is locked likewise, so that its
    leases take turns at its units.
    """
    room = dict.fromkeys(kinds, n) | _room_left(flows, await tx.running(list(flows)))
    wanted = [k for k in flows if room[k] > 0 and _locked(flows[k])]
    if tx.concurrent and wanted:
        locked = await tx.kind_flows(wanted, lock=True)
        flows |= locked
        room |= _room_left(locked, await tx.running(list(locked)))
        room |= {k: 0 for k in wanted if k not in locked}  # its limit went meanwhile: next time
    return room


def _locked(limit: Flow) -> bool:
    """Leases of the kind take turns at its limit's row (where they run concurrently)."""
    return limit.max_running is not None or (limit.rate is not None and not limit.rate.per_group)


def _room_left(flows: dict[str, Flow], running: dict[str, int]) -> dict[str, int]:
    return {
        kind: f.max_running - running.get(kind, 0)
        for kind, f in flows.items()
        if f.max_running is not None
    }
