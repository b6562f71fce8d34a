"""A job enqueued while a lessee waits is leased to it in the enqueue's own commit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from leasehold.coordinator.service.job_service import JobService
from leasehold.coordinator.service.requests import Enqueue
from leasehold.coordinator.store.sqlite.driver import SqliteStore
from leasehold.errors import IdempotencyConflict
from tests.http import eventually

WITHIN = 10.0


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[JobService]:
    store = SqliteStore(str(tmp_path / "leasehold.db"))
    await store.open()
    yield JobService(store)
    await store.close()


def counting(service: JobService, name: str) -> list[Any]:
    """Record each call of the store's method ``name``."""
    calls: list[Any] = []
    method: Callable[..., Any] = getattr(service.store, name)

    async def spy(*args: Any) -> Any:
        calls.append(args)
        return await method(*args)

    setattr(service.store, name, spy)
    return calls


async def waiting_lessees(service: JobService, n: int) -> None:
    async def check() -> bool:
        return service.wakeup.waiting >= n

    await eventually(check, within=WITHIN, interval=0.005)


async def still_waiting(service: JobService, lease: asyncio.Task[Any]) -> None:
    """The lessee was handed nothing: woken by the enqueue or not, it goes back to waiting
    (a lessee handed a job would have returned). Not by waiting out a short poll: on a busy
    machine the first look alone can take longer than the poll."""
    await waiting_lessees(service, 1)
    assert not lease.done()
    lease.cancel()  # an abandoned poll ends with nothing leased
    outcomes = await asyncio.gather(lease, return_exceptions=True)
    outcome = outcomes[0]
    assert outcome == [] or isinstance(outcome, asyncio.CancelledError)


async def test_a_waiting_lessee_is_handed_the_job_in_the_enqueues_commit(
    service: JobService,
) -> None:
    lease = asyncio.create_task(service.lease("w", 60, ["k"], max_jobs=2, wait_seconds=30))
    await waiting_lessees(service, 1)
    leases = counting(service, "job_lease")
    both = counting(service, "job_insert_and_lease")
    inserted = await service.enqueue_many([Enqueue("k", n) for n in range(3)])
    handed = await asyncio.wait_for(lease, WITHIN)
    assert [j.payload for j in handed] == [0, 1]  # no more than it asked for
    assert all(j.lease_owner == "w" for j in handed)
    tokens = [j.lease_token for j in handed]
    assert tokens == sorted(set(tokens))  # each its own coordinator-wide token
    assert len(both) == 1
    assert leases == []  # it did not have to look for itself
    assert [i.job.id for i in inserted][:2] == [j.id for j in handed]
    (rest,) = await service.lease("w2", 60, ["k"])
    assert rest.payload == 2


async def test_a_lessee_for_other_kinds_is_not_handed_anything(service: JobService) -> None:
    lease = asyncio.create_task(service.lease("w", 60, ["a"], wait_seconds=30))
    await waiting_lessees(service, 1)
    both = counting(service, "job_insert_and_lease")
    await service.enqueue(Enqueue("b"))
    await still_waiting(service, lease)
    assert both == []


async def test_a_refused_enqueue_still_hands_over_what_its_lease_found(
    service: JobService,
) -> None:
    await service.enqueue(Enqueue("k", 1, idempotency_key="taken"))
    await service.enqueue(Enqueue("other", 2))
    lease = asyncio.create_task(service.lease("w", 60, wait_seconds=30))
    await asyncio.sleep(0)
    (first,) = await asyncio.wait_for(lease, WITHIN)  # the queued "k" job, at once
    lease = asyncio.create_task(service.lease("w", 60, ["other", "k"], wait_seconds=30))
    (second,) = await asyncio.wait_for(lease, WITHIN)
    assert {first.payload, second.payload} == {1, 2}
    lease = asyncio.create_task(service.lease("w", 60, ["k"], wait_seconds=30))
    await waiting_lessees(service, 1)
    with pytest.raises(IdempotencyConflict):
        await service.enqueue(Enqueue("k", 3, idempotency_key="taken"))
    await still_waiting(service, lease)  # handed nothing
