"""Typed tasks end to end: enqueue, a worker in the test's loop, the result; hooks, context."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from leasehold import (
    Client,
    JobFailed,
    SyncClient,
    WorkerContext,
    current_context,
    current_job,
    task,
)
from leasehold.worker import Registry, Worker, WorkerSettings
from tests.process import Coordinator, sqlite_coordinator
from tests.workers import COORDINATOR_ARGS

WITHIN = 20.0


class Order(BaseModel):
    number: int
    lines: list[str]


@task(kind="t-total", max_attempts=2)
async def total(order: Order) -> int:
    price: int = current_context().state["unit_price"]
    return len(order.lines) * price


@task(kind="t-greet")
def greet(name: str, times: int = 1) -> dict[str, Any]:
    job = current_job()
    return {
        "text": " ".join([f"hello {name}"] * times),
        "attempt": job.attempt,
        "thread": threading.current_thread().name,
        "worker": current_context().worker_id,
    }


def make_registry(calls: list[str]) -> Registry:
    registry = Registry()
    registry.register(total)
    registry.register(greet)

    @registry.on_startup
    async def open_prices(ctx: WorkerContext) -> None:
        calls.append("startup-async")
        ctx.state["unit_price"] = 5

    @registry.on_startup
    def open_sync(ctx: WorkerContext) -> None:
        calls.append(f"startup-sync {ctx.worker_id}")

    @registry.on_shutdown
    async def close_prices(ctx: WorkerContext) -> None:
        calls.append(f"shutdown-async {ctx.state.pop('unit_price')}")

    @registry.on_shutdown
    def close_sync(ctx: WorkerContext) -> None:
        calls.append("shutdown-sync")

    return registry


@pytest.fixture(scope="module")
def coordinator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Coordinator]:
    with sqlite_coordinator(tmp_path_factory.mktemp("tasks"), COORDINATOR_ARGS) as c:
        yield c


def settings(url: str) -> WorkerSettings:
    return WorkerSettings(url=url, concurrency=2, wait_seconds=0.2, worker_id="w-tasks")


@contextlib.asynccontextmanager
async def running(registry: Registry, url: str) -> AsyncIterator[Worker]:
    worker = Worker(registry, settings(url))
    run = asyncio.create_task(worker.run())
    try:
        yield worker
    finally:
        worker.stop()
        assert await asyncio.wait_for(run, WITHIN) == 0


async def test_a_typed_task_runs_with_validated_arguments_and_hooks(
    coordinator: Coordinator,
) -> None:
    calls: list[str] = []
    async with Client(coordinator.url) as client, running(make_registry(calls), coordinator.url):
        order = Order(number=7, lines=["a", "b", "c"])
        handle = await total.enqueue(client, order)
        assert handle.job.payload == {"number": 7, "lines": ["a", "b", "c"]}
        greeting = await greet.options(priority=3).enqueue(client, "ada", times=2)
        assert await handle.result(timeout=WITHIN) == 15  # a price the start-up hook set
        answer = await greeting.result(timeout=WITHIN)
    assert answer == {
        "text": "hello ada hello ada",
        "attempt": 1,
        "thread": "leasehold-handler",  # a plain function runs on a thread of its own
        "worker": "w-tasks",
    }
    assert greeting.job.priority == 3
    # Start-up hooks in order before any job; shutdown hooks in reverse order at the end.
    assert calls == ["startup-async", "startup-sync w-tasks", "shutdown-sync", "shutdown-async 5"]


async def test_a_payload_that_does_not_validate_fails_for_good(coordinator: Coordinator) -> None:
    async with Client(coordinator.url) as client, running(make_registry([]), coordinator.url):
        # Another producer (the string-kind API) sends a payload that does not fit.
        job = await client.enqueue("t-total", {"number": "seven", "lines": []})
        with pytest.raises(JobFailed) as failed:
            await client.result(job.id, timeout=WITHIN)
    done = await _get(coordinator, job.id)
    assert done.attempts == 1  # not retried, though max_attempts is 2
    assert failed.value.error == (
        "PermanentFailure: t-total: the payload does not fit total(order: "
        "tests.integration.test_tasks_worker.Order) -> int: number: Input should be a valid"
        " integer, unable to parse string as an integer"
    )


async def test_a_failing_start_up_hook_stops_the_worker_before_it_leases(
    coordinator: Coordinator,
) -> None:
    registry = Registry()
    registry.register(greet)

    @registry.on_startup
    def broken(ctx: WorkerContext) -> None:
        raise RuntimeError("no database")

    async with Client(coordinator.url) as client:
        job = await client.enqueue("t-greet", {"name": "x"}, priority=-1000)
        code = await asyncio.wait_for(Worker(registry, settings(coordinator.url)).run(), WITHIN)
        assert code == 1
        assert (await client.get(job.id)).attempts == 0
        await client.cancel(job.id)


def test_the_sync_client_enqueues_and_waits(coordinator: Coordinator) -> None:
    """A script: a SyncClient, and a worker running in a thread of its own."""
    stop = threading.Event()
    ready = threading.Event()

    async def work() -> None:
        async with running(make_registry([]), coordinator.url):
            ready.set()
            await asyncio.to_thread(stop.wait)

    thread = threading.Thread(target=asyncio.run, args=(work(),))
    thread.start()
    try:
        assert ready.wait(WITHIN)
        with SyncClient(coordinator.url) as client:
            handle = greet.enqueue(client, name="grace")
            assert handle.result(timeout=WITHIN)["text"] == "hello grace"
    finally:
        stop.set()
        thread.join(WITHIN)


async def _get(coordinator: Coordinator, job_id: int) -> Any:
    async with Client(coordinator.url) as client:
        return await client.get(job_id)
