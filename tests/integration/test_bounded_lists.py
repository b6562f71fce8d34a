"""What one client can make the coordinator hold or answer stays bounded: the workers it
lists, what a heartbeat declares, the result waits it keeps (DESIGN.md §16)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from leasehold.coordinator.service.requests import Enqueue
from tests.conftest import InProcessFactory
from tests.http import Api, eventually
from tests.inproc import InProcessCoordinator


def beat(n: int, **fields: Any) -> dict[str, Any]:
    return {
        "worker_id": f"w-{n}",
        "host": "h",
        "pid": n,
        "version": "1",
        "concurrency": 1,
        "started_at": "2026-01-01T00:00:00Z",
        **fields,
    }


@pytest.fixture
async def coordinator(start_inproc: InProcessFactory) -> InProcessCoordinator:
    return await start_inproc(max_workers=5, max_waiting_results=2, prune_interval_seconds=0.05)


@pytest.fixture
async def api(coordinator: InProcessCoordinator) -> AsyncIterator[Api]:
    async with aiohttp.ClientSession() as session:
        yield Api(coordinator.url, session)


async def test_a_heartbeat_declares_at_most_a_leases_worth_of_names(api: Api) -> None:
    """100 kinds and 100 queues, as a lease may name: one more is 422."""
    ok = await api.post("/workers/heartbeat", beat(1, kinds=[f"k{i}" for i in range(100)]))
    assert ok.status == 200, ok
    for field in ("kinds", "queues"):
        refused = await api.post(
            "/workers/heartbeat", beat(2, **{field: [f"n{i}" for i in range(101)]})
        )
        assert refused.status == 422 and refused.body["error"] == "validation_error", refused


async def test_workers_are_listed_by_pages_and_kept_to_the_cap(
    api: Api, coordinator: InProcessCoordinator
) -> None:
    """Pages follow next_cursor; beyond max_workers the least recently seen go at the
    next prune, and never reach a list."""
    for n in range(8):
        assert (await api.post("/workers/heartbeat", beat(n))).status == 200
        await coordinator.advance(0.01, sweep=False)  # each seen after the one before
    first = (await api.get("/workers?limit=2")).body
    assert [w["worker_id"] for w in first["workers"]] == ["w-7", "w-6"]
    seen = [w["worker_id"] for w in first["workers"]]
    cursor = first["next_cursor"]
    while cursor is not None:
        page = (await api.get(f"/workers?limit=2&cursor={cursor}")).body
        seen += [w["worker_id"] for w in page["workers"]]
        cursor = page["next_cursor"]
    assert seen == ["w-7", "w-6", "w-5", "w-4", "w-3"]  # max_workers=5

    async def trimmed() -> bool:
        return len(await coordinator.service.store.workers_list(3600)) == 5

    await eventually(trimmed, within=10.0, interval=0.02)


async def test_result_waits_past_the_cap_answer_at_once(
    api: Api, coordinator: InProcessCoordinator
) -> None:
    """Two waits hold (max_waiting_results=2); a third is answered with the job as it is."""
    service = coordinator.service
    job = (await service.enqueue(Enqueue("slow"))).job
    waits = [asyncio.ensure_future(api.get(f"/jobs/{job.id}?wait_seconds=20")) for _ in range(2)]

    async def holding() -> bool:
        return service.finishes.waiting == 2

    await eventually(holding, within=10.0, interval=0.01)
    third = await asyncio.wait_for(api.get(f"/jobs/{job.id}?wait_seconds=20"), 5)
    assert third.status == 200 and third.body["status"] == "queued"
    await service.cancel(job.id)
    for wait in waits:
        answer = await asyncio.wait_for(wait, 10)
        assert answer.body["status"] == "cancelled"
