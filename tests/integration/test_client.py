"""The client against a real coordinator, and against a tiny server that misbehaves."""

from __future__ import annotations

import asyncio
import random
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import aiohttp.web
import pytest

import leasehold
from leasehold.client import (
    Client,
    CompleteItem,
    FailItem,
    ItemOutcome,
    NewJob,
    RenewItem,
    RetryPolicy,
    SyncClient,
)
from leasehold.errors import (
    Conflict,
    Forbidden,
    IdempotencyConflict,
    InvalidRequest,
    InvalidTransition,
    JobNotFound,
    LeaseExpired,
    LeaseholdError,
    NotFound,
    PayloadTooLarge,
    ReportConflict,
    StaleToken,
    Unauthorized,
    Unavailable,
)
from leasehold.model import AttemptOutcome, JobStatus
from tests.process import Coordinator, free_port, sqlite_coordinator
from tests.scripted import job_answer, serving, status

QUICK = RetryPolicy(attempts=4, base_seconds=0.01, max_seconds=0.02)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Coordinator]:
    """One coordinator for the module (each test uses kinds of its own): starting one per
    test would be most of the module's run time."""
    with sqlite_coordinator(tmp_path_factory.mktemp("client")) as coordinator:
        yield coordinator


@pytest.fixture
async def client(shared: Coordinator) -> AsyncIterator[Client]:
    async with Client(shared.url, retry=QUICK) as c:
        yield c


async def test_a_job_goes_round_trip_with_typed_answers(client: Client) -> None:
    job = await client.enqueue("email", {"to": "a@example.com"}, max_attempts=3)
    assert (job.kind, job.status, job.payload, job.max_attempts) == (
        "email",
        JobStatus.QUEUED,
        {"to": "a@example.com"},
        3,
    )
    assert job.created_at.tzinfo is UTC
    lease = await client.lease("w1", lease_seconds=30, kinds=["email"])
    assert lease is not None
    assert (lease.job.id, lease.token, lease.job.lease_owner) == (
        job.id,
        lease.job.lease_token,
        "w1",
    )
    assert lease.token > 1_700_000_000 * 1_000_000  # above the time floor (DESIGN.md §4)
    assert lease.job.lease_expires_at is not None
    assert lease.job.lease_expires_at - datetime.now(UTC) > timedelta(seconds=25)
    renewed = await client.renew(job.id, lease.token, lease_seconds=60)
    assert renewed.lease_expires_at is not None
    assert renewed.lease_expires_at - datetime.now(UTC) > timedelta(seconds=55)
    done = await client.complete(job.id, lease.token, {"sent": True})
    assert (done.status, done.result) == (JobStatus.COMPLETED, {"sent": True})
    # A repeated report is answered as the first: that is what makes retrying it safe.
    assert (await client.complete(job.id, lease.token, {"sent": True})).result == {"sent": True}
    assert await client.get(job.id) == done
    (attempt,) = await client.attempts(job.id)
    assert (attempt.token, attempt.worker_id, attempt.outcome) == (
        lease.token,
        "w1",
        AttemptOutcome.COMPLETED,
    )


async def test_lease_waits_then_answers_none(client: Client) -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert await client.lease("w", wait_seconds=0.3, kinds=["nothing-here"]) is None
    assert loop.time() - started >= 0.25


async def test_list_pages_and_filters(client: Client) -> None:
    ids = [(await client.enqueue("pages", n)).id for n in range(5)]
    page = await client.list(kind="pages", limit=2)
    assert [j.id for j in page.jobs] == ids[:2]
    assert page.next_cursor is not None
    rest = await client.list(kind="pages", cursor=page.next_cursor, limit=10)
    assert [j.id for j in rest.jobs] == ids[2:]
    assert rest.next_cursor is None
    lease = await client.lease("w", kinds=["pages"])
    assert lease is not None
    queued = await client.list(kind="pages", status=JobStatus.QUEUED)
    assert [j.payload for j in queued.jobs] == [1, 2, 3, 4]


