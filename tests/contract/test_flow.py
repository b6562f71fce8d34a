"""Flow control on every backend (DESIGN.md §19, §23): rate limits, groups taking turns,
limits per group, unique jobs, start deadlines; capacity given back by every path that
ends a lease."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from leasehold.coordinator.service.job_service import JobService
from leasehold.coordinator.service.requests import Enqueue
from leasehold.coordinator.store.contract import Flow, LeaseRequest, RateLimit, Store
from leasehold.errors import InvalidRequest, StaleToken
from leasehold.model import Event, Job, JobStatus, Unique


@pytest.fixture
def service(store: Store) -> JobService:
    return JobService(store)


async def fill(service: JobService, kind: str, n: int, **options: object) -> list[Job]:
    made = await service.enqueue_many([Enqueue(kind, payload=i, **options) for i in range(n)])  # type: ignore[arg-type]
    return [i.job for i in made]


async def running_by_group(store: Store, kind: str, groups: list[str]) -> dict[str, int]:
    async def read(tx: object) -> dict[str, int]:
        return await tx.groups_running(kind, groups)  # type: ignore[attr-defined,no-any-return]

    return await store.driver.read(read)  # type: ignore[attr-defined,no-any-return]


async def test_a_rate_limit_holds_starts_within_the_window(service: JobService) -> None:
    await service.limit_put("mail", Flow(rate=RateLimit(3, 60)))
    await fill(service, "mail", 10)
    leased = await service.lease("w", 60, ["mail"], max_jobs=10)
    assert len(leased) == 3
    assert await service.lease("w", 60, ["mail"], max_jobs=10) == []
    # Other kinds are not held back by it.
    await fill(service, "other", 2)
    assert len(await service.lease("w", 60, None, max_jobs=10)) == 2


async def test_the_rate_is_shared_by_every_lessee_and_refills(service: JobService) -> None:
    await service.limit_put("api", Flow(rate=RateLimit(2, 0.6)))
    await fill(service, "api", 6)
    started = [*await service.lease("a", 60, ["api"]), *await service.lease("b", 60, ["api"])]
    assert len(started) == 2
    leased = await service.store.job_lease(LeaseRequest("c", 60, ("api",), 4))
    assert leased == []
    assert leased.retry_at is not None
    # Once the window has moved past the first start, another may start: no sooner.
    now = await service.store.now()
    assert (leased.retry_at - now).total_seconds() > 0.3
    await asyncio.sleep(max(0.0, (leased.retry_at - now).total_seconds()) + 0.05)
    assert 1 <= len(await service.lease("c", 60, ["api"], max_jobs=4)) <= 2


async def test_weights_skip_a_job_too_heavy_for_what_is_left(service: JobService) -> None:
    await service.limit_put("batch", Flow(rate=RateLimit(5, 60)))
    for weight in (4, 4, 1):
        await service.enqueue(Enqueue("batch", payload=weight, weight=weight))
    leased = await service.lease("w", 60, ["batch"], max_jobs=3)
    assert sorted(j.weight for j in leased) == [1, 4]


async def test_a_job_heavier_than_its_rate_limit_is_refused(service: JobService) -> None:
    await service.limit_put("batch", Flow(rate=RateLimit(5, 60)))
    with pytest.raises(InvalidRequest, match="weight 6 is over the rate limit"):
        await service.enqueue(Enqueue("batch", weight=6))
    assert (await service.enqueue(Enqueue("batch", weight=5))).created


async def test_a_rate_per_group_is_each_groups_own(service: JobService) -> None:
    await service.limit_put("sms", Flow(rate=RateLimit(1, 60, per_group=True)))
    for group in ("acme", "globex"):
        await fill(service, "sms", 3, group_key=group)
    leased = await service.lease("w", 60, ["sms"], max_jobs=10)
    assert sorted(j.group_key or "" for j in leased) == ["acme", "globex"]
    assert await service.lease("w", 60, ["sms"], max_jobs=10) == []


async def test_groups_take_turns_so_a_backlog_starves_no_one(service: JobService) -> None:
    await service.limit_put("report", Flow(fair=True))
    await fill(service, "report", 200, group_key="big")
    small = [f"t{n}" for n in range(10)]
    for group in small:
        await fill(service, "report", 2, group_key=group)
    first = [(await service.lease("w", 60, ["report"]))[0] for _ in range(11)]
    assert sorted({j.group_key or "" for j in first}) == sorted([*small, "big"])
    # Every small group's jobs start within the first rounds, long before the backlog.
    more = [(await service.lease("w", 60, ["report"]))[0] for _ in range(11)]
    assert {j.group_key for j in first + more if j.group_key != "big"} == set(small)
    assert sum(j.group_key == "big" for j in first + more) == 2


async def test_a_lone_enqueue_of_a_new_group_takes_its_turn(service: JobService) -> None:
    """One job enqueued alone (on PostgreSQL, the one-statement insert) in a group never
    seen: its group is among those a fair kind's lease serves."""
    await service.limit_put("fair", Flow(fair=True))
    (job,) = await fill(service, "fair", 1, group_key="newcomer")
    assert [j.id for j in await service.lease("w", 60, ["fair"])] == [job.id]


