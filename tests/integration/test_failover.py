"""Clients given several coordinator URLs: a call that gets no answer from one (nothing
listens, a 502/503/504 from a proxy, a timeout) moves on to the next, with both clients
and the worker; an answer is never moved.

One coordinator served in the test process stands for the healthy one; the unhealthy
ones are a closed port, a scripted proxy and a socket that never answers. Two real
coordinators on one PostgreSQL, one of them killed, are ``test_failover_processes.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from leasehold.client import Client, RetryPolicy, SyncClient
from leasehold.errors import JobNotFound
from leasehold.model import JobStatus
from leasehold.worker import Registry, Worker, WorkerSettings
from tests.inproc import InProcessCoordinator
from tests.process import free_port
from tests.scripted import serving, status

ONE_ROUND = RetryPolicy(attempts=1)


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    """SQLite alone: what is tested is the client, not the store."""
    return f"sqlite:///{tmp_path / 'leasehold.db'}"


def dead_url() -> str:
    """A port nothing listens on: the connection is refused."""
    return f"http://127.0.0.1:{free_port()}"


@contextlib.contextmanager
def silent_url() -> Iterator[str]:
    """A socket that accepts connections and never answers: every try times out."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        yield f"http://127.0.0.1:{silent.getsockname()[1]}"


Opened = Callable[..., contextlib.AbstractAsyncContextManager[Any]]


@pytest.fixture(params=["Client", "SyncClient"])
def opened(request: pytest.FixtureRequest) -> Opened:
    """Either client, awaited alike (the blocking one in a thread, as the coordinator runs
    on this loop): the policy is written once, and each must follow it."""

    @contextlib.asynccontextmanager
    async def open_client(urls: list[str], **options: Any) -> AsyncIterator[Any]:
        if request.param == "Client":
            async with Client(urls, **options) as client:
                yield client
            return
        blocking = SyncClient(urls, **options)

        class Threaded:
            url = property(lambda self: blocking.url)

            def __getattr__(self, name: str) -> Callable[..., Any]:
                method = getattr(blocking, name)

                async def call(*args: Any, **kwargs: Any) -> Any:
                    return await asyncio.to_thread(method, *args, **kwargs)

                return call

        try:
            yield Threaded()
        finally:
            blocking.close()

    return open_client


async def test_a_call_moves_past_a_coordinator_that_is_down(
    inproc: InProcessCoordinator, opened: Opened
) -> None:
    """The first URL refuses connections: the call is answered by the second, with no
    retry spent (one round), and the client keeps asking the second."""
    async with opened([dead_url(), inproc.url], retry=ONE_ROUND) as client:
        job = await client.enqueue("failover.a", {"n": 1})
        assert job.status is JobStatus.QUEUED
        assert client.url == inproc.url
        assert (await client.get(job.id)).id == job.id


@pytest.mark.parametrize("code", [502, 503, 504])
async def test_a_proxy_without_a_coordinator_behind_it_is_moved_past(
    inproc: InProcessCoordinator, opened: Opened, code: int
) -> None:
    async with (
        serving(status(code)) as proxy,
        opened([proxy.url, inproc.url], retry=ONE_ROUND) as client,
    ):
        job = await client.enqueue("failover.b")
        assert client.url == inproc.url
        assert len(proxy.requests) == 1
        assert (await client.get(job.id)).kind == "failover.b"
        assert len(proxy.requests) == 1  # it rests: not asked first again


async def test_a_coordinator_that_does_not_answer_in_time_is_moved_past(
    inproc: InProcessCoordinator, opened: Opened
) -> None:
    """A try that times out moves on: the call costs one timeout, not a failure."""
    with silent_url() as silent:
        # A second: the coordinator in this process answers well within it, even on a
        # machine busy with other work.
        async with opened([silent, inproc.url], retry=ONE_ROUND, timeout_seconds=1.0) as client:
            started = time.monotonic()
            await client.enqueue("failover.c")
            assert 1.0 <= time.monotonic() - started < 10
            assert client.url == inproc.url


async def test_an_answer_is_not_moved(inproc: InProcessCoordinator, opened: Opened) -> None:
    """A 404 from the first coordinator is the answer; the second is never asked."""
    async with (
        serving(status(404, "job_not_found", "no such job")) as first,
        opened([first.url, inproc.url]) as client,
    ):
        with pytest.raises(JobNotFound):
            await client.get(1)
        assert client.url == first.url


