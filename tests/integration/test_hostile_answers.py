"""Clients bound what they read and refuse what they did not ask for.

A scripted server stands in for a coordinator that misbehaves (or a proxy in front of one):
a 200 that is an HTML page, JSON nested past what a parser takes, an endless answer, more
leases than asked for, a job leased twice in one answer, a batch answered for other jobs.
The client refuses each with an error of its own, and the worker logs it, backs off and
leases again, rather than exiting.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator, MutableMapping
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp.web
import pytest
import structlog
from typer.testing import CliRunner

from leasehold.cli import app
from leasehold.client import Client, RenewItem, RetryPolicy, SyncClient
from leasehold.client import _sync as sync_module
from leasehold.errors import LeaseholdError, Unavailable
from leasehold.worker import Registry, lease_loop
from leasehold.worker.lease_loop import Worker
from leasehold.worker.settings import WorkerSettings
from tests.http import eventually
from tests.scripted import Answer, serving

ONCE = RetryPolicy(attempts=1)
MiB = 1024 * 1024


def leased_job(job_id: int) -> dict[str, Any]:
    now = datetime.now(UTC)
    return {
        "id": job_id,
        "kind": "k",
        "payload": None,
        "status": "running",
        "attempts": 1,
        "max_attempts": 5,
        "run_after": now.isoformat(),
        "created_at": now.isoformat(),
        "lease_owner": "w",
        "lease_expires_at": (now + timedelta(seconds=30)).isoformat(),
        "lease_token": job_id,
        "idempotency_key": None,
        "result": None,
        "last_error": None,
        "leased_at": now.isoformat(),
        "finished_at": None,
    }


def lease_of(job_id: int) -> dict[str, Any]:
    return {"job": leased_job(job_id), "token": job_id, "lease_seconds": 30.0}


def json_answer(body: Any) -> Answer:
    async def answer(request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        return aiohttp.web.json_response(body)

    return answer


def text_answer(text: str, content_type: str = "text/html") -> Answer:
    async def answer(request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        return aiohttp.web.Response(text=text, content_type=content_type)

    return answer


class Threaded:
    """A ``SyncClient`` called from a test's event loop: each call in a thread, as the
    scripted server answers on this loop."""

    def __init__(self, client: SyncClient) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._client, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(method, *args, **kwargs)

        return call


Opener = Callable[..., contextlib.AbstractAsyncContextManager[Any]]


@pytest.fixture(params=["Client", "SyncClient"])
def opened(request: pytest.FixtureRequest) -> Opener:
    """Either client, with the same arguments, awaited alike: the bounds are each
    transport's own, the refusals the calls' (written once)."""

    @contextlib.asynccontextmanager
    async def open_client(url: str, **options: Any) -> AsyncIterator[Any]:
        if request.param == "Client":
            async with Client(url, **options) as client:
                yield client
        else:
            with SyncClient(url, **options) as blocking:
                yield Threaded(blocking)

    return open_client


PROXY_PAGE = text_answer("<html><body>Sign in to the network</body></html>")
TOO_DEEP = text_answer("[" * 2000 + "]" * 2000, "application/json")


class Endless:
    """An answer without a Content-Length that never ends (up to a cap, so that a test
    cannot hang): how many bytes it got out before the client stopped reading."""

    CAP = 256 * MiB

    def __init__(self) -> None:
        self.sent = 0

    async def __call__(self, request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        response = aiohttp.web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        chunk = b"[" + b"0," * (MiB // 2)
        with contextlib.suppress(ConnectionError):
            while self.sent < self.CAP:
                await response.write(chunk)
                self.sent += len(chunk)
        return response


async def test_a_2xx_answer_that_is_not_json_is_unavailable(opened: Opener) -> None:
    """A proxy's page with status 200 (a captive portal, a misrouted request)."""
    async with serving(PROXY_PAGE) as server, opened(server.url, retry=ONCE) as client:
        with pytest.raises(Unavailable, match=r"GET /stats: the answer \(200, text/html\) is not"):
            await client.stats()


async def test_an_answer_nested_past_what_the_parser_takes_is_unavailable(opened: Opener) -> None:
    async with serving(TOO_DEEP) as server, opened(server.url, retry=ONCE) as client:
        with pytest.raises(Unavailable, match="not JSON"):
            await client.stats()


async def test_an_answer_declared_over_the_bound_is_refused(opened: Opener) -> None:
    big = json_answer({"by_status": {}, "padding": "x" * (2 * MiB)})
    async with (
        serving(big) as server,
        opened(server.url, retry=ONCE, max_read_bytes=MiB) as client,
    ):
        with pytest.raises(Unavailable, match=f"over the {MiB} bytes this client reads"):
            await client.stats()
        # The connection is not reused for the next call: it still had the rest to read.
        with pytest.raises(Unavailable, match="over the"):
            await client.stats()


async def test_an_endless_answer_is_read_no_further_than_the_bound(opened: Opener) -> None:
    endless = Endless()
    async with (
        serving(endless) as server,
        opened(server.url, retry=ONCE, max_read_bytes=4 * MiB) as client,
    ):
        with pytest.raises(Unavailable, match="over the"):
            await client.stats()
    assert endless.sent < Endless.CAP  # it stopped when the client hung up


