"""``Client.enqueue_many`` against a real coordinator, and a SyncClient call interrupted."""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import AsyncIterator, Iterator

import pytest

from leasehold.client import MAX_BATCH, Client, NewJob, RetryPolicy, SyncClient
from leasehold.client._blocking import SocketTransport
from leasehold.errors import IdempotencyConflict, InvalidRequest
from leasehold.model import JobStatus
from tests.process import Coordinator, sqlite_coordinator

QUICK = RetryPolicy(attempts=2, base_seconds=0.01, max_seconds=0.02)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Coordinator]:
    with sqlite_coordinator(tmp_path_factory.mktemp("batch")) as coordinator:
        yield coordinator


@pytest.fixture
async def client(shared: Coordinator) -> AsyncIterator[Client]:
    async with Client(shared.url, retry=QUICK) as c:
        yield c


async def test_enqueue_many_adds_every_job_in_order(client: Client) -> None:
    jobs = [NewJob("batch-a", {"n": n}, max_attempts=n + 1) for n in range(3)]
    added = await client.enqueue_many(jobs)
    assert [(j.kind, j.payload, j.max_attempts, j.status) for j in added] == [
        ("batch-a", {"n": n}, n + 1, JobStatus.QUEUED) for n in range(3)
    ]
    assert [j.id for j in added] == sorted(j.id for j in added)
    # Keys were made up for each job, so a retried batch could not add them twice.
    assert all(j.idempotency_key and j.idempotency_key.startswith("auto-") for j in added)
    page = await client.list(kind="batch-a")
    assert [j.id for j in page.jobs] == [j.id for j in added]


async def test_enqueue_many_with_used_keys_returns_the_stored_jobs(client: Client) -> None:
    jobs = [NewJob("batch-b", n, idempotency_key=f"batch-b-{n}") for n in range(2)]
    first = await client.enqueue_many(jobs)
    again = await client.enqueue_many(jobs)
    assert again == first
    assert len((await client.list(kind="batch-b")).jobs) == 2


async def test_enqueue_many_is_all_or_nothing(client: Client) -> None:
    await client.enqueue("batch-c", 1, idempotency_key="batch-c-used")
    clash = [NewJob("batch-c", 2), NewJob("batch-c", 99, idempotency_key="batch-c-used")]
    with pytest.raises(IdempotencyConflict):
        await client.enqueue_many(clash)
    assert [j.payload for j in (await client.list(kind="batch-c")).jobs] == [1]


async def test_enqueue_many_over_the_limit_is_refused(client: Client) -> None:
    with pytest.raises(InvalidRequest):
        await client.enqueue_many([NewJob("batch-d")] * (MAX_BATCH + 1))
    assert (await client.list(kind="batch-d")).jobs == []


def test_sync_client_enqueue_many(shared: Coordinator) -> None:
    with SyncClient(shared.url) as client:
        (job,) = client.enqueue_many([NewJob("batch-e", {"sync": True})])
        assert client.get(job.id).payload == {"sync": True}


def test_an_interrupted_sync_call_leaves_no_half_read_connection() -> None:
    """Ctrl+C during a blocking call ends it, and the connection it was reading is closed,
    never given back to the pool with an answer still to come."""
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        client = SyncClient(url, timeout_seconds=30)
        # A real SIGINT to the main thread once the request waits for its answer.
        main = threading.main_thread().ident
        assert main is not None
        # As at a terminal, even if the tests were started in the background with SIGINT
        # ignored.
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT)).start()
            with pytest.raises(KeyboardInterrupt):
                client.stats()
        finally:
            signal.signal(signal.SIGINT, previous)
        transport = client._transport
        assert isinstance(transport, SocketTransport)
        assert not any(transport._idle.values())
        client.close()
