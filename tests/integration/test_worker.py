"""The worker run in the test's own event loop, against a real coordinator process."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator, MutableMapping
from datetime import UTC, timedelta
from typing import Any

import pytest
import structlog

from leasehold.client import Client
from leasehold.model import Job, JobStatus
from leasehold.worker import LeasedJob, Registry, Worker, WorkerSettings
from leasehold.worker.lease_loop import run_worker
from tests.fixtures.handlers import registry as fixture_registry
from tests.http import eventually
from tests.process import Coordinator, free_port, sqlite_coordinator
from tests.scripted import serving, status
from tests.workers import COORDINATOR_ARGS

Logs = list[MutableMapping[str, Any]]


@pytest.fixture(scope="module")
def coordinator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Coordinator]:
    """One coordinator for the module: each test's worker leases only its own kinds."""
    with sqlite_coordinator(tmp_path_factory.mktemp("worker"), COORDINATOR_ARGS) as c:
        yield c


@pytest.fixture
async def client(coordinator: Coordinator) -> AsyncIterator[Client]:
    async with Client(coordinator.url) as c:
        yield c


@pytest.fixture
def logs() -> Iterator[Logs]:
    """Every log event, with the fields bound in context (job_id, worker_id, ...)."""
    capture = structlog.testing.LogCapture()
    old = structlog.get_config()
    structlog.configure(processors=[structlog.contextvars.merge_contextvars, capture])
    try:
        yield capture.entries
    finally:
        structlog.configure(**old)


def settings(url: str, *kinds: str, **overrides: Any) -> WorkerSettings:
    """Quick polls; only ``kinds``, so jobs other tests left behind are not touched."""
    return WorkerSettings(
        url=url, concurrency=2, wait_seconds=0.2, worker_id="w-test", kinds=kinds, **overrides
    )


@contextlib.asynccontextmanager
async def running(worker: Worker) -> AsyncIterator[asyncio.Task[int]]:
    task = asyncio.create_task(worker.run())
    try:
        yield task
    finally:
        worker.stop()
        assert await asyncio.wait_for(task, 20) == 0


async def finished(client: Client, job_id: int) -> Job:
    async def check() -> Job | None:
        job = await client.get(job_id)
        return job if job.status in (JobStatus.COMPLETED, JobStatus.DEAD) else None

    done: Job = await eventually(check, within=20)
    return done


async def test_result_is_reported_and_logs_name_the_job(
    coordinator: Coordinator, client: Client, logs: Logs
) -> None:
    job = await client.enqueue("work", {"sleep": 0})
    async with running(Worker(fixture_registry, settings(coordinator.url, job.kind))):
        done = await finished(client, job.id)
    assert (done.status, done.result, done.attempts) == (
        JobStatus.COMPLETED,
        {"job": job.id, "token": done.lease_token},  # the module's coordinator numbers all leases
        1,
    )
    names = [e["event"] for e in logs]
    assert names[0] == "worker.started"
    assert names[-1] == "worker.stopped"
    succeeded = next(e for e in logs if e["event"] == "job.succeeded")
    assert {k: succeeded[k] for k in ("job_id", "kind", "attempt", "token", "worker_id")} == {
        "job_id": job.id,
        "kind": "work",
        "attempt": 1,
        "token": done.lease_token,
        "worker_id": "w-test",
    }


async def test_an_exception_fails_the_job_with_its_traceback_until_dead(
    coordinator: Coordinator, client: Client
) -> None:
    job = await client.enqueue("boom", "x", max_attempts=2)
    async with running(Worker(fixture_registry, settings(coordinator.url, job.kind))):
        done = await finished(client, job.id)
    assert (done.status, done.attempts) == (JobStatus.DEAD, 2)
    assert done.last_error is not None
    assert done.last_error.startswith("Traceback")
    assert done.last_error.endswith("ValueError: boom x")


async def test_permanent_failure_is_not_retried(coordinator: Coordinator, client: Client) -> None:
    job = await client.enqueue("permanent", max_attempts=5)
    async with running(Worker(fixture_registry, settings(coordinator.url, job.kind))):
        done = await finished(client, job.id)
    assert (done.status, done.attempts, done.last_error) == (
        JobStatus.DEAD,
        1,
        "PermanentFailure: this input can never work",
    )


async def test_retry_asks_for_its_delay(coordinator: Coordinator, client: Client) -> None:
    # 0.7 s: under the test coordinator's 1 s cap on delays, and far over its 0.05 s backoff.
    job = await client.enqueue("retry-later", 0.7)
    async with running(Worker(fixture_registry, settings(coordinator.url, job.kind))):

        async def failed_once() -> Job | None:
            now = await client.get(job.id)
            return now if now.last_error else None

        after: Job = await eventually(failed_once)
    assert (after.status, after.attempts, after.last_error) == (
        JobStatus.QUEUED,
        1,
        "Retry: not yet",
    )
    (attempt,) = await client.attempts(job.id)
    assert attempt.finished_at is not None
    assert after.run_after - attempt.finished_at == timedelta(seconds=0.7)