async def test_leasehold_stats_stops_reading_a_huge_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``leasehold stats`` grew to gigabytes reading such an answer; it reads the client's
    bound (made small here, so that the test is quick) and says so, exit 3."""
    monkeypatch.setattr(sync_module, "MAX_READ_BYTES", 4 * MiB)
    endless = Endless()
    env = {"LEASEHOLD_TOKEN": "", "LEASEHOLD_URL": ""}
    async with serving(endless) as server:
        args = ["stats", "--url", server.url]
        result = await asyncio.to_thread(CliRunner().invoke, app, args, env=env)
    assert result.exit_code == 3, result.output
    assert "over the 4194304 bytes this client reads" in result.stderr
    assert endless.sent < Endless.CAP


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"leases": [lease_of(n) for n in range(1, 5001)]}, "5000 leases to a request for at"),
        ({"leases": [lease_of(1), lease_of(1)]}, "the same job twice"),
        ({"leases": [{**lease_of(1), "token": True}]}, "no valid token"),
        ({"leases": [{**lease_of(1), "job": {**leased_job(1), "leased_at": None}}]}, "lease t"),
        ({"leases": {"job": leased_job(1)}}, "not a lease answer"),
        ([lease_of(1)], "not a lease answer"),
    ],
)
async def test_a_lease_answer_not_asked_for_is_refused_whole(
    opened: Opener, body: Any, problem: str
) -> None:
    async with serving(json_answer(body)) as server, opened(server.url, retry=ONCE) as client:
        with pytest.raises(LeaseholdError, match=problem):
            await client.lease("w", max_jobs=4)


async def test_a_single_lease_answer_must_be_a_lease(opened: Opener) -> None:
    answer = json_answer({**lease_of(1), "token": 0})
    async with serving(answer) as server, opened(server.url, retry=ONCE) as client:
        with pytest.raises(LeaseholdError, match="no valid token"):
            await client.lease("w")


async def test_a_batch_answered_for_other_jobs_is_refused(opened: Opener) -> None:
    ok = {"outcome": "ok", "verdict": "ok", "error": None, "message": None}
    answer = json_answer({"results": [{**ok, "id": 2, "job": leased_job(2)}]})
    async with serving(answer) as server, opened(server.url, retry=ONCE) as client:
        with pytest.raises(LeaseholdError, match="for job 2 where job 1 was sent"):
            await client.renew_many([RenewItem(1, 1)])


# -- the worker ------------------------------------------------------------------------------

# What a hostile coordinator answers the worker's lease polls, in turn.
BAD_LEASE_ANSWERS = [
    PROXY_PAGE,
    TOO_DEEP,
    json_answer({"leases": [lease_of(1), lease_of(1)]}),
    json_answer({"leases": [lease_of(n) for n in range(1, 5001)]}),
    json_answer([1, 2]),
]


class HostileCoordinator:
    def __init__(self) -> None:
        self.polls = 0

    async def __call__(self, request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        if request.path == "/workers/heartbeat":
            return aiohttp.web.json_response({})
        assert request.path == "/lease", request.path  # it leases nothing, so reports nothing
        answer = BAD_LEASE_ANSWERS[self.polls % len(BAD_LEASE_ANSWERS)]
        self.polls += 1
        return await answer(request)


@pytest.fixture
def logs() -> Iterator[list[MutableMapping[str, Any]]]:
    capture = structlog.testing.LogCapture()
    old = structlog.get_config()
    structlog.configure(processors=[structlog.contextvars.merge_contextvars, capture])
    try:
        yield capture.entries
    finally:
        structlog.configure(**old)


async def test_the_worker_backs_off_from_answers_it_refuses_and_runs_nothing(
    monkeypatch: pytest.MonkeyPatch, logs: list[MutableMapping[str, Any]]
) -> None:
    """Not JSON, too deep, a job twice, 5,000 leases for 4 slots, not a lease answer: each
    is logged and waited out (a quick backoff here), no handler runs, and the worker goes on
    until it is stopped, then exits 0. It exited 1 at each of them, or ran 5,000 jobs."""
    monkeypatch.setattr(lease_loop, "UNREACHABLE_BACKOFF", RetryPolicy(None, 0.002, 0.01))
    registry = Registry()
    ran: list[int] = []

    @registry.handler("k")
    def handle(job: Any) -> None:
        ran.append(job.id)

    coordinator = HostileCoordinator()
    async with serving(coordinator) as server:
        settings = WorkerSettings(url=server.url, concurrency=4, worker_id="w", wait_seconds=0)
        worker = Worker(registry, settings)
        running = asyncio.create_task(worker.run())
        rounds = 2 * len(BAD_LEASE_ANSWERS)

        async def polled_twice_through() -> bool:
            return coordinator.polls >= rounds

        await eventually(polled_twice_through, within=20)
        assert not running.done()
        worker.stop()
        assert await asyncio.wait_for(running, 20) == 0
    assert ran == []
    events = [e["event"] for e in logs]
    assert "worker.fatal" not in events
    assert events.count("coordinator.unreachable") >= 4  # the page and the deep JSON, twice
    assert events.count("lease.refused") >= 6
    refused = {e["error"] for e in logs if e["event"] == "lease.refused"}
    assert any("5000 leases" in error for error in refused), refused
