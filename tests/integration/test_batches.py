"""Batch enqueue, batch lease and batch reports: one transaction, each item on its own."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from tests.http import Api


@pytest.fixture
def api(inproc_api: Api) -> Api:
    """Nothing here is about the process: the app served in the test process will do."""
    return inproc_api


async def test_batch_enqueue_reports_created_and_existing(api: Api) -> None:
    await api.enqueue("k", idempotency_key="seen")
    a = await api.post(
        "/jobs/batch",
        {
            "jobs": [
                {"kind": "k", "idempotency_key": "seen"},
                {"kind": "k", "payload": 1, "idempotency_key": "new"},
                {"kind": "other", "payload": [1]},
            ]
        },
    )
    assert a.status == 200
    assert [j["created"] for j in a.body["jobs"]] == [False, True, True]
    assert a.body["jobs"][2]["job"]["kind"] == "other"


async def test_batch_enqueue_with_a_conflicting_key_inserts_nothing(api: Api) -> None:
    await api.enqueue("k", payload=1, idempotency_key="taken")
    a = await api.post(
        "/jobs/batch",
        {
            "jobs": [
                {"kind": "k", "payload": 2},
                {"kind": "k", "payload": 2, "idempotency_key": "taken"},
            ]
        },
    )
    assert a.status == 422
    assert len((await api.get("/jobs")).body["jobs"]) == 1


async def test_batch_enqueue_bounds(api: Api) -> None:
    assert (await api.post("/jobs/batch", {"jobs": []})).status == 422
    too_many = {"jobs": [{"kind": "k"}] * 1001}
    assert (await api.post("/jobs/batch", too_many)).status == 422
    assert (await api.post("/jobs/batch", {"jobs": [{"kind": ""}]})).status == 422
    assert (await api.get("/jobs")).body["jobs"] == []


async def test_batch_lease_gives_each_job_its_own_token(api: Api) -> None:
    await api.post("/jobs/batch", {"jobs": [{"kind": "k", "payload": i} for i in range(5)]})
    a = await api.post("/lease", {"worker_id": "w", "max_jobs": 3})
    assert a.status == 200
    leases = a.body["leases"]
    assert [lease["job"]["payload"] for lease in leases] == [0, 1, 2]
    assert all(lease["token"] == lease["job"]["lease_token"] for lease in leases)
    tokens = [lease["token"] for lease in leases]
    assert tokens == sorted(set(tokens))  # coordinator-wide: unique, in lease order
    rest = await api.post("/lease", {"worker_id": "w", "max_jobs": 10})
    assert len(rest.body["leases"]) == 2
    assert (await api.post("/lease", {"worker_id": "w", "max_jobs": 10})).status == 204
    assert (await api.post("/lease", {"worker_id": "w", "max_jobs": 0})).status == 422


async def test_batch_reports_answer_each_item(api: Api) -> None:
    await api.post("/jobs/batch", {"jobs": [{"kind": "k"} for _ in range(4)]})
    leases = (await api.post("/lease", {"worker_id": "w", "max_jobs": 4})).body["leases"]
    ids = [lease["job"]["id"] for lease in leases]
    t0, t1, t2, _ = (lease["token"] for lease in leases)
    renewed = await api.post(
        "/batch/renew",
        {"items": [{"id": ids[0], "token": t0, "lease_seconds": 60}, {"id": ids[1], "token": t0}]},
    )
    assert [r["outcome"] for r in renewed.body["results"]] == ["ok", "stale"]
    done = await api.post(
        "/batch/complete",
        {
            "items": [
                {"id": ids[0], "token": t0, "result": "a"},
                {"id": ids[1], "token": t1 + 100, "result": "stale"},
                {"id": 999_999, "token": 1},
                {"id": ids[0], "token": t0, "result": "repeat"},
            ]
        },
    )
    results = done.body["results"]
    assert [r["outcome"] for r in results] == ["ok", "stale", "not_found", "ok"]
    assert results[1]["error"] == "stale_token"
    assert results[3]["job"]["result"] == "a"
    failed = await api.post(
        "/batch/fail",
        {
            "items": [
                {"id": ids[2], "token": t2, "error": "x", "retryable": False},
                {"id": ids[0], "token": t0, "error": "after complete"},
            ]
        },
    )
    assert [r["outcome"] for r in failed.body["results"]] == ["ok", "conflict"]
    assert (await api.job(ids[0]))["result"] == "a"
    assert (await api.job(ids[1]))["status"] == "running"
    assert (await api.job(ids[2]))["status"] == "dead"


async def test_long_poll_is_woken_by_an_enqueue(api: Api) -> None:
    async def waiting_lease() -> tuple[float, int]:
        started = time.monotonic()
        a = await api.post("/lease", {"worker_id": "w", "wait_seconds": 20})
        return time.monotonic() - started, a.status

    waiter = asyncio.create_task(waiting_lease())
    await asyncio.sleep(0.3)  # let the lease request start waiting; no jobs exist yet
    assert not waiter.done()
    await api.enqueue("k")
    waited, status = await asyncio.wait_for(waiter, 15)
    assert status == 200
    assert waited < 10  # woken by the enqueue, far before its 20 s wait ran out


async def test_long_poll_times_out_with_204(api: Api) -> None:
    started = time.monotonic()
    a = await api.post("/lease", {"worker_id": "w", "wait_seconds": 0.5})
    assert a.status == 204
    assert time.monotonic() - started >= 0.45


async def test_an_abandoned_long_poll_leases_nothing(api: Api) -> None:
    """A lessee that hung up before a job arrived is not handed one."""
    abandoned = asyncio.create_task(api.post("/lease", {"worker_id": "gone", "wait_seconds": 20}))
    await asyncio.sleep(0.3)  # let the long poll start waiting
    abandoned.cancel()  # closes the connection
    with contextlib.suppress(asyncio.CancelledError):
        await abandoned
    job = await api.enqueue("k")
    await asyncio.sleep(0.3)
    assert (await api.job(job["id"]))["status"] == "queued"
    lease = await api.lease("present")
    assert lease is not None
    assert lease["job"]["id"] == job["id"]
