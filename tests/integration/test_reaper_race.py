"""The reaper's compare-and-set against the requests it races, made to interleave on purpose.

A FakeClock on the embedded store lets each interleaving happen in a fixed order.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from leasehold.coordinator.clock import FakeClock
from leasehold.coordinator.rules.transitions import decide_expire
from leasehold.coordinator.service.job_service import JobService
from leasehold.coordinator.service.requests import Enqueue
from leasehold.coordinator.store.contract import Decide
from leasehold.coordinator.store.sqlite.driver import SqliteStore
from leasehold.model import AttemptOutcome, JobStatus


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def service(tmp_path: Path, clock: FakeClock) -> AsyncIterator[JobService]:
    store = SqliteStore(str(tmp_path / "race.db"), clock=clock)
    await store.open()
    yield JobService(store)
    await store.close()


async def leased_job(service: JobService, max_attempts: int = 3) -> tuple[int, int]:
    job = (await service.enqueue(Enqueue("k", max_attempts=max_attempts))).job
    (leased,) = await service.lease("w1", 10.0)
    assert leased.id == job.id
    return job.id, leased.lease_token


async def stale_sweep(service: JobService) -> list[tuple[int, int]]:
    """What a reaper saw in its scan, to be applied later."""
    return [(e.job_id, e.token) for e in await service.store.jobs_expired(100)]


def expire_with(token: int) -> Decide:
    return lambda job, now: decide_expire(job, token, now)


async def apply_sweep(service: JobService, seen: list[tuple[int, int]]) -> list[bool]:
    outcomes = await service.store.jobs_decide(
        [(job_id, expire_with(token)) for job_id, token in seen]
    )
    return [o is not None and o.changed for o in outcomes]


async def test_completion_landing_between_scan_and_write_wins(
    service: JobService, clock: FakeClock
) -> None:
    job_id, token = await leased_job(service)
    clock.advance(11)
    seen = await stale_sweep(service)
    assert seen == [(job_id, token)]
    await service.complete(job_id, token, "done")
    assert await apply_sweep(service, seen) == [False]
    job = await service.get(job_id)
    assert (job.status, job.result) == (JobStatus.COMPLETED, "done")


async def test_renewal_landing_between_scan_and_write_wins(
    service: JobService, clock: FakeClock
) -> None:
    job_id, token = await leased_job(service)
    clock.advance(11)
    seen = await stale_sweep(service)
    # The renewal was ordered first by the database: it saw the lease still live.
    clock.advance(-2)
    await service.renew(job_id, token, 10.0)
    clock.advance(2)
    assert await apply_sweep(service, seen) == [False]
    job = await service.get(job_id)
    assert (job.status, job.lease_token) == (JobStatus.RUNNING, token)


async def test_a_late_reaper_never_undoes_a_newer_lease(
    service: JobService, clock: FakeClock
) -> None:
    job_id, token = await leased_job(service)
    clock.advance(11)
    seen = await stale_sweep(service)
    assert await service.reap() == 1  # another reaper got there first
    (again,) = await service.lease("w2", 10.0)
    assert again.lease_token == token + 1
    clock.advance(11)  # even with the new lease expired too, the old sweep is stale
    assert await apply_sweep(service, seen) == [False]
    job = await service.get(job_id)
    assert (job.status, job.lease_token, job.lease_owner) == (JobStatus.RUNNING, token + 1, "w2")


async def test_two_reapers_expire_a_lease_once(service: JobService, clock: FakeClock) -> None:
    job_id, _token = await leased_job(service)
    clock.advance(11)
    first, second = await stale_sweep(service), await stale_sweep(service)
    assert await apply_sweep(service, first) == [True]
    assert await apply_sweep(service, second) == [False]
    totals = await service.store.counter_totals()
    assert totals[("lease_expired", "k")] == 1
    attempts = await service.attempts(job_id)
    assert [a.outcome for a in attempts] == [AttemptOutcome.EXPIRED]


async def test_reap_returns_job_to_queue_at_once(service: JobService, clock: FakeClock) -> None:
    job_id, token = await leased_job(service)
    clock.advance(10)  # expiry is inclusive: at lease_expires_at the lease is over
    assert await service.reap() == 1
    job = await service.get(job_id)
    assert job.status is JobStatus.QUEUED
    assert job.run_after == clock.now()
    (again,) = await service.lease("w2", 10.0)
    assert (again.id, again.lease_token, again.attempts) == (job_id, token + 1, 2)


async def test_reap_batches_with_partial(service: JobService, clock: FakeClock) -> None:
    ids = [await leased_job(service) for _ in range(5)]
    clock.advance(11)
    assert await service.reap(limit=2) == 2
    assert await service.reap(limit=100) == 3
    assert await service.reap() == 0
    for job_id, _ in ids:
        assert (await service.get(job_id)).status is JobStatus.QUEUED