async def test_fail_dead_requeue_and_requeue_dead(client: Client) -> None:
    first = await client.enqueue("dead", max_attempts=1)
    second = await client.enqueue("dead", max_attempts=1)
    for job in (first, second):
        lease = await client.lease("w", kinds=["dead"])
        assert lease is not None
        dead = await client.fail(job.id, lease.token, "no", retryable=False)
        assert (dead.status, dead.last_error) == (JobStatus.DEAD, "no")
    assert (await client.requeue(first.id)).status == JobStatus.QUEUED
    with pytest.raises(InvalidTransition):
        await client.requeue(first.id)
    assert await client.requeue_dead(kind="dead", error_contains="no") == 1
    assert (await client.get(second.id)).status == JobStatus.QUEUED


async def test_stats_is_the_parsed_json(client: Client) -> None:
    await client.enqueue("counted")
    stats = await client.stats()
    assert stats["by_kind"]["counted"]["queued"] == 1


async def test_release_gives_the_job_back(client: Client) -> None:
    job = await client.enqueue("give-back")
    lease = await client.lease("w", kinds=["give-back"])
    assert lease is not None
    back = await client.release(job.id, lease.token)
    assert (back.status, back.attempts) == (JobStatus.QUEUED, 0)


async def test_errors_come_back_as_their_types(client: Client) -> None:
    job = await client.enqueue("errors", max_attempts=2)
    with pytest.raises(StaleToken):
        await client.complete(job.id, 0)
    lease = await client.lease("w", lease_seconds=0.2, kinds=["errors"])
    assert lease is not None
    with pytest.raises(StaleToken):
        await client.renew(job.id, lease.token + 1)
    with pytest.raises(JobNotFound):
        await client.get(10**9)
    with pytest.raises(JobNotFound):
        await client.complete(10**9, 1)
    await client.fail(job.id, lease.token, "first")
    with pytest.raises(ReportConflict):
        await client.complete(job.id, lease.token)
    with pytest.raises(LeaseExpired):
        await client.renew(job.id, lease.token)
    await client.enqueue("x", 1, idempotency_key="errors-k")
    with pytest.raises(IdempotencyConflict):
        await client.enqueue("x", 2, idempotency_key="errors-k")
    with pytest.raises(InvalidRequest):
        await client.lease("")
    with pytest.raises(InvalidRequest):  # refused before it is sent: NaN is not JSON
        await client.enqueue("x", float("nan"))
    with pytest.raises(PayloadTooLarge):
        await client.enqueue("x", "x" * 2_000_000)
    assert issubclass(StaleToken, Conflict)


async def test_enqueue_without_a_key_gets_one_so_a_retry_cannot_duplicate(client: Client) -> None:
    job = await client.enqueue("x", 1)
    assert job.idempotency_key is not None
    mine = await client.enqueue("x", 1, idempotency_key="auto-test-mine")
    again = await client.enqueue("x", 1, idempotency_key="auto-test-mine")
    assert (mine.idempotency_key, again.id) == ("auto-test-mine", mine.id)
    assert job.id != mine.id


async def test_lease_with_max_jobs_answers_a_list_each_with_its_token(client: Client) -> None:
    await client.enqueue_many([NewJob("lease-many", n) for n in range(5)])
    leases = await client.lease("w", kinds=["lease-many"], max_jobs=3)
    assert [lease.job.payload for lease in leases] == [0, 1, 2]
    assert all(lease.token == lease.job.lease_token for lease in leases)
    tokens = [lease.token for lease in leases]
    assert tokens == sorted(set(tokens))  # coordinator-wide: unique, in lease order
    assert len(await client.lease("w", kinds=["lease-many"], max_jobs=10)) == 2
    assert await client.lease("w", kinds=["lease-many"], max_jobs=10, wait_seconds=0.1) == []


