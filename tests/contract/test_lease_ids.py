"""Lease request ids and normalized idempotency, on every backend (PROTOCOL.md)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta, timezone

import pytest

from leasehold.coordinator.rules.transitions import decide_complete
from leasehold.coordinator.service.requests import Enqueue
from leasehold.coordinator.store.contract import LeaseRequest, NewJob, Store
from leasehold.errors import IdempotencyConflict


def job(kind: str = "k") -> NewJob:
    return NewJob(kind, None, 3, None, None, "h")


def asking(request_id: str | None, n: int = 2, worker: str = "w1") -> LeaseRequest:
    return LeaseRequest(worker, 60.0, None, n, request_id=request_id)


async def test_a_retried_lease_gets_the_same_leases_back(store: Store) -> None:
    """Same worker, same request id: the same jobs under the same tokens, nothing new."""
    await store.job_insert_many([job(), job(), job()])
    first = await store.job_lease(asking("r1"))
    again = await store.job_lease(asking("r1"))
    assert [(j.id, j.lease_token) for j in again] == [(j.id, j.lease_token) for j in first]
    assert len(first) == 2
    fresh = await store.job_lease(asking("r2"))
    assert [j.id for j in fresh] == [3]


async def test_a_request_id_that_leased_nothing_leases_afresh(store: Store) -> None:
    """A long poll keeps its request id across its looks: an empty look is not replayed,
    so a job that arrives later is leased under the same id."""
    assert await store.job_lease(asking("poll")) == []
    await store.job_insert_many([job()])
    assert [j.id for j in await store.job_lease(asking("poll"))] == [1]


async def test_a_request_id_is_per_worker(store: Store) -> None:
    """Another worker's request with the same id is a request of its own."""
    await store.job_insert_many([job(), job()])
    mine = await store.job_lease(asking("same", n=1, worker="w1"))
    theirs = await store.job_lease(asking("same", n=1, worker="w2"))
    assert {mine[0].id, theirs[0].id} == {1, 2}


async def test_a_replay_leaves_out_leases_no_longer_held(store: Store) -> None:
    """A job reported since is not handed out again; the retry leases nothing new."""
    await store.job_insert_many([job(), job(), job()])
    first = await store.job_lease(asking("r1"))
    done = first[0]
    await store.jobs_decide(
        [(done.id, lambda j, now: decide_complete(j, done.lease_token, None, now))]
    )
    again = await store.job_lease(asking("r1"))
    assert [j.id for j in again] == [first[1].id]


async def test_concurrent_copies_of_one_request_lease_once(store: Store) -> None:
    """Two copies of one request at once: one lease, both answered with it."""
    await store.job_insert_many([job() for _ in range(4)])
    a, b = await asyncio.gather(store.job_lease(asking("r")), store.job_lease(asking("r")))
    assert [(j.id, j.lease_token) for j in a] == [(j.id, j.lease_token) for j in b]
    left = await store.job_lease(asking(None, n=10))
    assert len(left) == 2


async def test_a_retry_spelling_out_the_defaults_is_the_same_request(store: Store) -> None:
    """Idempotent enqueue compares the normalized request, not the fields as sent."""
    bare = Enqueue("k", {"a": 1}, idempotency_key="key").new_job()
    spelled = Enqueue("k", {"a": 1}, 5, None, "key", 0, "default").new_job()
    (first,) = await store.job_insert_many([bare])
    (again,) = await store.job_insert_many([spelled])
    assert (first.created, again.created, again.job.id) == (True, False, first.job.id)
    when = datetime(2030, 1, 1, tzinfo=UTC)
    later = Enqueue("k2", None, run_after=when, idempotency_key="k2").new_job()
    offset = when.astimezone(timezone(timedelta(hours=2)))
    same_time = Enqueue("k2", None, run_after=offset, idempotency_key="k2").new_job()
    await store.job_insert_many([later])
    (repeat,) = await store.job_insert_many([same_time])
    assert not repeat.created
    other = Enqueue("k", {"a": 1}, 4, idempotency_key="key").new_job()
    with pytest.raises(IdempotencyConflict):
        await store.job_insert_many([other])
