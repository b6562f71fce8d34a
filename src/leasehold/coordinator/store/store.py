"""The Store every backend is: each method of the contract (``contract.Store``) is one
shared algorithm or one statement, run by the driver as one transaction."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial
from typing import NoReturn

from leasehold.coordinator.store import explain, figures, jobs, leasing, migrate, scheduling
from leasehold.coordinator.store.contract import (
    AttemptPage,
    DeadFilter,
    Decide,
    Decided,
    Deleted,
    DeleteFilter,
    Expired,
    Fired,
    FirstFire,
    Flow,
    Inserted,
    InsertedAndLeased,
    JobFilter,
    JobList,
    KindLimit,
    Leased,
    LeaseRequest,
    NewJob,
    PlanFires,
    QueuesSnapshot,
    StatsSnapshot,
    StoreRules,
    WorkerBeat,
    WorkerSeen,
)
from leasehold.coordinator.store.driver import Driver, Tx, Write
from leasehold.coordinator.store.explain import Facts
from leasehold.coordinator.store.schema import SchemaReport, SchemaState
from leasehold.errors import LeaseholdError, Unavailable
from leasehold.model import Attempt, Job, JobStatus, Parent, Schedule, ScheduleSpec


def _unruled(*_: object) -> NoReturn:
    raise Unavailable("this store was opened without the rules of workflows (store/open.py)")


# A store made without rules (by a test, or a tool that only reads) refuses what needs them.
_NO_RULES = StoreRules(admit=_unruled, parent_ended=_unruled, revive=_unruled, replace=_unruled)


class DriverStore:
    """A Store on one driver (``sqlite.SqliteStore``, ``postgres.PostgresStore``), applying
    ``rules`` of its own accord (a store made without them refuses what needs them)."""

    def __init__(self, driver: Driver, rules: StoreRules | None = None) -> None:
        self.driver = driver
        self.rules = rules or _NO_RULES

    async def open(self) -> SchemaReport:
        return await self.driver.open(partial(migrate.open_schema, dialect=self.driver.dialect))

    async def schema_inspect(self) -> SchemaState:
        return await self.driver.inspect(partial(migrate.read, dialect=self.driver.dialect))

    async def schema_state(self) -> SchemaState:
        return await self.driver.read(partial(migrate.read, dialect=self.driver.dialect))

    async def coordinators_below(self, version: int) -> int:
        return await self.driver.read(lambda tx: tx.coordinators_below(version))

    async def close(self) -> None:
        await self.driver.close()

    def subscribe(
        self,
        on_available: Callable[[], None],
        on_finished: Callable[[Sequence[int] | None], None] | None = None,
    ) -> None:
        self.driver.subscribe(on_available, on_finished)

    async def now(self) -> datetime:
        return await self.driver.now()

    async def ping(self) -> None:
        await self.driver.ping()

    # -- jobs -------------------------------------------------------------------------------

    async def job_insert_many(self, new: Sequence[NewJob]) -> list[Inserted]:
        one = len(new) == 1 and new[0].plain
        insert = partial(jobs.insert, jobs=new, rules=self.rules)
        return await self.driver.write(insert, small=len(new) == 1, single=one)

    async def job_insert_and_lease(
        self, new: Sequence[NewJob], leases: Sequence[LeaseRequest]
    ) -> InsertedAndLeased:
        one = len(new) == 1
        insert = partial(jobs.insert, jobs=new, rules=self.rules)
        writes = [Write(insert, single=one and new[0].plain)]
        writes += [Write(partial(leasing.lease, request=r)) for r in leases]
        inserted, *leased = await self.driver.write_each(writes, small=one)
        error: LeaseholdError | None = None
        if isinstance(inserted, BaseException):
            error = inserted if isinstance(inserted, LeaseholdError) else Unavailable(str(inserted))
            inserted = []
        return InsertedAndLeased(
            inserted, error, [None if isinstance(a, BaseException) else a for a in leased]
        )

    async def job_lease(self, request: LeaseRequest) -> Leased:
        lease = partial(leasing.lease, request=request)
        return await self.driver.write(lease, small=request.max_jobs == 1)

    async def job_get(self, job_id: int) -> Job | None:
        async def get(tx: Tx) -> Job | None:
            return (await tx.jobs_read([job_id])).get(job_id)

        return await self.driver.read(get, point=True)

    async def jobs_decide(self, items: Sequence[tuple[int, Decide]]) -> Decided:
        decide = partial(jobs.decide, items=items, rules=self.rules)
        return await self.driver.write(decide, small=len(items) == 1)

    async def job_spawn(
        self, parent_id: int, check: Decide, new: Sequence[NewJob]
    ) -> list[Inserted]:
        return await self.driver.write(
            partial(jobs.spawn, parent_id=parent_id, check=check, jobs=new, rules=self.rules)
        )

    async def jobs_expired(self, limit: int) -> list[Expired]:
        return await self.driver.write(lambda tx: tx.jobs_expired(limit), single=True)

    async def job_explain(self, job_id: int) -> Facts | None:
        return await self.driver.read(partial(explain.facts, job_id=job_id))

    async def jobs_past_deadline(self, limit: int) -> list[int]:
        return await self.driver.read(lambda tx: tx.jobs_past_deadline(limit))

    async def job_next_run_after(self, after: datetime) -> datetime | None:
        return await self.driver.read(lambda tx: tx.job_next_run_after(after))

    async def job_list(self, query: JobFilter) -> JobList:
        return await self.driver.read(partial(jobs.page, query=query))

    async def jobs_dead(self, query: DeadFilter) -> list[int]:
        return await self.driver.read(lambda tx: tx.jobs_dead(query))

    async def attempts_list(self, job_id: int, page: AttemptPage | None = None) -> list[Attempt]:
        return await self.driver.read(lambda tx: tx.attempts_list(job_id, page))

    async def edges_list(
        self, job_id: int, *, parents: bool, after_id: int, limit: int
    ) -> list[Parent]:
        return await self.driver.read(
            lambda tx: tx.edges_list(job_id, parents=parents, after_id=after_id, limit=limit)
        )

    async def jobs_delete(self, query: DeleteFilter) -> Deleted:
        return await self.driver.write(partial(jobs.delete, query=query, rules=self.rules))

    # -- counts and figures -------------------------------------------------------------------

    async def names_known(self) -> tuple[set[str], set[str]]:
        return await self.driver.read(lambda tx: tx.names_known())

    async def counts_by_status(self) -> dict[JobStatus, int]:
        return await self.driver.read(jobs.counts_by_status)

    async def stats(self, windows: Sequence[int]) -> StatsSnapshot:
        return await self.driver.read(partial(figures.stats, windows=windows))

    async def prune(self, keep_seconds: int) -> None:
        await self.driver.write(lambda tx: tx.rollups_prune(keep_seconds), single=True)

    async def counter_totals(self) -> dict[tuple[str, str], int]:
        return await self.driver.read(lambda tx: tx.counter_totals())

    # -- schedules and limits -------------------------------------------------------------

    async def schedule_put(self, spec: ScheduleSpec, first: FirstFire) -> tuple[Schedule, bool]:
        return await self.driver.write(partial(scheduling.put, spec=spec, first=first))

    async def schedule_get(self, name: str) -> Schedule | None:
        return await self.driver.read(lambda tx: tx.schedule_get(name))

    async def schedule_list(self) -> list[Schedule]:
        return await self.driver.read(lambda tx: tx.schedule_list())

    async def schedule_delete(self, name: str) -> bool:
        return await self.driver.write(lambda tx: tx.schedule_delete(name), single=True)

    async def schedules_fire(self, plan: PlanFires, limit: int) -> list[Fired]:
        return await self.driver.write(
            partial(scheduling.fire, plan=plan, limit=limit, rules=self.rules)
        )

    async def limit_put(self, kind: str, flow: Flow) -> KindLimit:
        async def put(tx: Tx) -> KindLimit:
            await tx.limit_upsert(kind, flow)
            (limit,) = await figures.limits(tx, [kind])
            return limit

        return await self.driver.write(put)

    async def limit_delete(self, kind: str) -> bool:
        return await self.driver.write(lambda tx: tx.limit_delete(kind), single=True)

    async def limit_list(self) -> list[KindLimit]:
        return await self.driver.read(figures.limits)

    # -- queues and workers -------------------------------------------------------------------

    async def queue_pause(self, queue: str) -> bool:
        return await self.driver.write(lambda tx: tx.queue_pause(queue), single=True)

    async def queue_resume(self, queue: str) -> bool:
        async def resume(tx: Tx) -> bool:
            resumed = await tx.queue_resume(queue)
            if resumed:
                tx.wake()  # its jobs may be leased now, on every coordinator
            return resumed

        return await self.driver.write(resume, single=True)

    async def queues_snapshot(self, window_seconds: int) -> QueuesSnapshot:
        return await self.driver.write(partial(figures.queues, window_seconds=window_seconds))

    async def worker_beat(self, beat: WorkerBeat) -> WorkerSeen:
        return await self.driver.write(lambda tx: tx.worker_beat(beat), single=True)

    async def workers_list(
        self, seen_within_seconds: float, limit: int | None = None, offset: int = 0
    ) -> list[WorkerSeen]:
        return await self.driver.write(
            lambda tx: tx.workers_list(seen_within_seconds, limit, offset), single=True
        )

    async def groups_count(self) -> int:
        return await self.driver.read(lambda tx: tx.groups_count())

    async def groups_known(self, groups: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        return await self.driver.read(lambda tx: tx.groups_known(groups))

    async def flow_prune(self) -> int:
        async def prune(tx: Tx) -> int:
            return await tx.flow_prune(await tx.now())

        return await self.driver.write(prune)

    async def workers_forget(self, unseen_for_seconds: float, keep: int | None = None) -> int:
        return await self.driver.write(
            lambda tx: tx.workers_forget(unseen_for_seconds, keep), single=True
        )
