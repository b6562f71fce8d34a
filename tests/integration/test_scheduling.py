"""Priorities, queues, cancellation and limits over HTTP, against the app served in the test
process on each backend (and two coordinator processes on one PostgreSQL for a limit)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.http import Api, eventually
from tests.inproc import InProcessCoordinator
from tests.process import Coordinator


@pytest.fixture
def api(inproc_api: Api) -> Api:
    """Nothing here is about the process: the app served in the test process will do."""
    return inproc_api


async def test_priority_decides_the_order_of_leases(api: Api) -> None:
    low = await api.enqueue("k", priority=-10)
    default = await api.enqueue("k")
    high = await api.enqueue("k", priority=500)
    also_high = await api.enqueue("k", priority=500)
    assert (low["priority"], default["priority"], default["queue"]) == (-10, 0, "default")
    order = [(await api.lease())["job"]["id"] for _ in range(4)]  # type: ignore[index]
    assert order == [high["id"], also_high["id"], default["id"], low["id"]]


async def test_queues_are_isolated(api: Api) -> None:
    mail = await api.enqueue("send", queue="mail")
    bulk = await api.enqueue("send", queue="bulk", priority=100)
    assert await api.lease(queues=["nothing-here"]) is None
    got = await api.lease(queues=["mail"], kinds=["send"])
    assert got is not None and got["job"]["id"] == mail["id"]
    assert await api.lease(queues=["mail"]) is None
    got = await api.lease(queues=["bulk", "mail"])
    assert got is not None and got["job"]["id"] == bulk["id"]
    stats = (await api.get("/stats")).body
    assert stats["by_queue"]["mail"]["running"] == 1
    assert stats["by_queue"]["bulk"]["running"] == 1


async def test_priority_and_queue_are_part_of_an_idempotent_request(api: Api) -> None:
    first = await api.post("/jobs", {"kind": "k", "idempotency_key": "x", "queue": "a"})
    again = await api.post("/jobs", {"kind": "k", "idempotency_key": "x", "queue": "a"})
    other = await api.post("/jobs", {"kind": "k", "idempotency_key": "x", "queue": "b"})
    assert (first.status, again.status, other.status) == (201, 200, 422)
    assert other.body["error"] == "idempotency_conflict"


async def test_cancelling_a_queued_job(api: Api) -> None:
    job = await api.enqueue("k")
    cancelled = await api.post(f"/jobs/{job['id']}/cancel")
    assert cancelled.status == 200
    assert (cancelled.body["status"], cancelled.body["cancel_requested"]) == ("cancelled", True)
    assert (await api.post(f"/jobs/{job['id']}/cancel")).body == cancelled.body  # idempotent
    assert await api.lease() is None
    listed = (await api.get("/jobs", params={"status": "cancelled"})).body["jobs"]
    assert [j["id"] for j in listed] == [job["id"]]
    assert (await api.get("/stats")).body["by_status"]["cancelled"] == 1
    requeued = await api.post(f"/jobs/{job['id']}/requeue")
    assert (requeued.status, requeued.body["status"], requeued.body["cancel_requested"]) == (
        200,
        "queued",
        False,
    )
    assert (await api.lease()) is not None


async def test_cancelling_a_running_job_reaches_its_holder(api: Api) -> None:
    job = await api.enqueue("k")
    lease = await api.lease(lease_seconds=30)
    assert lease is not None
    token, path = lease["token"], f"/jobs/{job['id']}"
    marked = await api.post(f"{path}/cancel")
    assert (marked.status, marked.body["status"], marked.body["cancel_requested"]) == (
        200,
        "running",
        True,
    )
    renew = await api.post(f"{path}/renew", {"token": token})
    assert (renew.status, renew.body["error"]) == (409, "job_cancelled")
    complete = await api.post(f"{path}/complete", {"token": token, "result": "done"})
    assert (complete.status, complete.body["error"]) == (409, "job_cancelled")
    stored = await api.job(job["id"])
    assert (stored["status"], stored["result"]) == ("cancelled", None)
    (attempt,) = (await api.get(f"{path}/attempts")).body["attempts"]
    assert attempt["outcome"] == "cancelled"
    # The holder's release (what a worker sends) is acknowledged, with the cancelled job.
    release = await api.post(f"{path}/release", {"token": token})
    assert (release.status, release.body["status"]) == (200, "cancelled")


async def test_a_release_from_the_holder_ends_the_cancellation(api: Api) -> None:
    job = await api.enqueue("k")
    lease = await api.lease()
    assert lease is not None
    await api.post(f"/jobs/{job['id']}/cancel")
    release = await api.post(f"/jobs/{job['id']}/release", {"token": lease["token"]})
    assert (release.status, release.body["status"]) == (200, "cancelled")


async def test_the_reaper_ends_an_abandoned_cancellation(
    api: Api, inproc: InProcessCoordinator
) -> None:
    job = await api.enqueue("k", max_attempts=5)
    assert await api.lease(lease_seconds=1.0) is not None  # cancelled before it runs out
    await api.post(f"/jobs/{job['id']}/cancel")
    assert (await api.job(job["id"]))["status"] == "running"
    await inproc.advance(1.1)  # past the lease; the reaper's pass ends the job
    assert (await api.job(job["id"]))["status"] == "cancelled"
    assert await api.lease() is None  # not retried


async def test_completed_and_unknown_jobs_cannot_be_cancelled(api: Api) -> None:
    job = await api.enqueue("k")
    lease = await api.lease()
    assert lease is not None
    await api.post(f"/jobs/{job['id']}/complete", {"token": lease["token"]})
    refused = await api.post(f"/jobs/{job['id']}/cancel")
    assert (refused.status, refused.body["error"]) == (409, "invalid_transition")
    assert (await api.post("/jobs/999999/cancel")).status == 404


async def test_schedules_are_managed_over_http(api: Api) -> None:
    body = {"cron": "0 9 * * MON-FRI", "timezone": "Europe/Berlin", "kind": "report"}
    created = await api.request("PUT", "/schedules/daily-report", json=body)
    assert created.status == 201, created
    schedule = created.body
    assert (schedule["catch_up"], schedule["enabled"], schedule["queue"]) == (
        "skip",
        True,
        "default",
    )
    next_fire = datetime.fromisoformat(schedule["next_fire_at"])
    assert next_fire.utcoffset() is not None and next_fire.hour in (7, 8)  # 09:00 Berlin
    replaced = await api.request(
        "PUT", "/schedules/daily-report", json={**body, "enabled": False, "priority": 3}
    )
    assert (replaced.status, replaced.body["enabled"], replaced.body["priority"]) == (200, False, 3)
    assert (await api.get("/schedules/daily-report")).body == replaced.body
    assert [s["name"] for s in (await api.get("/schedules")).body["schedules"]] == ["daily-report"]
    assert (await api.request("DELETE", "/schedules/daily-report")).status == 204
    gone = await api.get("/schedules/daily-report")
    assert (gone.status, gone.body["error"]) == (404, "schedule_not_found")
    assert (await api.request("DELETE", "/schedules/daily-report")).status == 404


async def test_limits_are_managed_over_http(api: Api) -> None:
    put = await api.request("PUT", "/limits/slow/api", json={"max_running": 2})
    # 1.1's body; 1.2 answers with the limits it leaves unset too.
    stored = {
        "kind": "slow/api",
        "max_running": 2,
        "running": 0,
        "max_running_per_group": None,
        "rate": None,
        "fair": False,
    }
    assert (put.status, put.body) == (200, stored)
    listed = (await api.get("/limits")).body
    assert listed == {"limits": [stored]}
    assert (await api.request("DELETE", "/limits/slow/api")).status == 204
    missing = await api.request("DELETE", "/limits/slow/api")
    assert (missing.status, missing.body["error"]) == (404, "limit_not_found")


BAD_INPUT: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/jobs", {"kind": "k", "priority": 1001}),
    ("POST", "/jobs", {"kind": "k", "priority": 1.5}),
    ("POST", "/jobs", {"kind": "k", "queue": ""}),
    ("POST", "/jobs", {"kind": "k", "queue": "x" * 101}),
    ("POST", "/lease", {"worker_id": "w", "queues": []}),
    ("PUT", "/schedules/s", {"cron": "61 * * * *", "kind": "k"}),
    ("PUT", "/schedules/s", {"cron": "* * * * *", "kind": "k", "timezone": "Mars/Base"}),
    ("PUT", "/schedules/s", {"cron": "* * * * *", "kind": "k", "catch_up": "all"}),
    ("PUT", "/schedules/s", {"cron": "* * * * *"}),
    ("PUT", "/schedules/-bad-", {"cron": "* * * * *", "kind": "k"}),
    ("PUT", "/schedules/s", {"cron": "* * * * *", "kind": "k", "max_attempts": 0}),
    ("PUT", "/limits/k", {"max_running": 0}),
    ("PUT", "/limits/k", {"max_running": "3"}),
    ("PUT", "/limits/k", {}),
]


async def test_bad_scheduling_input_is_a_422_that_changes_nothing(api: Api) -> None:
    for method, path, body in BAD_INPUT:
        answer = await api.request(method, path, json=body)
        assert answer.status == 422, (method, path, body, answer)
        assert answer.body["error"] in ("validation_error", "invalid_request")
    assert (await api.get("/schedules")).body == {"schedules": []}
    assert (await api.get("/limits")).body == {"limits": []}
    assert await api.lease() is None


LIMIT = 3
N_LESSEES = 64


async def test_a_limit_is_never_exceeded_by_64_concurrent_lessees(
    api: Api, inproc: InProcessCoordinator
) -> None:
    """Lessees take any kind; the limited kind never runs more than LIMIT jobs at once,
    as seen by polling the API during the run and from the attempt history after it."""
    # The work moves the fake clock, so that the attempt history's times overlap as the runs did.
    await limited_run(api, [inproc.url], work=lambda: inproc.advance(0.02, sweep=False))


@pytest.mark.postgres
async def test_a_limit_holds_across_two_coordinators(postgres_url: str, tmp_path: Path) -> None:
    """The same, with the 64 lessees split over two coordinators on one PostgreSQL."""
    one = Coordinator(postgres_url, tmp_path)
    two = Coordinator(postgres_url, tmp_path)
    try:
        await asyncio.gather(asyncio.to_thread(one.start), asyncio.to_thread(two.start))
        async with aiohttp.ClientSession() as session:
            await limited_run(Api(one.url, session), [one.url, two.url])
    finally:
        one.kill()
        two.kill()


async def limited_run(
    api: Api, urls: list[str], work: Callable[[], Awaitable[None]] = lambda: asyncio.sleep(0.02)
) -> None:
    assert (await api.request("PUT", "/limits/fragile", json={"max_running": LIMIT})).status == 200
    for kind in ("fragile", "sturdy"):
        jobs = [{"kind": kind, "payload": i} for i in range(48)]
        assert (await api.post("/jobs/batch", {"jobs": jobs})).status == 200
    seen: list[int] = []
    done = asyncio.Event()

    async def watch() -> None:
        while not done.is_set():
            (limit,) = (await api.get("/limits")).body["limits"]
            running = await api.get("/jobs", params={"status": "running", "kind": "fragile"})
            seen.extend([limit["running"], len(running.body["jobs"])])
            await asyncio.sleep(0.01)

    async def lessee(n: int, session: aiohttp.ClientSession) -> None:
        mine = Api(urls[n % len(urls)], session)
        while True:
            lease = await mine.lease(f"w{n}", wait_seconds=0.5)
            if lease is None:
                stats = (await mine.get("/stats")).body["by_status"]
                if stats["queued"] == 0:
                    return
                continue
            await work()
            path = f"/jobs/{lease['job']['id']}/complete"
            assert (await mine.post(path, {"token": lease["token"]})).status == 200

    watcher = asyncio.create_task(watch())
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        await asyncio.wait_for(
            asyncio.gather(*(lessee(n, session) for n in range(N_LESSEES))), timeout=90
        )
    done.set()
    await watcher
    assert seen and max(seen) <= LIMIT
    # Another coordinator's completions show in this one's /stats within a second (its
    # figures are cached that long: coordinator/service/figures.py), so read until they do.

    async def all_completed() -> bool:
        return bool((await api.get("/stats")).body["by_status"]["completed"] == 96)

    await eventually(all_completed, within=10)
    assert await peak_from_history(api, "fragile") == LIMIT  # reached, never passed


async def peak_from_history(api: Api, kind: str) -> int:
    """Replay every lease of ``kind`` from the attempt history: the most that ever ran at
    one instant."""
    jobs = (await api.get("/jobs", params={"kind": kind, "limit": "1000"})).body["jobs"]
    events: list[tuple[datetime, int]] = []
    for job in jobs:
        for a in (await api.get(f"/jobs/{job['id']}/attempts")).body["attempts"]:
            events.append((datetime.fromisoformat(a["leased_at"]), 1))
            events.append((datetime.fromisoformat(a["finished_at"]), -1))
    running = peak = 0
    for _, step in sorted(events):  # at a tie, an end (-1) sorts before a start (+1)
        running += step
        peak = max(peak, running)
    assert len(events) == 2 * len(jobs)
    return peak
