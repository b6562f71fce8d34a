"""Limits (DESIGN.md §10) and the rule that no error echoes its input: a secret sent in any
wrong place comes back in no error body and lands in no log line."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from tests.conftest import CoordinatorFactory, InProcessFactory
from tests.http import Answer, Api
from tests.process import Coordinator

SECRET = "sk_live_9f8e7d6c5b4a39281706DO_NOT_ECHO"
PAYLOAD_CAP = 1000


@pytest.fixture
def capped(start_coordinator: CoordinatorFactory) -> Coordinator:
    """Debug logging, so that even the chattiest log lines are searched for the secret."""
    return start_coordinator("--max-payload-bytes", str(PAYLOAD_CAP), "--log-level", "debug")


@pytest.fixture
async def http(capped: Coordinator) -> AsyncIterator[Api]:
    async with aiohttp.ClientSession() as session:
        yield Api(capped.url, session)


@pytest.fixture
async def served(start_inproc: InProcessFactory) -> AsyncIterator[Api]:
    """The caps and bounds are the app's own: served in the test process."""
    coordinator = await start_inproc(max_payload_bytes=PAYLOAD_CAP)
    async with aiohttp.ClientSession() as session:
        yield Api(coordinator.url, session)


def refused(a: Answer, status: int) -> None:
    assert a.status == status, a
    assert isinstance(a.body, dict) and a.body["error"] and a.body["message"], a
    assert SECRET not in repr(a.body), a


async def test_a_secret_in_any_wrong_place_is_never_echoed_or_logged(
    http: Api, capped: Coordinator
) -> None:
    job = await http.enqueue("k", idempotency_key=SECRET)  # a key is input too
    lease = await http.lease("w")
    assert lease is not None
    jid = job["id"]
    json = {"content-type": "application/json"}
    bodies: list[tuple[str, Any, int]] = [
        ("/jobs", {"kind": "k", "payload": {"card": SECRET * 40}}, 413),
        ("/jobs", {"kind": f"{SECRET}\x00"}, 422),
        ("/jobs", {"kind": SECRET * 10}, 422),
        ("/jobs", {"kind": "k", "idempotency_key": SECRET * 10}, 422),
        ("/jobs", {"kind": "k", SECRET: 1}, 422),
        ("/jobs", {"kind": "k", "headers": {SECRET + " ": "v"}}, 422),  # a header's name
        ("/jobs", {"kind": "k", "headers": {SECRET: "v\n"}}, 422),  # named by its value's fault
        ("/jobs/batch", {"jobs": [{"kind": "k", "headers": {SECRET * 20: "v"}}]}, 422),
        ("/jobs", {"kind": "k", "run_after": SECRET}, 422),
        ("/jobs", {"kind": "k", "max_attempts": SECRET}, 422),
        ("/jobs", {"kind": "k", "idempotency_key": SECRET, "payload": 2}, 422),  # conflict
        ("/jobs", {"jobs": SECRET}, 422),
        ("/lease", {"worker_id": "w", "kinds": [SECRET + "\n"]}, 422),
        ("/lease", {"worker_id": "w", "lease_seconds": SECRET}, 422),
        (f"/jobs/{jid}/complete", {"token": SECRET}, 422),
        (f"/jobs/{jid}/complete", {"token": 1, "result": SECRET * 40}, 413),
        (f"/jobs/{jid}/fail", {"token": 1, "error": SECRET * 2000}, 422),
        ("/jobs/requeue", {"kind": SECRET, "limit": SECRET}, 422),
    ]
    for path, body, status in bodies:
        refused(await http.post(path, body), status)
    raw = [b'{"kind": "' + SECRET.encode(), b'{"kind": ' + SECRET.encode() + b"}"]
    for data in raw:
        refused(await http.post("/jobs", data=data, headers=json), 422)
    refused(await http.get(f"/jobs/{SECRET}"), 404)
    refused(await http.post(f"/jobs/{SECRET}/complete", {"token": 1}), 404)
    refused(await http.get("/jobs", params={"cursor": SECRET}), 422)
    refused(await http.get("/jobs", params={SECRET: "1"}), 422)
    refused(await http.get("/jobs", params={"kind": SECRET * 10}), 422)
    refused(await http.post("/jobs", {"kind": "k"}, headers={"Idempotency-Key": SECRET * 10}), 422)
    refused(await http.get(f"/{SECRET}"), 404)
    # Everything above was refused, and left the job as it was.
    assert (await http.job(jid))["status"] == "running"
    assert SECRET not in capped.logs()
    assert '"route"' in capped.logs()  # the request log ran, and named routes, not paths


