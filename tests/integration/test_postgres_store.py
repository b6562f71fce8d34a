"""What only the PostgreSQL store does: several stores (coordinators) on one database."""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import asyncpg
import pytest

from leasehold.coordinator.rules.backoff import BackoffPolicy
from leasehold.coordinator.service.job_service import JobService
from leasehold.coordinator.service.requests import Enqueue
from leasehold.coordinator.service.wakeup import Waiter
from leasehold.coordinator.store.contract import LeaseRequest, NewJob
from leasehold.coordinator.store.postgres.driver import PostgresStore
from leasehold.errors import InvalidRequest, Unavailable
from leasehold.model import AttemptOutcome, Job, JobStatus
from tests.pgserver import PgServer
from tests.process import free_port

pytestmark = pytest.mark.postgres

WAKE_TIMEOUT = 15.0  # generous: the machine is shared


def new_job(key: str | None = None) -> NewJob:
    return NewJob("k", {"n": 1}, 3, None, key, "h")


StoreFactory = Callable[[], Awaitable[PostgresStore]]


@pytest.fixture
async def open_store(postgres_url: str) -> AsyncIterator[StoreFactory]:
    """Open stores on one fresh database, as separate coordinators would; all are closed."""
    opened: list[PostgresStore] = []

    async def open_one() -> PostgresStore:
        store = PostgresStore(postgres_url)
        opened.append(store)
        await store.open()
        return store

    yield open_one
    await asyncio.gather(*(s.close() for s in opened))


async def terminate_backends(server: PgServer, database_url: str, query_like: str = "%") -> int:
    """Cut the server side of connections to the database, as a network failure would."""
    database = urllib.parse.urlparse(database_url).path.lstrip("/")
    admin = await asyncpg.connect(server.dsn)
    try:
        killed: int = await admin.fetchval(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = $1 AND pid <> pg_backend_pid() AND query LIKE $2",
            database,
            query_like,
        )
        return killed
    finally:
        await admin.close()


def waker() -> tuple[asyncio.Event, Callable[[], None]]:
    woken = asyncio.Event()
    return woken, woken.set


async def test_stores_opened_together_migrate_once(empty_postgres_url: str) -> None:
    """Concurrent starts on a database without the schema wait for one migrator instead
    of failing on half-made tables."""
    stores = [PostgresStore(empty_postgres_url) for _ in range(7)]
    try:
        await asyncio.gather(*(store.open() for store in stores[:6]))
        await stores[0].job_insert_many([new_job()])
        assert (await stores[5].counts_by_status())[JobStatus.QUEUED] == 1
        await stores[6].open()  # reopened
        assert (await stores[6].counts_by_status())[JobStatus.QUEUED] == 1
    finally:
        await asyncio.gather(*(store.close() for store in stores))


async def test_one_key_sent_to_two_stores_at_once_creates_one_job(
    open_store: StoreFactory,
) -> None:
    a, b = await open_store(), await open_store()
    keys = [f"key-{i}" for i in range(25)]
    results = await asyncio.gather(
        *(store.job_insert_many([new_job(key)]) for key in keys for store in (a, b, a, b))
    )
    created = [str(r[0].job.idempotency_key) for r in results if r[0].created]
    assert sorted(created) == sorted(keys)
    assert {r[0].job.id for r in results} == {r[0].job.id for r in results if r[0].created}
    assert (await a.counts_by_status())[JobStatus.QUEUED] == len(keys)


async def test_two_stores_lease_disjoint_jobs(open_store: StoreFactory) -> None:
    a, b = await open_store(), await open_store()
    ids = {i.job.id for i in await a.job_insert_many([new_job() for _ in range(300)])}

    async def lessee(store: PostgresStore, n: int) -> list[int]:
        got: list[int] = []
        while jobs := await store.job_lease(LeaseRequest(f"w{n}", 60, None, 2)):
            got += [j.id for j in jobs]
        return got

    runs = await asyncio.gather(*(lessee((a, b)[n % 2], n) for n in range(16)))
    taken = [job_id for run in runs for job_id in run]
    assert sorted(taken) == sorted(ids)


async def test_two_reapers_on_two_stores_expire_each_lease_once(
    open_store: StoreFactory,
) -> None:
    services = [JobService(await open_store()), JobService(await open_store())]
    store = services[0].store
    jobs = [i.job for i in await store.job_insert_many([new_job() for _ in range(150)])]
    for _ in range(3):
        assert len(await store.job_lease(LeaseRequest("w", 0, None, 1000))) == len(jobs)
        reaped = await asyncio.gather(*(s.reap() for s in services for _ in range(3)))
        assert sum(reaped) == len(jobs)
    totals = await store.counter_totals()
    assert (totals[("lease_expired", "k")], totals[("dead", "k")]) == (3 * len(jobs), len(jobs))
    for job in jobs:
        history = await store.attempts_list(job.id)
        assert [a.outcome for a in history] == [AttemptOutcome.EXPIRED] * 3
        tokens = [a.token for a in history]
        assert tokens == sorted(set(tokens))  # one sequence for every store: increasing
        stored = await store.job_get(job.id)
        assert stored is not None
        assert (stored.status, stored.attempts, stored.lease_token) == ("dead", 3, tokens[-1])


