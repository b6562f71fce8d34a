"""JobService: the store, the rules and the clock put together. The API calls only this."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
from collections.abc import Awaitable, Callable, Sequence
from functools import partial

import structlog

from leasehold.coordinator.metrics import Metrics, Readings
from leasehold.coordinator.rules.backoff import BackoffPolicy
from leasehold.coordinator.rules.presence import LIVE_SECONDS
from leasehold.coordinator.rules.stats import RATE_WINDOW_SECONDS, WINDOWS, Figures, Stats, figures
from leasehold.coordinator.rules.transitions import (
    Outcome,
)
from leasehold.coordinator.service import answer, decisions
from leasehold.coordinator.service.budget import OverBudget, budget_seal
from leasehold.coordinator.service.duetimer import DueTimer
from leasehold.coordinator.service.explain import Explanation, explain
from leasehold.coordinator.service.figures import FiguresCache, readings
from leasehold.coordinator.service.finish import Finishes, is_finished, wait_finished
from leasehold.coordinator.service.job_log import log_fields, log_outcome
from leasehold.coordinator.service.names import GroupCap, NameCaps
from leasehold.coordinator.service.requests import Complete, Enqueue, Fail, Renew
from leasehold.coordinator.service.wakeup import Waiter, Wakeup
from leasehold.coordinator.service.workflows import Graph
from leasehold.coordinator.store.contract import (
    AttemptPage,
    DeadFilter,
    Decide,
    Flow,
    Inserted,
    JobFilter,
    JobList,
    KindLimit,
    Leased,
    LeaseRequest,
    NewJob,
    Store,
)
from leasehold.errors import (
    InvalidRequest,
    JobNotFound,
    LeaseholdError,
    LimitNotFound,
    PayloadTooLarge,
    Unavailable,
)
from leasehold.model import (
    JSON,
    MAX_ANSWER_BYTES,
    MAX_GROUPS,
    MAX_KINDS,
    MAX_QUEUES,
    MAX_WAITING_POLLS,
    MAX_WAITING_RESULTS,
    MAX_WORKERS,
    Attempt,
    Job,
    JobStatus,
    Parent,
)

log = structlog.get_logger("leasehold")


class JobService:
    """The coordinator's operations. Rules come from rules.transitions, storage from Store."""

    def __init__(
        self,
        store: Store,
        *,
        backoff: BackoffPolicy | None = None,
        rng: random.Random | None = None,
        max_payload_bytes: int | None = None,
        # Long polls waiting at once, at most; beyond, a poll answers after one look.
        max_waiting_polls: int = MAX_WAITING_POLLS,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
        max_kinds: int = MAX_KINDS,
        max_queues: int = MAX_QUEUES,
        max_groups: int = MAX_GROUPS,
        max_workers: int = MAX_WORKERS,
        max_waiting_results: int = MAX_WAITING_RESULTS,
    ) -> None:
        self.store = store
        self.backoff = backoff or BackoffPolicy()
        self.rng = rng or random.Random()
        self.max_payload_bytes = max_payload_bytes
        self.wakeup = Wakeup()
        self.finishes = Finishes()  # requests waiting for a job to end (GET ?wait_seconds)
        self.max_waiting_polls = max_waiting_polls
        self.max_answer_bytes = max_answer_bytes
        self.max_workers = max_workers
        self.max_waiting_results = max_waiting_results
        self.names = NameCaps(store.names_known, max_kinds, max_queues)
        self.groups = GroupCap(store.groups_count, store.groups_known, max_groups)
        self._figures = FiguresCache(self._compute_stats)
        self.due = DueTimer(
            store.job_next_run_after, store.now, self.wakeup.notify, self.wakeup.__len__
        )
        self.wakeup.on_register = self._start_due_timer
        self._due_task: asyncio.Task[None] | None = None
        self.metrics = Metrics()
        self.stopping = False
        # Queues known to be paused (kept by service.operations): their jobs wake no lessee.
        self.paused: frozenset[str] = frozenset()
        # Work made available, and jobs finished, by other coordinators.
        store.subscribe(self.wakeup.notify, self.finishes.fire_many)

    def _start_due_timer(self) -> None:
        """The timer runs while polls wait; its task is made by the first of them."""
        if self._due_task is None or self._due_task.done():
            self._due_task = asyncio.get_running_loop().create_task(
                self.due.run(), name="leasehold-due-timer"
            )
        self.due.poll_registered()

    async def close(self) -> None:
        """Stop the due timer's task (the coordinator is shutting down)."""
        if self._due_task is not None:
            self._due_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._due_task
            self._due_task = None

    def stop_waiting(self) -> None:
        """The coordinator is shutting down: long polls answer now (with whatever they
        have) instead of holding the shutdown until they time out."""
        self.stopping = True
        self.wakeup.notify()
        self.finishes.fire_all()

    def oversize(self, what: str, value: JSON) -> PayloadTooLarge | None:
        # Measured as stored: compact JSON. The body cap alone would let a payload nearly
        # as large as the body through; this one bounds what each row costs to keep and to
        # hand out again on every lease.
        if self.max_payload_bytes is None or answer.payload_bytes(value) <= self.max_payload_bytes:
            return None
        return PayloadTooLarge(f"the {what} is over {self.max_payload_bytes} bytes (as JSON)")

    # -- producers ----------------------------------------------------------------------

    async def enqueue(self, request: Enqueue) -> Inserted:
        (inserted,) = await self.enqueue_many([request])
        return inserted

    async def enqueue_many(self, requests: Sequence[Enqueue]) -> list[Inserted]:
        """All in one transaction: a conflicting idempotency key inserts none of them, and
        neither does a payload over the cap, nor a graph that cannot be (DESIGN.md §22).

        Lessees waiting for jobs of these kinds and queues have their leases made in the
        same commit (one fsync from enqueue to start instead of two); others are woken.
        """
        return await self._enqueue(requests)

    async def spawn(self, job_id: int, token: int, requests: Sequence[Enqueue]) -> list[Inserted]:
        """A running job's children, under its lease's token (DESIGN.md §22): a stale
        token spawns nothing (409), and a key the job spawned under before gives back the
        child made then."""
        return await self._enqueue(requests, spawned_by=(job_id, token))

    async def _enqueue(
        self, requests: Sequence[Enqueue], spawned_by: tuple[int, int] | None = None
    ) -> list[Inserted]:
        for r in requests:
            # Encoded once before the insert, for its size and to know it can be answered
            # (answer.payload_bytes): an enqueue cannot fail after its commit.
            if self.max_payload_bytes is None:
                answer.payload_bytes(r.payload)
            elif too_large := self.oversize("payload", r.payload):
                raise too_large
        graph = None
        if spawned_by is not None or any(
            r.depends_on or r.after or r.unique or r.ref for r in requests
        ):
            graph = Graph(requests, spawned_by=spawned_by[0] if spawned_by else None)
            new_jobs = graph.jobs
        else:
            new_jobs = [r.new_job() for r in requests]
        await self.names.admit([j.kind for j in new_jobs], [j.queue for j in new_jobs])
        await self.groups.admit([(j.kind, j.group_key) for j in new_jobs if j.group_key])
        if any(j.weight > 1 for j in new_jobs):
            await self._check_weights(new_jobs)
        inserted, handed = await self._insert(new_jobs, spawned_by)
        if graph is not None:
            inserted = graph.answers(inserted)
        created = [i.job for i in inserted if i.created]
        started = created + [i.job for i in inserted if i.replaced]
        leasable = sum(j.status is JobStatus.QUEUED and j.queue not in self.paused for j in started)
        self.wakeup.notify(max(0, leasable - handed))
        self.due.arm(min((j.run_after for j in started), default=None))
        for job in created:
            # Debug, as job.leased: per job per step, they would double a busy coordinator's
            # logging; the attempt history keeps who leased what and when.
            log.debug("job.enqueued", **log_fields(job))
        self.metrics.enqueued(created)
        self._figures.changed()
        return inserted

    async def _check_weights(self, new_jobs: Sequence[NewJob]) -> None:
        """A job heavier than its kind's rate limit could never start: refused (422)."""
        rates = {limit.kind: limit.flow.rate for limit in await self.store.limit_list()}
        for at, job in enumerate(new_jobs):
            rate = rates.get(job.kind)
            if rate is not None and job.weight > rate.limit:
                where = f"jobs[{at}]." if len(new_jobs) > 1 else ""
                raise InvalidRequest(
                    f"{where}weight {job.weight} is over the rate limit of kind {job.kind!r}"
                    f" ({rate.limit} per {rate.period_seconds:g} s): it could never start"
                )

    async def _insert(
        self, new_jobs: Sequence[NewJob], spawned_by: tuple[int, int] | None
    ) -> tuple[list[Inserted], int]:
        """The store's insert; jobs due at once go straight to waiting lessees, in the same
        commit, where there are any: how many were handed to them."""
        if spawned_by is not None:
            parent, token = spawned_by
            check = partial(decisions.spawn, token)
            return await self.store.job_spawn(parent, check, new_jobs), 0
        due = [
            j for j in new_jobs if j.plain and j.run_after is None and j.queue not in self.paused
        ]
        claimed = await self._claim_waiters(due)
        if claimed:
            both = await self.store.job_insert_and_lease(new_jobs, [w.request for w in claimed])
            handed = 0
            for waiter, jobs in zip(claimed, both.leased, strict=True):
                self.wakeup.hand(waiter, jobs)
                handed += len(jobs or ())
            if both.error is not None:
                raise both.error
            return both.inserted, handed
        return await self.store.job_insert_many(new_jobs), 0

    async def _claim_waiters(self, due: Sequence[NewJob]) -> list[Waiter]:
        """Waiting lessees that would lease some of these jobs, except those whose
        connection has closed: a lease made for them would sit unused until it expired."""
        claimed = self.wakeup.claim(due)
        for waiter in list(claimed):
            if waiter.gone is not None and await waiter.gone():
                claimed.remove(waiter)
                self.wakeup.hand(waiter, None)  # it looks again, sees it is gone, and ends
        return claimed

    # -- workers ------------------------------------------------------------------------

    async def lease(
        self,
        worker_id: str,
        lease_seconds: float,
        kinds: Sequence[str] | None = None,
        *,
        max_jobs: int = 1,
        wait_seconds: float = 0.0,
        queues: Sequence[str] | None = None,
        gone: Callable[[], Awaitable[bool]] | None = None,
        request_id: str | None = None,
    ) -> list[Job]:
        """Lease up to ``max_jobs`` jobs, waiting up to ``wait_seconds`` for the first.

        ``gone`` tells whether the lessee has stopped waiting (its connection closed); a
        long poll asks it before each new look, so that no job is leased to nobody.
        ``request_id``: a retry of a request with this id (same worker) gets the leases
        the first one made instead of new ones (store.contract.LeaseRequest).
        """
        request = LeaseRequest(
            worker_id,
            lease_seconds,
            tuple(kinds) if kinds is not None else None,
            max_jobs,
            tuple(queues) if queues is not None else None,
            seal=budget_seal(self.max_answer_bytes),
            request_id=request_id,
            parents_budget=self.max_answer_bytes // 2,
        )
        loop = asyncio.get_running_loop()
        if wait_seconds > 0 and len(self.wakeup) >= self.max_waiting_polls:
            # Each waiting poll holds a connection and a place in the wake-up queue; past
            # the cap it gets one look, like a poll that does not wait.
            log.debug("lease.waiters_full", worker_id=worker_id, waiting=len(self.wakeup))
            wait_seconds = 0.0
        deadline = loop.time() + wait_seconds
        waiting = False
        while True:
            waiter = self.wakeup.register(request, gone) if wait_seconds > 0 else None
            try:
                leased = await self._lease_within_budget(request)
                if not leased and leased.retry_at is not None:
                    self.due.hold(leased.retry_at)  # a rate limit lets some go then
                jobs: list[Job] = leased
                remaining = deadline - loop.time()
                if jobs or remaining <= 0 or waiter is None or self.stopping:
                    break
                if not waiting:
                    waiting = True
                    log.debug("lease.waiting", worker_id=worker_id, wait_seconds=wait_seconds)
                # No timer of its own: an event, or the coordinator's due timer, wakes it.
                handed = await self.wakeup.wait(waiter, remaining)
                if handed:
                    jobs = handed
                    break
                if (gone is not None and await gone()) or not waiter.future.done():
                    jobs = []  # hung up, or its time ran out with nothing waking it
                    break
            finally:
                if waiter is not None:
                    self.wakeup.forget(waiter)
        for job in jobs:
            log.debug("job.leased", **log_fields(job))
        self.metrics.leased(jobs)
        if jobs:
            self._figures.changed()
        return jobs

    async def _lease_within_budget(self, request: LeaseRequest) -> Leased:
        """Lease; if the jobs would not fit in the answer's budget, that lease is rolled
        back and made again for as many as fitted (others may be picked by then)."""
        while True:
            try:
                return await self.store.job_lease(request)
            except OverBudget as over:
                request = dataclasses.replace(request, max_jobs=over.fit)

    async def renew(self, job_id: int, token: int, lease_seconds: float | None = None) -> Job:
        return _raise_or_job(await self.renew_many([Renew(job_id, token, lease_seconds)]))

    async def complete(self, job_id: int, token: int, result: JSON = None) -> Job:
        return _raise_or_job(await self.complete_many([Complete(job_id, token, result)]))

    async def fail(
        self,
        job_id: int,
        token: int,
        error: str,
        *,
        retryable: bool = True,
        retry_after_seconds: float | None = None,
    ) -> Job:
        item = Fail(job_id, token, error, retryable, retry_after_seconds)
        return _raise_or_job(await self.fail_many([item]))

    async def release(self, job_id: int, token: int) -> Job:
        (answer,) = await self._decide_many([(job_id, token, partial(decisions.release, token))])
        return _raise_or_job([answer])

    # Batches: one transaction, each item fenced by its own token and answered on its own.

    async def renew_many(self, items: Sequence[Renew]) -> list[Job | LeaseholdError]:
        return await self._decide_many(
            [(i.job_id, i.token, partial(decisions.renew, i.token, i.lease_seconds)) for i in items]
        )

    async def complete_many(self, items: Sequence[Complete]) -> list[Job | LeaseholdError]:
        """A result over the cap is refused on its own, like any other item's error."""
        refused = {n: e for n, i in enumerate(items) if (e := self.oversize("result", i.result))}
        accepted = [
            (i.job_id, i.token, partial(decisions.complete, i.token, i.result))
            for n, i in enumerate(items)
            if n not in refused
        ]
        decided = iter(await self._decide_many(accepted) if accepted else [])
        return [refused[n] if n in refused else next(decided) for n in range(len(items))]

    async def fail_many(self, items: Sequence[Fail]) -> list[Job | LeaseholdError]:
        return await self._decide_many(
            [
                (
                    i.job_id,
                    i.token,
                    partial(
                        decisions.fail,
                        i.token,
                        i.error,
                        i.retryable,
                        self.backoff,
                        self.rng,
                        i.retry_after_seconds,
                    ),
                )
                for i in items
            ]
        )

    # -- reading ------------------------------------------------------------------------

    async def get(self, job_id: int) -> Job:
        job = await self.store.job_get(job_id)
        if job is None:
            raise JobNotFound(f"no job has id {job_id}")
        return job

    async def wait(self, job_id: int, seconds: float) -> Job:
        """The job as soon as it is completed, dead or cancelled, or as it is after
        ``seconds`` (DESIGN.md §9, "Waiting for a job to finish"). Past the cap on waits
        at once, the job as it is now: each wait holds a connection and an event."""
        if self.finishes.waiting >= self.max_waiting_results:
            log.debug("wait.waiters_full", job_id=job_id, waiting=self.finishes.waiting)
            return await self.get(job_id)
        return await wait_finished(
            self.finishes,
            job_id,
            partial(self.get, job_id),
            seconds,
            lambda: self.stopping,
        )

    async def list_jobs(self, query: JobFilter) -> JobList:
        return await self.store.job_list(query)

    async def ready(self, timeout_seconds: float) -> None:
        """Raise Unavailable unless the store answers a cheap statement in time."""
        try:
            await asyncio.wait_for(self.store.ping(), timeout_seconds)
        except TimeoutError:
            raise Unavailable(f"the database did not answer within {timeout_seconds:g} s") from None

    def figures_changed(self) -> None:
        """This coordinator changed jobs: the next /stats computes its figures afresh, so
        a client reads its own writes (coordinator/service/figures.py)."""
        self._figures.changed()

    async def stats(self) -> Stats:
        """The figures, computed at most once a second however many ask (and at once
        after a change made here); the long tail of kinds and queues folded into other."""
        return (await self._figures.get()).stats

    async def readings(self) -> Readings:
        """What /metrics' gauges show: the figures (shared with /stats), and each queue's
        oldest waiting job and pause, read now."""
        figured = await self._figures.get()
        return readings(figured, await self.store.queues_snapshot(RATE_WINDOW_SECONDS))

    async def _compute_stats(self) -> Figures:
        snapshot = await self.store.stats(WINDOWS)
        live = await self.store.workers_list(LIVE_SECONDS, limit=self.max_workers)
        # Off the event loop: its cost grows with the kinds, queues and workers there are
        # (bounded by their caps), and /health and renewals must not wait for it.
        return await asyncio.to_thread(figures, snapshot, live)

    async def edges(
        self, job_id: int, *, parents: bool, after_id: int = 0, limit: int = 100
    ) -> list[Parent]:
        """A page of the job's parents (or of the jobs that depend on it), by id."""
        await self.get(job_id)
        return await self.store.edges_list(job_id, parents=parents, after_id=after_id, limit=limit)

    async def explain(self, job_id: int) -> Explanation:
        """Why the job is not running right now (DESIGN.md §19, "Explain")."""
        facts = await self.store.job_explain(job_id)
        if facts is None:
            raise JobNotFound(f"no job has id {job_id}")
        live = await self.store.workers_list(LIVE_SECONDS, limit=self.max_workers)
        return explain(facts, live)

    async def attempts(self, job_id: int, page: AttemptPage | None = None) -> list[Attempt]:
        await self.get(job_id)
        return await self.store.attempts_list(job_id, page)

    # -- operators ----------------------------------------------------------------------

    async def requeue(self, job_id: int) -> Job:
        return await self._decide(job_id, None, decisions.requeue)

    async def run_now(self, job_id: int) -> Job:
        """Make a queued job that waits for its run_after due at once."""
        return await self._decide(job_id, None, decisions.run_now)

    async def cancel(self, job_id: int) -> Job:
        """Cancel a job: at once unless it is running (then at its holder's next report)."""
        return await self._decide(job_id, None, decisions.cancel)

    async def limit_put(self, kind: str, flow: Flow) -> KindLimit:
        limit = await self.store.limit_put(kind, flow)
        rate = flow.rate
        log.info(
            "limit.set",
            kind=kind,
            max_running=flow.max_running,
            max_running_per_group=flow.max_running_per_group,
            rate=f"{rate.limit}/{rate.period_seconds:g}s" if rate is not None else None,
            rate_per_group=rate.per_group if rate is not None else None,
            fair=flow.turns,
        )
        self.wakeup.notify()  # a raised limit lets jobs held back by it be leased now
        return limit

    async def limit_delete(self, kind: str) -> None:
        if not await self.store.limit_delete(kind):
            raise LimitNotFound("no concurrency limit is set for that kind")
        log.info("limit.removed", kind=kind)
        self.wakeup.notify()  # jobs held back by the limit may be leased now

    async def limits(self) -> list[KindLimit]:
        return await self.store.limit_list()

    def carried(self, outcomes: Sequence[Outcome]) -> None:
        """What a change did to the jobs depending on it (DESIGN.md §22), told as any
        decision is: logged, counted, result waits and lessees woken, due times armed."""
        queued = 0
        for outcome in outcomes:
            log_outcome(outcome, None)
            self.metrics.decided(outcome)
            if is_finished(outcome.job):
                self.finishes.fire(outcome.job.id)
            queued += outcome.job.status is JobStatus.QUEUED
            self._arm_if_queued(outcome)
        if outcomes:
            self.wakeup.notify(queued)
            self._figures.changed()

    async def requeue_dead(self, query: DeadFilter) -> int:
        """Requeue the dead jobs matching the filter; how many moved."""
        ids = await self.store.jobs_dead(query)
        outcomes = await self.store.jobs_decide([(job_id, decisions.requeue) for job_id in ids])
        self.carried(outcomes.carried)
        moved = 0
        for outcome in outcomes:
            if outcome is not None and outcome.changed:
                moved += 1
                self.metrics.decided(outcome)
                self.due.arm(outcome.job.run_after)
        self.wakeup.notify(moved)
        if moved:
            self.figures_changed()
        log.info("jobs.requeued", count=moved)
        return moved

    async def reap(self, limit: int = 1000) -> int:
        """Expire the leases that have run out; how many jobs were expired."""
        expired = await self.store.jobs_expired(limit)
        if not expired:
            return 0
        outcomes = await self.store.jobs_decide(
            [(e.job_id, partial(decisions.expire, e.token)) for e in expired]
        )
        self.carried(outcomes.carried)
        reaped = [o for o in outcomes if o is not None and o.changed]
        for outcome in reaped:
            log_outcome(outcome, outcome.job.lease_token)
            self.metrics.decided(outcome)
            if is_finished(outcome.job):
                self.finishes.fire(outcome.job.id)
            self._arm_if_queued(outcome)
        # An expiry also frees its kind's room under a concurrency limit.
        self.wakeup.notify(len(reaped))
        if reaped:
            self.figures_changed()
        return len(reaped)

    async def sweep(self) -> None:
        """One pass of what time does to jobs, each backlog drained in full: leases that
        ran out, and start deadlines that passed (the reaper's loop; the test mode's)."""
        while await self.reap() > 0:
            pass
        while await self.miss_deadlines() > 0:
            pass

    async def miss_deadlines(self, limit: int = 1000) -> int:
        """End the jobs no lease started by their start deadline (DESIGN.md §19): cancelled,
        with the reason, counted as ``deadline_missed``; how many."""
        late = await self.store.jobs_past_deadline(limit)
        if not late:
            return 0
        outcomes = await self.store.jobs_decide([(i, decisions.deadline) for i in late])
        self.carried(outcomes.carried)
        ended = [o for o in outcomes if o is not None and o.changed]
        self.carried(ended)
        return len(ended)

    async def _decide(self, job_id: int, token: int | None, decide: Decide) -> Job:
        return _raise_or_job(await self._decide_many([(job_id, token, decide)]))

    async def _decide_many(
        self, items: Sequence[tuple[int, int | None, Decide]]
    ) -> list[Job | LeaseholdError]:
        # Every caller answers with the jobs: their answers are built inside the transaction.
        outcomes = await self.store.jobs_decide(
            [(job_id, partial(decisions.sealed, decide)) for job_id, _, decide in items]
        )
        self.carried(outcomes.carried)
        answers: list[Job | LeaseholdError] = []
        available = 0
        for (job_id, token, _), outcome in zip(items, outcomes, strict=True):
            if outcome is None:
                answers.append(JobNotFound(f"no job has id {job_id}"))
                continue
            log_outcome(outcome, token)
            self.metrics.decided(outcome)
            answers.append(outcome.error or outcome.job)
            if outcome.changed and is_finished(outcome.job):
                self.finishes.fire(job_id)
            # A retry still in its backoff wakes a lessee for nothing; that costs one read.
            available += outcome.changed and outcome.job.status is JobStatus.QUEUED
            if outcome.changed and outcome.attempt is not None:
                # An attempt that ended frees room under its kind's concurrency limit, if
                # it has one: a lessee of that kind looks again.
                self.wakeup.notify_matching(outcome.job.kind, outcome.job.queue)
            self._arm_if_queued(outcome)
        self.wakeup.notify(available)
        self._figures.changed()
        return answers

    def _arm_if_queued(self, outcome: Outcome) -> None:
        if outcome.changed and outcome.job.status is JobStatus.QUEUED:
            self.due.arm(outcome.job.run_after)


def _raise_or_job(answers: list[Job | LeaseholdError]) -> Job:
    (answer,) = answers
    if isinstance(answer, LeaseholdError):
        raise answer
    return answer