async def test_a_limit_per_group_caps_each_group(service: JobService, store: Store) -> None:
    await service.limit_put("sync", Flow(max_running_per_group=1))
    for group in ("a", "b", "c"):
        await fill(service, "sync", 3, group_key=group)
    leased = await service.lease("w", 60, ["sync"], max_jobs=9)
    assert sorted(j.group_key or "" for j in leased) == ["a", "b", "c"]
    assert await service.lease("w", 60, ["sync"], max_jobs=9) == []
    done = next(j for j in leased if j.group_key == "b")
    await service.complete(done.id, done.lease_token)
    (again,) = await service.lease("w", 60, ["sync"], max_jobs=9)
    assert again.group_key == "b"
    assert await running_by_group(store, "sync", ["a", "b", "c"]) == {"a": 1, "b": 1, "c": 1}


async def test_every_end_of_a_lease_gives_its_groups_room_back(
    service: JobService, store: Store
) -> None:
    """Complete, fail (retried, and for good), release, cancel and the reaper: each gives
    the slot back once, and a stale report gives back nothing."""
    await service.limit_put("work", Flow(max_running_per_group=10))
    await fill(service, "work", 6, group_key="g", max_attempts=1)
    jobs = await service.lease("w", 0.2, ["work"], max_jobs=6)
    assert len(jobs) == 6
    assert await running_by_group(store, "work", ["g"]) == {"g": 6}
    a, b, c, d, e, f = jobs
    await service.complete(a.id, a.lease_token)
    await service.fail(b.id, b.lease_token, "again")  # one attempt: dead
    await service.fail(c.id, c.lease_token, "gone", retryable=False)
    await service.release(d.id, d.lease_token)
    await service.cancel(e.id)
    await service.fail(e.id, e.lease_token, "stopped")
    await service.complete(a.id, a.lease_token)  # a repeat changes nothing
    with pytest.raises(StaleToken):
        await service.release(a.id, a.lease_token - 1)
    await asyncio.sleep(0.3)  # f's lease runs out
    assert await service.reap() == 1
    assert await running_by_group(store, "work", ["g"]) == {"g": 0}
    del f


async def test_a_duplicate_answers_with_the_job_already_there(service: JobService) -> None:
    once = Unique(fields=("user",))
    first = await service.enqueue(Enqueue("welcome", payload={"user": 7}, unique=once))
    again = await service.enqueue(Enqueue("welcome", payload={"user": 7, "x": 1}, unique=once))
    other = await service.enqueue(Enqueue("welcome", payload={"user": 8}, unique=once))
    assert first.created and not again.created and again.duplicate
    assert again.job.id == first.job.id
    assert other.created
    totals = (await service.stats()).totals_by_kind["welcome"]
    assert totals[Event.DUPLICATE] == 1
    # Once the first has finished, a job of the same fields is no duplicate (no period).
    (leased,) = await service.lease("w", 60, ["welcome"])
    await service.complete(leased.id, leased.lease_token)
    assert (await service.enqueue(Enqueue("welcome", payload={"user": 7}, unique=once))).created
    with pytest.raises(InvalidRequest, match="'user'"):
        await service.enqueue(Enqueue("welcome", payload={"name": 1}, unique=once))


async def test_a_period_keeps_one_job_per_key_whatever_it_became(service: JobService) -> None:
    hourly = Unique(key="daily-report", period_seconds=3600)
    first = await service.enqueue(Enqueue("report", unique=hourly))
    (leased,) = await service.lease("w", 60, ["report"])
    await service.complete(leased.id, leased.lease_token)
    again = await service.enqueue(Enqueue("report", unique=hourly))
    assert again.duplicate and again.job.id == first.job.id
    assert again.job.status is JobStatus.COMPLETED


async def test_a_debounce_replaces_the_queued_duplicate(service: JobService) -> None:
    later = (await service.store.now()) + timedelta(hours=1)
    debounce = Unique(key="reindex", replace=True)
    first = await service.enqueue(Enqueue("index", payload=1, run_after=later, unique=debounce))
    again = await service.enqueue(
        Enqueue("index", payload=2, run_after=later + timedelta(minutes=5), unique=debounce)
    )
    assert (again.duplicate, again.replaced, again.job.id) == (True, True, first.job.id)
    stored = await service.get(first.job.id)
    assert stored.payload == 2
    assert stored.run_after == later + timedelta(minutes=5)


async def test_a_job_not_started_by_its_deadline_ends_without_running(
    service: JobService,
) -> None:
    soon = (await service.store.now()) + timedelta(seconds=0.3)
    late = await service.enqueue(
        Enqueue("late", start_by=soon, run_after=soon + timedelta(seconds=1))
    )
    on_time = await service.enqueue(Enqueue("late", start_by=soon + timedelta(hours=1)))
    await asyncio.sleep(0.4)
    assert await service.miss_deadlines() == 1
    ended = await service.get(late.job.id)
    assert ended.status is JobStatus.CANCELLED
    assert "start deadline" in (ended.last_error or "")
    assert (await service.stats()).totals_by_kind["late"][Event.DEADLINE_MISSED] == 1
    (leased,) = await service.lease("w", 60, ["late"])
    assert leased.id == on_time.job.id


async def test_a_lone_job_of_a_group_takes_its_turn(service: JobService) -> None:
    """One enqueue of one job (the one-statement insert on PostgreSQL) wakes its group."""
    await service.limit_put("one", Flow(fair=True))
    for group in ("x", "y"):
        await service.enqueue(Enqueue("one", group_key=group))
    leased = await service.lease("w", 60, ["one"], max_jobs=5)
    assert sorted(j.group_key or "" for j in leased) == ["x", "y"]
