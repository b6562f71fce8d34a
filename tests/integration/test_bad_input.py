"""Every kind of bad input gets a 4xx with a JSON body naming the problem, and changes nothing."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from tests.http import Api


@pytest.fixture
def api(inproc_api: Api) -> Api:
    """Nothing here is about the process: the app served in the test process will do."""
    return inproc_api


MIB = 1024 * 1024

BAD_BODIES: list[tuple[str, Any]] = [
    ("/jobs", {}),
    ("/jobs", {"kind": ""}),
    ("/jobs", {"kind": "   "}),
    ("/jobs", {"kind": "a\x00b"}),
    ("/jobs", {"kind": 5}),
    ("/jobs", {"kind": "k" * 201}),
    ("/jobs", {"kind": "k", "max_attempts": 0}),
    ("/jobs", {"kind": "k", "max_attempts": -1}),
    ("/jobs", {"kind": "k", "max_attempts": 1.5}),
    ("/jobs", {"kind": "k", "max_attempts": "3"}),
    ("/jobs", {"kind": "k", "max_attempts": 10**9}),
    ("/jobs", {"kind": "k", "run_after": "tomorrow"}),
    ("/jobs", {"kind": "k", "run_after": "2030-01-01T00:00:00"}),  # no offset
    ("/jobs", {"kind": "k", "idempotency_key": ""}),
    ("/jobs", {"kind": "k", "idempotency_key": "x" * 256}),
    ("/jobs", {"kind": "k", "surprise": 1}),
    ("/jobs", [1, 2]),
    ("/jobs", "kind"),
    ("/lease", {}),
    ("/lease", {"worker_id": ""}),
    ("/lease", {"worker_id": "w", "lease_seconds": 0}),
    ("/lease", {"worker_id": "w", "lease_seconds": -1}),
    ("/lease", {"worker_id": "w", "lease_seconds": 86_401}),
    ("/lease", {"worker_id": "w", "lease_seconds": "ten"}),
    ("/lease", {"worker_id": "w", "kinds": []}),
    ("/lease", {"worker_id": "w", "kinds": [""]}),
    ("/lease", {"worker_id": "w", "kinds": "a"}),
    ("/lease", {"worker_id": "w", "wait_seconds": -1}),
    ("/lease", {"worker_id": "w", "wait_seconds": 31}),
    ("/jobs/requeue", {"limit": 0}),
    ("/jobs/requeue", {"limit": 10**6}),
    ("/jobs/requeue", {"kind": ""}),
]

RAW_BODIES = [
    b'{"kind": "k"',  # truncated
    b"not json",
    b'{"kind": "k", "payload": NaN}',
    b'{"kind": "k", "payload": Infinity}',
    b'{"kind": "k", "payload": -Infinity}',
    b'{"kind": "k", "max_attempts": NaN}',
    b"\xff\xfe\x00",
    b"",
    b"null",
]


def assert_error(a: Any, status: int | tuple[int, ...] = 422) -> None:
    statuses = status if isinstance(status, tuple) else (status,)
    assert a.status in statuses, a
    assert isinstance(a.body, dict), a
    assert isinstance(a.body["error"], str)
    assert a.body["message"]


async def snapshot(api: Api) -> Any:
    return (await api.get("/jobs", params={"limit": 1000})).body


@pytest.fixture
async def job(api: Api) -> dict[str, Any]:
    """One running job whose state must survive all the bad input below."""
    made = await api.enqueue("victim", payload={"keep": True})
    lease = await api.lease("holder", lease_seconds=300)
    assert lease is not None and lease["job"]["id"] == made["id"]
    leased: dict[str, Any] = lease["job"]
    return leased


async def test_bad_json_bodies_are_422_and_change_nothing(api: Api, job: dict[str, Any]) -> None:
    before = await snapshot(api)
    for path, body in BAD_BODIES:
        assert_error(await api.post(path, body), 422)
    assert await snapshot(api) == before


async def test_malformed_bytes_are_422(api: Api, job: dict[str, Any]) -> None:
    before = await snapshot(api)
    headers = {"content-type": "application/json"}
    for path in ("/jobs", "/lease", f"/jobs/{job['id']}/complete", f"/jobs/{job['id']}/fail"):
        for raw in RAW_BODIES:
            assert_error(await api.post(path, data=raw, headers=headers), 422)
    assert await snapshot(api) == before


async def test_per_job_bad_bodies(api: Api, job: dict[str, Any]) -> None:
    before = await snapshot(api)
    jid = job["id"]
    cases: list[tuple[str, Any]] = [
        ("renew", {}),
        ("renew", {"token": "1"}),
        ("renew", {"token": 1.0}),
        ("renew", {"token": True}),
        ("renew", {"token": -1}),
        ("renew", {"token": 2**70}),
        ("renew", {"token": 1, "lease_seconds": 0}),
        ("renew", {"token": 1, "lease_seconds": 10**9}),
        ("complete", {}),
        ("complete", {"token": 1, "extra": 1}),
        ("fail", {"token": 1}),
        ("fail", {"token": 1, "error": None}),
        ("fail", {"token": 1, "error": "e", "retryable": "no"}),
        ("fail", {"token": 1, "error": "e", "retry_after_seconds": -1}),
        ("release", {}),
    ]
    for verb, body in cases:
        assert_error(await api.post(f"/jobs/{jid}/{verb}", body), 422)
    assert await snapshot(api) == before


async def test_ids_of_the_wrong_shape(api: Api, job: dict[str, Any]) -> None:
    for bad in ("abc", "-1", "1.5", "0x10", "9" * 40, "%00", "1%20"):
        assert_error(await api.get(f"/jobs/{bad}"), (404, 422))
        assert_error(await api.post(f"/jobs/{bad}/complete", {"token": 1}), (404, 422))


async def test_oversize_body_is_413(api: Api, job: dict[str, Any]) -> None:
    before = await snapshot(api)
    big = {"kind": "k", "payload": "x" * (MIB + 10)}
    raw = io.BytesIO(json.dumps(big).encode())
    assert_error(
        await api.post("/jobs", data=raw, headers={"content-type": "application/json"}), 413
    )

    async def chunks() -> Any:
        for _ in range(20):
            yield b" " * (128 * 1024)

    # Streamed with no Content-Length: counted as it arrives.
    a = await api.post("/jobs", data=chunks(), headers={"content-type": "application/json"})
    assert_error(a, 413)
    assert await snapshot(api) == before
    assert (await api.get("/health")).status == 200


async def test_non_json_content_type_is_415(api: Api) -> None:
    a = await api.post("/jobs", data=b'{"kind": "k"}', headers={"content-type": "text/plain"})
    assert_error(a, 415)
    assert (await snapshot(api))["jobs"] == []


async def test_unknown_routes_and_methods(api: Api) -> None:
    assert_error(await api.get("/nope"), 404)
    assert_error(await api.request("DELETE", "/jobs"), 405)


async def test_server_keeps_serving_and_job_is_intact(api: Api, job: dict[str, Any]) -> None:
    for path, body in BAD_BODIES:
        await api.post(path, body)
    current = await api.job(job["id"])
    assert (current["status"], current["lease_token"], current["payload"]) == (
        "running",
        job["lease_token"],
        {"keep": True},
    )
    token = job["lease_token"]
    done = await api.post(f"/jobs/{job['id']}/complete", {"token": token, "result": "fine"})
    assert done.status == 200


async def test_nul_characters_are_refused_on_every_backend(api: Api, job: dict[str, Any]) -> None:
    before = await snapshot(api)
    for body in (
        {"kind": "k", "payload": "a\u0000b"},
        {"kind": "k", "payload": {"x\u0000": 1}},
        {"kind": "k", "payload": [[{"deep": "\u0000"}]]},
    ):
        assert_error(await api.post("/jobs", body), 422)
    assert_error(await api.post(f"/jobs/{job['id']}/complete", {"token": 1, "result": "\u0000"}))
    assert_error(await api.post(f"/jobs/{job['id']}/fail", {"token": 1, "error": "e\u0000"}))
    assert await snapshot(api) == before
    ok = await api.post("/jobs", {"kind": "k", "payload": "a backslash-u: \\u0000 is text"})
    assert ok.status == 201
