"""The test mode (leasehold.testing): a real coordinator in the test's process, a fake clock,
jobs run through the registry's handlers, and the assertions a test makes of them."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from leasehold import (
    Client,
    JobStatus,
    PayloadError,
    SyncClient,
    UnservedWarning,
    WorkerContext,
    current_context,
    current_job,
    task,
)
from leasehold.testing import AsyncTestCoordinator, TestCoordinator
from leasehold.worker import LeasedJob, Registry, fixed

START = datetime(2030, 3, 1, 12, 0, tzinfo=UTC)


class Declined(Exception):
    pass


@task(kind="tm-welcome", queue="mail")
def welcome(to: str, name: str, vip: bool = False) -> str:
    return f"welcomed {name} <{to}>{' (vip)' if vip else ''}"


@task(
    kind="tm-charge", max_attempts=4, retry_on=ConnectionError, fail_on=Declined, backoff=fixed(30)
)
def charge(card: str) -> str:
    attempt = current_job().attempt
    if card == "declined":
        raise Declined("the bank said no")
    if card == "typo":
        raise KeyError("not a retried error")
    if card == "flaky" and attempt < 3:
        raise ConnectionError(f"reset on attempt {attempt}")
    return f"charged {card} on attempt {attempt}"


def make_registry(calls: list[str] | None = None) -> Registry:
    registry = Registry()
    registry.register(welcome)
    registry.register(charge)

    @registry.handler("tm-fan-out")
    def fan_out(job: LeasedJob) -> int:
        # A handler enqueues follow-ups with the client the application gives it.
        client: SyncClient = current_context().state["client"]
        for n in range(job.payload["n"]):
            welcome.enqueue(client, f"user{n}@example.com", name=f"User {n}")
        return int(job.payload["n"])

    @registry.handler("tm-async-misuse")
    async def misuse(job: LeasedJob) -> None:
        current_context().state["client"].enqueue("tm-welcome", {})  # blocks its own loop

    @registry.on_startup
    def opened(ctx: WorkerContext) -> None:
        (calls if calls is not None else []).append(f"startup {ctx.worker_id}")

    @registry.on_shutdown
    def closed(ctx: WorkerContext) -> None:
        (calls if calls is not None else []).append("shutdown")

    registry.schedule("tm-hourly", welcome.new_job("ops@example.com", name="Ops"), cron="0 * * * *")
    return registry


@pytest.fixture
def tc() -> Iterator[TestCoordinator]:
    with TestCoordinator(make_registry(), start=START) as coordinator:
        yield coordinator


def test_enqueue_assert_drain_and_the_result(tc: TestCoordinator) -> None:
    """A typed task's enqueue, asserted by its arguments, run by the registry's handler."""
    handle = welcome.enqueue(tc.client, "ada@example.com", name="Ada")
    job = tc.assert_enqueued(welcome, "ada@example.com", name="Ada")
    assert (job.id, job.queue, job.status, job.payload["vip"]) == (
        handle.id,
        "mail",
        "queued",
        False,
    )
    tc.assert_not_enqueued(welcome, "ada@example.com", name="Ada", vip=True)
    assert tc.enqueued("tm-welcome") == [job] == tc.jobs(welcome)
    drained = tc.drain()
    assert [j.id for j in drained.completed] == [job.id] and len(drained) == 1
    assert handle.result(timeout=1) == "welcomed Ada <ada@example.com>"
    assert tc.drain().runs == ()  # nothing left


def test_a_failed_assertion_lists_what_was_enqueued(tc: TestCoordinator) -> None:
    welcome.enqueue(tc.client, "ada@example.com", name="Ada")
    with pytest.raises(
        AssertionError, match=r"(?s)no job of kind 'tm-welcome' with payload.*bob.*ada@example.com"
    ):
        tc.assert_enqueued(welcome, "bob@example.com", name="Bob")
    with pytest.raises(AssertionError, match="1 job of kind 'tm-welcome' with payload"):
        tc.assert_not_enqueued(welcome, "ada@example.com", name="Ada")
    with pytest.raises(PayloadError):  # the assertion's own arguments are checked too
        tc.assert_enqueued(welcome, "ada@example.com")  # type: ignore[call-overload]


def test_the_retry_policy_through_the_coordinator(tc: TestCoordinator) -> None:
    """retry_on, fail_on and the backoff, applied by the worker's parts and decided by the
    coordinator's rules: the fake clock moves through the backoff."""
    flaky = charge.enqueue(tc.client, "flaky")
    declined = charge.enqueue(tc.client, "declined")
    typo = charge.enqueue(tc.client, "typo")
    first = tc.drain()
    assert [j.id for j in first.retried] == [flaky.id]
    assert {j.id for j in first.dead} == {declined.id, typo.id}  # at once, attempts left
    waiting = tc.client.get(flaky.id)  # waits out the task's backoff: 30 s, no jitter
    assert (waiting.status, waiting.run_after) == ("queued", tc.now() + timedelta(seconds=30))
    assert tc.drain().runs == ()  # not due yet
    tc.advance(29)
    assert tc.run_due().runs == ()
    tc.advance(1)
    assert [j.status for j in tc.run_due()] == [JobStatus.QUEUED]  # attempt 2 fails too
    rest = tc.drain(advance=True)
    assert [j.status for j in rest] == [JobStatus.COMPLETED]
    assert flaky.result(timeout=1) == "charged flaky on attempt 3"
    assert tc.now() == START + timedelta(seconds=60)
    charge.enqueue(tc.client, "declined")
    with pytest.raises(AssertionError, match="Declined: the bank said no"):
        tc.drain(check=True)