async def test_a_kind_without_handler_is_failed_not_dropped(
    coordinator: Coordinator, client: Client, logs: Logs
) -> None:
    job = await client.enqueue("orphan", max_attempts=1)
    worker = Worker(fixture_registry, settings(coordinator.url, "orphan"))
    async with running(worker):
        done = await finished(client, job.id)
    assert done.status == JobStatus.DEAD
    assert done.last_error is not None
    assert "no handler for kind 'orphan'" in done.last_error
    assert any(e["event"] == "worker.kinds_without_handler" for e in logs)


async def test_a_result_that_is_not_json_fails_the_job_for_good(
    coordinator: Coordinator, client: Client
) -> None:
    job = await client.enqueue("not-json", max_attempts=3)
    async with running(Worker(fixture_registry, settings(coordinator.url, job.kind))):
        done = await finished(client, job.id)
    assert (done.status, done.attempts) == (JobStatus.DEAD, 1)
    assert done.last_error is not None
    assert "not JSON" in done.last_error


@pytest.mark.parametrize("kind", ["work", "work-sync"])
async def test_a_handler_longer_than_its_lease_keeps_it_by_renewing(
    coordinator: Coordinator, client: Client, kind: str
) -> None:
    # Twice the lease, renewed every 0.5 s: room for a busy machine's late answers.
    job = await client.enqueue(kind, {"sleep": 3.0})
    worker = Worker(fixture_registry, settings(coordinator.url, kind, lease_seconds=1.5))
    async with running(worker):
        done = await finished(client, job.id)
    assert (done.status, done.attempts) == (JobStatus.COMPLETED, 1)
    (attempt,) = await client.attempts(job.id)
    assert attempt.token == done.lease_token  # one lease, renewed: its token throughout
    assert attempt.outcome == "completed"


async def test_unreachable_coordinator_is_retried_and_stop_is_prompt(logs: Logs) -> None:
    worker = Worker(fixture_registry, settings(f"http://127.0.0.1:{free_port()}", "work"))
    task = asyncio.create_task(worker.run())

    async def backed_off() -> bool:
        return sum(bool(e["event"] == "coordinator.unreachable") for e in logs) >= 4

    await eventually(backed_off, within=10)
    worker.stop()
    assert await asyncio.wait_for(task, 5) == 0
    delays = [e["retry_in"] for e in logs if e["event"] == "coordinator.unreachable"]
    assert all(d > 0 for d in delays)


async def test_refused_credentials_stop_the_worker_with_status_1(logs: Logs) -> None:
    async with serving(status(401, "unauthorized", "bad token")) as server:
        worker = Worker(fixture_registry, settings(server.url, "work", token="nope"))
        assert await asyncio.wait_for(worker.run(), 10) == 1
    assert server.requests[0].headers["Authorization"] == "Bearer nope"
    fatal = next(e for e in logs if e["event"] == "worker.fatal")
    assert fatal["code"] == "unauthorized"


async def test_run_worker_with_a_plain_dict_of_handlers(
    coordinator: Coordinator, client: Client
) -> None:
    seen: list[LeasedJob] = []

    def remember(job: LeasedJob) -> str:
        seen.append(job)
        return "ok"

    job = await client.enqueue("plain", [1, 2])
    registry = Registry.of({"plain": remember})
    task = asyncio.create_task(run_worker(registry, settings(coordinator.url, job.kind)))
    done = await finished(client, job.id)
    task.cancel()  # run_worker is meant for a process's main task; here it is just torn down
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert done.result == "ok"
    (leased,) = seen
    assert (leased.id, leased.kind, leased.payload, leased.attempt, leased.token) == (
        job.id,
        "plain",
        [1, 2],
        1,
        done.lease_token,  # tokens are coordinator-wide, and this module's coordinator is shared
    )
    assert leased.lease_expires_at.tzinfo is UTC


async def test_a_handler_past_its_time_limit_is_cancelled_and_failed_as_timeout(
    coordinator: Coordinator, client: Client
) -> None:
    """An async handler running past the job's timeout_seconds (or its handler's default)
    is cancelled; the attempt fails, retryable, with a 'timeout' error in the history."""
    registry = Registry()
    stopped = asyncio.Event()

    @registry.handler("slow-limited", timeout_seconds=0.3)
    async def slow(job: LeasedJob) -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            stopped.set()
            raise

    own = await client.enqueue("slow-limited", max_attempts=1, timeout_seconds=0.2)
    default = await client.enqueue("slow-limited", max_attempts=2)
    async with running(Worker(registry, settings(coordinator.url, "slow-limited"))):
        first = await finished(client, own.id)
        second = await finished(client, default.id)
    assert stopped.is_set()
    assert first.status is JobStatus.DEAD
    assert first.last_error == "timeout: the handler ran longer than its time limit of 0.2 s"
    assert second.attempts == 2
    assert second.last_error == "timeout: the handler ran longer than its time limit of 0.3 s"
    (attempt,) = await client.attempts(own.id)
    assert attempt.outcome.value == "failed" and attempt.error == first.last_error


async def test_a_running_worker_is_listed_with_what_it_serves(
    coordinator: Coordinator, client: Client
) -> None:
    async def beating() -> list[dict[str, Any]] | None:
        workers = await client.workers()
        found = [w for w in workers if w["worker_id"] == "w-test" and w["kinds"] == ["beat"]]
        return found or None

    async with running(Worker(fixture_registry, settings(coordinator.url, "beat"))):
        (seen,) = await eventually(beating, within=10)
    assert seen["live"] and seen["concurrency"] == 2 and seen["pid"] > 0