async def test_payload_and_result_caps(served: Api) -> None:
    """Measured as compact JSON: a payload of exactly the cap is taken, one byte more is
    413, and so is a result; a batch refuses the oversize item alone."""
    fits = "x" * (PAYLOAD_CAP - 2)  # the two quotes make it PAYLOAD_CAP bytes
    job = await served.enqueue("k", payload=fits)
    refused(await served.post("/jobs", {"kind": "k", "payload": fits + "x"}), 413)
    too_big = await served.post(
        "/jobs/batch", {"jobs": [{"kind": "k"}, {"kind": "k", "payload": [fits]}]}
    )
    refused(too_big, 413)
    lease = await served.lease("w")
    assert lease is not None and lease["job"]["id"] == job["id"]
    token = lease["token"]
    refused(
        await served.post(f"/jobs/{job['id']}/complete", {"token": token, "result": fits + "x"}),
        413,
    )
    other = await served.enqueue("k")
    other_lease = await served.lease("w")
    assert other_lease is not None
    batch = await served.post(
        "/batch/complete",
        {
            "items": [
                {"id": job["id"], "token": token, "result": fits + "x"},
                {"id": other["id"], "token": other_lease["token"], "result": "ok"},
            ]
        },
    )
    assert batch.status == 200, batch
    first, second = batch.body["results"]
    assert first["error"] == "payload_too_large" and second["outcome"] == "ok"
    assert (await served.job(job["id"]))["status"] == "running"
    done = await served.post(f"/jobs/{job['id']}/complete", {"token": token, "result": fits})
    assert done.status == 200, done


BOUNDS: list[tuple[str, dict[str, Any]]] = [
    ("/jobs", {"kind": "k", "run_after": "1969-12-31T23:59:59Z"}),
    ("/jobs", {"kind": "k", "run_after": "9999-12-31T23:00:00-05:00"}),  # year 10000 in UTC
    ("/jobs", {"kind": "k", "run_after": 1_700_000_000}),  # a number is not a time here
    ("/jobs", {"kind": "k", "run_after": "1700000000"}),
    ("/jobs", {"kind": "k", "run_after": "2030-01-01"}),
    ("/lease", {"worker_id": "w", "lease_seconds": "10"}),  # JSON numbers only
    ("/lease", {"worker_id": "w", "lease_seconds": True}),
    ("/lease", {"worker_id": "w", "wait_seconds": "1"}),
    ("/lease", {"worker_id": "w", "wait_seconds": 30.001}),
    ("/lease", {"worker_id": "w", "kinds": ["k"] * 101}),
    ("/lease", {"worker_id": "w" * 201}),
    ("/lease", {"worker_id": "w", "max_jobs": 1001}),
    ("/jobs/1/fail", {"token": 1, "error": "e", "retry_after_seconds": "5"}),
    ("/jobs/1/fail", {"token": 1, "error": "e" * 65_537}),
    ("/jobs/batch", {"jobs": [{"kind": "k"}] * 1001}),
]


async def test_bounds_are_422(served: Api) -> None:
    for path, body in BOUNDS:
        refused(await served.post(path, body), 422)
    for params in ({"limit": "0"}, {"limit": "1001"}, {"limit": "1.5"}, {"stauts": "dead"}):
        refused(await served.get("/jobs", params=params), 422)
    assert (await served.get("/jobs", params={"limit": "1000"})).status == 200
    accepted = await served.post("/jobs", {"kind": "k", "run_after": "9998-12-31T00:00:00+00:00"})
    assert accepted.status == 201, accepted
    listed = await served.get("/jobs")  # and the far-future job reads back
    assert listed.status == 200 and listed.body["jobs"][0]["run_after"].startswith("9998")
