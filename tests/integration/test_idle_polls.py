"""Idle long polls cost one look each, not one every half second (DESIGN.md §9)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

import pytest

from leasehold.coordinator.clock import FakeClock
from leasehold.coordinator.service.job_service import JobService
from leasehold.coordinator.service.requests import Enqueue
from leasehold.coordinator.store.contract import LeaseRequest, Store
from leasehold.coordinator.store.open import open_store

WAIT = 1.2  # long enough for the old per-poll look every 0.5 s to have happened twice


class CountingStore:
    """The store, counting lease statements."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.leases = 0

    async def job_lease(self, request: LeaseRequest) -> Any:
        self.leases += 1
        return await self._store.job_lease(request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


@pytest.fixture
async def service_on(database_url: str) -> AsyncIterator[Callable[..., JobService]]:
    made: list[JobService] = []
    stores: list[Store] = []

    async def make(clock: FakeClock | None = None, **kwargs: Any) -> JobService:
        store = open_store(database_url, clock=clock)
        await store.open()
        stores.append(store)
        service = JobService(CountingStore(store), **kwargs)
        made.append(service)
        return service

    yield make  # type: ignore[misc]
    for service in made:
        await service.close()
    for store in stores:
        await store.close()


async def test_idle_polls_look_once_each(service_on: Callable[..., Any]) -> None:
    """200 polls waiting 1.2 s for nothing make 200 lease statements, not 600."""
    service = await service_on()
    polls = [service.lease(f"w{n}", 60, wait_seconds=WAIT) for n in range(200)]
    assert await asyncio.gather(*polls) == [[]] * 200
    assert service.store.leases <= 200 + 10, service.store.leases


async def test_a_job_that_becomes_due_wakes_a_waiting_poll(service_on: Callable[..., Any]) -> None:
    """The due timer, not the poll, watches the clock: a job due in 0.3 s is leased by a
    poll already waiting, soon after it is due and long before the poll's time is up."""
    service = await service_on()
    due = await service.store.now() + timedelta(seconds=0.3)
    job = (await service.enqueue(Enqueue("k", run_after=due))).job
    loop = asyncio.get_running_loop()
    started = loop.time()
    (leased,) = await service.lease("w", 60, wait_seconds=20)
    assert leased.id == job.id
    assert loop.time() - started < 5  # due after 0.3 s; the timer looks at most every 1 s


async def test_a_retry_whose_backoff_ends_wakes_a_waiting_poll(
    service_on: Callable[..., Any],
) -> None:
    service = await service_on()
    job = (await service.enqueue(Enqueue("k"))).job
    (leased,) = await service.lease("w", 60)
    waiting = asyncio.create_task(service.lease("w2", 60, wait_seconds=20))
    await asyncio.sleep(0.05)  # the poll is waiting (nothing is queued)
    await service.fail(job.id, leased.lease_token, "boom", retry_after_seconds=0.3)
    (again,) = await asyncio.wait_for(waiting, 5)
    assert again.id == job.id and again.attempts == 2


async def test_moving_the_stores_clock_wakes_a_waiting_poll(
    service_on: Callable[..., Any], database_url: str
) -> None:
    """The timer follows the store's clock (the database's, or an injected one)."""
    if not database_url.startswith("sqlite"):
        pytest.skip("PostgreSQL's clock is the database's: no clock is injected there")
    clock = FakeClock()
    service = await service_on(clock)
    job = (await service.enqueue(Enqueue("k", run_after=clock.now() + timedelta(hours=1)))).job
    waiting = asyncio.create_task(service.lease("w", 60, wait_seconds=20))
    await asyncio.sleep(0.05)
    clock.advance(3600)
    (leased,) = await asyncio.wait_for(waiting, 5)
    assert leased.id == job.id


async def test_polls_past_the_cap_answer_at_once(service_on: Callable[..., Any]) -> None:
    service = await service_on(max_waiting_polls=3)
    waiting = [asyncio.create_task(service.lease(f"w{n}", 60, wait_seconds=20)) for n in range(3)]
    await asyncio.sleep(0.05)
    assert len(service.wakeup) == 3
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert await service.lease("late", 60, wait_seconds=20) == []
    assert loop.time() - started < 2
    job = (await service.enqueue(Enqueue("k"))).job  # the waiting ones still get work
    done, _ = await asyncio.wait(waiting, timeout=5, return_when=asyncio.FIRST_COMPLETED)
    assert [j.id for t in done for j in t.result()] == [job.id]
    for task in waiting:
        task.cancel()
