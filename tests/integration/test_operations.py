"""Operator features through the coordinator app served in the test process
(tests/inproc.py) on each backend: delete, paused queues, retention, worker presence,
run-now, time limits and list filters. Nothing here is about the process, so none is
started (a coordinator process costs about a second of CPU to start)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import aiohttp
import pytest

from tests.conftest import InProcessFactory
from tests.http import Api
from tests.inproc import InProcessCoordinator

BEAT = {
    "worker_id": "w-ops",
    "host": "build-1",
    "pid": 4242,
    "version": "0.1.0",
    "kinds": ["served"],
    "concurrency": 4,
    "started_at": "2026-01-01T00:00:00Z",
}


@pytest.fixture
async def ops(start_inproc: InProcessFactory) -> InProcessCoordinator:
    """A coordinator that prunes completed jobs 0.2 s after they finish (and others never)."""
    return await start_inproc(
        retain_completed_seconds=0.2,
        retain_cancelled_seconds=0.0,
        retain_dead_seconds=0.0,
        prune_interval_seconds=0.05,
    )


@pytest.fixture
async def ops_api(ops: InProcessCoordinator) -> AsyncIterator[Api]:
    async with aiohttp.ClientSession() as session:
        yield Api(ops.url, session)


async def test_delete_refuses_running_jobs_and_frees_the_rest(ops_api: Api) -> None:
    """A queued job is deleted (204, then 404); a running one is refused with 409 until it
    is cancelled and its holder reports."""
    queued = await ops_api.enqueue("del")
    assert (await ops_api.request("DELETE", f"/jobs/{queued['id']}")).status == 204
    assert (await ops_api.get(f"/jobs/{queued['id']}")).status == 404
    assert (await ops_api.request("DELETE", f"/jobs/{queued['id']}")).status == 404
    running = await ops_api.enqueue("del")
    lease = await ops_api.lease(kinds=["del"])
    assert lease is not None
    refused = await ops_api.request("DELETE", f"/jobs/{running['id']}")
    assert refused.status == 409 and refused.body["error"] == "invalid_transition", refused
    await ops_api.post(f"/jobs/{running['id']}/cancel")
    await ops_api.post(f"/jobs/{running['id']}/fail", {"token": lease["token"], "error": "x"})
    assert (await ops_api.request("DELETE", f"/jobs/{running['id']}")).status == 204


async def test_bulk_delete_by_filter(ops_api: Api) -> None:
    for queue in ("a", "a", "b"):
        await ops_api.enqueue("bulk", queue=queue)
    done = await ops_api.post("/jobs/delete", {"kind": "bulk", "queue": "a"})
    assert done.status == 200 and done.body == {"deleted": 2}, done
    refused = await ops_api.post("/jobs/delete", {"status": "running"})
    assert refused.status == 422, refused
    left = await ops_api.get("/jobs", params={"kind": "bulk"})
    assert [j["queue"] for j in left.body["jobs"]] == ["b"]


async def test_a_paused_queue_holds_its_jobs_and_resume_wakes_a_long_poll(ops_api: Api) -> None:
    """Paused: nothing is leased from it and GET /queues says so; a long poll waiting on it
    is answered as soon as the queue is resumed."""
    assert (await ops_api.post("/queues/held/pause")).body == {"name": "held", "paused": True}
    job = await ops_api.enqueue("p", queue="held")
    assert await ops_api.lease(queues=["held"]) is None
    queues = {q["name"]: q for q in (await ops_api.get("/queues")).body["queues"]}
    assert queues["held"]["paused"] and queues["held"]["counts"]["queued"] == 1
    poll = asyncio.create_task(ops_api.lease(queues=["held"], wait_seconds=20))
    await asyncio.sleep(0.3)  # the poll is waiting (it cannot have been answered: paused)
    assert not poll.done()
    started = time.monotonic()
    assert (await ops_api.post("/queues/held/resume")).status == 200
    lease = await asyncio.wait_for(poll, 10)
    assert lease is not None and lease["job"]["id"] == job["id"]
    assert time.monotonic() - started < 5


async def test_oldest_waiting_leaves_paused_queues_out(
    ops: InProcessCoordinator, ops_api: Api
) -> None:
    """/stats' oldest waiting job is one a worker could lease: a paused queue's jobs wait
    for an operator, and /queues still gives that queue's own figure."""
    hour_ago = (ops.now() - timedelta(hours=1)).isoformat()
    await ops_api.post("/queues/frozen/pause")
    await ops_api.enqueue("old", queue="frozen", run_after=hour_ago)
    assert (await ops_api.get("/stats")).body["oldest_queued_age_seconds"] is None
    await ops_api.enqueue("new", queue="open")
    age = (await ops_api.get("/stats")).body["oldest_queued_age_seconds"]
    assert age is not None and age < 600
    queues = {q["name"]: q for q in (await ops_api.get("/queues")).body["queues"]}
    assert queues["frozen"]["oldest_queued_age_seconds"] >= 3600
    await ops_api.post("/queues/frozen/resume")
    assert (await ops_api.get("/stats")).body["oldest_queued_age_seconds"] >= 3600