def test_schedules_fire_as_the_clock_moves(tc: TestCoordinator) -> None:
    """The registry's schedule is synced at start and fires at each hour the clock passes,
    as a running coordinator would fire it."""
    (stored,) = tc.client.schedules()
    assert (stored["name"], stored["next_fire_at"]) == ("tm-hourly", "2030-03-01T13:00:00+00:00")
    tc.advance(timedelta(hours=3, minutes=30))
    runs = tc.enqueued(welcome, "ops@example.com", name="Ops")
    assert [j.idempotency_key for j in runs] == [
        f"schedule:tm-hourly:2030-03-01T{h}:00:00+00:00" for h in (13, 14, 15)
    ]
    assert len(tc.drain().completed) == 3


def test_an_abandoned_lease_comes_back_after_its_expiry(tc: TestCoordinator) -> None:
    """A worker that leased a job and vanished: advance past the lease, the reaper's pass
    takes the job back, and the next drain runs it under a newer token."""
    job = welcome.enqueue(tc.client, "ada@example.com", name="Ada")
    lost = tc.client.lease("vanished", lease_seconds=60)
    assert lost is not None and lost.job.id == job.id
    tc.advance(59)
    assert tc.drain().runs == ()
    tc.advance(2)
    (rerun,) = tc.drain().completed
    assert rerun.lease_token > lost.token
    assert [a.outcome for a in tc.client.attempts(job.id)] == ["expired", "completed"]


def test_inline_mode_runs_each_job_as_it_is_enqueued() -> None:
    with TestCoordinator(make_registry(), inline=True, start=START) as tc:
        handle = welcome.enqueue(tc.client, "ada@example.com", name="Ada", vip=True)
        assert handle.job.status == JobStatus.QUEUED  # the enqueue's answer, before the run
        assert tc.client.get(handle.id).status == JobStatus.COMPLETED
        assert handle.result(timeout=1) == "welcomed Ada <ada@example.com> (vip)"
        tc.advance(timedelta(hours=1))  # the schedule's run, due now, runs too
        assert [j.status for j in tc.enqueued(welcome, "ops@example.com", name="Ops")] == [
            JobStatus.COMPLETED
        ]


