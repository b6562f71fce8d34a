"""Two coordinators on one PostgreSQL share one rate limit and one limit per group (DESIGN.md
§19): many lessees at once on both, and the starts replayed from the attempt history never
pass either."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from leasehold.coordinator.service.job_service import JobService
from leasehold.coordinator.service.requests import Enqueue
from leasehold.coordinator.store.contract import Flow, JobFilter, RateLimit, Store
from leasehold.coordinator.store.open import open_store

RATE, PERIOD = 8, 1.0
PER_GROUP = 2
GROUPS = ["a", "b", "c"]


async def test_two_coordinators_share_a_rate_and_a_limit_per_group(postgres_url: str) -> None:
    stores = [open_store(postgres_url) for _ in range(2)]
    for store in stores:
        await store.open()
    try:
        one, two = (JobService(store) for store in stores)
        await one.limit_put(
            "api", Flow(max_running_per_group=PER_GROUP, rate=RateLimit(RATE, PERIOD))
        )
        await one.enqueue_many(
            [Enqueue("api", payload=n, group_key=GROUPS[n % 3]) for n in range(60)]
        )
        stop = asyncio.get_running_loop().time() + 2.5

        async def lessee(service: JobService, name: str) -> None:
            while asyncio.get_running_loop().time() < stop:
                jobs = await service.lease(name, 60, ["api"], max_jobs=3)
                await asyncio.sleep(0.01)
                for job in jobs:  # run briefly, then complete: room comes back
                    await service.complete(job.id, job.lease_token)
                if not jobs:
                    await asyncio.sleep(0.02)

        await asyncio.gather(
            *(lessee(s, f"{i}-{n}") for i, s in enumerate((one, two)) for n in range(4))
        )
        starts, spans = await _history(stores[0])
    finally:
        for store in stores:
            await store.close()
    assert len(starts) >= RATE  # the test leased something
    for at in starts:  # every window of the period ending at a start holds at most RATE
        window = [t for t in starts if at - timedelta(seconds=PERIOD) < t <= at]
        assert len(window) <= RATE, (at, window)
    for group, intervals in spans.items():
        for start, _ in intervals:
            overlapping = [s for s, end in intervals if s <= start < end]
            assert len(overlapping) <= PER_GROUP, (group, start)


async def _history(
    store: Store,
) -> tuple[list[datetime], dict[str, list[tuple[datetime, datetime]]]]:
    """Every lease's start, and each group's running intervals, from the attempts."""
    page = await store.job_list(JobFilter(limit=1000))
    starts: list[datetime] = []
    spans: dict[str, list[tuple[datetime, datetime]]] = {}
    for job in page:
        for attempt in await store.attempts_list(job.id):
            starts.append(attempt.leased_at)
            end = attempt.finished_at or datetime.max.replace(tzinfo=attempt.leased_at.tzinfo)
            spans.setdefault(job.group_key or "", []).append((attempt.leased_at, end))
    return sorted(starts), spans