async def test_work_made_available_wakes_the_other_stores(open_store: StoreFactory) -> None:
    """Enqueue, release, expiry, retry and requeue each wake another coordinator."""
    listener, writer = await open_store(), await open_store()
    woken, wake = waker()
    listener.subscribe(wake)
    service = JobService(writer, backoff=BackoffPolicy(0, 0))

    async def wakes(change: Awaitable[Any]) -> Any:
        woken.clear()
        result = await change
        await asyncio.wait_for(woken.wait(), WAKE_TIMEOUT)
        return result

    async def lease(seconds: float = 60) -> int:
        (job,) = await service.lease("w", seconds)
        return job.lease_token

    job = (await wakes(service.enqueue(Enqueue("k", max_attempts=3)))).job
    await wakes(service.release(job.id, await lease()))
    await lease(seconds=0)
    await wakes(service.reap())
    await wakes(service.fail(job.id, await lease(), "try again"))
    await service.fail(job.id, await lease(), "fatal", retryable=False)
    await wakes(service.requeue(job.id))


async def test_a_long_poll_wakes_for_a_job_enqueued_through_another_store(
    open_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wake-up crosses coordinators: JobService subscribes its Wakeup to the store."""
    poller, producer = JobService(await open_store()), JobService(await open_store())
    poller.due.max_sleep_seconds = 3600  # only a wake-up helps, not the due timer's next look
    waiting, wait = asyncio.Event(), poller.wakeup.wait

    async def wait_and_say_so(waiter: Waiter, seconds: float) -> list[Job] | None:
        waiting.set()
        return await wait(waiter, seconds)

    monkeypatch.setattr(poller.wakeup, "wait", wait_and_say_so)
    lease = asyncio.create_task(poller.lease("w", 60, wait_seconds=60))
    await asyncio.wait_for(waiting.wait(), WAKE_TIMEOUT)
    job = (await producer.enqueue(Enqueue("k"))).job
    (leased,) = await asyncio.wait_for(lease, WAKE_TIMEOUT)
    assert leased.id == job.id


async def test_the_listen_connection_comes_back_after_a_loss(
    open_store: StoreFactory, pg_server: PgServer, postgres_url: str
) -> None:
    listener, writer = await open_store(), await open_store()
    woken, wake = waker()
    listener.subscribe(wake)
    writer.subscribe(lambda: None)
    assert await terminate_backends(pg_server, postgres_url, "LISTEN %") == 2
    # On reconnecting, the store wakes its subscribers: notifications may have been missed.
    await asyncio.wait_for(woken.wait(), WAKE_TIMEOUT)
    woken.clear()
    await writer.job_insert_many([new_job()])
    await asyncio.wait_for(woken.wait(), WAKE_TIMEOUT)


async def test_lost_connections_answer_unavailable_then_recover(
    open_store: StoreFactory, pg_server: PgServer, postgres_url: str
) -> None:
    store = await open_store()
    await store.job_insert_many([new_job()])
    await terminate_backends(pg_server, postgres_url)
    answers: list[object] = []
    for _ in range(20):  # one per pooled connection, and then some
        try:
            answers.append(await store.counts_by_status())
        except Unavailable as exc:
            answers.append(exc)
    assert answers[-1] == {**dict.fromkeys(JobStatus, 0), JobStatus.QUEUED: 1}


async def test_unreachable_database_is_unavailable() -> None:
    store = PostgresStore(f"postgresql://postgres@127.0.0.1:{free_port()}/none")
    with pytest.raises(Unavailable):
        await store.open()


async def test_a_value_postgresql_cannot_store_is_an_invalid_request(
    open_store: StoreFactory,
) -> None:
    """PostgreSQL text and jsonb refuse NUL characters; that is the request's fault."""
    service = JobService(await open_store())
    with pytest.raises(InvalidRequest):
        await service.enqueue(Enqueue("k", {"s": "a\u0000b"}))
    job = (await service.enqueue(Enqueue("k"))).job
    (leased,) = await service.lease("w", 60)
    with pytest.raises(InvalidRequest):
        await service.fail(job.id, leased.lease_token, "bad\x00byte")
    assert await service.get(job.id) == leased
