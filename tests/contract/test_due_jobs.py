"""Jobs not yet due cost a lease nothing, however many wait at a higher priority (§11)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import asyncpg
import pytest

from leasehold.coordinator.store.contract import LeaseRequest, NewJob, Store
from leasehold.coordinator.store.open import open_store

FUTURE_JOBS = 20_000  # stepped over one by one, they cost a lease about 4 ms (SQLite)
ROUNDS = 25
WARM_UP = 5


@pytest.fixture
async def quick_store(database_url: str) -> AsyncIterator[Store]:
    """The lease's own cost, not an fsync's: SQLite without synchronous commits."""
    opened = open_store(database_url, synchronous="OFF")
    await opened.open()
    yield opened
    await opened.close()


def job(kind: str, priority: int, run_after: datetime | None = None) -> NewJob:
    return NewJob(kind, None, 3, run_after, None, "h", priority)


async def analyze(database_url: str) -> None:
    """PostgreSQL's statistics as autovacuum would soon have them, so plans are realistic."""
    if database_url.startswith("postgres"):
        conn = await asyncpg.connect(database_url)
        try:
            await conn.execute("ANALYZE jobs")
        finally:
            await conn.close()


async def insert_future_jobs(store: Store, database_url: str) -> None:
    """FUTURE_JOBS jobs due in an hour at priority 1000. PostgreSQL's store inserts row by
    row; there the rows are written in one statement (what the lease reads is the same)."""
    later = await store.now() + timedelta(hours=1)
    if not database_url.startswith("postgres"):
        for _ in range(0, FUTURE_JOBS, 1000):
            await store.job_insert_many([job("later", 1000, later)] * 1000)
        return
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute(
            "INSERT INTO jobs (kind, payload, status, max_attempts, run_after, created_at,"
            " request_hash, priority, queue) SELECT 'later', 'null', 'queued', 3, $1, now(),"
            " 'h', 1000, 'default' FROM generate_series(1, $2)",
            later,
            FUTURE_JOBS,
        )
    finally:
        await conn.close()


async def lease_seconds(store: Store) -> float:
    """The quickest of ROUNDS plain leases of one due job (each round enqueues one): other
    work on the machine only ever adds time, so the minimum is the lease's own cost. A few
    unmeasured rounds first: the commits after a bulk insert pay for its checkpoint."""
    times = []
    for _ in range(WARM_UP):
        await store.job_insert_many([job("due", 0)])
        await store.job_lease(LeaseRequest("w", 60, None, 1))
    for _ in range(ROUNDS):
        await store.job_insert_many([job("due", 0)])
        start = time.perf_counter()
        (leased,) = await store.job_lease(LeaseRequest("w", 60, None, 1))
        times.append(time.perf_counter() - start)
        assert leased.kind == "due"
    return min(times)


async def test_future_jobs_at_a_higher_priority_are_not_stepped_over(
    quick_store: Store, database_url: str
) -> None:
    """20,000 jobs due in an hour at priority 1000: a plain lease of a due job at priority 0
    takes about as long as with none of them (stepping over them costs milliseconds)."""
    store = quick_store
    await analyze(database_url)
    empty = await lease_seconds(store)
    await insert_future_jobs(store, database_url)
    await analyze(database_url)
    crowded = await lease_seconds(store)
    # Stepping over them costs milliseconds (4 ms on SQLite); a busy machine's noise on the
    # quickest of 25 leases, at most a millisecond or so. The margin lies between the two.
    assert crowded < 2 * empty + 0.002, (empty, crowded)
    # Many levels of future jobs above it: the due job is still found, and first.
    later = await store.now() + timedelta(hours=1)
    levels = [job("later", p, later) for p in range(1, 200)]
    await store.job_insert_many([*levels, job("due", 0)])
    (leased,) = await store.job_lease(LeaseRequest("w", 60, None, 1))
    assert leased.kind == "due"