async def test_completed_jobs_are_pruned_and_totals_stay(
    ops: InProcessCoordinator, ops_api: Api
) -> None:
    job = await ops_api.enqueue("short")
    lease = await ops_api.lease(kinds=["short"])
    assert lease is not None
    await ops_api.post(f"/jobs/{job['id']}/complete", {"token": lease["token"]})
    await ops.advance(0.3)  # past its retention; the pruner's next pass deletes it
    deadline = time.monotonic() + 10
    while (await ops_api.get(f"/jobs/{job['id']}")).status != 404:
        assert time.monotonic() < deadline, "the completed job was never pruned"
        await asyncio.sleep(0.05)
    stats = (await ops_api.get("/stats")).body
    assert stats["totals"]["completed"] == 1
    assert stats["by_status"]["completed"] == 0


async def test_workers_are_listed_and_unserved_kinds_reported(ops_api: Api) -> None:
    await ops_api.enqueue("served")
    await ops_api.enqueue("orphan", queue="q9")
    beat = await ops_api.post("/workers/heartbeat", BEAT)
    assert beat.status == 200 and beat.body["live"], beat
    (worker,) = (await ops_api.get("/workers")).body["workers"]
    assert worker["worker_id"] == "w-ops" and worker["kinds"] == ["served"] and worker["live"]
    stats = (await ops_api.get("/stats")).body
    assert stats["unserved"] == [{"queue": "q9", "kind": "orphan", "queued": 1}]


async def test_run_now_and_time_limits(ops_api: Api) -> None:
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    job = await ops_api.enqueue("later", run_after=later, timeout_seconds=1.5)
    assert job["timeout_seconds"] == 1.5
    assert await ops_api.lease(kinds=["later"]) is None
    now = await ops_api.post(f"/jobs/{job['id']}/run-now")
    assert now.status == 200, now
    lease = await ops_api.lease(kinds=["later"])
    assert lease is not None and lease["job"]["timeout_seconds"] == 1.5
    again = await ops_api.post(f"/jobs/{job['id']}/run-now")
    assert again.status == 409, again


async def test_lists_newest_first_with_error_summaries(ops_api: Api) -> None:
    first = await ops_api.enqueue("listed", max_attempts=1)
    second = await ops_api.enqueue("listed", queue="other")
    lease = await ops_api.lease(kinds=["listed"])
    assert lease is not None and lease["job"]["id"] == first["id"]
    error = "Traceback (most recent call last):\n  File x\nKeyError: 'user'\n"
    await ops_api.post(f"/jobs/{first['id']}/fail", {"token": lease["token"], "error": error})
    newest = (await ops_api.get("/jobs", params={"order": "desc", "kind": "listed"})).body
    assert [j["id"] for j in newest["jobs"]] == [second["id"], first["id"]]
    found = await ops_api.get("/jobs", params={"error_contains": "KeyError"})
    (dead,) = found.body["jobs"]
    assert dead["error_summary"] == "KeyError: 'user'" and dead["last_error"] == error
    in_other = await ops_api.get("/jobs", params={"queue": "other"})
    assert [j["id"] for j in in_other.body["jobs"]] == [second["id"]]
    by_key = await ops_api.get("/jobs", params={"idempotency_key": "nope"})
    assert by_key.body["jobs"] == []
