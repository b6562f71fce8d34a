"""The worker's parts on their own, against a fake client: slots (capacity.py), batch
renewals (renewal.py), batch reports (report.py), one job's run (job_runner.py) and the lease
loop (lease_loop.py). No coordinator: each test decides what the "coordinator" answers.

Leases here last a fraction of a second on the event loop's own clock; waits are events
and deadlines, never sleeps that hope.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from leasehold.client import (
    Client,
    CompleteItem,
    FailItem,
    ItemOutcome,
    ItemResult,
    Lease,
    RenewItem,
    RetryPolicy,
)
from leasehold.errors import (
    InvalidRequest,
    JobCancelled,
    LeaseholdError,
    StaleToken,
    Unauthorized,
    Unavailable,
)
from leasehold.model import Job, JobStatus
from leasehold.worker import LeasedJob, Registry
from leasehold.worker.capacity import Capacity
from leasehold.worker.job_runner import JobRunner, Leased
from leasehold.worker.lease_loop import Worker
from leasehold.worker.renewal import LeaseKeeper, Renewer
from leasehold.worker.report import MAX_FAIL_BATCH_CHARS, Reporter
from leasehold.worker.settings import WorkerSettings
from leasehold.worker.waiting import Flag

NOW = datetime(2030, 1, 1, tzinfo=UTC)


def job(job_id: int, status: JobStatus = JobStatus.RUNNING, **fields: Any) -> Job:
    return Job(
        id=job_id,
        kind=fields.pop("kind", "k"),
        payload=fields.pop("payload", None),
        status=status,
        attempts=1,
        max_attempts=3,
        run_after=NOW,
        created_at=NOW,
        lease_token=1,
        leased_at=NOW,
        lease_expires_at=NOW + timedelta(seconds=fields.pop("seconds", 1.0)),
        **fields,
    )


def ok(job_id: int, **fields: Any) -> ItemResult:
    return ItemResult(job_id, ItemOutcome.OK, job=job(job_id, **fields))


def refused(job_id: int, error: LeaseholdError) -> ItemResult:
    return ItemResult(job_id, ItemOutcome.CONFLICT, error=error)


@dataclass
class FakeClient:
    """What a worker asks of its client, answered by rules each test sets."""

    renew_answer: Any = None  # callable(items) -> results, or an exception to raise
    report_answer: Any = None
    calls: list[tuple[str, list[Any]]] = field(default_factory=list)
    called: asyncio.Event = field(default_factory=asyncio.Event)
    leases: list[Lease] = field(default_factory=list)
    lease_error: LeaseholdError | None = None
    released: list[int] = field(default_factory=list)
    url: str = "http://fake"
    urls: tuple[str, ...] = ("http://fake",)
    timeout_seconds: float = 10.0
    try_timeouts: list[float] = field(default_factory=list)

    def with_timeout(self, seconds: float) -> FakeClient:
        self.try_timeouts.append(seconds)
        return self

    def _record(self, what: str, items: Sequence[Any]) -> None:
        self.calls.append((what, list(items)))
        self.called.set()

    async def _answer(self, rule: Any, items: Sequence[Any]) -> list[ItemResult]:
        if isinstance(rule, BaseException):
            raise rule
        if rule is None:
            return [ok(i.job_id) for i in items]
        result = rule(items)
        if asyncio.iscoroutine(result):
            result = await result
        return cast(list[ItemResult], result)

    async def renew_many(self, items: Sequence[RenewItem]) -> list[ItemResult]:
        self._record("renew", items)
        return await self._answer(self.renew_answer, items)

    async def complete_many(self, items: Sequence[CompleteItem]) -> list[ItemResult]:
        self._record("complete_many", items)
        return await self._answer(self.report_answer, items)

    async def fail_many(self, items: Sequence[FailItem]) -> list[ItemResult]:
        self._record("fail_many", items)
        return await self._answer(self.report_answer, items)

    async def complete(self, job_id: int, token: int, result: Any = None) -> Job:
        self._record("complete", [CompleteItem(job_id, token, result)])
        if result == "refused":
            raise InvalidRequest("this one result is refused")
        return job(job_id, JobStatus.COMPLETED)

    async def fail(self, job_id: int, token: int, error: str, **kw: Any) -> Job:
        self._record("fail", [FailItem(job_id, token, error, **kw)])
        return job(job_id, JobStatus.QUEUED)

    async def release(self, job_id: int, token: int) -> Job:
        self.released.append(job_id)
        return job(job_id, JobStatus.QUEUED)

    def with_retry(self, retry: RetryPolicy) -> FakeClient:
        return self

    async def lease(self, worker_id: str, **kw: Any) -> list[Lease]:
        self._record("lease", [kw["max_jobs"], kw["request_id"]])
        if self.lease_error is not None:
            raise self.lease_error
        taken, self.leases = self.leases[: kw["max_jobs"]], self.leases[kw["max_jobs"] :]
        if not taken:
            await asyncio.sleep(kw.get("wait_seconds") or 0)  # an empty long poll
        return taken

    async def close(self) -> None:
        pass

    def of(self, what: str) -> list[list[Any]]:
        return [items for name, items in self.calls if name == what]


def as_client(fake: FakeClient) -> Client:
    return cast(Client, fake)


def leased_job(job_id: int, seconds: float = 1.0) -> LeasedJob:
    return LeasedJob.of(Lease(job(job_id, seconds=seconds), 1), "w")


def keeper(job_id: int, seconds: float) -> LeaseKeeper:
    deadline = asyncio.get_running_loop().time() + seconds
    return LeaseKeeper(leased_job(job_id, seconds), seconds, deadline)


async def wait_for(event: asyncio.Event | Flag, seconds: float = 5.0) -> None:
    async with asyncio.timeout(seconds):
        await event.wait()


# -- capacity ---------------------------------------------------------------------------


async def test_capacity_takes_every_free_slot_and_waits_for_one_given_back() -> None:
    capacity, stopping = Capacity(3), asyncio.Event()
    assert await capacity.take_all(stopping) == 3
    assert capacity.free == 0
    waiting = asyncio.create_task(capacity.take_all(stopping))
    await asyncio.sleep(0)
    assert not waiting.done()
    capacity.give(2)
    assert await asyncio.wait_for(waiting, 5) == 2
    capacity.give(0)  # nothing: no slot was left over
    assert capacity.free == 0


async def test_capacity_stops_waiting_when_stopping() -> None:
    capacity, stopping = Capacity(1), asyncio.Event()
    await capacity.take_all(stopping)
    waiting = asyncio.create_task(capacity.take_all(stopping))
    await asyncio.sleep(0)
    stopping.set()
    assert await asyncio.wait_for(waiting, 5) == 0


def test_capacity_refuses_a_slot_given_back_twice() -> None:
    capacity = Capacity(1)
    with pytest.raises(AssertionError, match="given back twice"):
        capacity.give()


# -- renewals ---------------------------------------------------------------------------


async def test_leases_due_together_are_renewed_in_one_request() -> None:
    fake = FakeClient()
    renewer = Renewer(as_client(fake))
    a, b = keeper(1, 0.6), keeper(2, 0.6)
    before = a.deadline
    renewer.add(a)
    renewer.add(b)
    task = asyncio.create_task(renewer.run())
    try:
        await wait_for(fake.called)
        (items,) = fake.of("renew")
        assert sorted(i.job_id for i in items) == [1, 2]
        assert all(i.lease_seconds == 0.6 for i in items)
        # Answered: each deadline now counts from when the renewal was sent.
        assert a.deadline > before and a.held() and b.held()
        assert renewer.requests == 1
    finally:
        task.cancel()
        renewer.remove(a)
        renewer.remove(b)


async def test_a_refused_item_loses_that_lease_only() -> None:
    fake = FakeClient(
        renew_answer=lambda items: [
            refused(i.job_id, StaleToken()) if i.job_id == 1 else ok(i.job_id) for i in items
        ]
    )
    renewer = Renewer(as_client(fake))
    lost, kept = keeper(1, 0.6), keeper(2, 0.6)
    for k in (lost, kept):
        renewer.add(k)
    task = asyncio.create_task(renewer.run())
    try:
        await wait_for(lost.lost)
        assert (lost.reason, lost.cancelled) == ("stale_token", False)
        assert kept.held()
    finally:
        task.cancel()


async def test_a_cancelled_job_is_lost_as_cancelled() -> None:
    fake = FakeClient(renew_answer=lambda items: [refused(i.job_id, JobCancelled()) for i in items])
    renewer = Renewer(as_client(fake))
    k = keeper(1, 0.3)
    renewer.add(k)
    task = asyncio.create_task(renewer.run())
    try:
        await wait_for(k.lost)
        assert k.cancelled
    finally:
        task.cancel()


async def test_a_renewal_refused_as_a_whole_loses_every_lease_in_it() -> None:
    renewer = Renewer(as_client(FakeClient(renew_answer=Unauthorized())))
    keepers = [keeper(n, 0.3) for n in (1, 2)]
    for k in keepers:
        renewer.add(k)
    task = asyncio.create_task(renewer.run())
    try:
        for k in keepers:
            await wait_for(k.lost)
            assert k.reason == "unauthorized"
    finally:
        task.cancel()


async def test_an_ok_renewal_whose_job_is_not_a_job_loses_that_lease_and_renews_on() -> None:
    """The item's job is parsed when the renewer reads it: a malformed one ended the
    renewer's task (no lease of the worker was renewed again); it loses that lease only."""
    fake = FakeClient(
        renew_answer=lambda items: [
            ItemResult(i.job_id, ItemOutcome.OK, data={"id": i.job_id})
            if i.job_id == 1
            else ok(i.job_id)
            for i in items
        ]
    )
    renewer = Renewer(as_client(fake))
    lost, kept = keeper(1, 0.3), keeper(2, 0.3)
    for k in (lost, kept):
        renewer.add(k)
    task = asyncio.create_task(renewer.run())
    try:
        await wait_for(lost.lost)
        assert lost.reason == "error" and kept.held()
        async with asyncio.timeout(5):  # the renewer runs on: the kept lease is renewed again
            while len(fake.of("renew")) < 2:
                assert not task.done()
                await asyncio.sleep(0.01)
    finally:
        task.cancel()
        renewer.remove(kept)


