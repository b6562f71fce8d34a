"""POST /jobs past FastAPI's layers (coordinator/api/middleware/fastpath.py): taken only for plain requests, and
answering exactly as the route does."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, MutableMapping
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi import FastAPI
from structlog.testing import capture_logs

from leasehold.coordinator.api.middleware import fastpath
from leasehold.coordinator.api.routes import jobs as routes
from leasehold.coordinator.app import create_app
from leasehold.coordinator.auth_tokens import HashedToken, Role, hash_token
from leasehold.coordinator.settings import CoordinatorSettings
from tests.inproc import Headers, http_scope


async def call(
    app: FastAPI, body: bytes, headers: Headers | None = None, query: bytes = b""
) -> tuple[int, Any]:
    """One POST /jobs straight into the ASGI app: (status, parsed JSON answer)."""
    status, answer, _ = await exchange(app, body, headers, query)
    return status, answer


async def exchange(
    app: FastAPI,
    body: bytes,
    headers: Headers | None = None,
    query: bytes = b"",
    length: bytes | None = None,
    host: bytes = b"t",
) -> tuple[int, Any, dict[bytes, bytes]]:
    """``call``, with the answer's headers; ``length``: the Content-Length to declare
    (the body's by default; empty: none)."""
    declared = str(len(body)).encode() if length is None else length
    declared_length = [(b"content-length", declared)] if declared else []
    scope = http_scope(
        "POST", "/jobs", [(b"host", host), *declared_length, *(headers or [])], query
    )
    delivered = asyncio.Event()
    answer: dict[str, Any] = {"body": b""}

    async def receive() -> MutableMapping[str, Any]:
        if not delivered.is_set():
            delivered.set()
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client stays connected
        raise AssertionError("unreachable")

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
            answer["headers"] = dict(message["headers"])
        else:
            answer["body"] += message.get("body", b"")

    await app(scope, receive, send)
    return answer["status"], orjson.loads(answer["body"]), answer["headers"]


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[FastAPI]:
    settings = CoordinatorSettings(
        database_url=f"sqlite:///{tmp_path / 'db.sqlite'}",
        tokens=(
            HashedToken(Role.PRODUCER, hash_token("p-token")),
            HashedToken(Role.WORKER, hash_token("w-token")),
        ),
        max_payload_bytes=1000,
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        yield app


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """One entry per request the fast path answered (the route counts none)."""
    calls: list[bool] = []
    answer = routes.enqueue_reply

    async def counting(*args: Any) -> Any:
        calls.append(True)
        return await answer(*args)

    monkeypatch.setattr(fastpath, "enqueue_reply", counting)
    return calls


PRODUCER: Headers = [(b"authorization", b"Bearer p-token")]
JSON: Headers = [(b"content-type", b"application/json")]


def comparable(job: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in job.items() if k not in {"id", "created_at", "run_after"}}


async def test_a_plain_enqueue_takes_the_fast_path_and_answers_as_the_route(
    app: FastAPI, taken: list[bool]
) -> None:
    body = orjson.dumps({"kind": "k", "payload": {"n": 1}, "idempotency_key": "a", "priority": 3})
    fast = await call(app, body, PRODUCER + JSON)
    assert taken == [True]
    # The header sends the same request through the route.
    other = orjson.dumps({"kind": "k", "payload": {"n": 1}, "priority": 3})
    routed = await call(app, other, [*PRODUCER, *JSON, (b"idempotency-key", b"a")])
    assert taken == [True]
    assert routed[0] == 200  # the same key and request: the job already stored
    assert fast[0] == 201
    assert routed[1] == fast[1]
    again = await call(app, body, PRODUCER + JSON)
    assert taken == [True, True]
    assert again == (200, fast[1])
    plain = await call(app, orjson.dumps({"kind": "k", "payload": {"n": 1}}), JSON)
    assert plain[0] == 401  # no token: the route's guard answers
    assert taken == [True, True]
    fresh = await call(app, orjson.dumps({"kind": "k", "payload": {"n": 1}}), PRODUCER + JSON)
    assert fresh[0] == 201
    assert comparable(fresh[1]) == comparable({**fast[1], "priority": 0, "idempotency_key": None})


@pytest.mark.parametrize(
    ("body", "headers", "query", "status", "error"),
    [
        (b'{"kind": "k", "payload": NaN}', JSON, b"", 422, "invalid_json"),
        (b'{"kind": "k", "surprise": 1}', JSON, b"", 422, "validation_error"),
        (b'{"kind": "k"}', [(b"content-type", b"text/plain")], b"", 415, "unsupported_media_type"),
        (b'{"kind": "k"}', [], b"", 415, "unsupported_media_type"),
        (b'{"kind": "k"}', [*JSON, (b"origin", b"http://elsewhere")], b"", 403, "cross_site"),
        (b'{"kind": "k", "payload": 123456789012345678901234}', JSON, b"", 422, None),
        (b'{"kind": "k"}', JSON, b"x=1", 422, "validation_error"),
        (b'{"kind": "k"}', [*JSON, (b"authorization", b"Bearer w-token")], b"", 403, "forbidden"),
        (b'{"kind": "k", "payload": "' + b"x" * 2000 + b'"}', JSON, b"", 413, None),
    ],
)
async def test_anything_unusual_is_answered_by_the_route(
    app: FastAPI,
    taken: list[bool],
    body: bytes,
    headers: Headers,
    query: bytes,
    status: int,
    error: str | None,
) -> None:
    token = [] if any(name == b"authorization" for name, _ in headers) else PRODUCER
    answer = await call(app, body, [*token, *headers], query)
    assert answer[0] == status, answer
    if error is not None:
        assert answer[1]["error"] == error
    assert taken == ([True] if status == 413 else [])  # an oversize payload: the service's


async def test_the_request_log_names_the_route(app: FastAPI, taken: list[bool]) -> None:
    with capture_logs() as logs:
        status, _ = await call(app, b'{"kind": "k"}', PRODUCER + JSON)
    assert status == 201
    assert taken == [True]
    (line,) = [e for e in logs if e["event"] == "http.request"]
    assert line["route"] == "/jobs"
    assert line["status"] == 201


async def test_a_fast_answer_carries_the_headers_every_answer_carries(
    app: FastAPI, taken: list[bool]
) -> None:
    status, _, headers = await exchange(app, b'{"kind": "k"}', PRODUCER + JSON)
    assert (status, taken) == (201, [True])
    assert headers[b"leasehold-protocol"] == b"1.1"
    assert headers[b"content-type"] == b"application/json"


@pytest.mark.parametrize(
    ("length", "status"),
    [
        (b"", 201),  # no Content-Length (a chunked body): the route reads it
        (b"999999", 413),  # over the route's cap: refused unread, by the body limit
        (b"9" * 5000, 413),  # more digits than int() reads
    ],
)
async def test_a_body_without_a_declared_length_in_the_cap_goes_to_the_route(
    app: FastAPI, taken: list[bool], length: bytes, status: int
) -> None:
    answer = await exchange(app, b'{"kind": "k"}', PRODUCER + JSON, length=length)
    assert answer[0] == status, answer
    assert taken == []


async def test_an_unchecked_token_goes_to_the_route_which_warns(
    tmp_path: Path, taken: list[bool]
) -> None:
    open_app = create_app(CoordinatorSettings(database_url=f"sqlite:///{tmp_path / 'o.db'}"))
    async with open_app.router.lifespan_context(open_app):
        body, local = b'{"kind": "k"}', b"127.0.0.1"
        with_token = await exchange(open_app, body, PRODUCER + JSON, host=local)
        without = await exchange(open_app, body, JSON, host=local)
    assert (with_token[0], without[0]) == (201, 201)
    assert taken == [True]  # only the request without a token took the fast path
    assert b"leasehold-auth-warning" in with_token[2]
    assert b"leasehold-auth-warning" not in without[2]
    assert without[2][b"leasehold-protocol"] == b"1.1"


async def test_a_failure_nothing_expected_is_a_json_500_and_logged(
    app: FastAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*args: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(fastpath, "enqueue_reply", broken)
    with capture_logs() as logs:
        status, body, headers = await exchange(app, b'{"kind": "k"}', PRODUCER + JSON)
    assert (status, body) == (500, {"error": "internal", "message": "internal error"})
    assert headers[b"leasehold-protocol"] == b"1.1"
    events = [(e["event"], e.get("route"), e.get("status")) for e in logs]
    assert ("request.error", "/jobs", None) in events
    assert ("http.request", "/jobs", 500) in events


async def test_a_client_gone_before_its_body_arrived_is_logged_at_info_not_as_an_error(
    app: FastAPI, taken: list[bool]
) -> None:
    """Through the fast path and through the route (an Idempotency-Key header): nobody to
    answer, and no server error logged."""
    for extra in ([], [(b"idempotency-key", b"k")]):
        parts = iter([{"type": "http.request", "body": b"{", "more_body": True}])

        async def receive(parts: Any = parts) -> MutableMapping[str, Any]:
            return next(parts, {"type": "http.disconnect"})

        async def send(message: MutableMapping[str, Any]) -> None:
            pass

        headers = [(b"host", b"t"), (b"content-length", b"100"), *PRODUCER, *JSON, *extra]
        scope = http_scope("POST", "/jobs", headers)
        with capture_logs() as logs:
            await app(scope, receive, send)
        events = [(e["event"], e["log_level"], e.get("status")) for e in logs]
        assert events == [("http.request", "info", 499)], (extra, events)
    assert taken == []  # neither got as far as an enqueue