async def test_batch_reports_answer_each_item_with_the_single_calls_error(client: Client) -> None:
    await client.enqueue_many([NewJob("reports", n) for n in range(3)])
    a, b, c = await client.lease("w", kinds=["reports"], max_jobs=3)
    renewed = await client.renew_many(
        [RenewItem(a.job.id, a.token, lease_seconds=60), RenewItem(b.job.id, b.token + 1)]
    )
    assert [r.outcome for r in renewed] == [ItemOutcome.OK, ItemOutcome.STALE]
    assert isinstance(renewed[1].error, StaleToken)
    with pytest.raises(StaleToken):
        renewed[1].job_or_raise()
    renewed_job = renewed[0].job
    assert renewed_job is not None
    assert renewed[0].job_or_raise().lease_expires_at == renewed_job.lease_expires_at
    done = await client.complete_many(
        [
            CompleteItem(a.job.id, a.token, "a"),
            CompleteItem(b.job.id, 0, "stale"),  # one stale item does not fail the others
            CompleteItem(10**9, 1),
            CompleteItem(c.job.id, c.token, {"c": True}),
        ]
    )
    assert [r.outcome for r in done] == [
        ItemOutcome.OK,
        ItemOutcome.STALE,
        ItemOutcome.NOT_FOUND,
        ItemOutcome.OK,
    ]
    assert isinstance(done[2].error, JobNotFound)
    assert [r.job.result for r in done if r.job] == ["a", {"c": True}]
    failed = await client.fail_many(
        [
            FailItem(b.job.id, b.token, "no", retryable=False),
            FailItem(a.job.id, a.token, "after complete"),
        ]
    )
    assert [r.outcome for r in failed] == [ItemOutcome.OK, ItemOutcome.CONFLICT]
    assert isinstance(failed[1].error, ReportConflict)
    assert failed[0].job is not None
    assert failed[0].job.status == JobStatus.DEAD
    with pytest.raises(InvalidRequest):
        await client.complete_many([CompleteItem(c.job.id, c.token, float("nan"))])


def test_sync_client_runs_the_same_calls(shared: Coordinator) -> None:
    with SyncClient(shared.url, retry=QUICK) as client:
        job = client.enqueue("sync", {"n": 1})
        lease = client.lease("w", kinds=["sync"])
        assert lease is not None
        assert client.complete(job.id, lease.token, 7).result == 7
        assert [j.id for j in client.list(kind="sync", status="completed").jobs] == [job.id]
        with pytest.raises(StaleToken):
            client.renew(job.id, 99)
        (second,) = client.enqueue_many([NewJob("sync", 2)])
        (lease,) = client.lease("w", kinds=["sync"], max_jobs=5)
        assert [r.ok for r in client.complete_many([CompleteItem(second.id, lease.token)])] == [
            True
        ]


async def test_5xx_is_retried_until_an_answer() -> None:
    async with (
        serving(status(503, "unavailable"), status(500), job_answer) as server,
        Client(server.url, retry=QUICK) as client,
    ):
        job = await client.get(1)
    assert job.id == 1
    assert len(server.requests) == 3


async def test_5xx_gives_up_after_the_policy_attempts() -> None:
    async with serving(status(502)) as server, Client(server.url, retry=QUICK) as client:
        with pytest.raises(Unavailable, match="502"):
            await client.get(1)
    assert len(server.requests) == QUICK.attempts


@pytest.mark.parametrize(
    ("code", "error", "expected"),
    [
        (401, None, Unauthorized),
        (403, "forbidden", Forbidden),
        (409, "stale_token", StaleToken),
        (409, None, Conflict),
        (404, "job_not_found", JobNotFound),
        # A route that is not there: a wrong URL, not a missing job (NotFound, not JobNotFound).
        (404, "not_found", NotFound),
        (413, None, PayloadTooLarge),
        (422, "validation_error", InvalidRequest),
        (429, None, LeaseholdError),
    ],
)
async def test_4xx_is_mapped_and_never_retried(
    code: int, error: str | None, expected: type[LeaseholdError]
) -> None:
    async with serving(status(code, error)) as server, Client(server.url, retry=QUICK) as client:
        with pytest.raises(expected) as raised:
            await client.complete(1, 1)
    assert type(raised.value) is expected
    assert len(server.requests) == 1


