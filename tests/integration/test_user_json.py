"""User JSON (payloads, results, schedule payloads) is checked on input, and no answer can
fail after its transaction committed (issue 15, items 1, 13 and 14)."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from leasehold.coordinator.rules.userjson import MAX_JSON_DEPTH
from leasehold.coordinator.service import answer
from tests.conftest import InProcessFactory
from tests.http import Answer, Api

# The depths that once got past the checks and then broke answers (251-255), and beyond.
DANGEROUS_DEPTHS = [MAX_JSON_DEPTH + 1, 251, 252, 253, 254, 255, 256, 300, 1000]


def nested(depth: int) -> bytes:
    """JSON text with arrays and objects nested ``depth`` deep (built as text: no JSON
    library writes the deepest of these)."""
    text = b'"leaf"'
    for n in range(depth):
        text = (b"[%s]" if n % 2 else b'{"k": %s}') % text
    return text


async def send(api: Api, method: str, path: str, raw: bytes) -> Answer:
    """A body as given (no JSON library writes the deepest of these)."""
    return await api.request(method, path, data=raw, headers=JSON)


def refused(a: Answer, words: str) -> None:
    assert a.status == 422, a
    assert isinstance(a.body, dict) and a.body["error"] == "validation_error", a
    assert words in a.body["message"], a


JSON = {"Content-Type": "application/json"}


@pytest.fixture
def api(inproc_api: Api) -> Api:
    return inproc_api


async def jobs(api: Api) -> list[dict[str, Any]]:
    page = await api.get("/jobs?limit=1000")
    assert page.status == 200
    return list(page.body["jobs"])


async def test_deep_payloads_are_refused_and_innocent_leases_are_unaffected(api: Api) -> None:
    """Payloads past the depth limit get a 422 naming it, on every route that takes user
    JSON, and the normal jobs around them are leased once each with one attempt."""
    ok = await send(api, "POST", "/jobs", b'{"kind": "k", "payload": %s}' % nested(MAX_JSON_DEPTH))
    assert ok.status == 201, ok
    for depth in DANGEROUS_DEPTHS:
        deep = nested(depth)
        refused(await send(api, "POST", "/jobs", b'{"kind": "k", "payload": %s}' % deep), "deep")
        batch = b'{"jobs": [{"kind": "k"}, {"kind": "k", "payload": %s}]}' % deep
        refused(await send(api, "POST", "/jobs/batch", batch), "deep")
        schedule = b'{"cron": "* * * * *", "kind": "k", "payload": %s}' % deep
        refused(await send(api, "PUT", "/schedules/deep", schedule), "deep")
        assert (await api.post("/jobs", {"kind": "k"})).status == 201  # an innocent one
    assert (await api.get("/schedules/deep")).status == 404
    stored = await jobs(api)
    assert len(stored) == 1 + len(DANGEROUS_DEPTHS)  # nothing of the refused batches

    single = await api.post("/lease", {"worker_id": "w"})
    assert single.status == 200, single
    many = await api.post("/lease", {"worker_id": "w", "max_jobs": 100})
    assert many.status == 200, many
    leased = [single.body["job"], *(lease["job"] for lease in many.body["leases"])]
    assert sorted(j["id"] for j in leased) == sorted(j["id"] for j in stored)
    assert all(j["attempts"] == 1 for j in leased)

    token, job_id = single.body["token"], single.body["job"]["id"]
    deep = nested(253)
    report = b'{"token": %d, "result": %s}' % (token, deep)
    refused(await send(api, "POST", f"/jobs/{job_id}/complete", report), "deep")
    item = b'{"items": [{"id": %d, "token": %d, "result": %s}]}' % (job_id, token, deep)
    refused(await send(api, "POST", "/batch/complete", item), "deep")
    still = await api.get(f"/jobs/{job_id}")
    assert still.body["status"] == "running" and still.body["result"] is None


@pytest.mark.parametrize(
    "number", [2**64, 2**64 + 1, -(2**63) - 1, 10**30, -(10**40)], ids=lambda n: str(n)[:8]
)
async def test_integers_beyond_64_bits_are_refused(api: Api, number: int) -> None:
    """An integer the coordinator cannot keep exactly is a 422, never a rounded float."""
    literal = str(number).encode()
    for path, body in [
        ("/jobs", b'{"kind": "k", "payload": {"n": %s}}'),
        ("/jobs/batch", b'{"jobs": [{"kind": "k", "payload": [%s]}]}'),
        ("/schedules/big", b'{"cron": "* * * * *", "kind": "k", "payload": %s}'),
    ]:
        method = "PUT" if path.startswith("/schedules") else "POST"
        got = await send(api, method, path, body % literal)
        assert got.status == 422, (path, got)
        assert "64 bits" in got.body["message"]
    assert await jobs(api) == []
    made = await api.post("/jobs", {"kind": "k"})
    lease = await api.post("/lease", {"worker_id": "w"})
    job_id, token = made.body["id"], lease.body["token"]
    raw = b'{"token": %d, "result": %s}' % (token, literal)
    assert (await send(api, "POST", f"/jobs/{job_id}/complete", raw)).status == 422
    assert (await api.get(f"/jobs/{job_id}")).body["status"] == "running"


async def test_64_bit_integers_and_digit_strings_come_back_exactly(api: Api) -> None:
    payload = {"max": 2**64 - 1, "min": -(2**63), "text": "1" * 40}
    made = await api.post("/jobs", {"kind": "k", "payload": payload})
    assert made.status == 201, made
    assert (await api.get(f"/jobs/{made.body['id']}")).body["payload"] == payload


async def test_a_nul_in_a_schedule_payload_is_refused(api: Api) -> None:
    """Schedule payloads pass the same checks as POST /jobs (on PostgreSQL: no echo of
    the database's message)."""
    schedule = {"cron": "* * * * *", "kind": "k", "payload": "a\x00"}
    got = await api.request("PUT", "/schedules/n", json=schedule)
    refused(got, "NUL")
    assert "PostgreSQL" not in got.body["message"]


async def test_an_oversized_schedule_payload_is_refused(start_inproc: InProcessFactory) -> None:
    coordinator = await start_inproc(max_payload_bytes=100)
    async with aiohttp.ClientSession() as session:
        api = Api(coordinator.url, session)
        schedule = {"cron": "* * * * *", "kind": "k", "payload": "x" * 200}
        got = await api.request("PUT", "/schedules/big", json=schedule)
        assert got.status == 413, got
        assert (await api.get("/schedules/big")).status == 404


def _boom(data: Any) -> bytes:
    raise TypeError("injected serialiser failure")


async def test_an_answer_that_cannot_be_built_changes_nothing(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the job serialiser failing, every route answers 500 and has changed nothing:
    no lease granted, no job enqueued, no report applied."""
    made = await api.post("/jobs", {"kind": "k", "payload": {"a": 1}})
    other = await api.post("/jobs", {"kind": "k"})
    held = await api.post("/lease", {"worker_id": "w", "max_jobs": 1})
    assert held.status == 200
    token, held_id = held.body["leases"][0]["token"], held.body["leases"][0]["job"]["id"]
    before = {j["id"]: j for j in await jobs(api)}

    monkeypatch.setattr(answer, "encode", _boom)
    calls = [
        ("/lease", {"worker_id": "w2"}),
        ("/lease", {"worker_id": "w2", "max_jobs": 10}),
        ("/jobs", {"kind": "k"}),
        ("/jobs/batch", {"jobs": [{"kind": "k"}, {"kind": "k"}]}),
        (f"/jobs/{held_id}/complete", {"token": token, "result": 1}),
        (f"/jobs/{held_id}/renew", {"token": token}),
        (f"/jobs/{held_id}/release", {"token": token}),
        ("/batch/complete", {"items": [{"id": held_id, "token": token}]}),
        ("/batch/fail", {"items": [{"id": held_id, "token": token, "error": "e"}]}),
    ]
    for path, body in calls:
        got = await api.post(path, body)
        assert got.status == 500, (path, got)
        assert got.body["error"] == "unanswerable"
    monkeypatch.undo()

    assert {j["id"]: j for j in await jobs(api)} == before
    for job_id in (made.body["id"], other.body["id"]):
        history = await api.get(f"/jobs/{job_id}/attempts")
        assert len(history.body["attempts"]) == (1 if job_id == held_id else 0)
    again = await api.post("/lease", {"worker_id": "w3"})
    assert again.status == 200 and again.body["job"]["attempts"] == 1
