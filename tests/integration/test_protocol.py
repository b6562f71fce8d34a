"""The wire contract of the coordinator core, against the app served in the test process."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import aiohttp
import pytest

from tests.http import Api
from tests.inproc import InProcessCoordinator


@pytest.fixture
def api(inproc_api: Api) -> Api:
    """Nothing here is about the process: the app served in the test process will do."""
    return inproc_api


async def test_health(api: Api) -> None:
    assert (await api.get("/health")).status == 200


async def test_enqueue_then_get_has_every_field(api: Api) -> None:
    job = await api.enqueue("email", payload={"to": "a@example.com"})
    assert job["status"] == "queued"
    assert job["attempts"] == 0
    assert job["max_attempts"] == 5
    assert job["lease_token"] == 0
    assert job["lease_owner"] is None
    assert job["result"] is None
    for field in ("run_after", "created_at"):
        assert datetime.fromisoformat(job[field]).utcoffset() == timedelta(0)
    assert await api.job(job["id"]) == job


async def test_lease_returns_job_and_token(api: Api) -> None:
    job = await api.enqueue("email")
    lease = await api.lease("w1", lease_seconds=5)
    assert lease is not None
    # Tokens start above a floor taken from the clock at start (DESIGN.md §4).
    assert lease["token"] > 1_700_000_000 * 1_000_000
    assert lease["job"]["id"] == job["id"]
    assert lease["job"]["status"] == "running"
    assert lease["job"]["lease_token"] == lease["token"]
    assert lease["job"]["lease_owner"] == "w1"
    assert lease["job"]["attempts"] == 1
    expires = datetime.fromisoformat(lease["job"]["lease_expires_at"])
    assert timedelta(seconds=3) < expires - datetime.now(UTC) <= timedelta(seconds=6)


async def test_lease_on_empty_queue_is_204_without_body(api: Api) -> None:
    a = await api.post("/lease", {"worker_id": "w"})
    assert a.status == 204
    assert a.body is None


async def test_lease_takes_oldest_first_and_respects_run_after_and_kinds(api: Api) -> None:
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    await api.enqueue("a", run_after=later)
    first = await api.enqueue("a")
    second = await api.enqueue("b")
    third = await api.enqueue("a")
    got = await api.lease("w", kinds=["b"])
    assert got is not None and got["job"]["id"] == second["id"]
    got = await api.lease("w")
    assert got is not None and got["job"]["id"] == first["id"]
    got = await api.lease("w", kinds=["a", "zzz"])
    assert got is not None and got["job"]["id"] == third["id"]
    assert await api.lease("w") is None  # the future one is not yet due


async def test_concurrent_leasing_leases_every_job_exactly_once(
    api: Api, inproc: InProcessCoordinator
) -> None:
    n_jobs, n_clients = 600, 64
    ids = set()
    for start in range(0, n_jobs, 100):
        created = await asyncio.gather(
            *(api.enqueue("c", payload=i) for i in range(start, start + 100))
        )
        ids |= {j["id"] for j in created}
    leased: list[tuple[int, int, str]] = []

    async def client(n: int) -> None:
        async with aiohttp.ClientSession() as session:
            mine = Api(inproc.url, session)
            while (lease := await mine.lease(f"w{n}", lease_seconds=60)) is not None:
                assert lease["job"]["lease_owner"] == f"w{n}"
                leased.append((lease["job"]["id"], lease["token"], f"w{n}"))

    await asyncio.gather(*(client(n) for n in range(n_clients)))
    assert len(leased) == n_jobs
    assert {job_id for job_id, _, _ in leased} == ids
    # One lease each: tokens are coordinator-wide, so every job's is its own.
    assert len({token for _, token, _ in leased}) == n_jobs
    for job_id, token, worker in leased[:50]:
        job = await api.job(job_id)
        assert (job["status"], job["lease_token"], job["lease_owner"]) == ("running", token, worker)


async def test_idempotent_enqueue_body_key(api: Api) -> None:
    body = {"kind": "email", "payload": {"n": 1}, "idempotency_key": "k-1"}
    first = await api.post("/jobs", body)
    again = await api.post("/jobs", body)
    assert (first.status, again.status) == (201, 200)
    assert again.body == first.body
    different = await api.post("/jobs", {**body, "payload": {"n": 2}})
    assert different.status == 422
    assert different.body["error"] == "idempotency_conflict"
    listed = await api.get("/jobs")
    assert len(listed.body["jobs"]) == 1


async def test_idempotent_enqueue_header_key(api: Api) -> None:
    body = {"kind": "email", "payload": [1, 2], "max_attempts": 3}
    first = await api.post("/jobs", body, headers={"Idempotency-Key": "h-1"})
    again = await api.post("/jobs", body, headers={"Idempotency-Key": "h-1"})
    assert (first.status, again.status) == (201, 200)
    assert first.body["idempotency_key"] == "h-1"
    assert again.body["id"] == first.body["id"]
    # The same key in the body is the same request.
    same = await api.post("/jobs", {**body, "idempotency_key": "h-1"})
    assert (same.status, same.body["id"]) == (200, first.body["id"])
    other = await api.post("/jobs", {**body, "max_attempts": 4}, headers={"Idempotency-Key": "h-1"})
    assert other.status == 422
    clash = await api.post(
        "/jobs", {**body, "idempotency_key": "b-1"}, headers={"Idempotency-Key": "h-2"}
    )
    assert clash.status == 422
    assert len((await api.get("/jobs")).body["jobs"]) == 1


async def test_complete_stores_result_and_duplicate_completion_keeps_the_first(api: Api) -> None:
    job = await api.enqueue()
    lease = await api.lease()
    assert lease is not None
    done = await api.post(
        f"/jobs/{job['id']}/complete", {"token": lease["token"], "result": {"v": 1}}
    )
    assert done.status == 200
    assert (done.body["status"], done.body["result"]) == ("completed", {"v": 1})
    again = await api.post(
        f"/jobs/{job['id']}/complete", {"token": lease["token"], "result": {"v": 2}}
    )
    assert again.status == 200
    assert again.body["result"] == {"v": 1}
    assert (await api.job(job["id"]))["result"] == {"v": 1}


async def test_stale_and_unissued_tokens_get_409_and_change_nothing(api: Api) -> None:
    job = await api.enqueue()
    lease = await api.lease(lease_seconds=30)
    assert lease is not None
    before = await api.job(job["id"])
    for token in (0, 2, 99):
        for verb, body in (
            ("renew", {}),
            ("complete", {"result": 1}),
            ("fail", {"error": "x"}),
            ("release", {}),
        ):
            a = await api.post(f"/jobs/{job['id']}/{verb}", {"token": token, **body})
            assert a.status == 409, (verb, token, a)
            assert a.body["error"] == "stale_token"
    assert await api.job(job["id"]) == before


async def test_token_of_a_never_leased_job_is_409(api: Api) -> None:
    job = await api.enqueue()
    for verb, body in (("complete", {}), ("fail", {"error": "x"}), ("renew", {})):
        a = await api.post(f"/jobs/{job['id']}/{verb}", {"token": 0, **body})
        assert a.status == 409
    assert (await api.job(job["id"]))["status"] == "queued"


async def test_renew_extends_from_now(api: Api) -> None:
    job = await api.enqueue()
    lease = await api.lease(lease_seconds=2)
    assert lease is not None
    token = lease["token"]
    renewed = await api.post(f"/jobs/{job['id']}/renew", {"token": token, "lease_seconds": 100})
    assert renewed.status == 200
    expires = datetime.fromisoformat(renewed.body["lease_expires_at"])
    assert timedelta(seconds=95) < expires - datetime.now(UTC) <= timedelta(seconds=101)
    # Without lease_seconds: the length the lease was last granted for.
    again = await api.post(f"/jobs/{job['id']}/renew", {"token": token})
    expires = datetime.fromisoformat(again.body["lease_expires_at"])
    assert timedelta(seconds=95) < expires - datetime.now(UTC) <= timedelta(seconds=101)


async def test_renew_after_expiry_is_409(api: Api, inproc: InProcessCoordinator) -> None:
    job = await api.enqueue()
    lease = await api.lease(lease_seconds=0.2)
    assert lease is not None
    await inproc.advance(0.3, sweep=False)  # past the lease, before any reaper pass
    a = await api.post(f"/jobs/{job['id']}/renew", {"token": lease["token"]})
    assert a.status == 409


async def test_complete_after_fail_and_fail_after_complete_are_409(api: Api) -> None:
    a_job = await api.enqueue(max_attempts=1)
    lease = await api.lease()
    assert lease is not None
    failed = await api.post(f"/jobs/{a_job['id']}/fail", {"token": lease["token"], "error": "boom"})
    assert failed.status == 200
    assert (
        await api.post(f"/jobs/{a_job['id']}/complete", {"token": lease["token"]})
    ).status == 409
    b_job = await api.enqueue()
    lease = await api.lease()
    assert lease is not None
    assert (
        await api.post(f"/jobs/{b_job['id']}/complete", {"token": lease["token"]})
    ).status == 200
    a = await api.post(f"/jobs/{b_job['id']}/fail", {"token": lease["token"], "error": "x"})
    assert a.status == 409
    assert (await api.job(b_job["id"]))["status"] == "completed"


async def test_unknown_job_is_404_on_every_per_job_endpoint(api: Api) -> None:
    assert (await api.get("/jobs/123456")).status == 404
    assert (await api.get("/jobs/123456/attempts")).status == 404
    for verb, body in (
        ("renew", {"token": 1}),
        ("complete", {"token": 1}),
        ("fail", {"token": 1, "error": "e"}),
        ("release", {"token": 1}),
        ("requeue", None),
    ):
        a = await api.post(f"/jobs/123456/{verb}", body)
        assert a.status == 404, verb
        assert a.body["error"] == "job_not_found"
