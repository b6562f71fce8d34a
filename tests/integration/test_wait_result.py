"""Waiting for a job to finish: the service's wait, GET /jobs/{id}?wait_seconds, the client."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest

from leasehold import Client, JobCancelled, JobFailed, ResultTimeout, SyncClient
from leasehold.coordinator.service.job_service import JobService
from leasehold.coordinator.service.requests import Enqueue
from leasehold.coordinator.store.postgres.driver import PostgresStore
from leasehold.coordinator.store.sqlite.driver import SqliteStore
from leasehold.model import Job, JobStatus
from tests.http import eventually
from tests.process import Coordinator, sqlite_coordinator
from tests.workers import COORDINATOR_ARGS

WITHIN = 10.0


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[JobService]:
    store = SqliteStore(str(tmp_path / "leasehold.db"))
    await store.open()
    yield JobService(store)
    await store.close()


async def watching(service: JobService, n: int = 1) -> None:
    async def check() -> bool:
        return service.finishes.watched >= n

    await eventually(check, within=WITHIN, interval=0.005)


async def test_a_wait_answers_as_soon_as_the_job_completes(service: JobService) -> None:
    job = (await service.enqueue(Enqueue("k", 1))).job
    waiting = asyncio.create_task(service.wait(job.id, 25))
    await watching(service)
    (leased,) = await service.lease("w", 60, ["k"])
    started = time.monotonic()
    await service.complete(job.id, leased.lease_token, {"ok": True})
    done = await asyncio.wait_for(waiting, WITHIN)
    assert done.status is JobStatus.COMPLETED and done.result == {"ok": True}
    assert time.monotonic() - started < 1.0  # woken by the event, not by a look later on
    assert service.finishes.watched == 0


async def test_a_wait_answers_dead_and_cancelled_jobs(service: JobService) -> None:
    dead = (await service.enqueue(Enqueue("k", max_attempts=1))).job
    queued = (await service.enqueue(Enqueue("other"))).job
    waits = [asyncio.create_task(service.wait(j.id, 25)) for j in (dead, queued)]
    await watching(service, 2)
    (leased,) = await service.lease("w", 60, ["k"])
    await service.fail(dead.id, leased.lease_token, "boom")
    await service.cancel(queued.id)
    first, second = await asyncio.wait_for(asyncio.gather(*waits), WITHIN)
    assert first.status is JobStatus.DEAD and first.last_error == "boom"
    assert second.status is JobStatus.CANCELLED


async def test_a_wait_ends_at_its_deadline_with_the_job_as_it_is(service: JobService) -> None:
    job = (await service.enqueue(Enqueue("k"))).job
    started = time.monotonic()
    answer = await service.wait(job.id, 0.3)
    assert answer.status is JobStatus.QUEUED
    assert 0.3 <= time.monotonic() - started < 2.0
    assert service.finishes.watched == 0


async def test_a_finished_job_answers_at_once(service: JobService) -> None:
    job = (await service.enqueue(Enqueue("k"))).job
    await service.cancel(job.id)
    assert (await asyncio.wait_for(service.wait(job.id, 25), 1.0)).status is JobStatus.CANCELLED


async def test_a_stopping_coordinator_answers_waits_at_once(service: JobService) -> None:
    job = (await service.enqueue(Enqueue("k"))).job
    waiting = asyncio.create_task(service.wait(job.id, 25))
    await watching(service)
    service.stop_waiting()
    assert (await asyncio.wait_for(waiting, WITHIN)).status is JobStatus.QUEUED


# -- over HTTP, against a real coordinator ---------------------------------------------------


@pytest.fixture(scope="module")
def coordinator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Coordinator]:
    with sqlite_coordinator(tmp_path_factory.mktemp("wait"), COORDINATOR_ARGS) as c:
        yield c


@pytest.fixture
async def client(coordinator: Coordinator) -> AsyncIterator[Client]:
    async with Client(coordinator.url) as c:
        yield c


async def test_get_with_wait_seconds_answers_when_the_job_completes(client: Client) -> None:
    job = await client.enqueue("wait-complete", {"n": 1})
    waiting = asyncio.create_task(client.get(job.id, wait_seconds=20))
    lease = await client.lease("w", kinds=["wait-complete"])
    assert lease is not None
    await client.complete(job.id, lease.token, 42)
    done = await asyncio.wait_for(waiting, WITHIN)
    assert done.status is JobStatus.COMPLETED and done.result == 42


async def test_result_raises_typed_errors(client: Client) -> None:
    dead = await client.enqueue("wait-dead", max_attempts=1)
    lease = await client.lease("w", kinds=["wait-dead"])
    assert lease is not None
    await client.fail(dead.id, lease.token, "the printer is on fire", retryable=False)
    with pytest.raises(JobFailed, match="the printer is on fire") as failed:
        await client.result(dead.id, timeout=5)
    assert failed.value.error == "the printer is on fire" and failed.value.job_id == dead.id

    cancelled = await client.enqueue("wait-cancel")
    await client.cancel(cancelled.id)
    with pytest.raises(JobCancelled):
        await client.result(cancelled.id, timeout=5)

    queued = await client.enqueue("wait-never")
    started = time.monotonic()
    with pytest.raises(ResultTimeout) as timed_out:
        await client.result(queued.id, timeout=0.4)
    assert isinstance(timed_out.value, TimeoutError)
    assert 0.4 <= time.monotonic() - started < 3.0


async def test_wait_seconds_is_validated(coordinator: Coordinator) -> None:
    async with aiohttp.ClientSession() as session:
        for bad in ("-1", "31", "nan", "soon"):
            url = f"{coordinator.url}/jobs/1?wait_seconds={bad}"
            async with session.get(url) as answer:
                assert answer.status == 422, bad
                assert "error" in await answer.json()


def test_the_sync_client_waits_for_a_result(coordinator: Coordinator) -> None:
    with SyncClient(coordinator.url) as client:
        job = client.enqueue("wait-sync")
        lease = client.lease("w", kinds=["wait-sync"])
        assert lease is not None
        client.complete(job.id, lease.token, "done")
        assert client.result(job.id, timeout=5) == "done"


async def test_a_waiting_request_does_not_read_its_job_again_until_woken(
    service: JobService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Idle waits cost nothing: the job is read when the wait starts and when it ends, not
    on a timer in between."""
    job = (await service.enqueue(Enqueue("slow"))).job
    reads = 0
    real = service.store.job_get

    async def counted(job_id: int) -> Job | None:
        nonlocal reads
        reads += 1
        return await real(job_id)

    monkeypatch.setattr(service.store, "job_get", counted)
    waited = await service.wait(job.id, 1.2)
    assert waited.status is JobStatus.QUEUED
    assert reads == 2  # at the start and at the deadline (every 0.5 s, it was 4)


async def test_a_job_another_coordinator_finishes_wakes_the_wait(postgres_url: str) -> None:
    """On PostgreSQL the coordinator that finishes a job tells the others' waits, which
    answer at once instead of at their deadline."""
    here, there = PostgresStore(postgres_url), PostgresStore(postgres_url)
    await here.open()
    await there.open()
    try:
        waiting, finishing = JobService(here), JobService(there)
        job = (await finishing.enqueue(Enqueue("k"))).job
        started = time.monotonic()
        wait = asyncio.ensure_future(waiting.wait(job.id, 30))
        await watching(waiting)
        await finishing.cancel(job.id)
        ended = await asyncio.wait_for(wait, WITHIN)
        assert ended.status is JobStatus.CANCELLED
        assert time.monotonic() - started < WITHIN
    finally:
        await here.close()
        await there.close()
