"""The Store contract for priorities, queues, cancellation, limits and schedules.

Run against every backend on a fresh database, like the rest of the contract suite.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta

import pytest

from leasehold.coordinator.rules.fire_times import Firing, ScheduleSpec, first_fire, plan_fires
from leasehold.coordinator.rules.transitions import decide_cancel
from leasehold.coordinator.store.contract import Flow, LeaseRequest, NewJob, Store
from leasehold.coordinator.store.open import open_store
from leasehold.errors import JobCancelled
from leasehold.model import AttemptOutcome, JobStatus
from tests.contract.test_store import complete, decide_one, get, insert, lease

SECOND = timedelta(seconds=1)


def job(kind: str = "k", *, priority: int = 0, queue: str = "default", age: float = 0) -> NewJob:
    return NewJob(kind, None, 3, None, None, "h", priority, queue)


async def insert_aged(store: Store, *jobs: tuple[NewJob, float]) -> list[int]:
    """Insert with run_after ``age`` seconds ago (so order by run_after is known)."""
    now = await store.now()
    given = [
        NewJob(j.kind, None, 3, now - timedelta(seconds=age), None, "h", j.priority, j.queue)
        for j, age in jobs
    ]
    return [i.job.id for i in await store.job_insert_many(given)]


async def take(store: Store, n: int = 1, **narrow: tuple[str, ...]) -> list[int]:
    request = LeaseRequest("w", 3600, narrow.get("kinds"), n, narrow.get("queues"))
    return [j.id for j in await store.job_lease(request)]


# -- priorities --------------------------------------------------------------------------


async def test_highest_priority_first_then_oldest_then_id(store: Store) -> None:
    low_old, high_new, high_old, mid, high_tie_a, high_tie_b = await insert_aged(
        store,
        (job(priority=-5), 60),
        (job(priority=10), 1),
        (job(priority=10), 30),
        (job(priority=3), 90),
        (job(priority=10), 10),
        (job(priority=10), 10),
    )
    assert await take(store, 3) == [high_old, high_tie_a, high_tie_b]
    assert await take(store, 10) == [high_new, mid, low_old]


async def test_priority_order_holds_within_kinds_and_queues(store: Store) -> None:
    a_low, b_high, a_high, c_top = await insert_aged(
        store,
        (job("a", priority=0, queue="q1"), 50),
        (job("b", priority=5, queue="q2"), 40),
        (job("a", priority=7, queue="q2"), 1),
        (job("c", priority=99, queue="q3"), 1),
    )
    assert await take(store, 2, kinds=("a", "b")) == [a_high, b_high]
    assert await take(store, 5, queues=("q1", "q3")) == [c_top, a_low]


async def test_a_future_high_priority_job_does_not_block_the_queue(store: Store) -> None:
    later = (await store.now()) + timedelta(hours=1)
    (future,) = [
        i.job.id
        for i in await store.job_insert_many([NewJob("k", None, 3, later, None, "h", 1000)])
    ]
    (due,) = await insert_aged(store, (job(priority=-1000), 1))
    assert await take(store, 5) == [due]
    assert (await get(store, future)).status is JobStatus.QUEUED


# -- queues ------------------------------------------------------------------------------


async def test_queues_keep_work_apart(store: Store) -> None:
    emails, reports, other = await insert_aged(
        store, (job("a", queue="emails"), 3), (job("a", queue="reports"), 2), (job("b"), 1)
    )
    assert await take(store, 5, queues=("nothing",)) == []
    assert await take(store, 5, queues=("reports",)) == [reports]
    assert await take(store, 5, queues=("emails", "reports"), kinds=("b",)) == []
    assert await take(store, 5, queues=("default", "emails"), kinds=("a", "b")) == [emails, other]


async def test_stats_count_jobs_by_queue(store: Store) -> None:
    await insert(store, job(queue="x"), job(queue="x"), job(queue="y"), job())
    await take(store, 1, queues=("x",))
    snapshot = await store.stats([60])
    assert snapshot.queue_counts == {
        ("x", JobStatus.QUEUED): 1,
        ("x", JobStatus.RUNNING): 1,
        ("y", JobStatus.QUEUED): 1,
        ("default", JobStatus.QUEUED): 1,
    }
    assert snapshot.counts == {("k", JobStatus.QUEUED): 3, ("k", JobStatus.RUNNING): 1}


async def test_oldest_available_looks_past_priority_levels(store: Store) -> None:
    _, oldest_job, _ = await insert_aged(
        store, (job(priority=9), 5), (job(priority=-3), 70), (job(priority=0), 20)
    )
    later = (await store.now()) + timedelta(hours=1)  # not due: not waiting
    await store.job_insert_many([NewJob("k", None, 3, later, None, "h", 50)])
    oldest = (await store.stats([60])).oldest_available_at
    assert oldest == (await get(store, oldest_job)).run_after


# -- cancellation ------------------------------------------------------------------------


async def test_cancelling_a_queued_job_is_final_and_counted(store: Store) -> None:
    (queued,) = await insert(store)
    outcome = await decide_one(store, queued.id, decide_cancel)
    assert outcome.job.status is JobStatus.CANCELLED
    stored = await get(store, queued.id)
    assert (stored.status, stored.cancel_requested) == (JobStatus.CANCELLED, True)
    assert await take(store) == []
    assert (await store.counts_by_status())[JobStatus.CANCELLED] == 1
    assert (await store.stats([60])).counts == {("k", JobStatus.CANCELLED): 1}
    assert (await store.counter_totals())[("cancelled", "k")] == 1


async def test_cancelling_a_running_job_ends_it_at_the_holders_report(store: Store) -> None:
    (queued,) = await insert(store)
    (leased,) = await lease(store)
    marked = await decide_one(store, queued.id, decide_cancel)
    assert (marked.job.status, marked.job.cancel_requested) == (JobStatus.RUNNING, True)
    assert (await get(store, queued.id)).cancel_requested
    refused = await decide_one(store, queued.id, complete(leased.lease_token, "result"))
    assert isinstance(refused.error, JobCancelled)
    stored = await get(store, queued.id)
    assert (stored.status, stored.result) == (JobStatus.CANCELLED, None)
    (attempt,) = await store.attempts_list(queued.id)
    assert attempt.outcome is AttemptOutcome.CANCELLED
    assert (await store.counts_by_status())[JobStatus.RUNNING] == 0
    assert (await store.stats([60])).counts == {("k", JobStatus.CANCELLED): 1}


# -- concurrency limits ------------------------------------------------------------------


async def test_limits_are_kept_listed_and_removed(store: Store) -> None:
    assert await store.limit_list() == []
    await insert(store, job("a"))
    await take(store)
    limit = await store.limit_put("a", Flow(3))
    assert (limit.kind, limit.max_running, limit.running) == ("a", 3, 1)
    await store.limit_put("a", Flow(2))
    await store.limit_put("b", Flow(7))
    assert [(x.kind, x.max_running, x.running) for x in await store.limit_list()] == [
        ("a", 2, 1),
        ("b", 7, 0),
    ]
    assert await store.limit_delete("a")
    assert not await store.limit_delete("a")
    assert [x.kind for x in await store.limit_list()] == ["b"]


@pytest.mark.parametrize("narrow", [{}, {"kinds": ("a", "b")}, {"queues": ("q1", "q2")}])
async def test_a_lease_never_takes_a_kind_past_its_limit(
    store: Store, narrow: dict[str, tuple[str, ...]]
) -> None:
    await store.limit_put("a", Flow(2))
    a_ids = await insert_aged(
        store, *((job("a", queue=f"q{1 + i % 2}", priority=5), 50 - i) for i in range(5))
    )
    b_ids = await insert_aged(store, *((job("b", queue="q1"), 10) for _ in range(3)))
    got = await take(store, 10, **narrow)
    assert got == a_ids[:2] + b_ids
    assert await take(store, 10, **narrow) == []
    await decide_one(store, a_ids[0], complete((await get(store, a_ids[0])).lease_token))
    assert await take(store, 10, **narrow) == [a_ids[2]]
    await store.limit_delete("a")
    assert await take(store, 10, **narrow) == a_ids[3:]


async def test_concurrent_lessees_never_exceed_a_limit(store: Store) -> None:
    await store.limit_put("a", Flow(3))
    await insert(store, *(job("a") for _ in range(40)), *(job("b") for _ in range(40)))
    results = await asyncio.gather(*(take(store, 2) for _ in range(32)))
    leased = [await get(store, i) for got in results for i in got]
    assert sum(j.kind == "a" for j in leased) == 3
    assert sum(j.kind == "b" for j in leased) == 40


# -- schedules ---------------------------------------------------------------------------


def spec(name: str = "s", cron: str = "* * * * * *", **fields: object) -> ScheduleSpec:
    return ScheduleSpec(name=name, cron=cron, kind="tick", **fields)  # type: ignore[arg-type]


def at(when: datetime) -> Callable[[ScheduleSpec, datetime], datetime]:
    return lambda spec, now: when


async def test_schedules_are_created_replaced_listed_and_deleted(store: Store) -> None:
    now = await store.now()
    created, was_new = await store.schedule_put(spec("b", payload={"x": 1}), first_fire)
    assert was_new
    assert created.spec == spec("b", payload={"x": 1})
    assert now < created.next_fire_at <= (await store.now()) + SECOND  # the next second
    replaced, was_new = await store.schedule_put(
        spec("b", cron="0 3 * * *", timezone="Europe/Paris", priority=4, enabled=False),
        at(now + timedelta(days=1)),
    )
    assert not was_new
    assert (replaced.spec.cron, replaced.spec.priority, replaced.spec.enabled) == (
        "0 3 * * *",
        4,
        False,
    )
    assert replaced.next_fire_at == now + timedelta(days=1)
    assert replaced.created_at == created.created_at
    await store.schedule_put(spec("a"), first_fire)
    assert [s.spec.name for s in await store.schedule_list()] == ["a", "b"]
    assert await store.schedule_get("b") == replaced
    assert await store.schedule_delete("b")
    assert not await store.schedule_delete("b")
    assert await store.schedule_get("b") is None


def fixed_plan(fire_times: list[datetime], following: datetime) -> Callable[..., Firing]:
    return lambda schedule, now: Firing(tuple(fire_times), following)


async def test_firing_enqueues_one_job_per_fire_time_and_moves_the_schedule(store: Store) -> None:
    now = await store.now()
    due = now - 3 * SECOND
    await store.schedule_put(spec(queue="cron", priority=7, payload=[1]), at(due))
    await store.schedule_put(spec("later"), at(now + timedelta(hours=1)))
    await store.schedule_put(spec("off", enabled=False), at(due))
    fired = await store.schedules_fire(fixed_plan([due, due + SECOND], now + SECOND), 10)
    assert [f.name for f in fired] == ["s"]
    jobs = [i.job for i in fired[0].jobs]
    assert [j.idempotency_key for j in jobs] == [
        f"schedule:s:{due.isoformat()}",
        f"schedule:s:{(due + SECOND).isoformat()}",
    ]
    assert all((j.kind, j.queue, j.priority, j.payload) == ("tick", "cron", 7, [1]) for j in jobs)
    stored = await store.schedule_get("s")
    assert stored is not None
    assert (stored.next_fire_at, stored.last_fire_at) == (now + SECOND, due + SECOND)
    assert await store.schedules_fire(fixed_plan([due], now), 10) == []  # nothing is due
    assert (await store.counter_totals())[("enqueued", "tick")] == 2


async def test_a_fire_time_already_enqueued_is_not_enqueued_again(store: Store) -> None:
    now = await store.now()
    due = now - SECOND
    await store.schedule_put(spec(), at(due))
    (first,) = await store.schedules_fire(fixed_plan([due], due), 10)  # left due on purpose
    (again,) = await store.schedules_fire(fixed_plan([due], now + SECOND), 10)
    assert [i.created for i in first.jobs + again.jobs] == [True, False]
    assert again.jobs[0].job.id == first.jobs[0].job.id
    assert (await store.counts_by_status())[JobStatus.QUEUED] == 1


@pytest.fixture
async def second_store(database_url: str) -> AsyncIterator[Store]:
    """Another store on the same database (PostgreSQL: as another coordinator would be)."""
    if database_url.startswith("sqlite"):
        pytest.skip("one SQLite file has one coordinator")
    other = open_store(database_url)
    await other.open()
    yield other
    await other.close()


async def test_two_stores_firing_at_once_enqueue_each_run_once(
    store: Store, second_store: Store
) -> None:
    now = await store.now()
    for i in range(20):
        await store.schedule_put(spec(f"s{i}"), at(now - 5 * SECOND))
    plan = lambda s, t: plan_fires(s, t, timedelta(seconds=10))  # noqa: E731
    rounds = await asyncio.gather(*(s.schedules_fire(plan, 7) for s in [store, second_store] * 4))
    keys = [i.job.idempotency_key for fired in rounds for f in fired for i in f.jobs if i.created]
    assert len(keys) == len(set(keys))
    stored = [s for s in await store.schedule_list() if s.next_fire_at > now]
    assert len(stored) == 20
    assert len(keys) >= 20 * 5  # every second from 5 s ago up to now, for each schedule
    assert (await store.counts_by_status())[JobStatus.QUEUED] == len(keys)