async def test_a_renewal_never_answered_loses_the_lease_at_its_deadline() -> None:
    async def hang(items: Sequence[RenewItem]) -> list[ItemResult]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    renewer = Renewer(as_client(FakeClient(renew_answer=hang)))
    k = keeper(1, 0.3)
    renewer.add(k)
    task = asyncio.create_task(renewer.run())
    try:
        await wait_for(k.lost)
        assert k.reason == "expired"
        assert asyncio.get_running_loop().time() >= k.deadline
    finally:
        task.cancel()


# -- reports ----------------------------------------------------------------------------


async def run_reporter(fake: FakeClient) -> tuple[Reporter, asyncio.Task[None]]:
    reporter = Reporter(as_client(fake))
    return reporter, asyncio.create_task(reporter.run())


def deadline(seconds: float = 5.0) -> float:
    return asyncio.get_running_loop().time() + seconds


async def test_reports_ready_together_share_one_request() -> None:
    fake = FakeClient()
    reporter, task = await run_reporter(fake)
    try:
        await asyncio.gather(
            *(reporter.complete(CompleteItem(n, 1, n), deadline(), 30.0) for n in range(1, 6))
        )
        assert [[i.job_id for i in items] for items in fake.of("complete_many")] == [
            [1, 2, 3, 4, 5]
        ]
        assert reporter.completes.requests == 1
    finally:
        task.cancel()