async def test_a_worker_leases_runs_and_reports_through_the_coordinator_that_answers(
    inproc: InProcessCoordinator,
) -> None:
    """The worker's first coordinator is down: it leases, renews and completes through
    the second, without backing off."""
    registry = Registry()

    @registry.handler("failover.w")
    def handle(job: Any) -> dict[str, int]:
        return {"n": job.payload["n"]}

    urls = f"{dead_url()},{inproc.url}"
    settings = WorkerSettings(url=urls, concurrency=2, wait_seconds=0.2, worker_id="w-failover")
    worker = Worker(registry, settings)
    assert worker.context.url == urls
    async with Client(inproc.url) as client:
        jobs = [await client.enqueue("failover.w", {"n": n}) for n in range(3)]
        running = asyncio.create_task(worker.run())
        try:
            for job in jobs:
                done = await client.wait(job.id, timeout=10)
                assert (done.status, done.result) == (JobStatus.COMPLETED, job.payload)
        finally:
            worker.stop()
            assert await asyncio.wait_for(running, 10) == 0


class HangingProxy:
    """A TCP proxy to the coordinator that swallows the next ``hang`` answers: the request
    gets through and is applied, and its connection stays open with no answer, as when a
    proxy or a stalled connection holds it back."""

    def __init__(self, target: str) -> None:
        self.target_port = int(target.rsplit(":", 1)[1])
        self.hang = 0
        self.swallowed = 0
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def __aenter__(self) -> HangingProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for connection in self._connections:
            connection.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        swallowing = False

        async def pipe(
            source: asyncio.StreamReader, sink: asyncio.StreamWriter, back: bool
        ) -> None:
            nonlocal swallowing
            with contextlib.suppress(ConnectionError):
                while chunk := await source.read(65536):
                    if back and (swallowing or self.hang > 0):
                        if not swallowing:
                            self.hang, self.swallowed, swallowing = (
                                self.hang - 1,
                                self.swallowed + 1,
                                True,
                            )
                        continue
                    sink.write(chunk)
                    await sink.drain()

        try:
            await asyncio.gather(pipe(reader, up_writer, False), pipe(up_reader, writer, True))
        finally:
            writer.transport.abort()
            up_writer.transport.abort()


async def test_a_lease_answer_that_hangs_is_recovered_before_a_short_lease_runs_out(
    inproc: InProcessCoordinator,
) -> None:
    """The answer carrying a 2 s lease never arrives: the client gives the try at most half
    the lease (a quarter of wait, a quarter of answer), asks again under the same request id
    and gets the same lease, with its attempt not spent."""
    async with Client(inproc.url) as direct:
        job = await direct.enqueue("failover.hang")
        async with HangingProxy(inproc.url) as proxy, Client(proxy.url) as client:
            proxy.hang = 1
            started = time.monotonic()
            leases = await client.lease(
                "w-hang", kinds=["failover.hang"], lease_seconds=2, wait_seconds=10, max_jobs=1
            )
            elapsed = time.monotonic() - started
        assert proxy.swallowed == 1
        (lease,) = leases
        # The first lease, not a new one: one attempt, under the token handed back.
        assert lease.job.id == job.id and lease.job.attempts == 1
        assert [a.token for a in await direct.attempts(job.id)] == [lease.token]
        assert 1.0 <= elapsed < 2.0
        done = await direct.complete(job.id, lease.token, "done")
        assert (done.status, done.attempts) == (JobStatus.COMPLETED, 1)


async def test_a_long_poll_waits_at_most_a_quarter_of_its_lease(
    inproc: InProcessCoordinator,
) -> None:
    """Asked to wait 10 s for a 1 s lease, the coordinator answers 204 after 0.25 s."""
    async with aiohttp.ClientSession() as session:
        started = time.monotonic()
        async with session.post(
            inproc.url + "/lease",
            json={
                "worker_id": "w-cap",
                "kinds": ["failover.none"],
                "lease_seconds": 1,
                "wait_seconds": 10,
            },
        ) as answer:
            assert answer.status == 204
        assert 0.2 <= time.monotonic() - started < 2