async def test_a_refused_connection_is_unavailable_after_retries() -> None:
    async with Client(f"http://127.0.0.1:{free_port()}", retry=QUICK) as client:
        with pytest.raises(Unavailable, match="POST /jobs/1/complete"):
            await client.complete(1, 1)


async def test_a_timeout_is_unavailable_and_retried() -> None:
    async def slow(request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        await asyncio.sleep(1)  # far past the client's timeout
        return aiohttp.web.Response(status=200)

    async with (
        serving(slow, job_answer) as server,
        Client(server.url, retry=QUICK, timeout_seconds=0.2) as client,
    ):
        assert (await client.get(1)).id == 1
    assert len(server.requests) == 2


async def test_an_answer_that_is_not_a_job_is_an_error_not_a_crash() -> None:
    async def not_a_job(request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        return aiohttp.web.json_response({"id": 1})

    async with serving(not_a_job) as server, Client(server.url) as client:
        with pytest.raises(LeaseholdError, match="not a job"):
            await client.get(1)


def test_the_client_and_worker_do_not_import_the_coordinator() -> None:
    """A producer or a worker should not pay for FastAPI and the store at start-up."""
    code = "import sys, leasehold, leasehold.worker; print('fastapi' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
    assert leasehold.Client is Client


async def test_bearer_token_is_sent() -> None:
    async with serving(job_answer) as server, Client(server.url, token="s3cret") as client:
        job = await client.enqueue("k")
    assert server.requests[0].headers["Authorization"] == "Bearer s3cret"
    assert job.idempotency_key == "Bearer s3cret"  # the tiny server echoes it back there


def test_retry_delays_grow_with_jitter_up_to_the_cap() -> None:
    policy = RetryPolicy(attempts=None, base_seconds=0.1, max_seconds=2.0)
    rng = random.Random(7)
    delays = [policy.delay(n, rng) for n in range(1, 12)]
    for n, delay in enumerate(delays, start=1):
        step = min(2.0, 0.1 * 2 ** (n - 1))
        assert step / 2 <= delay <= step
    assert policy.delay(10_000, rng) <= 2.0
    assert len(set(delays)) == len(delays)  # jittered, not in lockstep


def test_one_sync_client_serves_many_threads(shared: Coordinator) -> None:
    """A web server's threads share one SyncClient: each call takes a connection of its own
    from the pool, and every answer reaches the thread that asked."""
    with SyncClient(shared.url) as client, ThreadPoolExecutor(8) as pool:
        jobs = list(pool.map(lambda n: client.enqueue("threads", {"n": n}), range(80)))
    assert sorted(j.payload["n"] for j in jobs) == list(range(80))
    assert len({j.id for j in jobs}) == 80


class Closing:
    """A server on a raw socket that answers one request per connection and then closes it,
    without saying so: the first time after its answer, the second time on receiving the
    next request, unanswered. So a client's pooled connection is found closed while idle,
    then closed under its request (the keep-alive race)."""

    ANSWER = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n"
        b'{"ok":true}'
    )

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.closed = threading.Event()
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                conn.recv(65536)
                conn.sendall(self.ANSWER)
                if self.connections == 2:  # reads the next request, and hangs up on it
                    conn.recv(65536)
            self.closed.set()


def test_a_pooled_connection_the_coordinator_closed_is_replaced() -> None:
    server = Closing()
    with SyncClient(server.url, retry=RetryPolicy(attempts=1)) as client:
        assert client.stats() == {"ok": True}
        assert server.closed.wait(5)  # closed while idle in the pool: seen, and not used
        server.closed.clear()
        assert client.stats() == {"ok": True}
        assert client.stats() == {"ok": True}  # sent on it, then closed: sent once more
    server.sock.close()
    assert server.connections == 3
