"""The worker's batches, seen from the coordinator's request log: leases, renewals and
reports of many jobs share requests, and each item is still fenced on its own."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from leasehold.client import Client, NewJob
from leasehold.model import Job, JobStatus
from leasehold.worker import LeasedJob, Registry, Worker, WorkerSettings
from tests.http import eventually
from tests.process import Coordinator, sqlite_coordinator
from tests.workers import COORDINATOR_ARGS


@pytest.fixture(scope="module")
def coordinator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Coordinator]:
    """At debug level the coordinator logs every request (``http.request``)."""
    args = (*COORDINATOR_ARGS, "--log-level", "debug")
    with sqlite_coordinator(tmp_path_factory.mktemp("batches"), args) as c:
        yield c


@pytest.fixture
async def client(coordinator: Coordinator) -> AsyncIterator[Client]:
    async with Client(coordinator.url) as c:
        yield c


def requests(coordinator: Coordinator, since: int = 0) -> Counter[str]:
    """Requests the coordinator answered, by "METHOD route" (e.g. "POST /lease",
    "POST /jobs/{job_id}/complete"), counting from log line ``since``."""
    counts: Counter[str] = Counter()
    for line in coordinator.logs().splitlines()[since:]:
        with contextlib.suppress(json.JSONDecodeError):
            event = json.loads(line)
            if event.get("event") == "http.request":
                counts[f"{event['method']} {event['route']}"] += 1
    return counts


def log_length(coordinator: Coordinator) -> int:
    return len(coordinator.logs().splitlines())


@contextlib.asynccontextmanager
async def running(worker: Worker) -> AsyncIterator[None]:
    task = asyncio.create_task(worker.run())
    try:
        yield
    finally:
        worker.stop()
        assert await asyncio.wait_for(task, 20) == 0


def settings(url: str, kind: str, **overrides: Any) -> WorkerSettings:
    return WorkerSettings(
        url=url, wait_seconds=0.5, worker_id="w-batch", kinds=(kind,), **overrides
    )


async def all_done(client: Client, ids: list[int], within: float = 30) -> list[Job]:
    async def check() -> list[Job] | None:
        jobs = [await client.get(i) for i in ids]
        finished = (JobStatus.COMPLETED, JobStatus.DEAD)
        return jobs if all(j.status in finished for j in jobs) else None

    done: list[Job] = await eventually(check, within=within, interval=0.05)
    return done


async def test_many_jobs_take_far_fewer_requests_than_three_each(
    coordinator: Coordinator, client: Client
) -> None:
    registry = Registry.of({"noop": lambda job: job.id})
    ids = [j.id for j in await client.enqueue_many([NewJob("noop", n) for n in range(600)])]
    since = log_length(coordinator)
    async with running(Worker(registry, settings(coordinator.url, "noop", concurrency=50))):
        jobs = await all_done(client, ids)
    assert [j.result for j in jobs] == ids
    assert len({j.lease_token for j in jobs}) == len(jobs)  # one lease each, tokens unique
    seen = requests(coordinator, since)
    worker_requests = seen["POST /lease"] + seen["POST /batch/complete"]
    # One at a time, the worker would have sent a lease and a complete for each job.
    assert worker_requests < len(ids) / 5, seen
    assert not seen["POST /jobs/{job_id}/complete"], seen


async def test_leases_are_never_more_than_the_free_slots(
    coordinator: Coordinator, client: Client
) -> None:
    """With 12 jobs and 3 slots, at most 3 handlers run at once, and no job was leased to
    sit in a buffer: its 0.6 s lease would have run out there (a second attempt)."""
    running_now = 0
    most = 0

    async def slow(job: LeasedJob) -> None:
        nonlocal running_now, most
        running_now += 1
        most = max(most, running_now)
        try:
            await asyncio.sleep(0.3)
        finally:
            running_now -= 1

    items = [NewJob("slots") for _ in range(12)]
    ids = [j.id for j in await client.enqueue_many(items)]
    worker = Worker(
        Registry.of({"slots": slow}),
        settings(coordinator.url, "slots", concurrency=3, lease_seconds=2.0),
    )
    async with running(worker):
        jobs = await all_done(client, ids)
    assert all((j.status, j.attempts) == (JobStatus.COMPLETED, 1) for j in jobs)
    assert most == 3


async def test_one_stale_report_in_a_batch_does_not_fail_the_others(
    coordinator: Coordinator, client: Client
) -> None:
    go = asyncio.Event()
    started: set[int] = set()

    async def wait_for_go(job: LeasedJob) -> int:
        started.add(job.id)
        await go.wait()
        return job.token

    ids = [j.id for j in await client.enqueue_many([NewJob("stale") for _ in range(5)])]
    worker = Worker(
        Registry.of({"stale": wait_for_go}),
        settings(coordinator.url, "stale", concurrency=5, lease_seconds=60),  # no renewals
    )
    async with running(worker):
        await eventually(lambda: _true(len(started) == 5))
        # An operator takes one job away: released under its token, leased again.
        victim = ids[2]
        first = (await client.get(victim)).lease_token
        await client.release(victim, first)
        taken = await client.lease("operator", kinds=["stale"])
        assert taken is not None
        assert taken.job.id == victim and taken.token > first
        since = log_length(coordinator)
        go.set()  # all five finish at once: their reports share one request
        others = await all_done(client, [i for i in ids if i != victim])
    assert [j.result for j in others] == [j.lease_token for j in others]  # each its own token
    held = await client.get(victim)
    assert (held.status, held.lease_owner, held.lease_token) == (
        JobStatus.RUNNING,
        "operator",
        taken.token,
    )
    seen = requests(coordinator, since)
    assert seen["POST /batch/complete"] == 1, seen


async def test_a_refused_renewal_in_a_batch_cancels_only_its_own_job(
    coordinator: Coordinator, client: Client
) -> None:
    go = asyncio.Event()
    started: set[int] = set()
    cancelled: set[int] = set()

    async def hold(job: LeasedJob) -> int:
        started.add(job.id)
        try:
            await go.wait()
        except asyncio.CancelledError:
            cancelled.add(job.id)
            raise
        return job.token

    ids = [j.id for j in await client.enqueue_many([NewJob("renew") for _ in range(4)])]
    worker = Worker(
        Registry.of({"renew": hold}),
        # Renewed every 0.8 s: a busy machine's late answer must not look like a refusal.
        settings(coordinator.url, "renew", concurrency=4, lease_seconds=2.4),
    )
    since = log_length(coordinator)
    async with running(worker):
        await eventually(lambda: _true(len(started) == 4))
        victim = ids[1]
        await client.release(victim, (await client.get(victim)).lease_token)
        assert await client.lease("operator", kinds=["renew"], lease_seconds=60) is not None
        await eventually(lambda: _true(bool(cancelled)))
        # The others keep their leases through several renewals before they finish.
        renewals = requests(coordinator, since)["POST /batch/renew"]
        await eventually(
            lambda: _true(requests(coordinator, since)["POST /batch/renew"] >= renewals + 3)
        )
        go.set()
        others = await all_done(client, [i for i in ids if i != victim])
    assert cancelled == {victim}
    assert all((j.status, j.result) == (JobStatus.COMPLETED, j.lease_token) for j in others)
    held = await client.get(victim)
    assert (held.status, held.lease_owner) == (JobStatus.RUNNING, "operator")
    seen = requests(coordinator, since)
    assert not seen["POST /jobs/{job_id}/renew"], seen


async def _true(value: bool) -> bool:
    return value