async def test_a_refused_item_raises_for_its_caller_only() -> None:
    fake = FakeClient(
        report_answer=lambda items: [
            refused(i.job_id, StaleToken()) if i.job_id == 2 else ok(i.job_id) for i in items
        ]
    )
    reporter, task = await run_reporter(fake)
    try:
        answers = await asyncio.gather(
            *(reporter.complete(CompleteItem(n, 1), deadline(), 30.0) for n in (1, 2, 3)),
            return_exceptions=True,
        )
        assert answers[0] is None and answers[2] is None
        assert isinstance(answers[1], StaleToken)
    finally:
        task.cancel()


async def test_a_batch_refused_as_a_whole_is_sent_again_item_by_item() -> None:
    fake = FakeClient(report_answer=InvalidRequest("one result is not JSON"))
    reporter, task = await run_reporter(fake)
    try:
        answers = await asyncio.gather(
            reporter.complete(CompleteItem(1, 1, "fine"), deadline(), 30.0),
            reporter.complete(CompleteItem(2, 1, "refused"), deadline(), 30.0),
            return_exceptions=True,
        )
        assert answers[0] is None
        assert isinstance(answers[1], InvalidRequest)
        assert sorted(items[0].job_id for items in fake.of("complete")) == [1, 2]
    finally:
        task.cancel()


