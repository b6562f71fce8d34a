"""One request pipeline (api/middleware/pipeline.py, then api/handler.py): POST /jobs
answers the same whichever way the key is sent, every refusal comes from its one place in
the sequence, and every answer carries the same headers and log line."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, MutableMapping
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi import FastAPI
from structlog.testing import capture_logs

from leasehold.coordinator.api.body import StrictJSONRoute
from leasehold.coordinator.api.dispatch import ProtocolRoutes
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


PRODUCER: Headers = [(b"authorization", b"Bearer p-token")]
JSON: Headers = [(b"content-type", b"application/json")]


def comparable(job: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in job.items() if k not in {"id", "created_at", "run_after"}}


async def test_the_key_in_the_body_or_in_the_header_is_the_same_enqueue(app: FastAPI) -> None:
    body = orjson.dumps({"kind": "k", "payload": {"n": 1}, "idempotency_key": "a", "priority": 3})
    first = await call(app, body, PRODUCER + JSON)
    other = orjson.dumps({"kind": "k", "payload": {"n": 1}, "priority": 3})
    by_header = await call(app, other, [*PRODUCER, *JSON, (b"idempotency-key", b"a")])
    assert first[0] == 201
    assert by_header == (200, first[1])  # the same key and request: the job already stored
    assert await call(app, body, PRODUCER + JSON) == (200, first[1])
    plain = await call(app, orjson.dumps({"kind": "k", "payload": {"n": 1}}), JSON)
    assert plain[0] == 401  # no token: the guard answers
    fresh = await call(app, orjson.dumps({"kind": "k", "payload": {"n": 1}}), PRODUCER + JSON)
    assert fresh[0] == 201
    assert comparable(fresh[1]) == comparable({**first[1], "priority": 0, "idempotency_key": None})


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
        (b"", JSON, b"", 422, "validation_error"),
        (b"[]", JSON, b"", 422, "validation_error"),
    ],
)
async def test_each_refusal_is_answered_as_the_error_table_says(
    app: FastAPI, body: bytes, headers: Headers, query: bytes, status: int, error: str | None
) -> None:
    token = [] if any(name == b"authorization" for name, _ in headers) else PRODUCER
    answer = await call(app, body, [*token, *headers], query)
    assert answer[0] == status, answer
    assert set(answer[1]) >= {"error", "message"}
    if error is not None:
        assert answer[1]["error"] == error


@pytest.mark.parametrize(
    ("headers", "query", "status", "error"),
    [
        ([], b"x=1", 401, "unauthorized"),
        ([(b"origin", b"http://elsewhere"), *PRODUCER], b"x=1", 403, "cross_site"),
        (PRODUCER, b"x=1", 422, "validation_error"),  # the unknown query parameter
        (PRODUCER, b"", 415, "unsupported_media_type"),
        (PRODUCER + JSON, b"", 422, "invalid_json"),
    ],
)
async def test_the_checks_come_in_their_order(
    app: FastAPI, headers: Headers, query: bytes, status: int, error: str
) -> None:
    """Each request fails every check after the one that answers it: the order is the
    handler's (api/handler.py)."""
    answer = await call(app, b'{"kind": "k", "payload": NaN}', headers, query)
    assert (answer[0], answer[1]["error"]) == (status, error), answer


async def test_the_request_log_names_the_route(app: FastAPI) -> None:
    with capture_logs() as logs:
        status, _ = await call(app, b'{"kind": "k"}', PRODUCER + JSON)
    assert status == 201
    (line,) = [e for e in logs if e["event"] == "http.request"]
    assert line["route"] == "/jobs"
    assert line["status"] == 201


@pytest.mark.parametrize("extra", [[], [(b"idempotency-key", b"k")]])
async def test_an_answer_carries_the_headers_every_answer_carries(
    app: FastAPI, extra: Headers
) -> None:
    status, _, headers = await exchange(app, b'{"kind": "k"}', PRODUCER + JSON + extra)
    assert status == 201
    assert headers[b"leasehold-protocol"] == b"1.2"
    assert headers[b"content-type"] == b"application/json"
    refused = await exchange(app, b'{"kind": "k"}', JSON)
    assert refused[0] == 401
    assert refused[2][b"leasehold-protocol"] == b"1.2"


@pytest.mark.parametrize(
    ("length", "status"),
    [
        (b"", 201),  # no Content-Length (a chunked body): counted as it arrives
        (b"999999", 413),  # over the route's cap: refused unread
        (b"9" * 5000, 413),  # more digits than int() reads
    ],
)
async def test_a_body_is_held_to_its_routes_cap(app: FastAPI, length: bytes, status: int) -> None:
    answer = await exchange(app, b'{"kind": "k"}', PRODUCER + JSON, length=length)
    assert answer[0] == status, answer
    assert answer[2][b"leasehold-protocol"] == b"1.2"


async def test_an_oversize_body_is_refused_before_the_guard(app: FastAPI) -> None:
    with capture_logs() as logs:
        answer = await exchange(app, b'{"kind": "k"}', JSON, length=b"999999")
    assert (answer[0], answer[1]["error"]) == (413, "payload_too_large")
    assert answer[2][b"connection"] == b"close"
    assert [(e["event"], e["status"]) for e in logs] == [("http.request", 413)]


