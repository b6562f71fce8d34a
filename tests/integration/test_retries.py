"""Retries with backoff, dead jobs, requeue and expired-lease recovery, end to end."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from tests.http import Api
from tests.inproc import InProcessCoordinator


@pytest.fixture
def api(inproc_api: Api) -> Api:
    """Nothing here is about the process: the app served in the test process will do."""
    return inproc_api


async def lease_when_due(
    api: Api, inproc: InProcessCoordinator, worker: str = "w", **kw: Any
) -> dict[str, Any]:
    """Lease the next job, moving time past its backoff if it is not due yet."""
    lease = await api.lease(worker, **kw)
    if lease is None:
        await inproc.advance(inproc.settings.retry_max_seconds)  # the longest backoff
        lease = await api.lease(worker, **kw)
    assert lease is not None
    return lease


async def test_fails_twice_then_succeeds(api: Api, inproc: InProcessCoordinator) -> None:
    job = await api.enqueue("flaky", max_attempts=5)
    tokens = []
    for n in (1, 2):
        lease = await lease_when_due(api, inproc)
        tokens.append(lease["token"])
        failed = await api.post(
            f"/jobs/{job['id']}/fail", {"token": lease["token"], "error": f"try {n}"}
        )
        assert failed.status == 200
        assert failed.body["status"] == "queued"
        assert failed.body["last_error"] == f"try {n}"
        assert datetime.fromisoformat(failed.body["run_after"]) >= datetime.fromisoformat(
            failed.body["leased_at"]
        )
    lease = await lease_when_due(api, inproc)
    done = await api.post(f"/jobs/{job['id']}/complete", {"token": lease["token"], "result": 1})
    assert (done.body["status"], done.body["attempts"]) == ("completed", 3)
    attempts = (await api.get(f"/jobs/{job['id']}/attempts")).body["attempts"]
    assert [a["outcome"] for a in attempts] == ["failed", "failed", "completed"]
    assert [a["token"] for a in attempts] == [*tokens, lease["token"]]
    assert tokens[1] == tokens[0] + 1 and lease["token"] == tokens[1] + 1


async def test_always_failing_job_ends_dead_with_its_last_error(
    api: Api, inproc: InProcessCoordinator
) -> None:
    job = await api.enqueue("doomed", max_attempts=3)
    for n in range(1, 4):
        lease = await lease_when_due(api, inproc)
        a = await api.post(f"/jobs/{job['id']}/fail", {"token": lease["token"], "error": f"e{n}"})
        last = lease["token"]
        assert a.status == 200
    final = await api.job(job["id"])
    assert (final["status"], final["attempts"], final["last_error"]) == ("dead", 3, "e3")
    assert await api.lease() is None
    # Repeating the last report changes nothing.
    again = await api.post(f"/jobs/{job['id']}/fail", {"token": last, "error": "other"})
    assert again.status == 200
    assert await api.job(job["id"]) == final


async def test_not_retryable_goes_dead_at_once(api: Api, inproc: InProcessCoordinator) -> None:
    job = await api.enqueue("bad-input", max_attempts=5)
    lease = await lease_when_due(api, inproc)
    a = await api.post(
        f"/jobs/{job['id']}/fail", {"token": lease["token"], "error": "no", "retryable": False}
    )
    assert (a.body["status"], a.body["attempts"]) == ("dead", 1)


async def test_retry_after_seconds_overrides_backoff_up_to_the_cap(
    api: Api, inproc: InProcessCoordinator
) -> None:
    job = await api.enqueue("later")
    lease = await lease_when_due(api, inproc)
    a = await api.post(
        f"/jobs/{job['id']}/fail",
        {"token": lease["token"], "error": "429", "retry_after_seconds": 500},
    )
    failed_at = datetime.fromisoformat(a.body["leased_at"])
    run_after = datetime.fromisoformat(a.body["run_after"])
    # The coordinator under test caps retries at 1 s (--retry-max-seconds 1).
    assert timedelta(0) <= run_after - failed_at <= timedelta(seconds=2)


async def test_vanished_worker_is_taken_over_and_its_late_reports_refused(
    api: Api, inproc: InProcessCoordinator
) -> None:
    job = await api.enqueue("slow", max_attempts=3)
    first = await lease_when_due(api, inproc, "vanishing", lease_seconds=0.3)
    await inproc.advance(0.3)  # the lease runs out and the reaper takes the job back
    second = await lease_when_due(api, inproc, "rescuer", lease_seconds=30)
    assert second["job"]["id"] == job["id"]
    assert second["token"] > first["token"]
    assert "lease expired" in second["job"]["last_error"]
    for verb, body in (
        ("complete", {"result": "late"}),
        ("fail", {"error": "late"}),
        ("renew", {}),
    ):
        a = await api.post(f"/jobs/{job['id']}/{verb}", {"token": first["token"], **body})
        assert a.status == 409, verb
    ok = await api.post(f"/jobs/{job['id']}/complete", {"token": second["token"], "result": "new"})
    assert ok.body["result"] == "new"
    attempts = (await api.get(f"/jobs/{job['id']}/attempts")).body["attempts"]
    assert [(a["worker_id"], a["outcome"]) for a in attempts] == [
        ("vanishing", "expired"),
        ("rescuer", "completed"),
    ]


async def test_expiry_on_the_last_attempt_ends_dead(api: Api, inproc: InProcessCoordinator) -> None:
    job = await api.enqueue("slow", max_attempts=1)
    await lease_when_due(api, inproc, lease_seconds=0.2)
    await inproc.advance(0.3)  # past the lease: the reaper ends the job
    final = await api.job(job["id"])
    assert final["status"] == "dead"
    assert "lease expired" in final["last_error"]
    assert final["attempts"] == 1


async def test_requeue_one_dead_job_keeps_its_token_counter(
    api: Api, inproc: InProcessCoordinator
) -> None:
    job = await api.enqueue("doomed", max_attempts=1)
    lease = await lease_when_due(api, inproc)
    await api.post(f"/jobs/{job['id']}/fail", {"token": lease["token"], "error": "x"})
    revived = await api.post(f"/jobs/{job['id']}/requeue")
    assert revived.status == 200
    assert (revived.body["status"], revived.body["attempts"]) == ("queued", 0)
    assert revived.body["lease_token"] == lease["token"]
    # The old holder cannot speak for the revived job.
    late = await api.post(f"/jobs/{job['id']}/complete", {"token": lease["token"]})
    assert late.status == 409
    again = await lease_when_due(api, inproc)
    assert again["token"] == lease["token"] + 1
    # Only dead jobs can be requeued.
    assert (await api.post(f"/jobs/{job['id']}/requeue")).status == 409


async def test_dead_list_and_bulk_requeue_by_kind_and_error(
    api: Api, inproc: InProcessCoordinator
) -> None:
    ids: dict[str, list[int]] = {"mail": [], "report": []}
    for kind, error in (("mail", "smtp down"), ("mail", "bad address"), ("report", "smtp down")):
        job = await api.enqueue(kind, max_attempts=1)
        lease = await lease_when_due(api, inproc, kinds=[kind])
        await api.post(f"/jobs/{job['id']}/fail", {"token": lease["token"], "error": error})
        ids[kind].append(job["id"])
    await api.enqueue("mail")  # a live job that no requeue may touch
    dead = (await api.get("/jobs", params={"status": "dead"})).body["jobs"]
    assert sorted(j["id"] for j in dead) == sorted(ids["mail"] + ids["report"])
    a = await api.post("/jobs/requeue", {"kind": "mail", "error_contains": "smtp", "limit": 10})
    assert a.body == {"requeued": 1}
    assert (await api.job(ids["mail"][0]))["status"] == "queued"
    assert (await api.job(ids["mail"][1]))["status"] == "dead"
    a = await api.post("/jobs/requeue", {"limit": 10})
    assert a.body == {"requeued": 2}
    assert (await api.get("/jobs", params={"status": "dead"})).body["jobs"] == []


async def test_list_filters_and_paginates_by_id(api: Api) -> None:
    made = [await api.enqueue("a" if i % 2 else "b") for i in range(7)]
    seen: list[int] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 3, "kind": "a"}
        if cursor:
            params["cursor"] = cursor
        page = (await api.get("/jobs", params=params)).body
        seen += [j["id"] for j in page["jobs"]]
        assert all(j["kind"] == "a" for j in page["jobs"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [j["id"] for j in made if j["kind"] == "a"]
    for bad in ({"limit": 0}, {"limit": 1001}, {"status": "nope"}, {"cursor": "xyz"}):
        a = await api.get("/jobs", params=bad)
        assert a.status == 422, bad
        assert "error" in a.body