def test_handlers_enqueue_follow_ups_and_hooks_run_once() -> None:
    calls: list[str] = []
    with TestCoordinator(make_registry(calls), start=START) as tc:
        tc.context.state["client"] = tc.client  # as an application's start-up hook would
        tc.client.enqueue("tm-fan-out", {"n": 3})
        drained = tc.drain(check=True)
        assert [j.kind for j in drained] == ["tm-fan-out"] + ["tm-welcome"] * 3
        misused = tc.client.enqueue("tm-async-misuse", {})
        (misrun,) = tc.drain().retried
        assert misrun.id == misused.id and "use an async Client there" in str(misrun.last_error)
    assert calls == ["startup leasehold-testing", "shutdown"]


def test_an_enqueue_of_a_kind_nobody_handles_warns() -> None:
    """With a registry, the test coordinator serves its kinds only: a misspelt kind warns
    at the enqueue, as against a coordinator whose workers do not take it."""
    with TestCoordinator(make_registry(), start=START) as tc:
        with pytest.warns(UnservedWarning, match="kind 'tm-welcom' in queue 'default'"):
            tc.client.enqueue("tm-welcom", {})
        welcome.enqueue(tc.client, "ada@example.com", name="Ada")  # served: no warning
        assert tc.drain().runs and tc.enqueued("tm-welcom")[0].status == JobStatus.QUEUED


def test_the_async_client_works_from_another_event_loop(tc: TestCoordinator) -> None:
    """An application under test with an event loop of its own (FastAPI's TestClient runs
    one on a thread) enqueues with ``async_client``."""

    async def app_code(client: Client) -> int:
        handle = await welcome.enqueue(client, "ada@example.com", name="Ada")
        return handle.id

    made: list[int] = []
    thread = threading.Thread(target=lambda: made.append(asyncio.run(app_code(tc.async_client))))
    thread.start()
    thread.join(10)
    tc.assert_enqueued(welcome, "ada@example.com", name="Ada")
    assert [j.id for j in tc.drain().completed] == made


async def test_the_async_coordinator_runs_in_the_tests_own_loop() -> None:
    seen: dict[str, Any] = {}
    registry = Registry()

    @registry.on_startup
    async def open_pool(ctx: WorkerContext) -> None:
        ctx.state["loop"] = asyncio.get_running_loop()

    @registry.register
    @task(kind="tm-async")
    async def on_loop(n: int) -> int:
        seen["same loop"] = asyncio.get_running_loop() is current_context().state["loop"]
        return n * 2

    async with AsyncTestCoordinator(registry, start=START) as tc:
        assert current_context_is_unset()
        handle = await on_loop.enqueue(tc.client, 21)
        await tc.assert_enqueued(on_loop, 21)
        drained = await tc.drain()
        assert [j.result for j in drained.completed] == [42] and seen == {"same loop": True}
        assert await handle.result(timeout=1) == 42
        await tc.advance(timedelta(days=2))  # retention: completed jobs go after a day
        assert await tc.jobs() == []
        assert current_context_is_unset()  # the worker's context stayed in the job's tasks


def current_context_is_unset() -> bool:
    try:
        current_context()
    except RuntimeError:
        return True
    return False


def test_a_time_limit_counts_as_a_timeout_error_for_the_policy() -> None:
    """The worker's own time limit (not the task's) is judged by the kind's policy too."""
    registry = Registry()

    async def slow(job: LeasedJob) -> None:
        await asyncio.sleep(30)

    registry.add("tm-slow-fails", slow, timeout_seconds=0.05, fail_on=TimeoutError)
    registry.add("tm-slow-retries", slow, timeout_seconds=0.05, backoff=fixed(7))
    with TestCoordinator(registry, start=START) as tc:
        failing = tc.client.enqueue("tm-slow-fails", None)
        retried = tc.client.enqueue("tm-slow-retries", None)
        drained = tc.drain()
        assert [j.id for j in drained.dead] == [failing.id]
        (again,) = drained.retried
        assert again.id == retried.id and again.run_after == START + timedelta(seconds=7)
        assert str(again.last_error).startswith("timeout: the handler ran longer")