async def test_an_unchecked_token_is_warned_about(tmp_path: Path) -> None:
    open_app = create_app(CoordinatorSettings(database_url=f"sqlite:///{tmp_path / 'o.db'}"))
    async with open_app.router.lifespan_context(open_app):
        body, local = b'{"kind": "k"}', b"127.0.0.1"
        with_token = await exchange(open_app, body, PRODUCER + JSON, host=local)
        without = await exchange(open_app, body, JSON, host=local)
    assert (with_token[0], without[0]) == (201, 201)
    assert b"leasehold-auth-warning" in with_token[2]
    assert b"leasehold-auth-warning" not in without[2]
    assert without[2][b"leasehold-protocol"] == b"1.2"


async def test_a_failure_nothing_expected_is_a_json_500_and_logged(
    app: FastAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Answered with the headers every answer carries, logged once as request.error with
    its route, and raised on to the server (which logs no copy: cli/logs.py)."""

    async def broken(*args: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(app.state.service, "enqueue", broken)
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> MutableMapping[str, Any]:
        return {"type": "http.request", "body": b'{"kind": "k"}', "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    scope = http_scope(
        "POST", "/jobs", [(b"host", b"t"), (b"content-length", b"13"), *PRODUCER, *JSON]
    )
    with capture_logs() as logs, pytest.raises(RuntimeError, match="a bug"):
        await app(scope, receive, send)
    start, body = sent
    assert start["status"] == 500
    assert dict(start["headers"])[b"leasehold-protocol"] == b"1.2"
    assert orjson.loads(body["body"]) == {"error": "internal", "message": "internal error"}
    events = [(e["event"], e.get("route"), e.get("status")) for e in logs]
    assert sorted(events) == [("http.request", "/jobs", 500), ("request.error", "/jobs", None)]


@pytest.mark.parametrize("extra", [[], [(b"idempotency-key", b"k")]])
async def test_a_client_gone_before_its_body_arrived_is_logged_at_info_not_as_an_error(
    app: FastAPI, extra: Headers
) -> None:
    """Nobody to answer, and no server error logged: one line, 499 (nginx's code)."""
    parts = iter([{"type": "http.request", "body": b"{", "more_body": True}])

    async def receive() -> MutableMapping[str, Any]:
        return next(parts, {"type": "http.disconnect"})

    async def send(message: MutableMapping[str, Any]) -> None:
        pass

    headers = [(b"host", b"t"), (b"content-length", b"100"), *PRODUCER, *JSON, *extra]
    scope = http_scope("POST", "/jobs", headers)
    with capture_logs() as logs:
        await app(scope, receive, send)
    events = [(e["event"], e["log_level"], e.get("status"), e.get("route")) for e in logs]
    assert events == [("http.request", "info", 499, "/jobs")]


async def _answer(app: FastAPI, scope: dict[str, Any], body: bytes) -> tuple[int, Any, Any]:
    sent: list[MutableMapping[str, Any]] = []
    delivered = False

    async def receive() -> MutableMapping[str, Any]:
        nonlocal delivered
        if delivered:
            await asyncio.Event().wait()
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    raw = b"".join(m.get("body", b"") for m in sent[1:])
    answer = orjson.loads(raw) if raw else None
    if isinstance(answer, dict):
        answer = {k: v for k, v in answer.items() if k not in {"id", "created_at", "run_after"}}
    return sent[0]["status"], answer, sorted(sent[0]["headers"])


@pytest.mark.parametrize(
    ("method", "path", "body", "headers", "protocol"),
    [
        ("POST", "/jobs", b'{"kind": "k"}', PRODUCER + JSON, True),
        ("POST", "/jobs", b'{"kind": "k"}', JSON, True),
        ("POST", "/jobs", b'{"kind": "k", "payload": NaN}', PRODUCER + JSON, True),
        ("POST", "/jobs", b'{"kind": "k"}', PRODUCER, True),
        (
            "POST",
            "/lease",
            b'{"worker_id": "w"}',
            [(b"authorization", b"Bearer w-token"), *JSON],
            True,
        ),
        ("GET", "/jobs/99", b"", [(b"authorization", b"Bearer w-token")], True),
        ("GET", "/health", b"", [], True),
        ("PATCH", "/jobs", b"{}", PRODUCER + JSON, False),  # 405
        ("GET", "/nowhere", b"", [], False),  # 404
    ],
)
async def test_fastapis_routing_reaches_the_same_handler(
    app: FastAPI,
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    path: str,
    body: bytes,
    headers: Headers,
    protocol: bool,
) -> None:
    """The pipeline answers a protocol route itself (api/dispatch.py); while FastAPI's own
    telemetry records a request, FastAPI's routing (which names the route on its span)
    takes it to the same route handler: the same answer either way."""
    served: list[str] = []
    serve = ProtocolRoutes.serve

    async def counted(self: ProtocolRoutes, *args: Any) -> None:
        served.append(path)
        await serve(self, *args)

    monkeypatch.setattr(ProtocolRoutes, "serve", counted)
    # The same request id for both: the answer carries it back.
    head = [(b"host", b"t"), (b"content-length", str(len(body)).encode()), *headers]
    head.append((b"x-request-id", b"same-request"))
    ours = await _answer(app, http_scope(method, path, head), body)
    assert served == ([path] if protocol else [])
    traced = {**http_scope(method, path, head), "fastapi.telemetry": None}
    assert await _answer(app, traced, body) == ours
    assert len(served) == protocol


def test_the_protocol_routes_come_first_in_the_app(app: FastAPI) -> None:
    """So the first protocol route that matches a request is the route FastAPI's router
    would choose for it (api/dispatch.py)."""
    kinds = [isinstance(route, StrictJSONRoute) for route in app.router.routes]
    assert kinds[: kinds.count(True)] == [True] * kinds.count(True)
    assert kinds.count(True) > 30