async def test_a_report_not_answered_by_its_deadline_times_out() -> None:
    async def hang(items: Sequence[Any]) -> list[ItemResult]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    reporter, task = await run_reporter(FakeClient(report_answer=hang))
    try:
        with pytest.raises(TimeoutError):
            await reporter.complete(CompleteItem(1, 1), deadline(0.1), 30.0)
    finally:
        task.cancel()


async def test_fail_batches_stay_under_their_size_bound() -> None:
    fake = FakeClient(
        report_answer=lambda items: [ok(i.job_id, status=JobStatus.QUEUED) for i in items]
    )
    reporter, task = await run_reporter(fake)
    big = "x" * (MAX_FAIL_BATCH_CHARS // 2)
    try:
        failed = await asyncio.gather(
            *(reporter.fail(FailItem(n, 1, big), deadline(), 30.0) for n in (1, 2, 3))
        )
        assert [j.status for j in failed] == [JobStatus.QUEUED] * 3
        sizes = [len(items) for items in fake.of("fail_many")]
        assert sum(sizes) == 3 and max(sizes) == 1  # two big errors never share a request
    finally:
        task.cancel()


# -- one job's run ----------------------------------------------------------------------


async def no_polls() -> None:
    """No lease request is in flight in these tests."""


async def run_one(registry: Registry, fake: FakeClient, seconds: float = 2.0) -> None:
    runner = JobRunner(as_client(fake), registry, Flag(), polls_ended=no_polls)
    lease = Lease(job(7, seconds=seconds, kind="k"), 1)
    now = asyncio.get_running_loop().time()
    leased = Leased.of(lease, "w", now, now)
    reporting = asyncio.create_task(runner.reporter.run())
    renewing = asyncio.create_task(runner.renewer.run())
    handler_done = asyncio.Event()
    try:
        await runner.run(leased, handler_done.set)
        assert handler_done.is_set()
    finally:
        reporting.cancel()
        renewing.cancel()


async def test_a_handler_result_is_completed() -> None:
    registry, fake = Registry(), FakeClient()
    registry.add("k", lambda j: {"done": j.id})
    await run_one(registry, fake)
    (items,) = fake.of("complete_many")
    assert [(i.job_id, i.token, i.result) for i in items] == [(7, 1, {"done": 7})]


async def test_a_handler_error_is_reported_as_a_retryable_failure() -> None:
    async def boom(j: LeasedJob) -> None:
        raise RuntimeError("boom")

    registry, fake = (
        Registry(),
        FakeClient(report_answer=lambda items: [ok(7, status=JobStatus.QUEUED)]),
    )
    registry.add("k", boom)
    await run_one(registry, fake)
    (items,) = fake.of("fail_many")
    assert items[0].retryable and "RuntimeError: boom" in items[0].error


async def test_a_job_without_a_handler_is_failed_with_the_kinds_handled() -> None:
    registry, fake = (
        Registry(),
        FakeClient(report_answer=lambda items: [ok(7, status=JobStatus.QUEUED)]),
    )
    registry.add("other", lambda j: None)
    await run_one(registry, fake)
    (items,) = fake.of("fail_many")
    assert "no handler for kind 'k'" in items[0].error and "other" in items[0].error


async def test_a_refused_result_is_failed_without_retry() -> None:
    def answer(items: Sequence[Any]) -> list[ItemResult]:
        if isinstance(items[0], CompleteItem):
            return [refused(7, InvalidRequest("result is not JSON"))]
        return [ok(7, status=JobStatus.DEAD)]

    fake, registry = FakeClient(report_answer=answer), Registry()
    registry.add("k", lambda j: "a result")
    await run_one(registry, fake)
    (items,) = fake.of("fail_many")
    assert not items[0].retryable and "refused the handler's result" in items[0].error


# -- the lease loop ---------------------------------------------------------------------


def lease_of(job_id: int) -> Lease:
    return Lease(job(job_id, seconds=5.0), 1)


async def test_the_lease_loop_asks_for_as_many_jobs_as_it_has_free_slots() -> None:
    fake = FakeClient(leases=[lease_of(n) for n in range(1, 4)])
    ran: list[int] = []
    all_ran = asyncio.Event()

    async def handler(j: LeasedJob) -> None:
        ran.append(j.id)
        if len(ran) == 3:
            all_ran.set()

    worker = Worker(
        Registry({"k": handler}),
        WorkerSettings(concurrency=2, wait_seconds=0.01, worker_id="w"),
        client=as_client(fake),
    )
    task = asyncio.create_task(worker.run())
    await wait_for(all_ran)
    worker.stop()
    assert await asyncio.wait_for(task, 5) == 0
    assert sorted(ran) == [1, 2, 3]
    asked = [items[0] for items in fake.of("lease")]
    assert asked[0] == 2 and max(asked) <= 2  # never more than the free slots


async def test_a_refused_lease_request_stops_the_worker_with_exit_code_1() -> None:
    fake = FakeClient(lease_error=Unauthorized())
    worker = Worker(
        Registry({"k": lambda j: None}), WorkerSettings(worker_id="w"), client=as_client(fake)
    )
    assert await asyncio.wait_for(worker.run(), 5) == 1


async def test_an_unreachable_coordinator_is_asked_again() -> None:
    fake = FakeClient(lease_error=Unavailable("down"))
    worker = Worker(
        Registry({"k": lambda j: None}),
        WorkerSettings(worker_id="w", wait_seconds=0.01),
        client=as_client(fake),
    )
    task = asyncio.create_task(worker.run())
    async with asyncio.timeout(10):
        while len(fake.of("lease")) < 2:  # asked again after its back-off
            fake.called.clear()
            await fake.called.wait()
    worker.stop()
    assert await asyncio.wait_for(task, 5) == 0


async def test_a_stop_after_a_poll_got_no_answer_asks_again_and_releases_what_comes() -> None:
    """The lost answer may have carried leases: asked once more under the same request id,
    what comes back is released, not left leased until it runs out (PROTOCOL.md §10.6)."""
    fake = FakeClient(lease_error=Unavailable("the answer was lost"))
    worker = Worker(
        Registry({"k": lambda j: None}),
        WorkerSettings(worker_id="w", wait_seconds=0.01),
        client=as_client(fake),
    )
    task = asyncio.create_task(worker.run())
    await wait_for(fake.called)
    fake.lease_error, fake.leases = None, [lease_of(9)]
    worker.stop()
    assert await asyncio.wait_for(task, 5) == 0
    polls = fake.of("lease")
    assert len({request_id for _, request_id in polls}) == 1  # every one the same request
    assert fake.released == [9]


def test_a_lease_runs_from_its_send_but_never_from_more_than_half_a_lease_back() -> None:
    """The deadline is reckoned from when the poll was sent (the lease was granted after
    it), and from half a lease before the answer when the send was longer ago: a poll that
    moved on to another coordinator was answered by a later try."""
    lease = Lease(job(7, seconds=4.0, kind="k"), 1)
    assert Leased.of(lease, "w", sent=100.0, received=101.0).deadline == 104.0
    assert Leased.of(lease, "w", sent=100.0, received=110.0).deadline == 112.0
